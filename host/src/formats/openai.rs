//! OpenAI messages: a JSON array, `{"messages": […]}` with other keys, or JSONL.
//!
//! The object form is Hermes's evaluation fixtures' (`name`, `model`, `context_length`…): `model`,
//! `context_length` and `id` (or `session_id`) fill the meta, every other key goes to
//! [`TranscriptMeta::extra`], before or after the messages.
//!
//! Hermes's own per-session transcripts (`~/.hermes/sessions/<id>.jsonl`) are OpenAI JSONL whose
//! first line is `{"role": "session_meta", "model", "tools", "platform", …}`: the session's
//! details, not a message. Such a record, in any of the three shapes, goes to the meta (its model,
//! and the record under `extra["session_meta"]`).
//!
//! OpenAI's legacy function calling (`function_call`, `role: "function"`) is read as tool calls,
//! in every shape (see `legacy`).

use std::{io::BufRead, path::Path};

use ctxhost_engine_abi::Message;
use serde_json::{Map, Value};

use super::{
    cursor::{text_as_object, ArrayElements, Element, JsonCursor},
    legacy::LegacyFunctions,
    lines::JsonLines,
    pairing::message_with_fixed_ids,
    read_developer_role, value_as_text, Located, Source, TranscriptError, TranscriptMeta,
};

/// `[message, …]`.
pub(super) struct ArrayReader<R> {
    cursor: JsonCursor<R>,
    state: ArrayState,
    batch: Batch,
}

enum ArrayState {
    Start,
    Elements { first: bool },
    Done,
}

impl<R: BufRead> ArrayReader<R> {
    pub(super) fn new(path: &Path, reader: R) -> Self {
        Self {
            cursor: JsonCursor::new(path, reader),
            state: ArrayState::Start,
            batch: Batch::default(),
        }
    }
}

impl<R: BufRead + Send> Source for ArrayReader<R> {
    fn next_message(&mut self, meta: &mut TranscriptMeta) -> Result<Option<Located>, TranscriptError> {
        loop {
            match &mut self.state {
                ArrayState::Start => {
                    self.cursor.skip_bom()?;
                    self.cursor.begin_array("a JSON array of messages")?;
                    self.state = ArrayState::Elements { first: true };
                }
                ArrayState::Elements { first } => {
                    match self.batch.next(&mut self.cursor, first, meta)? {
                        Some(Some(message)) => return Ok(Some(message)),
                        Some(None) => continue,
                        None => {}
                    }
                    self.cursor.expect_end("the array of messages")?;
                    self.batch.legacy.report(self.cursor.path(), meta);
                    self.state = ArrayState::Done;
                }
                ArrayState::Done => return Ok(None),
            }
        }
    }
}

/// `{"messages": […], …}`.
pub(super) struct ObjectReader<R> {
    cursor: JsonCursor<R>,
    state: ObjectState,
    seen_messages: bool,
    batch: Batch,
}

enum ObjectState {
    Start,
    Keys { first: bool },
    Messages { first: bool },
    Done,
}

impl<R: BufRead> ObjectReader<R> {
    pub(super) fn new(path: &Path, reader: R) -> Self {
        Self {
            cursor: JsonCursor::new(path, reader),
            state: ObjectState::Start,
            seen_messages: false,
            batch: Batch::default(),
        }
    }
}

