//! Driving an engine through a conversation exactly as an agent loop would.
//!
//! Messages are fed in order, one at a time from a stream (one message of lookahead says whether a
//! tool result follows), so a replay holds the live context and its outcome, never the whole
//! transcript. A model call happens before each assistant message:
//! - before the call, session hygiene (a rough estimate of the context at ≥ 85% of the window, or
//!   5,000 messages, compacts at once; rough whatever the counter, as Hermes's gateway does), then
//!   the engine's `should_compress_preflight`;
//! - the assistant message is appended, then `update_from_response` with the usage recorded in
//!   the transcript, or an estimate of prompt and completion;
//! - every estimate comes from [`ReplayOptions::token_counter`] (`context.tokenizer`), cached per
//!   message by [`LiveContext`]; recorded usage is passed on as is, never replaced by one;
//! - a call to one of the engine's tools (`get_tool_schemas`, read at start) is answered by
//!   `handle_tool_call` live, and the live answer replaces the recorded one ([`tools`]);
//! - after a turn that ended in tool calls and their results, `should_compress`, and `compress`
//!   when it says yes;
//! - `/compress [focus]`, `/new` and `/reset`, typed as a user message's whole text or scripted
//!   with `--at`, run as Hermes runs them ([`script`], [`Replayer::run_command`]);
//! - at the end, `on_session_end` with the final context.
//!
//! Every engine failure is contained: the context stays as it was, the fault is recorded, and the
//! replay carries on. Everything that happens is also handed, as it happens, to an
//! [`EventSink`] ([`events`]).

mod context;
pub mod events;
pub mod script;
pub mod tools;

use std::{
    collections::VecDeque,
    convert::Infallible,
    time::{Duration, Instant},
};

use ctxhost_engine_abi::{Content, Counters, Message, ModelInfo, Role, SessionInfo, Usage};
use ctxhost_engine_kit::{
    retention::{compacted_messages, measure_retention, Retention},
    stand_in::group_thousands,
};
use serde::Serialize;
use serde_json::{json, Value};

pub use context::LiveContext;
pub use events::{CompactionEvent, Event, EventSink, NoEvents, UsageSource};
pub use script::{CommandSource, ScriptedCommand, SessionCommand};
pub use tools::ToolDispatch;

use tools::{answers_equal, parse_arguments, read_tool_names, PendingCall};

use crate::{
    engine::{CompressCall, EngineCallError, EngineHandle},
    tokens::TokenCounter,
};

/// Session hygiene fires at this share of the window, in percent (Hermes's gateway safety net).
pub const HYGIENE_PERCENT: u64 = 85;

/// Session hygiene also fires at this many messages.
pub const HYGIENE_MESSAGES: usize = 5_000;

/// The `boundary_reason` `on_session_start` is given after `/new`.
pub const NEW_SESSION_REASON: &str = "new_session";

/// What the replay needs to know about the session.
#[derive(Clone, Debug, Default)]
pub struct ReplayOptions {
    /// The session's id, handed to `on_session_start` and `on_session_end`.
    pub session_id: String,
    /// The model and its window.
    pub model: ModelInfo,
    /// What the context's tokens are counted with (`context.tokenizer`).
    pub token_counter: TokenCounter,
    /// Whether each applied compaction's fact retention is measured (`--facts`, `compare`).
    pub facts: FactAccounting,
}

/// Whether the replay measures fact retention. It is analysis, not part of the agent loop: on a
/// long transcript it costs far more than the compaction it measures (regular expressions over
/// every compacted message), so it runs only when a report will show it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FactAccounting {
    /// Not measured: `CompactionRecord::retention` stays `None`.
    #[default]
    Skip,
    /// Measured after every applied compaction.
    Measure,
}

/// What made a compaction happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// The host's safety net: the context reached 85% of the window or 5,000 messages.
    Hygiene,
    /// The engine's `should_compress_preflight` before a model call.
    Preflight,
    /// The engine's `should_compress` after a tool turn.
    Threshold,
    /// A manual `/compress`.
    Manual,
}

