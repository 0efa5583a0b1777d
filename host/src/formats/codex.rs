//! Codex CLI's rollout: JSONL of `{timestamp, type, payload}`.
//!
//! - `session_meta` gives the session id; its fields go to the meta. Its `base_instructions`
//!   (the system prompt, recorded by newer versions) become the system message. Its
//!   `instructions` (the user's instructions, which Codex also sends as a user message recorded
//!   among the items) stay in the meta, so that they are not there twice.
//! - `turn_context` gives the model; otherwise it is the interface's, left out and counted.
//! - `response_item`s are the conversation. A `message`'s `input_text`/`output_text` parts become
//!   text, `input_image` an image part; role `developer` becomes a system message with
//!   `"original_role": "developer"`. `function_call`, `custom_tool_call` and `local_shell_call`
//!   items of one response become the `tool_calls` of one assistant message (joined to the
//!   assistant message just before them, if the response had one), even with outputs recorded
//!   between them when a token count closes the response (Codex records a call when the model has
//!   written it, and its output when the tool is done); `function_call_output` and
//!   `custom_tool_call_output` become `tool` messages. `reasoning` items (and `reasoning` parts)
//!   are kept aside, in the next assistant message's `"reasoning"` key. Other items (web search
//!   calls, ghost snapshots…) are left out and counted; a type the reader does not know, with one
//!   warning naming its first line.
//! - An `event_msg` `token_count` closes a response, whether or not it carries usage (`info` may
//!   be null): its `last_token_usage` (or the difference of two `total_token_usage`s) becomes the
//!   `"usage"` of that response's assistant message, in the runner's names; its
//!   `model_context_window` is the window. A count with no assistant message since the previous
//!   one is left out and counted. Other events repeat the items for the interface: left out,
//!   counted by type.
//! - `compacted` is a compaction Codex made: left out, its summary listed in
//!   [`TranscriptMeta::compactions`] (see the module docs of `formats`).
//! - **Legacy rollouts** (Codex CLI before the `{timestamp, type, payload}` envelope) are read
//!   too: a first line `{id, timestamp, instructions?, git?}` with no `type` is the session's
//!   meta (its `instructions`, which Codex then sent with its own and recorded nowhere else,
//!   become the system message), then the response items are bare records (`{"type": "message", role, content}`,
//!   `function_call`, `function_call_output`, `reasoning`…), mapped as above; the
//!   `{"record_type": "state"}` lines between them are the interface's, left out and counted.

use std::{fmt, io::BufRead, path::Path};

use ctxhost_engine_abi::{Content, Message, Role, ToolCall};
use serde::{
    de::{MapAccess, Visitor},
    Deserialize, Deserializer,
};
use serde_json::{json, Map, Value};

use super::{
    by_keys::{deserialize_by_keys, IfObject},
    content_from_parts,
    driver::{next_queued, Queue, QueuedRecords},
    lines::{JsonLines, LineAt},
    pairing::{id_as_text, report_id_fixes},
    value_as_text, Located, RecordedCompaction, Source, TranscriptError, TranscriptMeta,
};

/// The record types of the `{timestamp, type, payload}` envelope.
const ENVELOPE_TYPES: &[&str] = &[
    "session_meta",
    "turn_context",
    "response_item",
    "event_msg",
    "compacted",
];

pub(super) struct CodexReader<R> {
    lines: JsonLines<R, Record>,
    queue: Queue,
    response: Option<Response>,
    /// Reasoning waiting for the assistant message it led to.
    reasoning: Vec<Value>,
    last_total: Option<Counters>,
    seen_session_meta: bool,
    /// Records read so far.
    records: usize,
    /// Ids of the wrong type read as text in the last record, for warnings.
    id_fixes: Vec<String>,
}

