//! Synthetic, deterministic tool-heavy conversations for the benchmarks.

use ctxhost_engine_abi::ModelInfo;

/// The sessions shared with xtask and the compressor's tests.
#[allow(unused_imports)] // not every benchmark uses them
pub use sessions::{heavy_session, tool_heavy_conversation};

#[path = "sessions.rs"]
pub mod sessions;

/// The engine benchmarks' model: a 100,000-token window, so that every transcript they compact
/// is far over the threshold.
#[allow(dead_code)] // used by the engine and serve benchmarks, not by every file that includes this one
pub fn model() -> ModelInfo {
    ModelInfo {
        model: "bench".into(),
        context_length: 100_000,
        ..ModelInfo::default()
    }
}

/// Writes [`tool_heavy_conversation`]`(n)` to a temporary JSONL file, one message a line, and
/// returns it with its size in bytes.
#[allow(dead_code)] // used by the replay benchmarks, not by every file that includes this one
pub fn write_jsonl_transcript(n: usize) -> (tempfile::NamedTempFile, u64) {
    use std::io::Write;
    let mut file = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .expect("a temporary file");
    {
        let mut out = std::io::BufWriter::new(file.as_file_mut());
        for message in tool_heavy_conversation(n) {
            serde_json::to_writer(&mut out, &message).expect("messages serialise");
            out.write_all(b"\n")
                .expect("the temporary file takes the transcript");
        }
        out.flush().expect("the temporary file takes the transcript");
    }
    let bytes = file.as_file().metadata().expect("the file has metadata").len();
    (file, bytes)
}

/// Replays the JSONL transcript at `path` through a fresh built-in compressor, reading it as a
/// stream, as `ctxhost run` does; the window is `context_length`.
#[allow(dead_code)] // used by the replay benchmarks, not by every file that includes this one
pub fn replay_file(path: &std::path::Path, context_length: u64) -> ctxhost::runner::ReplayOutcome {
    use ctxhost::{
        config::Settings,
        formats::{open_transcript, Format},
        resolution::builtin_compressor,
        runner::{replay_stream, ReplayOptions, Watchers},
    };
    let mut engine = builtin_compressor(&Settings::defaults(std::path::Path::new(".")));
    let options = ReplayOptions {
        session_id: "bench".into(),
        model: ctxhost_engine_abi::ModelInfo {
            model: "bench".into(),
            context_length,
            ..Default::default()
        },
        ..ReplayOptions::default()
    };
    let stream = open_transcript(path, Some(Format::OpenaiJsonl)).expect("the transcript opens");
    replay_stream(&mut engine, stream, &options, &[], Watchers::default()).expect("the transcript reads")
}
