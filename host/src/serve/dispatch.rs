//! Each method of the protocol, called on the server's sessions.
//!
//! Every engine call goes through the host's [`EngineHandle`](crate::engine::EngineHandle), so
//! an engine's error or panic comes back as an error reply with its kind, and `compress` results
//! are checked as the replay checks them (`compress/unchecked` leaves that to its client, the
//! host's handle on an isolated engine). A failed call leaves the session as it was.

use std::time::Instant;

use ctxhost_engine_abi::{EngineError, ModelInfo, SessionInfo, ABI_VERSION};
use ctxhost_protocol::{
    code, method, Answer, CallExtParams, CloseParams, CompactionOutcome, CompactionRecord, CompressParams,
    Compressed, ConfigSource, InitializeParams, Initialized, MessagesParams, OpenParams, Request, RpcError,
    SessionEndParams, SessionParams, SessionStartParams, ShouldCompressParams, SwapParams, ToolCallParams,
    UpdateModelParams, UsageParams, PROTOCOL_VERSION,
};
use serde::Serialize;
use serde_json::{value::RawValue, Value};

use super::{
    session::{Session, ToolRoute},
    stdio::Stop,
    table::SessionTable,
    unchecked,
    watch::Watch,
};
use crate::{
    config::Settings,
    engine::{Compacted, CompressCall, EngineCallError},
    resolution::{resolve_engine, try_resolve_engine},
    runner::{
        observer_names,
        observers::{detached_observer, ToolAnswer},
        Observers,
    },
};

/// The outcome of one request: the result, and whether the server stops after replying.
pub struct Handled {
    /// The reply's result or error.
    pub reply: Result<Box<RawValue>, RpcError>,
    /// Stop after replying (`shutdown`, an incompatible client).
    pub stop: Option<Stop>,
}

impl From<Result<Box<RawValue>, RpcError>> for Handled {
    fn from(reply: Result<Box<RawValue>, RpcError>) -> Self {
        Self { reply, stop: None }
    }
}

/// Calls `request`'s method.
pub fn dispatch(
    request: &Request,
    base: (&Settings, &super::Overrides),
    table: &mut SessionTable,
    initialized: &mut bool,
) -> Handled {
    let name = request.method.as_str();
    if name == method::INITIALIZE {
        return initialize(request, initialized);
    }
    if !*initialized {
        return Err(RpcError::new(
            code::NOT_INITIALIZED,
            format!("`{name}` before `initialize`: the handshake comes first"),
        ))
        .into();
    }
    if name == method::SHUTDOWN {
        let report = table.end_all();
        return Handled {
            reply: to_raw(&report),
            stop: Some(Stop::Asked),
        };
    }
    if name == method::SESSION_OPEN {
        return open(request, base, table).into();
    }
    if name == method::SESSION_CLOSE {
        return close(request, table).into();
    }
    if name == method::COMPRESS_UNCHECKED {
        return request
            .params()
            .and_then(|params| unchecked::compress_unchecked(params, table))
            .into();
    }
    session_method(request, table).into()
}

fn initialize(request: &Request, initialized: &mut bool) -> Handled {
    let params: InitializeParams = match request.params() {
        Ok(params) => params,
        Err(error) => return Err(error).into(),
    };
    if !PROTOCOL_VERSION.is_compatible_with(params.protocol_version) {
        let message = format!(
            "client `{}` speaks protocol {}, this server {PROTOCOL_VERSION}: incompatible; the server stops",
            params.client_name, params.protocol_version
        );
        return Handled {
            reply: Err(RpcError::new(code::INCOMPATIBLE_VERSION, message.clone())),
            stop: Some(Stop::Incompatible(message)),
        };
    }
    *initialized = true;
    tracing::info!(
        "client `{}` speaks protocol {}",
        params.client_name,
        params.protocol_version
    );
    let initialized = Initialized {
        protocol_version: PROTOCOL_VERSION,
        server_name: "ctxhost".to_owned(),
        server_version: env!("CARGO_PKG_VERSION").to_owned(),
        abi_version: ABI_VERSION,
        capabilities: method::ALL.iter().map(|name| (*name).to_owned()).collect(),
    };
    to_raw(&initialized).into()
}

