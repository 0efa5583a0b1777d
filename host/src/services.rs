//! What the host offers engines through the ABI: logging, and named services.
//!
//! A new service is a new name answered by [`HostServices::call`], never a new method, so plugins
//! built against an older interface keep loading. The services:
//!
//! - `services` → the names below;
//! - `log.max_level` → `"info"`, `"debug"`…;
//! - `summarizer.info` → `{"configured": bool, "model": str}`;
//! - `summarize` → `{"summary", "summarizer", "facts_added"}` from `{"messages", "transcript"?,
//!   "previous_summary"?, "focus_topic"?, "target_tokens"?, "input_tokens"?}` (see
//!   [`crate::summarize`]). Errors: `UNAVAILABLE` when the model cannot be reached (abort; the
//!   message starts with `timed out` for a timeout), `OTHER` when it answered uselessly (fall
//!   back), `INVALID_INPUT` for a malformed request. No message ever holds the API key;
//! - `count_tokens` → `{"counter", "tokens": [n…], "total"}` from
//!   `{"texts"?: [str…], "messages"?: […]}`, counted with `context.tokenizer` (see
//!   [`crate::tokens::count_tokens_service`]);
//! - `paths` → `{"config_dir", "data_dir"}`, absolute: the config file's directory (the current
//!   directory without one), against which an engine resolves the relative paths of its block,
//!   and the data directory, `.ctxhost/` in it, where an engine keeps its files by default.
//!
//! What the services need from the settings is built once, as a [`ServiceContext`] every engine's
//! services share.

use std::{
    panic::{self, AssertUnwindSafe},
    path::{Path, PathBuf},
    sync::Arc,
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RArc, RResult, RStr, RString},
};
use ctxhost_compressor::summary::{SERVICE_INFO, SERVICE_SUMMARIZE};
use ctxhost_engine_abi::{
    ffi::{HostBox, HostServices, HostServices_TO, LogLevel},
    EngineError,
};
use serde_json::json;
use tracing::level_filters::LevelFilter;

use crate::{
    config::{Settings, SummarizerSettings},
    summarize::{CallError, SummarizeRequest, Summarizer},
    tokens::{count_tokens_service, TokenCounter},
};

/// Host service: token counts with the host's counter (what `Host::count_tokens` asks).
pub const SERVICE_COUNT_TOKENS: &str = "count_tokens";

/// Host service: where engines resolve relative paths and keep their files.
pub const SERVICE_PATHS: &str = "paths";

/// The data directory's name, inside the config file's directory.
pub const DATA_DIR_NAME: &str = ".ctxhost";

/// The service names this host answers.
pub const SERVICES: &[&str] = &[
    "services",
    "log.max_level",
    SERVICE_INFO,
    SERVICE_SUMMARIZE,
    SERVICE_COUNT_TOKENS,
    SERVICE_PATHS,
];

/// What the services need from the settings, built once and shared by every engine's services.
#[derive(Debug, Default)]
pub struct ServiceContext {
    summarizer: Summarizer,
    token_counter: TokenCounter,
    /// The config file's directory; `None`: the current directory.
    config_dir: Option<PathBuf>,
    /// Where the config's keys are written: a plugin's warning about a key of its block is
    /// said with the file and line, as the host's own are.
    keys: crate::config::KeyLocations,
}

impl ServiceContext {
    /// The context for `settings`; the summarizer's key is read from the environment when the
    /// file names a variable instead of a key.
    pub fn from_settings(settings: &Settings) -> Arc<Self> {
        Arc::new(Self {
            summarizer: Summarizer::new(
                &settings.summarizer,
                settings
                    .summarizer
                    .resolve_api_key(|name| std::env::var(name).ok()),
            ),
            token_counter: TokenCounter::new(settings.tokenizer),
            config_dir: settings
                .source
                .as_deref()
                .and_then(Path::parent)
                .map(Path::to_owned),
            keys: settings.key_locations(),
        })
    }

