//! Telling the format from the start of a file.
//!
//! Only the first [`DETECTION_PREFIX_BYTES`] are read. The first top-level value is parsed as far
//! as that prefix goes, keeping its keys (and the `type` of a record and of its `payload`), so a
//! truncated value still tells what it is. The rules, in order:
//! - `[` whose first element is an event (`source` with `action` or `observation`) → OpenHands
//!   event stream; any other `[` → OpenAI messages, JSON array;
//! - `{"type": "session_meta" | "response_item" | …, "payload": …}` → Codex rollout;
//! - a legacy Codex rollout: a first line `{id, timestamp, …}` with no `type`, `role` or
//!   `messages`, or a bare response item (`{"type": "message" | "function_call" | …}` without a
//!   `payload`) → Codex rollout;
//! - a record with `role` → OpenAI messages, JSONL;
//! - a record with Claude Code's keys (`parentUuid`, `isSidechain`, `leafUuid`, `uuid`,
//!   `sessionId`) or types of its own (`file-history-snapshot`, which often opens the file,
//!   `queue-operation`, `summary`) → Claude Code;
//! - `trajectory` whose first element is an OpenHands event → OpenHands event stream;
//! - `history` or `trajectory` → SWE-agent trajectory;
//! - a Hermes session's own fields (`system_prompt`, `parent_session_id`, `message_count`…), or
//!   one-line objects with `messages` followed by more lines → Hermes session export;
//! - `messages`, or a multi-line document whose deciding keys lie beyond the prefix → OpenAI
//!   messages, JSON object.
//!
//! A forced format is checked against the same prefix ([`check_forced`]): a file that looks like
//! another format is refused, naming both, rather than read as junk.

