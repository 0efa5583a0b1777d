//! SWE-agent trajectories (`.traj`): one JSON object with `history` (the messages as the model got
//! them), `trajectory` (the same run step by step: thought, action, observation), `info`
//! (submission, exit status, model stats), and `environment`, `replay_config`.
//!
//! - `history` is the conversation. Its messages are OpenAI's, except that a tool message names
//!   the calls it answers in a list, `tool_call_ids`: the first becomes `tool_call_id`. A result
//!   for several calls at once (SWE-agent records one output for them) keeps its list, stands as
//!   the first call's result, and is followed by a result for each other call saying where its
//!   output is, with one warning naming the first such message's line. SWE-agent's own
//!   fields (`agent`, `message_type`, `thought`, `action`, `is_demo`…) are kept in each message's
//!   `extra`. Demonstrations (`is_demo`) were sent to the model, so they are kept.
//! - `trajectory` repeats the history and is skipped without being held; the other keys go to
//!   the meta's `extra`, and the model's name comes from `replay_config.agent.model.name`.

use std::{collections::VecDeque, io::BufRead, path::Path};

use ctxhost_engine_abi::Message;
use serde_json::{Map, Value};

use super::{
    cursor::{text_as_object, ArrayElements, Element, JsonCursor},
    pairing::fix_id_types,
    value_as_text, Located, Source, TranscriptError, TranscriptMeta,
};

pub(super) struct SweAgentReader<R> {
    cursor: JsonCursor<R>,
    state: State,
    seen_history: bool,
    several_ids: usize,
    /// Where the first of them is.
    first_several_at: Option<usize>,
    /// The notes standing in for the other calls of a result for several, after it.
    ready: VecDeque<Located>,
    /// The history's messages, read ahead.
    history: ArrayElements<Message>,
}

enum State {
    Start,
    Keys { first: bool },
    History { first: bool },
    Done,
}

impl<R: BufRead> SweAgentReader<R> {
    pub(super) fn new(path: &Path, reader: R) -> Self {
        Self {
            cursor: JsonCursor::new(path, reader),
            state: State::Start,
            seen_history: false,
            several_ids: 0,
            first_several_at: None,
            ready: VecDeque::new(),
            history: ArrayElements::default(),
        }
    }

    /// A history message read as an OpenAI one: its `tool_call_ids` made its `tool_call_id`; with
    /// the ids of the wrong type it fixed.
    fn read_call_ids(&mut self, mut message: Message) -> Result<(Message, Vec<String>), String> {
        let mut fixed = Vec::new();
        if let Some(ids) = message.extra.shift_remove("tool_call_ids") {
            let list = self.call_ids(&ids, &mut fixed)?;
            if message.tool_call_id.is_none() {
                message.tool_call_id = list.first().cloned();
            }
            if list.len() > 1 {
                message.extra.insert("tool_call_ids".to_owned(), ids);
            }
        }
        Ok((message, fixed))
    }

    /// A history message that is not an OpenAI one as it is (ids of the wrong type), with the ids
    /// it fixed.
    fn message(&mut self, mut fields: Map<String, Value>) -> Result<(Message, Vec<String>), String> {
        let mut fixed = Vec::new();
        if let Some(ids) = fields.shift_remove("tool_call_ids") {
            let list = self.call_ids(&ids, &mut fixed)?;
            if !fields.contains_key("tool_call_id") {
                if let Some(first) = list.first() {
                    fields.insert("tool_call_id".to_owned(), Value::String(first.clone()));
                }
            }
            if list.len() > 1 {
                fields.insert("tool_call_ids".to_owned(), ids);
            }
        }
        fixed.extend(fix_id_types(&mut fields));
        serde_json::from_value(Value::Object(fields))
            .map(|message| (message, fixed))
            .map_err(|error| error.to_string())
    }

    /// The ids a `tool_call_ids` names, numbers read as text (each such fix added to `fixed`);
    /// counts a message answering several calls.
    fn call_ids(&mut self, ids: &Value, fixed: &mut Vec<String>) -> Result<Vec<String>, String> {
        let list: Vec<String> = match ids {
            Value::Array(ids) => ids
                .iter()
                .filter_map(|id| match id {
                    Value::String(id) => Some(id.clone()),
                    Value::Number(number) => {
                        fixed.push(format!(
                            "`tool_call_ids` holds the number {number}, not text; it is read as \"{number}\""
                        ));
                        Some(number.to_string())
                    }
                    _ => None,
                })
                .collect(),
            Value::String(id) => vec![id.clone()],
            Value::Null => Vec::new(),
            _ => return Err("`tool_call_ids` is neither a list nor text".to_owned()),
        };
        if list.len() > 1 {
            self.several_ids += 1;
        }
        Ok(list)
    }
}

