//! The `compression:` block of `config.yaml`, and the token budgets derived from it.
//!
//! Raw JSON → [`CompressorConfig`] (every key optional, unknown keys ignored) → [`Budgets`] once
//! the model's window is known.

use std::fmt;

use ctxhost_engine_abi::ModelInfo;
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use serde_json::Value;

/// The keys of the `compression:` block, with Hermes's names and the built-in defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, expecting = "a mapping of settings")]
pub struct CompressorConfig {
    /// Automatic compaction on or off. A manual `/compress` works either way.
    pub enabled: bool,
    /// Share of the window at which compaction fires (0–1, exclusive of 0).
    pub threshold: f64,
    /// Share of the threshold the protected tail may use; clamped to 0.10–0.80 when used.
    pub target_ratio: f64,
    /// Messages at the end protected even when they exceed the tail budget (progress permitting).
    pub protect_last_n: usize,
    /// Messages after the system message kept verbatim.
    pub protect_first_n: usize,
}

impl Default for CompressorConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            threshold: 0.50,
            target_ratio: 0.20,
            protect_last_n: 20,
            protect_first_n: 3,
        }
    }
}

/// Keys this engine knows; any other key is ignored with a debug log.
const KNOWN_KEYS: [&str; 5] = [
    "enabled",
    "threshold",
    "target_ratio",
    "protect_last_n",
    "protect_first_n",
];

/// What is wrong with one key of the config block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The key, as written in `config.yaml` (e.g. `threshold`).
    pub key: String,
    /// Why the value is refused, e.g. `must be between 0 and 1, got 3`.
    pub reason: String,
}

impl ConfigProblem {
    fn new(key: &str, reason: impl Into<String>) -> Self {
        Self {
            key: key.to_owned(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.reason)
    }
}

impl std::error::Error for ConfigProblem {}

impl CompressorConfig {
    /// Reads the block from JSON: `null` gives the defaults, absent keys keep theirs, unknown keys
    /// are ignored. A wrong type names its key. Does not [`validate`](Self::validate).
    pub fn from_json(value: &Value) -> Result<Self, ConfigProblem> {
        let mut config = Self::default();
        let object = match value {
            Value::Null => return Ok(config),
            Value::Object(object) => object,
            other => {
                return Err(ConfigProblem::new(
                    "compression",
                    format!("must be a mapping of settings, got {other}"),
                ))
            }
        };
        for (key, value) in object {
            match key.as_str() {
                "enabled" => config.enabled = typed(key, value, "true or false")?,
                "threshold" => config.threshold = typed(key, value, "a number")?,
                "target_ratio" => config.target_ratio = typed(key, value, "a number")?,
                "protect_last_n" => config.protect_last_n = typed(key, value, "a whole number ≥ 0")?,
                "protect_first_n" => config.protect_first_n = typed(key, value, "a whole number ≥ 0")?,
                _ => tracing::debug!("compression.{key}: unknown key ignored (known: {KNOWN_KEYS:?})"),
            }
        }
        Ok(config)
    }

    /// Checks every value is possible; the first problem names its key and why.
    pub fn validate(&self) -> Result<(), ConfigProblem> {
        let share = |key: &str, value: f64| {
            if value.is_finite() && value > 0.0 && value <= 1.0 {
                Ok(())
            } else {
                Err(ConfigProblem::new(
                    key,
                    format!("must be between 0 and 1, got {value}"),
                ))
            }
        };
        share("threshold", self.threshold)?;
        share("target_ratio", self.target_ratio)?;
        Ok(())
    }