/// One response's assistant message and the outputs of its calls.
struct Response {
    assistant: Message,
    /// The line of the record that began it.
    line: usize,
    /// The outputs, with their records' lines.
    outputs: Vec<(Message, usize)>,
    /// A token count has closed it: no more calls join it.
    counted: bool,
    /// Calls that came after some of its outputs, each where it joined: the same response's when
    /// a token count closes it, a response of their own otherwise.
    joined: Vec<Joined>,
}

/// Where a call joined a response after some of its outputs.
struct Joined {
    /// The response's calls and outputs before it.
    calls: usize,
    outputs: usize,
    /// Its record's line, and the fields a response of its own would have.
    line: usize,
    extra: Map<String, Value>,
}

impl Response {
    fn calls(&self, id: &str) -> bool {
        self.assistant.calls().iter().any(|call| call.id == id)
    }

    /// The messages of the response, in order: one assistant message with every call when a
    /// token count closed it; without one, as many responses as calls came after outputs (a
    /// rollout that counts no response does not tell parallel calls from the next response's).
    fn into_messages(self) -> Vec<(Message, usize)> {
        let Response {
            mut assistant,
            line,
            outputs,
            counted,
            joined,
        } = self;
        if counted || joined.is_empty() {
            return std::iter::once((assistant, line)).chain(outputs).collect();
        }
        let mut calls = assistant.tool_calls.take().unwrap_or_default();
        let mut outputs = outputs;
        let mut segments = Vec::new();
        for join in joined.into_iter().rev() {
            let later_calls = calls.split_off(join.calls);
            let later_outputs = outputs.split_off(join.outputs);
            let message = Message {
                extra: join.extra,
                ..Message::assistant_calls(later_calls)
            };
            segments.push(((message, join.line), later_outputs));
        }
        assistant.tool_calls = (!calls.is_empty()).then_some(calls);
        segments.push(((assistant, line), outputs));
        segments
            .into_iter()
            .rev()
            .flat_map(|(assistant, outputs)| std::iter::once(assistant).chain(outputs))
            .collect()
    }
}

/// Which kind of rollout a session's meta opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Era {
    /// `{id, timestamp, instructions?}` as the first line, before the envelope.
    Legacy,
    /// A `session_meta` record of `{timestamp, type, payload}`.
    Enveloped,
}

impl<R: BufRead> CodexReader<R> {
    pub(super) fn new(path: &Path, reader: R) -> Self {
        Self {
            lines: JsonLines::new(path, reader),
            queue: Queue::default(),
            response: None,
            reasoning: Vec::new(),
            last_total: None,
            seen_session_meta: false,
            records: 0,
            id_fixes: Vec::new(),
        }
    }

    fn flush_response(&mut self) {
        if let Some(response) = self.response.take() {
            for (message, line) in response.into_messages() {
                self.queue.push(message, line);
            }
        }
    }

