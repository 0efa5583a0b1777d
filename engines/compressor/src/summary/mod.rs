//! Phase 3: summarising the middle of the conversation.
//!
//! Every summarizer sits behind [`Summarizer`], so the engine does not care whether the summary
//! comes from a model or from the built-in [`ExtractiveSummarizer`]. The engine:
//!
//! - hands it a [`SummaryRequest`] (the middle before and after pruning, an earlier summary to
//!   update, the focus topic, the target length);
//! - checks the answer with [`check_summary`] (blank, no template heading, or not shorter than its
//!   input is a failure);
//! - on [`SummaryError::Unavailable`] or [`SummaryError::TimedOut`] aborts and keeps the context;
//!   on any other failure uses the extractive summary as a fallback, capped at
//!   [`FALLBACK_MAX_CHARS`].
//!
//! A model summarizer lives in the host and is reached through its `summarize` service
//! ([`HostSummarizer`]); the host grounds the model's summary in the facts the extractive
//! summarizer finds, so they survive whatever the model writes.

use std::{borrow::Cow, fmt};

use ctxhost_engine_abi::{Message, Role};

mod actions;
mod draft;
mod extractive;
pub(crate) mod facts;
mod host;
mod patterns;
mod previous;
mod quoted;
mod sections;
#[cfg(test)]
mod tests;

pub use extractive::ExtractiveSummarizer;
pub use host::{HostSummarizer, SERVICE_INFO, SERVICE_SUMMARIZE, TIMED_OUT};
pub use sections::{Section, ITEM_LABELS, PRINTED_BY, TEMPLATE_HEADINGS};

/// The fixed marker every summary message starts with; a later compaction recognises it.
pub const SUMMARY_MARKER: &str = "[CONTEXT COMPACTION]";

/// The line that ends a summary merged into the first tail message; the message's own text
/// follows it.
pub const SUMMARY_END: &str = "[END OF CONTEXT COMPACTION — the original message follows]";

/// The longest fallback summary, in characters.
pub const FALLBACK_MAX_CHARS: usize = 8_000;

/// Bodies longer than this are cut for a model to read (compressor.md, phase 3)…
const SERIALISED_BODY_MAX_CHARS: usize = 6_000;
/// …keeping this many characters from the start…
const SERIALISED_HEAD_CHARS: usize = 4_000;
/// …and this many from the end.
const SERIALISED_TAIL_CHARS: usize = 1_500;

/// Writes summaries of the middle of a conversation.
///
/// Implementations must be deterministic about failure: return [`SummaryError::Unavailable`]
/// only when the service cannot be reached at all (nothing is replaced then), and
/// [`SummaryError::Failed`] for anything else (a fallback summary is used).
pub trait Summarizer: Send {
    /// The body of the summary (the template's sections, without the marker line).
    fn summarize(&mut self, request: &SummaryRequest<'_>) -> Result<String, SummaryError>;

    /// Like [`summarize`](Summarizer::summarize), with `room_tokens` (more than the target) that
    /// the facts a summary lists verbatim may fill: the engine took it from the tail. Summarizers
    /// that write prose keep to the target (the default).
    fn summarize_with_room(
        &mut self,
        request: &SummaryRequest<'_>,
        room_tokens: u64,
    ) -> Result<String, SummaryError> {
        let _ = room_tokens;
        self.summarize(request)
    }

    /// A short name for reports and status, e.g. `extractive`.
    fn name(&self) -> &str;

    /// Whether it reads [`SummaryRequest::pruned_middle`] (a model does; the extractive
    /// summarizer reads the messages themselves). When false, phase 1 only counts what it would
    /// prune and the pruned middle is left empty, which saves most of its cost.
    fn reads_transcript(&self) -> bool {
        true
    }

    /// What the last successful [`summarize`](Summarizer::summarize) says about its summary (who
    /// wrote it, facts added by grounding), taken once. `None` when there is nothing to add to the
    /// summarizer's [name](Summarizer::name).
    fn take_note(&mut self) -> Option<SummaryNote> {
        None
    }
}

/// A summarizer's account of the summary it just returned, for the compaction report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SummaryNote {
    /// Who wrote it: `model:<name>`, or `extractive` when the host had no model.
    pub written_by: String,
    /// Facts of the extractive summarizer merged into the model's summary (grounding).
    pub facts_added: u64,
}

/// What a summarizer is asked to summarise.
#[derive(Clone, Debug)]
pub struct SummaryRequest<'a> {
    /// The middle as it was, before phase 1 (earlier summaries taken out). The extractive
    /// summarizer reads this, so that nothing pruned is lost to it.
    pub middle: &'a [Message],
    /// The same messages after phase 1 (stand-ins, shortened arguments): what a model reads.
    /// Empty when the summarizer does not [read it](Summarizer::reads_transcript).
    pub pruned_middle: &'a [Cow<'a, Message>],
    /// The body of an earlier summary to update rather than to start over.
    pub previous_summary: Option<&'a str>,
    /// From a manual `/compress <focus>`: spend about two thirds of the budget on it.
    pub focus_topic: Option<&'a str>,
    /// The summary's target length in rough tokens.
    pub target_tokens: u64,
    /// Rough tokens of the input (the middle plus any earlier summary); a summary must be shorter.
    pub input_tokens: u64,
    /// The tail holds a request of the user's: no request the summary lists, its own or an
    /// earlier summary's, is still in progress.
    pub request_follows: bool,
    /// Where in the middle the user's newest request stood before it was kept verbatim after the
    /// head: the work after it is for that request, and the requests before it are settled.
    pub pinned_request_at: Option<usize>,
    /// That request, kept verbatim after the head: what it says blocks the work holds the
    /// failures before it (`Blocked: acme-grpc-client needs a tokio-1 release`).
    pub pinned_request: Option<&'a Message>,
    /// The messages kept verbatim after the summary (empty when there are none, or for a
    /// summarizer given the middle alone): a success there settles the failures of the middle it
    /// retries, and what the user says there blocks the work holds them.
    pub tail: &'a [Message],
    /// The user's request the head keeps verbatim, when the head holds no reply to it: a reply
    /// before the middle's first request may answer it.
    pub head_request: Option<&'a Message>,
}