impl<R: BufRead + Send> Source for ObjectReader<R> {
    fn next_message(&mut self, meta: &mut TranscriptMeta) -> Result<Option<Located>, TranscriptError> {
        loop {
            match &mut self.state {
                ObjectState::Start => {
                    self.cursor.skip_bom()?;
                    self.cursor.begin_object("a JSON object with `messages`")?;
                    self.state = ObjectState::Keys { first: true };
                }
                ObjectState::Keys { first } => {
                    let at = self.cursor.here();
                    match self.cursor.next_key(first)? {
                        Some(key) if key == "messages" => {
                            if std::mem::replace(&mut self.seen_messages, true) {
                                return Err(self.cursor.error_at(at, "a second `messages` key"));
                            }
                            self.cursor.begin_array("the `messages` array")?;
                            self.state = ObjectState::Messages { first: true };
                        }
                        Some(key) => {
                            let value = self.cursor.value::<Value>()?;
                            record_session_field(meta, key, value);
                        }
                        None => {
                            self.cursor.expect_end("the JSON object")?;
                            if !self.seen_messages {
                                return Err(self.cursor.error_here("the object has no `messages` array"));
                            }
                            self.batch.legacy.report(self.cursor.path(), meta);
                            self.state = ObjectState::Done;
                        }
                    }
                }
                ObjectState::Messages { first } => {
                    match self.batch.next(&mut self.cursor, first, meta)? {
                        Some(Some(message)) => return Ok(Some(message)),
                        Some(None) => continue,
                        None => {}
                    }
                    self.state = ObjectState::Keys { first: false };
                }
                ObjectState::Done => return Ok(None),
            }
        }
    }
}

/// The messages of an array, read ahead, and the legacy `function` messages met in them.
#[derive(Default)]
struct Batch {
    elements: ArrayElements<Message>,
    legacy: LegacyFunctions,
}

impl Batch {
    /// The next element as a message (`Some(None)` for Hermes's `session_meta`, which goes to the
    /// meta); `None` once the array's `]` is consumed.
    fn next<R: BufRead>(
        &mut self,
        cursor: &mut JsonCursor<R>,
        first: &mut bool,
        meta: &mut TranscriptMeta,
    ) -> Result<Option<Option<Located>>, TranscriptError> {
        match self.elements.next(cursor, first)? {
            Some(element) => element_message(cursor, element, meta, &mut self.legacy).map(Some),
            None => Ok(None),
        }
    }
}

/// An array element as a message: `None` for Hermes's `session_meta`, which goes to the meta.
fn element_message<R: BufRead>(
    cursor: &JsonCursor<R>,
    element: Element<Message>,
    meta: &mut TranscriptMeta,
    legacy: &mut LegacyFunctions,
) -> Result<Option<Located>, TranscriptError> {
    let Element { at, value, text } = element;
    let message = match value {
        Ok(message) => message,
        Err(error) => {
            let record = text_as_object(text.as_deref());
            match read_refused_record(record, &at.place(), cursor.path(), meta, legacy, error)? {
                Some(message) => message,
                None => return Ok(None),
            }
        }
    };
    Ok(Some(legacy.take_message(
        Located::at(message, at),
        cursor.path(),
        meta,
    )))
}

/// A record that is not a message as it is, read as what it may be instead: a legacy `function`
/// message, a message whose ids have the wrong type (each fix a warning naming `place`), or
/// Hermes's `session_meta` (`None`: it went to the meta). `error` when it is none of these.
fn read_refused_record(
    record: Option<Map<String, Value>>,
    place: &str,
    path: &Path,
    meta: &mut TranscriptMeta,
    legacy: &mut LegacyFunctions,
    error: TranscriptError,
) -> Result<Option<Message>, TranscriptError> {
    let Some(mut record) = record else {
        return Err(error);
    };
    let developer = read_developer_role(&mut record, place);
    if record.get("role").and_then(Value::as_str) == Some("session_meta") {
        take_session_meta(Some(record), meta);
        return Ok(None);
    }
    let (message, fixed) = if record.get("role").and_then(Value::as_str) == Some("function") {
        // The refusal said that `function` is no role: what is wrong is something else.
        legacy
            .read_function_result(record)
            .map_err(|why| with_message(error, format!("a legacy `function` message: {why}")))?
    } else {
        match message_with_fixed_ids(record) {
            Ok((message, fixed)) if !fixed.is_empty() || developer.is_some() => (message, fixed),
            Ok(_) | Err(_) => return Err(error),
        }
    };
    if let Some(warning) = developer {
        meta.warn(path, warning);
    }
    meta.pairing_repairs += fixed.len() as u64;
    for fix in fixed {
        meta.warn(path, format!("{place}: {fix}"));
    }
    Ok(Some(message))
}

