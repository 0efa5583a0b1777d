//! The safe side: the trait an engine author implements, and the host handle an engine is given.

use std::path::PathBuf;

use abi_stable::std_types::RStr;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::{
    ffi::{Counters, EngineError, HostBox, LogLevel, Usage},
    observe::{Fact, FactKind, RawFact},
    Message,
};

/// What the host knows about the model, handed to [`Engine::update_model`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelInfo {
    /// The model's name, e.g. `anthropic/claude-sonnet-4.6`.
    pub model: String,
    /// The model's context window in tokens.
    pub context_length: u64,
    /// Tokens reserved for the model's answer (`model.max_tokens`), when configured; the usable
    /// window is `context_length − max_tokens`.
    pub max_tokens: Option<u64>,
    /// The endpoint, when known.
    pub base_url: String,
    /// The provider, when known.
    pub provider: String,
}

impl ModelInfo {
    /// The usable window: `context_length − max_tokens` when an output reservation is set.
    pub fn window(&self) -> u64 {
        self.context_length.saturating_sub(self.max_tokens.unwrap_or(0))
    }
}

/// What the host tells an engine at the start of a session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionInfo {
    /// The model's name.
    pub model: String,
    /// The window in tokens.
    pub context_length: u64,
    /// Where the session runs (`ctxhost` for a replay).
    pub platform: String,
    /// Set on a compaction boundary: why the session was split.
    pub boundary_reason: Option<String>,
    /// Set on a compaction boundary: the session this one continues.
    pub old_session_id: Option<String>,
}

/// What [`Host::summarize`] is asked to summarise.
#[derive(Clone, Copy, Debug)]
pub struct SummarizeRequest<'a> {
    /// The messages to summarise.
    pub messages: &'a [Message],
    /// An earlier summary to update rather than start over.
    pub previous_summary: Option<&'a str>,
    /// What to spend most of the budget on.
    pub focus_topic: Option<&'a str>,
    /// The summary's target length in tokens.
    pub target_tokens: u64,
    /// Tokens of the input; a summary must be shorter.
    pub input_tokens: u64,
}

/// A summary written by the host's summarizer.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct HostSummary {
    /// The summary: the structured template's sections.
    pub summary: String,
    /// Who wrote it: `model:<name>` or `extractive`.
    pub summarizer: String,
    /// How many facts found in the messages were added to a model's summary.
    #[serde(default)]
    pub facts_added: u64,
}

/// Where the host keeps things (host service `paths`, see [`Host::paths`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostPaths {
    /// The config file's directory (the current directory when there is none): an engine
    /// resolves the relative paths of its config block against it.
    pub config_dir: PathBuf,
    /// Where an engine keeps its files by default (`.ctxhost/` in the config directory).
    pub data_dir: PathBuf,
}

impl HostPaths {
    /// What an engine assumes when the host does not say: the current directory, and
    /// `.ctxhost/` in it.
    pub fn current_dir() -> Self {
        let config_dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Self {
            data_dir: config_dir.join(".ctxhost"),
            config_dir,
        }
    }
}

/// The optional arguments of a `compress` call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompressRequest {
    /// The current prompt size, when the host knows it.
    pub current_tokens: Option<u64>,
    /// From a manual `/compress <focus>`: what the summary should spend its budget on.
    pub focus_topic: Option<String>,
}

/// The host, as an engine sees it: logging and named services.
///
/// Cheap to clone. Engines rarely log through it directly: the SDK forwards the engine's `tracing`
/// events here, so `tracing::info!` in a plugin lands in the host's log stream.
#[derive(Clone)]
pub struct Host {
    services: Option<HostBox>,
}

impl Host {
    /// A host reached through its services, as a factory receives them.
    pub fn new(services: HostBox) -> Self {
        Self {
            services: Some(services),
        }
    }

    /// No host at all: logs go to this library's own `tracing` subscriber and every service call
    /// answers "unknown". For tests of an engine in isolation.
    pub fn detached() -> Self {
        Self { services: None }
    }

    /// Calls the host service `service` with a JSON request.
    ///
    /// Errors with [`crate::ErrorKind::UNKNOWN_METHOD`] when the host does not offer it.
    pub fn call(&self, service: &str, request: &Value) -> Result<Value, EngineError> {
        let Some(services) = &self.services else {
            return Err(EngineError::unknown_method(service));
        };
        let request = request.to_string();
        let answer = services
            .call(RStr::from(service), RStr::from(request.as_str()))
            .into_result()?;
        serde_json::from_str(&answer).map_err(|error| {
            EngineError::invalid_input(format!("host service `{service}` answered invalid JSON: {error}"))
        })
    }

