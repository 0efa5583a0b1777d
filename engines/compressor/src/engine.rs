//! [`Compressor`]: the `Engine` implementation, its counters, the pause and the cool-down.

use std::time::Instant;

use ctxhost_engine_abi::{
    default_status, CompressRequest, Counters, Engine, EngineError, Host, Message, ModelInfo, Usage,
};
use ctxhost_engine_kit::{release::release_in_background, tokens::estimate_reaches};
use serde_json::{json, Value};

use crate::{
    compact::{compact, has_content, Ask, Settings},
    config::{Budgets, CompressorConfig},
    pacing::{AntiThrash, Cooldown, FailureKind},
    report::{CompactionReport, Outcome},
    summary::{ExtractiveSummarizer, HostSummarizer, Summarizer, SummaryError},
};

/// `call_ext` name: lift the anti-thrash pause (the host calls it before a manual `/compress`).
pub const EXT_RESUME_AUTO_COMPACTION: &str = "resume_auto_compaction";
/// `call_ext` name: the [`CompactionReport`] of the last `compress`, or `null`.
pub const EXT_LAST_COMPACTION: &str = "last_compaction";
/// `call_ext` name: the current [`Budgets`].
pub const EXT_BUDGETS: &str = "budgets";

/// The built-in context engine (`compressor`): prunes old tool output, keeps a head and a tail,
/// and replaces the middle with a structured summary (compressor.md).
pub struct Compressor {
    config: CompressorConfig,
    counters: Counters,
    budgets: Budgets,
    summarizer: Box<dyn Summarizer>,
    remembered_summary: Option<String>,
    thrash: AntiThrash,
    cooldown: Cooldown,
    last_report: Option<CompactionReport>,
}

impl Compressor {
    /// An engine with `config` and the extractive summarizer, without a host (tests, benchmarks).
    /// The config is used as given; call [`CompressorConfig::validate`] first to refuse
    /// impossible values.
    pub fn with_config(config: CompressorConfig) -> Self {
        Self::with_summarizer(config, Box::new(ExtractiveSummarizer))
    }

    /// An engine with `config` that asks `summarizer` for its summaries (the extractive one stays
    /// the fallback).
    pub fn with_summarizer(config: CompressorConfig, summarizer: Box<dyn Summarizer>) -> Self {
        Self {
            config,
            counters: Counters::default(),
            budgets: Budgets::default(),
            summarizer,
            remembered_summary: None,
            thrash: AntiThrash::default(),
            cooldown: Cooldown::default(),
            last_report: None,
        }
    }

    /// The settings in use.
    pub fn config(&self) -> &CompressorConfig {
        &self.config
    }

    /// The token budgets for the current model (all 0 until `update_model`).
    pub fn budgets(&self) -> Budgets {
        self.budgets
    }

    /// The report of the last `compress`.
    pub fn last_compaction(&self) -> Option<&CompactionReport> {
        self.last_report.as_ref()
    }

    /// Whether automatic compaction is paused by the anti-thrash rule.
    pub fn is_paused(&self) -> bool {
        self.thrash.is_paused()
    }

    /// Lifts the anti-thrash pause; returns whether it was paused.
    pub fn resume_auto_compaction(&mut self) -> bool {
        self.thrash.resume()
    }

    /// Ends the summarizer's cool-down now, as if its time had passed.
    #[cfg(test)]
    pub(crate) fn expire_cooldown_for_test(&mut self) {
        self.cooldown.expire();
    }

    fn automatic_allowed(&self) -> bool {
        self.config.enabled && !self.thrash.is_paused() && self.counters.threshold_tokens > 0
    }
}

/// What one compaction works with; a function over fields (not `&self`) so that the summarizer can
/// be borrowed mutably beside it.
fn settings<'a>(
    config: &'a CompressorConfig,
    budgets: Budgets,
    remembered_summary: Option<&'a str>,
    request: &'a CompressRequest,
) -> Settings<'a> {
    Settings {
        config,
        budgets,
        current_tokens: request.current_tokens,
        focus_topic: request
            .focus_topic
            .as_deref()
            .filter(|focus| !focus.trim().is_empty()),
        remembered_summary,
    }
}

impl Engine for Compressor {
    const NAME: &'static str = "compressor";

