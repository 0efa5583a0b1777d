//! What a session publishes: one [`Fact`] for each thing that happened, in order, handed to every
//! [`Subscriber`] as the session goes. The run loop does not know who listens: the event log
//! (`--events FILE`, one JSON line a fact, all but `replay_end`), the terminal report
//! ([`super::Tally`]) and the progress bar are subscribers; the observer engines receive the
//! engine-level facts ([`ctxhost_engine_abi::Fact`]) of the same moments.
//!
//! Every fact is a JSON object whose `"event"` key names its kind and whose `"message_index"` is
//! the 0-based index of the transcript message being handled when it happened; a fact between
//! messages (a command scripted with `--at N`, the end of the session) carries the index of the
//! next message, which is the transcript's length at the end.
//!
//! Kinds, in the order a replay can produce them:
//! - `session_start`: the engine, model, window, threshold and tools; again after `/new`, with
//!   `boundary_reason` and `old_session_id`;
//! - `warning`: something the host refused or worked around (a duplicate tool name, an observer
//!   detached, a swap that could not load);
//! - `command`: `/compress [focus]`, `/new`, `/reset` or `/engine NAME`, typed in the transcript
//!   or given by flag;
//! - `messages_appended`: how many messages of the conversation entered the context;
//! - `model_call`: the context the model would receive before an assistant message;
//! - `over_window`: that context (or the final one) is over the usable window;
//! - `usage`: what `update_from_response` was given, and where it came from;
//! - `threshold_crossed`: the context reached the active engine's threshold (once per crossing);
//! - `tool_dispatch`: an engine tool called live, its answer against the recorded one;
//! - `compaction`: what fired it, tokens and messages before and after, the engine's account;
//! - `engine_swap`: `/engine NAME` handed the context to another engine, or could not;
//! - `error`: an engine failure, contained;
//! - `session_reset`: `/new` or `/reset` restarted the context;
//! - `session_end`: `on_session_end` with the session's final context (at the end, and before a
//!   `/new`);
//! - `replay_end`: the run is over: the final context's size, the active engine's counters and
//!   status, the time spent in engines.

use ctxhost_engine_abi::Counters;
use serde::Serialize;
use serde_json::Value;

use super::{
    observers::ObserverSummary,
    script::{CommandSource, SessionCommand},
    tools::{DetachedTool, ToolDispatch},
    CompactionRecord, Outcome,
};

/// Where a usage figure came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageSource {
    /// The transcript recorded it, and no compaction has changed the context yet: it describes
    /// the original run's context, which is this one.
    Recorded,
    /// The host estimated it from the replayed context with its token counter.
    Estimated,
    /// The transcript recorded usage, but a compaction had changed the context: the replayed
    /// context's count, calibrated by the calls recorded before the change (the completion is
    /// the recorded one).
    Calibrated,
}

