//! The whole process a user runs, on the heavy session (`sessions::heavy_session`: 5,000
//! messages, ~8.9 MB, outputs of several KB): `ctxhost compress FILE --context-length 200000` and
//! `ctxhost run FILE --context-length 200000`, each timed from spawn to exit (reading, parsing,
//! the engine, the report), with the release binary `cargo bench` builds.
//!
//! Targets (issue 7): the whole `compress` at most 25 ms; `run` within 2x of it.

use std::{
    fs::File,
    io::{BufWriter, Write},
    path::Path,
    process::Command,
    time::Duration,
};

use criterion::{criterion_group, criterion_main, Criterion};

#[path = "sessions.rs"]
mod sessions;

fn write_jsonl(path: &Path, messages: usize) {
    let mut out = BufWriter::new(File::create(path).expect("a temporary file"));
    for message in sessions::heavy_session(messages) {
        serde_json::to_writer(&mut out, &message).expect("messages serialise");
        out.write_all(b"\n").expect("the file takes it");
    }
    out.flush().expect("the file takes it");
}

fn ctxhost(args: &[&str]) {
    let output = Command::new(env!("CARGO_BIN_EXE_ctxhost"))
        .args(args)
        .output()
        .expect("ctxhost runs");
    assert!(
        output.status.success(),
        "ctxhost {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn whole_process(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("heavy.jsonl");
    write_jsonl(&file, 5_000);
    let file = file.to_str().expect("a UTF-8 path");
    let mut group = c.benchmark_group("process");
    group.sample_size(10).measurement_time(Duration::from_secs(10));
    group.bench_function("compress_heavy", |b| {
        b.iter(|| ctxhost(&["compress", file, "--context-length", "200000"]))
    });
    group.bench_function("run_heavy", |b| {
        b.iter(|| ctxhost(&["run", file, "--context-length", "200000"]))
    });
    group.finish();
}

criterion_group!(benches, whole_process);
criterion_main!(benches);
