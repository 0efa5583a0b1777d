//! OpenHands event streams: the JSON list of events OpenHands saves as a trajectory (or
//! `{"trajectory": […]}`, as its server hands one out). Each event has an `id`, a `source`
//! (`user`, `agent`, `environment`) and either an `action` with its `args` or an `observation`
//! with its `content` (and `extras`); `tool_call_metadata` ties them to the model's tool calls:
//! `function_name`, `tool_call_id`, and the whole `model_response` that made the call.
//!
//! The mapping follows what OpenHands itself sends the model (its `ConversationMemory`):
//! - an action with `tool_call_metadata` is one of the calls of `model_response`: the response's
//!   `choices[0].message` becomes one assistant message, with its content and all its
//!   `tool_calls`, the first time one of its actions is met (the response's other actions are part
//!   of it). Without a `model_response`, the call is made from `function_name`, `tool_call_id` and
//!   the action's `args`. The response's `usage` becomes the message's `"usage"`, its `model` the
//!   meta's model. A response whose `choices` holds no message first is a malformed record (with
//!   `--skip-bad-records`, skipped: another action's copy of the response then makes the message);
//! - `finish` is not sent back as a call: OpenHands turns it into the assistant's closing words
//!   (the response's content, else the action's `final_thought` or `thought`), and so does this
//!   reader, dropping `finish` calls from the assistant message;
//! - an observation with `tool_call_metadata` becomes the `tool` message answering its
//!   `tool_call_id`, its `content` the result; a command's output as OpenHands shows it, with its
//!   `metadata` (`[The command completed with exit code 1.]`, the working directory, the exit
//!   code: `CmdOutputObservation.to_agent_observation`); so does one without `tool_call_metadata`
//!   whose `cause` is the `id` of an action that made a call (an `error` observation OpenHands
//!   writes when the runtime died under the action): the result is recorded, and a stub saying
//!   that none is would be false;
//! - `system` is the system message (`args.content`); `message` from the user a user message,
//!   from the agent an assistant message (`args.content`, else the event's `message`, where
//!   OpenHands writes the same text, with a warning), its `image_urls` image parts after the text
//!   (a user's each after `Image N:`, as OpenHands sends them to a model that reads images);
//!   `error` and `user_rejected` observations without a call are user messages, as OpenHands
//!   sends them;
//! - a command the user ran in OpenHands's terminal (`run` from the user, no
//!   `tool_call_metadata`) is the user message `User executed the command:\n{command}`, and the
//!   observation it caused a user message of its output, as OpenHands sends them;
//! - before function calling (OpenHands up to 0.13, CodeAct in text), the agent's actions have no
//!   `tool_call_metadata`: `run` and `run_ipython` become the text OpenHands sent the model then,
//!   `{thought}\n<execute_bash>\n{command}\n</execute_bash>` (`<execute_ipython>` with the
//!   `code`), and the observations they caused user messages `OBSERVATION:\n{content}` (a
//!   command's with `\n[Command {command_id} finished with exit code {exit_code}]`), with one
//!   warning;
//! - a delegate's events are not the parent's conversation: a delegate (`BrowsingAgent` for a
//!   `delegate_to_browsing_agent` call) writes its own events into the same stream, between the
//!   parent's `delegate` action and the `delegate` observation that answers it, and OpenHands
//!   leaves that range out of the parent's history (the parent's model is sent the observation
//!   only). So the action and its observation are read as the parent's call and its result, and
//!   the events between them are left out and counted, a delegate's own delegations included; a
//!   delegation never answered leaves out the rest of the file, with a warning;
//! - a `condensation` action is a compaction OpenHands's condenser made: left out, its `summary`
//!   listed in [`TranscriptMeta::compactions`] (the events it forgot are still in the file, and
//!   are replayed; see the module docs of `formats`); so is a `condense` observation, the summary
//!   of the condenser before it;
//! - every other event (agent state changes, recalls, the interface's own) is left out and
//!   counted; the event's other fields stay in the message's `extra`, minus the bulky
//!   `tool_call_metadata` and `llm_metrics`;
//! - a `context_window` in `llm_metrics.token_usages` is the window; `llm_metrics` is not kept
//!   (it repeats the session's metrics so far on every action, growing with each model call).

