//! Hermes Agent's session export: one session a line, each the session's row (`id`, `source`,
//! `model`, `model_config`, `system_prompt`, `parent_session_id`, token counters…) with its
//! `messages` (`role`, `content`, `tool_calls`, `tool_call_id`, and Hermes's own `timestamp`,
//! `token_count`, `reasoning`…).
//!
//! - One session is read: the first, or the first whose id starts with
//!   [`ReadOptions::session`](super::ReadOptions::session) (`--session`). When the file holds
//!   more, a warning says how many, lists their ids (the first 20) and which one was read: the
//!   first is what `hermes sessions export` writes first, and the warning says how to pick
//!   another. An id that matches no session is an error listing the ids found; a start that
//!   several ids share reads the first, and the warning says how many it matched. Sessions before
//!   and after the chosen one are walked past for their ids without their messages being kept.
//! - Sessions may be one a line (JSONL, as exported) or pretty-printed one after another: the
//!   reader walks JSON values, not lines.
//! - `system_prompt` becomes the system message when the session's messages do not start with
//!   one (Hermes stores the prompt on the session, not as a message). It must come before
//!   `messages`, as Hermes writes it; after them it stays in the meta, with a warning.
//! - The session's other fields go to [`TranscriptMeta::extra`]; `model` and the window (a
//!   `context_length` on the session or in its `model_config`) fill the meta. A `session_meta`
//!   row among the messages (Hermes's tools and platform) goes there too.
//! - A session line can be as long as the whole conversation, so it is walked with the
//!   [`JsonCursor`], never read into a string.

use std::{collections::VecDeque, io::BufRead, path::Path};

use ctxhost_engine_abi::{Message, Role};
use serde_json::{Map, Value};

use super::{
    cursor::{text_as_object, ArrayElements, Element, JsonCursor},
    list_ids,
    openai::take_session_meta,
    pairing::fix_id_types,
    read_developer_role, value_as_text, Located, Source, TranscriptError, TranscriptMeta,
};

/// How many session ids an error lists at most.
const LISTED_SESSIONS: usize = 20;

pub(super) struct HermesReader<R> {
    cursor: JsonCursor<R>,
    wanted: Option<String>,
    state: State,
    /// The current session's fields before its messages.
    fields: Map<String, Value>,
    /// Sessions met so far, and the ids of the first ones.
    sessions: usize,
    ids: Vec<String>,
    /// Sessions after the one read whose id starts as asked too: the start was ambiguous.
    also_wanted: usize,
    /// Set once the session to read has been found.
    chosen: Option<Chosen>,
    /// The system prompt's message, waiting in front of the first message.
    ready: VecDeque<Located>,
    /// The chosen session's messages, read ahead.
    elements: ArrayElements<Message>,
}

struct Chosen {
    number: usize,
    id: Option<String>,
    system_prompt: Option<String>,
    first_message: bool,
}

enum State {
    Start,
    BetweenSessions,
    Keys { first: bool },
    Messages { first: bool },
    Done,
}

impl<R: BufRead> HermesReader<R> {
    pub(super) fn new(path: &Path, reader: R, wanted: Option<String>) -> Self {
        Self {
            cursor: JsonCursor::new(path, reader),
            wanted,
            state: State::Start,
            fields: Map::new(),
            sessions: 0,
            ids: Vec::new(),
            also_wanted: 0,
            chosen: None,
            ready: VecDeque::new(),
            elements: ArrayElements::default(),
        }
    }

    /// Whether the session whose fields were just read is the one to read.
    fn is_wanted(&self, id: &str) -> bool {
        match &self.wanted {
            None => self.chosen.is_none(),
            Some(wanted) => self.chosen.is_none() && answers(wanted, id),
        }
    }

    /// The session's messages begin: read them (filling the meta) or skip them.
    fn enter_messages(&mut self, meta: &mut TranscriptMeta) -> Result<bool, TranscriptError> {
        let id = self
            .fields
            .get("id")
            .map_or_else(|| unnamed(self.sessions), value_as_text);
        if self.ids.len() < LISTED_SESSIONS {
            self.ids.push(id.clone());
        }
        if !self.is_wanted(&id) {
            self.cursor.skip_value()?;
            return Ok(false);
        }
        let mut fields = std::mem::take(&mut self.fields);
        let system_prompt = match fields.shift_remove("system_prompt") {
            Some(Value::String(prompt)) if !prompt.trim().is_empty() => Some(prompt),
            Some(other) => {
                fields.insert("system_prompt".to_owned(), other);
                None
            }
            None => None,
        };
        for (key, value) in fields {
            record_session_field(meta, key, value);
        }
        self.chosen = Some(Chosen {
            number: self.sessions,
            id: Some(id),
            system_prompt,
            first_message: true,
        });
        self.cursor.begin_array("the session's `messages` array")?;
        Ok(true)
    }