impl std::fmt::Display for Trigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Hygiene => "session hygiene",
            Self::Preflight => "preflight",
            Self::Threshold => "threshold",
            Self::Manual => "manual /compress",
        })
    }
}

/// What came of a compaction.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// The engine's result replaced the context.
    Applied,
    /// There was nothing to compact: the engine said so, or gave the context back unchanged.
    NothingToCompact {
        /// Which.
        reason: String,
    },
    /// The compaction failed (an engine error, a refused result): the context was kept as it was.
    Kept {
        /// Why.
        reason: String,
    },
}

/// One compaction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompactionRecord {
    /// How many transcript messages had been fed when it happened.
    pub at_message: usize,
    /// How many model calls had been made when it happened.
    pub turn: usize,
    /// What made it happen.
    pub trigger: Trigger,
    /// The focus of a manual `/compress <focus>`.
    pub focus: Option<String>,
    /// Estimated tokens before.
    pub tokens_before: u64,
    /// Estimated tokens after.
    pub tokens_after: u64,
    /// Messages before.
    pub messages_before: usize,
    /// Messages after.
    pub messages_after: usize,
    /// Time spent in the engine.
    pub duration_ms: f64,
    /// Whether the result was used.
    pub outcome: Outcome,
    /// How many facts of the compacted messages the result still holds verbatim (applied
    /// compactions, when the replay measures facts).
    pub retention: Option<Retention>,
    /// The engine's own account (`call_ext("last_compaction")`), when it gives one.
    pub details: Option<Value>,
}

/// An engine call that failed and was contained.
#[derive(Clone, Debug, Serialize)]
pub struct EngineFault {
    /// How many transcript messages had been fed.
    pub at_message: usize,
    /// What failed.
    pub message: String,
}

/// A scripted command that ran.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CommandRecord {
    /// The transcript message it replaced, or the one it ran before (`--at`).
    pub message_index: usize,
    /// Which.
    #[serde(flatten)]
    pub command: SessionCommand,
    /// Typed in the transcript, or given by `--at`.
    pub source: CommandSource,
    /// The session it left running (a new one after `/new`).
    pub session_id: String,
}

/// The context went over the usable window (the model would have refused it, or cut it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WindowOverrun {
    /// The usable window.
    pub window: u64,
    /// The transcript message before which it first happened (a model call's, or the end's).
    pub first_at_message: usize,
    /// The context's tokens then.
    pub first_tokens: u64,
    /// Model calls whose context was over the window (the final context counts as one more when
    /// it is over).
    pub times: usize,
}

/// The result of a replay.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReplayOutcome {
    /// Transcript messages fed (command messages included).
    pub messages_replayed: usize,
    /// Model calls (assistant messages).
    pub model_calls: usize,
    /// Model calls whose usage came from the transcript: it describes the original run's
    /// context, which the engine under test may have compacted differently.
    pub usage_recorded: usize,
    /// Model calls whose usage the host estimated from the replayed context.
    pub usage_estimated: usize,
    /// The session's id at the end (a new one after `/new`).
    pub session_id: String,
    /// The engine's tools, routed to `handle_tool_call`.
    pub tools: Vec<String>,
    /// Every call of the transcript to an engine tool, answered live.
    pub tool_dispatches: Vec<ToolDispatch>,
    /// Every scripted command that ran.
    pub commands: Vec<CommandRecord>,
    /// Every compaction, applied or not.
    pub compactions: Vec<CompactionRecord>,
    /// Every contained engine failure.
    pub faults: Vec<EngineFault>,
    /// What the host refused or worked around (a duplicate tool name…).
    pub warnings: Vec<String>,
    /// The largest context (estimated tokens) the model would have received.
    pub peak_tokens: u64,
    /// Set when the context the model would receive went over the usable window.
    pub over_window: Option<WindowOverrun>,
    /// Estimated tokens of the final context.
    pub final_tokens: u64,
    /// Messages in the final context.
    pub final_messages: usize,
    /// Time spent inside the engine.
    pub engine_time_ms: f64,
    /// The engine's counters at the end.
    pub counters: Option<Counters>,
    /// The engine's `get_status` at the end.
    pub status: Option<Value>,
    /// The final context.
    #[serde(skip)]
    pub context: Vec<Message>,
}

