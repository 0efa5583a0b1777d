//! The `lcm:` block of `config.yaml`.

use std::path::PathBuf;

use ctxhost_engine_abi::EngineError;
use serde::Deserialize;
use serde_json::Value;

/// The longest `lcm.grep_budget_ms`: a tool call that searches longer holds the agent up anyway.
const MAX_GREP_BUDGET_MS: u64 = 600_000;

/// The engine's settings, from its `lcm:` block. Every key is optional.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, expecting = "a mapping of settings")]
pub struct LcmConfig {
    /// The SQLite file. Relative paths are resolved against the config file's directory; default
    /// `<data_dir>/lcm.sqlite`, the data directory being the host's (`.ctxhost/` beside the config
    /// file).
    pub database: Option<PathBuf>,
    /// Compaction fires at this share of the usable window.
    pub threshold: f64,
    /// After a compaction the context aims at this share of the threshold, so that the next turn
    /// does not fire again at once.
    pub target: f64,
    /// The fresh tail: the newest messages kept verbatim (always extended to the newest user
    /// message and everything after it).
    pub fresh_tail: usize,
    /// The fresh tail never takes more than this share of the threshold (beyond the newest user
    /// message and what follows it, which always stays).
    pub tail_share: f64,
    /// A leaf summary covers at most this many tokens of raw messages.
    pub leaf_chunk_tokens: u64,
    /// The length a leaf summary is asked for.
    pub leaf_target_tokens: u64,
    /// The length a condensed summary is asked for.
    pub condensed_target_tokens: u64,
    /// This many uncondensed summaries of one depth become one summary of the next depth.
    pub fan_in: usize,
    /// The deepest summary condensation makes automatically.
    pub max_depth: u32,
    /// At most this many summarizer calls per compaction.
    pub max_summarizer_calls: u32,
    /// At most this many seconds of summarising per compaction.
    pub max_sweep_seconds: u64,
    /// `lcm_grep` searches stored messages, then summaries, newest first for about this many
    /// milliseconds per call; what it has not reached by then, it says, with the `before_id` that
    /// continues the search (0: each call searches one step and stops).
    pub grep_budget_ms: u64,
}

impl Default for LcmConfig {
    fn default() -> Self {
        Self {
            database: None,
            threshold: 0.75,
            target: 0.6,
            fresh_tail: 64,
            tail_share: 0.4,
            leaf_chunk_tokens: 20_000,
            leaf_target_tokens: 1_200,
            condensed_target_tokens: 2_000,
            fan_in: 4,
            max_depth: 1,
            max_summarizer_calls: 12,
            max_sweep_seconds: 120,
            grep_budget_ms: crate::search::GREP_BUDGET_MS,
        }
    }
}

impl LcmConfig {
    /// Reads the block (`null` gives the defaults) and checks it. A key spelt like one of its
    /// own is warned about by `read_config` (see [`Self::misspelt_keys`]); other unknown keys are
    /// ignored.
    pub fn from_json(block: &Value) -> Result<Self, EngineError> {
        let config: Self = ctxhost_engine_abi::read_config("lcm", block)?;
        config.validate()?;
        Ok(config)
    }

    /// The keys of `block` that this engine does not know but that are spelt like one it does,
    /// each as a warning naming both.
    pub fn misspelt_keys(block: &Value) -> Vec<String> {
        let known = serde_aux::serde_introspection::serde_introspect::<Self>();
        ctxhost_engine_kit::keys::misspelt_keys("lcm", block, known)
    }

    /// Checks every value, naming the key of the first impossible one.
    pub fn validate(&self) -> Result<(), EngineError> {
        let share = |key: &str, value: f64| {
            if value > 0.0 && value <= 1.0 {
                Ok(())
            } else {
                Err(EngineError::config(format!(
                    "lcm.{key} must be above 0 and at most 1, got {value}"
                )))
            }
        };
        share("threshold", self.threshold)?;
        share("target", self.target)?;
        share("tail_share", self.tail_share)?;
        let positive = |key: &str, value: u64| {
            if value > 0 {
                Ok(())
            } else {
                Err(EngineError::config(format!("lcm.{key} must be at least 1")))
            }
        };
        positive("fresh_tail", self.fresh_tail as u64)?;
        positive("leaf_chunk_tokens", self.leaf_chunk_tokens)?;
        positive("leaf_target_tokens", self.leaf_target_tokens)?;
        positive("condensed_target_tokens", self.condensed_target_tokens)?;
        positive("max_summarizer_calls", u64::from(self.max_summarizer_calls))?;
        positive("max_sweep_seconds", self.max_sweep_seconds)?;
        if self.grep_budget_ms > MAX_GREP_BUDGET_MS {
            return Err(EngineError::config(format!(
                "lcm.grep_budget_ms must be at most {MAX_GREP_BUDGET_MS} (ten minutes), got {}",
                self.grep_budget_ms
            )));
        }
        if self.fan_in < 2 {
            return Err(EngineError::config(format!(
                "lcm.fan_in must be at least 2, got {}",
                self.fan_in
            )));
        }
        if matches!(&self.database, Some(path) if path.as_os_str().is_empty()) {
            return Err(EngineError::config("lcm.database must not be empty"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn no_block_gives_the_defaults() {
        assert_eq!(LcmConfig::from_json(&Value::Null).unwrap(), LcmConfig::default());
    }

    #[test]
    fn an_impossible_value_names_its_key() {
        let error = LcmConfig::from_json(&json!({ "threshold": 3 })).unwrap_err();
        assert_eq!(
            error.message.as_str(),
            "lcm.threshold must be above 0 and at most 1, got 3"
        );
        let error = LcmConfig::from_json(&json!({ "fan_in": 1 })).unwrap_err();
        assert!(error.message.as_str().contains("lcm.fan_in"), "{error:?}");
        let error = LcmConfig::from_json(&json!({ "grep_budget_ms": u64::MAX })).unwrap_err();
        assert!(
            error
                .message
                .as_str()
                .starts_with("lcm.grep_budget_ms must be at most"),
            "{error:?}"
        );
        let zero = LcmConfig::from_json(&json!({ "grep_budget_ms": 0 })).unwrap();
        assert_eq!(zero.grep_budget_ms, 0, "each call searches one step");
    }

    #[test]
    fn a_misspelt_key_is_named_with_the_key_it_looks_like() {
        // `databse` ignored silently put the store in the default place, where a later
        // `lcm_grep` with the corrected config does not look.
        let block = json!({ "databse": "x.sqlite", "fresh_tial": 3, "threshold": 0.5, "notes": 1 });
        assert_eq!(
            LcmConfig::misspelt_keys(&block),
            [
                "lcm.databse: unknown setting, ignored; did you mean `lcm.database`?",
                "lcm.fresh_tial: unknown setting, ignored; did you mean `lcm.fresh_tail`?",
            ]
        );
        assert_eq!(LcmConfig::from_json(&block).unwrap().database, None);
    }

    #[test]
    fn a_wrong_type_is_an_error() {
        let error = LcmConfig::from_json(&json!({ "fresh_tail": "many" })).unwrap_err();
        assert_eq!(
            error.message.as_str(),
            r#"lcm.fresh_tail: invalid type: string "many", expected usize"#
        );
        // In the user's words, not the name of the engine's own type (`expected struct LcmConfig`).
        let error = LcmConfig::from_json(&json!(7)).unwrap_err();
        assert_eq!(
            error.message.as_str(),
            "lcm: expected a mapping of settings, found a number"
        );
    }
}