/// `error` saying `message` instead, at the same place.
fn with_message(mut error: TranscriptError, message: String) -> TranscriptError {
    if let TranscriptError::Malformed { message: said, .. } = &mut error {
        *said = message;
    }
    error
}

/// Puts a session-level field where it belongs: `model`, `context_length` and the id in the meta's
/// fields, anything else (and these too, when they are not what is expected) in its `extra`.
pub(super) fn record_session_field(meta: &mut TranscriptMeta, key: String, value: Value) {
    match (key.as_str(), &value) {
        ("model", Value::String(model)) if meta.model.is_none() => meta.model = Some(model.clone()),
        ("context_length", Value::Number(length))
            if meta.context_length.is_none() && length.as_u64().is_some() =>
        {
            meta.context_length = length.as_u64();
        }
        ("id" | "session_id", Value::String(_) | Value::Number(_)) if meta.session_id.is_none() => {
            meta.session_id = Some(value_as_text(&value));
        }
        _ => {
            meta.extra.insert(key, value);
        }
    }
}

/// One message a line.
pub(super) struct JsonlReader<R> {
    lines: JsonLines<R, Message>,
    legacy: LegacyFunctions,
}

impl<R: BufRead> JsonlReader<R> {
    pub(super) fn new(path: &Path, reader: R) -> Self {
        Self {
            lines: JsonLines::new(path, reader),
            legacy: LegacyFunctions::default(),
        }
    }
}

impl<R: BufRead + Send> Source for JsonlReader<R> {
    fn next_message(&mut self, meta: &mut TranscriptMeta) -> Result<Option<Located>, TranscriptError> {
        loop {
            let located = match self.lines.next_record() {
                Ok(Some((message, at))) => Located::new(message, at.line),
                Ok(None) => {
                    self.legacy.report(self.lines.path(), meta);
                    return Ok(None);
                }
                Err(error @ TranscriptError::Malformed { .. }) => {
                    let line = self.lines.last_line();
                    let place = format!("line {line}");
                    let record = self.lines.reparse();
                    let path = self.lines.path();
                    match read_refused_record(record, &place, path, meta, &mut self.legacy, error)? {
                        Some(message) => Located::new(message, line),
                        None => continue,
                    }
                }
                Err(error) => return Err(error),
            };
            return Ok(Some(self.legacy.take_message(located, self.lines.path(), meta)));
        }
    }
}

/// Takes Hermes's `session_meta` record into the meta; `None` when `record` is not one.
pub(super) fn take_session_meta(record: Option<Map<String, Value>>, meta: &mut TranscriptMeta) -> Option<()> {
    let mut record =
        record.filter(|record| record.get("role").and_then(Value::as_str) == Some("session_meta"))?;
    record.shift_remove("role");
    if meta.model.is_none() {
        meta.model = record.get("model").and_then(Value::as_str).map(str::to_owned);
    }
    meta.extra
        .insert("session_meta".to_owned(), Value::Object(record));
    meta.skip("session_meta (Hermes's session details)");
    Some(())
}