    /// The answer of the `paths` service: absolute config and data directories.
    pub fn paths(&self) -> serde_json::Value {
        let cwd = std::env::current_dir().unwrap_or_default();
        let config_dir = match &self.config_dir {
            Some(dir) => cwd.join(dir),
            None => cwd,
        };
        json!({
            "config_dir": config_dir.display().to_string(),
            "data_dir": config_dir.join(DATA_DIR_NAME).display().to_string(),
        })
    }

    /// The context with the summarizer of `settings` (its key looked up with `env` when needed)
    /// and the rough token counter.
    pub fn with_summarizer(settings: &SummarizerSettings, env: impl Fn(&str) -> Option<String>) -> Arc<Self> {
        Arc::new(Self {
            summarizer: Summarizer::new(settings, settings.resolve_api_key(env)),
            token_counter: TokenCounter::default(),
            config_dir: None,
            keys: crate::config::KeyLocations::default(),
        })
    }

    /// No model: `summarize` answers with the extractive summary.
    pub fn without_model() -> Arc<Self> {
        Arc::default()
    }
}

thread_local! {
    /// The warnings engines log while [`warnings_while`] runs on this thread.
    static STARTING_WARNINGS: std::cell::RefCell<Option<Vec<String>>> = const { std::cell::RefCell::new(None) };
    /// The context of the engine being created on this thread ([`creating_with`]).
    static CREATING: std::cell::RefCell<Option<Arc<ServiceContext>>> = const { std::cell::RefCell::new(None) };
}

/// Runs `create` (an engine's factory) with `context` as the one its log lines are placed
/// against: a plugin's SDK may log through the services of the first engine its library made (a
/// logger is set once per library), whose config is another session's.
pub fn creating_with<T>(context: &Arc<ServiceContext>, create: impl FnOnce() -> T) -> T {
    let outer = CREATING.with(|current| current.borrow_mut().replace(Arc::clone(context)));
    let created = create();
    CREATING.with(|current| *current.borrow_mut() = outer);
    created
}

/// Runs `start` (creating an engine in this process) and returns, besides what it returns, the
/// warnings the engines it created logged meanwhile (a key of its block it does not know), as
/// `engine \`NAME\`: …` lines: for `serve` to hand them to its client with its own. They are
/// logged all the same.
pub fn warnings_while<T>(start: impl FnOnce() -> T) -> (T, Vec<String>) {
    let outer = STARTING_WARNINGS.with(|caught| caught.borrow_mut().replace(Vec::new()));
    let value = start();
    let warnings = STARTING_WARNINGS.with(|caught| std::mem::replace(&mut *caught.borrow_mut(), outer));
    (value, warnings.unwrap_or_default())
}

/// The host's services for one engine; log lines are labelled with the engine's name.
#[derive(Clone)]
struct EngineServices {
    engine: Arc<str>,
    context: Arc<ServiceContext>,
}

/// The services handed to engine `engine` when it is created, sharing `context`.
pub fn host_services_for(engine: &str, context: &Arc<ServiceContext>) -> HostBox {
    HostServices_TO::from_ptr(
        RArc::new(EngineServices {
            engine: Arc::from(engine),
            context: Arc::clone(context),
        }),
        TD_Opaque,
    )
}

impl HostServices for EngineServices {
    // Both methods run inside a plugin's call: a panic here would cross the boundary and abort the
    // process, so each body is caught.
    fn log(&self, level: LogLevel, target: RStr<'_>, message: RStr<'_>) {
        let _ = panic::catch_unwind(AssertUnwindSafe(|| {
            self.write_log(level, target.as_str(), message.as_str())
        }));
    }

    fn call(&self, service: RStr<'_>, request: RStr<'_>) -> RResult<RString, EngineError> {
        panic::catch_unwind(AssertUnwindSafe(|| {
            self.answer(service.as_str(), request.as_str())
        }))
        .unwrap_or_else(|_| RResult::RErr(EngineError::other(format!("host service `{service}` panicked"))))
    }
}

