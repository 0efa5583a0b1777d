//! `masking`: a context engine that compacts by *observation masking*.
//!
//! Tool outputs older than a window of the most recent tool results are replaced by one-line
//! stand-ins that say what the call did (``[terminal] ran `pytest -q` -> exit 1, 214 lines
//! output``); nothing is summarised and no model is called. System, user and assistant messages
//! and every tool call stay as they were (but for long argument values), so the sequence stays
//! valid by construction.
//! Published agent experiments found this as effective as LLM summarisation at about half the
//! cost (Lindenbauer et al. 2025, "The Complexity Trap: Simple Observation Masking Is as Efficient
//! as LLM Summarization for Agent Context Management").
//!
//! The main type is [`Masking`], an [`Engine`]; [`MaskingConfig`] is its `masking:` block in
//! `config.yaml`. The plugin library is the separate `ctxhost-masking-plugin` crate. This crate is
//! not for conversations whose bulk is prose: it only ever shrinks tool output and the long
//! values of tool calls' arguments.
//!
//! # How `compress` works
//!
//! - Tool results are counted from the end; the last `keep_last` are kept verbatim.
//! - Every older result of at least `min_chars` characters (or holding an image) becomes the
//!   stand-in `kit::stand_in` builds from the call that produced it. Outputs that already are
//!   stand-ins are recognised and left alone, so compressing twice changes nothing.
//! - With `mask_arguments` (the default), every string value of at least `min_argument_chars`
//!   characters in an older call's arguments becomes `[masked: N chars]`: a session that writes
//!   its files through calls (`write_file`) otherwise keeps every file it wrote. Keys and shorter
//!   values (the path, a command) stay, and the arguments stay JSON. Arguments that are not JSON
//!   (Codex's `apply_patch` patch) keep their first two lines (`*** Add File: docs/cli.md`).
//! - If the rough estimate (scaled up to `current_tokens` when the host gives a larger real
//!   count) is still at or over the threshold, the window is halved, down to 1, until it fits:
//!   compaction must make progress. The newest tool result is always kept.
//! - Two compactions in a row that mask nothing pause automatic compaction, as the compressor's
//!   anti-thrash rule does: `should_compress` says no until a reported prompt fits under the
//!   threshold, the session resets, the model changes, or the host calls
//!   `resume_auto_compaction` (a manual `/compress`). The preflight, which sees the messages,
//!   still says yes once an output is left to mask.
//!
//! # Example
//!
//! ```
//! use ctxhost_engine_abi::{CompressRequest, Engine, Host, Message, ModelInfo, ToolCall};
//! use ctxhost_masking::Masking;
//! use serde_json::json;
//!
//! let mut engine = Masking::new(&json!({ "keep_last": 1 }), Host::detached()).unwrap();
//! engine.update_model(&ModelInfo { context_length: 100_000, ..ModelInfo::default() });
//! let messages = vec![
//!     Message::user("fix the tests"),
//!     Message::assistant_calls(vec![ToolCall::new("c1", "terminal", r#"{"command":"pytest -q"}"#)]),
//!     Message::tool("c1", "E   assert 1 == 2\n".repeat(40) + "Exit code: 1"),
//!     Message::assistant_calls(vec![ToolCall::new("c2", "read_file", r#"{"path":"src/app.py"}"#)]),
//!     Message::tool("c2", "x".repeat(500)),
//! ];
//! let compacted = engine.compress(messages, &CompressRequest::default()).unwrap();
//! assert_eq!(compacted[2].text(), "[terminal] ran `pytest -q` -> exit 1, 41 lines output");
//! assert_eq!(compacted[4].text(), "x".repeat(500));
//! ```
#![forbid(unsafe_code)]

mod config;
mod mask;
#[cfg(test)]
mod tests;

use ctxhost_engine_abi::{
    default_status, CompressRequest, Counters, Engine, EngineError, Host, Message, ModelInfo, SessionInfo,
    Usage,
};
use ctxhost_engine_kit::{pacing::AntiThrash, stand_in::group_thousands, tokens};
use serde_json::{json, Value};

pub use config::MaskingConfig;
pub use mask::is_stand_in;

/// Engine extension: lift the anti-thrash pause (the host calls it before a manual `/compress`).
pub const EXT_RESUME_AUTO_COMPACTION: &str = "resume_auto_compaction";
/// Engine extension: the last compaction's account (the host's report shows its `reason`).
pub const EXT_LAST_COMPACTION: &str = "last_compaction";

