//! The summarizer the host offers every engine (services `summarizer.info` and `summarize`): a
//! model behind any OpenAI-compatible endpoint (`auxiliary.compression.*`, llm.md), grounded in the
//! facts of the built-in extractive summarizer; or that extractive summarizer alone when no model
//! is configured.
//!
//! One `summarize` call, in order:
//!
//! - the extractive summary of the messages (with the earlier summary and the focus topic) is
//!   written first: it is the answer when there is no model, and the facts grounding adds
//!   otherwise;
//! - the model gets the prompt ([`prompt`]) and answers ([`client`]); its reasoning blocks are
//!   stripped ([`think`]);
//! - an answer that is blank, has none of the template's headings (at any level, in any case, as
//!   grounding reads them), or is not shorter than its input is a failure (the engine falls back);
//! - the rest is merged with the facts ([`ground`]) within the summary's budget.
//!
//! It is not an engine and keeps no state between calls: the cool-down after failures belongs to
//! the engine that asked.

use std::{borrow::Cow, time::Instant};

use ctxhost_compressor::summary::{ExtractiveSummarizer, SummaryRequest};
use ctxhost_engine_abi::Message;
use ctxhost_engine_kit::tokens::{estimate_messages_tokens, estimate_text_tokens};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::config::{ApiKey, SummarizerSettings};

pub mod client;
pub mod ground;
pub mod prompt;
pub mod think;

pub use client::{CallError, ChatClient};

/// The smallest target length a caller may ask for, in tokens.
const MIN_TARGET_TOKENS: u64 = 64;

/// A `summarize` request (JSON from the engine).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct SummarizeRequest {
    /// The middle messages, as OpenAI JSON.
    pub messages: Vec<Message>,
    /// The pruned middle serialised for a model; built from `messages` when absent.
    #[serde(default)]
    pub transcript: Option<String>,
    /// An earlier summary's body, to update.
    #[serde(default)]
    pub previous_summary: Option<String>,
    /// What to spend about two thirds of the budget on.
    #[serde(default)]
    pub focus_topic: Option<String>,
    /// The summary's target length in tokens; a fifth of the input when absent.
    #[serde(default)]
    pub target_tokens: Option<u64>,
    /// Rough tokens of the input (messages and earlier summary); estimated when absent.
    #[serde(default)]
    pub input_tokens: Option<u64>,
}

/// A `summarize` answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SummarizeAnswer {
    /// The template body, grounded.
    pub summary: String,
    /// `model:<name>`, or `extractive`.
    pub summarizer: String,
    /// Facts grounding added to the model's summary.
    pub facts_added: u64,
}

/// The summarizer service, built once from the settings.
#[derive(Debug, Default)]
pub struct Summarizer {
    client: Option<ChatClient>,
}

impl Summarizer {
    /// A model summarizer when `settings` name a model, sending `key`; the extractive one otherwise.
    pub fn new(settings: &SummarizerSettings, key: ApiKey) -> Self {
        Self {
            client: settings.has_model().then(|| ChatClient::new(settings, key)),
        }
    }

    /// The answer of `summarizer.info`: `{"configured": bool, "model": str}`.
    pub fn info(&self) -> Value {
        json!({
            "configured": self.client.is_some(),
            "model": self.client.as_ref().map_or("", |client| client.model()),
        })
    }

    /// Summarises `request`: the model's summary grounded in the extractive facts, or the
    /// extractive summary when there is no model.
    pub fn summarize(&self, request: &SummarizeRequest) -> Result<SummarizeAnswer, CallError> {
        let previous = request
            .previous_summary
            .as_deref()
            .filter(|s| !s.trim().is_empty());
        let focus = request.focus_topic.as_deref().filter(|s| !s.trim().is_empty());
        let input_tokens = request.input_tokens.unwrap_or_else(|| {
            estimate_messages_tokens(&request.messages) + previous.map_or(0, estimate_text_tokens)
        });
        let target_tokens = request
            .target_tokens
            .unwrap_or(input_tokens / 5)
            .max(MIN_TARGET_TOKENS);
        let borrowed: Vec<Cow<'_, Message>> = request.messages.iter().map(Cow::Borrowed).collect();
        let extractive_request = SummaryRequest {
            middle: &request.messages,
            pruned_middle: &borrowed,
            previous_summary: previous,
            focus_topic: focus,
            target_tokens,
            input_tokens,
            request_follows: false,
            pinned_request_at: None,
            pinned_request: None,
            tail: &[],
            head_request: None,
        };
        // The extractive summarizer's own budget: never more than three quarters of the input.
        let facts_budget = target_tokens
            .saturating_mul(4)
            .min(input_tokens.saturating_mul(3)) as usize;
        let facts = ExtractiveSummarizer.summarize_with_limit(&extractive_request, facts_budget);
        let Some(client) = &self.client else {
            return Ok(SummarizeAnswer {
                summary: facts,
                summarizer: ExtractiveSummarizer::NAME.to_owned(),
                facts_added: 0,
            });
        };
        let name = format!("model:{}", client.model());
        let transcript = match &request.transcript {
            Some(transcript) => Cow::Borrowed(transcript.as_str()),
            None => Cow::Owned(extractive_request.transcript()),
        };
        let messages = prompt::build_prompt(&prompt::PromptInput {
            transcript: &transcript,
            previous_summary: previous,
            focus_topic: focus,
            target_tokens,
        });
        let started = Instant::now();
        let answer = client.complete(&messages)?;
        let seconds = started.elapsed().as_secs_f64();
        tracing::debug!("summarizer: {name} answered: {answer}");
        let text = think::strip_reasoning(&answer);
        check_answer(&text, input_tokens).map_err(CallError::Failed)?;
        // Room for the model beside the facts: half the facts' budget again, within the input cap.
        let max_chars = (facts_budget + facts_budget / 2).min(input_tokens.saturating_mul(3) as usize);
        let grounded = ground::ground(&text, &facts, max_chars);
        tracing::info!(
            "summarizer: {name} answered {} characters in {seconds:.1} s; grounding added {} facts",
            text.chars().count(),
            grounded.facts_added
        );
        Ok(SummarizeAnswer {
            summary: grounded.body,
            summarizer: name,
            facts_added: grounded.facts_added,
        })
    }
}

/// Refuses a useless answer (compressor.md, phase 3): blank, without any of the template's
/// headings, or not shorter than its input. The reasons are the compressor's own.
fn check_answer(text: &str, input_tokens: u64) -> Result<(), String> {
    if text.trim().is_empty() {
        return Err("the summary came back blank".to_owned());
    }
    if !ground::has_template_heading(text) {
        return Err("the summary has none of the template's headings".to_owned());
    }
    let tokens = estimate_text_tokens(text);
    if tokens >= input_tokens {
        return Err(format!(
            "the summary ({tokens} tokens) is not shorter than its input ({input_tokens} tokens)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
