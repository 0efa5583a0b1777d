//! The host's handle on the active engine, built-in or plugin alike.
//!
//! Three ways to reach an engine, one handle:
//! - a plugin (or an engine registered by an embedding program) through the stable-ABI object,
//!   where messages cross as JSON;
//! - an engine linked into the host (the built-in compressor) as a [`LinkedEngine`], handed the
//!   messages themselves;
//! - a plugin in a child process of its own ([`ChildEngine`], `context.isolation: process`), over
//!   the protocol; its crash, exit or passed deadline is a failed call, and after too many in a
//!   row the handle puts the built-in compressor in its place, in the same session.
//!
//! Either way panics are caught by the SDK's guard, and each method turns an engine failure (an
//! error, a caught panic, a lost process) into an [`EngineCallError`] naming the engine and the
//! method; `compress` also refuses output that breaks the rules of
//! [`ctxhost_engine_abi::Engine::compress`] ([`check_compacted`]).

use std::{borrow::Cow, fmt, path::PathBuf};

use abi_stable::std_types::{ROption, RStr, RString};
use ctxhost_engine_abi::{
    ffi::EngineBox, linked::LinkedEngine, messages_from_json, messages_to_json, observe::EXT_OBSERVE,
    CompressRequest, Content, Counters, EngineError, ErrorKind, Fact, Message, ModelInfo, Role, SessionInfo,
    Usage,
};
use ctxhost_engine_kit::sequence::find_sequence_problems;
use serde_json::Value;

use crate::isolation::{ChildCompacted, ChildEngine, ChildError};

/// Where the active engine came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineOrigin {
    /// Linked into the host.
    BuiltIn,
    /// A plugin folder's library.
    Plugin {
        /// The plugin folder.
        dir: PathBuf,
        /// The library file inside it.
        library: PathBuf,
    },
    /// Registered by code embedding the host as a library.
    Registered,
}

impl fmt::Display for EngineOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BuiltIn => f.write_str("built-in"),
            Self::Plugin { library, .. } => write!(f, "plugin {}", library.display()),
            Self::Registered => f.write_str("registered by the embedding program"),
        }
    }
}

/// An engine call that failed; the caller keeps its context as it was.
#[derive(Debug, thiserror::Error)]
pub enum EngineCallError {
    /// The engine returned an error, or panicked and the SDK caught it.
    #[error("engine `{engine}` failed in `{method}`: {error}")]
    Failed {
        /// The engine's name.
        engine: String,
        /// The contract method.
        method: &'static str,
        /// What it reported.
        error: EngineError,
    },
    /// The engine answered, but the answer breaks the contract.
    #[error("engine `{engine}` returned an invalid result from `{method}`: {problem}")]
    InvalidOutput {
        /// The engine's name.
        engine: String,
        /// The contract method.
        method: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// The engine's process crashed, exited or passed its deadline (`context.isolation:
    /// process`); it was killed and reaped, and what it kept in memory is lost.
    #[error("engine `{engine}` failed in `{method}`: {cause}; {}", then_text(*detached_after))]
    ProcessLost {
        /// The engine's name.
        engine: String,
        /// The contract method.
        method: &'static str,
        /// The signal by name, the exit code or the deadline, and its last words.
        cause: String,
        /// Set when this was the last crash tolerated: how many came in a row. The built-in
        /// compressor has taken the engine's place.
        detached_after: Option<u32>,
    },
}

fn then_text(detached_after: Option<u32>) -> String {
    match detached_after {
        None => "the state the engine kept in memory is lost".to_owned(),
        Some(crashes) => format!(
            "its process was lost {crashes} times: the engine is detached and the built-in compressor takes over"
        ),
    }
}

impl EngineCallError {
    /// The contract method that failed.
    pub fn method(&self) -> &'static str {
        match self {
            Self::Failed { method, .. }
            | Self::InvalidOutput { method, .. }
            | Self::ProcessLost { method, .. } => method,
        }
    }

    /// The failure without what the host does next about the engine: an observer that fails is
    /// detached, so what happens to an engine's process next does not concern it.
    pub fn failure(&self) -> String {
        match self {
            Self::ProcessLost {
                engine,
                method,
                cause,
                ..
            } => format!("engine `{engine}` failed in `{method}`: {cause}"),
            other => other.to_string(),
        }
    }

    /// The failure as a sentence about the engine already named: `failed in \`update_model\`: …`.
    pub fn without_engine(&self) -> String {
        let engine = match self {
            Self::Failed { engine, .. }
            | Self::InvalidOutput { engine, .. }
            | Self::ProcessLost { engine, .. } => engine,
        };
        let said = self.failure();
        said.strip_prefix(&format!("engine `{engine}` "))
            .map_or_else(|| said.clone(), str::to_owned)
    }

    /// Whether the engine said a service it needs is unreachable (an abort, not a bug).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Failed { error, .. } if error.kind == ErrorKind::UNAVAILABLE)
    }

    /// Whether the engine panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self, Self::Failed { error, .. } if error.kind == ErrorKind::PANIC)
    }
}

