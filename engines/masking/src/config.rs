//! The `masking:` block of `config.yaml`, validated.

use ctxhost_engine_abi::EngineError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The masking engine's settings, from the `masking:` block of `config.yaml` (its JSON form).
///
/// Every key is optional; a missing block (`null`) means all defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, expecting = "a mapping of settings")]
pub struct MaskingConfig {
    /// The share of the usable window at which compaction fires, in (0, 1]. Default 0.75.
    pub threshold: f64,
    /// How many of the most recent tool results are always kept verbatim (at least 1). Default 10.
    pub keep_last: usize,
    /// Tool outputs shorter than this many characters are never masked. Default 200.
    pub min_chars: usize,
    /// Whether the long string values of an older call's arguments (a file written through
    /// `write_file`, a patch) are masked with its result. Default true.
    pub mask_arguments: bool,
    /// Argument values shorter than this many characters are never masked: a command or a path
    /// is the record of what was done, a file's content is not. Default 1000.
    pub min_argument_chars: usize,
}

impl Default for MaskingConfig {
    fn default() -> Self {
        Self {
            threshold: 0.75,
            keep_last: 10,
            min_chars: 200,
            mask_arguments: true,
            min_argument_chars: 1000,
        }
    }
}

/// The keys this block knows; any other is ignored (see [`MaskingConfig::from_json`]).
const KNOWN_KEYS: [&str; 5] = [
    "threshold",
    "keep_last",
    "min_chars",
    "mask_arguments",
    "min_argument_chars",
];

impl MaskingConfig {
    /// Reads and validates the config block: `null` gives the defaults, unknown keys are ignored
    /// (with a warning when spelt like a known one, else a debug log), a wrong type or an impossible value is an [`EngineError::config`] that
    /// names the key.
    pub fn from_json(block: &Value) -> Result<Self, EngineError> {
        // `read_config` warns of a key spelt like a known one; the others are only logged here.
        if let Value::Object(map) = block {
            for key in map.keys().filter(|key| !KNOWN_KEYS.contains(&key.as_str())) {
                tracing::debug!("masking.{key}: unknown setting, ignored");
            }
        }
        let config: Self = ctxhost_engine_abi::read_config("masking", block)?;
        config.validate()?;
        Ok(config)
    }

    /// The keys of `block` that masking does not know but that are spelt like one it does, each
    /// as a warning naming both.
    pub fn misspelt_keys(block: &Value) -> Vec<String> {
        ctxhost_engine_kit::keys::misspelt_keys("masking", block, &KNOWN_KEYS)
    }

    /// Checks the values that types alone cannot: `threshold` in (0, 1], `keep_last` ≥ 1.
    pub fn validate(&self) -> Result<(), EngineError> {
        // Written so that NaN fails too.
        if !(self.threshold > 0.0 && self.threshold <= 1.0) {
            return Err(EngineError::config(format!(
                "masking.threshold: must be a share of the window in (0, 1], got {}",
                self.threshold
            )));
        }
        if self.keep_last == 0 {
            return Err(EngineError::config(
                "masking.keep_last: must be at least 1 (the newest tool result is always kept)",
            ));
        }
        Ok(())
    }
}
