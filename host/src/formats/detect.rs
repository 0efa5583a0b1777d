//! Telling the format from the start of a file.
//!
//! Only the first [`DETECTION_PREFIX_BYTES`] are read. The first top-level value is parsed as far
//! as that prefix goes, keeping its keys (and the `type` of a record and of its `payload`), so a
//! truncated value still tells what it is. The rules, in order:
//! - `[` → OpenAI messages, JSON array;
//! - `{"type": "session_meta" | "response_item" | …, "payload": …}` → Codex rollout;
//! - a record with `role` → OpenAI messages, JSONL;
//! - a record with Claude Code's keys (`parentUuid`, `isSidechain`, `leafUuid`, `uuid`,
//!   `sessionId`) or types of its own (`file-history-snapshot`, which often opens the file,
//!   `queue-operation`, `summary`) → Claude Code;
//! - `history` or `trajectory` → SWE-agent trajectory;
//! - a Hermes session's own fields (`system_prompt`, `parent_session_id`, `message_count`…), or
//!   one-line objects with `messages` followed by more lines → Hermes session export;
//! - `messages`, or a multi-line document whose deciding keys lie beyond the prefix → OpenAI
//!   messages, JSON object.

use std::{fmt, fs::File, io::Read, path::Path};

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};

use super::{Format, TranscriptError};

/// How much of the start of a file detection reads.
pub const DETECTION_PREFIX_BYTES: usize = 64 * 1024;

const CODEX_RECORD_TYPES: &[&str] = &[
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
];
const CLAUDE_CODE_KEYS: &[&str] = &["parentUuid", "isSidechain", "leafUuid", "uuid", "sessionId"];
const CLAUDE_CODE_RECORD_TYPES: &[&str] = &["file-history-snapshot", "queue-operation", "summary"];
const HERMES_SESSION_KEYS: &[&str] = &[
    "system_prompt",
    "parent_session_id",
    "message_count",
    "tool_call_count",
    "started_at",
    "end_reason",
    "input_tokens",
];

/// Reads the start of the file at `path` and tells its format.
pub(super) fn detect_file(path: &Path) -> Result<Format, TranscriptError> {
    let file = File::open(path).map_err(|source| TranscriptError::read(path, source))?;
    let mut prefix = Vec::with_capacity(DETECTION_PREFIX_BYTES);
    file.take(DETECTION_PREFIX_BYTES as u64)
        .read_to_end(&mut prefix)
        .map_err(|source| TranscriptError::read(path, source))?;
    // The prefix may end inside a character.
    let text = match std::str::from_utf8(&prefix) {
        Ok(text) => text,
        Err(error) if error.error_len().is_none() => {
            std::str::from_utf8(&prefix[..error.valid_up_to()]).expect("valid up to here")
        }
        Err(_) => {
            return Err(TranscriptError::Unrecognised {
                path: path.to_owned(),
                reason: "its start is not UTF-8 text".to_owned(),
            })
        }
    };
    detect_format(path, text)
}

/// Tells the format from the start of a file (all of it, or a prefix).
pub fn detect_format(path: &Path, text: &str) -> Result<Format, TranscriptError> {
    let unrecognised = |reason: String| TranscriptError::Unrecognised {
        path: path.to_owned(),
        reason,
    };
    let text = text.trim_start_matches('\u{feff}').trim_start();
    match text.as_bytes().first() {
        None => return Err(unrecognised("the file is empty".to_owned())),
        Some(b'[') => return Ok(Format::OpenaiArray),
        Some(b'{') => {}
        Some(_) => return Err(unrecognised("it starts with neither `[` nor `{`".to_owned())),
    }
    // A whole value on the first line is a JSONL record; otherwise the file is one document (or
    // its first line is longer than the prefix).
    let first_line = text.find('\n').map_or(text, |end| &text[..end]);
    let (first, one_line) = match sniff(first_line) {
        (sniffed, true) => (sniffed, true),
        (_, false) => (sniff(text).0, false),
    };
    let more_lines = one_line && !text[first_line.len()..].trim().is_empty();
    let has = |key: &str| first.keys.iter().any(|seen| seen == key);
    let has_any = |keys: &[&str]| keys.iter().any(|key| has(key));
    let format = if has("payload")
        && first
            .kind
            .as_deref()
            .is_some_and(|kind| CODEX_RECORD_TYPES.contains(&kind))
    {
        Format::Codex
    } else if has("role") {
        Format::OpenaiJsonl
    } else if has_any(CLAUDE_CODE_KEYS)
        || first
            .kind
            .as_deref()
            .is_some_and(|kind| CLAUDE_CODE_RECORD_TYPES.contains(&kind))
    {
        Format::ClaudeCode
    } else if has("history") || has("trajectory") {
        Format::SweAgent
    } else if has_any(HERMES_SESSION_KEYS) || (has("messages") && one_line && more_lines) {
        Format::Hermes
    } else if has("messages") || !one_line {
        Format::OpenaiObject
    } else {
        let keys: Vec<String> = first.keys.iter().map(|key| format!("`{key}`")).collect();
        return Err(unrecognised(format!(
            "its first record has the keys {}, which no format it reads has; --format forces one",
            if keys.is_empty() {
                "(none)".to_owned()
            } else {
                keys.join(", ")
            }
        )));
    };
    Ok(format)
}