/// The active engine.
pub struct EngineHandle {
    reach: Reach,
    name: String,
    origin: EngineOrigin,
    /// Why the engine first configured was detached, once it was.
    detached: Option<String>,
    /// The model its last `update_model` that succeeded told it.
    model: Option<ModelInfo>,
}

/// How the engine is called.
enum Reach {
    /// Through the stable ABI, messages as JSON.
    Boundary(EngineBox),
    /// Linked into the host: direct calls.
    Linked(Box<dyn LinkedEngine>),
    /// In a child process, over the protocol.
    Child(Box<Isolated>),
}

/// Makes the engine that takes an isolated engine's place when it is detached.
pub type Replacement = Box<dyn FnOnce() -> EngineHandle + Send>;

struct Isolated {
    child: ChildEngine,
    replacement: Option<Replacement>,
}

type CallResult<T> = Result<T, EngineCallError>;

impl EngineHandle {
    /// Wraps an engine object created by a factory.
    pub fn new(object: EngineBox, name: impl Into<String>, origin: EngineOrigin) -> Self {
        Self {
            reach: Reach::Boundary(object),
            name: name.into(),
            origin,
            detached: None,
            model: None,
        }
    }

    /// Wraps an engine linked into the host.
    pub fn linked(engine: Box<dyn LinkedEngine>, name: impl Into<String>, origin: EngineOrigin) -> Self {
        Self {
            reach: Reach::Linked(engine),
            name: name.into(),
            origin,
            detached: None,
            model: None,
        }
    }

    /// Wraps an engine running in a child process; `replacement` makes the engine that takes its
    /// place if it crashes too often.
    pub fn isolated(
        child: ChildEngine,
        replacement: Replacement,
        name: impl Into<String>,
        origin: EngineOrigin,
    ) -> Self {
        Self {
            reach: Reach::Child(Box::new(Isolated {
                child,
                replacement: Some(replacement),
            })),
            name: name.into(),
            origin,
            detached: None,
            model: None,
        }
    }

    /// The process the engine runs in, when it runs in a child of its own that is alive.
    pub fn process_id(&self) -> Option<u32> {
        match &self.reach {
            Reach::Child(isolated) => isolated.child.pid(),
            _ => None,
        }
    }

    /// Why the engine first configured was detached and the built-in compressor put in its
    /// place, once that happened.
    pub fn detached(&self) -> Option<&str> {
        self.detached.as_deref()
    }

    /// Keeps why `previous`, the handle this one replaces (`/engine NAME`), had its engine
    /// detached: the report's `fallback:` line reads it from the handle in charge at the end, and
    /// a swap after the detach would otherwise drop it while the `owners` line still shows it.
    pub fn keep_detached_from(&mut self, previous: &mut EngineHandle) {
        if self.detached.is_none() {
            self.detached = previous.detached.take();
        }
    }

    /// Calls an isolated engine; a lost process is counted by the child, and the one too many
    /// detaches it.
    fn through_child<T>(
        &mut self,
        method: &'static str,
        call: impl FnOnce(&mut ChildEngine) -> Result<T, ChildError>,
    ) -> CallResult<T> {
        let Reach::Child(isolated) = &mut self.reach else {
            unreachable!("called for isolated engines only")
        };
        let crashes = isolated.child.crashes_before_detach();
        match call(&mut isolated.child) {
            Ok(value) => Ok(value),
            Err(ChildError::Engine(error)) => Err(self.failed(method)(error)),
            Err(ChildError::Invalid(problem)) => Err(self.invalid(method, problem)),
            Err(ChildError::Lost { cause, detach }) => {
                let error = EngineCallError::ProcessLost {
                    engine: self.name.clone(),
                    method,
                    cause,
                    detached_after: detach.then_some(crashes),
                };
                if detach {
                    self.detach_child(&error);
                }
                Err(error)
            }
        }
    }

    /// Puts the replacement in the isolated engine's place, in the same session: told the model
    /// and started on the session the engine was in.
    fn detach_child(&mut self, why: &EngineCallError) {
        let Reach::Child(isolated) = &mut self.reach else {
            return;
        };
        let Some(make) = isolated.replacement.take() else {
            return;
        };
        let model = isolated.child.model().cloned();
        let started = isolated.child.started().cloned();
        let mut next = make();
        if let Some(model) = &model {
            if let Err(error) = next.update_model(model) {
                tracing::warn!("{error}");
            }
        }
        if let Some((session_id, info)) = &started {
            if let Err(error) = next.on_session_start(session_id, info) {
                tracing::warn!("{error}");
            }
        }
        // The error says it already when it is the one that detaches the engine.
        let reason = match why {
            EngineCallError::ProcessLost {
                detached_after: Some(_),
                ..
            } => why.to_string(),
            _ => format!(
                "engine `{}` detached: {why}; `{}` runs from here on",
                self.name, next.name
            ),
        };
        tracing::warn!("{reason}");
        self.detached = Some(reason);
        self.reach = next.reach;
        self.name = next.name;
        self.origin = next.origin;
    }

    /// Whether the engine takes its messages as JSON text (a library, or a child process that
    /// is sent them), so that a caller keeping the context's JSON up to date saves the handle
    /// from writing it at every call.
    pub fn wants_json(&self) -> bool {
        matches!(self.reach, Reach::Boundary(_) | Reach::Child(_))
    }

