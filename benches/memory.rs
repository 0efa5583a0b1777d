//! Peak memory, measured by a counting global allocator:
//! - of `compress` against the size of its input, at growing transcript sizes;
//! - of a whole replay of a JSONL transcript read as a stream (10,000 and 100,000 messages),
//!   against the file's size and the live context's: memory must not grow with the transcript's
//!   length beyond the live context and the output.
//!
//! Prints one line per size and writes the figures to `target/bench-memory.json` for
//! `benches/ratios.py`; `cargo xtask bench` runs it after the timing benchmarks.

#[path = "support.rs"]
mod support;

use std::path::PathBuf;

use ctxhost::formats::{open_transcript, Format};
use ctxhost_compressor::Compressor;
use ctxhost_engine_abi::{messages_to_json, CompressRequest, Engine, Host, ModelInfo};
use peak_alloc::PeakAlloc;
use serde_json::json;

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

/// The window of both measures; the replay's is the one `benches/replay.rs` times.
const CONTEXT_LENGTH: u64 = 100_000;

fn mb(bytes: f64) -> f64 {
    bytes / 1e6
}

/// Runs `body` and returns its result with the most it allocated at once on top of what was
/// already allocated.
fn peak_of<T>(body: impl FnOnce() -> T) -> (T, f64) {
    let (value, peak, _) = peak_and_kept(body);
    (value, peak)
}

/// [`peak_of`], and what is still allocated when `body` returns: its result.
fn peak_and_kept<T>(body: impl FnOnce() -> T) -> (T, f64, f64) {
    let before = ALLOCATOR.current_usage() as f64;
    ALLOCATOR.reset_peak_usage();
    let value = body();
    let peak = ALLOCATOR.peak_usage() as f64 - before;
    let kept = ALLOCATOR.current_usage() as f64 - before;
    (value, peak.max(0.0), kept.max(0.0))
}

fn compress_peaks() -> Vec<serde_json::Value> {
    println!("messages  input_MB  peak_during_compress_MB  peak/input");
    let mut rows = Vec::new();
    for n in [1_000, 10_000, 100_000] {
        let messages = support::tool_heavy_conversation(n);
        let input_bytes = messages_to_json(&messages).len() as f64;
        let mut engine = Compressor::new(&serde_json::Value::Null, Host::detached()).unwrap();
        engine.update_model(&ModelInfo {
            context_length: CONTEXT_LENGTH,
            ..ModelInfo::default()
        });
        // The input itself is counted in what was allocated before; the peak is what compress
        // adds on top of it.
        let (compacted, peak) = peak_of(|| engine.compress(messages, &CompressRequest::default()).unwrap());
        drop(compacted);
        println!(
            "{n:>8}  {:>8.2}  {:>23.2}  {:>10.2}",
            mb(input_bytes),
            mb(peak),
            peak / input_bytes
        );
        rows.push(json!({"messages": n, "input_bytes": input_bytes, "peak_bytes": peak}));
    }
    rows
}

fn replay_peaks() -> Vec<serde_json::Value> {
    println!("\nreplay of a JSONL transcript read as a stream (built-in compressor, window {CONTEXT_LENGTH} tokens)");
    println!(
        "messages  file_MB  peak_MB  peak/file  reading_alone_MB  live_context_text_MB  outcome_in_memory_MB  compactions"
    );
    let mut rows = Vec::new();
    for n in [10_000, 100_000] {
        // Written before measuring: generating the transcript holds all of it once.
        let (file, file_bytes) = support::write_jsonl_transcript(n);
        // The stream alone, each message dropped once read: what the reader itself holds.
        let ((), reading) = peak_of(|| {
            let stream = open_transcript(file.path(), Some(Format::OpenaiJsonl)).unwrap();
            stream.for_each(|message| drop(message.unwrap()));
        });
        // What is still allocated after the replay is its outcome: the records and the final
        // context.
        let (outcome, peak, kept) = peak_and_kept(|| support::replay_file(file.path(), CONTEXT_LENGTH));
        // The rough counter is characters ÷ 4: the largest context the model saw, as text.
        let live_text = (outcome.peak_tokens * 4) as f64;
        println!(
            "{n:>8}  {:>7.1}  {:>7.1}  {:>9.3}  {:>16.2}  {:>20.2}  {:>20.2}  {:>11}",
            mb(file_bytes as f64),
            mb(peak),
            peak / file_bytes as f64,
            mb(reading),
            mb(live_text),
            mb(kept),
            outcome.compactions.len()
        );
        rows.push(json!({
            "messages": n,
            "file_bytes": file_bytes,
            "peak_bytes": peak,
            "reading_alone_peak_bytes": reading,
            "live_context_text_bytes": live_text,
            "outcome_bytes": kept,
            "compactions": outcome.compactions.len(),
        }));
    }
    rows
}

/// `target/`, from this program's path (`target/release/deps/memory-…`).
fn target_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.parent()?.to_owned())
}

fn main() {
    let compress = compress_peaks();
    let replay = replay_peaks();
    let figures = json!({"compress": compress, "replay": replay});
    if let Some(path) = target_dir().map(|dir| dir.join("bench-memory.json")) {
        if let Err(error) = std::fs::write(&path, serde_json::to_string_pretty(&figures).unwrap()) {
            eprintln!("{}: cannot write the figures: {error}", path.display());
        }
    }
}
