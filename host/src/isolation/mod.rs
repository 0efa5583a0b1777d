//! Process isolation: a plugin engine in a child `ctxhost serve` of its own, spoken to through the
//! protocol's client end, so that an engine that aborts, segfaults, exits, hangs or eats memory
//! ends its child and never the host.
//!
//! [`ChildEngine`] is what the engine handle ([`crate::engine::EngineHandle`]) calls; the handle
//! keeps containment's other half (checking results, timing) as for any engine.
//!
//! - The child opens the same library the host would have, with the same config block; the
//!   engine's author changes nothing.
//! - Every call has a deadline (`isolation.deadlines`); a child that dies or passes it is killed
//!   and reaped, and the call fails with the cause (the signal by name, the exit code, or the
//!   deadline) and the child's last words when it printed any.
//! - The next call starts a fresh child, and tells it the model and the session it is in
//!   (`update_model`, `on_session_start`): what the engine kept in memory is lost.
//! - After `isolation.crashes_before_detach` losses in a row the failure says the engine is to be
//!   detached; the handle then puts the built-in compressor in its place.
//! - The counters come with every answer, so reading them costs no round trip.

pub mod limits;
pub mod process;

use std::{ffi::OsString, path::PathBuf, time::Duration};

use ctxhost_engine_abi::{
    messages_from_json, messages_to_json, Counters, EngineError, ErrorKind, Message, ModelInfo, SessionInfo,
    Usage,
};
use ctxhost_protocol::{
    code, compress_params_around, method, Answer, CallExtParams, EngineInfo, Initialized, OpenParams,
    RpcError, SessionEndParams, SessionParams, SessionStartParams, ShouldCompressParams, ToolCallParams,
    UpdateModelParams, UsageParams,
};
use serde::{de::DeserializeOwned, Serialize};
use serde_json::{value::RawValue, Value};

use self::process::{CallFailure, Ending, LiveChild};
use crate::config::{Isolation, IsolationSettings, Settings};

/// How long a child is given to end its session and exit when the host is done with it.
const FINISH_GRACE: Duration = Duration::from_secs(5);

/// The address space the child's allocator reserves at a time when it runs under
/// `address_space_mb` (mimalloc's option; its default is 1 GiB).
const CHILD_ARENA_RESERVE: &str = "32MiB";

/// How to start a child for one engine.
#[derive(Clone, Debug)]
pub struct ChildSpec {
    /// The `ctxhost` binary.
    pub program: PathBuf,
    /// Its arguments, up to and including `serve` and serve's own.
    pub args: Vec<OsString>,
    /// The engine, by the name its plugin folder is selected with.
    pub engine: String,
    /// The config block the engine is created with (`null`: none).
    pub engine_config: Value,
    /// Deadlines, crashes tolerated, limits.
    pub bounds: IsolationSettings,
}

impl ChildSpec {
    /// A child running engine `engine` as `settings` configure it: the same config file and
    /// plugins directory, the engine in the child's own process, within the configured limits.
    pub fn new(engine: &str, settings: &Settings) -> std::io::Result<Self> {
        let bounds = settings.isolation_settings.clone();
        let program = match &bounds.server {
            Some(program) => program.clone(),
            None => std::env::current_exe()?,
        };
        let mut args: Vec<OsString> = Vec::new();
        if let Some(config) = &settings.source {
            args.extend(["--config".into(), config.clone().into_os_string()]);
        }
        args.extend([
            // As the host names it: the child runs in the host's directory, and its messages name
            // a plugin's files as the host's do.
            "--plugins-dir".into(),
            settings.plugins_dir.clone().into_os_string(),
            "--isolation".into(),
            Isolation::InProcess.to_string().into(),
        ]);
        // The child logs as much as the host does.
        if tracing::enabled!(tracing::Level::DEBUG) {
            args.push("-vv".into());
        } else if tracing::enabled!(tracing::Level::INFO) {
            args.push("-v".into());
        }
        args.extend([
            "serve".into(),
            "--parent-pid".into(),
            std::process::id().to_string().into(),
        ]);
        if let Some(mb) = bounds.limits.address_space_mb {
            args.extend(["--limit-address-space-mb".into(), mb.to_string().into()]);
        }
        if let Some(seconds) = bounds.limits.cpu_seconds {
            args.extend(["--limit-cpu-seconds".into(), seconds.to_string().into()]);
        }
        Ok(Self {
            program,
            args,
            engine: engine.to_owned(),
            engine_config: settings.engine_block(engine),
            bounds,
        })
    }
}