    /// The engine's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where it came from.
    pub fn origin(&self) -> &EngineOrigin {
        &self.origin
    }

    fn failed(&self, method: &'static str) -> impl FnOnce(EngineError) -> EngineCallError + '_ {
        move |error| EngineCallError::Failed {
            engine: self.name.clone(),
            method,
            error,
        }
    }

    fn invalid(&self, method: &'static str, problem: impl Into<String>) -> EngineCallError {
        EngineCallError::InvalidOutput {
            engine: self.name.clone(),
            method,
            problem: problem.into(),
        }
    }

    fn parse_json(&self, method: &'static str, text: &str) -> CallResult<Value> {
        serde_json::from_str(text).map_err(|error| self.invalid(method, format!("not JSON: {error}")))
    }

    /// The contract's counters.
    pub fn counters(&self) -> CallResult<Counters> {
        match &self.reach {
            Reach::Boundary(object) => object.counters().into_result(),
            Reach::Linked(engine) => engine.counters(),
            // Every answer carries them: no round trip.
            Reach::Child(isolated) => Ok(isolated.child.counters()),
        }
        .map_err(self.failed("counters"))
    }

    /// The model the engine was last told (by an `update_model` that succeeded).
    pub fn model(&self) -> Option<&ModelInfo> {
        self.model.as_ref()
    }

    /// Tells the engine the model and its window.
    pub fn update_model(&mut self, model: &ModelInfo) -> CallResult<()> {
        self.model = None;
        let told = match &mut self.reach {
            Reach::Boundary(object) => {
                let json = serde_json::to_string(model).expect("model info serialises");
                object.update_model(RStr::from(json.as_str())).into_result()
            }
            Reach::Linked(engine) => engine.update_model(model),
            Reach::Child(_) => {
                let told = self.through_child("update_model", |child| child.update_model(model));
                return self.remember_model(told, model);
            }
        };
        let told = told.map_err(self.failed("update_model"));
        self.remember_model(told, model)
    }

    fn remember_model(&mut self, told: CallResult<()>, model: &ModelInfo) -> CallResult<()> {
        if told.is_ok() {
            self.model = Some(model.clone());
        }
        told
    }

    /// Starts a session.
    pub fn on_session_start(&mut self, session_id: &str, info: &SessionInfo) -> CallResult<()> {
        match &mut self.reach {
            Reach::Boundary(object) => {
                let json = serde_json::to_string(info).expect("session info serialises");
                object
                    .on_session_start(RStr::from(session_id), RStr::from(json.as_str()))
                    .into_result()
            }
            Reach::Linked(engine) => engine.on_session_start(session_id, info),
            Reach::Child(_) => {
                return self.through_child("on_session_start", |child| {
                    child.on_session_start(session_id, info)
                })
            }
        }
        .map_err(self.failed("on_session_start"))
    }

    /// Ends a session with its final context.
    pub fn on_session_end(&mut self, session_id: &str, messages: &[Message]) -> CallResult<()> {
        match &mut self.reach {
            Reach::Boundary(object) => {
                let json = messages_to_json(messages);
                object
                    .on_session_end(RStr::from(session_id), RStr::from(json.as_str()))
                    .into_result()
            }
            Reach::Linked(engine) => engine.on_session_end(session_id, messages),
            Reach::Child(_) => {
                return self.through_child("on_session_end", |child| {
                    child.on_session_end(session_id, messages)
                })
            }
        }
        .map_err(self.failed("on_session_end"))
    }

    /// `/new` or `/reset`.
    pub fn on_session_reset(&mut self) -> CallResult<()> {
        match &mut self.reach {
            Reach::Boundary(object) => object.on_session_reset().into_result(),
            Reach::Linked(engine) => engine.on_session_reset(),
            Reach::Child(_) => return self.through_child("on_session_reset", ChildEngine::on_session_reset),
        }
        .map_err(self.failed("on_session_reset"))
    }

    /// Reports a model response's usage.
    pub fn update_from_response(&mut self, usage: Usage) -> CallResult<()> {
        match &mut self.reach {
            Reach::Boundary(object) => object.update_from_response(usage).into_result(),
            Reach::Linked(engine) => engine.update_from_response(usage),
            Reach::Child(_) => {
                return self.through_child("update_from_response", |child| child.update_from_response(usage))
            }
        }
        .map_err(self.failed("update_from_response"))
    }

    /// Whether to compact now.
    pub fn should_compress(&mut self, prompt_tokens: Option<u64>) -> CallResult<bool> {
        match &mut self.reach {
            Reach::Boundary(object) => object.should_compress(prompt_tokens.into()).into_result(),
            Reach::Linked(engine) => engine.should_compress(prompt_tokens),
            Reach::Child(_) => {
                return self.through_child("should_compress", |child| child.should_compress(prompt_tokens))
            }
        }
        .map_err(self.failed("should_compress"))
    }

    /// The engine's check before a model call; `json` is the context's JSON when the caller keeps
    /// it (see [`Self::wants_json`]).
    pub fn should_compress_preflight(
        &mut self,
        messages: &[Message],
        json: Option<&str>,
    ) -> CallResult<bool> {
        match &mut self.reach {
            Reach::Boundary(object) => {
                let json = json_of(messages, json);
                object
                    .should_compress_preflight(RStr::from(json.as_ref()))
                    .into_result()
            }
            Reach::Linked(engine) => engine.should_compress_preflight(messages),
            Reach::Child(_) => {
                return self.through_child("should_compress_preflight", |child| {
                    child.should_compress_preflight(messages)
                })
            }
        }
        .map_err(self.failed("should_compress_preflight"))
    }

    /// [`Self::should_compress_preflight`], with the rough estimate of `messages` the host keeps
    /// (the sum of `estimate_message_tokens`) for a linked engine, which then need not count it.
    pub fn should_compress_preflight_estimated(
        &mut self,
        messages: &[Message],
        json: Option<&str>,
        rough_tokens: u64,
    ) -> CallResult<bool> {
        if let Reach::Linked(engine) = &mut self.reach {
            let answer = engine.should_compress_preflight_estimated(messages, rough_tokens);
            return answer.map_err(self.failed("should_compress_preflight"));
        }
        self.should_compress_preflight(messages, json)
    }

    /// Whether anything could be compacted.
    pub fn has_content_to_compress(&mut self, messages: &[Message]) -> CallResult<bool> {
        match &mut self.reach {
            Reach::Boundary(object) => {
                let json = messages_to_json(messages);
                object
                    .has_content_to_compress(RStr::from(json.as_str()))
                    .into_result()
            }
            Reach::Linked(engine) => engine.has_content_to_compress(messages),
            Reach::Child(_) => {
                return self.through_child("has_content_to_compress", |child| {
                    child.has_content_to_compress(messages)
                })
            }
        }
        .map_err(self.failed("has_content_to_compress"))
    }

    /// Compacts `messages` and returns the engine's result after checking it keeps the contract
    /// ([`check_compacted`]), or the input again when the engine changed nothing. `json` is their
    /// JSON when the caller keeps it, compact as [`messages_to_json`] writes it (an isolated
    /// engine's request line carries it as it is).
    pub fn compress(
        &mut self,
        messages: &[Message],
        json: Option<&str>,
        request: &CompressCall<'_>,
    ) -> CallResult<Vec<Message>> {
        Ok(match self.compress_or_keep(messages, json, request)? {
            Compacted::Unchanged => messages.to_vec(),
            Compacted::Changed { messages, .. } => messages,
        })
    }

    /// [`compress`](Self::compress), saying when the engine returned the context as it was
    /// instead of handing a copy back: an engine that cannot compact a long session is asked
    /// again before every model call, and neither a copy nor a comparison of the whole context
    /// is needed for that answer.
    pub fn compress_or_keep(
        &mut self,
        messages: &[Message],
        json: Option<&str>,
        request: &CompressCall<'_>,
    ) -> CallResult<Compacted> {
        let (compacted, answer) = match &mut self.reach {
            Reach::Boundary(object) => {
                let json = json_of(messages, json);
                let focus = request.focus_topic.map(RStr::from);
                let answer = object
                    .compress(
                        RStr::from(json.as_ref()),
                        request.current_tokens.into(),
                        ROption::from(focus),
                    )
                    .into_result()
                    .map_err(self.failed("compress"))?;
                // The SDK hands an unchanged context back as the very text it was sent: a byte
                // comparison, not a parse of the whole context.
                if answer.as_str() == json.as_ref() {
                    return Ok(Compacted::Unchanged);
                }
                let compacted = messages_from_json(&answer).map_err(|error| {
                    self.invalid("compress", format!("not a JSON array of messages: {error}"))
                })?;
                (compacted, Some(answer.into_string()))
            }
            Reach::Linked(engine) => {
                let sdk_request = CompressRequest {
                    current_tokens: request.current_tokens,
                    focus_topic: request.focus_topic.map(str::to_owned),
                };
                let compacted = engine
                    .compress(messages, &sdk_request)
                    .map_err(self.failed("compress"))?;
                (compacted, None)
            }
            Reach::Child(_) => {
                // The user's message by provenance: the caller's reference into `messages`.
                let user_message = request
                    .user_message
                    .and_then(|user| messages.iter().position(|message| std::ptr::eq(message, user)));
                let answer = self.through_child("compress", |child| {
                    child.compress(
                        messages,
                        json,
                        request.current_tokens,
                        request.focus_topic,
                        user_message,
                    )
                })?;
                match answer {
                    ChildCompacted::Unchanged => return Ok(Compacted::Unchanged),
                    ChildCompacted::Changed(compacted, json) => (compacted, Some(json)),
                }
            }
        };
        if compacted.as_slice() == messages {
            return Ok(Compacted::Unchanged);
        }
        check_compacted(messages, &compacted, request.user_message)
            .map_err(|problem| self.invalid("compress", problem))?;
        Ok(Compacted::Changed {
            messages: compacted,
            json: answer,
        })
    }

    /// Compacts the messages `json` holds and returns the engine's answer as the JSON it wrote,
    /// unread and unchecked: for `ctxhost serve` answering `compress/unchecked`, whose client (the
    /// host's handle on an isolated engine) reads and checks it as [`Self::compress`] does. The
    /// request's `user_message` is not used. An engine that is not reached through JSON has the
    /// messages read, its result checked by [`Self::compress`], and written.
    pub fn compress_json(&mut self, json: &str, request: &CompressCall<'_>) -> CallResult<String> {
        if let Reach::Boundary(object) = &mut self.reach {
            let focus = request.focus_topic.map(RStr::from);
            return object
                .compress(
                    RStr::from(json),
                    request.current_tokens.into(),
                    ROption::from(focus),
                )
                .into_result()
                .map(RString::into_string)
                .map_err(self.failed("compress"));
        }
        let messages = messages_from_json(json).map_err(|error| {
            self.failed("compress")(EngineError::new(
                ErrorKind::INVALID_INPUT,
                format!("not a JSON array of messages: {error}"),
            ))
        })?;
        let request = CompressCall {
            user_message: None,
            ..*request
        };
        let compacted = self.compress(&messages, Some(json), &request)?;
        Ok(messages_to_json(&compacted))
    }

    /// The tools the engine offers.
    pub fn get_tool_schemas(&mut self) -> CallResult<Vec<Value>> {
        let text = match &self.reach {
            Reach::Boundary(object) => object
                .get_tool_schemas()
                .into_result()
                .map_err(self.failed("get_tool_schemas"))?,
            Reach::Linked(engine) => {
                return engine.get_tool_schemas().map_err(self.failed("get_tool_schemas"));
            }
            Reach::Child(_) => return self.through_child("get_tool_schemas", ChildEngine::get_tool_schemas),
        };
        match self.parse_json("get_tool_schemas", &text)? {
            Value::Array(schemas) => Ok(schemas),
            _ => Err(self.invalid("get_tool_schemas", "not a JSON array")),
        }
    }

    /// Runs one of the engine's tools; the answer is JSON.
    pub fn handle_tool_call(
        &mut self,
        name: &str,
        arguments: &Value,
        messages: Option<&[Message]>,
    ) -> CallResult<Value> {
        let text = match &mut self.reach {
            Reach::Boundary(object) => {
                let arguments = arguments.to_string();
                let messages = messages.map(messages_to_json);
                object
                    .handle_tool_call(
                        RStr::from(name),
                        RStr::from(arguments.as_str()),
                        ROption::from(messages.as_deref().map(RStr::from)),
                    )
                    .into_result()
                    .map_err(self.failed("handle_tool_call"))?
            }
            Reach::Linked(engine) => {
                return engine
                    .handle_tool_call(name, arguments, messages)
                    .map_err(self.failed("handle_tool_call"));
            }
            Reach::Child(_) => {
                return self.through_child("handle_tool_call", |child| {
                    child.handle_tool_call(name, arguments, messages)
                })
            }
        };
        self.parse_json("handle_tool_call", &text)
    }

    /// The engine's status object.
    pub fn get_status(&mut self) -> CallResult<Value> {
        let text = match &self.reach {
            Reach::Boundary(object) => object
                .get_status()
                .into_result()
                .map_err(self.failed("get_status"))?,
            Reach::Linked(engine) => return engine.get_status().map_err(self.failed("get_status")),
            Reach::Child(_) => return self.through_child("get_status", ChildEngine::get_status),
        };
        self.parse_json("get_status", &text)
    }

    /// Hands an observer one fact ([`ctxhost_engine_abi::Engine::observe`]): `json` is the fact's
    /// JSON, written once for every observer that receives it; `fact` builds it as data, only for
    /// an engine that takes it so (one linked into the host, or in a child process).
    pub fn observe<'f>(&mut self, json: &str, fact: impl FnOnce() -> Cow<'f, Fact>) -> CallResult<()> {
        match &mut self.reach {
            Reach::Boundary(object) => object
                .call_ext(RStr::from(EXT_OBSERVE), RStr::from(json))
                .into_result()
                .map(drop),
            Reach::Linked(engine) => engine.observe(&fact()),
            Reach::Child(_) => {
                let request = serde_json::to_value(&*fact()).expect("facts serialise");
                return self
                    .through_child("observe", |child| child.call_ext(EXT_OBSERVE, &request))
                    .map(drop);
            }
        }
        .map_err(self.failed("observe"))
    }