#[cfg(test)]
mod tests {
    use super::super::{detect_format, read_transcript, tests::write, Format};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn all_three_shapes_are_detected_and_read() {
        let cases = [
            (r#"[{"role":"user","content":"hi"}]"#, Format::OpenaiArray),
            ("{\n \"name\": \"x\", \"context_length\": 1000,\n \"messages\": [{\"role\":\"user\",\"content\":\"hi\"}]\n}", Format::OpenaiObject),
            ("{\"role\":\"system\",\"content\":\"s\"}\n{\"role\":\"user\",\"content\":\"hi\"}\n", Format::OpenaiJsonl),
        ];
        for (text, format) in cases {
            let (_dir, path) = write("t.json", text);
            assert_eq!(detect_format(&path, text).unwrap(), format, "{text}");
            let transcript = read_transcript(&path, None).unwrap();
            assert_eq!(transcript.format, format);
            assert_eq!(transcript.messages.last().unwrap().text(), "hi");
        }
    }

    #[test]
    fn the_object_form_carries_the_window_and_keeps_its_other_keys_wherever_they_are() {
        let (_dir, path) = write(
            "t.json",
            r#"{"model":"m","name":"n","messages":[],"context_length":4096,"id":7,"tags":["a"]}"#,
        );
        let meta = read_transcript(&path, None).unwrap().meta;
        assert_eq!(meta.context_length, Some(4096));
        assert_eq!(meta.model.as_deref(), Some("m"));
        assert_eq!(meta.session_id.as_deref(), Some("7"));
        assert_eq!(
            serde_json::Value::Object(meta.extra),
            json!({"name": "n", "tags": ["a"]})
        );
    }

    #[test]
    fn unknown_message_fields_are_kept_in_order() {
        let (_dir, path) = write(
            "t.json",
            r#"[{"role":"user","zeta":1,"content":"hi","alpha":{"x":2}}]"#,
        );
        let message = &read_transcript(&path, None).unwrap().messages[0];
        assert_eq!(message.extra.keys().collect::<Vec<_>>(), ["zeta", "alpha"]);
    }

    #[test]
    fn a_malformed_line_is_reported_with_its_number_and_offset() {
        let (_dir, path) = write(
            "t.jsonl",
            "{\"role\":\"user\",\"content\":\"a\"}\n\n{\"role\":\"wizard\",\"content\":\"b\"}\n",
        );
        let error = read_transcript(&path, None).unwrap_err().to_string();
        assert!(
            error.contains("t.jsonl:3:16: unknown variant `wizard`"),
            "{error}"
        );
        assert!(error.ends_with("(byte 46)"), "{error}");
    }

    #[test]
    fn a_malformed_array_is_reported_with_line_and_column() {
        let (_dir, path) = write(
            "t.json",
            "[\n{\"role\":\"user\",\"content\":\"a\"},\n{\"content\":\"no role\"}\n]",
        );
        let error = read_transcript(&path, None).unwrap_err().to_string();
        assert!(error.contains("t.json:3:"), "{error}");
        assert!(error.contains("missing field `role`"), "{error}");
    }

    #[test]
    fn hermes_session_meta_records_go_to_the_meta_in_every_shape() {
        let meta_line =
            r#"{"role": "session_meta", "tools": [{"type": "function"}], "model": "m", "platform": "cli"}"#;
        let user = r#"{"role": "user", "content": "hi"}"#;
        for (name, text) in [
            ("t.jsonl", format!("{meta_line}\n{user}\n")),
            ("t.json", format!("[{meta_line}, {user}]")),
            ("o.json", format!("{{\"messages\": [{meta_line}, {user}]}}")),
        ] {
            let (_dir, path) = write(name, &text);
            let transcript = read_transcript(&path, None).unwrap();
            assert_eq!(transcript.messages.len(), 1, "{name}");
            assert_eq!(transcript.meta.model.as_deref(), Some("m"), "{name}");
            let expected = json!({"tools": [{"type": "function"}], "model": "m", "platform": "cli"});
            assert_eq!(transcript.meta.extra["session_meta"], expected, "{name}");
        }
    }

    #[test]
    fn content_after_the_document_is_an_error() {
        let (_dir, path) = write("t.json", "[{\"role\":\"user\",\"content\":\"a\"}] [");
        let error = read_transcript(&path, Some(Format::OpenaiArray))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("t.json:1:33: unexpected content after the array of messages"),
            "{error}"
        );
    }
}
