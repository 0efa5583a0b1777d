//! [`HostSummarizer`]: summaries written by the host's `summarize` service.
//!
//! The host runs the model (any OpenAI-compatible endpoint, `auxiliary.compression.*` in its
//! config) and grounds what the model writes in the facts the extractive summarizer finds, so this
//! side only forwards the request and classifies the host's errors:
//!
//! - `UNAVAILABLE` → [`SummaryError::Unavailable`] (abort, context kept), or
//!   [`SummaryError::TimedOut`] when the message starts with [`TIMED_OUT`];
//! - any other error → [`SummaryError::Failed`] (fallback summary, cool-down).
//!
//! Both services are names, not interface fields: a host that does not know them answers
//! "unknown method", and the engine keeps the extractive summarizer.

use ctxhost_engine_abi::{ErrorKind, Host};
use serde_json::{json, Value};

use super::{Summarizer, SummaryError, SummaryNote, SummaryRequest};

/// Host service: `null` → `{"configured": bool, "model": str}`.
pub const SERVICE_INFO: &str = "summarizer.info";

/// Host service: `{"messages", "transcript", "previous_summary", "focus_topic", "target_tokens",
/// "input_tokens"}` → `{"summary", "summarizer", "facts_added"}`.
pub const SERVICE_SUMMARIZE: &str = "summarize";

pub use ctxhost_engine_kit::pacing::TIMED_OUT;

/// A summarizer that asks the host's `summarize` service.
pub struct HostSummarizer {
    host: Host,
    name: String,
    note: Option<SummaryNote>,
}

impl HostSummarizer {
    /// The host's model summarizer, when its `summarizer.info` says a model is configured; `None`
    /// for a host without a model, or one that does not know the service.
    pub fn from_host(host: &Host) -> Option<Self> {
        let info = host.call(SERVICE_INFO, &Value::Null).ok()?;
        if info.get("configured").and_then(Value::as_bool) != Some(true) {
            return None;
        }
        let model = info.get("model").and_then(Value::as_str).unwrap_or("");
        Some(Self {
            host: host.clone(),
            name: format!("model:{model}"),
            note: None,
        })
    }

    /// The JSON request the `summarize` service takes.
    pub fn request_json(request: &SummaryRequest<'_>) -> Value {
        json!({
            "messages": request.middle,
            "transcript": request.transcript(),
            "previous_summary": request.previous_summary,
            "focus_topic": request.focus_topic,
            "target_tokens": request.target_tokens,
            "input_tokens": request.input_tokens,
        })
    }
}

impl Summarizer for HostSummarizer {
    fn summarize(&mut self, request: &SummaryRequest<'_>) -> Result<String, SummaryError> {
        self.note = None;
        let answer = self
            .host
            .call(SERVICE_SUMMARIZE, &Self::request_json(request))
            .map_err(|error| {
                let message = error.message.into_string();
                match error.kind {
                    ErrorKind::UNAVAILABLE if message.starts_with(TIMED_OUT) => {
                        SummaryError::TimedOut(message)
                    }
                    ErrorKind::UNAVAILABLE => SummaryError::Unavailable(message),
                    _ => SummaryError::Failed(message),
                }
            })?;
        let Some(summary) = answer.get("summary").and_then(Value::as_str) else {
            return Err(SummaryError::Failed(
                "the host's `summarize` answer has no `summary`".to_owned(),
            ));
        };
        self.note = Some(SummaryNote {
            written_by: answer
                .get("summarizer")
                .and_then(Value::as_str)
                .unwrap_or(&self.name)
                .to_owned(),
            facts_added: answer.get("facts_added").and_then(Value::as_u64).unwrap_or(0),
        });
        Ok(summary.to_owned())
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn take_note(&mut self) -> Option<SummaryNote> {
        self.note.take()
    }
}
