//! `auxiliary.compression:` (Hermes's keys): the model that writes summaries, reached through any
//! OpenAI-compatible endpoint (llm.md).
//!
//! ```yaml
//! auxiliary:
//!   compression:
//!     model: ""            # empty: no model; the built-in extractive summarizer is used
//!     base_url: ""         # e.g. http://127.0.0.1:8080/v1 (…/chat/completions is appended)
//!     api_key: ""          # empty: read from the variable `api_key_env` names
//!     api_key_env: CTXHOST_SUMMARIZER_API_KEY
//!     timeout: 120         # seconds for the whole request
//!     max_tokens: null     # cap on the answer's tokens
//!     extra: {}            # merged into the request body (`stop`, `temperature`, …)
//! ```
//!
//! The key is never shown: [`ApiKey`] has no `Display`, its `Debug` prints `[redacted]`, and the
//! settings' copy of the whole file (handed to plugin engines) has it replaced.

use std::fmt;

use serde::Deserialize;
use serde_json::{Map, Value};

/// The variable the key is read from when `api_key` is empty. A variable of its own, so that a key
/// meant for another service is never sent to `base_url` unless the user names it.
pub const DEFAULT_API_KEY_ENV: &str = "CTXHOST_SUMMARIZER_API_KEY";

/// Seconds a summary request may take, by default (Hermes's).
pub const DEFAULT_TIMEOUT_SECS: f64 = 120.0;

/// Keys of the request body the host writes itself; `extra` cannot set them.
const RESERVED_BODY_KEYS: [&str; 3] = ["model", "messages", "stream"];

/// The `auxiliary.compression:` block.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, expecting = "a mapping of settings")]
pub struct SummarizerSettings {
    /// The model's name; empty means no model.
    pub model: String,
    /// The endpoint's base URL, up to `/v1`.
    pub base_url: String,
    /// The key, when written in the file.
    pub api_key: ApiKey,
    /// The environment variable holding the key when `api_key` is empty; empty: none.
    pub api_key_env: String,
    /// Seconds for the whole request (connect, send, answer).
    pub timeout: f64,
    /// A cap on the answer's tokens (`max_tokens` of the request).
    pub max_tokens: Option<u64>,
    /// Merged into the request body, for provider parameters (`stop`, `temperature`, a
    /// llama.cpp `grammar`…); its keys win over the host's (`max_tokens`), except `model`,
    /// `messages` and `stream`, which it cannot set.
    pub extra: Map<String, Value>,
}

impl Default for SummarizerSettings {
    fn default() -> Self {
        Self {
            model: String::new(),
            base_url: String::new(),
            api_key: ApiKey::default(),
            api_key_env: DEFAULT_API_KEY_ENV.to_owned(),
            timeout: DEFAULT_TIMEOUT_SECS,
            max_tokens: None,
            extra: Map::new(),
        }
    }
}

/// A value of `auxiliary.compression` that cannot be right: the key under the block, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummarizerProblem {
    /// The key under `auxiliary.compression.`, e.g. `timeout` or `extra.messages`.
    pub key: String,
    /// Why it cannot be right (never quoting the API key).
    pub reason: String,
}

impl SummarizerSettings {
    /// Whether a model is configured (else the extractive summarizer writes summaries).
    pub fn has_model(&self) -> bool {
        !self.model.trim().is_empty()
    }

    /// Refuses impossible values.
    pub fn validate(&self) -> Result<(), SummarizerProblem> {
        let problem = |key: &str, reason: String| {
            Err(SummarizerProblem {
                key: key.to_owned(),
                reason,
            })
        };
        if !(self.timeout.is_finite() && self.timeout > 0.0) {
            return problem(
                "timeout",
                format!("must be a positive number of seconds, got {}", self.timeout),
            );
        }
        if self.max_tokens == Some(0) {
            return problem("max_tokens", "must be at least 1, got 0".into());
        }
        let base_url = self.base_url.trim();
        if self.has_model() && base_url.is_empty() {
            return problem(
                "base_url",
                "must be set when a model is (e.g. http://127.0.0.1:8080/v1)".into(),
            );
        }
        let is_http = base_url.starts_with("http://") || base_url.starts_with("https://");
        if !base_url.is_empty() && !is_http {
            return problem(
                "base_url",
                format!("must start with http:// or https://, got `{base_url}`"),
            );
        }
        if let Some(reserved) = RESERVED_BODY_KEYS
            .iter()
            .find(|key| self.extra.contains_key(**key))
        {
            return problem(
                &format!("extra.{reserved}"),
                "is written by the host and cannot be set here".into(),
            );
        }
        Ok(())
    }

    /// The key to send: `api_key`, else the variable `api_key_env` names, looked up with `env`.
    pub fn resolve_api_key(&self, env: impl Fn(&str) -> Option<String>) -> ApiKey {
        if !self.api_key.is_empty() {
            return self.api_key.clone();
        }
        let name = self.api_key_env.trim();
        if name.is_empty() {
            return ApiKey::default();
        }
        ApiKey(env(name).map(|key| key.trim().to_owned()).unwrap_or_default())
    }
}

/// An API key. It has no `Display`; its `Debug` never shows it.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct ApiKey(String);

impl ApiKey {
    /// A key from its text.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// Whether there is no key.
    pub fn is_empty(&self) -> bool {
        self.0.trim().is_empty()
    }

    /// The key itself, for the `Authorization` header and for scrubbing text that might echo it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `[redacted]`.
    pub fn scrub(&self, text: &str) -> String {
        if self.is_empty() {
            text.to_owned()
        } else {
            text.replace(self.0.as_str(), REDACTED)
        }
    }
}

/// What a key is shown as.
pub const REDACTED: &str = "[redacted]";

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            f.write_str("\"\"")
        } else {
            f.write_str(REDACTED)
        }
    }
}