/// Why a child could not be started with its engine.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The binary could not be run.
    #[error("cannot start `{program}` for it: {error}")]
    Spawn {
        /// The binary.
        program: String,
        /// Why.
        error: std::io::Error,
    },
    /// The child said the engine cannot be used (the reason the host gives in process).
    #[error("{0}")]
    Refused(String),
    /// The child died or hung while starting.
    #[error("{0}, while starting (opening the library and creating the engine)")]
    Lost(Ending),
    /// A fresh child died or hung in `on_session_start`, given to it to resume the session the
    /// last one was in.
    #[error("{0}, in `on_session_start` (a fresh process is given it to resume the session)")]
    LostResuming(Ending),
}

/// A failed call to a child.
#[derive(Debug)]
pub enum ChildError {
    /// The engine returned an error or panicked (the child lives on).
    Engine(EngineError),
    /// The child refused the engine's answer as breaking the contract.
    Invalid(String),
    /// The child is gone: why, and whether this was one crash too many.
    Lost {
        /// The cause, in words.
        cause: String,
        /// Whether the engine must now be detached.
        detach: bool,
    },
}

/// An engine in a child process.
pub struct ChildEngine {
    spec: ChildSpec,
    live: Option<LiveChild>,
    /// The session's id on the child's server.
    session: String,
    model: Option<ModelInfo>,
    started: Option<(String, SessionInfo)>,
    counters: Counters,
    /// Losses with no successful call in between.
    crashes_in_row: u32,
    /// Losses of each method with no success of that method in between: an engine that crashes
    /// in one method every time is detached even when its other calls succeed in between.
    method_streaks: std::collections::HashMap<&'static str, u32>,
    /// Children started, the first included.
    starts: u32,
    /// Whether the child serves `compress/unchecked` (an older `isolation.server` may not).
    unchecked: bool,
}

impl ChildEngine {
    /// Starts the first child: handshake, session opened with the engine.
    pub fn start(spec: ChildSpec) -> Result<Self, StartError> {
        let mut engine = Self {
            spec,
            live: None,
            session: String::new(),
            model: None,
            started: None,
            counters: Counters::default(),
            crashes_in_row: 0,
            method_streaks: std::collections::HashMap::new(),
            starts: 0,
            unchecked: false,
        };
        engine.spawn()?;
        Ok(engine)
    }

    /// The live child's process id.
    pub fn pid(&self) -> Option<u32> {
        self.live.as_ref().map(LiveChild::pid)
    }

    /// The counters of the last answer.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The model, once told.
    pub fn model(&self) -> Option<&ModelInfo> {
        self.model.as_ref()
    }

    /// The session the engine is in.
    pub fn started(&self) -> Option<&(String, SessionInfo)> {
        self.started.as_ref()
    }