    /// Reads one record; false at the end of the file.
    fn read_one(&mut self, meta: &mut TranscriptMeta) -> Result<bool, TranscriptError> {
        let Some((
            Record {
                fields: mut record,
                event,
            },
            at,
        )) = self.lines.next_record()?
        else {
            return Ok(false);
        };
        self.records += 1;
        let kind = match record.get("type") {
            Some(Value::String(kind)) => kind.clone(),
            // A legacy rollout: its first line is the session's meta, without a type.
            None if self.records == 1 && (record.contains_key("id") || record.contains_key("timestamp")) => {
                self.read_session_meta(record, at, meta, Era::Legacy);
                return Ok(true);
            }
            None if record.contains_key("record_type") => {
                let kind = record.get("record_type").map(value_as_text).unwrap_or_default();
                meta.skip(format!("{kind} (a legacy rollout's record_type)"));
                return Ok(true);
            }
            _ => return Err(self.lines.error_at(at, "a Codex record without a `type`")),
        };
        if !ENVELOPE_TYPES.contains(&kind.as_str()) {
            if record.contains_key("payload") {
                meta.skip(kind);
            } else {
                // A legacy rollout's bare response item.
                self.read_item(record, None, at, meta)?;
            }
            return Ok(true);
        }
        if kind == "event_msg" {
            // A payload written before the record's type was read as a map.
            let event = match (event, record.shift_remove("payload")) {
                (Some(event), _) => event,
                (None, Some(payload)) => IfObject::deserialize(payload).map_err(|error| {
                    self.lines
                        .error_at(at, format!("a `event_msg` record's payload: {error}"))
                })?,
                (None, None) => IfObject(None),
            };
            match event {
                IfObject(Some(event)) => self.read_event(event, meta),
                _ => {
                    return Err(self
                        .lines
                        .error_at(at, "a `event_msg` record without a `payload` object"))
                }
            }
            return Ok(true);
        }
        let payload = match record.shift_remove("payload") {
            Some(Value::Object(payload)) => payload,
            _ => {
                return Err(self
                    .lines
                    .error_at(at, format!("a `{kind}` record without a `payload` object")))
            }
        };
        let timestamp = record.shift_remove("timestamp");
        match kind.as_str() {
            "session_meta" => self.read_session_meta(payload, at, meta, Era::Enveloped),
            "turn_context" => {
                if meta.model.is_none() {
                    meta.model = payload.get("model").and_then(Value::as_str).map(str::to_owned);
                }
                meta.skip("turn_context");
            }
            "response_item" => self.read_item(payload, timestamp, at, meta)?,
            "compacted" => {
                self.flush_response();
                let summary = payload.get("message").map(value_as_text).unwrap_or_default();
                meta.compactions.push(RecordedCompaction {
                    line: at.line,
                    messages_before: self.queue.queued(),
                    summary,
                });
                if self.queue.queued() == 0 {
                    let warning = "the transcript starts with the summary of an earlier compaction: what came before it is \
                               not in this file, and the summary is not replayed (see the meta's compactions)"
                    .to_owned();
                    meta.warn(self.lines.path(), warning);
                }
            }
            _ => unreachable!("checked above; `event_msg` read before"),
        }
        Ok(true)
    }

    fn read_session_meta(
        &mut self,
        mut payload: Map<String, Value>,
        at: LineAt,
        meta: &mut TranscriptMeta,
        era: Era,
    ) {
        if std::mem::replace(&mut self.seen_session_meta, true) {
            meta.skip("session_meta (after the first)");
            return;
        }
        if let Some(id) = payload.get("id") {
            meta.session_id = Some(value_as_text(id));
        }
        // A legacy rollout records no system prompt and no `<user_instructions>` message: its
        // header's `instructions` are what Codex then sent the model with its own instructions,
        // and the only place the user's rules are (verify48: `Never upload to the Play production
        // track without asking the user first.` was nowhere in the replayed context).
        let base = match era {
            Era::Legacy => payload.shift_remove("instructions"),
            Era::Enveloped => payload.shift_remove("base_instructions"),
        };
        let prompt = match &base {
            Some(Value::String(text)) => Some(text.clone()),
            Some(Value::Object(fields)) => fields.get("text").and_then(Value::as_str).map(str::to_owned),
            _ => None,
        };
        match prompt.filter(|prompt| !prompt.trim().is_empty()) {
            Some(prompt) => self.queue.push(Message::system(prompt), at.line),
            None => {
                if let Some(base) = base {
                    let key = match era {
                        Era::Legacy => "instructions",
                        Era::Enveloped => "base_instructions",
                    };
                    payload.insert(key.to_owned(), base);
                }
            }
        }
        meta.extra.extend(payload);
    }