    /// Asks the host to summarise `request.messages` with the configured summarizer: the model
    /// set in `auxiliary.compression` (its summary grounded with the facts found in the
    /// messages), or the extractive summarizer when no model is configured.
    ///
    /// Host service `summarize`, added with interface version 1 (ctxhost 0.1). Errors of kind
    /// [`crate::ErrorKind::UNAVAILABLE`] mean the model cannot be reached (refused authentication,
    /// no connection, timeout): keep the context as it is. Any other error means the model
    /// answered uselessly: fall back to a summary of your own. A host without the service answers
    /// [`crate::ErrorKind::UNKNOWN_METHOD`].
    pub fn summarize(&self, request: &SummarizeRequest<'_>) -> Result<HostSummary, EngineError> {
        let request = serde_json::json!({
            "messages": request.messages,
            "previous_summary": request.previous_summary,
            "focus_topic": request.focus_topic,
            "target_tokens": request.target_tokens,
            "input_tokens": request.input_tokens,
        });
        let answer = self.call("summarize", &request)?;
        serde_json::from_value(answer).map_err(|error| {
            EngineError::invalid_input(format!("host service `summarize` answered: {error}"))
        })
    }

    /// Counts tokens of each text with the host's configured counter (`context.tokenizer`).
    ///
    /// Host service `count_tokens`, added with interface version 1 (ctxhost 0.1).
    pub fn count_tokens(&self, texts: &[&str]) -> Result<Vec<u64>, EngineError> {
        let answer = self.call("count_tokens", &serde_json::json!({ "texts": texts }))?;
        serde_json::from_value(answer["tokens"].clone()).map_err(|error| {
            EngineError::invalid_input(format!("host service `count_tokens` answered: {error}"))
        })
    }

    /// Where the host resolves paths and keeps data: see [`HostPaths`].
    ///
    /// Host service `paths`, a later addition (interface version 1 unchanged). An older host
    /// answers [`crate::ErrorKind::UNKNOWN_METHOD`]; fall back to [`HostPaths::current_dir`].
    pub fn paths(&self) -> Result<HostPaths, EngineError> {
        let answer = self.call("paths", &Value::Null)?;
        serde_json::from_value(answer)
            .map_err(|error| EngineError::invalid_input(format!("host service `paths` answered: {error}")))
    }

    /// Whether the host offers the service `service`.
    pub fn supports(&self, service: &str) -> bool {
        match self.call("services", &Value::Null) {
            Ok(Value::Array(names)) => names.iter().any(|name| name.as_str() == Some(service)),
            _ => false,
        }
    }

    pub(crate) fn log(&self, level: LogLevel, target: &str, message: &str) {
        if let Some(services) = &self.services {
            services.log(level, RStr::from(target), RStr::from(message));
        }
    }
}