use std::{io::BufRead, path::Path};

use ctxhost_engine_abi::{Content, Message, Role, ToolCall};
use serde_json::{json, value::RawValue, Map, Value};

mod event;

use event::{CallMetadata, Event, Metadata, Response};

use super::{
    cursor::{ArrayElements, Element, JsonCursor, Position},
    pairing::{fix_id_types, kind_of},
    value_as_text, Located, RecordedCompaction, Source, TranscriptError, TranscriptMeta,
};

/// How the events of a delegate are counted among the records left out.
const DELEGATES_EVENT: &str = "delegate's event (a subagent's record)";

pub(super) struct OpenhandsReader<R> {
    cursor: JsonCursor<R>,
    state: State,
    seen_events: bool,
    /// The model response whose assistant message was made last.
    last_response: Option<String>,
    /// Messages handed out so far.
    emitted: usize,
    /// The ids of actions read as text (no `tool_call_metadata`), and how: the observations they
    /// caused are read as text too.
    text_actions: std::collections::HashMap<u64, TextAction>,
    /// The calls of actions with `tool_call_metadata` that no observation named as its `cause`
    /// yet, by action id: an observation without metadata answers the call of its cause.
    unanswered_calls: std::collections::HashMap<u64, String>,
    /// Whether the warning about actions read as CodeAct text was given (once a file).
    codeact_said: bool,
    /// The delegations not answered yet, outermost first: while one is open, the events are a
    /// delegate's.
    delegations: Vec<Delegation>,
    /// The events, read ahead.
    events: ArrayElements<Event>,
}

/// A `delegate` action waiting for the `delegate` observation that answers it.
struct Delegation {
    /// The action's `id`, which the observation names as its `cause` (when OpenHands sets one).
    action_id: Option<u64>,
    /// The call the action made, which the observation answers (when it was a tool call).
    call_id: Option<String>,
    /// The action's line, for the warning when nothing answers it.
    line: usize,
}

impl Delegation {
    fn of(event: &Event, line: usize) -> Self {
        Self {
            action_id: event.fields.get("id").and_then(Value::as_u64),
            call_id: call_id_of(&event.metadata),
            line,
        }
    }

    /// Whether `observation` (a `delegate` one) answers this delegation. Upstream OpenHands gives
    /// it the action's `tool_call_metadata` but not always a `cause`; with neither, it can only
    /// answer the innermost delegation.
    fn is_answered_by(&self, observation: &Event) -> bool {
        let cause = observation.fields.get("cause").and_then(Value::as_u64);
        let call_id = call_id_of(&observation.metadata);
        match (cause, call_id) {
            (Some(cause), _) if self.action_id.is_some() => self.action_id == Some(cause),
            (_, Some(call_id)) if self.call_id.is_some() => self.call_id == Some(call_id),
            _ => true,
        }
    }
}

/// The `tool_call_id` of an event's `tool_call_metadata`, as text.
fn call_id_of(metadata: &Metadata) -> Option<String> {
    match metadata {
        Metadata::Call(call) => call_id(call),
        Metadata::Absent | Metadata::NotAnObject(_) => None,
    }
}

/// The `tool_call_id` of a `tool_call_metadata`, as text.
fn call_id(call: &CallMetadata) -> Option<String> {
    call.tool_call_id
        .as_ref()
        .filter(|id| !id.is_null())
        .map(value_as_text)
}

/// Whether `event` is the `action` or `observation` named `kind`.
fn is_event(event: &Map<String, Value>, key: &str, kind: &str) -> bool {
    event.get(key).and_then(Value::as_str) == Some(kind)
}

/// An action without `tool_call_metadata` that the model was sent as text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TextAction {
    /// The agent's, before function calling (CodeAct).
    CodeAct,
    /// A command the user ran.
    UserCommand,
}

