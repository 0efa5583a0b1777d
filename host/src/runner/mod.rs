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
//!   message by [`LiveContext`]; recorded usage is passed on as is while the context is the
//!   original run's, and calibrated to the replayed context once a compaction changed it
//!   ([`calibration`]);
//! - a call to one of the engine's tools (`get_tool_schemas`, read at start) is answered by
//!   `handle_tool_call` live, and the live answer replaces the recorded one ([`tools`]);
//! - after a turn that ended in tool calls and their results, `should_compress`, and `compress`
//!   when it says yes;
//! - `/compress [focus]`, `/new` and `/reset`, typed as a user message's whole text or scripted
//!   with `--at`, run as Hermes runs them ([`script`], [`Replayer::run_command`]);
//! - at the end, `on_session_end` with the final context.
//!
//! Every engine failure is contained: the context stays as it was, the fault is recorded, and the
//! replay carries on. Everything that happens is published as a [`Fact`] ([`facts`]) to the
//! session's subscribers (the event log, the report's [`Tally`], the progress bar) and to its
//! observer engines ([`observers`]): the run loop ([`Replayer`]) does not know who listens.
//! `/engine NAME` hands the context to another engine at a turn boundary
//! ([`Replayer::swap_engine`]).

mod calibration;
mod context;
mod fact_measure;
pub mod facts;
pub mod observers;
pub mod script;
mod session;
mod tally;
pub mod tools;

use std::{cell::RefCell, convert::Infallible, rc::Rc};

use ctxhost_engine_abi::{Counters, Message, ModelInfo, Usage};
use ctxhost_engine_kit::retention::Retention;
use serde::Serialize;
use serde_json::Value;

pub use context::LiveContext;
pub use facts::{CompactionEvent, Fact, Subscriber, Subscribers, UsageSource};
pub use observers::{observer_names, ObserverSummary, Observers, ToolAnswer, DEFAULT_OBSERVER_TIMEOUT};
pub use script::{CommandSource, ScriptedCommand, SessionCommand};
pub use session::{EngineSource, Replayer, Watchers};
pub use tally::Tally;
pub use tools::{DetachedTool, ToolDispatch};

use crate::{engine::EngineHandle, tokens::TokenCounter};

/// Session hygiene fires at this share of the window, in percent (Hermes's gateway safety net).
pub const HYGIENE_PERCENT: u64 = 85;

/// Session hygiene also fires at this many messages.
pub const HYGIENE_MESSAGES: usize = 5_000;

/// After a hygiene compaction that left the context over the hygiene line, hygiene tries again
/// once the context has grown by a this-th part of the window (5%).
pub const HYGIENE_RETRY_SHARE: u64 = 20;

/// The `boundary_reason` `on_session_start` is given after `/new`.
pub const NEW_SESSION_REASON: &str = "new_session";

/// The `boundary_reason` a swapped-in engine's `on_session_start` is given (`/engine NAME`).
pub const SWAP_REASON: &str = "engine_swap";

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
    /// The transcript message (0-based) it came before, as `--at N` counts: the context held
    /// the messages before it. The transcript's length for a compaction at the end.
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
    /// The transcript message (0-based) being handled when it failed; the transcript's length
    /// at the end.
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
    /// The transcript message before which it first happened: a model call's, or the
    /// transcript's length when only the final context was over.
    pub first_at_message: usize,
    /// The context's tokens then.
    pub first_tokens: u64,
    /// Model calls whose context was over the window (never more than the model calls made).
    pub times: usize,
    /// Of `times`, the calls over it only with the original agent's own system prompt and tool
    /// schemas, which the usage the transcript recorded counts and the replayed context does not
    /// hold: the replayed context alone was under the window.
    pub with_overhead: usize,
    /// The final context's tokens, when it is over the window too. It is no model call (the
    /// transcript ends there), so it is not one of `times`.
    pub final_tokens: Option<u64>,
}