    /// `target_ratio` as it is used: clamped to 0.10–0.80.
    pub fn effective_target_ratio(&self) -> f64 {
        self.target_ratio.clamp(0.10, 0.80)
    }
}

fn typed<T: DeserializeOwned>(key: &str, value: &Value, expected: &str) -> Result<T, ConfigProblem> {
    T::deserialize(value).map_err(|_| ConfigProblem::new(key, format!("must be {expected}, got {value}")))
}

/// The token budgets of compressor.md, for one model window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Budgets {
    /// The model's context window (`context_length`); 0 until the host calls `update_model`.
    pub context_length: u64,
    /// `context_length − max_tokens`, the part the prompt may use.
    pub window: u64,
    /// `floor(window × threshold)`: compaction fires at or above it.
    pub threshold_tokens: u64,
    /// `floor(threshold_tokens × target_ratio)`: what the protected tail may use.
    pub tail_token_budget: u64,
    /// `min(floor(context_length × 0.05), 12,000)`: the longest summary a model is asked for.
    pub max_summary_tokens: u64,
    /// `max(max_summary_tokens, min(floor(threshold × 0.5), 12,000))`: the room the extractive
    /// summary may fill with the facts it lists. It comes out of the tail, not on top of it: see
    /// `result_cap_tokens`.
    pub summary_room_tokens: u64,
    /// `floor(threshold × 0.75)`: what head, summary and tail together aim at. The tail's
    /// `protect_last_n` minimum gives way first (never its token budget), so that a compaction
    /// leaves a quarter of the threshold free and the summary has room to keep the facts.
    pub result_cap_tokens: u64,
}

/// Share of the threshold the extractive summary may fill with facts (issue 7: a compact list of
/// identifiers keeps more of them than verbatim tool output at the tail's start). At 35% an
/// 8,000-token window kept 60% of warehouse-migration's facts; at half, 91%, and every result at
/// 16,000 tokens got smaller, the tail giving way down to its token budget.
pub const SUMMARY_ROOM_SHARE: f64 = 0.5;

/// Share of the threshold a compaction's result aims at.
pub const RESULT_CAP_SHARE: f64 = 0.75;

/// The ceiling on any summary, whatever the window.
pub const SUMMARY_TOKENS_CEILING: u64 = 12_000;

/// The floor of the summary target (compressor.md, phase 3).
pub const SUMMARY_TOKENS_FLOOR: u64 = 2_000;

impl Budgets {
    /// The budgets for `model` under `config`.
    pub fn compute(config: &CompressorConfig, model: &ModelInfo) -> Self {
        let window = model.window();
        let threshold_tokens = (window as f64 * config.threshold).floor() as u64;
        let tail_token_budget = (threshold_tokens as f64 * config.effective_target_ratio()).floor() as u64;
        let max_summary_tokens =
            ((model.context_length as f64 * 0.05).floor() as u64).min(SUMMARY_TOKENS_CEILING);
        let summary_room_tokens = max_summary_tokens
            .max(((threshold_tokens as f64 * SUMMARY_ROOM_SHARE).floor() as u64).min(SUMMARY_TOKENS_CEILING));
        Self {
            context_length: model.context_length,
            window,
            threshold_tokens,
            tail_token_budget,
            max_summary_tokens,
            summary_room_tokens,
            result_cap_tokens: (threshold_tokens as f64 * RESULT_CAP_SHARE).floor() as u64,
        }
    }

    /// The room of the extractive summary for a middle of `middle_tokens`: the target, or more
    /// when [`summary_room_tokens`](Self::summary_room_tokens) allows.
    pub fn summary_room_for(&self, middle_tokens: u64) -> u64 {
        self.summary_target_tokens(middle_tokens)
            .max(self.summary_room_tokens)
    }