    fn spawn(&mut self) -> Result<(), StartError> {
        let mut command = std::process::Command::new(&self.spec.program);
        command.args(&self.spec.args);
        if self.spec.bounds.limits.address_space_mb.is_some() {
            // The binary's allocator (mimalloc) reserves 1 GiB of address space up front, which
            // RLIMIT_AS counts: under a small limit the child could not even open its library.
            // Reserved in small pieces, the limit counts what the engine allocates.
            command.env("MIMALLOC_ARENA_RESERVE", CHILD_ARENA_RESERVE);
        }
        let mut live = LiveChild::spawn(command, &self.spec.engine).map_err(|error| StartError::Spawn {
            program: self.spec.program.display().to_string(),
            error,
        })?;
        self.starts += 1;
        let deadline = self.spec.bounds.deadlines.of("start");
        let refused = |error: RpcError| StartError::Refused(error.message);
        let handshake = ctxhost_protocol::InitializeParams {
            protocol_version: ctxhost_protocol::PROTOCOL_VERSION,
            client_name: "ctxhost-isolation".to_owned(),
            client_version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        };
        let lost_or_refused = |failure| match failure {
            CallFailure::Answered(error) => refused(error),
            CallFailure::Unexpected(problem) => {
                StartError::Refused(format!("its process answered the handshake wrongly: {problem}"))
            }
            CallFailure::Lost(ending) => StartError::Lost(ending),
        };
        let initialized: Initialized = live
            .call(method::INITIALIZE, &handshake, deadline)
            .map_err(lost_or_refused)?;
        self.unchecked = initialized
            .capabilities
            .iter()
            .any(|name| name == method::COMPRESS_UNCHECKED);
        let open = OpenParams {
            engine: Some(self.spec.engine.clone()),
            engine_config: (!self.spec.engine_config.is_null()).then(|| self.spec.engine_config.clone()),
            model: self.model.clone(),
            // The host runs the observers; the child runs its one engine and nothing else.
            observers: Some(Vec::new()),
            ..OpenParams::default()
        };
        let opened: Answer<EngineInfo> = live
            .call(method::SESSION_OPEN, &open, deadline)
            .map_err(lost_or_refused)?;
        if let Some(fallback) = opened.value.fallback {
            // The child would run its built-in compressor: the host decides that, not the child.
            let _ = live.finish(FINISH_GRACE);
            return Err(StartError::Refused(fallback.reason));
        }
        self.session = opened.value.session;
        self.counters = opened.counters;
        if let Some((session_id, info)) = &self.started {
            let params = SessionStartParams {
                session: self.session.clone(),
                session_id: session_id.clone(),
                info: info.clone(),
            };
            let answer: Answer<()> = live
                .call(
                    method::ON_SESSION_START,
                    &params,
                    self.spec.bounds.deadlines.of("other"),
                )
                .map_err(|failure| match failure {
                    CallFailure::Lost(ending) => StartError::LostResuming(ending),
                    failure => lost_or_refused(failure),
                })?;
            self.counters = answer.counters;
        }
        self.live = Some(live);
        Ok(())
    }

    /// Calls `name` with the params `build` makes for the session; starts a fresh child first
    /// when the last one was lost.
    fn call<P: Serialize, T: DeserializeOwned>(
        &mut self,
        name: &'static str,
        build: impl FnOnce(String) -> P,
    ) -> Result<T, ChildError> {
        self.call_with(name, |live, session, deadline| {
            live.call::<P, Answer<T>>(name, &build(session.to_owned()), deadline)
        })
    }

    /// Calls `name` through `send`, given the live child, the session and the deadline; starts a
    /// fresh child first when the last one was lost.
    fn call_with<T>(
        &mut self,
        name: &'static str,
        send: impl FnOnce(&mut LiveChild, &str, Duration) -> Result<Answer<T>, CallFailure>,
    ) -> Result<T, ChildError> {
        if self.live.is_none() {
            match self.spawn() {
                Ok(()) => {}
                Err(error) => {
                    return Err(self.lost(name, format!("its process could not be started again: {error}")))
                }
            }
        }
        let deadline = self.spec.bounds.deadlines.of(name);
        let live = self.live.as_mut().expect("started above");
        match send(live, &self.session, deadline) {
            Ok(answer) => {
                self.counters = answer.counters;
                self.survived(name);
                Ok(answer.value)
            }
            Err(CallFailure::Answered(error)) => {
                // An engine that answers with an error is alive: not a crash.
                self.survived(name);
                Err(child_error(name, error))
            }
            Err(CallFailure::Unexpected(problem)) => {
                self.survived(name);
                Err(ChildError::Invalid(problem))
            }
            Err(CallFailure::Lost(ending)) => {
                self.live = None;
                Err(self.lost(name, ending.to_string()))
            }
        }
    }

