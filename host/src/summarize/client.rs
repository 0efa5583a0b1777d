//! The OpenAI-compatible chat-completions client: one blocking `POST {base_url}/chat/completions`
//! per summary, bounded by the configured timeout.
//!
//! How a failure is classified decides whether the context is kept (llm.md):
//!
//! - refused authentication (401, 403), no connection (refused, reset, closed mid-answer, unknown
//!   host, TLS) → [`CallError::Unavailable`]: abort, nothing replaced;
//! - no answer within the timeout → [`CallError::TimedOut`]: abort too, and the engine cools down;
//! - any other HTTP error (5xx, other 4xx), malformed JSON, an answer without text →
//!   [`CallError::Failed`]: the deterministic fallback summary.
//!
//! No message ever holds the key: every one is scrubbed of it, and response bodies are quoted only
//! for errors other than authentication, cut short.

use std::{fmt, io, time::Duration};

use ctxhost_engine_kit::text::one_line;
use serde_json::{json, Map, Value};

use crate::config::{ApiKey, SummarizerSettings};

/// The largest answer read, in bytes: far more than any summary.
const MAX_ANSWER_BYTES: u64 = 8 * 1024 * 1024;

/// Characters of an error body quoted in a message.
const QUOTED_BODY_CHARS: usize = 200;

/// One message of a chat-completions request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatMessage {
    /// `system` or `user`.
    pub role: &'static str,
    /// Its text.
    pub content: String,
}

/// Why a chat completion produced no text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallError {
    /// The endpoint cannot be reached or refused the key: abort.
    Unavailable(String),
    /// No answer within the timeout: abort, and cool down.
    TimedOut(String),
    /// It answered, but not with a usable completion: fall back.
    Failed(String),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unavailable(reason) | Self::TimedOut(reason) | Self::Failed(reason) => f.write_str(reason),
        }
    }
}

/// A client for one endpoint and model, built once from the settings.
pub struct ChatClient {
    agent: ureq::Agent,
    url: String,
    model: String,
    key: ApiKey,
    timeout: Duration,
    max_tokens: Option<u64>,
    extra: Map<String, Value>,
}

impl fmt::Debug for ChatClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatClient")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("key", &self.key)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl ChatClient {
    /// A client for `settings`' endpoint and model, sending `key` when there is one.
    pub fn new(settings: &SummarizerSettings, key: ApiKey) -> Self {
        let timeout = Duration::from_secs_f64(settings.timeout);
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            // Statuses are classified here, with the body at hand.
            .http_status_as_error(false)
            .user_agent(concat!("ctxhost/", env!("CARGO_PKG_VERSION")))
            .build();
        Self {
            agent: ureq::Agent::new_with_config(config),
            url: format!(
                "{}/chat/completions",
                settings.base_url.trim().trim_end_matches('/')
            ),
            model: settings.model.trim().to_owned(),
            key,
            timeout,
            max_tokens: settings.max_tokens,
            extra: settings.extra.clone(),
        }
    }

    /// The model's name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The request body for `messages`: model, messages, `max_tokens` when configured, then
    /// `extra` on top.
    pub fn request_body(&self, messages: &[ChatMessage]) -> Value {
        let messages: Vec<Value> = messages
            .iter()
            .map(|message| json!({"role": message.role, "content": message.content}))
            .collect();
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert("messages".into(), Value::Array(messages));
        if let Some(max_tokens) = self.max_tokens {
            body.insert("max_tokens".into(), json!(max_tokens));
        }
        for (key, value) in &self.extra {
            body.insert(key.clone(), value.clone());
        }
        Value::Object(body)
    }

    /// Asks for a completion of `messages`; its text, as the model wrote it.
    pub fn complete(&self, messages: &[ChatMessage]) -> Result<String, CallError> {
        let body = self.request_body(messages).to_string();
        let mut request = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/json");
        if !self.key.is_empty() {
            request = request.header("Authorization", format!("Bearer {}", self.key.expose()));
        }
        let result = request.send(body.as_str()).and_then(|mut response| {
            let status = response.status().as_u16();
            let text = response
                .body_mut()
                .with_config()
                .limit(MAX_ANSWER_BYTES)
                .lossy_utf8(true)
                .read_to_string()?;
            Ok((status, text))
        });
        let (status, text) = result.map_err(|error| self.classify_transport(&error))?;
        self.read_answer(status, &text).map_err(|error| match error {
            CallError::Unavailable(reason) => CallError::Unavailable(self.key.scrub(&reason)),
            CallError::TimedOut(reason) => CallError::TimedOut(self.key.scrub(&reason)),
            CallError::Failed(reason) => CallError::Failed(self.key.scrub(&reason)),
        })
    }

    fn read_answer(&self, status: u16, text: &str) -> Result<String, CallError> {
        match status {
            200..=299 => {}
            401 | 403 => {
                return Err(CallError::Unavailable(format!(
                    "{} refused the request (HTTP {status}): check auxiliary.compression.api_key",
                    self.url
                )))
            }
            _ => {
                return Err(CallError::Failed(format!(
                    "{} answered HTTP {status}: {}",
                    self.url,
                    quote(text)
                )))
            }
        }
        let answer: Value = serde_json::from_str(text).map_err(|error| {
            CallError::Failed(format!(
                "{} answered malformed JSON ({error}): {}",
                self.url,
                quote(text)
            ))
        })?;
        let content = answer
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                CallError::Failed(format!(
                    "{} answered without choices[0].message.content: {}",
                    self.url,
                    quote(text)
                ))
            })?;
        Ok(content.to_owned())
    }

    fn classify_transport(&self, error: &ureq::Error) -> CallError {
        let shown = self.key.scrub(&error.to_string());
        match error {
            ureq::Error::Timeout(_) => CallError::TimedOut(format!(
                "{} after {} s waiting for {}",
                ctxhost_compressor::summary::TIMED_OUT,
                format_secs(self.timeout),
                self.url
            )),
            ureq::Error::Io(io) if io.kind() == io::ErrorKind::TimedOut => CallError::TimedOut(format!(
                "{} after {} s waiting for {}",
                ctxhost_compressor::summary::TIMED_OUT,
                format_secs(self.timeout),
                self.url
            )),
            ureq::Error::Io(_)
            | ureq::Error::HostNotFound
            | ureq::Error::ConnectionFailed
            | ureq::Error::BadUri(_)
            | ureq::Error::Tls(_)
            | ureq::Error::Rustls(_)
            | ureq::Error::Pem(_) => CallError::Unavailable(format!("cannot reach {}: {shown}", self.url)),
            _ => CallError::Failed(format!(
                "{} answered in a way that is not HTTP: {shown}",
                self.url
            )),
        }
    }
}

/// `2`, `0.5`: seconds as configured.
fn format_secs(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0}")
    } else {
        format!("{secs}")
    }
}

/// A short, one-line quote of a response body.
fn quote(text: &str) -> String {
    let flat = one_line(text);
    if flat.is_empty() {
        return "(empty body)".to_owned();
    }
    match flat.char_indices().nth(QUOTED_BODY_CHARS) {
        Some((at, _)) => format!("`{}…`", &flat[..at]),
        None => format!("`{flat}`"),
    }
}
