//! Synthetic, deterministic tool-heavy conversations for the benchmarks.

use ctxhost_engine_abi::{Message, ModelInfo, ToolCall};

/// The heavy session and the retention corpus, shared with xtask and the compressor's tests.
#[allow(unused_imports)] // not every benchmark uses them
pub use sessions::heavy_session;

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

/// A conversation of about `n` messages: a system prompt, then turns of a user request, assistant
/// tool calls with 1–3 KB outputs (shell runs, file reads, searches), and assistant replies.
pub fn tool_heavy_conversation(n: usize) -> Vec<Message> {
    let mut messages = vec![Message::system(
        "You are a coding agent in /srv/app. Use the tools.",
    )];
    let mut step = 0usize;
    while messages.len() < n {
        if step.is_multiple_of(25) {
            messages.push(Message::user(format!(
                "Step {step}: please fix issue #{} in src/mod_{step}.rs",
                100 + step
            )));
        }
        let id = format!("call_{step}");
        let (name, arguments, output) = match step % 3 {
            0 => (
                "terminal",
                format!(r#"{{"command":"cargo test -p mod_{step}"}}"#),
                shell_output(step),
            ),
            1 => (
                "read_file",
                format!(r#"{{"path":"src/mod_{step}.rs","offset":1}}"#),
                file_output(step),
            ),
            _ => (
                "search_files",
                format!(r#"{{"pattern":"fn handle_{step}","path":"src"}}"#),
                search_output(step),
            ),
        };
        messages.push(Message::assistant_calls(vec![ToolCall::new(
            id.clone(),
            name,
            arguments,
        )]));
        messages.push(Message::tool(id, output));
        if step % 5 == 4 {
            messages.push(Message::assistant(format!(
                "Checked step {step}; moving on to the next module."
            )));
        }
        step += 1;
    }
    messages.truncate(n.max(2));
    if messages.last().is_some_and(|m| m.has_tool_calls()) {
        messages.pop();
    }
    messages
}

fn shell_output(step: usize) -> String {
    let mut out = String::new();
    for line in 0..30 + step % 20 {
        out.push_str(&format!("test mod_{step}::case_{line} ... ok (0.{line:02}s)\n"));
    }
    out.push_str(&format!(
        "error[E0308]: mismatched types in src/mod_{step}.rs:{}\nExit code: 1\n",
        10 + step % 90
    ));
    out
}

fn file_output(step: usize) -> String {
    (1..=40 + step % 30)
        .map(|line| format!("{line:4}| let value_{line} = compute_{step}(input, {line});\n"))
        .collect()
}

fn search_output(step: usize) -> String {
    (0..20 + step % 25)
        .map(|hit| {
            format!(
                "src/mod_{hit}.rs:{}: fn handle_{step}(req: Request) -> Response\n",
                hit * 7
            )
        })
        .collect()
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