    fn survived(&mut self, name: &'static str) {
        self.crashes_in_row = 0;
        self.method_streaks.remove(name);
    }

    fn lost(&mut self, name: &'static str, cause: String) -> ChildError {
        self.crashes_in_row += 1;
        let streak = self.method_streaks.entry(name).or_default();
        *streak += 1;
        let limit = self.spec.bounds.crashes_before_detach;
        ChildError::Lost {
            cause,
            detach: self.crashes_in_row >= limit || *streak >= limit,
        }
    }

    /// How many crashes in a row detach the engine.
    pub fn crashes_before_detach(&self) -> u32 {
        self.spec.bounds.crashes_before_detach
    }

    /// `update_model`.
    pub fn update_model(&mut self, model: &ModelInfo) -> Result<(), ChildError> {
        // Remembered first: a fresh child is told the model even when this call is what failed.
        self.model = Some(model.clone());
        self.call(method::UPDATE_MODEL, |session| UpdateModelParams {
            session,
            model: model.clone(),
        })
    }

    /// `on_session_start`.
    pub fn on_session_start(&mut self, session_id: &str, info: &SessionInfo) -> Result<(), ChildError> {
        self.started = Some((session_id.to_owned(), info.clone()));
        self.call(method::ON_SESSION_START, |session| SessionStartParams {
            session,
            session_id: session_id.to_owned(),
            info: info.clone(),
        })
    }

    /// `on_session_end`.
    pub fn on_session_end(&mut self, session_id: &str, messages: &[Message]) -> Result<(), ChildError> {
        if self.started.as_ref().is_some_and(|(id, _)| id == session_id) {
            self.started = None;
        }
        self.call(method::ON_SESSION_END, |session| SessionEndParams {
            session,
            session_id: session_id.to_owned(),
            messages: messages.to_vec(),
        })
    }

    /// `on_session_reset`.
    pub fn on_session_reset(&mut self) -> Result<(), ChildError> {
        self.call(method::ON_SESSION_RESET, |session| SessionParams { session })
    }

    /// `update_from_response`.
    pub fn update_from_response(&mut self, usage: Usage) -> Result<(), ChildError> {
        self.call(method::UPDATE_FROM_RESPONSE, |session| UsageParams {
            session,
            usage: usage.into(),
        })
    }

    /// `should_compress`.
    pub fn should_compress(&mut self, prompt_tokens: Option<u64>) -> Result<bool, ChildError> {
        self.call(method::SHOULD_COMPRESS, |session| ShouldCompressParams {
            session,
            prompt_tokens,
        })
    }

    /// `should_compress_preflight`.
    pub fn should_compress_preflight(&mut self, messages: &[Message]) -> Result<bool, ChildError> {
        self.call(method::SHOULD_COMPRESS_PREFLIGHT, |session| MessagesRef {
            session,
            messages,
        })
    }

    /// `has_content_to_compress`.
    pub fn has_content_to_compress(&mut self, messages: &[Message]) -> Result<bool, ChildError> {
        self.call(method::HAS_CONTENT_TO_COMPRESS, |session| MessagesRef {
            session,
            messages,
        })
    }