/// The observation-masking engine (`context.engine: masking`).
pub struct Masking {
    config: MaskingConfig,
    counters: Counters,
    /// Tool outputs masked since the session started (or was reset).
    masked_outputs: u64,
    /// Pauses automatic compaction after two that masked nothing: a session over the threshold on
    /// prose alone made Hermes send the whole context for nothing after every response
    /// (explore-hermes FINDINGS.md, finding 3).
    thrash: AntiThrash,
    /// What the last `compress` did, for [`EXT_LAST_COMPACTION`].
    last_compaction: Option<Value>,
}

impl Masking {
    /// An engine with already validated settings.
    pub fn with_config(config: MaskingConfig) -> Result<Self, EngineError> {
        config.validate()?;
        Ok(Self {
            config,
            counters: Counters::default(),
            masked_outputs: 0,
            thrash: AntiThrash::default(),
            last_compaction: None,
        })
    }

    /// The settings in force.
    pub fn config(&self) -> &MaskingConfig {
        &self.config
    }

    /// The window to keep for `messages`: `keep_last`, halved until the masked sequence's
    /// estimate falls under the threshold, never below 1.
    fn choose_window(&self, candidates: &[mask::Mask], result_count: usize, estimate: Estimate) -> usize {
        let threshold = self.counters.threshold_tokens;
        let mut keep = self.config.keep_last;
        loop {
            let saved: u64 = mask::outside_window(candidates, result_count, keep)
                .iter()
                .map(|mask| mask.saved_tokens)
                .sum();
            // No threshold yet (update_model not called): keep the configured window.
            if threshold == 0 || keep == 1 || estimate.after_saving(saved) < threshold {
                return keep;
            }
            keep /= 2;
        }
    }
}

/// The rough estimate of a context, optionally scaled to a real count the host reported.
#[derive(Clone, Copy, Debug)]
struct Estimate {
    rough: u64,
    /// Real tokens per rough token, ≥ 1. The rough rule under-counts JSON and logs by 16–44%
    /// (compressor.md), so when the host gives a larger real count we trust it; we never scale
    /// down, which would stop the window from shrinking when it must.
    scale: f64,
}

impl Estimate {
    fn of(messages: &[Message], current_tokens: Option<u64>) -> Self {
        let rough = tokens::estimate_messages_tokens(messages);
        let scale = match current_tokens {
            Some(real) if rough > 0 && real > rough => real as f64 / rough as f64,
            _ => 1.0,
        };
        Self { rough, scale }
    }

    fn after_saving(self, saved: u64) -> u64 {
        (self.rough.saturating_sub(saved) as f64 * self.scale).ceil() as u64
    }
}

impl Engine for Masking {
    const NAME: &'static str = "masking";