    /// The summary target for a middle of `middle_tokens`: `clamp(middle × 0.20, 2,000, max)`.
    ///
    /// When the window is small the maximum is below the floor; the maximum wins. Before the
    /// window is known (a manual compress without `update_model`) the ceiling stands in for it.
    pub fn summary_target_tokens(&self, middle_tokens: u64) -> u64 {
        let max = if self.context_length == 0 {
            SUMMARY_TOKENS_CEILING
        } else {
            self.max_summary_tokens
        };
        ((middle_tokens as f64 * 0.20) as u64)
            .max(SUMMARY_TOKENS_FLOOR)
            .min(max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn null_gives_the_defaults_and_unknown_keys_are_ignored() {
        assert_eq!(
            CompressorConfig::from_json(&Value::Null).unwrap(),
            CompressorConfig::default()
        );
        let config = CompressorConfig::from_json(&json!({"threshold": 0.7, "summary_model": "x"})).unwrap();
        assert_eq!(config.threshold, 0.7);
        assert_eq!(config.protect_last_n, 20);
    }

    #[test]
    fn an_impossible_threshold_names_the_key_and_the_value() {
        let config = CompressorConfig::from_json(&json!({"threshold": 3})).unwrap();
        assert_eq!(
            config.validate().unwrap_err().to_string(),
            "threshold: must be between 0 and 1, got 3"
        );
        let config = CompressorConfig::from_json(&json!({"target_ratio": -0.5})).unwrap();
        assert_eq!(config.validate().unwrap_err().key, "target_ratio");
    }

    #[test]
    fn a_wrong_type_names_the_key() {
        let problem = CompressorConfig::from_json(&json!({"protect_last_n": -1})).unwrap_err();
        assert_eq!(
            problem.to_string(),
            "protect_last_n: must be a whole number ≥ 0, got -1"
        );
        let problem = CompressorConfig::from_json(&json!({"enabled": "yes"})).unwrap_err();
        assert_eq!(problem.to_string(), "enabled: must be true or false, got \"yes\"");
        let problem = CompressorConfig::from_json(&json!([1])).unwrap_err();
        assert_eq!(problem.key, "compression");
    }

    #[test]
    fn budgets_follow_the_worked_example() {
        let model = ModelInfo {
            context_length: 200_000,
            ..ModelInfo::default()
        };
        let budgets = Budgets::compute(&CompressorConfig::default(), &model);
        assert_eq!(
            budgets,
            Budgets {
                context_length: 200_000,
                window: 200_000,
                threshold_tokens: 100_000,
                tail_token_budget: 20_000,
                max_summary_tokens: 10_000,
                summary_room_tokens: 12_000,
                result_cap_tokens: 75_000,
            }
        );
        assert_eq!(budgets.summary_room_for(/*middle_tokens*/ 5_000), 12_000);
        assert_eq!(budgets.summary_target_tokens(/*middle_tokens*/ 5_000), 2_000);
        assert_eq!(budgets.summary_target_tokens(/*middle_tokens*/ 30_000), 6_000);
        assert_eq!(budgets.summary_target_tokens(/*middle_tokens*/ 900_000), 10_000);
    }

    #[test]
    fn the_output_reservation_shrinks_the_window_and_the_ratio_is_clamped() {
        let model = ModelInfo {
            context_length: 100_000,
            max_tokens: Some(20_000),
            ..ModelInfo::default()
        };
        let config = CompressorConfig {
            target_ratio: 0.95,
            ..CompressorConfig::default()
        };
        let budgets = Budgets::compute(&config, &model);
        assert_eq!(budgets.window, 80_000);
        assert_eq!(budgets.threshold_tokens, 40_000);
        assert_eq!(budgets.tail_token_budget, 32_000);
        assert_eq!(budgets.max_summary_tokens, 5_000);
    }

    #[test]
    fn a_small_window_caps_the_summary_below_the_floor() {
        let model = ModelInfo {
            context_length: 4_000,
            ..ModelInfo::default()
        };
        let budgets = Budgets::compute(&CompressorConfig::default(), &model);
        assert_eq!(budgets.summary_target_tokens(/*middle_tokens*/ 50_000), 200);
        // The extractive summary may list facts in half of the 2,000-token threshold.
        assert_eq!(budgets.summary_room_for(/*middle_tokens*/ 50_000), 1_000);
        assert_eq!(budgets.result_cap_tokens, 1_500);
    }
}