    /// Calls an extension method; `None` when the engine does not know it.
    pub fn call_ext(&mut self, method: &str, request: &Value) -> CallResult<Option<Value>> {
        let answer = match &mut self.reach {
            Reach::Boundary(object) => {
                let request = request.to_string();
                object
                    .call_ext(RStr::from(method), RStr::from(request.as_str()))
                    .into_result()
                    .map(Answer::Json)
            }
            Reach::Linked(engine) => engine.call_ext(method, request).map(Answer::Value),
            Reach::Child(_) => {
                return self.through_child(ext_call_name(method), |child| child.call_ext(method, request))
            }
        };
        match answer {
            Ok(Answer::Json(text)) => self.parse_json("call_ext", &text).map(Some),
            Ok(Answer::Value(value)) => Ok(Some(value)),
            Err(error) if error.kind == ErrorKind::UNKNOWN_METHOD => Ok(None),
            Err(error) => Err(self.failed(ext_call_name(method))(error)),
        }
    }
}

/// The name a failure of extension call `method` goes by: an observer's capabilities by the
/// `Engine` method an author wrote (`observe_idle`), any other by `call_ext`.
fn ext_call_name(method: &str) -> &'static str {
    match method {
        ctxhost_engine_abi::observe::EXT_OBSERVE_IDLE => "observe_idle",
        ctxhost_engine_abi::observe::EXT_INTERESTS => "interests",
        _ => "call_ext",
    }
}

