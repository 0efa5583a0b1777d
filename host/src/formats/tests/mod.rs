//! Tests of the readers on small inline transcripts.

use std::path::PathBuf;

use serde_json::Value;

use super::{read_transcript, Format, Transcript};

mod api_shape;
mod claude_code;
mod codex;
mod hermes;
mod mutation;
mod openai_legacy;
mod openhands;
mod stream;
mod swe_agent;

/// Writes `text` to a file named `name` in a new temporary directory.
pub(super) fn write(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// One JSON record a line.
fn jsonl(records: &[Value]) -> String {
    records.iter().map(|record| format!("{record}\n")).collect()
}

/// Reads `text` as a file, checking that detection finds `format`.
fn read(format: Format, text: &str) -> Transcript {
    let (_dir, path) = write("transcript", text);
    let transcript = read_transcript(&path, None).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(transcript.format, format);
    transcript
}

/// Reads `text` as a file in `format`; the error, as one line of text.
fn read_error(format: Format, text: &str) -> String {
    let (_dir, path) = write("transcript", text);
    let error = read_transcript(&path, Some(format)).expect_err("the transcript should not read");
    error
        .to_string()
        .replace(&path.display().to_string(), "transcript")
}

/// The messages as JSON, to compare whole.
fn messages_json(transcript: &Transcript) -> Value {
    serde_json::to_value(&transcript.messages).unwrap()
}