    /// `compress`; `json` is the messages' JSON when the caller keeps it, `user_message` the
    /// index of the user's last message in `messages`.
    ///
    /// The request carries the context's JSON as it is. A child that serves `compress/unchecked`
    /// returns the engine's answer as it came: the engine handle reads and checks it, as for an
    /// engine in process, and the child does neither a second time. Otherwise `compress`, whose
    /// answer the child has checked too.
    pub fn compress(
        &mut self,
        messages: &[Message],
        json: Option<&str>,
        current_tokens: Option<u64>,
        focus_topic: Option<&str>,
        user_message: Option<usize>,
    ) -> Result<ChildCompacted, ChildError> {
        let json = match json {
            Some(json) => std::borrow::Cow::Borrowed(json),
            None => std::borrow::Cow::Owned(messages_to_json(messages)),
        };
        let unchecked = self.unchecked;
        let compressed = self.call_with(method::COMPRESS, |live, session, deadline| {
            let (head, tail) = compress_params_around(session, current_tokens, focus_topic, user_message);
            let wire = if unchecked {
                method::COMPRESS_UNCHECKED
            } else {
                method::COMPRESS
            };
            live.call_json::<Answer<CompressedMessages>>(
                method::COMPRESS,
                wire,
                &[&head, &json, tail],
                deadline,
            )
            .map_err(|failure| match failure {
                // The child read nothing: an answer that is not messages is the engine's.
                CallFailure::Unexpected(problem) if unchecked => {
                    CallFailure::Unexpected(format!("not a JSON array of messages: {problem}"))
                }
                failure => failure,
            })
        });
        let answer = compressed?.messages;
        // The engine's answer as the child relays it: the very text sent when nothing changed
        // (the SDK's boundary hands it back), which a byte comparison tells without reading it.
        if answer.get() == json.as_ref() {
            return Ok(ChildCompacted::Unchanged);
        }
        let messages = messages_from_json(answer.get())
            .map_err(|error| ChildError::Invalid(format!("not a JSON array of messages: {error}")))?;
        Ok(ChildCompacted::Changed(messages, answer.get().to_owned()))
    }

    /// `get_tool_schemas`.
    pub fn get_tool_schemas(&mut self) -> Result<Vec<Value>, ChildError> {
        self.call(method::GET_TOOL_SCHEMAS, |session| SessionParams { session })
    }

    /// `handle_tool_call`.
    pub fn handle_tool_call(
        &mut self,
        name: &str,
        arguments: &Value,
        messages: Option<&[Message]>,
    ) -> Result<Value, ChildError> {
        let arguments = match arguments {
            Value::Object(object) => object.clone(),
            other => {
                return Err(ChildError::Engine(EngineError::new(
                    ErrorKind::INVALID_INPUT,
                    format!("tool arguments must be a JSON object, got {other}"),
                )))
            }
        };
        self.call(method::HANDLE_TOOL_CALL, |session| ToolCallParams {
            session,
            name: name.to_owned(),
            arguments,
            messages: messages.map(<[Message]>::to_vec),
        })
    }

    /// `get_status`.
    pub fn get_status(&mut self) -> Result<Value, ChildError> {
        self.call(method::GET_STATUS, |session| SessionParams { session })
    }

    /// `call_ext`; `None` when the engine does not know `name`.
    pub fn call_ext(&mut self, name: &str, request: &Value) -> Result<Option<Value>, ChildError> {
        let answer = self.call_with(method::CALL_EXT, |live, session, deadline| {
            let params = CallExtParams {
                session: session.to_owned(),
                method: name.to_owned(),
                request: request.clone(),
            };
            live.call_as::<_, Answer<Value>>(name, method::CALL_EXT, &params, deadline)
        });
        match answer {
            Ok(value) => Ok(Some(value)),
            Err(ChildError::Engine(error)) if error.kind == ErrorKind::UNKNOWN_METHOD => Ok(None),
            Err(error) => Err(error),
        }
    }
}

impl Drop for ChildEngine {
    fn drop(&mut self) {
        if let Some(live) = self.live.take() {
            // The child ends the session it is in (`on_session_end` with the last context it saw)
            // as `serve` does at the end of its input, then exits.
            if let Some(ending) = live.finish(FINISH_GRACE) {
                tracing::warn!(
                    "engine `{}`: its process did not end cleanly: {ending}",
                    self.spec.engine
                );
            }
        }
    }
}