/// An answer as JSON text (through the boundary) or as a value (from a linked engine).
enum Answer {
    Json(abi_stable::std_types::RString),
    Value(Value),
}

/// The messages' JSON: the caller's, or written now.
fn json_of<'a>(messages: &[Message], json: Option<&'a str>) -> std::borrow::Cow<'a, str> {
    match json {
        Some(json) => std::borrow::Cow::Borrowed(json),
        None => std::borrow::Cow::Owned(messages_to_json(messages)),
    }
}

/// What a `compress` call made of the context.
#[derive(Debug)]
pub enum Compacted {
    /// The engine returned the context as it was: there was nothing to compact.
    Unchanged,
    /// A new context, checked against the contract.
    Changed {
        /// The messages.
        messages: Vec<Message>,
        /// Their JSON as the engine wrote it, when it answered in JSON: the caller keeping the
        /// context's JSON need not write it again.
        json: Option<String>,
    },
}

/// The arguments of one `compress` call.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompressCall<'a> {
    /// The current prompt size, when known.
    pub current_tokens: Option<u64>,
    /// From a manual `/compress <focus>`.
    pub focus_topic: Option<&'a str>,
    /// The newest message the user sent, known by provenance: the caller appended it from the
    /// conversation. `None` when the context holds none (the result is then not checked for it).
    pub user_message: Option<&'a Message>,
}

