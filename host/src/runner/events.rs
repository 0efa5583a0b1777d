//! The replay's event log: one [`Event`] for each thing that happened, in order, handed to an
//! [`EventSink`] as the replay goes (`--events FILE` writes them as JSON lines).
//!
//! Every event is a JSON object whose `"event"` key names its kind and whose `"message_index"` is
//! the 0-based index of the transcript message being handled when it happened; an event between
//! messages (a command scripted with `--at N`, the end of the session) carries the index of the
//! next message, which is the transcript's length at the end.
//!
//! Kinds, in the order a replay can produce them:
//! - `session_start`: the engine, model, window, threshold and tools; again after `/new`, with
//!   `boundary_reason` and `old_session_id`;
//! - `warning`: something the host refused at start (a duplicate tool name);
//! - `command`: `/compress [focus]`, `/new` or `/reset`, typed in the transcript or given by flag;
//! - `model_call`: the context the model would receive before an assistant message;
//! - `usage`: what `update_from_response` was given, and where it came from;
//! - `tool_dispatch`: an engine tool called live, its answer against the recorded one;
//! - `compaction`: what fired it, tokens and messages before and after, the engine's account;
//! - `error`: an engine failure, contained;
//! - `session_end`: `on_session_end` with the session's final context (at the end, and before a
//!   `/new`).

use serde::Serialize;
use serde_json::Value;

use super::{
    script::{CommandSource, SessionCommand},
    tools::ToolDispatch,
    CompactionRecord, Outcome,
};

/// Where a usage figure came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageSource {
    /// The transcript recorded it. It describes the original run's context, which the engine
    /// under test may have compacted differently.
    Recorded,
    /// The host estimated it from the replayed context with its token counter.
    Estimated,
}

/// One thing that happened during a replay.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
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
        /// What failed.
        message: String,
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
}

impl Event {
    /// The kind, as the `"event"` key spells it.
    pub fn kind(&self) -> &'static str {
        match self {
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

/// Where a replay's events go, as they happen.
pub trait EventSink {
    /// Takes one event.
    fn record(&mut self, event: &Event);
}

/// Drops every event.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoEvents;

impl EventSink for NoEvents {
    fn record(&mut self, _event: &Event) {}
}

/// Keeps every event (for tests and embedding programs).
impl EventSink for Vec<Event> {
    fn record(&mut self, event: &Event) {
        self.push(event.clone());
    }
}

impl<S: EventSink + ?Sized> EventSink for &mut S {
    fn record(&mut self, event: &Event) {
        (**self).record(event);
    }
}