/// One thing that happened during a replay.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Fact {
    /// A session started (`on_session_start`).
    SessionStart {
        /// See the module's doc.
        message_index: usize,
        /// The session's id.
        session_id: String,
        /// The engine's name.
        engine: String,
        /// The model's name.
        model: String,
        /// The model's window.
        context_length: u64,
        /// The window less the output reservation.
        window: u64,
        /// The engine's threshold after `update_model`.
        threshold_tokens: Option<u64>,
        /// What the host counts tokens with.
        token_counter: String,
        /// The engine's tools the host routes to it.
        tools: Vec<String>,
        /// Set after `/new`: why a new session started.
        boundary_reason: Option<String>,
        /// Set after `/new`: the session this one follows.
        old_session_id: Option<String>,
    },
    /// Something the host refused or worked around, which the user should know.
    Warning {
        /// See the module's doc.
        message_index: usize,
        /// What.
        message: String,
    },
    /// A scripted command.
    Command {
        /// See the module's doc.
        message_index: usize,
        /// Which.
        #[serde(flatten)]
        command: SessionCommand,
        /// Typed in the transcript, or given by `--at`.
        source: CommandSource,
    },
    /// A model call: the context the model would receive before an assistant message.
    ModelCall {
        /// See the module's doc: the assistant message's index.
        message_index: usize,
        /// Messages in the context.
        context_messages: usize,
        /// Tokens of the context, as the host counts them.
        prompt_tokens: u64,
        /// Always `estimated`: the host's count of the replayed context.
        prompt_source: UsageSource,
        /// Tokens of the assistant message, as the host counts them.
        completion_tokens: u64,
        /// Always `estimated`.
        completion_source: UsageSource,
        /// What counted them (`context.tokenizer`).
        token_counter: String,
    },
    /// The usage handed to `update_from_response`.
    Usage {
        /// See the module's doc: the assistant message's index.
        message_index: usize,
        /// Recorded in the transcript, or estimated by the host.
        source: UsageSource,
        /// Prompt tokens.
        prompt_tokens: u64,
        /// Completion tokens.
        completion_tokens: u64,
        /// Their total.
        total_tokens: u64,
        /// Prompt tokens read from the provider's cache, when recorded.
        cache_read_tokens: Option<u64>,
        /// Prompt tokens written to the provider's cache, when recorded.
        cache_write_tokens: Option<u64>,
        /// Reasoning tokens, when recorded.
        reasoning_tokens: Option<u64>,
        /// What the figures describe.
        describes: String,
    },
    /// An engine tool called live.
    ToolDispatch(ToolDispatch),
    /// A compaction, applied or not.
    Compaction(CompactionEvent),
    /// An engine call that failed and was contained.
    Error {
        /// See the module's doc.
        message_index: usize,
        /// The same as `message_index`: the report's `faults` number it so.
        at_message: usize,
        /// What failed.
        message: String,
    },
    /// Messages of the conversation entered the context (the observers receive them whole).
    MessagesAppended {
        /// See the module's doc: the first of them.
        message_index: usize,
        /// How many.
        count: usize,
    },
    /// The context the model would receive went over the usable window.
    OverWindow {
        /// See the module's doc.
        message_index: usize,
        /// The context's tokens.
        tokens: u64,
        /// The usable window.
        window: u64,
        /// Whether this is the final context rather than a model call's.
        at_end: bool,
        /// Whether only the prompt the engine is told from recorded usage is over (the replayed
        /// context with the original agent's own system prompt and tool schemas), not the
        /// replayed context alone.
        with_overhead: bool,
    },
    /// The context reached the active engine's threshold: once per crossing, not per response.
    ThresholdCrossed {
        /// See the module's doc.
        message_index: usize,
        /// The context's tokens.
        tokens: u64,
        /// The active engine's threshold.
        threshold: u64,
    },
    /// `/engine NAME`: the context handed to another engine, or a swap that did not happen.
    EngineSwap {
        /// See the module's doc.
        message_index: usize,
        /// The engine that owned the context before.
        from: String,
        /// The engine asked for.
        to: String,
        /// Where the new engine came from, when it took over.
        origin: Option<String>,
        /// Why it did not take over (the old engine stays), when it did not.
        refused: Option<String>,
        /// The tools offered from now on (the new engine's, then the observers').
        tools: Vec<String>,
    },
    /// `/new` or `/reset` restarted the context from the system message.
    SessionReset {
        /// See the module's doc.
        message_index: usize,
        /// The session's id.
        session_id: String,
    },
    /// A session ended (`on_session_end`).
    SessionEnd {
        /// See the module's doc.
        message_index: usize,
        /// The session's id.
        session_id: String,
        /// Messages in its final context.
        messages: usize,
        /// Tokens of its final context, as the host counts them.
        tokens: u64,
    },
    /// The run is over.
    ReplayEnd {
        /// See the module's doc: the transcript's length.
        message_index: usize,
        /// Transcript messages fed (command messages included).
        messages_replayed: usize,
        /// Estimated tokens of the final context.
        final_tokens: u64,
        /// Messages in the final context.
        final_messages: usize,
        /// Time spent inside the active engines.
        engine_time_ms: f64,
        /// The active engine's counters at the end.
        counters: Option<Counters>,
        /// The active engine's `get_status` at the end.
        status: Option<Value>,
        /// What each observer received, and whether it was detached.
        observers: Vec<ObserverSummary>,
        /// The tools offered no more at the end because the observer offering them was detached.
        detached_tools: Vec<DetachedTool>,
        /// Engines listed as observers that own the context at the end: they observe once
        /// `/engine` swaps them out.
        standby: Vec<String>,
    },
}