/// For a result SWE-agent recorded for several calls at once (`tool_call_ids` kept in its
/// `extra`), a result for each call after the first saying where its output is: every call
/// needs one, and the output itself is the first call's.
fn notes_for_the_other_calls(result: &Message) -> Vec<Message> {
    let (Some(first), Some(Value::Array(ids))) = (&result.tool_call_id, result.extra.get("tool_call_ids"))
    else {
        return Vec::new();
    };
    ids.iter()
        .map(value_as_text)
        .filter(|id| id != first)
        .map(|id| {
            let note = format!(
                "[SWE-agent recorded the output of this call together with that of call `{first}`, in its result]"
            );
            Message::tool(id, note)
        })
        .collect()
}

/// `replay_config.agent.model.name`; `replay_config` is an object or, in some versions, its JSON
/// text.
fn model_of(replay_config: &Value) -> Option<String> {
    let parsed;
    let config = match replay_config {
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text).ok()?;
            &parsed
        }
        other => other,
    };
    let name = config
        .pointer("/agent/model/name")
        .or_else(|| config.pointer("/agent/model/model_name"))?;
    name.as_str().map(str::to_owned)
}

impl<R: BufRead + Send> Source for SweAgentReader<R> {
    fn next_message(&mut self, meta: &mut TranscriptMeta) -> Result<Option<Located>, TranscriptError> {
        if let Some(note) = self.ready.pop_front() {
            return Ok(Some(note));
        }
        loop {
            match &mut self.state {
                State::Start => {
                    self.cursor.skip_bom()?;
                    self.cursor
                        .begin_object("a SWE-agent trajectory, a JSON object")?;
                    self.state = State::Keys { first: true };
                }
                State::Keys { first } => {
                    let at = self.cursor.here();
                    match self.cursor.next_key(first)?.as_deref() {
                        Some("history") => {
                            if std::mem::replace(&mut self.seen_history, true) {
                                return Err(self.cursor.error_at(at, "a second `history` key"));
                            }
                            self.cursor.begin_array("the `history` list")?;
                            self.state = State::History { first: true };
                        }
                        Some("trajectory") => {
                            self.cursor.skip_value()?;
                            meta.skip("trajectory (the run step by step; it repeats the history)");
                        }
                        Some(key) => {
                            let key = key.to_owned();
                            let value = self.cursor.value::<Value>()?;
                            if key == "replay_config" && meta.model.is_none() {
                                meta.model = model_of(&value);
                            }
                            meta.extra.insert(key, value);
                        }
                        None => {
                            self.cursor.expect_end("the trajectory")?;
                            if !self.seen_history {
                                return Err(self.cursor.error_here("the trajectory has no `history` list"));
                            }
                            if let Some(line) = self.first_several_at {
                                let (count, verb) = match self.several_ids {
                                    1 => ("1 tool message".to_owned(), "answers"),
                                    n => (format!("{n} tool messages"), "answer"),
                                };
                                let warning = format!(
                                    "{count} {verb} several calls at once (`tool_call_ids`), the first at line {line}: \
                                     the output stands as the first call's result, and each other call gets a note \
                                     saying where its output is"
                                );
                                meta.warn(self.cursor.path(), warning);
                            }
                            self.state = State::Done;
                        }
                    }
                }
                State::History { first } => {
                    let Some(Element { at, value, text }) = self.history.next(&mut self.cursor, first)?
                    else {
                        self.state = State::Keys { first: false };
                        continue;
                    };
                    // Most messages are OpenAI's as they are; only the others are read as fields.
                    let read = match value {
                        Ok(message) => self.read_call_ids(message),
                        Err(error) => {
                            let Some(fields) = text_as_object(text.as_deref()) else {
                                return Err(error);
                            };
                            self.message(fields)
                        }
                    };
                    let (message, fixed) = read.map_err(|error| self.cursor.bad_record(at, error))?;
                    meta.pairing_repairs += fixed.len() as u64;
                    for fix in fixed {
                        meta.warn(self.cursor.path(), format!("{}: {fix}", at.place()));
                    }
                    for note in notes_for_the_other_calls(&message) {
                        self.first_several_at.get_or_insert(at.line);
                        self.ready.push_back(Located::at(note, at));
                    }
                    return Ok(Some(Located::at(message, at)));
                }
                State::Done => return Ok(None),
            }
        }
    }
}