/// Replays `messages` through `engine` and returns what happened.
pub fn replay(
    engine: &mut EngineHandle,
    messages: impl IntoIterator<Item = Message>,
    options: &ReplayOptions,
) -> ReplayOutcome {
    let mut replayer = Replayer::start(engine, options);
    let fed = replayer.feed_all(messages.into_iter().map(Ok::<_, Infallible>));
    match fed {
        Ok(()) => replayer.finish(),
        Err(never) => match never {},
    }
}

/// Replays a stream of messages (a [`crate::formats::TranscriptStream`]) with `script`'s commands,
/// handing every event to `events`.
///
/// A read error ends the replay at once and is returned; the engine's session is not ended (it
/// saw only part of the conversation) and nothing of the outcome is kept.
pub fn replay_stream<'a, E>(
    engine: &'a mut EngineHandle,
    messages: impl IntoIterator<Item = Result<Message, E>>,
    options: &ReplayOptions,
    script: &[ScriptedCommand],
    events: &'a mut dyn EventSink,
) -> Result<ReplayOutcome, E> {
    let mut replayer = Replayer::start_with_events(engine, options, events).with_script(script);
    replayer.feed_all(messages)?;
    Ok(replayer.finish())
}

/// Runs one manual compaction (`/compress [focus]`) over `messages`.
pub fn compress_once(
    engine: &mut EngineHandle,
    messages: Vec<Message>,
    focus: Option<&str>,
    options: &ReplayOptions,
) -> ReplayOutcome {
    let mut replayer = Replayer::start(engine, options);
    replayer.load(messages);
    replayer.compact(Trigger::Manual, focus);
    replayer.finish()
}

/// The state of one replay.
pub struct Replayer<'e> {
    engine: &'e mut EngineHandle,
    options: ReplayOptions,
    context: LiveContext,
    outcome: ReplayOutcome,
    engine_time: Duration,
    /// Set when a hygiene compaction could not bring the context under the hygiene line, so that
    /// hygiene does not fire again at every call while the engine cannot do better.
    hygiene_blocked: bool,
    events: Box<dyn EventSink + 'e>,
    /// Events held back while a session starts, so that `session_start` comes before the errors
    /// of the calls that start it.
    held: Option<Vec<Event>>,
    /// Commands given by flag, by message index.
    script: VecDeque<ScriptedCommand>,
    /// Sessions started (`/new` starts one more).
    sessions: usize,
    /// Calls to engine tools waiting for their results.
    pending: Vec<PendingCall>,
    /// The index of the message being handled; between messages, of the next one.
    position: usize,
    /// Whether the end of the transcript has been handled.
    transcript_ended: bool,
    /// The transcript's system message as it came, which `/new` and `/reset` restart from.
    system: Option<Message>,
}

impl<'e> Replayer<'e> {
    /// Tells the engine the model, reads its tools and starts the session.
    pub fn start(engine: &'e mut EngineHandle, options: &ReplayOptions) -> Self {
        Self::start_with_events(engine, options, NoEvents)
    }

