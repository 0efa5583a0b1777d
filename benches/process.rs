//! The whole process a user runs, on the heavy session (`sessions::heavy_session`: 5,000
//! messages, ~8.9 MB, outputs of several KB): `ctxhost compress FILE --context-length 200000` and
//! `ctxhost run FILE --context-length 200000`, each timed from spawn to exit (reading, parsing,
//! the engine, the report), with the release binary `cargo bench` builds.
//!
//! With `CTXHOST_HEAVY_FORMATS` naming a folder (`cargo xtask bench` writes the session there in
//! every other format a user has), `compress` of each file there as well, as
//! `process/compress_heavy_<name>`.
//!
//! Targets (issue 7): the whole `compress` at most 25 ms, in every format; `run` within 2x of it.

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
    // The same session as other agents write it (`cargo xtask bench` writes them there first).
    if let Some(folder) = std::env::var_os("CTXHOST_HEAVY_FORMATS") {
        let mut files: Vec<_> = std::fs::read_dir(&folder)
            .expect("the folder of heavy sessions")
            .map(|entry| entry.expect("a folder entry").path())
            .collect();
        files.sort();
        for path in files {
            let stem = path
                .file_name()
                .and_then(|name| name.to_str())
                .expect("a UTF-8 name");
            let stem = stem.split('.').next().unwrap_or(stem).to_owned();
            let path = path.to_str().expect("a UTF-8 path").to_owned();
            group.bench_function(format!("compress_heavy_{stem}"), |b| {
                b.iter(|| ctxhost(&["compress", &path, "--context-length", "200000"]))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, whole_process);
criterion_main!(benches);
