//! The team's example transcripts (`examples/transcripts/`): each one in its format, detected from
//! its content, read whole into a valid sequence, and replayed by the real binary.
//!
//! An example is named `<topic>.<format>.<extension>`, the format as `--format` spells it; a file
//! without a format in its name is an OpenAI object, like `coupon-fix.json`.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use ctxhost::formats::{detect_format, read_transcript, Format, Transcript, DETECTION_PREFIX_BYTES};
use ctxhost_engine_abi::Role;
use ctxhost_engine_kit::sequence::find_sequence_problems;
use pretty_assertions::assert_eq;
use serde_json::Value;

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/transcripts")
}

/// Every example, with the format its name gives.
fn examples() -> Vec<(PathBuf, Format)> {
    let mut examples: Vec<(PathBuf, Format)> = std::fs::read_dir(examples_dir())
        .expect("examples/transcripts is readable")
        .map(|entry| entry.unwrap().path())
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let parts: Vec<&str> = name.split('.').collect();
            let format = match parts.as_slice() {
                [_, format, _] => clap::ValueEnum::from_str(format, false)
                    .unwrap_or_else(|_| panic!("{name}: `{format}` is not a --format value")),
                _ => Format::OpenaiObject,
            };
            (path, format)
        })
        .collect();
    examples.sort();
    examples
}

fn read(name: &str) -> Transcript {
    read_transcript(&examples_dir().join(name), None).unwrap_or_else(|error| panic!("{error}"))
}

#[test]
fn every_format_has_an_example() {
    let mut formats: Vec<Format> = examples().into_iter().map(|(_, format)| format).collect();
    formats.sort();
    formats.dedup();
    assert_eq!(
        formats.len(),
        <Format as clap::ValueEnum>::value_variants().len(),
        "{formats:?}"
    );
}

#[test]
fn each_example_is_detected_read_whole_and_a_valid_sequence() {
    for (path, format) in examples() {
        let name = path.display();
        let start = std::fs::read(&path).unwrap();
        let start = String::from_utf8_lossy(&start[..start.len().min(DETECTION_PREFIX_BYTES)]).into_owned();
        assert_eq!(detect_format(&path, &start).unwrap(), format, "{name}");
        let transcript = read_transcript(&path, None).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(transcript.format, format, "{name}");
        assert!(
            transcript.messages.len() >= 10,
            "{name}: {} messages",
            transcript.messages.len()
        );
        assert_eq!(find_sequence_problems(&transcript.messages), vec![], "{name}");
        assert_eq!(transcript.meta.sequence_problems, vec![], "{name}");
        assert_eq!(transcript.meta.warnings, Vec::<String>::new(), "{name}");
        let calls = transcript.messages.iter().filter(|m| m.has_tool_calls()).count();
        let results = transcript
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .count();
        assert!(
            calls > 0 && results >= calls,
            "{name}: {calls} calls, {results} results"
        );
        let text: String = transcript
            .messages
            .iter()
            .map(|m| m.text().into_owned())
            .collect();
        assert!(text.contains("rror"), "{name}: an example shows an error");
    }
}

#[test]
fn the_claude_code_example_has_thinking_a_sidechain_and_usage_on_every_model_call() {
    let transcript = read("flaky-upload.claude-code.jsonl");
    let assistants: Vec<_> = transcript
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .collect();
    assert!(assistants.iter().all(|m| m.extra.contains_key("usage")));
    assert_eq!(assistants[0].extra["thinking"][0]["type"], "thinking");
    assert!(
        !assistants[0].text().contains("Flaky one run in five"),
        "thinking is not content"
    );
    // Records of one API message are merged: text and tool call, and two edits.
    assert!(assistants.iter().any(|m| m.calls().len() == 2));
    assert_eq!(transcript.meta.skipped["sidechain (a subagent's record)"], 4);
    assert_eq!(
        transcript.meta.model.as_deref(),
        Some("claude-sonnet-4-5-20250929")
    );
    assert_eq!(
        transcript.meta.extra["summaries"][0],
        "Fix flaky multipart upload retry test"
    );
}

#[test]
fn the_codex_example_has_usage_reasoning_and_the_window() {
    let transcript = read("clippy-toolchain.codex.jsonl");
    let assistants: Vec<_> = transcript
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .collect();
    assert!(assistants
        .iter()
        .all(|m| m.extra["usage"]["prompt_tokens"].as_u64() > Some(9000)));
    assert!(assistants.iter().any(|m| m.extra.contains_key("reasoning")));
    assert_eq!(transcript.messages[0].role, Role::System, "the developer message");
    assert_eq!(transcript.meta.context_length, Some(272_000));
    assert_eq!(transcript.meta.model.as_deref(), Some("gpt-5-codex"));
    let patch = assistants
        .iter()
        .flat_map(|m| m.calls())
        .find(|call| call.function.name == "apply_patch")
        .unwrap();
    assert!(patch.function.arguments.starts_with("*** Begin Patch"));
}

#[test]
fn the_hermes_example_starts_with_its_system_prompt() {
    let transcript = read("cron-dst.hermes.jsonl");
    assert_eq!(transcript.messages[0].role, Role::System);
    assert!(transcript.messages[0].text().starts_with("You are Hermes Agent"));
    assert_eq!(
        transcript.meta.session_id.as_deref(),
        Some("20260402_101512_3c9e1a7b")
    );
    assert_eq!(transcript.meta.context_length, Some(200_000));
    assert_eq!(transcript.meta.extra["end_reason"], "user_exit");
}

#[test]
fn the_swe_agent_example_maps_tool_call_ids() {
    let transcript = read("read-table-header.swe-agent.traj");
    let tools: Vec<_> = transcript
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .collect();
    assert_eq!(tools.len(), 10);
    assert!(tools
        .iter()
        .all(|m| m.tool_call_id.is_some() && !m.extra.contains_key("tool_call_ids")));
    assert_eq!(
        transcript.meta.model.as_deref(),
        Some("claude-3-5-sonnet-20241022")
    );
    assert_eq!(transcript.messages[2].extra["action"], "create reproduce.py");
}

#[test]
fn the_binary_replays_every_example() {
    for (path, format) in examples() {
        let output = Command::new(env!("CARGO_BIN_EXE_ctxhost"))
            .args(["run", path.to_str().unwrap(), "--json", "--engine", "compressor"])
            .current_dir(std::env::temp_dir())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{}: {stderr}", path.display());
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(report["format"], format.to_string(), "{}", path.display());
        let messages = read_transcript(&path, None).unwrap().messages.len();
        assert_eq!(report["messages_replayed"], messages, "{}", path.display());
    }
}