enum State {
    Start,
    /// Inside `{"trajectory": […], …}`, between keys.
    Keys {
        first: bool,
    },
    Events {
        first: bool,
        in_object: bool,
    },
    Done,
}

impl<R: BufRead> OpenhandsReader<R> {
    pub(super) fn new(path: &Path, reader: R) -> Self {
        Self {
            cursor: JsonCursor::new(path, reader),
            state: State::Start,
            seen_events: false,
            last_response: None,
            emitted: 0,
            text_actions: std::collections::HashMap::new(),
            unanswered_calls: std::collections::HashMap::new(),
            codeact_said: false,
            delegations: Vec::new(),
            events: ArrayElements::default(),
        }
    }

    /// Whether `event` is one of a delegate's own, which the parent's model never saw: left out
    /// and counted. Keeps track of the delegations the events open and close.
    fn is_delegates_event(&mut self, event: &Event, at: Position, meta: &mut TranscriptMeta) -> bool {
        let fields = &event.fields;
        if self.delegations.is_empty() && !is_event(fields, "action", "delegate") {
            return false;
        }
        if is_event(fields, "observation", "delegate") {
            // The innermost delegation it answers closes, and any inside it that never returned
            // (a delegate that failed before its own delegate answered) with it.
            if let Some(answered) = self
                .delegations
                .iter()
                .rposition(|delegation| delegation.is_answered_by(event))
            {
                self.delegations.truncate(answered);
                if self.delegations.is_empty() {
                    return false;
                }
            }
        } else if is_event(fields, "action", "delegate") {
            let outermost = self.delegations.is_empty();
            self.delegations.push(Delegation::of(event, at.line));
            if outermost {
                return false;
            }
        }
        meta.skip(DELEGATES_EVENT);
        true
    }

    /// The message an event makes, if any.
    fn read_event(
        &mut self,
        event: Event,
        at: Position,
        meta: &mut TranscriptMeta,
    ) -> Result<Option<Message>, TranscriptError> {
        let Event {
            fields: event,
            metadata,
            context_window,
        } = event;
        let source = event
            .get("source")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let metadata = match metadata {
            Metadata::Call(call) => Some(call),
            Metadata::Absent => None,
            Metadata::NotAnObject(kind) => {
                return Err(self
                    .cursor
                    .bad_record(at, format!("`tool_call_metadata` is {kind}, not an object")))
            }
        };
        if let Some(context_window) = context_window {
            meta.context_length = meta.context_length.or(Some(context_window));
        }
        if let Some(action) = event.get("action").and_then(Value::as_str).map(str::to_owned) {
            return self.read_action(&action, &source, event, metadata, at, meta);
        }
        if let Some(observation) = event
            .get("observation")
            .and_then(Value::as_str)
            .map(str::to_owned)
        {
            return self.read_observation(&observation, event, metadata, at, meta);
        }
        Err(self.cursor.bad_record(
            at,
            "an OpenHands event with neither an `action` nor an `observation`",
        ))
    }