    fn read_item(
        &mut self,
        mut item: Map<String, Value>,
        timestamp: Option<Value>,
        at: LineAt,
        meta: &mut TranscriptMeta,
    ) -> Result<(), TranscriptError> {
        let kind = match item.shift_remove("type") {
            Some(Value::String(kind)) => kind,
            _ => return Err(self.lines.error_at(at, "a `response_item` without a `type`")),
        };
        let mut extra = Map::new();
        extra.extend(timestamp.map(|timestamp| ("timestamp".to_owned(), timestamp)));
        match kind.as_str() {
            "message" => {
                let message = self.message(item, extra, at)?;
                self.flush_response();
                if message.role == Role::Assistant {
                    self.response = Some(Response {
                        assistant: message,
                        line: at.line,
                        outputs: Vec::new(),
                        counted: false,
                        joined: Vec::new(),
                    });
                } else {
                    self.queue.push(message, at.line);
                }
            }
            "reasoning" => {
                let mut reasoning = Map::new();
                reasoning.insert("type".to_owned(), Value::String(kind));
                reasoning.extend(item);
                self.reasoning.push(Value::Object(reasoning));
            }
            "function_call" | "custom_tool_call" | "local_shell_call" => {
                let call = self.call(&kind, item, at)?;
                // Codex records a call as soon as the model has written it and its output as soon
                // as the tool is done, so a response's parallel calls may come with outputs
                // between them (`call A, output A, call B`): until a token count closes the
                // response, a call joins it (see `Response::into_messages`). Reasoning after an
                // output is a new model call's.
                let new_reasoning = !self.reasoning.is_empty();
                match &mut self.response {
                    Some(response)
                        if !response.counted && (response.outputs.is_empty() || !new_reasoning) =>
                    {
                        // Joined after outputs that came since the last call: calls with no
                        // output between them are one group, whatever the count says.
                        let outputs_since =
                            response.joined.last().map_or(0, |join| join.outputs) < response.outputs.len();
                        if outputs_since {
                            response.joined.push(Joined {
                                calls: response.assistant.calls().len(),
                                outputs: response.outputs.len(),
                                line: at.line,
                                extra,
                            });
                        }
                        response
                            .assistant
                            .tool_calls
                            .get_or_insert_with(Vec::new)
                            .push(call);
                    }
                    _ => {
                        self.flush_response();
                        let assistant = Message {
                            extra,
                            ..Message::assistant_calls(vec![call])
                        };
                        self.response = Some(Response {
                            assistant,
                            line: at.line,
                            outputs: Vec::new(),
                            counted: false,
                            joined: Vec::new(),
                        });
                    }
                }
                if let Some(response) = &mut self.response {
                    attach_reasoning(&mut self.reasoning, &mut response.assistant);
                }
            }
            "function_call_output" | "custom_tool_call_output" => {
                let output = self.output(item, extra, at)?;
                let id = output.tool_call_id.as_deref().unwrap_or_default();
                match &mut self.response {
                    Some(response) if response.calls(id) => response.outputs.push((output, at.line)),
                    _ => {
                        self.flush_response();
                        self.queue.push(output, at.line);
                    }
                }
            }
            // A hosted web search the model ran (its findings reached it server-side, with no
            // chat-format call and result to replay), and Codex's undo snapshots.
            "web_search_call" => {
                meta.skip("response_item (web_search_call, a hosted search: no call to replay)")
            }
            "ghost_snapshot" => meta.skip("response_item (ghost_snapshot, Codex's undo point)"),
            other => {
                // An item this reader does not know may be conversation the replay loses: said,
                // once per type.
                let kind = format!("response_item ({other})");
                if !meta.skipped.contains_key(&kind) {
                    let warning = format!(
                        "line {}: a `response_item` of the type `{other}`, which ctxhost does not read: left out (each is counted)",
                        at.line
                    );
                    meta.warn(self.lines.path(), warning);
                }
                meta.skip(kind);
            }
        }
        Ok(())
    }

