//! Driving an engine through a conversation exactly as an agent loop would.
//!
//! Messages are fed in order; a model call happens before each assistant message:
//! - before the call, session hygiene (a rough estimate of the context at ≥ 85% of the window, or
//!   5,000 messages, compacts at once; rough whatever the counter, as Hermes's gateway does), then
//!   the engine's `should_compress_preflight`;
//! - the assistant message is appended, then `update_from_response` with the usage recorded in the
//!   transcript, or an estimate of prompt and completion;
//! - every estimate comes from [`ReplayOptions::token_counter`] (`context.tokenizer`), cached per
//!   message by [`LiveContext`]; recorded usage is passed on as is, never replaced by one;
//! - after a turn that ended in tool calls and their results, `should_compress`, and `compress`
//!   when it says yes;
//! - at the end, `on_session_end` with the final context.
//!
//! Every engine failure is contained: the context stays as it was, the fault is recorded, and the
//! replay carries on.

mod context;

use std::time::{Duration, Instant};

use ctxhost_engine_abi::{Counters, Message, ModelInfo, Role, SessionInfo, Usage};
use ctxhost_engine_kit::retention::{compacted_messages, measure_retention, Retention};
use serde::Serialize;
use serde_json::Value;

pub use context::LiveContext;

use crate::{
    engine::{EngineCallError, EngineHandle},
    tokens::TokenCounter,
};

/// Session hygiene fires at this share of the window, in percent (Hermes's gateway safety net).
pub const HYGIENE_PERCENT: u64 = 85;

/// Session hygiene also fires at this many messages.
pub const HYGIENE_MESSAGES: usize = 5_000;

/// What the replay needs to know about the session.
#[derive(Clone, Debug, Default)]
pub struct ReplayOptions {
    /// The session's id, handed to `on_session_start` and `on_session_end`.
    pub session_id: String,
    /// The model and its window.
    pub model: ModelInfo,
    /// What the context's tokens are counted with (`context.tokenizer`).
    pub token_counter: TokenCounter,
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
    /// The context was kept as it was.
    Kept {
        /// Why.
        reason: String,
    },
}

/// One compaction.
#[derive(Clone, Debug, Serialize)]
pub struct CompactionRecord {
    /// How many transcript messages had been fed when it happened.
    pub at_message: usize,
    /// What made it happen.
    pub trigger: Trigger,
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
    /// compactions only).
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

/// The result of a replay.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReplayOutcome {
    /// Transcript messages fed.
    pub messages_replayed: usize,
    /// Model calls (assistant messages).
    pub model_calls: usize,
    /// Model calls whose usage came from the transcript.
    pub usage_recorded: usize,
    /// Model calls whose usage was estimated.
    pub usage_estimated: usize,
    /// Every compaction, applied or not.
    pub compactions: Vec<CompactionRecord>,
    /// Every contained engine failure.
    pub faults: Vec<EngineFault>,
    /// The largest context (estimated tokens) the model would have received.
    pub peak_tokens: u64,
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
pub fn replay(engine: &mut EngineHandle, messages: Vec<Message>, options: &ReplayOptions) -> ReplayOutcome {
    let mut replayer = Replayer::start(engine, options);
    let mut messages = messages.into_iter().peekable();
    while let Some(message) = messages.next() {
        let next_is_tool = messages.peek().is_some_and(|next| next.role == Role::Tool);
        replayer.feed(message, next_is_tool);
    }
    replayer.finish()
}

/// Runs one manual compaction (`/compress [focus]`) over `messages`.
pub fn compress_once(
    engine: &mut EngineHandle,
    messages: Vec<Message>,
    focus: Option<&str>,
    options: &ReplayOptions,
) -> ReplayOutcome {
    let mut replayer = Replayer::start(engine, options);
    replayer.outcome.messages_replayed = messages.len();
    replayer.context.replace(messages);
    replayer.outcome.peak_tokens = replayer.context.tokens();
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
}

impl<'e> Replayer<'e> {
    /// Tells the engine the model and starts the session.
    pub fn start(engine: &'e mut EngineHandle, options: &ReplayOptions) -> Self {
        let mut replayer = Self {
            engine,
            options: options.clone(),
            context: LiveContext::with_counter(options.token_counter),
            outcome: ReplayOutcome::default(),
            engine_time: Duration::ZERO,
            hygiene_blocked: false,
        };
        let model = replayer.options.model.clone();
        let info = SessionInfo {
            model: model.model.clone(),
            context_length: model.context_length,
            platform: "ctxhost".to_owned(),
            ..SessionInfo::default()
        };
        let session_id = replayer.options.session_id.clone();
        replayer.call(|engine| engine.update_model(&model));
        replayer.call(|engine| engine.on_session_start(&session_id, &info));
        replayer
    }