use std::{fmt, io::Read, path::Path};

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

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
/// Response items a legacy Codex rollout writes bare, one a line.
const CODEX_ITEM_TYPES: &[&str] = &[
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "local_shell_call",
    "custom_tool_call",
    "custom_tool_call_output",
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

/// Why no format was told.
enum Unknown {
    /// The start is not JSON: no format could read it.
    NotJson(String),
    /// JSON whose keys no format has: forcing a format is how to read it.
    UnknownKeys(String),
}

impl Unknown {
    fn into_error(self, path: &Path) -> TranscriptError {
        let (Self::NotJson(reason) | Self::UnknownKeys(reason)) = self;
        TranscriptError::Unrecognised {
            path: path.to_owned(),
            reason,
        }
    }
}

/// Tells the format of the file at `path` from its start, `prefix`.
pub(super) fn detect_file(path: &Path, prefix: &[u8]) -> Result<Format, TranscriptError> {
    detect_prefix(prefix)
        .map(|detected| detected.format)
        .map_err(|unknown| unknown.into_error(path))
}

/// Checks that the file at `path`, which starts with `prefix`, can be read as `forced`: refused
/// when its start looks like another format (a file of no known shape is left to the reader,
/// since forcing a format is how to read one).
pub(super) fn check_forced(path: &Path, prefix: &[u8], forced: Format) -> Result<(), TranscriptError> {
    let refused = |looks_like, reason| TranscriptError::NotThatFormat {
        path: path.to_owned(),
        forced,
        looks_like,
        reason,
    };
    match detect_prefix(prefix) {
        Ok(detected) if fits(forced, detected) => Ok(()),
        Ok(detected) => Err(refused(Some(detected.format), String::new())),
        Err(Unknown::NotJson(reason)) => Err(refused(None, reason)),
        Err(Unknown::UnknownKeys(_)) => Ok(()),
    }
}

/// Whether a file detected as `detected` may be read as `forced`: the same format, an object
/// with `messages` and an `id` read as the Hermes session it may be (a session row always has its
/// id; an OpenAI object without one, such as Hermes's evaluation fixtures, is refused), or an
/// object whose start does not decide between the object formats. A Hermes export is never read
/// as an OpenAI object: that reader would leave its `system_prompt` and window in the meta and
/// stop at its second session.
fn fits(forced: Format, detected: Detected) -> bool {
    forced == detected.format
        || match (forced, detected.format) {
            (Format::Hermes, Format::OpenaiObject) => detected.has_id || !detected.decided,
            (Format::SweAgent | Format::Openhands, Format::OpenaiObject) => !detected.decided,
            _ => false,
        }
}

/// A format told from the start of a file.
#[derive(Clone, Copy)]
struct Detected {
    format: Format,
    /// Whether keys of its own told it; false for a multi-line document read as an OpenAI
    /// object for want of any deciding key in the prefix.
    decided: bool,
    /// Whether the first value has an `id` key.
    has_id: bool,
}

/// The first [`DETECTION_PREFIX_BYTES`] of `file` (all of it when shorter), read from the handle
/// the reader goes on with: a pipe or a FIFO can be read only once. A start that is all blank
/// space is read on, up to [`BLANK_START_BYTES`], until something tells the format: a file that
/// opened with 64 KB of blank lines was refused as empty (verify35).
pub(super) fn read_prefix(path: &Path, file: &mut impl Read) -> Result<Vec<u8>, TranscriptError> {
    let mut prefix = Vec::with_capacity(DETECTION_PREFIX_BYTES);
    loop {
        let read = file
            .take(DETECTION_PREFIX_BYTES as u64)
            .read_to_end(&mut prefix)
            .map_err(|source| TranscriptError::read(path, source))?;
        let blank = prefix
            .strip_prefix(b"\xEF\xBB\xBF")
            .unwrap_or(&prefix)
            .iter()
            .all(u8::is_ascii_whitespace);
        if read < DETECTION_PREFIX_BYTES || !blank || prefix.len() >= BLANK_START_BYTES {
            return Ok(prefix);
        }
    }
}

/// Blank space read at most before a file is said to be empty.
const BLANK_START_BYTES: usize = 16 << 20;

fn detect_prefix(prefix: &[u8]) -> Result<Detected, Unknown> {
    // The prefix may end inside a character, or hold a byte that is not UTF-8 after the text
    // that tells the format: that byte is one record's problem, which its reader reports with
    // its line (and --skip-bad-records skips), not the whole file's.
    let text = match std::str::from_utf8(prefix) {
        Ok(text) => text,
        Err(error) if error.error_len().is_none() || error.valid_up_to() > 0 => {
            std::str::from_utf8(&prefix[..error.valid_up_to()]).expect("valid up to here")
        }
        Err(_) => return Err(Unknown::NotJson("its start is not UTF-8 text".to_owned())),
    };
    detect_text(text)
}

/// Tells the format from the start of a file (all of it, or a prefix).
pub fn detect_format(path: &Path, text: &str) -> Result<Format, TranscriptError> {
    detect_text(text)
        .map(|detected| detected.format)
        .map_err(|unknown| unknown.into_error(path))
}

fn detect_text(text: &str) -> Result<Detected, Unknown> {
    let decided = |format| Detected {
        format,
        decided: true,
        has_id: false,
    };
    let text = text.trim_start_matches('\u{feff}').trim_start();
    match text.as_bytes().first() {
        None => return Err(Unknown::NotJson("the file is empty".to_owned())),
        Some(b'[') => {
            let element = sniff_first_element(text);
            return Ok(decided(if is_openhands_event(&element) {
                Format::Openhands
            } else {
                Format::OpenaiArray
            }));
        }
        Some(b'{') => {}
        Some(_) => return Err(Unknown::NotJson("it starts with neither `[` nor `{`".to_owned())),
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
    let kind_in = |kinds: &[&str]| first.kind.as_deref().is_some_and(|kind| kinds.contains(&kind));
    // A legacy Codex rollout: its meta line without a type, or a bare response item.
    let legacy_codex = one_line
        && ((!has("type") && !has("role") && !has("messages") && has("id") && has("timestamp"))
            || (!has("payload") && kind_in(CODEX_ITEM_TYPES)));
    let format = if (has("payload") && kind_in(CODEX_RECORD_TYPES)) || legacy_codex {
        Format::Codex
    } else if has("role") {
        Format::OpenaiJsonl
    } else if has_any(CLAUDE_CODE_KEYS) || kind_in(CLAUDE_CODE_RECORD_TYPES) {
        Format::ClaudeCode
    } else if has("trajectory") && is_openhands_event(&first.element_keys) {
        Format::Openhands
    } else if has("history") || has("trajectory") {
        Format::SweAgent
    } else if has_any(HERMES_SESSION_KEYS) || (has("messages") && one_line && more_lines) {
        Format::Hermes
    } else if has("messages") {
        Format::OpenaiObject
    } else if !one_line {
        return Ok(Detected {
            format: Format::OpenaiObject,
            decided: false,
            has_id: has("id"),
        });
    } else {
        let keys: Vec<String> = first.keys.iter().map(|key| format!("`{key}`")).collect();
        return Err(Unknown::UnknownKeys(format!(
            "its first record has the keys {}, which no format it reads has; --format forces one",
            if keys.is_empty() {
                "(none)".to_owned()
            } else {
                keys.join(", ")
            }
        )));
    };
    Ok(Detected {
        has_id: has("id"),
        ..decided(format)
    })
}

/// Whether keys are an OpenHands event's: `source`, and `action` or `observation`.
fn is_openhands_event(keys: &[String]) -> bool {
    let has = |key: &str| keys.iter().any(|seen| seen == key);
    has("source") && (has("action") || has("observation"))
}

/// The keys of the first element of the array `text` starts with, as far as the text goes.
fn sniff_first_element(text: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let _ = FirstElementKeys { keys: &mut keys }.deserialize(&mut serde_json::Deserializer::from_str(text));
    keys
}

/// What the first value shows, as far as the text goes.
#[derive(Debug, Default)]
struct Sniffed {
    keys: Vec<String>,
    /// The record's `type`, or its `payload`'s.
    kind: Option<String>,
    /// The keys of the first element of its `trajectory`.
    element_keys: Vec<String>,
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
                "trajectory" => map.next_value_seed(FirstElementKeys {
                    keys: &mut self.sniffed.element_keys,
                })?,
                // Codex's record type is the outer `type`; the payload's is not needed.
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// Any value; when it is an array whose first element is an object, that object's keys are kept
/// as they are read.
struct FirstElementKeys<'a> {
    keys: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for FirstElementKeys<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for FirstElementKeys<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        seq.next_element_seed(KeysOf { keys: self.keys })?;
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        IgnoredAny.visit_map(map).map(drop)
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// Any value; an object's keys are kept as they are read.
struct KeysOf<'a> {
    keys: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for KeysOf<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeysOf<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            self.keys.push(key);
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        IgnoredAny.visit_seq(seq).map(drop)
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
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
            (
                "[\n  {\n    \"id\": 0,\n    \"source\": \"agent\",\n    \"action\": \"system\",",
                Format::Openhands,
            ),
            (
                "{\"trajectory\": [{\"id\": 0, \"source\": \"user\", \"action\": \"message\"}]}",
                Format::Openhands,
            ),
            (
                "{\"id\":\"5973b6c0\",\"timestamp\":\"2025-04-23T12:00:00Z\",\"instructions\":null}\n{\"type\":\"message\"",
                Format::Codex,
            ),
            (
                "{\"type\":\"message\",\"role\":\"user\",\"content\":[]}\n",
                Format::Codex,
            ),
            (
                "{\n  \"id\": \"s1\",\n  \"system_prompt\": \"You are\",\n  \"messages\": [",
                Format::Hermes,
            ),
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