impl Fact {
    /// The kind, as the `"event"` key spells it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::MessagesAppended { .. } => "messages_appended",
            Self::OverWindow { .. } => "over_window",
            Self::ThresholdCrossed { .. } => "threshold_crossed",
            Self::EngineSwap { .. } => "engine_swap",
            Self::SessionReset { .. } => "session_reset",
            Self::ReplayEnd { .. } => "replay_end",
            Self::SessionStart { .. } => "session_start",
            Self::Warning { .. } => "warning",
            Self::Command { .. } => "command",
            Self::ModelCall { .. } => "model_call",
            Self::Usage { .. } => "usage",
            Self::ToolDispatch(_) => "tool_dispatch",
            Self::Compaction(_) => "compaction",
            Self::Error { .. } => "error",
            Self::SessionEnd { .. } => "session_end",
        }
    }
}

/// A compaction as the event log shows it: the record, flattened, with the engine's account read
/// out into a few plain fields.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompactionEvent {
    /// See the module's doc.
    pub message_index: usize,
    /// The compaction as the report holds it.
    #[serde(flatten)]
    pub record: CompactionRecord,
    /// Whether the engine's result replaced the context.
    pub applied: bool,
    /// Who wrote the summary, when the engine says (`extractive`, `model:<name>`).
    pub summarizer: Option<String>,
    /// Whether the engine fell back to a summary of its own (its summarizer failed).
    pub fallback: bool,
    /// Whether the context was kept as it was (the engine aborted, failed, or its result was
    /// refused).
    pub aborted: bool,
    /// Why it fell back, aborted, or found nothing to compact.
    pub reason: Option<String>,
}

impl CompactionEvent {
    /// The event for `record`, which happened while message `message_index` was handled.
    pub fn new(message_index: usize, record: &CompactionRecord) -> Self {
        let detail = |key: &str| {
            record
                .details
                .as_ref()
                .and_then(|details| details.get(key))
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
                .map(str::to_owned)
        };
        let engine_outcome = detail("outcome");
        let (kept_reason, unchanged_reason) = match &record.outcome {
            Outcome::Applied => (None, None),
            Outcome::NothingToCompact { reason } => (None, Some(reason.clone())),
            Outcome::Kept { reason } => (Some(reason.clone()), None),
        };
        Self {
            message_index,
            record: record.clone(),
            applied: record.outcome == Outcome::Applied,
            summarizer: detail("written_by").or_else(|| detail("summarizer")),
            fallback: engine_outcome.as_deref() == Some("fallback"),
            aborted: kept_reason.is_some() || engine_outcome.as_deref() == Some("aborted"),
            reason: kept_reason.or(unchanged_reason).or_else(|| detail("reason")),
        }
    }
}

/// What watches a session: it receives every fact, in order, as it happens. A subscriber never
/// changes the session; the session does not know who subscribes.
pub trait Subscriber {
    /// Takes one fact.
    fn receive(&mut self, fact: &Fact);
}

/// Keeps every fact (for tests and embedding programs).
impl Subscriber for Vec<Fact> {
    fn receive(&mut self, fact: &Fact) {
        self.push(fact.clone());
    }
}

impl<S: Subscriber + ?Sized> Subscriber for &mut S {
    fn receive(&mut self, fact: &Fact) {
        (**self).receive(fact);
    }
}

/// A subscriber the caller keeps a handle on, to read what it gathered once the session is over.
impl<S: Subscriber + ?Sized> Subscriber for std::rc::Rc<std::cell::RefCell<S>> {
    fn receive(&mut self, fact: &Fact) {
        self.borrow_mut().receive(fact);
    }
}

/// Every subscriber of a session, in the order they were added.
#[derive(Default)]
pub struct Subscribers<'s> {
    list: Vec<Box<dyn Subscriber + 's>>,
}

impl<'s> Subscribers<'s> {
    /// Adds one.
    pub fn add(&mut self, subscriber: impl Subscriber + 's) {
        self.list.push(Box::new(subscriber));
    }

    /// Hands `fact` to each.
    pub fn publish(&mut self, fact: &Fact) {
        for subscriber in &mut self.list {
            subscriber.receive(fact);
        }
    }
}