    /// Uses the host's model summarizer when its `summarizer.info` service says one is configured,
    /// the extractive summarizer otherwise (and with a host that does not know the service).
    fn new(config: &Value, host: Host) -> Result<Self, EngineError> {
        let config = CompressorConfig::from_json(config)
            .map_err(|problem| EngineError::config(problem.to_string()))?;
        config
            .validate()
            .map_err(|problem| EngineError::config(problem.to_string()))?;
        let summarizer: Box<dyn Summarizer> = match HostSummarizer::from_host(&host) {
            Some(model) => {
                tracing::info!("compressor: summaries are written by the host's {}", model.name());
                Box::new(model)
            }
            None => Box::new(ExtractiveSummarizer),
        };
        Ok(Self::with_summarizer(config, summarizer))
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn counters_mut(&mut self) -> &mut Counters {
        &mut self.counters
    }

    fn compress(
        &mut self,
        messages: Vec<Message>,
        request: &CompressRequest,
    ) -> Result<Vec<Message>, EngineError> {
        let compacted = self.compact_borrowed(&messages, request)?;
        Ok(match compacted {
            Some(compacted) => {
                release_in_background(messages, "compressor-drop");
                compacted
            }
            None => messages,
        })
    }

    fn compress_borrowed(
        &mut self,
        messages: &[Message],
        request: &CompressRequest,
    ) -> Result<Vec<Message>, EngineError> {
        // Unchanged is rare (nothing to compact); the copy is then the host's to compare.
        Ok(self
            .compact_borrowed(messages, request)?
            .unwrap_or_else(|| messages.to_vec()))
    }

    fn threshold_percent(&self) -> f64 {
        self.config.threshold
    }

    fn update_from_response(&mut self, usage: &Usage) {
        self.thrash.on_usage(&mut self.counters, usage);
    }

    fn should_compress(&mut self, prompt_tokens: Option<u64>) -> bool {
        let tokens = prompt_tokens.unwrap_or(self.counters.last_prompt_tokens);
        self.automatic_allowed() && tokens >= self.counters.threshold_tokens
    }

    fn should_compress_preflight(&mut self, messages: &[Message]) -> bool {
        self.automatic_allowed() && estimate_reaches(messages, self.counters.threshold_tokens)
    }

    /// The same answer without reading the messages: `rough_tokens` is the estimate
    /// [`estimate_reaches`] compares (counting it before every model call of a long replay was
    /// its character counts' largest share).
    fn should_compress_preflight_estimated(&mut self, _messages: &[Message], rough_tokens: u64) -> bool {
        self.automatic_allowed() && rough_tokens >= self.counters.threshold_tokens
    }

    fn has_content_to_compress(&mut self, messages: &[Message]) -> bool {
        let request = CompressRequest::default();
        has_content(
            messages,
            &settings(
                &self.config,
                self.budgets,
                self.remembered_summary.as_deref(),
                &request,
            ),
        )
    }

    fn on_session_reset(&mut self) {
        self.counters = Counters {
            threshold_tokens: self.counters.threshold_tokens,
            context_length: self.counters.context_length,
            ..Counters::default()
        };
        self.remembered_summary = None;
        self.thrash.resume();
        self.cooldown = Cooldown::default();
    }

    fn update_model(&mut self, model: &ModelInfo) {
        self.budgets = Budgets::compute(&self.config, model);
        self.counters.context_length = self.budgets.context_length;
        self.counters.threshold_tokens = self.budgets.threshold_tokens;
        if self.thrash.resume() {
            tracing::info!("automatic compaction resumed: the model changed");
        }
    }

    fn get_status(&self) -> Value {
        let now = Instant::now();
        let mut status = default_status(&self.counters);
        let extra = json!({
            "engine": Self::NAME,
            "enabled": self.config.enabled,
            "paused": self.thrash.is_paused(),
            "ineffective_streak": self.thrash.streak(),
            "summarizer": self.summarizer.name(),
            "cooldown_until": self.cooldown.until_unix_secs(now),
            "cooldown_remaining_s": self.cooldown.remaining_secs(now),
            "last_summarizer_failure": self.cooldown.reason(),
            "window": self.budgets.window,
            "tail_token_budget": self.budgets.tail_token_budget,
            // A model is asked for at most the first; the extractive summary may fill the
            // second with the facts it lists (a 3,300-token summary beside a maximum of 800 read
            // as a contradiction).
            "max_model_summary_tokens": self.budgets.max_summary_tokens,
            "summary_room_tokens": self.budgets.summary_room_tokens,
            "has_summary": self.remembered_summary.is_some(),
            "last_outcome": self.last_report.as_ref().map(|report| report.outcome),
        });
        if let (Value::Object(status), Value::Object(extra)) = (&mut status, extra) {
            status.extend(extra);
        }
        status
    }

    fn call_ext(&mut self, method: &str, _request: &Value) -> Result<Value, EngineError> {
        match method {
            EXT_RESUME_AUTO_COMPACTION => {
                let was_paused = self.resume_auto_compaction();
                Ok(json!({ "paused": false, "was_paused": was_paused }))
            }
            EXT_LAST_COMPACTION => Ok(serde_json::to_value(&self.last_report).unwrap_or(Value::Null)),
            EXT_BUDGETS => Ok(serde_json::to_value(self.budgets).unwrap_or(Value::Null)),
            _ => Err(EngineError::unknown_method(method)),
        }
    }

    fn ext_methods(&self) -> Vec<&'static str> {
        vec![EXT_RESUME_AUTO_COMPACTION, EXT_LAST_COMPACTION, EXT_BUDGETS]
    }
}