/// Checks that a compaction result keeps the rules of [`ctxhost_engine_abi::Engine::compress`]
/// relative to its input:
/// - it is not empty when the input was not;
/// - it is a valid sequence (no problem the input did not already have);
/// - the system message is still first, its text unchanged at its start (a note may follow);
/// - `user_message`, the newest message the user sent, is still there as a user-role message:
///   unchanged, or with an engine's note merged before or after its text. Which message that is
///   comes from the caller, who appended it; a user-role message an engine wrote (a summary, a
///   note) is never taken for it;
/// - and it is still the newest: no message of the conversation from before it follows it. Users
///   repeat themselves ("continue", "yes"), so an earlier message of the same text is no proof
///   that the newest was kept: the copy taken for it is the last, and a message copied word for
///   word from before it in the input may not come after it (unless it also came after it).
pub fn check_compacted(
    input: &[Message],
    output: &[Message],
    user_message: Option<&Message>,
) -> Result<(), String> {
    if output.is_empty() && !input.is_empty() {
        return Err("it is empty".to_owned());
    }
    let known: std::collections::HashSet<String> = find_sequence_problems(input)
        .iter()
        .map(|problem| problem.subject())
        .collect();
    if let Some(problem) = find_sequence_problems(output)
        .into_iter()
        .find(|p| !known.contains(&p.subject()))
    {
        // Numbered in the result, beside a report that numbers the transcript's messages.
        return Err(format!("not a valid sequence: in the result, {problem}"));
    }
    if let Some(system) = input.first().filter(|message| message.role == Role::System) {
        let kept = output.first().is_some_and(|first| {
            first.role == Role::System && first.text().starts_with(system.text().as_ref())
        });
        if !kept {
            return Err("the system message was lost or altered".to_owned());
        }
    }
    if let Some(index) = inserted_system_message(input, output) {
        return Err(format!(
            "message {index} of the result is a `system` message the input did not have (an engine inserts `user` or `assistant` messages)"
        ));
    }
    if let Some((index, call)) = broken_arguments(input, output) {
        return Err(format!(
            "message {index} of the result calls `{}` (id `{}`) with arguments that are not JSON",
            call.function.name, call.id
        ));
    }
    if let Some(user_message) = user_message {
        let Some(kept) = output
            .iter()
            .rposition(|message| keeps_user_message(message, user_message))
        else {
            return Err("the last user message was lost".to_owned());
        };
        if let Some(sent) = input
            .iter()
            .rposition(|message| keeps_user_message(message, user_message))
        {
            let (before, after) = (&input[..sent], &input[sent + 1..]);
            if let Some(moved) = older_after(before, after, &output[kept + 1..]) {
                return Err(format!(
                    "the last user message is no longer the newest: message {} of the result came before it in the conversation and now follows it (the newest moved before older turns, or dropped and an earlier one of the same text kept)",
                    kept + 1 + moved
                ));
            }
        }
    }
    Ok(())
}

/// The index of a `system` message of `output`, past the first message, that is not one of
/// `input`'s: APIs that take one system prompt would merge or refuse it.
fn inserted_system_message(input: &[Message], output: &[Message]) -> Option<usize> {
    output
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, message)| {
            message.role == Role::System && !input.iter().skip(1).any(|known| known == *message)
        })
        .map(|(index, _)| index)
}

