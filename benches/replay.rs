//! A whole replay, as `ctxhost run` does one: a JSONL transcript of 10,000 or 100,000 tool-heavy
//! messages read as a stream and fed through the built-in compressor, with every compaction,
//! retention measure and token count. Run with `cargo xtask bench` (which prints the figures
//! through `benches/ratios.py`), or alone with `cargo bench -p ctxhost --bench replay`; its peak
//! memory is measured by `benches/memory.rs`.

#[path = "support.rs"]
mod support;

// What the `ctxhost` binary runs with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// The window: 100,000 tokens, so that the compressor compacts every few hundred messages.
pub const CONTEXT_LENGTH: u64 = 100_000;

fn replay_transcripts(c: &mut Criterion) {
    let mut group = c.benchmark_group("replay");
    // A 100,000-message replay takes seconds: the fewest samples criterion takes, and no more
    // warm-up than one run.
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    for n in [10_000, 100_000] {
        let (file, bytes) = support::write_jsonl_transcript(n);
        group.throughput(Throughput::Bytes(bytes));
        group.bench_with_input(BenchmarkId::from_parameter(n), file.path(), |b, path| {
            b.iter(|| support::replay_file(path, CONTEXT_LENGTH))
        });
    }
    group.finish();
}

criterion_group!(benches, replay_transcripts);
criterion_main!(benches);