    fn read_action(
        &mut self,
        action: &str,
        source: &str,
        mut event: Map<String, Value>,
        metadata: Option<CallMetadata>,
        at: Position,
        meta: &mut TranscriptMeta,
    ) -> Result<Option<Message>, TranscriptError> {
        let args = match event.get("args") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(args)) => args.clone(),
            Some(other) => {
                let message = format!(
                    "the `{action}` action's `args` is {}, not an object",
                    kind_of(other)
                );
                return Err(self.cursor.bad_record(at, message));
            }
        };
        let arg_text = |key: &str| {
            args.get(key)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
        };
        match (action, metadata) {
            ("system", _) => {
                // The agent's tool definitions: its own tools, which an observer offering one of
                // their names must not answer (the transcript's top-level `tools` elsewhere).
                if let Some(tools) = args.get("tools").filter(|tools| tools.is_array()) {
                    meta.extra.entry("tools").or_insert_with(|| tools.clone());
                }
                // A `null` is left for `fill_null_content`, which reads it as empty text and warns.
                let content = match args.get("content") {
                    None | Some(Value::Null) => Content::Null,
                    _ => Content::Text(arg_text("content").unwrap_or_default().to_owned()),
                };
                take_arg(&mut event, "content");
                let message = Message {
                    content,
                    ..Message::system(String::new())
                };
                Ok(Some(with_extra(message, event)))
            }
            ("message", None) => {
                let role = match source {
                    "user" => Role::User,
                    _ => Role::Assistant,
                };
                let content = match args.get("content") {
                    None | Some(Value::Null) => self.message_without_content(&event, role, at, meta),
                    Some(Value::String(text)) => Content::Text(text.clone()),
                    Some(other) => {
                        let message = format!(
                            "the `message` action's `args.content` is {}, not text",
                            kind_of(other)
                        );
                        return Err(self.cursor.bad_record(at, message));
                    }
                };
                take_arg(&mut event, "content");
                let content = match image_urls(&args) {
                    Some(urls) => {
                        take_arg(&mut event, "image_urls");
                        with_images(content, role, urls)
                    }
                    None => content,
                };
                let message = Message {
                    content,
                    ..Message::new(role, "")
                };
                Ok(Some(with_extra(message, event)))
            }
            ("condensation", _) => {
                let summary = arg_text("summary").unwrap_or_default().to_owned();
                self.record_compaction(meta, at.line, summary);
                Ok(None)
            }
            (_, Some(metadata)) => {
                // `finish` makes no call (see `response_message`): nothing answers it.
                let call = call_id(&metadata).filter(|_| action != "finish");
                let action_id = event.get("id").and_then(Value::as_u64);
                let message = self.response_message(action, event, &args, metadata, at, meta)?;
                if let (Some(action_id), Some(call)) = (action_id, call) {
                    self.unanswered_calls.insert(action_id, call);
                }
                Ok(message)
            }
            ("run", None) if source == "user" && arg_text("command").is_some() => {
                let text = format!(
                    "User executed the command:\n{}",
                    arg_text("command").unwrap_or_default()
                );
                if let Some(id) = event.get("id").and_then(Value::as_u64) {
                    self.text_actions.insert(id, TextAction::UserCommand);
                }
                take_arg(&mut event, "command");
                Ok(Some(with_extra(Message::user(text), event)))
            }
            ("run", None) if arg_text("command").is_some() => Ok(Some(self.codeact_action(
                "execute_bash",
                "command",
                source,
                event,
                &args,
                at,
                meta,
            ))),
            ("run_ipython", None) if arg_text("code").is_some() => Ok(Some(self.codeact_action(
                "execute_ipython",
                "code",
                source,
                event,
                &args,
                at,
                meta,
            ))),
            ("finish", None) if source == "agent" => {
                let text = arg_text("final_thought")
                    .or_else(|| arg_text("thought"))
                    .unwrap_or_default()
                    .to_owned();
                Ok(Some(with_extra(Message::assistant(text), event)))
            }
            (other, None) => {
                meta.skip(format!("action ({other}, from the {})", or_unknown(source)));
                Ok(None)
            }
        }
    }

    /// The content of a `message` action whose `args.content` is `null` or missing: the event's
    /// `message`, which OpenHands writes from the same text, else none. A user's `null` is read
    /// as empty text with the warning every such message gets (`fill_null_content`); an agent's
    /// is empty text, as an assistant's message may be.
    fn message_without_content(
        &self,
        event: &Map<String, Value>,
        role: Role,
        at: Position,
        meta: &mut TranscriptMeta,
    ) -> Content {
        let text = event
            .get("message")
            .and_then(Value::as_str)
            .filter(|text| !text.trim().is_empty());
        match (text, role) {
            (Some(text), _) => {
                let warning = format!(
                    "{}: a `message` action without `args.content`: the event's `message` text, which OpenHands \
                     writes from the same text, is read as its content",
                    at.place()
                );
                meta.warn(self.cursor.path(), warning);
                Content::Text(text.to_owned())
            }
            (None, Role::User) => Content::Null,
            (None, _) => Content::Text(String::new()),
        }
    }

    /// An action of OpenHands before function calling, as the text it sent the model:
    /// `{thought}\n<{tag}>\n{body}\n</{tag}>`, the body the `body` argument.
    #[allow(clippy::too_many_arguments)]
    fn codeact_action(
        &mut self,
        tag: &str,
        body: &str,
        source: &str,
        mut event: Map<String, Value>,
        args: &Map<String, Value>,
        at: Position,
        meta: &mut TranscriptMeta,
    ) -> Message {
        let text_of = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default();
        let text = format!("{}\n<{tag}>\n{}\n</{tag}>", text_of("thought"), text_of(body));
        if !std::mem::replace(&mut self.codeact_said, true) {
            let warning = format!(
                "line {}: an action without `tool_call_metadata` (OpenHands before function calling): it and the others are read as the text OpenHands then sent the model (`<execute_bash>`, `<execute_ipython>`), and their observations as `OBSERVATION:` user messages, not as tool calls and results",
                at.line
            );
            meta.warn(self.cursor.path(), warning);
        }
        if let Some(id) = event.get("id").and_then(Value::as_u64) {
            self.text_actions.insert(id, TextAction::CodeAct);
        }
        take_arg(&mut event, body);
        take_arg(&mut event, "thought");
        let message = match source {
            "user" => Message::user(text),
            _ => Message::assistant(text),
        };
        with_extra(message, event)
    }

    /// The assistant message of the model response that made the action's call; `None` when that
    /// response's message was made already.
    fn response_message(
        &mut self,
        action: &str,
        event: Map<String, Value>,
        args: &Map<String, Value>,
        metadata: CallMetadata,
        at: Position,
        meta: &mut TranscriptMeta,
    ) -> Result<Option<Message>, TranscriptError> {
        let call_id = metadata.tool_call_id.as_ref().map(value_as_text);
        let response = metadata.response();
        let response_id = response
            .as_ref()
            .and_then(|response| response.id.as_ref())
            .map(value_as_text)
            .or_else(|| call_id.clone());
        if response_id.is_some() && response_id == self.last_response {
            return Ok(None);
        }
        let choice = match response.as_ref().map(Response::message).transpose() {
            Ok(choice) => choice.flatten(),
            // Refused (or skipped), it makes no message: another action's copy of the response
            // still may.
            Err(why) => return Err(self.cursor.bad_record(at, why)),
        };
        self.last_response = response_id;
        let mut calls = Vec::new();
        let mut content = String::new();
        let mut extra = event;
        match choice {
            Some(choice) => {
                content = choice.content.as_ref().map(value_as_text).unwrap_or_default();
                for call in choice.tool_calls() {
                    calls.push(self.tool_call(&call, at, meta)?);
                }
                for reasoning in [&choice.reasoning_content, &choice.reasoning] {
                    if let Some(reasoning) = reasoning.as_ref().filter(|r| !r.is_null()) {
                        extra.insert("reasoning".to_owned(), reasoning.clone());
                    }
                }
            }
            None => {
                let (Some(id), Some(name)) =
                    (call_id, metadata.function_name.as_ref().and_then(Value::as_str))
                else {
                    return Err(self.cursor.bad_record(
                        at,
                        "`tool_call_metadata` has neither a `model_response` nor a `function_name` and `tool_call_id`",
                    ));
                };
                calls.push(ToolCall::new(id, name, Value::Object(args.clone()).to_string()));
            }
        }
        if let Some(response) = &response {
            if meta.model.is_none() {
                meta.model = response.model.as_ref().and_then(Value::as_str).map(str::to_owned);
            }
            if let Some(usage) = response.usage.as_ref().and_then(usage_in_runner_terms) {
                extra.insert("usage".to_owned(), usage);
            }
        }
        // OpenHands sends `finish` back as the assistant's closing words, not as a call.
        calls.retain(|call| call.function.name != "finish");
        if action == "finish" && content.trim().is_empty() {
            content = ["final_thought", "thought"]
                .iter()
                .find_map(|key| args.get(*key).and_then(Value::as_str).filter(|t| !t.is_empty()))
                .unwrap_or_default()
                .to_owned();
        }
        let message = Message {
            role: Role::Assistant,
            content: if content.is_empty() && !calls.is_empty() {
                Content::Null
            } else {
                Content::Text(content)
            },
            tool_calls: (!calls.is_empty()).then_some(calls),
            tool_call_id: None,
            name: None,
            extra,
        };
        Ok(Some(message))
    }

    /// A call listed in a model response; one whose ids have the wrong type is fixed, with a
    /// warning.
    fn tool_call(
        &self,
        call: &RawValue,
        at: Position,
        meta: &mut TranscriptMeta,
    ) -> Result<ToolCall, TranscriptError> {
        if let Ok(call) = serde_json::from_str::<ToolCall>(call.get()) {
            return Ok(call);
        }
        let malformed = |error: serde_json::Error| {
            self.cursor.bad_record(
                at,
                format!("a tool call in `model_response` is malformed: {error}"),
            )
        };
        let call: Value = serde_json::from_str(call.get()).map_err(malformed)?;
        let mut fields = Map::new();
        fields.insert("tool_calls".to_owned(), Value::Array(vec![call]));
        for fix in fix_id_types(&mut fields) {
            meta.pairing_repairs += 1;
            meta.warn(self.cursor.path(), format!("{}: {fix}", at.place()));
        }
        let call = fields["tool_calls"][0].take();
        serde_json::from_value(call).map_err(malformed)
    }

    fn read_observation(
        &mut self,
        observation: &str,
        mut event: Map<String, Value>,
        metadata: Option<CallMetadata>,
        at: Position,
        meta: &mut TranscriptMeta,
    ) -> Result<Option<Message>, TranscriptError> {
        let content = match event.shift_remove("content") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(text)) => text,
            Some(other) => {
                let message = format!(
                    "the `{observation}` observation's `content` is {}, not text",
                    kind_of(&other)
                );
                return Err(self.cursor.bad_record(at, message));
            }
        };
        let cause = event.get("cause").and_then(Value::as_u64);
        // Taken out whether or not the metadata names the call too: a call has one result.
        let caused_call = cause.and_then(|cause| self.unanswered_calls.remove(&cause));
        let id = match metadata.as_ref().and_then(|m| m.tool_call_id.clone()) {
            None => caused_call.map(Value::String),
            recorded => recorded,
        };
        match (id, observation) {
            (Some(id), _) => {
                let id = match id {
                    Value::String(id) => id,
                    Value::Number(number) => {
                        meta.pairing_repairs += 1;
                        let warning = format!(
                            "{}: `tool_call_id` is the number {number}, not text; it is read as \"{number}\"",
                            at.place()
                        );
                        meta.warn(self.cursor.path(), warning);
                        number.to_string()
                    }
                    other => {
                        let message = format!("`tool_call_id` is {}, not text", kind_of(&other));
                        return Err(self.cursor.bad_record(at, message));
                    }
                };
                let content = match (observation, command_metadata(&event)) {
                    ("run", Some(metadata)) => command_output(content, metadata),
                    _ => content,
                };
                Ok(Some(with_extra(Message::tool(id, content), event)))
            }
            (None, "error" | "user_rejected") => Ok(Some(with_extra(Message::user(content), event))),
            // The summary of the condenser OpenHands had before `condensation` actions.
            (None, "condense") => {
                self.record_compaction(meta, at.line, content);
                Ok(None)
            }
            (None, "run" | "run_ipython") if self.caused_by(&event) == Some(TextAction::UserCommand) => {
                let content = match command_metadata(&event) {
                    Some(metadata) => format!(
                        "\nObserved result of command executed by user:\n{}",
                        command_output(content, metadata)
                    ),
                    None => content,
                };
                Ok(Some(with_extra(Message::user(content), event)))
            }
            (None, "run" | "run_ipython") if self.caused_by(&event) == Some(TextAction::CodeAct) => {
                let mut text = format!("OBSERVATION:\n{content}");
                let extras = event.get("extras");
                let field = |key: &str| extras.and_then(|extras| extras.get(key)).and_then(Value::as_i64);
                if let (Some(command_id), Some(exit_code)) = (field("command_id"), field("exit_code")) {
                    text.push_str(&format!(
                        "\n[Command {command_id} finished with exit code {exit_code}]"
                    ));
                }
                Ok(Some(with_extra(Message::user(text), event)))
            }
            (None, other) => {
                meta.skip(format!("observation ({other})"));
                Ok(None)
            }
        }
    }
}