fn open(
    request: &Request,
    (base, overrides): (&Settings, &super::Overrides),
    table: &mut SessionTable,
) -> Result<Box<RawValue>, RpcError> {
    let params: OpenParams = request.params()?;
    if let Some(model) = &params.model {
        usable_model(model, &request.method)?;
    }
    let mut settings = match &params.config {
        None => base.clone(),
        Some(source) => read_config(source, base)?,
    };
    overrides.apply(&mut settings);
    // Told to the client in the reply, and logged. The server's own config said its warnings
    // when the server started.
    let mut warnings = match &params.config {
        Some(_) => std::mem::take(&mut settings.warnings),
        None => Vec::new(),
    };
    let name = params.engine.clone().unwrap_or_else(|| settings.engine.clone());
    if let Some(block) = params.engine_config.clone() {
        settings = settings.with_engine_block(&name, block).map_err(|problem| {
            RpcError::new(
                code::CONFIG_ERROR,
                format!("`engine_config`: `{}` {}", problem.key, problem.reason),
            )
        })?;
    }
    // Observers are resolved like the engine but never replaced by the compressor: one that
    // cannot be used refuses the session, naming it.
    let mut observers = Observers::with_timeout(settings.observer_timeout);
    // Those the request names, else the config's.
    let list = match &params.observers {
        Some(names) => ("`observers`", names.as_slice()),
        None => ("`context.observers`", settings.observers.as_slice()),
    };
    let (names, standby) = observer_names(&[list], &name, |warning| warnings.push(warning));
    for observer in &names {
        let create = {
            let (name, settings, registry) = (observer.clone(), settings.clone(), table.registry().clone());
            move || try_resolve_engine(&name, &settings, &registry).map_err(|error| error.to_string())
        };
        observers.start(observer, create).map_err(|reason| {
            RpcError::new(
                code::CONFIG_ERROR,
                format!("observer `{observer}` cannot be used: {reason}"),
            )
        })?;
    }
    // Without a `model`, the window of the config (`model.context_length`), as `run` takes it:
    // an engine never told its window would never compact.
    let model = params.model.clone().or_else(|| {
        (!overrides.model_from_parent)
            .then(|| configured_model(&settings))
            .flatten()
    });
    // Told to the client only: one that calls `update_model` right after (the Hermes bridge
    // before its first turn) is doing nothing wrong, and the log would say it every session.
    let no_window = (model.is_none() && !overrides.model_from_parent).then(|| {
        "no window: the request gives no `model` and the config no `model.context_length`; the engine compacts nothing until `update_model` tells it one"
            .to_owned()
    });
    // A plugin created in this process says what it thinks of its block (a key it does not
    // know) in its log: the client hears it with the host's own warnings.
    let ((session, fallback), engine_warnings) =
        crate::services::warnings_while(|| table.open(settings, &name));
    let _session = super::in_session(&session.id);
    session.watch = Watch::new(&session.id, observers);
    session.standby = standby;
    session.agent_tools = params.agent_tools.iter().cloned().collect();
    if let Some(model) = &model {
        session.watch.update_model(model);
        let updated = session.engine.update_model(model).map_err(engine_error);
        if let Err(error) = updated {
            let id = session.id.clone();
            let _ = table.close(&id, None);
            return Err(error);
        }
        session.model = Some(model.clone());
    }
    for warning in &warnings {
        tracing::warn!("{warning}");
    }
    // Logged already, by the engine.
    warnings.extend(engine_warnings);
    warnings.extend(no_window);
    let mut info = session.engine_info(fallback);
    warnings.append(&mut info.warnings);
    info.warnings = warnings;
    answer(session, info)
}

/// The model `settings` describe, when they give its window.
fn configured_model(settings: &Settings) -> Option<ModelInfo> {
    let context_length = settings.model.context_length.filter(|&tokens| tokens > 0)?;
    Some(ModelInfo {
        model: settings.model.default.clone().unwrap_or_default(),
        context_length,
        max_tokens: settings
            .model
            .max_tokens
            .filter(|&reserved| reserved < context_length),
        ..ModelInfo::default()
    })
}