/// The first tool call of `output` whose arguments are not JSON, with its message's index,
/// unless the input's call of the same id had arguments that were not JSON either: a
/// transcript's own problem, or a freeform tool's input (Codex's `apply_patch` patch), which an
/// engine may shorten as text.
fn broken_arguments<'a>(
    input: &[Message],
    output: &'a [Message],
) -> Option<(usize, &'a ctxhost_engine_abi::ToolCall)> {
    let is_json = |arguments: &str| serde_json::from_str::<serde::de::IgnoredAny>(arguments).is_ok();
    output.iter().enumerate().find_map(|(index, message)| {
        message
            .tool_calls
            .iter()
            .flatten()
            .find(|call| {
                !is_json(&call.function.arguments)
                    && !input
                        .iter()
                        .filter_map(|known| known.tool_calls.as_ref())
                        .flatten()
                        .any(|known| known.id == call.id && !is_json(&known.function.arguments))
            })
            .map(|call| (index, call))
    })
}

/// The index in `tail` of the first message that is a word-for-word copy of one of `before` and
/// of none of `after`. Messages are first told apart by role and size, so that a long context
/// costs one pass and few full comparisons.
fn older_after(before: &[Message], after: &[Message], tail: &[Message]) -> Option<usize> {
    if tail.is_empty() || before.is_empty() {
        return None;
    }
    let shape = |message: &Message| {
        let size = match &message.content {
            Content::Null => usize::MAX,
            Content::Text(text) => text.len(),
            Content::Parts(parts) => parts.len(),
        };
        (
            message.role,
            size,
            message.tool_calls.as_ref().map_or(0, Vec::len),
        )
    };
    let shapes: std::collections::HashSet<_> = tail.iter().map(shape).collect();
    let mut first: Option<usize> = None;
    for older in before.iter().filter(|message| shapes.contains(&shape(message))) {
        let found = tail
            .iter()
            .position(|message| message == older && !after.contains(message));
        if let Some(index) = found {
            first = Some(first.map_or(index, |first| first.min(index)));
        }
    }
    first
}

