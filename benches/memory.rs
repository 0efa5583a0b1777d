//! Peak memory of `compress` against the size of its input, at growing transcript sizes.
//! Prints one line per size; `cargo xtask bench` runs it after the timing benchmarks.

#[path = "support.rs"]
mod support;

use ctxhost_compressor::Compressor;
use ctxhost_engine_abi::{messages_to_json, CompressRequest, Engine, Host, ModelInfo};
use peak_alloc::PeakAlloc;

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

fn main() {
    println!("messages  input_MB  peak_during_compress_MB  peak/input");
    for n in [1_000, 10_000, 100_000] {
        let messages = support::tool_heavy_conversation(n);
        let input_bytes = messages_to_json(&messages).len() as f64;
        let mut engine = Compressor::new(&serde_json::Value::Null, Host::detached()).unwrap();
        engine.update_model(&ModelInfo {
            context_length: 100_000,
            ..ModelInfo::default()
        });
        let before = ALLOCATOR.current_usage() as f64;
        ALLOCATOR.reset_peak_usage();
        let compacted = engine.compress(messages, &CompressRequest::default()).unwrap();
        let peak = ALLOCATOR.peak_usage() as f64 - before;
        drop(compacted);
        // The input itself is counted in `before`; the peak is what compress adds on top of it.
        let mb = |bytes: f64| bytes / 1e6;
        println!(
            "{n:>8}  {:>8.2}  {:>23.2}  {:>10.2}",
            mb(input_bytes),
            mb(peak.max(0.0)),
            peak.max(0.0) / input_bytes
        );
    }
}