/// [`MessagesParams`](ctxhost_protocol::MessagesParams) borrowing the messages.
#[derive(Serialize)]
struct MessagesRef<'a> {
    session: String,
    messages: &'a [Message],
}

/// The part of [`Compressed`](ctxhost_protocol::Compressed) (and all of
/// [`Unchecked`](ctxhost_protocol::Unchecked)) the host uses: the child's record is the host's to
/// make again.
#[derive(serde::Deserialize)]
struct CompressedMessages {
    messages: Box<RawValue>,
}

/// What an isolated engine's `compress` made of the context.
pub enum ChildCompacted {
    /// The engine answered with the context it was sent.
    Unchanged,
    /// New messages, and their JSON as the engine wrote it.
    Changed(Vec<Message>, String),
}

/// A child's error reply as the engine's failure: the engine's own error (its kind and message,
/// without the child's wording around it), the child's refusal of its output, or the child
/// refusing the call itself.
fn child_error(name: &str, error: RpcError) -> ChildError {
    let engine = error
        .data
        .as_ref()
        .and_then(|data| data.engine.clone())
        .unwrap_or_default();
    match error.code {
        code::ENGINE_FAILED => {
            let kind = error.to_engine_error().kind;
            let prefix = format!("engine `{engine}` failed in `{name}`: ");
            let text = error.message.strip_prefix(&prefix).unwrap_or(&error.message);
            // The kind's label as the error's Display writes it before the message.
            let shown = EngineError::new(kind, "-").to_string();
            let label = shown.strip_suffix('-').unwrap_or_default();
            let message = text.strip_prefix(label).unwrap_or(text);
            ChildError::Engine(EngineError::new(kind, message))
        }
        code::INVALID_OUTPUT => {
            let prefix = format!("engine `{engine}` returned an invalid result from `{name}`: ");
            let text = error.message.strip_prefix(&prefix).unwrap_or(&error.message);
            ChildError::Invalid(text.to_owned())
        }
        _ => ChildError::Engine(EngineError::other(format!(
            "its process refused `{name}`: {}",
            error.message
        ))),
    }
}

/// Whether `settings` run plugin engines in child processes.
pub fn is_isolated(settings: &Settings) -> bool {
    settings.isolation == Isolation::Process
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_protocol::RpcError;

    #[test]
    fn an_engine_failure_from_the_child_reads_as_the_engines_own() {
        let wire = RpcError::engine_failed(
            "faulty",
            "compress",
            &EngineError::new(ErrorKind::PANIC, "told to panic"),
            "engine `faulty` failed in `compress`: panic: told to panic".to_owned(),
        );
        let ChildError::Engine(error) = child_error("compress", wire) else {
            panic!("an engine error")
        };
        assert_eq!(error.kind, ErrorKind::PANIC);
        assert_eq!(error.to_string(), "panic: told to panic");
        let wire = RpcError::invalid_output(
            "faulty",
            "compress",
            "engine `faulty` returned an invalid result from `compress`: it is empty".to_owned(),
        );
        assert!(
            matches!(child_error("compress", wire), ChildError::Invalid(problem) if problem == "it is empty")
        );
    }

    #[test]
    fn a_deadline_names_the_method_a_user_knows_and_the_key_that_sets_it() {
        use std::time::Duration;

        use super::process::{Ending, ExitCause};
        let passed = |method: &str| {
            Ending {
                cause: ExitCause::Deadline {
                    method: method.to_owned(),
                    after: Duration::from_secs(4),
                },
                last_words: None,
            }
            .to_string()
        };
        // Not the protocol's `session/open`: a user of `run` never called it.
        assert_eq!(
            passed("session/open"),
            "its process passed the 4 s deadline for starting (`isolation.deadlines.start`) and was killed"
        );
        assert_eq!(passed("initialize"), passed("session/open"));
        assert_eq!(
            passed("compress"),
            "its process passed the 4 s deadline of `compress` (`isolation.deadlines.compress`) and was killed"
        );
    }
}