    /// [`Self::start`], handing every event to `events` as it happens.
    pub fn start_with_events(
        engine: &'e mut EngineHandle,
        options: &ReplayOptions,
        events: impl EventSink + 'e,
    ) -> Self {
        let wants_json = engine.wants_json();
        let mut replayer = Self {
            engine,
            options: options.clone(),
            context: LiveContext::with_counter(options.token_counter).keeping_json(wants_json),
            outcome: ReplayOutcome {
                session_id: options.session_id.clone(),
                ..ReplayOutcome::default()
            },
            engine_time: Duration::ZERO,
            hygiene_blocked: false,
            events: Box::new(events),
            held: Some(Vec::new()),
            script: VecDeque::new(),
            sessions: 0,
            pending: Vec::new(),
            position: 0,
            transcript_ended: false,
            system: None,
        };
        let model = replayer.options.model.clone();
        replayer.call(|engine| engine.update_model(&model));
        let schemas = replayer
            .call(|engine| engine.get_tool_schemas())
            .unwrap_or_default();
        let (tools, warnings) = read_tool_names(replayer.engine.name(), &schemas);
        replayer.outcome.tools = tools;
        replayer.begin_session(None, None);
        for warning in warnings {
            replayer.warn(warning);
        }
        replayer
    }

    /// Adds commands to run before given messages (`--at`); in the order given for one message.
    pub fn with_script(mut self, script: &[ScriptedCommand]) -> Self {
        let mut script = script.to_vec();
        script.sort_by_key(|command| command.before_message);
        self.script = script.into();
        self
    }

    /// The engine's name.
    pub fn engine_name(&self) -> &str {
        self.engine.name()
    }

    /// The engine's tools, as the host routes them.
    pub fn tools(&self) -> &[String] {
        &self.outcome.tools
    }

    /// The context the model would receive next.
    pub fn context(&self) -> &LiveContext {
        &self.context
    }

    /// Feeds every message of `messages`, then handles the transcript's end (commands scripted
    /// past it, calls it never answered). The first error ends it and is returned.
    pub fn feed_all<E>(&mut self, messages: impl IntoIterator<Item = Result<Message, E>>) -> Result<(), E> {
        let mut messages = messages.into_iter().peekable();
        while let Some(message) = messages.next() {
            let message = message?;
            let next_is_tool = match messages.peek() {
                Some(Ok(next)) => next.role == Role::Tool,
                // The next record is broken: the replay ends there, before more engine work.
                Some(Err(_)) => return messages.next().expect("peeked").map(drop),
                None => false,
            };
            self.feed(message, next_is_tool);
        }
        self.end_transcript();
        Ok(())
    }

    /// Takes a whole transcript as the context at once (for a manual compaction of all of it).
    pub fn load(&mut self, messages: Vec<Message>) {
        self.outcome.messages_replayed += messages.len();
        self.system = messages.first().filter(|m| m.role == Role::System).cloned();
        self.position = self.outcome.messages_replayed;
        self.context.restart(messages);
    }

    /// Feeds one transcript message; `next_is_tool` says whether a tool result follows it.
    pub fn feed(&mut self, message: Message, next_is_tool: bool) {
        let index = self.outcome.messages_replayed;
        // A person types between turns, never between a call and its result: a command aimed
        // at a tool result runs once the tool turn is over.
        if message.role != Role::Tool {
            self.run_script_before(index);
        }
        self.position = index;
        self.outcome.messages_replayed += 1;
        if message.role != Role::Tool {
            self.settle_unanswered_calls();
        }
        let command = (message.role == Role::User)
            .then(|| SessionCommand::parse(&message.text()))
            .flatten();
        if let Some(command) = command {
            self.run_command(command, CommandSource::Message);
        } else {
            let ends_tool_turn = message.role == Role::Tool && !next_is_tool;
            match message.role {
                Role::Assistant => self.model_call(message),
                Role::Tool => self.push_tool_result(message),
                _ => {
                    if message.role == Role::System && self.context.is_empty() {
                        self.system = Some(message.clone());
                    }
                    self.context.push(message);
                }
            }
            if ends_tool_turn {
                self.settle_unanswered_calls();
                if self.call(|engine| engine.should_compress(None)) == Some(true) {
                    self.compact(Trigger::Threshold, None);
                }
            }
        }
        self.position = index + 1;
    }