impl<R> OpenhandsReader<R> {
    /// Records a compaction OpenHands made here (a `condensation` action, or the `condense`
    /// observation of its older condenser), which the replay leaves to the engine.
    fn record_compaction(&self, meta: &mut TranscriptMeta, line: usize, summary: String) {
        meta.compactions.push(RecordedCompaction {
            line,
            messages_before: self.emitted,
            summary,
        });
    }

    /// How the action that caused the observation `event` was read, when as text.
    fn caused_by(&self, event: &Map<String, Value>) -> Option<TextAction> {
        let cause = event.get("cause").and_then(Value::as_u64)?;
        self.text_actions.get(&cause).copied()
    }
}

/// The `metadata` OpenHands (0.2x on) records with a command's output and shows the model beside
/// it; older versions record none.
fn command_metadata(event: &Map<String, Value>) -> Option<&Map<String, Value>> {
    event
        .get("extras")
        .and_then(|extras| extras.get("metadata"))
        .and_then(Value::as_object)
}

/// The bytes of the bracketed lines `command_output` adds besides the values they quote.
const EXTRA_LINES_BYTES: usize = 128;

/// A command's output as OpenHands shows it to the model (`CmdOutputObservation.
/// to_agent_observation`): the output between the metadata's `prefix` and `suffix` (`[The command
/// completed with exit code 1.]`), then the working directory, the Python interpreter and the exit
/// code where known.
fn command_output(mut shown: String, metadata: &Map<String, Value>) -> String {
    use std::fmt::Write;
    let text = |key: &str| metadata.get(key).and_then(Value::as_str).unwrap_or("");
    // The output is extended where it is: a command's output is most of a heavy trajectory. Room
    // for what is added is made once and no larger: grown as it is written, the text's buffer
    // would double, and fresh memory is what a heavy trajectory's reading waits on most.
    let lines = ["prefix", "suffix", "working_dir", "py_interpreter_path"]
        .iter()
        .map(|key| text(key).len())
        .sum::<usize>();
    shown.reserve_exact(lines + EXTRA_LINES_BYTES);
    shown.insert_str(0, text("prefix"));
    shown.push_str(text("suffix"));
    if !text("working_dir").is_empty() {
        let _ = write!(shown, "\n[Current working directory: {}]", text("working_dir"));
    }
    if !text("py_interpreter_path").is_empty() {
        let _ = write!(shown, "\n[Python interpreter: {}]", text("py_interpreter_path"));
    }
    match metadata.get("exit_code").and_then(Value::as_i64) {
        Some(-1) | None => {}
        Some(code) => {
            let _ = write!(shown, "\n[Command finished with exit code {code}]");
        }
    }
    shown
}