    fn message(
        &mut self,
        mut item: Map<String, Value>,
        mut extra: Map<String, Value>,
        at: LineAt,
    ) -> Result<Message, TranscriptError> {
        let role = match item.shift_remove("role") {
            Some(Value::String(role)) => role,
            _ => return Err(self.lines.error_at(at, "a `message` item without a `role`")),
        };
        let role = match role.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "system" => Role::System,
            "developer" => {
                extra.insert("original_role".to_owned(), Value::String(role));
                Role::System
            }
            other => {
                return Err(self
                    .lines
                    .error_at(at, format!("a `message` item with the unknown role `{other}`")))
            }
        };
        let parts = match item.shift_remove("content") {
            Some(Value::Array(parts)) => parts,
            Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
            None | Some(Value::Null) => Vec::new(),
            Some(_) => {
                return Err(self
                    .lines
                    .error_at(at, "a `message` item whose `content` is not a list"))
            }
        };
        let mut kept = Vec::with_capacity(parts.len());
        for part in parts {
            match part.get("type").and_then(Value::as_str) {
                Some("input_text" | "output_text" | "text") => {
                    kept.push(json!({"type": "text", "text": part.get("text").cloned().unwrap_or_default()}));
                }
                Some("input_image") => {
                    kept.push(json!({"type": "image_url", "image_url": {"url": part.get("image_url").cloned().unwrap_or_default()}}));
                }
                Some("reasoning") => self.reasoning.push(part),
                _ => kept.push(part),
            }
        }
        extra.extend(item);
        let mut message = Message {
            role,
            content: content_from_parts(kept),
            tool_calls: None,
            tool_call_id: None,
            name: None,
            extra,
        };
        if role == Role::Assistant {
            attach_reasoning(&mut self.reasoning, &mut message);
        }
        Ok(message)
    }

    fn call(
        &mut self,
        kind: &str,
        mut item: Map<String, Value>,
        at: LineAt,
    ) -> Result<ToolCall, TranscriptError> {
        let id = item.shift_remove("call_id").or_else(|| item.shift_remove("id"));
        let Some(id) = id_as_text(id, &format!("a `{kind}`'s `call_id`"), &mut self.id_fixes) else {
            return Err(self
                .lines
                .error_at(at, format!("a `{kind}` item without a `call_id`")));
        };
        let (name, arguments) = match kind {
            "local_shell_call" => (
                "local_shell".to_owned(),
                item.shift_remove("action").unwrap_or_default(),
            ),
            "custom_tool_call" => (
                item.shift_remove("name")
                    .map(|name| value_as_text(&name))
                    .unwrap_or_default(),
                item.shift_remove("input").unwrap_or_default(),
            ),
            _ => (
                item.shift_remove("name")
                    .map(|name| value_as_text(&name))
                    .unwrap_or_default(),
                item.shift_remove("arguments").unwrap_or_default(),
            ),
        };
        if name.is_empty() {
            return Err(self
                .lines
                .error_at(at, format!("a `{kind}` item without a `name`")));
        }
        // Arguments are JSON text; a custom tool's input is free text and stays as it is.
        Ok(ToolCall::new(id, name, value_as_text(&arguments)))
    }

    fn output(
        &mut self,
        mut item: Map<String, Value>,
        mut extra: Map<String, Value>,
        at: LineAt,
    ) -> Result<Message, TranscriptError> {
        let id = item.shift_remove("call_id");
        let Some(id) = id_as_text(id, "a call output's `call_id`", &mut self.id_fixes) else {
            return Err(self.lines.error_at(at, "a call output without a `call_id`"));
        };
        let content = match item.shift_remove("output") {
            None | Some(Value::Null) => Content::Text(String::new()),
            Some(Value::String(text)) => Content::Text(text),
            // `{content, success}` in some versions, a list of content items in others.
            Some(Value::Object(mut output)) => {
                let content = output.shift_remove("content").unwrap_or_default();
                extra.extend(output);
                match content {
                    Value::Array(parts) => content_from_parts(parts.into_iter().map(codex_part).collect()),
                    other => Content::Text(value_as_text(&other)),
                }
            }
            Some(Value::Array(parts)) => content_from_parts(parts.into_iter().map(codex_part).collect()),
            Some(_) => {
                return Err(self
                    .lines
                    .error_at(at, "a call output whose `output` is neither text nor a list"))
            }
        };
        extra.extend(item);
        Ok(Message {
            content,
            extra,
            ..Message::tool(id, "")
        })
    }

    fn read_event(&mut self, event: Event, meta: &mut TranscriptMeta) {
        let kind = match &event.kind {
            Some(Value::String(kind)) => kind.as_str(),
            _ => "no type",
        };
        if kind != "token_count" {
            meta.skip(format!("event_msg ({kind})"));
            return;
        }
        let info = event.info.0;
        if let Some(info) = &info {
            if meta.context_length.is_none() {
                meta.context_length = info.model_context_window.as_ref().and_then(Value::as_u64);
            }
        }
        let usage = info.as_ref().and_then(|info| self.last_usage(info));
        match &mut self.response {
            // A token count ends a response whether or not it carries usage (`info: null` from a
            // provider that reports none): the calls before it are that response's, parallel
            // ones recorded with outputs between them included.
            Some(response) if !response.counted => {
                response.counted = true;
                match usage {
                    Some(usage) => {
                        response.assistant.extra.insert("usage".to_owned(), usage);
                    }
                    None => meta.skip("event_msg (token_count without usage)"),
                }
            }
            _ if info.is_none() => meta.skip("event_msg (token_count without usage)"),
            _ => meta.skip("event_msg (token_count with no assistant message since the last)"),
        }
    }

    /// The usage of the response a token count closes, in the runner's names.
    fn last_usage(&mut self, info: &TokenInfo) -> Option<Value> {
        let total = info.total_token_usage.0;
        let last = match info.last_token_usage.0 {
            Some(last) => Some(last),
            None => total.map(|total| total.since(self.last_total.as_ref())),
        };
        if total.is_some() {
            self.last_total = total;
        }
        let last = last?;
        let mut usage = json!({
            "prompt_tokens": last.input_tokens.0?,
            "completion_tokens": last.output_tokens.0.unwrap_or(0),
        });
        for (value, to) in [
            (last.cached_input_tokens, "cache_read_tokens"),
            (last.cache_write_input_tokens, "cache_write_tokens"),
            (last.reasoning_output_tokens, "reasoning_tokens"),
            (last.total_tokens, "total_tokens"),
        ] {
            if let Some(value) = value.0 {
                usage[to] = value.into();
            }
        }
        Some(usage)
    }
}