impl Compressor {
    /// One compaction of `messages`, with the engine's bookkeeping (counters, pause, cool-down,
    /// report); `None` when the context stays as it was.
    fn compact_borrowed(
        &mut self,
        messages: &[Message],
        request: &CompressRequest,
    ) -> Result<Option<Vec<Message>>, EngineError> {
        let now = Instant::now();
        let settings = settings(
            &self.config,
            self.budgets,
            self.remembered_summary.as_deref(),
            request,
        );
        let ask = if self.cooldown.is_active(now) {
            Ask::Skip {
                name: self.summarizer.name(),
                reason: format!(
                    "the summarizer is cooling down for {} s after: {}",
                    self.cooldown.remaining_secs(now),
                    self.cooldown.reason().unwrap_or("a failure")
                ),
            }
        } else {
            Ask::Summarizer(self.summarizer.as_mut())
        };
        let compaction = compact(messages, &settings, ask);
        let mut report = compaction.report;
        match report.outcome {
            Outcome::Compacted | Outcome::Fallback => {
                match &compaction.failure {
                    Some(failure) => {
                        let pause =
                            self.cooldown
                                .on_failure(Instant::now(), failure.reason(), FailureKind::Failed);
                        tracing::warn!(
                            "compressor: {failure}; used the fallback summary, next try in {} s",
                            pause.as_secs()
                        );
                    }
                    None if report.outcome == Outcome::Compacted => self.cooldown.on_success(),
                    None => {}
                }
                self.counters.compression_count += 1;
                self.thrash.on_compacted();
                self.remembered_summary = compaction.summary_body;
                tracing::info!(
                    "compressor: compacted {} messages into a summary ({} → {} tokens, {:.2} ms)",
                    report.middle_messages,
                    report.tokens_before,
                    report.tokens_after,
                    report.duration_ms
                );
            }
            Outcome::NothingToCompress => {
                self.thrash.on_ineffective();
                tracing::info!(
                    "compressor: nothing to compress: {}",
                    report.reason.as_deref().unwrap_or("")
                );
            }
            Outcome::Aborted => {
                self.thrash.on_ineffective();
                let mut reason = report.reason.clone().unwrap_or_default();
                if let Some(SummaryError::TimedOut(why)) = &compaction.failure {
                    // The cool-down counts from the end of the attempt, which took the whole timeout.
                    let pause = self
                        .cooldown
                        .on_failure(Instant::now(), why, FailureKind::Timeout);
                    reason.push_str(&format!(
                        "; not asked again for {} s (the fallback summary is used meanwhile)",
                        pause.as_secs()
                    ));
                }
                tracing::warn!("compressor: compaction aborted, context kept: {reason}");
                report.reason = Some(reason.clone());
                self.last_report = Some(report);
                return Err(EngineError::unavailable(format!(
                    "the {} summarizer cannot be reached ({reason}); the context was kept as it was",
                    self.summarizer.name()
                )));
            }
        }
        self.last_report = Some(report);
        Ok(compaction.messages)
    }
}