    /// Feeds one transcript message; `next_is_tool` says whether a tool result follows it.
    pub fn feed(&mut self, message: Message, next_is_tool: bool) {
        self.outcome.messages_replayed += 1;
        let ends_tool_turn = message.role == Role::Tool && !next_is_tool;
        if message.role == Role::Assistant {
            self.model_call(message);
        } else {
            self.context.push(message);
        }
        if ends_tool_turn && self.call(|engine| engine.should_compress(None)) == Some(true) {
            self.compact(Trigger::Threshold, None);
        }
    }

    fn model_call(&mut self, message: Message) {
        if self.hygiene_due() {
            self.compact(Trigger::Hygiene, None);
            self.hygiene_blocked = self.hygiene_due();
        }
        let context_json = self.context.json();
        let engine = &mut *self.engine;
        let preflight = timed(&mut self.engine_time, || {
            engine.should_compress_preflight(context_json)
        });
        if self.record(preflight) == Some(true) {
            self.compact(Trigger::Preflight, None);
        }
        let prompt_tokens = self.context.tokens();
        self.outcome.peak_tokens = self.outcome.peak_tokens.max(prompt_tokens);
        self.outcome.model_calls += 1;
        let recorded = recorded_usage(&message);
        let completion_tokens = self.context.push(message);
        let usage = match recorded {
            Some(usage) => {
                self.outcome.usage_recorded += 1;
                usage
            }
            None => {
                self.outcome.usage_estimated += 1;
                Usage::new(prompt_tokens, completion_tokens)
            }
        };
        self.call(|engine| engine.update_from_response(usage));
    }

    fn hygiene_due(&self) -> bool {
        let window = self.options.model.window();
        let over_tokens = window > 0 && self.context.rough_tokens() * 100 >= window * HYGIENE_PERCENT;
        !self.hygiene_blocked && (over_tokens || self.context.len() >= HYGIENE_MESSAGES)
    }

    /// Compacts the context now; on any failure the context stays as it was.
    pub fn compact(&mut self, trigger: Trigger, focus: Option<&str>) {
        if trigger == Trigger::Manual {
            self.call(|engine| engine.call_ext("resume_auto_compaction", &Value::Null));
        }
        let (tokens_before, messages_before) = (self.context.tokens(), self.context.len());
        let started = Instant::now();
        let (engine, context) = (&mut *self.engine, &self.context);
        let result = engine.compress(context.messages(), context.json(), Some(tokens_before), focus);
        let duration = started.elapsed();
        self.engine_time += duration;
        let details = self
            .call(|engine| engine.call_ext("last_compaction", &Value::Null))
            .flatten();
        let mut retention = None;
        let outcome = match result {
            Ok(messages) => {
                let compacted = compacted_messages(self.context.messages(), &messages);
                retention = Some(measure_retention(&compacted, &messages));
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
        self.outcome.compactions.push(CompactionRecord {
            at_message: self.outcome.messages_replayed,
            trigger,
            tokens_before,
            tokens_after: self.context.tokens(),
            messages_before,
            messages_after: self.context.len(),
            duration_ms: duration.as_secs_f64() * 1e3,
            outcome,
            retention,
            details,
        });
    }

    /// Ends the session and returns the outcome with the final context.
    pub fn finish(mut self) -> ReplayOutcome {
        let session_id = self.options.session_id.clone();
        let (engine, context) = (&mut *self.engine, &self.context);
        let ended = timed(&mut self.engine_time, || {
            engine.on_session_end(&session_id, context.messages())
        });
        self.record(ended);
        self.outcome.counters = self.call(|engine| engine.counters());
        self.outcome.status = self.call(|engine| engine.get_status());
        self.outcome.final_tokens = self.context.tokens();
        self.outcome.final_messages = self.context.len();
        self.outcome.peak_tokens = self.outcome.peak_tokens.max(self.context.tokens());
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