    /// The chosen session's object has ended: say what else the file holds. The sessions after
    /// it are walked for their ids, their messages skipped without being held; a break in them
    /// ends the walk, not the read (the chosen session is whole).
    fn finish(&mut self, meta: &mut TranscriptMeta) {
        let chosen = self.chosen.as_ref().expect("called once a session was chosen");
        let (number, id) = (
            chosen.number,
            chosen.id.clone().unwrap_or_else(|| "(no id)".to_owned()),
        );
        let mut after = 0;
        let walked = self.walk_sessions_after(&mut after);
        let total = self.sessions + after;
        if total > 1 {
            let listed = if total > self.ids.len() {
                format!("{}, …", list_ids(&self.ids))
            } else {
                list_ids(&self.ids)
            };
            let how = match &self.wanted {
                Some(wanted) if self.also_wanted > 0 => format!(
                    "`{wanted}` starts {} of their ids; read the first of them, session {number} of {total}, `{id}`; pass more of the id to read another",
                    self.also_wanted + 1
                ),
                Some(_) => format!("read session {number} of {total}, `{id}`, as asked"),
                None => format!("read the first, `{id}`; pass --session ID to read another"),
            };
            meta.warn(
                self.cursor.path(),
                format!("the file holds {total} sessions ({listed}); {how}"),
            );
        }
        if let Err(error) = walked {
            meta.warn(
                self.cursor.path(),
                format!("the sessions after the one read were not all read: {error}"),
            );
        }
    }

    /// Reads past the sessions left, counting them in `after` and keeping their ids.
    fn walk_sessions_after(&mut self, after: &mut usize) -> Result<(), TranscriptError> {
        loop {
            match self.cursor.skip_whitespace()? {
                Some(b'{') => {}
                Some(_) => return Err(self.cursor.error_here("expected a session, a JSON object")),
                None => return Ok(()),
            }
            self.cursor.begin_object("a session")?;
            *after += 1;
            let mut first = true;
            let mut id = None;
            while let Some(key) = self.cursor.next_key(&mut first)? {
                if key == "id" {
                    id = Some(value_as_text(&self.cursor.value::<Value>()?));
                } else {
                    self.cursor.skip_value()?;
                }
            }
            let id = id.unwrap_or_else(|| unnamed(self.sessions + *after));
            if self.wanted.as_ref().is_some_and(|wanted| answers(wanted, &id)) {
                self.also_wanted += 1;
            }
            if self.ids.len() < LISTED_SESSIONS {
                self.ids.push(id);
            }
        }
    }
}

/// The name of session `number` (1-based) when it has no `id`: its place in the file. A file of
/// `{"messages": […]}` lines (an OpenAI fine-tuning or evals dataset) has no ids at all.
fn unnamed(number: usize) -> String {
    format!("#{number}")
}

/// Whether `--session wanted` picks the session `id`: the start of an id, or a place (`#2`)
/// exactly (`#1` must not also pick `#10`).
fn answers(wanted: &str, id: &str) -> bool {
    if wanted.starts_with('#') {
        id == wanted
    } else {
        id.starts_with(wanted)
    }
}

/// A session field into the meta: `model`, the id and the window where they belong, everything in
/// `extra` too, except the messages.
fn record_session_field(meta: &mut TranscriptMeta, key: String, value: Value) {
    match (key.as_str(), &value) {
        ("model", Value::String(model)) if meta.model.is_none() => meta.model = Some(model.clone()),
        ("id", Value::String(_) | Value::Number(_)) if meta.session_id.is_none() => {
            meta.session_id = Some(value_as_text(&value));
        }
        ("context_length", _) => meta.context_length = meta.context_length.or(value.as_u64()),
        ("model_config", _) => {
            // Stored as JSON text in Hermes's database.
            let config = match &value {
                Value::String(text) => serde_json::from_str::<Value>(text).ok(),
                other => Some(other.clone()),
            };
            let length = config
                .as_ref()
                .and_then(|c| c.get("context_length"))
                .and_then(Value::as_u64);
            meta.context_length = meta.context_length.or(length);
        }
        _ => {}
    }
    meta.extra.insert(key, value);
}

/// A Hermes message: OpenAI's shape, except that older exports store `tool_calls` as JSON text;
/// with the ids of the wrong type it fixed ([`fix_id_types`]).
fn message_from_fields(mut fields: Map<String, Value>) -> Result<(Message, Vec<String>), String> {
    if let Some(Value::String(text)) = fields.get("tool_calls") {
        let calls = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(text)
                .map_err(|error| format!("`tool_calls` is text that is not JSON: {error}"))?
        };
        fields.insert("tool_calls".to_owned(), calls);
    }
    let fixed = fix_id_types(&mut fields);
    serde_json::from_value(Value::Object(fields))
        .map(|message| (message, fixed))
        .map_err(|error| error.to_string())
}