/// The settings a `session/open` names: a file, or an object with the keys of `config.yaml`
/// (relative paths in it are the server's working directory's; the server's plugins directory
/// unless it names one).
fn read_config(source: &ConfigSource, base: &Settings) -> Result<Settings, RpcError> {
    let config_error = |error: &dyn std::fmt::Display| RpcError::new(code::CONFIG_ERROR, error.to_string());
    match source {
        ConfigSource::Path(path) => Settings::load(path).map_err(|error| config_error(&error)),
        ConfigSource::Inline(object) => {
            let text = serde_norway::to_string(object).map_err(|error| config_error(&error))?;
            // No file: engines' relative paths (lcm's database) are the working directory's.
            let mut settings = Settings::parse_inline(&text).map_err(|error| config_error(&error))?;
            let names_plugins_dir = object
                .get("context")
                .and_then(|context| context.get("plugins_dir"))
                .is_some();
            if !names_plugins_dir {
                settings.plugins_dir = base.plugins_dir.clone();
            }
            Ok(settings)
        }
    }
}

fn close(request: &Request, table: &mut SessionTable) -> Result<Box<RawValue>, RpcError> {
    let params: CloseParams = request.params()?;
    table.get_mut(&params.session)?;
    let _session = super::in_session(&params.session);
    table
        .close(&params.session, params.messages)
        .map_err(engine_error)?;
    to_raw(&Value::Null)
}

fn session_method(request: &Request, table: &mut SessionTable) -> Result<Box<RawValue>, RpcError> {
    let session_id: SessionParams = session_of(request)?;
    let _session = super::in_session(&session_id.session);
    let reply = run_session_method(request, table, &session_id);
    // A live agent may not call again for a while: what its observers were told goes now.
    if let Ok(session) = table.get_mut(&session_id.session) {
        session.watch.flush();
    }
    reply
}