/// What the first value shows, as far as the text goes.
#[derive(Debug, Default)]
struct Sniffed {
    keys: Vec<String>,
    /// The record's `type`, or its `payload`'s.
    kind: Option<String>,
}

/// Parses the first value of `text` as far as it goes; whether it was whole.
fn sniff(text: &str) -> (Sniffed, bool) {
    let mut sniffed = Sniffed::default();
    let whole = SniffObject {
        sniffed: &mut sniffed,
    }
    .deserialize(&mut serde_json::Deserializer::from_str(text))
    .is_ok();
    (sniffed, whole)
}

struct SniffObject<'a> {
    sniffed: &'a mut Sniffed,
}

impl<'de> DeserializeSeed<'de> for SniffObject<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SniffObject<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            // The key is kept before its value is read: the prefix may end inside the value.
            self.sniffed.keys.push(key.clone());
            match key.as_str() {
                "type" => {
                    let kind = map.next_value::<serde_json::Value>()?;
                    if self.sniffed.kind.is_none() {
                        self.sniffed.kind = kind.as_str().map(str::to_owned);
                    }
                }
                // Codex's record type is the outer `type`; the payload's is not needed.
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn detect(text: &str) -> Result<Format, String> {
        detect_format(Path::new("t"), text).map_err(|error| error.to_string())
    }

    #[test]
    fn each_format_is_told_from_its_first_record() {
        let cases = [
            ("[{\"role\":\"user\",\"content\":\"hi\"}]", Format::OpenaiArray),
            ("{\n  \"name\": \"x\",\n  \"messages\": [\n", Format::OpenaiObject),
            ("{\"messages\": [], \"model\": \"m\"}", Format::OpenaiObject),
            (
                "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"assistant\"",
                Format::OpenaiJsonl,
            ),
            (
                "{\"id\":\"s1\",\"model\":\"m\",\"system_prompt\":\"You are",
                Format::Hermes,
            ),
            (
                "{\"id\":\"s1\",\"messages\":[]}\n{\"id\":\"s2\",\"messages\":[]}\n",
                Format::Hermes,
            ),
            (
                "{\"parentUuid\":null,\"isSidechain\":false,\"type\":\"user\",\"message\":{",
                Format::ClaudeCode,
            ),
            (
                "{\"type\":\"summary\",\"summary\":\"Title\",\"leafUuid\":\"u1\"}\n",
                Format::ClaudeCode,
            ),
            (
                "{\"type\":\"file-history-snapshot\",\"messageId\":\"m\",\"snapshot\":{},\"isSnapshotUpdate\":false}\n",
                Format::ClaudeCode,
            ),
            (
                "{\"timestamp\":\"t\",\"type\":\"session_meta\",\"payload\":{\"id\":\"x\"}}\n",
                Format::Codex,
            ),
            (
                "{\n    \"environment\": \"main\",\n    \"trajectory\": [\n",
                Format::SweAgent,
            ),
            ("\u{feff}  {\"history\": []}", Format::SweAgent),
        ];
        for (text, format) in cases {
            assert_eq!(detect(text), Ok(format), "{text}");
        }
    }

    #[test]
    fn unknown_content_is_refused_with_what_was_seen() {
        assert_eq!(
            detect("").unwrap_err(),
            "t: not a transcript format ctxhost reads (the file is empty)"
        );
        assert!(detect("hello").unwrap_err().contains("neither `[` nor `{`"));
        let error = detect("{\"foo\": 1, \"bar\": 2}\n{\"foo\": 3}\n").unwrap_err();
        assert!(error.contains("the keys `foo`, `bar`"), "{error}");
    }
}
