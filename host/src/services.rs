//! What the host offers engines through the ABI: logging, and named services.
//!
//! A new service is a new name answered by [`HostServices::call`], never a new method, so plugins
//! built against an older interface keep loading.

use std::{
    panic::{self, AssertUnwindSafe},
    sync::Arc,
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RArc, RResult, RStr, RString},
};
use ctxhost_engine_abi::{
    ffi::{HostBox, HostServices, HostServices_TO, LogLevel},
    EngineError,
};
use serde_json::json;
use tracing::level_filters::LevelFilter;

/// The service names this host answers.
pub const SERVICES: &[&str] = &["services", "log.max_level"];

/// The host's services for one engine; log lines are labelled with the engine's name.
#[derive(Clone)]
struct EngineServices {
    engine: Arc<str>,
}

/// The services handed to engine `engine` when it is created.
pub fn host_services_for(engine: &str) -> HostBox {
    HostServices_TO::from_ptr(
        RArc::new(EngineServices {
            engine: Arc::from(engine),
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
        match level {
            LogLevel::ERROR => tracing::error!(target: "engine", engine, source = target, "{message}"),
            LogLevel::WARN => tracing::warn!(target: "engine", engine, source = target, "{message}"),
            LogLevel::INFO => tracing::info!(target: "engine", engine, source = target, "{message}"),
            LogLevel::DEBUG => tracing::debug!(target: "engine", engine, source = target, "{message}"),
            _ => tracing::trace!(target: "engine", engine, source = target, "{message}"),
        }
    }

    fn answer(&self, service: &str, _request: &str) -> RResult<RString, EngineError> {
        let answer = match service {
            "services" => json!(SERVICES),
            "log.max_level" => json!(max_level_name()),
            other => return RResult::RErr(EngineError::unknown_method(other)),
        };
        RResult::ROk(RString::from(answer.to_string()))
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