fn run_session_method(
    request: &Request,
    table: &mut SessionTable,
    session_id: &SessionParams,
) -> Result<Box<RawValue>, RpcError> {
    let name = request.method.as_str();
    if name == method::SWAP {
        return swap(request, table);
    }
    let session = table.get_mut(&session_id.session)?;
    match name {
        method::UPDATE_MODEL => {
            let params: UpdateModelParams = request.params()?;
            usable_model(&params.model, &request.method)?;
            session.engine.update_model(&params.model).map_err(engine_error)?;
            session.watch.update_model(&params.model);
            session.model = Some(params.model);
            answer(session, ())
        }
        method::ON_SESSION_START => {
            let params: SessionStartParams = request.params()?;
            session
                .engine
                .on_session_start(&params.session_id, &params.info)
                .map_err(engine_error)?;
            let engine = session.engine.name().to_owned();
            session
                .watch
                .session_started(&params.session_id, &params.info, &engine);
            session.started = Some((params.session_id, params.info));
            answer(session, ())
        }
        method::ON_SESSION_END => {
            let params: SessionEndParams = request.params()?;
            session
                .engine
                .on_session_end(&params.session_id, &params.messages)
                .map_err(engine_error)?;
            session.watch.session_ended(&params.session_id, &params.messages);
            if session
                .started
                .as_ref()
                .is_some_and(|(id, _)| *id == params.session_id)
            {
                session.started = None;
            }
            answer(session, ())
        }
        method::ON_SESSION_RESET => {
            let _: SessionParams = request.params()?;
            session.engine.on_session_reset().map_err(engine_error)?;
            session.watch.reset();
            answer(session, ())
        }
        method::UPDATE_FROM_RESPONSE => {
            let params: UsageParams = request.params()?;
            let usage = params.usage.into();
            session.engine.update_from_response(usage).map_err(engine_error)?;
            session.watch.usage(usage);
            answer(session, ())
        }
        method::SHOULD_COMPRESS => {
            let params: ShouldCompressParams = request.params()?;
            let fire = session
                .engine
                .should_compress(params.prompt_tokens)
                .map_err(engine_error)?;
            answer(session, fire)
        }
        method::SHOULD_COMPRESS_PREFLIGHT => {
            let params: MessagesParams = request.params()?;
            session.watch.saw(&params.messages);
            let fire = session
                .engine
                .should_compress_preflight(&params.messages, None)
                .map_err(engine_error)?;
            session.last_messages = params.messages.into();
            answer(session, fire)
        }
        method::HAS_CONTENT_TO_COMPRESS => {
            let params: MessagesParams = request.params()?;
            session.watch.saw(&params.messages);
            let has = session
                .engine
                .has_content_to_compress(&params.messages)
                .map_err(engine_error)?;
            session.last_messages = params.messages.into();
            answer(session, has)
        }
        method::COMPRESS => compress(session, request.params()?),
        method::GET_TOOL_SCHEMAS => {
            let _: SessionParams = request.params()?;
            let tools = session.tool_schemas().map_err(engine_error)?;
            answer(session, tools)
        }
        method::HANDLE_TOOL_CALL => {
            let params: ToolCallParams = request.params()?;
            let arguments = Value::Object(params.arguments);
            if let Some(messages) = &params.messages {
                session.watch.saw(messages);
            }
            let result = match session.route_tool_call(&params.name) {
                ToolRoute::Observer(index) => {
                    let answer = session.watch.call_tool(index, &params.name, &arguments);
                    // Detached by a fact handed to it before the call, which it had not handled
                    // yet, or in this very call (stuck in it past the observer timeout, or failing
                    // in it): the same error either way, as for every later call of its tools.
                    let observers = session.watch.observers();
                    match (answer, observers.detached(index)) {
                        (ToolAnswer::Detached(why), _) | (ToolAnswer::Answered(_), Some(why)) => {
                            return Err(detached_tool(observers.name(index), &params.name, &why));
                        }
                        (ToolAnswer::Answered(answer), None) => answer,
                    }
                }
                ToolRoute::Detached { observer, why } => {
                    return Err(detached_tool(&observer, &params.name, &why))
                }
                ToolRoute::Engine => session
                    .engine
                    .handle_tool_call(&params.name, &arguments, params.messages.as_deref())
                    .map_err(engine_error)?,
            };
            if let Some(messages) = params.messages {
                session.last_messages = messages.into();
            }
            answer(session, result)
        }
        method::GET_STATUS => {
            let _: SessionParams = request.params()?;
            let status = session.engine.get_status().map_err(engine_error)?;
            answer(session, status)
        }
        method::CALL_EXT => {
            let params: CallExtParams = request.params()?;
            match session
                .engine
                .call_ext(&params.method, &params.request)
                .map_err(engine_error)?
            {
                Some(value) => answer(session, value),
                None => {
                    let error = EngineError::unknown_method(&params.method);
                    let message = format!(
                        "engine `{}` does not know the extension method `{}`",
                        session.engine.name(),
                        params.method
                    );
                    Err(RpcError::engine_failed(
                        session.engine.name(),
                        method::CALL_EXT,
                        &error,
                        message,
                    ))
                }
            }
        }
        method::COUNTERS => {
            let _: SessionParams = request.params()?;
            answer(session, ())
        }
        method::COMPACTIONS => {
            let _: SessionParams = request.params()?;
            let records = session.records.clone();
            answer(session, records)
        }
        other => Err(RpcError::new(
            code::METHOD_NOT_FOUND,
            format!("unknown method `{other}` (`initialize` lists the methods this server serves)"),
        )),
    }
}

/// The `session` param every session method has, read first so that an unknown method and a
/// missing session are told apart from wrong params.
fn session_of(request: &Request) -> Result<SessionParams, RpcError> {
    if !method::ALL.contains(&request.method.as_str()) {
        return Err(RpcError::new(
            code::METHOD_NOT_FOUND,
            format!(
                "unknown method `{}` (`initialize` lists the methods this server serves)",
                request.method
            ),
        ));
    }
    /// The session alone; the method's own params are read after it.
    #[derive(serde::Deserialize)]
    struct SessionOnly {
        session: String,
    }
    let params = request.params.map_or("{}", RawValue::get);
    let only: SessionOnly = ctxhost_protocol::parse_params(&request.method, params)?;
    Ok(SessionParams {
        session: only.session,
    })
}

