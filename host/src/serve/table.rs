//! The open sessions, each with its own engine, and how they end.

use std::collections::BTreeMap;

use ctxhost_engine_abi::Message;
use ctxhost_protocol::{code, Fallback, RpcError, ShutdownReport};

use super::session::Session;
use crate::{
    config::Settings,
    engine::EngineCallError,
    resolution::{resolve_engine, Registry},
};

/// The sessions of one server.
#[derive(Default)]
pub struct SessionTable {
    sessions: BTreeMap<String, Session>,
    opened: u64,
    registry: Registry,
}

impl SessionTable {
    /// Opens a session running engine `name` resolved with `settings` (the built-in compressor
    /// when it cannot be used, with the reason).
    pub fn open(&mut self, settings: Settings, name: &str) -> (&mut Session, Option<Fallback>) {
        self.opened += 1;
        let id = format!("s{}", self.opened);
        let _session = super::in_session(&id);
        let resolution = resolve_engine(name, &settings, &self.registry);
        // The reply's `fallback` tells the client, which tells its user (the Hermes bridge logs
        // it; a host running this server as an engine's child refuses the engine instead): a
        // warning here said it a second time.
        if let Some(fallback) = &resolution.fallback {
            tracing::info!("{}", fallback.warning());
        }
        let (session, fallback) = Session::new(id.clone(), resolution, settings);
        (self.sessions.entry(id).or_insert(session), fallback)
    }

    /// The registry new engines are resolved with.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The open session `id`.
    pub fn get_mut(&mut self, id: &str) -> Result<&mut Session, RpcError> {
        let open = self.sessions.len();
        self.sessions.get_mut(id).ok_or_else(|| {
            RpcError::new(
                code::UNKNOWN_SESSION,
                format!("no open session `{id}` ({open} open; `session/open` returns the id)"),
            )
        })
    }

    /// Closes session `id`, ending it first when it was started; the session is gone even when
    /// its engine fails to end it (the error is returned).
    pub fn close(&mut self, id: &str, messages: Option<Vec<Message>>) -> Result<(), EngineCallError> {
        let Some(mut session) = self.sessions.remove(id) else {
            return Ok(());
        };
        end_session(&mut session, messages).engine
    }

    /// Whether `id` is open.
    pub fn contains(&self, id: &str) -> bool {
        self.sessions.contains_key(id)
    }

    /// Ends every session (shutdown, end of input), each with the last context it saw.
    pub fn end_all(&mut self) -> ShutdownReport {
        let mut report = ShutdownReport::default();
        for (id, mut session) in std::mem::take(&mut self.sessions) {
            let started = session.started.is_some();
            let _session = super::in_session(&id);
            let ended = end_session(&mut session, None);
            report.problems.extend(
                ended
                    .observers
                    .iter()
                    .map(|warning| format!("session {id}: {warning}")),
            );
            match ended.engine {
                Ok(()) if started => {
                    tracing::info!("ended (on_session_end)");
                    report.sessions_ended += 1;
                }
                Ok(()) => {}
                Err(error) => {
                    tracing::warn!("{error}");
                    report.problems.push(format!("session {id}: {error}"));
                }
            }
        }
        report
    }
}

/// `on_session_end` with `messages`, or the last context the session saw, when it was started.
pub fn end_session(session: &mut Session, messages: Option<Vec<Message>>) -> Ended {
    let Some((session_id, _)) = session.started.take() else {
        return Ended {
            engine: Ok(()),
            observers: Vec::new(),
        };
    };
    let messages = messages.unwrap_or_else(|| session.last_messages.take());
    session.watch.session_ended(&session_id, &messages);
    let observers = session.watch.close();
    Ended {
        engine: session.engine.on_session_end(&session_id, &messages),
        observers,
    }
}

/// How a session's end went.
pub struct Ended {
    /// The engine's `on_session_end`.
    pub engine: Result<(), EngineCallError>,
    /// Observers detached as they finished, each as its warning.
    pub observers: Vec<String>,
}