    fn model_call(&mut self, message: Message) {
        if self.hygiene_due() {
            self.compact(Trigger::Hygiene, None);
            self.hygiene_blocked = self.hygiene_due();
        }
        let (engine, context) = (&mut *self.engine, &self.context);
        let preflight = timed(&mut self.engine_time, || {
            engine.should_compress_preflight(context.messages(), context.json())
        });
        if self.record(preflight) == Some(true) {
            self.compact(Trigger::Preflight, None);
        }
        let prompt_tokens = self.context.tokens();
        let context_messages = self.context.len();
        self.note_tokens(prompt_tokens);
        self.outcome.model_calls += 1;
        let recorded = recorded_usage(&message);
        let calls = self.engine_tool_calls(&message);
        let completion_tokens = self.context.push(message);
        let counter = self.context.counter().name().to_owned();
        self.emit(Event::ModelCall {
            message_index: self.position,
            context_messages,
            prompt_tokens,
            prompt_source: UsageSource::Estimated,
            completion_tokens,
            completion_source: UsageSource::Estimated,
            token_counter: counter.clone(),
        });
        let (usage, source) = match recorded {
            Some(usage) => {
                self.outcome.usage_recorded += 1;
                (usage, UsageSource::Recorded)
            }
            None => {
                self.outcome.usage_estimated += 1;
                (
                    Usage::new(prompt_tokens, completion_tokens),
                    UsageSource::Estimated,
                )
            }
        };
        self.emit(Event::Usage {
            message_index: self.position,
            source,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            total_tokens: usage.total_tokens,
            cache_read_tokens: usage.cache_read_tokens.into_option(),
            cache_write_tokens: usage.cache_write_tokens.into_option(),
            reasoning_tokens: usage.reasoning_tokens.into_option(),
            describes: match source {
                UsageSource::Recorded => {
                    "the original run's context, which the engine under test may have compacted differently"
                        .to_owned()
                }
                UsageSource::Estimated => format!("the replayed context, counted with {counter}"),
            },
        });
        self.call(|engine| engine.update_from_response(usage));
        self.pending.extend(calls);
    }

    /// The calls of an assistant message that name one of the engine's tools.
    fn engine_tool_calls(&self, message: &Message) -> Vec<PendingCall> {
        message
            .calls()
            .iter()
            .filter(|call| self.outcome.tools.contains(&call.function.name))
            .map(|call| PendingCall {
                message_index: self.position,
                call_id: call.id.clone(),
                tool: call.function.name.clone(),
                arguments: call.function.arguments.clone(),
            })
            .collect()
    }

    /// Appends a tool result; one answering an engine tool's call is replaced by the live answer.
    fn push_tool_result(&mut self, mut message: Message) {
        let waiting = message
            .tool_call_id
            .as_ref()
            .and_then(|id| self.pending.iter().position(|call| &call.call_id == id));
        if let Some(waiting) = waiting {
            let call = self.pending.remove(waiting);
            let recorded = message.text().into_owned();
            let live = self.dispatch(&call);
            message.content = Content::Text(live.clone());
            self.record_dispatch(ToolDispatch {
                message_index: self.position,
                equal: answers_equal(&recorded, &live),
                call_id: call.call_id,
                tool: call.tool,
                arguments: call.arguments,
                recorded: Some(recorded),
                live,
            });
        }
        self.context.push(message);
    }

    /// Dispatches the engine-tool calls the transcript left unanswered; their answers are logged,
    /// nothing is inserted.
    fn settle_unanswered_calls(&mut self) {
        for call in std::mem::take(&mut self.pending) {
            let live = self.dispatch(&call);
            self.record_dispatch(ToolDispatch {
                message_index: call.message_index,
                call_id: call.call_id,
                tool: call.tool,
                arguments: call.arguments,
                recorded: None,
                live,
                equal: false,
            });
        }
    }

