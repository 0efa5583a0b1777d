//! Forwards a plugin's `tracing` events to the host.
//!
//! Each shared library carries its own copy of `tracing`'s global dispatcher, so without this a
//! plugin's `tracing::info!` would go nowhere. The SDK installs, once per library, a subscriber that
//! formats each event and hands it to the host's `log` service.

use std::{fmt::Write, sync::OnceLock};

use serde_json::Value;
use tracing::{
    field::{Field, Visit},
    level_filters::LevelFilter,
    Event, Level, Subscriber,
};
use tracing_subscriber::{layer::Context, prelude::*, Layer, Registry};

use crate::{ffi::LogLevel, sdk::Host};

/// Installs the forwarding subscriber for this library, the first time only.
pub(crate) fn forward_logs_to(host: &Host) {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let max_level = host_max_level(host);
        let layer = ForwardToHost { host: host.clone() }.with_filter(max_level);
        // Fails only if this library already set a dispatcher itself; then its own choice stands.
        let _ = tracing::subscriber::set_global_default(Registry::default().with(layer));
    });
}

/// The most verbose level the host will keep, so that filtered-out events never cross.
fn host_max_level(host: &Host) -> LevelFilter {
    match host.call("log.max_level", &Value::Null) {
        Ok(Value::String(level)) => level.parse().unwrap_or(LevelFilter::TRACE),
        _ => LevelFilter::TRACE,
    }
}

struct ForwardToHost {
    host: Host,
}

impl<S: Subscriber> Layer<S> for ForwardToHost {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut line = EventLine::default();
        event.record(&mut line);
        let metadata = event.metadata();
        self.host
            .log(log_level(*metadata.level()), metadata.target(), &line.text);
    }
}

fn log_level(level: Level) -> LogLevel {
    match level {
        Level::TRACE => LogLevel::TRACE,
        Level::DEBUG => LogLevel::DEBUG,
        Level::INFO => LogLevel::INFO,
        Level::WARN => LogLevel::WARN,
        Level::ERROR => LogLevel::ERROR,
    }
}

/// The event's message followed by its other fields as `key=value`.
#[derive(Default)]
struct EventLine {
    text: String,
}

impl EventLine {
    fn push_field(&mut self, field: &Field, value: std::fmt::Arguments<'_>) {
        if field.name() == "message" {
            let fields = std::mem::take(&mut self.text);
            let _ = write!(self.text, "{value}{fields}");
        } else {
            let _ = write!(self.text, " {}={value}", field.name());
        }
    }
}

impl Visit for EventLine {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.push_field(field, format_args!("{value}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.push_field(field, format_args!("{value:?}"));
    }
}