/// `compress`, checked.
pub(super) fn compress(session: &mut Session, params: CompressParams) -> Result<Box<RawValue>, RpcError> {
    session.watch.saw(&params.messages);
    let started = Instant::now();
    let tokens_before = session.tokens.count_messages(&params.messages);
    // The client's word on which message is the user's, when it gives one; else told by content.
    let user_message = match params.user_message {
        Some(index) => Some(params.messages.get(index).ok_or_else(|| {
            RpcError::new(
                code::INVALID_PARAMS,
                format!(
                    "invalid params for `compress`: user_message: {index} is past the {} messages",
                    params.messages.len()
                ),
            )
        })?),
        None => session.find_user_message(&params.messages),
    };
    let call = CompressCall {
        current_tokens: params.current_tokens,
        focus_topic: params.focus_topic.as_deref(),
        user_message,
    };
    let result = session.engine.compress_or_keep(&params.messages, None, &call);
    let duration_ms = started.elapsed().as_secs_f64() * 1e3;
    let details = session
        .engine
        .call_ext("last_compaction", &Value::Null)
        .ok()
        .flatten();
    let mut record = CompactionRecord {
        engine: session.engine.name().to_owned(),
        focus_topic: params.focus_topic.clone(),
        messages_before: params.messages.len(),
        messages_after: params.messages.len(),
        tokens_before,
        tokens_after: tokens_before,
        duration_ms,
        outcome: CompactionOutcome::Unchanged,
        details,
    };
    match result {
        Ok(compacted) => {
            let messages = match compacted {
                Compacted::Unchanged => params.messages,
                Compacted::Changed { messages, .. } => {
                    record.outcome = CompactionOutcome::Applied;
                    record.messages_after = messages.len();
                    record.tokens_after = session.tokens.count_messages(&messages);
                    session.note_engine_written(&params.messages, &messages);
                    let engine = session.engine.name().to_owned();
                    let tokens = (record.tokens_before, record.tokens_after);
                    session
                        .watch
                        .compacted(&engine, &params.messages, &messages, tokens);
                    messages
                }
            };
            session.records.push(record.clone());
            let compressed = Compressed { messages, record };
            let reply = answer(session, &compressed);
            session.last_messages = compressed.messages.into();
            reply
        }
        Err(error) => {
            record.outcome = CompactionOutcome::Failed {
                reason: error.to_string(),
            };
            session.records.push(record);
            session.last_messages = params.messages.into();
            Err(engine_error(error))
        }
    }
}

/// Refuses a model no engine can work with, as the config refuses it: a window of no tokens
/// (every threshold would be 0), or an answer reservation that leaves none.
fn usable_model(model: &ModelInfo, method: &str) -> Result<(), RpcError> {
    let problem = match (model.context_length, model.max_tokens) {
        (0, _) => "`model.context_length` must be a positive number of tokens, got 0".to_owned(),
        (length, Some(reserved)) if reserved >= length => {
            format!("`model.max_tokens` ({reserved}) must be smaller than `model.context_length` ({length})")
        }
        _ => return Ok(()),
    };
    Err(RpcError::new(
        code::INVALID_PARAMS,
        format!("invalid params for `{method}`: {problem}"),
    ))
}