    /// The engine's answer to `call` against the live context, as JSON text; an engine failure is
    /// contained and answered as `{"error": …}`, as an agent loop answers the model.
    fn dispatch(&mut self, call: &PendingCall) -> String {
        let answer = match parse_arguments(&call.arguments) {
            Err(problem) => json!({ "error": problem }),
            Ok(arguments) => {
                let (engine, context) = (&mut *self.engine, &self.context);
                let answer = timed(&mut self.engine_time, || {
                    engine.handle_tool_call(&call.tool, &arguments, Some(context.messages()))
                });
                match answer {
                    Ok(answer) => answer,
                    Err(error) => {
                        self.fault(&error);
                        json!({ "error": error.to_string() })
                    }
                }
            }
        };
        serde_json::to_string(&answer).expect("JSON values serialise")
    }

    fn record_dispatch(&mut self, dispatch: ToolDispatch) {
        self.emit(Event::ToolDispatch(dispatch.clone()));
        self.outcome.tool_dispatches.push(dispatch);
    }

    /// Calls one of the engine's tools against the current context (`ctxhost tool`).
    pub fn call_tool(&mut self, name: &str, arguments: &Value) -> Result<Value, EngineCallError> {
        let (engine, context) = (&mut *self.engine, &self.context);
        timed(&mut self.engine_time, || {
            engine.handle_tool_call(name, arguments, Some(context.messages()))
        })
    }

    /// Runs a command a person would type between turns:
    /// - `/compress [focus]`: a manual compaction now (auto-compaction resumed first);
    /// - `/reset`: `on_session_reset`; the context restarts from the system message;
    /// - `/new`: `on_session_end` for the session, `on_session_reset`, the context restarted, then
    ///   `on_session_start` for a new session id with `boundary_reason` and `old_session_id`.
    pub fn run_command(&mut self, command: SessionCommand, source: CommandSource) {
        self.emit(Event::Command {
            message_index: self.position,
            command: command.clone(),
            source,
        });
        match &command {
            SessionCommand::Compress { focus } => self.compact(Trigger::Manual, focus.as_deref()),
            SessionCommand::Reset => self.reset_session(),
            SessionCommand::New => {
                self.end_session();
                self.reset_session();
                let old = std::mem::take(&mut self.outcome.session_id);
                self.outcome.session_id = format!("{}-{}", self.options.session_id, self.sessions + 1);
                self.begin_session(Some(NEW_SESSION_REASON), Some(old));
            }
        }
        self.outcome.commands.push(CommandRecord {
            message_index: self.position,
            command,
            source,
            session_id: self.outcome.session_id.clone(),
        });
    }

    fn run_script_before(&mut self, index: usize) {
        while self
            .script
            .front()
            .is_some_and(|command| command.before_message <= index)
        {
            let scripted = self.script.pop_front().expect("checked");
            self.position = index.min(self.outcome.messages_replayed);
            self.run_command(scripted.command, CommandSource::Flag);
        }
    }

    /// The end of the transcript: commands scripted at or past it, calls it never answered.
    fn end_transcript(&mut self) {
        if std::mem::replace(&mut self.transcript_ended, true) {
            return;
        }
        self.position = self.outcome.messages_replayed;
        self.run_script_before(usize::MAX);
        self.settle_unanswered_calls();
    }

    fn begin_session(&mut self, boundary_reason: Option<&str>, old_session_id: Option<String>) {
        self.held.get_or_insert_with(Vec::new);
        self.sessions += 1;
        let model = &self.options.model;
        let info = SessionInfo {
            model: model.model.clone(),
            context_length: model.context_length,
            platform: "ctxhost".to_owned(),
            boundary_reason: boundary_reason.map(str::to_owned),
            old_session_id: old_session_id.clone(),
        };
        let session_id = self.outcome.session_id.clone();
        self.call(|engine| engine.on_session_start(&session_id, &info));
        let threshold_tokens = self
            .call(|engine| engine.counters())
            .map(|counters| counters.threshold_tokens);
        let held = self.held.take().unwrap_or_default();
        self.emit(Event::SessionStart {
            message_index: self.position,
            session_id,
            engine: self.engine.name().to_owned(),
            model: info.model,
            context_length: info.context_length,
            window: self.options.model.window(),
            threshold_tokens,
            token_counter: self.context.counter().name().to_owned(),
            tools: self.outcome.tools.clone(),
            boundary_reason: info.boundary_reason,
            old_session_id,
        });
        for event in held {
            self.emit(event);
        }
    }