/// A rollout record: every field in the file's order, but an `event_msg`'s payload, which is read
/// typed for what the reader uses (its type, a token count's counters). Events are a third of a
/// rollout's lines, a token count's nested counters two dozen values each: read as maps, they
/// took a quarter of a heavy rollout's `compress` (8 of 33 ms).
pub(super) struct Record {
    fields: Map<String, Value>,
    /// An `event_msg`'s payload (`None` inside when it is not an object).
    event: Option<IfObject<Event>>,
}

impl<'de> Deserialize<'de> for Record {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct RecordVisitor;

        impl<'de> Visitor<'de> for RecordVisitor {
            type Value = Record;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                // As serde_json's map says it, which this reader read records as before.
                formatter.write_str("a map")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Record, A::Error> {
                let mut record = Record {
                    fields: Map::new(),
                    event: None,
                };
                while let Some(key) = map.next_key::<String>()? {
                    let event =
                        matches!(record.fields.get("type"), Some(Value::String(kind)) if kind == "event_msg");
                    if event && key == "payload" {
                        record.event = Some(map.next_value()?);
                    } else {
                        record.fields.insert(key, map.next_value()?);
                    }
                }
                Ok(record)
            }
        }

        deserializer.deserialize_map(RecordVisitor)
    }
}

/// An `event_msg`'s payload: its type and, for a token count, its counters; the rest (the
/// interface's copy of messages and command output) is read past.
#[derive(Default)]
pub(super) struct Event {
    kind: Option<Value>,
    info: IfObject<TokenInfo>,
}

deserialize_by_keys!(Event, "an event", { "type" => kind, "info" => info });

