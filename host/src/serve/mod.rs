//! `ctxhost serve`: the protocol's server end, driving sessions of engines for a remote agent.
//!
//! The wire types are the `ctxhost-protocol` crate's. Here:
//! - [`session`]: one session (its engine, settings, and what the server remembers of it);
//! - [`table`]: the open sessions and how they end;
//! - [`dispatch`]: each method on those sessions;
//! - [`unchecked`]: `compress/unchecked`, for a client that checks the result itself;
//! - [`watch`]: a session's observers, told what the calls carry;
//! - [`stdio`]: the transport (one request a line on stdin, one reply a line on stdout).
//!
//! Whatever a line holds, the server answers it and goes on: a malformed line, an unknown method,
//! wrong params and an engine's failure or panic are error replies. Only `shutdown`, the end of
//! input, a client gone (its pipe closed) or an incompatible handshake stop it, and each of them
//! ends every started session (`on_session_end`) first.

pub mod dispatch;
pub mod session;
pub mod stdio;
pub mod table;
pub mod unchecked;
pub mod watch;

use std::panic::{catch_unwind, AssertUnwindSafe};

use ctxhost_protocol::{code, method, Id, Request, Response, RpcError};
use serde_json::value::RawValue;

use crate::config::Settings;

/// The span a session's work runs in: a log line inside it (the host's, an engine's, a plugin's)
/// is led by the session it is about, `session s2: …`, as a server of many sessions needs.
pub const SESSION_SPAN: &str = "session";

/// Enters session `id`'s span, for as long as the guard lives.
pub(crate) fn in_session(id: &str) -> tracing::span::EnteredSpan {
    tracing::warn_span!(SESSION_SPAN, id = %id).entered()
}

/// A server: the settings sessions default to, and its sessions.
pub struct Server {
    base: Settings,
    overrides: Overrides,
    table: table::SessionTable,
    initialized: bool,
    stop: Option<stdio::Stop>,
}

/// What the server's command line set: it holds for every session, whatever config the session
/// opens with, as the same flags override `config.yaml` for `run`. `--isolation process` given
/// to a server behind an agent is a promise that no plugin runs in the server's process.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// `--plugins-dir`.
    pub plugins_dir: Option<std::path::PathBuf>,
    /// `--isolation`.
    pub isolation: Option<crate::config::Isolation>,
    /// Set in an isolated engine's child (`--parent-pid`): its parent calls `update_model`
    /// itself, so a session opened without a model is not given the config's window first (an
    /// engine failing in `update_model` would fail while starting instead of when told).
    pub model_from_parent: bool,
}

impl Overrides {
    /// `settings` with the command line's say.
    pub fn apply(&self, settings: &mut Settings) {
        if let Some(dir) = &self.plugins_dir {
            settings.plugins_dir.clone_from(dir);
        }
        if let Some(isolation) = self.isolation {
            settings.isolation = isolation;
        }
    }
}

impl Server {
    /// A server whose sessions default to `base` (the `--config` file, or every default).
    pub fn new(base: Settings) -> Self {
        Self::with_overrides(base, Overrides::default())
    }

    /// A server whose sessions default to `base`, and whatever their config, take `overrides`.
    pub fn with_overrides(base: Settings, overrides: Overrides) -> Self {
        Self {
            base,
            overrides,
            table: table::SessionTable::default(),
            initialized: false,
            stop: None,
        }
    }

    /// Answers one line; `None` for a notification (a request without an id).
    pub fn handle_line(&mut self, line: &str) -> Option<String> {
        if self.initialized {
            if let Some((id, params)) = unchecked::read_request(line) {
                let table = &mut self.table;
                let reply = contain(method::COMPRESS_UNCHECKED, || {
                    unchecked::compress_unchecked(params, table).into()
                })
                .reply;
                return Some(respond(id, reply));
            }
        }
        let request = match Request::parse(line) {
            Ok(request) => request,
            Err((id, error)) => return Some(Response::error(id, error).to_line()),
        };
        let (base, table, initialized) = (
            (&self.base, &self.overrides),
            &mut self.table,
            &mut self.initialized,
        );
        let handled = contain(&request.method, || {
            dispatch::dispatch(&request, base, table, initialized)
        });
        if handled.stop.is_some() {
            self.stop = handled.stop;
        }
        Some(respond(request.id?, handled.reply))
    }

    /// Why the server stops, once a request asked it to.
    pub fn stop(&self) -> Option<stdio::Stop> {
        self.stop.clone()
    }

    /// Ends every started session; returns how many ended cleanly.
    pub fn end_all(&mut self) -> usize {
        self.table.end_all().sessions_ended
    }
}

/// Runs one method. The engine handle contains engines' panics; this contains the server's own,
/// so that a bug in one method is one error reply rather than every session lost.
fn contain(method: &str, run: impl FnOnce() -> dispatch::Handled) -> dispatch::Handled {
    catch_unwind(AssertUnwindSafe(run)).unwrap_or_else(|panic| dispatch::Handled {
        reply: Err(RpcError::new(
            code::INTERNAL_ERROR,
            format!("the server failed in `{method}`: {}", panic_message(&panic)),
        )),
        stop: None,
    })
}

/// The reply line to request `id`.
fn respond(id: Id, reply: Result<Box<RawValue>, RpcError>) -> String {
    match reply {
        Ok(result) => Response::result(Some(id), result),
        Err(error) => Response::error(Some(id), error),
    }
    .to_line()
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}