/// A stretch of the session during which one engine owned the context.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EngineSpan {
    /// The engine.
    pub engine: String,
    /// The transcript message it took over at.
    pub from_message: usize,
    /// The message it handed over at (the transcript's length for the last one).
    pub until_message: Option<usize>,
}

/// The result of a replay.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReplayOutcome {
    /// Transcript messages fed (command messages included).
    pub messages_replayed: usize,
    /// Model calls (assistant messages).
    pub model_calls: usize,
    /// Model calls whose usage came from the transcript, before any compaction changed the
    /// context: it describes the original run's context, which is the replayed one.
    pub usage_recorded: usize,
    /// Model calls whose usage the host estimated from the replayed context.
    pub usage_estimated: usize,
    /// Model calls whose transcript recorded usage, made after a compaction had changed the
    /// context: the replayed context's count, calibrated by the recorded calls before it.
    pub usage_calibrated: usize,
    /// The session's id at the end (a new one after `/new`).
    pub session_id: String,
    /// The tools offered at the end (the active engine's, then the observers'), routed to
    /// `handle_tool_call`.
    pub tools: Vec<String>,
    /// The tools offered no more because the observer offering them was detached.
    pub detached_tools: Vec<DetachedTool>,
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
    /// The largest prompt the engine was told from the usage the transcript recorded (recorded,
    /// or calibrated by it): with the original agent's own system prompt and tool schemas, which
    /// the transcript does not hold. 0 when no usage was recorded.
    pub peak_told_tokens: u64,
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
    /// Which engine owned the context over which messages (more than one after `/engine`).
    pub engine_spans: Vec<EngineSpan>,
    /// What each observer received, and whether it was detached.
    pub observers: Vec<ObserverSummary>,
    /// Engines listed as observers that own the context at the end: they observe once `/engine`
    /// swaps them out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub standby: Vec<String>,
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
    let fed = replay_stream(
        engine,
        messages.into_iter().map(Ok::<_, Infallible>),
        options,
        &[],
        Watchers::default(),
    );
    match fed {
        Ok(outcome) => outcome,
        Err(never) => match never {},
    }
}

/// Replays a stream of messages (a [`crate::formats::TranscriptStream`]) with `script`'s commands,
/// `watchers` receiving everything as it happens, and returns what the report's [`Tally`] made
/// of it.
///
/// A read error ends the replay at once and is returned; the engine's session is not ended (it
/// saw only part of the conversation) and nothing of the outcome is kept.
pub fn replay_stream<'a, E>(
    engine: &'a mut EngineHandle,
    messages: impl IntoIterator<Item = Result<Message, E>>,
    options: &ReplayOptions,
    script: &[ScriptedCommand],
    mut watchers: Watchers<'a>,
) -> Result<ReplayOutcome, E> {
    let tally = Rc::new(RefCell::new(Tally::default()));
    watchers.subscribers.add(Rc::clone(&tally));
    let mut replayer = Replayer::start_with(engine, options, watchers).with_script(script);
    replayer.feed_all(messages)?;
    Ok(finish_with(replayer, &tally))
}

/// Runs one manual compaction (`/compress [focus]`) over `messages`.
pub fn compress_once(
    engine: &mut EngineHandle,
    messages: Vec<Message>,
    focus: Option<&str>,
    options: &ReplayOptions,
) -> ReplayOutcome {
    let tally = Rc::new(RefCell::new(Tally::default()));
    let mut watchers = Watchers::default();
    watchers.subscribers.add(Rc::clone(&tally));
    let mut replayer = Replayer::start_with(engine, options, watchers);
    replayer.load(messages);
    replayer.compact(Trigger::Manual, focus);
    finish_with(replayer, &tally)
}

/// Finishes `replayer` and returns what `tally`, one of its subscribers, made of it, with the
/// final context.
pub fn finish_with(replayer: Replayer<'_>, tally: &Rc<RefCell<Tally>>) -> ReplayOutcome {
    let context = replayer.finish();
    let mut outcome = std::mem::take(&mut *tally.borrow_mut()).into_outcome();
    outcome.context = context;
    outcome
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