impl<R: BufRead> HermesReader<R> {
    /// A message of the chosen session as the model is sent it (`None` for a `session_meta` row,
    /// which goes to the meta). An element that is an OpenAI message as it is takes the direct
    /// path; only the others (`tool_calls` as text, ids of the wrong type, `developer`,
    /// `session_meta`) are read again as fields.
    fn element_message(
        &mut self,
        element: Element<Message>,
        meta: &mut TranscriptMeta,
    ) -> Result<Option<Located>, TranscriptError> {
        let Element { at, value, text } = element;
        let message = match value {
            Ok(message) => message,
            Err(error) => {
                let Some(mut fields) = text_as_object(text.as_deref()) else {
                    return Err(error);
                };
                if fields.get("role").and_then(Value::as_str) == Some("session_meta") {
                    take_session_meta(Some(fields), meta);
                    return Ok(None);
                }
                if let Some(warning) = read_developer_role(&mut fields, &at.place()) {
                    meta.warn(self.cursor.path(), warning);
                }
                let (message, fixed) =
                    message_from_fields(fields).map_err(|error| self.cursor.bad_record(at, error))?;
                meta.pairing_repairs += fixed.len() as u64;
                for fix in fixed {
                    meta.warn(self.cursor.path(), format!("{}: {fix}", at.place()));
                }
                message
            }
        };
        let message = Located::at(message, at);
        let chosen = self.chosen.as_mut().expect("messages are read once chosen");
        if std::mem::take(&mut chosen.first_message) {
            if let Some(prompt) = chosen.system_prompt.take() {
                if message.message.role == Role::System {
                    // The messages carry their own: the session's stays a field.
                    meta.extra
                        .insert("system_prompt".to_owned(), Value::String(prompt));
                } else {
                    self.ready.push_back(message);
                    return Ok(Some(Located::at(Message::system(prompt), at)));
                }
            }
        }
        Ok(Some(message))
    }
}

impl<R: BufRead + Send> Source for HermesReader<R> {
    fn next_message(&mut self, meta: &mut TranscriptMeta) -> Result<Option<Located>, TranscriptError> {
        loop {
            if let Some(message) = self.ready.pop_front() {
                return Ok(Some(message));
            }
            match &mut self.state {
                State::Start => {
                    self.cursor.skip_bom()?;
                    self.state = State::BetweenSessions;
                }
                State::BetweenSessions => match self.cursor.skip_whitespace()? {
                    Some(b'{') => {
                        self.cursor.begin_object("a session")?;
                        self.sessions += 1;
                        self.fields.clear();
                        self.state = State::Keys { first: true };
                    }
                    Some(_) => return Err(self.cursor.error_here("expected a session, a JSON object")),
                    None => {
                        return Err(match &self.wanted {
                            Some(wanted) => TranscriptError::NoSuchSession {
                                path: self.cursor.path().to_owned(),
                                wanted: wanted.clone(),
                                seen: std::mem::take(&mut self.ids),
                            },
                            None if self.sessions == 0 => self.cursor.error_here("the file holds no session"),
                            None => self
                                .cursor
                                .error_here("no session in the file has a `messages` array"),
                        });
                    }
                },
                State::Keys { first } => {
                    let at = self.cursor.here();
                    match self.cursor.next_key(first)? {
                        Some(key) if key == "messages" => {
                            let reading = self.chosen.as_ref().is_some_and(|c| c.number == self.sessions);
                            if reading {
                                return Err(self.cursor.error_at(at, "a second `messages` key"));
                            }
                            if self.enter_messages(meta)? {
                                self.state = State::Messages { first: true };
                            }
                        }
                        Some(key) => {
                            let value = self.cursor.value::<Value>()?;
                            match &self.chosen {
                                Some(chosen) if chosen.number == self.sessions => {
                                    if key == "system_prompt" {
                                        let warning = "the session's `system_prompt` comes after its messages; it is kept in the meta, not added as the system message".to_owned();
                                        meta.warn(self.cursor.path(), warning);
                                    }
                                    record_session_field(meta, key, value);
                                }
                                _ => {
                                    self.fields.insert(key, value);
                                }
                            }
                        }
                        None => {
                            let chosen_here = self.chosen.as_ref().is_some_and(|c| c.number == self.sessions);
                            if chosen_here {
                                self.finish(meta);
                                self.state = State::Done;
                            } else {
                                self.state = State::BetweenSessions;
                            }
                        }
                    }
                }
                State::Messages { first } => {
                    if let Some(element) = self.elements.next(&mut self.cursor, first)? {
                        match self.element_message(element, meta)? {
                            Some(message) => return Ok(Some(message)),
                            None => continue,
                        }
                    }
                    let chosen = self.chosen.as_mut().expect("messages are read once chosen");
                    if std::mem::take(&mut chosen.first_message) {
                        // No messages: the prompt alone still is what the model would start with.
                        if let Some(prompt) = chosen.system_prompt.take() {
                            let line = self.cursor.here().line;
                            self.ready.push_back(Located::new(Message::system(prompt), line));
                        }
                    }
                    self.state = State::Keys { first: false };
                }
                State::Done => return Ok(None),
            }
        }
    }
}