    fn end_session(&mut self) {
        let session_id = self.outcome.session_id.clone();
        let (engine, context) = (&mut *self.engine, &self.context);
        let ended = timed(&mut self.engine_time, || {
            engine.on_session_end(&session_id, context.messages())
        });
        self.record(ended);
        self.emit(Event::SessionEnd {
            message_index: self.position,
            session_id,
            messages: self.context.len(),
            tokens: self.context.tokens(),
        });
    }

    /// `on_session_reset`, and the context restarts from the transcript's system message (as it
    /// came, without what a compaction may have added to it).
    fn reset_session(&mut self) {
        self.call(|engine| engine.on_session_reset());
        self.context.restart(self.system.clone().into_iter().collect());
        self.hygiene_blocked = false;
    }

    fn hygiene_due(&self) -> bool {
        let window = self.options.model.window();
        let over_tokens = window > 0 && self.context.rough_tokens() * 100 >= window * HYGIENE_PERCENT;
        !self.hygiene_blocked && (over_tokens || self.context.len() >= HYGIENE_MESSAGES)
    }

    /// Compacts the context now; on any failure the context stays as it was.
    ///
    /// A manual `/compress` first resumes automatic compaction, then asks
    /// `has_content_to_compress`: when the engine says no, `compress` is not called and the
    /// record says there was nothing to compact. An engine result equal to its input is recorded
    /// as nothing to compact too, never as a compaction.
    pub fn compact(&mut self, trigger: Trigger, focus: Option<&str>) {
        let mut record = CompactionRecord {
            at_message: self.outcome.messages_replayed,
            turn: self.outcome.model_calls,
            trigger,
            focus: focus.map(str::to_owned),
            tokens_before: self.context.tokens(),
            tokens_after: self.context.tokens(),
            messages_before: self.context.len(),
            messages_after: self.context.len(),
            duration_ms: 0.0,
            outcome: Outcome::Applied,
            retention: None,
            details: None,
        };
        if trigger == Trigger::Manual {
            self.call(|engine| engine.call_ext("resume_auto_compaction", &Value::Null));
            let (engine, context) = (&mut *self.engine, &self.context);
            let has_content = timed(&mut self.engine_time, || {
                engine.has_content_to_compress(context.messages())
            });
            if self.record(has_content) == Some(false) {
                record.outcome = Outcome::NothingToCompact {
                    reason: "the engine says everything is still protected".to_owned(),
                };
                return self.record_compaction(record);
            }
        }
        let started = Instant::now();
        let (engine, context) = (&mut *self.engine, &self.context);
        let call = CompressCall {
            current_tokens: Some(record.tokens_before),
            focus_topic: focus,
            user_message: context.user_message(),
        };
        let result = engine.compress(context.messages(), context.json(), &call);
        let duration = started.elapsed();
        self.engine_time += duration;
        record.duration_ms = duration.as_secs_f64() * 1e3;
        record.details = self
            .call(|engine| engine.call_ext("last_compaction", &Value::Null))
            .flatten();
        record.outcome = match result {
            Ok(messages) if messages.as_slice() == self.context.messages() => Outcome::NothingToCompact {
                reason: "the engine returned the context as it was".to_owned(),
            },
            Ok(messages) => {
                if self.options.facts == FactAccounting::Measure {
                    let compacted = compacted_messages(self.context.messages(), &messages);
                    record.retention = Some(measure_retention(&compacted, &messages));
                }
                self.context.replace(messages);
                self.hygiene_blocked = false;
                Outcome::Applied
            }
            Err(error) => {
                let reason = error.to_string();
                self.fault(&error);
                Outcome::Kept { reason }
            }
        };
        record.tokens_after = self.context.tokens();
        record.messages_after = self.context.len();
        self.record_compaction(record);
    }