/// Replaces `auxiliary.compression.api_key` in the file's JSON copy (handed to plugin engines,
/// shown by `Debug`).
pub(super) fn scrub_document(document: &mut Value) {
    if let Some(key) = document
        .pointer_mut("/auxiliary/compression/api_key")
        .filter(|key| key.as_str().is_some_and(|key| !key.is_empty()))
    {
        *key = Value::String(REDACTED.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_defaults_configure_no_model() {
        let settings = SummarizerSettings::default();
        assert!(!settings.has_model());
        assert_eq!(settings.timeout, 120.0);
        assert_eq!(settings.api_key_env, "CTXHOST_SUMMARIZER_API_KEY");
        assert_eq!(settings.validate(), Ok(()));
    }

    #[test]
    fn debug_output_never_shows_the_key() {
        let settings = SummarizerSettings {
            model: "m".into(),
            base_url: "http://127.0.0.1:1/v1".into(),
            api_key: ApiKey::new("sk-very-secret-123"),
            ..SummarizerSettings::default()
        };
        let shown = format!("{settings:?} {settings:#?}");
        assert!(!shown.contains("sk-very-secret-123"), "{shown}");
        assert!(shown.contains("api_key: [redacted]"), "{shown}");
        assert_eq!(format!("{:?}", ApiKey::default()), "\"\"");
    }

    #[test]
    fn the_key_comes_from_the_file_then_from_the_named_variable() {
        let env = |name: &str| (name == "MY_KEY").then(|| "from-env".to_owned());
        let mut settings = SummarizerSettings {
            api_key_env: "MY_KEY".into(),
            ..SummarizerSettings::default()
        };
        assert_eq!(settings.resolve_api_key(env).expose(), "from-env");
        settings.api_key = ApiKey::new("from-file");
        assert_eq!(settings.resolve_api_key(env).expose(), "from-file");
        settings.api_key = ApiKey::default();
        settings.api_key_env = String::new();
        assert!(settings.resolve_api_key(env).is_empty());
    }

    fn parse(text: &str) -> Result<crate::config::Settings, crate::config::ConfigError> {
        crate::config::Settings::parse(text, std::path::Path::new("/work/config.yaml"))
    }

    #[test]
    fn hermes_keys_are_read_from_the_auxiliary_block() {
        let settings = parse(
            "auxiliary:\n  vision:\n    model: other\n  compression:\n    model: SmolLM2\n    base_url: http://127.0.0.1:8080/v1\n    timeout: 30\n    max_tokens: 400\n    extra:\n      stop: ['</s>']\n      temperature: 0.2\n",
        )
        .unwrap();
        let summarizer = settings.summarizer;
        assert_eq!(summarizer.model, "SmolLM2");
        assert_eq!(summarizer.base_url, "http://127.0.0.1:8080/v1");
        assert_eq!(summarizer.timeout, 30.0);
        assert_eq!(summarizer.max_tokens, Some(400));
        assert_eq!(
            Value::Object(summarizer.extra),
            serde_json::json!({"stop": ["</s>"], "temperature": 0.2})
        );
        assert!(summarizer.api_key.is_empty());
        assert_eq!(summarizer.api_key_env, DEFAULT_API_KEY_ENV);
    }

    #[test]
    fn impossible_values_name_the_file_line_and_key() {
        for (text, expected) in [
            (
                "auxiliary:\n  compression:\n    model: m\n    base_url: http://x/v1\n    timeout: 0\n",
                "/work/config.yaml:5: `auxiliary.compression.timeout` must be a positive number of seconds, got 0",
            ),
            (
                "auxiliary:\n  compression:\n    model: m\n",
                // Not written: the line of the block it is missing from.
                "/work/config.yaml:2: `auxiliary.compression.base_url` must be set when a model is (e.g. http://127.0.0.1:8080/v1)",
            ),
            (
                "auxiliary:\n  compression:\n    model: m\n    base_url: localhost:8080\n",
                "/work/config.yaml:4: `auxiliary.compression.base_url` must start with http:// or https://, got `localhost:8080`",
            ),
            (
                "auxiliary:\n  compression:\n    max_tokens: 0\n",
                "/work/config.yaml:3: `auxiliary.compression.max_tokens` must be at least 1, got 0",
            ),
            (
                "auxiliary:\n  compression:\n    extra:\n      stop: x\n      messages: []\n",
                "/work/config.yaml:5: `auxiliary.compression.extra.messages` is written by the host and cannot be set here",
            ),
        ] {
            assert_eq!(parse(text).unwrap_err().to_string(), expected);
        }
        let error = parse("auxiliary:\n  compression:\n    timeout: soon\n").unwrap_err();
        assert!(error.to_string().starts_with("/work/config.yaml:3:"), "{error}");
    }

    #[test]
    fn the_key_is_in_no_debug_output_and_no_engine_block() {
        let settings = parse(
            "auxiliary:\n  compression:\n    model: m\n    base_url: http://127.0.0.1:9/v1\n    api_key: sk-live-0123456789\n",
        )
        .unwrap();
        assert_eq!(settings.summarizer.api_key.expose(), "sk-live-0123456789");
        let shown = format!("{settings:?}");
        assert!(!shown.contains("sk-live-0123456789"), "{shown}");
        assert_eq!(
            settings.engine_block("auxiliary")["compression"]["api_key"],
            REDACTED
        );
    }

    #[test]
    fn scrubbing_replaces_every_occurrence_of_the_key() {
        let key = ApiKey::new("abc123");
        assert_eq!(
            key.scrub("bad key abc123 (abc123)"),
            "bad key [redacted] ([redacted])"
        );
        assert_eq!(ApiKey::default().scrub("text"), "text");
    }
}