    fn new(config: &Value, _host: Host) -> Result<Self, EngineError> {
        Self::with_config(MaskingConfig::from_json(config)?)
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn counters_mut(&mut self) -> &mut Counters {
        &mut self.counters
    }

    fn threshold_percent(&self) -> f64 {
        self.config.threshold
    }

    fn compress(
        &mut self,
        mut messages: Vec<Message>,
        request: &CompressRequest,
    ) -> Result<Vec<Message>, EngineError> {
        let estimate = Estimate::of(&messages, request.current_tokens);
        let (candidates, result_count) = mask::find_mask_candidates(&messages, &self.config);
        let keep = self.choose_window(&candidates, result_count, estimate);
        let masks = mask::outside_window(&candidates, result_count, keep);
        let saved: u64 = masks.iter().map(|mask| mask.saved_tokens).sum();
        mask::apply_masks(&mut messages, masks);

        self.masked_outputs += masks.len() as u64;
        // Only a compaction that masked something counts: Hermes warns "Session compressed N
        // times" from this count, and counting calls that changed nothing made it warn after two
        // real ones (explore-hermes FINDINGS.md, finding 3).
        if masks.is_empty() {
            self.thrash.on_ineffective();
        } else {
            self.counters.compression_count += 1;
            self.thrash.on_compacted();
        }
        tracing::debug!(
            "masked {} of {result_count} tool outputs, keeping the last {keep} (configured {}); \
             ~{} -> ~{} rough tokens",
            masks.len(),
            self.config.keep_last,
            estimate.rough,
            estimate.rough - saved,
        );
        let after = estimate.after_saving(saved);
        let threshold = self.counters.threshold_tokens;
        let mut details = json!({ "masked_outputs": masks.len(), "kept_whole": keep });
        if threshold > 0 && after >= threshold {
            // Why masking cannot bring this context under the threshold, so that a user knows
            // what to change: the results it keeps whole, or the rest, which it never shortens.
            let kept = mask::newest_results_tokens(&messages, keep);
            let tokens = |n: u64| group_thousands(n as usize);
            // A window cut down to the newest result is no setting to lower: masking always
            // keeps that one.
            let results = match (keep, keep == self.config.keep_last) {
                (1, _) => "the newest tool result, which masking always keeps whole, holds".to_owned(),
                (n, true) => format!("the {n} newest tool results, kept whole (keep_last: {n}), hold"),
                (n, false) => format!(
                    "the {n} newest tool results, kept whole (keep_last: {}, cut to {n}), hold",
                    self.config.keep_last
                ),
            };
            let reason = format!(
                "still ~{} tokens, at or over the threshold of {}: {results} ~{}; the messages, \
                 calls and stand-ins, which masking never shortens, ~{}",
                tokens(after),
                tokens(threshold),
                tokens(kept),
                tokens(after.saturating_sub(kept)),
            );
            tracing::debug!("{reason}");
            details["reason"] = reason.into();
        }
        self.last_compaction = Some(details);
        Ok(messages)
    }

    fn update_from_response(&mut self, usage: &Usage) {
        self.thrash.on_usage(&mut self.counters, usage);
    }

    /// At or over the threshold, unless paused: without the messages it cannot tell whether an
    /// output is left to mask.
    fn should_compress(&mut self, prompt_tokens: Option<u64>) -> bool {
        let threshold = self.counters.threshold_tokens;
        let tokens = prompt_tokens.unwrap_or(self.counters.last_prompt_tokens);
        !self.thrash.is_paused() && threshold > 0 && tokens >= threshold
    }

    /// At or over the threshold, and with an output left to mask: once every old output is a
    /// stand-in, a long session stays over the threshold on prose alone, and compacting it again
    /// before every model call would change nothing.
    fn should_compress_preflight(&mut self, messages: &[Message]) -> bool {
        let threshold = self.counters.threshold_tokens;
        threshold > 0
            && tokens::estimate_reaches(messages, threshold)
            && self.has_content_to_compress(messages)
    }

    fn has_content_to_compress(&mut self, messages: &[Message]) -> bool {
        let (candidates, result_count) = mask::find_mask_candidates(messages, &self.config);
        let estimate = Estimate::of(messages, None);
        let keep = self.choose_window(&candidates, result_count, estimate);
        !mask::outside_window(&candidates, result_count, keep).is_empty()
    }

    fn on_session_reset(&mut self) {
        self.counters = Counters {
            threshold_tokens: self.counters.threshold_tokens,
            context_length: self.counters.context_length,
            ..Counters::default()
        };
        self.masked_outputs = 0;
        self.thrash.resume();
    }

    /// A new session lifts the pause; Hermes naming the session anew after a compaction does not.
    fn on_session_start(&mut self, _session_id: &str, info: &SessionInfo) -> Result<(), EngineError> {
        if info.boundary_reason.as_deref() != Some("compression") {
            self.thrash.resume();
        }
        Ok(())
    }

    fn update_model(&mut self, model: &ModelInfo) {
        self.counters.context_length = model.context_length;
        self.counters.threshold_tokens = (model.window() as f64 * self.config.threshold).floor() as u64;
        if self.thrash.resume() {
            tracing::info!("automatic compaction resumed: the model changed");
        }
    }

    fn get_status(&self) -> Value {
        let mut status = default_status(&self.counters);
        if let Value::Object(fields) = &mut status {
            fields.insert("masked_outputs".into(), self.masked_outputs.into());
            fields.insert("keep_last".into(), self.config.keep_last.into());
            fields.insert("paused".into(), self.thrash.is_paused().into());
            fields.insert("ineffective_streak".into(), self.thrash.streak().into());
        }
        status
    }

    fn call_ext(&mut self, method: &str, _request: &Value) -> Result<Value, EngineError> {
        match method {
            EXT_RESUME_AUTO_COMPACTION => {
                let was_paused = self.thrash.resume();
                Ok(json!({ "paused": false, "was_paused": was_paused }))
            }
            EXT_LAST_COMPACTION => Ok(self.last_compaction.clone().unwrap_or(Value::Null)),
            other => Err(EngineError::unknown_method(other)),
        }
    }

    fn ext_methods(&self) -> Vec<&'static str> {
        vec![EXT_RESUME_AUTO_COMPACTION, EXT_LAST_COMPACTION]
    }
}