    /// Takes the tokens of a context the model would receive into the peak, and reports the first
    /// time it is over the usable window.
    fn note_tokens(&mut self, tokens: u64) {
        self.outcome.peak_tokens = self.outcome.peak_tokens.max(tokens);
        let window = self.options.model.window();
        if window == 0 || tokens <= window {
            return;
        }
        match &mut self.outcome.over_window {
            Some(overrun) => overrun.times += 1,
            None => {
                self.outcome.over_window = Some(WindowOverrun {
                    window,
                    first_at_message: self.position,
                    first_tokens: tokens,
                    times: 1,
                });
                let at = if self.transcript_ended {
                    "at the end".to_owned()
                } else {
                    format!("before message {}", self.position)
                };
                self.warn(format!(
                    "the context went over the window {at}: {} tokens in a {}-token window, which a model would refuse",
                    group_thousands(tokens as usize),
                    group_thousands(window as usize),
                ));
            }
        }
    }

    fn record_compaction(&mut self, record: CompactionRecord) {
        self.emit(Event::Compaction(CompactionEvent::new(self.position, &record)));
        self.outcome.compactions.push(record);
    }

    /// Ends the transcript and the session, and returns the outcome with the final context.
    pub fn finish(mut self) -> ReplayOutcome {
        self.end_transcript();
        self.end_session();
        self.outcome.counters = self.call(|engine| engine.counters());
        self.outcome.status = self.call(|engine| engine.get_status());
        self.outcome.final_tokens = self.context.tokens();
        self.outcome.final_messages = self.context.len();
        self.note_tokens(self.context.tokens());
        self.outcome.engine_time_ms = self.engine_time.as_secs_f64() * 1e3;
        self.outcome.context = self.context.into_messages();
        self.outcome
    }

    fn call<T>(&mut self, body: impl FnOnce(&mut EngineHandle) -> Result<T, EngineCallError>) -> Option<T> {
        let engine = &mut *self.engine;
        let result = timed(&mut self.engine_time, || body(engine));
        self.record(result)
    }

    fn record<T>(&mut self, result: Result<T, EngineCallError>) -> Option<T> {
        result.map_err(|error| self.fault(&error)).ok()
    }

    fn fault(&mut self, error: &EngineCallError) {
        tracing::warn!("{error}; the context is kept as it was");
        let at_message = self.outcome.messages_replayed;
        self.outcome.faults.push(EngineFault {
            at_message,
            message: error.to_string(),
        });
        self.emit(Event::Error {
            message_index: self.position,
            message: error.to_string(),
        });
    }

    fn warn(&mut self, message: String) {
        tracing::warn!("{message}");
        self.emit(Event::Warning {
            message_index: self.position,
            message: message.clone(),
        });
        self.outcome.warnings.push(message);
    }

    fn emit(&mut self, event: Event) {
        match &mut self.held {
            Some(held) => held.push(event),
            None => self.events.record(&event),
        }
    }
}

fn timed<T>(total: &mut Duration, body: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let value = body();
    *total += started.elapsed();
    value
}

/// The usage a transcript recorded on an assistant message (`usage` with OpenAI's or Anthropic's
/// field names), when it has one.
pub fn recorded_usage(message: &Message) -> Option<Usage> {
    let usage = message.extra.get("usage")?;
    let field = |names: &[&str]| names.iter().find_map(|name| usage.get(*name)?.as_u64());
    let prompt = field(&["prompt_tokens", "input_tokens"])?;
    let completion = field(&["completion_tokens", "output_tokens"]).unwrap_or(0);
    let mut recorded = Usage::new(prompt, completion);
    if let Some(total) = field(&["total_tokens"]) {
        recorded.total_tokens = total;
    }
    recorded.cache_read_tokens = field(&["cache_read_tokens", "cache_read_input_tokens"]).into();
    recorded.cache_write_tokens = field(&["cache_write_tokens", "cache_creation_input_tokens"]).into();
    recorded.reasoning_tokens = field(&["reasoning_tokens"]).into();
    Some(recorded)
}

#[cfg(test)]
mod tests;