/// `message` with the event's fields in its `extra`.
fn with_extra(message: Message, event: Map<String, Value>) -> Message {
    Message {
        extra: event,
        ..message
    }
}

/// Removes `args.key`, now that it is the message's content.
/// A `message` action's `args.image_urls` when it lists images (strings only; anything else
/// stays in `args` as it was).
fn image_urls(args: &Map<String, Value>) -> Option<Vec<&str>> {
    let urls = args.get("image_urls")?.as_array()?;
    let urls: Option<Vec<&str>> = urls.iter().map(Value::as_str).collect();
    urls.filter(|urls| !urls.is_empty())
}

/// The content OpenHands sends for a message with images (`ConversationMemory`, vision on: a
/// transcript that carries images came from a model that reads them): the text, then each of
/// the user's images after `Image N:`; an agent's images follow its text unlabelled.
fn with_images(content: Content, role: Role, urls: Vec<&str>) -> Content {
    let text = content.text().into_owned();
    let mut parts = vec![json!({"type": "text", "text": text})];
    for (at, url) in urls.into_iter().enumerate() {
        if role == Role::User {
            parts.push(json!({"type": "text", "text": format!("Image {}:", at + 1)}));
        }
        parts.push(json!({"type": "image_url", "image_url": {"url": url}}));
    }
    Content::Parts(parts)
}

