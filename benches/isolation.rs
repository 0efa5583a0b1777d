//! What process isolation costs per call: the masking plugin in process (its library opened by
//! the host) and isolated (the same library in a child `ctxhost serve`), on a trivial call
//! (`should_compress`) and on `compress` of 500 and 5,000 tool-heavy messages. Run with
//! `cargo bench -p ctxhost --bench isolation` (or `cargo xtask bench`), then
//! `python3 benches/ratios.py` prints isolated / in-process.

#[path = "support.rs"]
mod support;

// What the `ctxhost` binary runs with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::{fs, hint::black_box, path::PathBuf};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ctxhost::{
    config::{Isolation, Settings},
    engine::{CompressCall, EngineHandle},
    resolution::{resolve_engine, Registry},
};
use ctxhost_engine_abi::{messages_to_json, ModelInfo, Role};

/// A window small enough that every benchmark conversation is far over the threshold.
const CONTEXT_LENGTH: u64 = 100_000;

/// The masking plugin's library, which `cargo bench` builds into deps/ (a dev-dependency).
fn masking_library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let path = deps.join(format!(
        "{}ctxhost_engine_masking{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    assert!(
        path.is_file(),
        "{} is missing: run `cargo bench -p ctxhost`",
        path.display()
    );
    path
}

/// A plugin tree holding the masking plugin, and the engine resolved from it as `isolation` says.
fn masking(isolation: Isolation) -> (tempfile::TempDir, EngineHandle) {
    let root = tempfile::tempdir().unwrap();
    let folder = root.path().join("plugins/context_engine/masking");
    fs::create_dir_all(&folder).unwrap();
    let library = masking_library();
    fs::copy(&library, folder.join(library.file_name().unwrap())).unwrap();
    fs::write(
        folder.join("plugin.yaml"),
        "name: masking\nversion: 0.1.0\ndescription: masking\nabi_version: 1\n",
    )
    .unwrap();
    let config = root.path().join("config.yaml");
    fs::write(&config, "context:\n  engine: masking\n").unwrap();
    let mut settings = Settings::load(&config).unwrap();
    settings.isolation = isolation;
    settings.isolation_settings.server = Some(PathBuf::from(env!("CARGO_BIN_EXE_ctxhost")));
    let resolution = resolve_engine("masking", &settings, &Registry::default());
    assert!(resolution.fallback.is_none(), "{:?}", resolution.fallback);
    let mut engine = resolution.engine;
    engine
        .update_model(&ModelInfo {
            model: "bench".into(),
            context_length: CONTEXT_LENGTH,
            ..ModelInfo::default()
        })
        .unwrap();
    (root, engine)
}

const MODES: [(&str, Isolation); 2] = [
    ("in_process", Isolation::InProcess),
    ("isolated", Isolation::Process),
];

fn trivial_call(c: &mut Criterion) {
    let mut group = c.benchmark_group("isolation_trivial");
    for (name, isolation) in MODES {
        let (_tree, mut engine) = masking(isolation);
        group.bench_function(name, |b| {
            b.iter(|| black_box(engine.should_compress(black_box(Some(1_000))).unwrap()))
        });
    }
    group.finish();
}

fn compress(c: &mut Criterion) {
    let mut group = c.benchmark_group("isolation_compress");
    group.sample_size(20);
    for n in [500, 5_000] {
        let messages = support::tool_heavy_conversation(n);
        // The replay keeps the context's JSON for a plugin's library, in process or isolated
        // (`wants_json`): the library reads it, or the request to the child carries it.
        let json = messages_to_json(&messages);
        let call = CompressCall {
            user_message: messages.iter().rev().find(|m| m.role == Role::User),
            ..CompressCall::default()
        };
        group.throughput(Throughput::Elements(n as u64));
        for (name, isolation) in MODES {
            let (_tree, mut engine) = masking(isolation);
            let json = engine.wants_json().then_some(json.as_str());
            group.bench_with_input(BenchmarkId::new(name, n), &messages, |b, messages| {
                b.iter(|| black_box(engine.compress(messages, json, &call).unwrap()))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, trivial_call, compress);
criterion_main!(benches);
