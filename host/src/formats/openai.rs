//! OpenAI messages: a JSON array, `{"messages": […]}` with other keys, or JSONL.

use std::path::Path;

use ctxhost_engine_abi::Message;
use serde::Deserialize;
use serde_json::Value;

use super::{Format, TranscriptError, TranscriptMeta};

/// `{"messages": […], …}`; Hermes's evaluation fixtures also carry `model` and `context_length`.
#[derive(Deserialize)]
struct Wrapped {
    messages: Vec<Message>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    context_length: Option<u64>,
    #[serde(default, alias = "session_id")]
    id: Option<Value>,
}

/// A `{` file is JSONL when its first line is a whole JSON object and more follows.
pub(super) fn detect_object_or_lines(text: &str) -> Format {
    let mut lines = text.lines().map(str::trim).filter(|line| !line.is_empty());
    let first_is_whole = lines
        .next()
        .is_some_and(|line| serde_json::from_str::<Value>(line).is_ok());
    if first_is_whole
        && (lines.next().is_some() || text.contains("\"role\"") && !text.contains("\"messages\""))
    {
        Format::OpenaiJsonl
    } else {
        Format::OpenaiObject
    }
}

pub(super) fn read(
    path: &Path,
    text: &str,
    format: Format,
) -> Result<(Vec<Message>, TranscriptMeta), TranscriptError> {
    match format {
        Format::OpenaiArray => {
            let messages = serde_json::from_str(text).map_err(|e| TranscriptError::from_json(path, 0, &e))?;
            Ok((messages, TranscriptMeta::default()))
        }
        Format::OpenaiObject => {
            let wrapped: Wrapped =
                serde_json::from_str(text).map_err(|e| TranscriptError::from_json(path, 0, &e))?;
            let session_id = wrapped
                .id
                .map(|id| id.as_str().map_or_else(|| id.to_string(), str::to_owned));
            let meta = TranscriptMeta {
                model: wrapped.model,
                context_length: wrapped.context_length,
                session_id,
            };
            Ok((wrapped.messages, meta))
        }
        Format::OpenaiJsonl => read_lines(path, text).map(|messages| (messages, TranscriptMeta::default())),
    }
}

fn read_lines(path: &Path, text: &str) -> Result<Vec<Message>, TranscriptError> {
    let mut messages = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let message = serde_json::from_str(line).map_err(|e| TranscriptError::from_json(path, index, &e))?;
        messages.push(message);
    }
    Ok(messages)
}

#[cfg(test)]
mod tests {
    use super::super::{detect_format, read_transcript};
    use super::*;
    use pretty_assertions::assert_eq;

    fn write(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn all_three_shapes_are_detected_and_read() {
        let cases = [
            (r#"[{"role":"user","content":"hi"}]"#, Format::OpenaiArray),
            ("{\n \"name\": \"x\", \"context_length\": 1000,\n \"messages\": [{\"role\":\"user\",\"content\":\"hi\"}]\n}", Format::OpenaiObject),
            ("{\"role\":\"system\",\"content\":\"s\"}\n{\"role\":\"user\",\"content\":\"hi\"}\n", Format::OpenaiJsonl),
        ];
        for (text, format) in cases {
            let (_dir, path) = write(text);
            assert_eq!(detect_format(&path, text).unwrap(), format, "{text}");
            let transcript = read_transcript(&path, None).unwrap();
            assert_eq!(transcript.messages.last().unwrap().text(), "hi");
        }
    }

    #[test]
    fn the_object_form_carries_the_window() {
        let (_dir, path) = write(r#"{"model":"m","context_length":4096,"messages":[]}"#);
        let transcript = read_transcript(&path, None).unwrap();
        assert_eq!(transcript.meta.context_length, Some(4096));
        assert_eq!(transcript.meta.model.as_deref(), Some("m"));
    }

    #[test]
    fn a_malformed_line_is_reported_with_its_number() {
        let (_dir, path) =
            write("{\"role\":\"user\",\"content\":\"a\"}\n\n{\"role\":\"wizard\",\"content\":\"b\"}\n");
        let error = read_transcript(&path, None).unwrap_err().to_string();
        assert!(error.contains("t.json:3:"), "{error}");
        assert!(error.contains("unknown variant `wizard`"), "{error}");
    }

    #[test]
    fn a_malformed_array_is_reported_with_line_and_column() {
        let (_dir, path) = write("[\n{\"role\":\"user\",\"content\":\"a\"},\n{\"content\":\"no role\"}\n]");
        let error = read_transcript(&path, None).unwrap_err().to_string();
        assert!(error.contains("t.json:3:"), "{error}");
        assert!(error.contains("missing field `role`"), "{error}");
    }
}