/// Whether `candidate` is `original` (a user message), unchanged or with a note merged before or
/// after its text.
fn keeps_user_message(candidate: &Message, original: &Message) -> bool {
    if candidate.role != Role::User {
        return false;
    }
    if candidate.content == original.content {
        return true;
    }
    let (text, original_text) = (candidate.text(), original.text());
    !original_text.is_empty()
        && (text.starts_with(original_text.as_ref()) || text.ends_with(original_text.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_engine_abi::ToolCall;

    fn conversation() -> Vec<Message> {
        vec![
            Message::system("be brief"),
            Message::user("first"),
            Message::assistant_calls(vec![ToolCall::new("c1", "ls", "{}")]),
            Message::tool("c1", "files"),
            Message::user("latest request"),
        ]
    }

    #[test]
    fn a_shorter_valid_result_is_accepted() {
        let input = conversation();
        let output = vec![
            input[0].clone(),
            Message::assistant("[summary]"),
            input[4].clone(),
        ];
        assert_eq!(check_compacted(&input, &output, input.last()), Ok(()));
    }

    #[test]
    fn results_that_break_the_contract_are_refused() {
        let input = conversation();
        let orphan = vec![input[0].clone(), input[3].clone(), input[4].clone()];
        let user = input.last();
        assert!(check_compacted(&input, &orphan, user)
            .unwrap_err()
            .starts_with("not a valid sequence"));
        let no_system = input[1..].to_vec();
        assert_eq!(
            check_compacted(&input, &no_system, user).unwrap_err(),
            "the system message was lost or altered"
        );
        let no_user = input[..4].to_vec();
        assert_eq!(
            check_compacted(&input, &no_user, user).unwrap_err(),
            "the last user message was lost"
        );
        assert_eq!(check_compacted(&input, &[], user).unwrap_err(), "it is empty");
    }

    #[test]
    fn problems_the_input_already_had_are_not_blamed_on_the_engine() {
        let mut input = conversation();
        input.push(Message::assistant_calls(vec![ToolCall::new("open", "ls", "{}")]));
        assert_eq!(check_compacted(&input, &input, None), Ok(()));
    }

    #[test]
    fn a_user_role_summary_is_never_taken_for_the_users_last_message() {
        // After a first compaction: the user's request in the head, an engine's user-role summary
        // after it. A second compaction rewrites the summary and keeps the request: accepted.
        let request = Message::user("migrate the orders table");
        let input = vec![
            Message::system("be brief"),
            request.clone(),
            Message::assistant("on it"),
            Message::user("[CONTEXT COMPACTION] summary one"),
            Message::assistant("continuing"),
        ];
        let output = vec![
            input[0].clone(),
            request.clone(),
            Message::assistant("on it"),
            Message::user("[CONTEXT COMPACTION] summary two"),
            Message::assistant("continuing"),
        ];
        assert_eq!(check_compacted(&input, &output, Some(&request)), Ok(()));
        // Dropping the request itself is refused, even with a user-role summary present.
        let dropped = vec![
            input[0].clone(),
            Message::user("[CONTEXT COMPACTION] summary two"),
        ];
        assert_eq!(
            check_compacted(&input, &dropped, Some(&request)).unwrap_err(),
            "the last user message was lost"
        );
    }

    /// A session where the user said "continue" three times.
    fn repeated() -> Vec<Message> {
        let mut messages = vec![Message::system("s")];
        for step in 1..=3 {
            messages.push(Message::user("continue"));
            messages.push(Message::assistant(format!("step {step}")));
        }
        messages.push(Message::user("continue"));
        messages
    }

    #[test]
    fn an_earlier_message_of_the_same_text_does_not_stand_in_for_the_users_newest() {
        let input = repeated();
        let newest = input.last();
        // The newest "continue" dropped; an earlier one kept, with what followed it.
        let dropped = vec![
            input[0].clone(),
            Message::assistant("[note] turns 1-2 dropped"),
            input[5].clone(),
            input[6].clone(),
        ];
        assert_eq!(
            check_compacted(&input, &dropped, newest).unwrap_err(),
            "the last user message is no longer the newest: message 3 of the result came before it in the conversation and now follows it (the newest moved before older turns, or dropped and an earlier one of the same text kept)"
        );
        // The newest kept after the turns before it: accepted, notes anywhere.
        let kept = vec![
            input[0].clone(),
            Message::assistant("[note] turns 1-2 dropped"),
            input[5].clone(),
            input[6].clone(),
            Message::assistant("[note] nothing else"),
            input[7].clone(),
        ];
        assert_eq!(check_compacted(&input, &kept, newest), Ok(()));
    }

    #[test]
    fn the_users_newest_message_moved_before_older_turns_is_refused() {
        let input = conversation();
        let moved = vec![
            input[0].clone(),
            input[4].clone(),
            input[1].clone(),
            input[2].clone(),
            input[3].clone(),
        ];
        let refused = check_compacted(&input, &moved, input.last()).unwrap_err();
        assert!(
            refused.starts_with("the last user message is no longer the newest: message 2 "),
            "{refused}"
        );
        // A message the same before and after it may follow it.
        let mut input = conversation();
        input.push(Message::assistant("ok"));
        input.insert(2, Message::assistant("ok"));
        let request = input.iter().rposition(|m| m.role == Role::User).unwrap();
        let output = vec![input[0].clone(), input[request].clone(), Message::assistant("ok")];
        assert_eq!(check_compacted(&input, &output, Some(&input[request])), Ok(()));
    }

    #[test]
    fn arguments_made_invalid_and_an_inserted_system_message_are_refused() {
        let input = conversation();
        let mut broken = input.clone();
        broken[2] = Message::assistant_calls(vec![ToolCall::new("c1", "ls", "{not json")]);
        assert_eq!(
            check_compacted(&input, &broken, input.last()).unwrap_err(),
            "message 2 of the result calls `ls` (id `c1`) with arguments that are not JSON"
        );
        // Shortened and still JSON: accepted.
        let mut shortened = input.clone();
        shortened[2] = Message::assistant_calls(vec![ToolCall::new("c1", "ls", "{\"path\": \"…\"}")]);
        assert_eq!(check_compacted(&input, &shortened, input.last()), Ok(()));
        // Arguments the transcript itself recorded broken are not the engine's doing.
        let mut recorded = input.clone();
        recorded[2] = Message::assistant_calls(vec![ToolCall::new("c1", "ls", "")]);
        assert_eq!(check_compacted(&recorded, &recorded[..4], None), Ok(()));
        // A freeform tool's input (Codex's patch, text) shortened as text: accepted.
        let patch = "*** Begin Patch\n*** Add File: docs/cli.md\n+# CLI\n*** End Patch\n";
        let mut freeform = input.clone();
        freeform[2] = Message::assistant_calls(vec![ToolCall::new("c1", "apply_patch", patch)]);
        let mut masked = freeform.clone();
        masked[2] = Message::assistant_calls(vec![ToolCall::new(
            "c1",
            "apply_patch",
            "*** Begin Patch\n*** Add File: docs/cli.md\n[masked: 20 more chars]",
        )]);
        assert_eq!(check_compacted(&freeform, &masked, freeform.last()), Ok(()));
        let mut system = input.clone();
        system.insert(1, Message::system("[note] compacted"));
        assert_eq!(
            check_compacted(&input, &system, input.last()).unwrap_err(),
            "message 1 of the result is a `system` message the input did not have (an engine inserts `user` or `assistant` messages)"
        );
    }

    #[test]
    fn a_note_merged_before_or_after_the_users_message_keeps_it() {
        let request = Message::user("fix the flaky upload test");
        let input = vec![Message::system("s"), request.clone()];
        for merged in [
            "[note] earlier turns were compacted\n\nfix the flaky upload test",
            "fix the flaky upload test\n\n[note] earlier turns were compacted",
        ] {
            let output = vec![Message::system("s"), Message::user(merged)];
            assert_eq!(
                check_compacted(&input, &output, Some(&request)),
                Ok(()),
                "{merged}"
            );
        }
        let quoted = vec![
            Message::system("s"),
            Message::user("the user asked: fix the flaky upload test (done)"),
        ];
        assert!(check_compacted(&input, &quoted, Some(&request)).is_err());
        let as_assistant = vec![
            Message::system("s"),
            Message::assistant("fix the flaky upload test"),
        ];
        assert!(check_compacted(&input, &as_assistant, Some(&request)).is_err());
    }
}