/// A context engine: what an engine author implements.
///
/// Only [`NAME`](Engine::NAME), [`new`](Engine::new), the two counter accessors and
/// [`compress`](Engine::compress) are required; every other method has the contract's default.
/// Export the type from a `cdylib` with [`crate::export_engine!`]. Panics in any method are caught
/// at the boundary and reported to the host as errors; the host keeps the context as it was.
pub trait Engine: Send + 'static {
    /// The name users write in `context.engine`; must equal `name` in `plugin.yaml`.
    const NAME: &'static str;

    /// Creates the engine from its config block (the value under its name in `config.yaml`,
    /// `null` when there is none) and the host.
    fn new(config: &Value, host: Host) -> Result<Self, EngineError>
    where
        Self: Sized;

    /// The contract's counters.
    fn counters(&self) -> &Counters;

    /// The counters, for the default methods to update.
    fn counters_mut(&mut self) -> &mut Counters;

    /// Returns a new, usually shorter, valid sequence of messages.
    ///
    /// An error leaves the host's context as it was. Return [`EngineError::unavailable`] when a
    /// service you need (a model) cannot be reached.
    ///
    /// # The rules the host checks
    ///
    /// The host refuses a result that breaks one of these, keeps its context as it was, and
    /// reports the engine's error (interface version 1; the same checks for every engine):
    ///
    /// - **Not empty** when the input was not.
    /// - **A valid sequence**: every tool result comes right after the assistant message whose
    ///   call it answers (a message's results follow it, before anything else), every call is
    ///   answered exactly once, and no call has an empty id or name. Problems the input already
    ///   had are not held against the engine.
    /// - **The system message** (when the input starts with one) is still first, its text
    ///   unchanged at its start: a note may be appended to it, nothing else. No other `system`
    ///   message is added.
    /// - **The user's last message**, the newest message the user sent, is still there as a
    ///   `user` message: unchanged, or with a note merged before or after its text in that same
    ///   message. The host knows which message that is because it appended it: a `user` message
    ///   an engine wrote (a summary, a note) is never taken for it. When an engine looks for it
    ///   itself, it must skip the messages it wrote, which is why those should carry a fixed
    ///   marker (the compressor starts its summary with `[CONTEXT COMPACTION]`).
    /// - **It is still the newest**: no message kept word for word from before it comes after
    ///   it. Users repeat themselves ("continue"): keeping an earlier message of the same text,
    ///   with the turn that followed it, in place of the newest is refused.
    /// - **Tool-call arguments are JSON**, unless the input's call of that id had arguments that
    ///   were not (a freeform tool's input, as Codex's `apply_patch` patch: text it stays).
    ///
    /// Within those rules an engine may:
    ///
    /// - insert messages of role `user` or `assistant` (a summary, a note) anywhere outside a
    ///   tool group (between an assistant's calls and their results nothing may stand);
    /// - replace a tool result's content with a stand-in, keeping its `tool_call_id`;
    /// - shorten a tool call's arguments (keeping them valid JSON, or text when they were text);
    /// - drop any other message, whole tool groups at a time.
    ///
    /// Size is not checked: a result larger than its input is applied (a replay warns once), and
    /// a context over the model's window is reported as any overrun is.
    ///
    /// Returning the input unchanged means there was nothing to compact; the host reports it so,
    /// not as a compaction.
    fn compress(
        &mut self,
        messages: Vec<Message>,
        request: &CompressRequest,
    ) -> Result<Vec<Message>, EngineError>;

    /// [`compress`](Engine::compress) on messages the caller keeps. Only a host that links the
    /// engine into its own binary calls it (a plugin's messages arrive as JSON, parsed into a
    /// `Vec` that `compress` takes): the host must keep its context until the result is checked,
    /// and this spares it a copy of the whole context on every compaction. Default: `compress` of
    /// a copy.
    fn compress_borrowed(
        &mut self,
        messages: &[Message],
        request: &CompressRequest,
    ) -> Result<Vec<Message>, EngineError> {
        self.compress(messages.to_vec(), request)
    }

    /// The share of the window at which compaction fires, used by the default
    /// [`update_model`](Engine::update_model).
    fn threshold_percent(&self) -> f64 {
        0.75
    }

    /// After every model response. Default: record the usage in the counters.
    fn update_from_response(&mut self, usage: &Usage) {
        let counters = self.counters_mut();
        counters.last_prompt_tokens = usage.prompt_tokens;
        counters.last_completion_tokens = usage.completion_tokens;
        counters.last_total_tokens = usage.total_tokens;
    }

    /// Whether to compact now. Default: the prompt (or the last one) is at or over the threshold.
    fn should_compress(&mut self, prompt_tokens: Option<u64>) -> bool {
        let counters = self.counters();
        let tokens = prompt_tokens.unwrap_or(counters.last_prompt_tokens);
        counters.threshold_tokens > 0 && tokens >= counters.threshold_tokens
    }

    /// A cheap estimate before a model call. Default: false.
    fn should_compress_preflight(&mut self, _messages: &[Message]) -> bool {
        false
    }

    /// [`should_compress_preflight`](Engine::should_compress_preflight) from a host that keeps the
    /// rough estimate of its context as it grows: `rough_tokens` is the sum, over `messages`, of
    /// the kit's `estimate_message_tokens` (characters ÷ 4 rounded up, plus the images and a
    /// message's overhead), which an engine would otherwise count again before every model call.
    /// Only a linked engine is asked this way. Default: `should_compress_preflight(messages)`.
    fn should_compress_preflight_estimated(&mut self, messages: &[Message], rough_tokens: u64) -> bool {
        let _ = rough_tokens;
        self.should_compress_preflight(messages)
    }

    /// Whether anything could be compacted. Default: true.
    fn has_content_to_compress(&mut self, _messages: &[Message]) -> bool {
        true
    }

    /// At the start of a session. Default: nothing.
    fn on_session_start(&mut self, _session_id: &str, _info: &SessionInfo) -> Result<(), EngineError> {
        Ok(())
    }

    /// At a real session boundary (exit, `/reset`, expiry). Default: nothing.
    fn on_session_end(&mut self, _session_id: &str, _messages: &[Message]) -> Result<(), EngineError> {
        Ok(())
    }

    /// On `/new` or `/reset`. Default: zero the token counters and `compression_count`.
    fn on_session_reset(&mut self) {
        let counters = self.counters_mut();
        *counters = Counters {
            threshold_tokens: counters.threshold_tokens,
            context_length: counters.context_length,
            ..Counters::default()
        };
    }

    /// When the model or its window changes. Default: set `context_length` and
    /// `threshold_tokens = floor(window × threshold_percent)`, the window being
    /// [`ModelInfo::window`].
    fn update_model(&mut self, model: &ModelInfo) {
        let percent = self.threshold_percent();
        let counters = self.counters_mut();
        counters.context_length = model.context_length;
        counters.threshold_tokens = (model.window() as f64 * percent).floor() as u64;
    }

    /// Tools the engine offers the agent: `{name, description, parameters}` each. Default: none.
    fn get_tool_schemas(&self) -> Vec<Value> {
        Vec::new()
    }

    /// Runs one of the engine's tools. Always answer JSON, errors as `{"error": …}`.
    fn handle_tool_call(&mut self, name: &str, _arguments: &Value, _messages: Option<&[Message]>) -> Value {
        json!({ "error": format!("Unknown context engine tool: {name}") })
    }

    /// The engine's state for display. Default: the contract's status object.
    fn get_status(&self) -> Value {
        default_status(self.counters())
    }

    /// The kinds of fact this engine wants when it runs as an observer (`context.observers`).
    /// Default: none (it still sees the lifecycle through the contract's methods).
    ///
    /// A later addition, as the capability [`crate::observe::EXT_INTERESTS`]: an older host
    /// never asks, and never delivers facts.
    fn interests(&self) -> Vec<FactKind> {
        Vec::new()
    }

    /// Receives one fact of a kind named in [`interests`](Engine::interests), in the order the
    /// session published them, on the observer's own thread. An observer never changes the
    /// context: this is the only way it hears of the session besides the lifecycle methods. An
    /// error detaches the observer for the rest of the session (the host warns once).
    ///
    /// A later addition, as the capability [`crate::observe::EXT_OBSERVE`].
    fn observe(&mut self, _fact: &Fact) -> Result<(), EngineError> {
        Ok(())
    }

    /// [`observe`](Engine::observe) for a fact that crossed the library boundary, given as the
    /// JSON the host sent. Default: read it into a [`Fact`] and call `observe`, so an engine that
    /// does not override it sees no difference.
    ///
    /// Override it when reading every message into a [`Message`] costs more than the work done
    /// with it: an engine that stores messages can keep the bytes it received
    /// ([`RawFact::view`]). A host that links the engine into its own binary still calls
    /// `observe` with the fact it holds, so `observe` must do the same work.
    ///
    /// A later addition: the host sends the same `observe` call as before, and only the SDK
    /// routes it here, so neither an older host nor an older plugin notices.
    fn observe_raw(&mut self, fact: &RawFact<'_>) -> Result<(), EngineError> {
        self.observe(&fact.to_fact()?)
    }

    /// Called on the observer's thread when its queue ran dry: every fact published so far has
    /// been handed to [`observe`](Engine::observe). An observer that batches work across facts
    /// (a store writing many facts in one transaction) finishes it here; until then, facts keep
    /// coming faster than they are handled. An error detaches the observer, as from `observe`.
    /// Default: nothing to do.
    ///
    /// A later addition, as the capability [`crate::observe::EXT_OBSERVE_IDLE`]: an older host
    /// never calls it, so an engine must not rely on it before it has been called once.
    fn observe_idle(&mut self) -> Result<(), EngineError> {
        Ok(())
    }

    /// Capabilities beyond the contract, by name. Default: every name is unknown.
    fn call_ext(&mut self, method: &str, _request: &Value) -> Result<Value, EngineError> {
        Err(EngineError::unknown_method(method))
    }

    /// The names [`call_ext`](Engine::call_ext) answers. Default: none.
    fn ext_methods(&self) -> Vec<&'static str> {
        Vec::new()
    }
}

/// The contract's default status object for `counters`.
pub fn default_status(counters: &Counters) -> Value {
    let usage_percent = if counters.context_length == 0 {
        0.0
    } else {
        (counters.last_prompt_tokens as f64 / counters.context_length as f64 * 100.0).min(100.0)
    };
    json!({
        "last_prompt_tokens": counters.last_prompt_tokens,
        "threshold_tokens": counters.threshold_tokens,
        "context_length": counters.context_length,
        "usage_percent": usage_percent,
        "compression_count": counters.compression_count,
    })
}