impl EngineServices {
    fn write_log(&self, level: LogLevel, target: &str, message: &str) {
        let engine = &*self.engine;
        let located;
        let creating = CREATING.with(|current| current.borrow().clone());
        let keys = &creating.as_ref().unwrap_or(&self.context).keys;
        let message = match self.key_named_by(message).and_then(|key| keys.locate(key)) {
            Some(at) => {
                located = format!("{at}: {message}");
                located.as_str()
            }
            None => message,
        };
        if level == LogLevel::WARN {
            STARTING_WARNINGS.with(|caught| {
                if let Some(caught) = caught.borrow_mut().as_mut() {
                    caught.push(format!("engine `{engine}`: {message}"));
                }
            });
        }
        match level {
            LogLevel::ERROR => tracing::error!(target: "engine", engine, source = target, "{message}"),
            LogLevel::WARN => tracing::warn!(target: "engine", engine, source = target, "{message}"),
            LogLevel::INFO => tracing::info!(target: "engine", engine, source = target, "{message}"),
            LogLevel::DEBUG => tracing::debug!(target: "engine", engine, source = target, "{message}"),
            _ => tracing::trace!(target: "engine", engine, source = target, "{message}"),
        }
    }

    /// The key of the engine's block a message opens with (`lcm.databse: unknown setting…`, as
    /// the SDK's config readers say it), if it does.
    fn key_named_by<'m>(&self, message: &'m str) -> Option<&'m str> {
        let (key, _) = message.split_once(": ")?;
        let rest = key.strip_prefix(&*self.engine)?.strip_prefix('.')?;
        let is_key = !rest.is_empty()
            && rest
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'-'));
        is_key.then_some(key)
    }

    fn answer(&self, service: &str, request: &str) -> RResult<RString, EngineError> {
        let answer = match service {
            "services" => json!(SERVICES),
            "log.max_level" => json!(max_level_name()),
            SERVICE_INFO => self.context.summarizer.info(),
            SERVICE_PATHS => self.context.paths(),
            SERVICE_COUNT_TOKENS => {
                let request = match serde_json::from_str(request) {
                    Ok(request) => request,
                    Err(error) => {
                        return RResult::RErr(EngineError::invalid_input(format!(
                            "`{service}`: malformed request: {error}"
                        )))
                    }
                };
                match count_tokens_service(&self.context.token_counter, &request) {
                    Ok(answer) => answer,
                    Err(error) => return RResult::RErr(error),
                }
            }
            SERVICE_SUMMARIZE => match self.summarize(request) {
                Ok(answer) => answer,
                Err(error) => return RResult::RErr(error),
            },
            other => return RResult::RErr(EngineError::unknown_method(other)),
        };
        RResult::ROk(RString::from(answer.to_string()))
    }

    fn summarize(&self, request: &str) -> Result<serde_json::Value, EngineError> {
        let request: SummarizeRequest = serde_json::from_str(request).map_err(|error| {
            EngineError::invalid_input(format!("`{SERVICE_SUMMARIZE}`: malformed request: {error}"))
        })?;
        let engine = &*self.engine;
        match self.context.summarizer.summarize(&request) {
            Ok(answer) => Ok(serde_json::to_value(answer).unwrap_or_default()),
            Err(CallError::Unavailable(reason) | CallError::TimedOut(reason)) => {
                tracing::debug!(engine, "summarizer unavailable: {reason}");
                Err(EngineError::unavailable(reason))
            }
            Err(CallError::Failed(reason)) => {
                tracing::debug!(engine, "summarizer failed: {reason}");
                Err(EngineError::other(reason))
            }
        }
    }
}

fn max_level_name() -> &'static str {
    match LevelFilter::current() {
        LevelFilter::OFF => "off",
        LevelFilter::ERROR => "error",
        LevelFilter::WARN => "warn",
        LevelFilter::INFO => "info",
        LevelFilter::DEBUG => "debug",
        _ => "trace",
    }
}