fn take_arg(event: &mut Map<String, Value>, key: &str) {
    if let Some(Value::Object(args)) = event.get_mut("args") {
        args.shift_remove(key);
    }
}

fn or_unknown(source: &str) -> &str {
    if source.is_empty() {
        "unknown source"
    } else {
        source
    }
}

/// LiteLLM's usage (OpenAI's names) in the runner's.
fn usage_in_runner_terms(usage: &Value) -> Option<Value> {
    let prompt = usage.get("prompt_tokens")?.as_u64()?;
    let mut out = json!({
        "prompt_tokens": prompt,
        "completion_tokens": usage.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0),
    });
    if let Some(cached) = usage
        .pointer("/prompt_tokens_details/cached_tokens")
        .and_then(Value::as_u64)
    {
        out["cache_read_tokens"] = cached.into();
    }
    Some(out)
}

impl<R: BufRead + Send> Source for OpenhandsReader<R> {
    fn next_message(&mut self, meta: &mut TranscriptMeta) -> Result<Option<Located>, TranscriptError> {
        loop {
            match &mut self.state {
                State::Start => {
                    self.cursor.skip_bom()?;
                    match self.cursor.skip_whitespace()? {
                        Some(b'{') => {
                            self.cursor
                                .begin_object("an OpenHands trajectory, a JSON object")?;
                            self.state = State::Keys { first: true };
                        }
                        _ => {
                            self.cursor.begin_array("a JSON list of OpenHands events")?;
                            self.seen_events = true;
                            self.state = State::Events {
                                first: true,
                                in_object: false,
                            };
                        }
                    }
                }
                State::Keys { first } => {
                    let at = self.cursor.here();
                    match self.cursor.next_key(first)? {
                        Some(key) if key == "trajectory" => {
                            if std::mem::replace(&mut self.seen_events, true) {
                                return Err(self.cursor.error_at(at, "a second `trajectory` key"));
                            }
                            self.cursor.begin_array("the `trajectory` list of events")?;
                            self.state = State::Events {
                                first: true,
                                in_object: true,
                            };
                        }
                        Some(key) => {
                            let value = self.cursor.value::<Value>()?;
                            meta.extra.insert(key, value);
                        }
                        None => {
                            self.cursor.expect_end("the trajectory")?;
                            if !self.seen_events {
                                return Err(self.cursor.error_here("the object has no `trajectory` list"));
                            }
                            self.state = State::Done;
                        }
                    }
                }
                State::Events { first, in_object } => {
                    let in_object = *in_object;
                    let Some(Element { at, value, .. }) = self.events.next(&mut self.cursor, first)? else {
                        if in_object {
                            self.state = State::Keys { first: false };
                        } else {
                            self.cursor.expect_end("the list of events")?;
                            self.state = State::Done;
                        }
                        continue;
                    };
                    let event = value?;
                    if self.is_delegates_event(&event, at, meta) {
                        continue;
                    }
                    if let Some(message) = self.read_event(event, at, meta)? {
                        self.emitted += 1;
                        return Ok(Some(Located::at(message, at)));
                    }
                }
                State::Done => {
                    if let Some(open) = self.delegations.first() {
                        let warning = format!(
                            "line {}: this delegation is never answered (no `delegate` observation follows): every event after it is taken for the delegate's and left out",
                            open.line
                        );
                        meta.warn(self.cursor.path(), warning);
                        self.delegations.clear();
                    }
                    return Ok(None);
                }
            }
        }
    }
}