impl SummaryRequest<'_> {
    /// The pruned middle serialised for a model: `[USER]: …`, `[ASSISTANT]: …` with tool calls as
    /// `name(args)`, `[TOOL RESULT <id>]: …`; bodies over 6,000 characters keep their first 4,000
    /// and last 1,500.
    pub fn transcript(&self) -> String {
        let mut out = String::new();
        for message in self.pruned_middle {
            let text = message.text();
            match message.role {
                Role::Tool => {
                    let id = message.tool_call_id.as_deref().unwrap_or("?");
                    out.push_str(&format!("[TOOL RESULT {id}]: "));
                }
                role => out.push_str(&format!("[{}]: ", role.as_str().to_ascii_uppercase())),
            }
            out.push_str(&cut_body(&text));
            for call in message.calls() {
                out.push_str(&format!("\n{}({})", call.function.name, call.function.arguments));
            }
            out.push_str("\n\n");
        }
        out
    }
}

/// `text`, or its first 4,000 and last 1,500 characters when it is over 6,000.
pub(crate) fn cut_body(text: &str) -> Cow<'_, str> {
    // Byte length bounds the character count from above: most bodies skip the count.
    if text.len() <= SERIALISED_BODY_MAX_CHARS {
        return Cow::Borrowed(text);
    }
    let chars = text.chars().count();
    if chars <= SERIALISED_BODY_MAX_CHARS {
        return Cow::Borrowed(text);
    }
    let head_end = text
        .char_indices()
        .nth(SERIALISED_HEAD_CHARS)
        .map_or(text.len(), |(at, _)| at);
    let tail_start = text
        .char_indices()
        .nth(chars - SERIALISED_TAIL_CHARS)
        .map_or(text.len(), |(at, _)| at);
    let omitted = chars - SERIALISED_HEAD_CHARS - SERIALISED_TAIL_CHARS;
    Cow::Owned(format!(
        "{}\n…[{omitted} characters omitted]…\n{}",
        &text[..head_end],
        &text[tail_start..]
    ))
}

/// Why a summarizer produced no summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SummaryError {
    /// The summarizer cannot be reached (authentication refused, no connection, timeout): abort
    /// the compaction and keep the context as it is.
    Unavailable(String),
    /// The summarizer did not answer in time: abort like [`Unavailable`](Self::Unavailable), and
    /// also leave it alone for a while (60 s, then 300 s, then 900 s on repeated timeouts), since
    /// each attempt stalls the agent for the whole timeout.
    TimedOut(String),
    /// Any other failure (a server error, a malformed or useless answer): use the fallback summary
    /// and cool down before asking again.
    Failed(String),
}

impl fmt::Display for SummaryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unavailable(reason) => write!(f, "summarizer unavailable: {reason}"),
            Self::TimedOut(reason) => write!(f, "summarizer unavailable: {reason}"),
            Self::Failed(reason) => write!(f, "summarizer failed: {reason}"),
        }
    }
}

impl SummaryError {
    /// Whether the compaction must abort, keeping the context as it is.
    pub fn aborts(&self) -> bool {
        matches!(self, Self::Unavailable(_) | Self::TimedOut(_))
    }

    /// Why, without the class.
    pub fn reason(&self) -> &str {
        match self {
            Self::Unavailable(reason) | Self::TimedOut(reason) | Self::Failed(reason) => reason,
        }
    }
}

impl std::error::Error for SummaryError {}

/// Checks a summary body: it must not be blank, must have at least one template heading, and must
/// be shorter (in rough tokens) than `input_tokens`.
pub fn check_summary(body: &str, input_tokens: u64) -> Result<(), SummaryError> {
    if body.trim().is_empty() {
        return Err(SummaryError::Failed("the summary came back blank".to_owned()));
    }
    if !TEMPLATE_HEADINGS.iter().any(|heading| body.contains(heading)) {
        return Err(SummaryError::Failed(
            "the summary has none of the template's headings".to_owned(),
        ));
    }
    let tokens = ctxhost_engine_kit::tokens::estimate_text_tokens(body);
    if tokens >= input_tokens {
        return Err(SummaryError::Failed(format!(
            "the summary ({tokens} tokens) is not shorter than its input ({input_tokens} tokens)"
        )));
    }
    Ok(())
}

/// Whether `text` begins with a compaction summary (standalone or merged into a message).
pub fn is_summary_text(text: &str) -> bool {
    text.trim_start().starts_with(SUMMARY_MARKER)
}

/// The body of a summary message's text: what follows the marker line, up to [`SUMMARY_END`] when
/// the summary was merged into another message. `None` when `text` is not a summary.
pub fn summary_body(text: &str) -> Option<&str> {
    let text = text.trim_start();
    let rest = text.strip_prefix(SUMMARY_MARKER)?;
    let rest = rest.split_once(SUMMARY_END).map_or(rest, |(summary, _)| summary);
    // The marker line carries the preamble; the body starts on the next line.
    let body = rest.split_once('\n').map_or("", |(_, body)| body);
    Some(body.trim())
}