#[derive(Default)]
struct TokenInfo {
    model_context_window: Option<Value>,
    total_token_usage: IfObject<Counters>,
    last_token_usage: IfObject<Counters>,
}

deserialize_by_keys!(TokenInfo, "a token count", {
    "model_context_window" => model_context_window,
    "total_token_usage" => total_token_usage,
    "last_token_usage" => last_token_usage,
});

/// A token count's counters this reader gives the runner.
#[derive(Clone, Copy, Default)]
struct Counters {
    input_tokens: Count,
    output_tokens: Count,
    cached_input_tokens: Count,
    cache_write_input_tokens: Count,
    reasoning_output_tokens: Count,
    total_tokens: Count,
}

deserialize_by_keys!(Counters, "token counters", {
    "input_tokens" => input_tokens,
    "output_tokens" => output_tokens,
    "cached_input_tokens" => cached_input_tokens,
    "cache_write_input_tokens" => cache_write_input_tokens,
    "reasoning_output_tokens" => reasoning_output_tokens,
    "total_tokens" => total_tokens,
});

impl Counters {
    /// These cumulative counters less `previous`, counter by counter.
    fn since(self, previous: Option<&Counters>) -> Counters {
        let less =
            |now: Count, before: fn(&Counters) -> Count| {
                Count(now.0.map(|now| {
                    now.saturating_sub(previous.and_then(|previous| before(previous).0).unwrap_or(0))
                }))
            };
        Counters {
            input_tokens: less(self.input_tokens, |c| c.input_tokens),
            output_tokens: less(self.output_tokens, |c| c.output_tokens),
            cached_input_tokens: less(self.cached_input_tokens, |c| c.cached_input_tokens),
            cache_write_input_tokens: less(self.cache_write_input_tokens, |c| c.cache_write_input_tokens),
            reasoning_output_tokens: less(self.reasoning_output_tokens, |c| c.reasoning_output_tokens),
            total_tokens: less(self.total_tokens, |c| c.total_tokens),
        }
    }
}

/// A counter: a whole number, or none when it is anything else.
#[derive(Clone, Copy, Default)]
struct Count(Option<u64>);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(|value| Count(value.as_u64()))
    }
}

/// Moves the reasoning waiting into the assistant message it led to, under `"reasoning"`.
fn attach_reasoning(waiting: &mut Vec<Value>, message: &mut Message) {
    if waiting.is_empty() {
        return;
    }
    let reasoning = message
        .extra
        .entry("reasoning")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(items) = reasoning {
        items.append(waiting);
    }
}

/// A content item of a call output as an OpenAI part.
fn codex_part(part: Value) -> Value {
    match part.get("type").and_then(Value::as_str) {
        Some("input_text" | "output_text") => {
            json!({"type": "text", "text": part.get("text").cloned().unwrap_or_default()})
        }
        Some("input_image") => {
            json!({"type": "image_url", "image_url": {"url": part.get("image_url").cloned().unwrap_or_default()}})
        }
        _ => part,
    }
}

impl<R: BufRead> QueuedRecords for CodexReader<R> {
    fn queue(&mut self) -> &mut Queue {
        &mut self.queue
    }

    fn read_record(&mut self, meta: &mut TranscriptMeta) -> Result<bool, TranscriptError> {
        let more = self.read_one(meta);
        report_id_fixes(
            meta,
            self.lines.path(),
            self.lines.last_line(),
            &mut self.id_fixes,
        );
        more
    }

    fn end_of_file(&mut self, meta: &mut TranscriptMeta) {
        self.flush_response();
        if !self.reasoning.is_empty() {
            meta.skip("reasoning (no assistant message after it)");
        }
    }
}

impl<R: BufRead + Send> Source for CodexReader<R> {
    fn next_message(&mut self, meta: &mut TranscriptMeta) -> Result<Option<Located>, TranscriptError> {
        next_queued(self, meta)
    }
}
