//! The same engine called statically and through its loaded library, `compress` scaling, and
//! plugin discovery. Run with `cargo xtask bench`, which also prints the ratios
//! (`benches/ratios.py`).

#[path = "support.rs"]
mod support;

// What the `ctxhost` binary runs with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::{fs, hint::black_box, path::PathBuf};

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use ctxhost::{
    config::Settings,
    discovery::discover_plugins,
    engine::{EngineHandle, EngineOrigin},
    loading::open_engine_library,
    resolution::builtin_compressor,
    services::{host_services_for, ServiceContext},
};
use ctxhost_compressor::Compressor;
use ctxhost_engine_abi::{messages_to_json, CompressRequest, Engine, Host, Message, ModelInfo};

use support::model;

fn compressor_library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let file = format!(
        "{}ctxhost_engine_compressor{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    // The host dev-depends on the compressor's plugin crate, so `cargo bench` builds it into deps/.
    let path = profile.join("deps").join(&file);
    assert!(
        path.is_file(),
        "{} is missing: run the benchmarks with `cargo xtask bench`",
        path.display()
    );
    path
}

fn static_engine() -> EngineHandle {
    let mut engine = builtin_compressor(&Settings::defaults(std::path::Path::new(".")));
    engine.update_model(&model()).unwrap();
    engine
}

fn library_engine() -> EngineHandle {
    let library = open_engine_library(&compressor_library()).unwrap();
    let object = (library.module.new_engine())(
        "".into(),
        host_services_for("compressor", &ServiceContext::without_model()),
    )
    .into_result()
    .unwrap();
    let origin = EngineOrigin::Plugin {
        dir: PathBuf::new(),
        library: compressor_library(),
    };
    let mut engine = EngineHandle::new(object, "compressor", origin);
    engine.update_model(&model()).unwrap();
    engine
}

fn direct_engine() -> Compressor {
    let mut engine = Compressor::new(&serde_json::Value::Null, Host::detached()).unwrap();
    engine.update_model(&model());
    engine
}

fn trivial_call(c: &mut Criterion) {
    let mut group = c.benchmark_group("trivial_call");
    let direct = direct_engine();
    group.bench_function("direct", |b| b.iter(|| black_box(*black_box(&direct).counters())));
    let static_engine = static_engine();
    group.bench_function("static", |b| {
        b.iter(|| black_box(static_engine.counters().unwrap()))
    });
    let library_engine = library_engine();
    group.bench_function("library", |b| {
        b.iter(|| black_box(library_engine.counters().unwrap()))
    });
    group.finish();
}

fn compress_static_vs_library(c: &mut Criterion) {
    let mut group = c.benchmark_group("compress");
    group.sample_size(20);
    for n in [500, 5_000] {
        let messages = support::tool_heavy_conversation(n);
        let json = messages_to_json(&messages);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("direct", n), &messages, |b, messages| {
            b.iter_batched(
                || (direct_engine(), messages.clone()),
                |(mut engine, messages)| engine.compress(messages, &CompressRequest::default()).unwrap(),
                BatchSize::LargeInput,
            )
        });
        for (name, make) in [
            ("static", static_engine as fn() -> EngineHandle),
            ("library", library_engine),
        ] {
            group.bench_with_input(BenchmarkId::new(name, n), &messages, |b, messages| {
                b.iter_batched(
                    make,
                    |mut engine| {
                        engine
                            .compress(messages, Some(&json), &Default::default())
                            .unwrap()
                    },
                    BatchSize::LargeInput,
                )
            });
        }
    }
    group.finish();
}

fn compress_scaling(c: &mut Criterion) {
    let mut group = c.benchmark_group("compress_scaling");
    group.sample_size(10);
    for n in [1_000, 10_000, 100_000] {
        let messages: Vec<Message> = support::tool_heavy_conversation(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &messages, |b, messages| {
            b.iter_batched(
                || (direct_engine(), messages.clone()),
                |(mut engine, messages)| engine.compress(messages, &CompressRequest::default()).unwrap(),
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

/// The heavy session's window: a 200,000-token model, as a long coding-agent session would use.
const HEAVY_CONTEXT_LENGTH: u64 = 200_000;

/// The engine call alone (no JSON, no host) on the heavy session: 5,000 messages, ~8.7 MB, ~2
/// million rough tokens, tool outputs of several KB. Target: at most 5 ms. The call the host makes
/// of its linked compressor: `compress_borrowed`, on the host's own context.
fn compress_heavy(c: &mut Criterion) {
    let mut group = c.benchmark_group("compress_heavy");
    group.sample_size(20);
    let messages = support::heavy_session(5_000);
    let bytes: usize = messages_to_json(&messages).len();
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_with_input(BenchmarkId::from_parameter(5_000), &messages, |b, messages| {
        b.iter_batched(
            || {
                let mut engine = Compressor::new(&serde_json::Value::Null, Host::detached()).unwrap();
                engine.update_model(&ModelInfo {
                    model: "bench".into(),
                    context_length: HEAVY_CONTEXT_LENGTH,
                    ..ModelInfo::default()
                });
                engine
            },
            |mut engine| {
                engine
                    .compress_borrowed(messages, &CompressRequest::default())
                    .unwrap()
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

fn discovery(c: &mut Criterion) {
    let root = tempfile::tempdir().unwrap();
    for i in 0..100 {
        let dir = root.path().join("context_engine").join(format!("engine{i:03}"));
        fs::create_dir_all(&dir).unwrap();
        let manifest =
            format!("name: engine{i:03}\nversion: 1.0.{i}\ndescription: engine {i}\nabi_version: 1\n");
        fs::write(dir.join("plugin.yaml"), manifest).unwrap();
        fs::write(dir.join(format!("libengine{i:03}.so")), b"not opened").unwrap();
    }
    c.bench_function("discovery/100_folders", |b| {
        b.iter(|| black_box(discover_plugins(root.path()).unwrap()))
    });
}

criterion_group!(
    benches,
    trivial_call,
    compress_static_vs_library,
    compress_scaling,
    compress_heavy,
    discovery
);
criterion_main!(benches);
