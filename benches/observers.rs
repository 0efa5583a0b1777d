//! What observers cost a replay: the 10,000-message tool-heavy JSONL transcript replayed through
//! the built-in compressor alone, with one and with four observers that ask for no fact
//! (`telemetry` with `kinds: []`: the lifecycle only), with one and with four observers that receive every fact and
//! do nothing with it (the `faulty` test plugin in its `count` mode: each fact still crosses the
//! library boundary as JSON on the observer's thread), and with lcm observing (every message
//! stored in a fresh SQLite file). Run with `cargo xtask bench` (figures through
//! `benches/ratios.py`), or alone with `cargo bench -p ctxhost --bench observers`.
//! Targets (issue 9): an observer that does nothing costs under 5% of the replay; lcm as an
//! observer under 2x of the replay without it.

#[path = "support.rs"]
mod support;

// What the `ctxhost` binary runs with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::{
    fs,
    path::{Path, PathBuf},
    time::Duration,
};

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use ctxhost::{
    config::Settings,
    formats::{open_transcript, Format},
    resolution::{builtin_compressor, try_resolve_engine, Registry},
    runner::{replay_stream, Observers, ReplayOptions, Watchers},
};

/// The window: compactions every few hundred messages, as in `benches/replay.rs`.
const CONTEXT_LENGTH: u64 = 100_000;

/// The plugin library `lib_name` as cargo built it for this benchmark (a dev-dependency).
fn built_library(lib_name: &str) -> PathBuf {
    let file = format!(
        "{}{lib_name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let deps = std::env::current_exe().expect("the bench knows its path");
    let deps = deps.parent().expect("the bench sits in deps/");
    [deps.join(&file), deps.join("..").join(&file)]
        .into_iter()
        .find(|path| path.is_file())
        .unwrap_or_else(|| panic!("{file} is not built next to the benchmark"))
}

/// A plugins folder holding faulty and lcm.
fn plugins_dir(root: &Path) -> PathBuf {
    for (name, lib) in [
        ("faulty", "ctxhost_test_faulty"),
        ("lcm", "ctxhost_engine_lcm"),
        ("telemetry", "ctxhost_engine_telemetry"),
    ] {
        let dir = root.join("plugins/context_engine").join(name);
        fs::create_dir_all(&dir).expect("a plugin folder");
        fs::write(
            dir.join("plugin.yaml"),
            format!("name: {name}\nversion: 0.1.0\ndescription: bench\nabi_version: 1\n"),
        )
        .expect("a manifest");
        let library = built_library(lib);
        fs::copy(&library, dir.join(library.file_name().expect("a file"))).expect("the library copies");
    }
    root.join("plugins")
}

fn settings(plugins: &Path, database: &Path) -> Settings {
    let yaml = format!(
        "context:\n  plugins_dir: {}\nfaulty:\n  observe: count\nlcm:\n  database: {}\ntelemetry:\n  kinds: []\n",
        plugins.display(),
        database.display()
    );
    Settings::parse(&yaml, &plugins.join("config.yaml")).expect("the bench config is valid")
}

/// Replays `transcript` with the observers `names`, each resolved afresh.
fn replay_with(transcript: &Path, settings: &Settings, names: &[&str]) {
    let mut observers = Observers::new();
    for name in names {
        let engine = try_resolve_engine(name, settings, &Registry::default()).expect("the observer loads");
        observers.attach(engine).expect("the observer attaches");
    }
    let mut engine = builtin_compressor(settings);
    let options = ReplayOptions {
        session_id: "bench".into(),
        model: ctxhost_engine_abi::ModelInfo {
            model: "bench".into(),
            context_length: CONTEXT_LENGTH,
            ..Default::default()
        },
        ..ReplayOptions::default()
    };
    let watchers = Watchers {
        observers,
        ..Watchers::default()
    };
    let stream = open_transcript(transcript, Some(Format::OpenaiJsonl)).expect("the transcript opens");
    let outcome = replay_stream(&mut engine, stream, &options, &[], watchers).expect("the transcript reads");
    assert!(
        outcome.observers.iter().all(|o| o.detached.is_none()),
        "an observer failed"
    );
}

fn observers(c: &mut Criterion) {
    let (transcript, bytes) = support::write_jsonl_transcript(10_000);
    let root = tempfile::tempdir().expect("a temporary directory");
    // Staged once: copying over a library this process has opened would change its code under it.
    let plugins = plugins_dir(root.path());
    let mut group = c.benchmark_group("observers");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.throughput(Throughput::Bytes(bytes));
    let cases: [(&str, &[&str]); 6] = [
        ("none", &[]),
        // Attached, asking for no fact: the lifecycle through the contract's methods only.
        ("idle-1", &["telemetry"]),
        ("idle-4", &["telemetry", "telemetry", "telemetry", "telemetry"]),
        ("count-1", &["faulty"]),
        ("count-4", &["faulty", "faulty", "faulty", "faulty"]),
        ("lcm", &["lcm"]),
    ];
    for (label, names) in cases {
        group.bench_function(BenchmarkId::from_parameter(label), |b| {
            b.iter_batched(
                // A fresh store each time: lcm stores every message, as on a first run.
                || {
                    let database = tempfile::Builder::new()
                        .suffix(".sqlite")
                        .tempfile_in(root.path())
                        .expect("a database file")
                        .into_temp_path();
                    let _ = fs::remove_file(&database);
                    let settings = settings(&plugins, &database);
                    (settings, database)
                },
                |(settings, database)| {
                    replay_with(transcript.path(), &settings, names);
                    for suffix in ["", "-wal", "-shm"] {
                        let _ = fs::remove_file(format!("{}{suffix}", database.display()));
                    }
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, observers);
criterion_main!(benches);