/// `swap`: the next engine is resolved with the session's settings, told the model, and started
/// on the same agent session; only then does the old one end its session. A next engine that
/// cannot be used, or fails to start, is refused and the session keeps its engine.
fn swap(request: &Request, table: &mut SessionTable) -> Result<Box<RawValue>, RpcError> {
    let params: SwapParams = request.params()?;
    let settings = table.get_mut(&params.session)?.settings.clone();
    let resolution = resolve_engine(&params.engine, &settings, table.registry());
    let session = table.get_mut(&params.session)?;
    if let Some(fallback) = resolution.fallback {
        return Err(RpcError::new(
            code::CONFIG_ERROR,
            format!(
                "engine `{}` cannot be used: {}; the session keeps `{}`",
                fallback.requested,
                fallback.reason,
                session.engine.name()
            ),
        ));
    }
    let mut next = resolution.engine;
    // An observer of the same engine stops first: two instances would write one store.
    let ending = session
        .started
        .as_ref()
        .map(|(id, _)| (id.as_str(), session.last_messages.messages()));
    let retired = session.watch.retire(next.name(), ending);
    if retired && !session.standby.iter().any(|n| n == next.name()) {
        session.standby.push(next.name().to_owned());
    }
    let started = session
        .model
        .as_ref()
        .map_or(Ok(()), |model| next.update_model(model))
        .and_then(|()| {
            // As in a replay: told it takes over a session under way (lcm then keeps the old
            // engine's summaries and stand-ins out of its store).
            session.started.as_ref().map_or(Ok(()), |(session_id, info)| {
                let info = SessionInfo {
                    boundary_reason: Some(crate::runner::SWAP_REASON.to_owned()),
                    old_session_id: None,
                    ..info.clone()
                };
                next.on_session_start(session_id, &info)
            })
        });
    if let Err(error) = started {
        // Refused as an engine that cannot be used is: the session goes on with its engine.
        let mut message = format!("{error}; the session keeps `{}`", session.engine.name());
        if retired {
            // As in a replay: the observing instance goes back to observing, once the one that
            // failed no longer holds the store.
            let name = next.name().to_owned();
            drop(next);
            match session.watch.observers_mut().resume_after_refused_swap(&name) {
                Ok(()) => message.push_str(&format!(" (`{name}` keeps observing the session)")),
                Err(why) => {
                    message.push_str(&format!(" (`{name}` no longer observes the session: {why})"));
                }
            }
        }
        return Err(RpcError::new(code::CONFIG_ERROR, message));
    }
    let mut previous = std::mem::replace(&mut session.engine, next);
    let to = session.engine.name().to_owned();
    session.watch.swapped(previous.name(), &to);
    let from = previous.name().to_owned();
    // As in a replay: its time in charge ends with the context as it stands (lcm stores the turns
    // since its last compaction), then an engine asked to observe goes back to observing, its
    // session going on; unless it is the one starting afresh, whose two instances would share
    // one store.
    if let Some((session_id, _)) = &session.started {
        if let Err(error) = previous.on_session_end(session_id, session.last_messages.messages()) {
            tracing::warn!("swapped out: {error}");
        }
    }
    if session.standby.contains(&from) && from != to {
        if let Err(reason) = session.watch.attach(previous) {
            tracing::warn!("`{from}` cannot stay on as an observer: {reason}");
        }
    }
    let info = session.engine_info(None);
    answer(session, info)
}

/// The reply to a session's method: `value` and the counters after the call.
pub(super) fn answer<T: Serialize>(session: &Session, value: T) -> Result<Box<RawValue>, RpcError> {
    let counters = session.engine.counters().map_err(engine_error)?;
    to_raw(&Answer { value, counters })
}

/// A result as JSON text, written once.
fn to_raw<T: Serialize>(value: &T) -> Result<Box<RawValue>, RpcError> {
    serde_json::value::to_raw_value(value).map_err(|error| {
        RpcError::new(
            code::INTERNAL_ERROR,
            format!("the answer does not serialise: {error}"),
        )
    })
}

/// An engine call's failure as an error reply with the engine error's kind.
/// A call of `tool`, offered by `observer` until it was detached (`why`): the tool is offered no
/// more, and the call is an error of that observer, on one line.
fn detached_tool(observer: &str, tool: &str, why: &str) -> RpcError {
    let message = format!(
        "{}; its tool `{tool}` is offered no more",
        detached_observer(observer, why)
    );
    RpcError::engine_failed(
        observer,
        method::HANDLE_TOOL_CALL,
        &EngineError::unavailable(message.clone()),
        message,
    )
}

pub(super) fn engine_error(error: EngineCallError) -> RpcError {
    let message = error.to_string();
    match &error {
        EngineCallError::Failed {
            engine,
            method,
            error,
        } => RpcError::engine_failed(engine, method, error, message),
        EngineCallError::InvalidOutput { engine, method, .. } => {
            RpcError::invalid_output(engine, method, message)
        }
        EngineCallError::ProcessLost { engine, method, .. } => {
            RpcError::engine_failed(engine, method, &EngineError::other(message.clone()), message)
        }
    }
}
