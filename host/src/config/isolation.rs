//! `context.isolation` and the `isolation:` block: where plugin engines run, and the bounds a child
//! process runs within.
//!
//! ```yaml
//! context:
//!   isolation: process       # in-process (default) | process
//! isolation:                 # read only when context.isolation is process
//!   deadlines:               # seconds a call may take before the child is killed
//!     start: 30              # spawn, handshake, opening the library, creating the engine
//!     compress: 300          # may wait on a summarizing model
//!     handle_tool_call: 60
//!     other: 10              # every other method
//!   crashes_before_detach: 3 # in a row; then the built-in compressor takes over
//!   limits:                  # set by the child on itself before it opens the library; null: none
//!     address_space_mb: 4096 # RLIMIT_AS
//!     cpu_seconds: 3600      # RLIMIT_CPU, over the child's whole life
//! ```

use std::{fmt, str::FromStr, time::Duration};

use serde::Deserialize;

/// Where plugin engines run (`context.isolation`, `--isolation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Isolation {
    /// In the host's process: the fastest; a plugin that crashes takes the host with it.
    #[default]
    InProcess,
    /// Each plugin engine in a child `ctxhost serve` of its own.
    Process,
}

impl Isolation {
    /// The names config and flag accept.
    pub const NAMES: [&'static str; 2] = ["in-process", "process"];
}

impl fmt::Display for Isolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::InProcess => Self::NAMES[0],
            Self::Process => Self::NAMES[1],
        })
    }
}

impl FromStr for Isolation {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "in-process" => Ok(Self::InProcess),
            "process" => Ok(Self::Process),
            other => Err(format!(
                "must be one of {}, got `{other}`",
                Self::NAMES.join(", ")
            )),
        }
    }
}

/// The `isolation:` block.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of settings")]
pub struct IsolationSettings {
    /// Seconds each kind of call may take.
    pub deadlines: Deadlines,
    /// Crashes in a row (a death or a passed deadline) after which the engine is detached.
    pub crashes_before_detach: u32,
    /// What the child may use.
    pub limits: Limits,
    /// The `ctxhost` binary a child runs; `None`: this process's own executable. Not a key of the
    /// file: a program embedding the host (or a test) sets it.
    #[serde(skip)]
    pub server: Option<std::path::PathBuf>,
}

impl Default for IsolationSettings {
    fn default() -> Self {
        Self {
            deadlines: Deadlines::default(),
            crashes_before_detach: 3,
            limits: Limits::default(),
            server: None,
        }
    }
}

/// Seconds a call may take before the child is killed.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of settings")]
pub struct Deadlines {
    /// Starting a child: spawn, handshake, the library opened and the engine created.
    pub start: f64,
    /// `compress`, which may wait on a model.
    pub compress: f64,
    /// `handle_tool_call`, which may search a large store.
    pub handle_tool_call: f64,
    /// Every other method.
    pub other: f64,
}

impl Default for Deadlines {
    fn default() -> Self {
        Self {
            start: 30.0,
            // Above the summarizer's own request timeout (120 s), so that a slow model is reported
            // by the engine as a failed request rather than by the host as a dead engine.
            compress: 300.0,
            handle_tool_call: 60.0,
            other: 10.0,
        }
    }
}

impl Deadlines {
    /// The deadline of contract method `method` (`start` for starting a child).
    pub fn of(&self, method: &str) -> Duration {
        let seconds = match Self::key_of(method) {
            "start" => self.start,
            "compress" => self.compress,
            "handle_tool_call" => self.handle_tool_call,
            _ => self.other,
        };
        Duration::from_secs_f64(seconds)
    }

    /// The key of `isolation.deadlines` that sets the deadline of `method`.
    pub fn key_of(method: &str) -> &'static str {
        match method {
            // Starting a child: the handshake and opening its session.
            "start" | "initialize" | "session/open" => "start",
            "compress" => "compress",
            "handle_tool_call" => "handle_tool_call",
            _ => "other",
        }
    }

    fn entries(&self) -> [(&'static str, f64); 4] {
        [
            ("start", self.start),
            ("compress", self.compress),
            ("handle_tool_call", self.handle_tool_call),
            ("other", self.other),
        ]
    }
}

/// The smallest address-space limit a child is given, in MiB.
pub const MIN_ADDRESS_SPACE_MB: u64 = 128;

/// Resource limits of a child; `None` leaves the limit as the host's.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Address space in MiB (RLIMIT_AS): an allocation past it fails, and the engine aborts.
    pub address_space_mb: Option<u64>,
    /// CPU seconds over the child's life (RLIMIT_CPU): past it the child gets SIGXCPU.
    pub cpu_seconds: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            address_space_mb: Some(4096),
            cpu_seconds: Some(3600),
        }
    }
}

/// A value of the `isolation:` block that cannot be right: the key under the block, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IsolationProblem {
    /// E.g. `deadlines.compress`.
    pub key: String,
    /// Why.
    pub reason: String,
}

impl IsolationSettings {
    /// Refuses impossible values.
    pub fn validate(&self) -> Result<(), IsolationProblem> {
        let problem = |key: String, reason: String| Err(IsolationProblem { key, reason });
        for (name, seconds) in self.deadlines.entries() {
            // Beyond a year a deadline means none, and Duration cannot hold every f64.
            if !(seconds.is_finite() && seconds > 0.0 && seconds <= 31_536_000.0) {
                return problem(
                    format!("deadlines.{name}"),
                    format!("must be a positive number of seconds (at most a year), got {seconds}"),
                );
            }
        }
        if self.crashes_before_detach == 0 {
            return problem("crashes_before_detach".into(), "must be at least 1, got 0".into());
        }
        // An idle child maps about 87 MiB (the binary, its threads' stacks, the allocator's
        // first reservation) before it opens a library: below this the library could not be
        // mapped, which would look like a broken plugin.
        if let Some(mb) = self
            .limits
            .address_space_mb
            .filter(|mb| *mb < MIN_ADDRESS_SPACE_MB)
        {
            return problem(
                "limits.address_space_mb".into(),
                format!("must be at least {MIN_ADDRESS_SPACE_MB} (MiB), got {mb}"),
            );
        }
        if self.limits.cpu_seconds == Some(0) {
            return problem("limits.cpu_seconds".into(), "must be at least 1, got 0".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;
    use pretty_assertions::assert_eq;

    fn parse(text: &str) -> Result<Settings, crate::config::ConfigError> {
        Settings::parse(text, std::path::Path::new("/work/config.yaml"))
    }

    #[test]
    fn isolation_is_in_process_unless_configured() {
        let settings = parse("").unwrap();
        assert_eq!(settings.isolation, Isolation::InProcess);
        assert_eq!(settings.isolation_settings, IsolationSettings::default());
        let settings = parse(
            "context:\n  isolation: process\nisolation:\n  deadlines:\n    compress: 2.5\n  crashes_before_detach: 5\n  limits:\n    address_space_mb: 512\n    cpu_seconds: null\n",
        )
        .unwrap();
        assert_eq!(settings.isolation, Isolation::Process);
        let block = &settings.isolation_settings;
        assert_eq!(block.deadlines.of("compress"), Duration::from_millis(2500));
        assert_eq!(block.deadlines.of("should_compress"), Duration::from_secs(10));
        assert_eq!(block.crashes_before_detach, 5);
        assert_eq!(
            block.limits,
            Limits {
                address_space_mb: Some(512),
                cpu_seconds: None
            }
        );
    }

    #[test]
    fn a_wrong_value_names_the_file_line_and_key() {
        for (text, expected) in [
            (
                "context:\n  engine: lcm\n  isolation: sandbox\n",
                "/work/config.yaml:3: `context.isolation` must be one of in-process, process, got `sandbox`",
            ),
            (
                "isolation:\n  deadlines:\n    compress: 0\n",
                "/work/config.yaml:3: `isolation.deadlines.compress` must be a positive number of seconds (at most a year), got 0",
            ),
            (
                "isolation:\n  crashes_before_detach: 0\n",
                "/work/config.yaml:2: `isolation.crashes_before_detach` must be at least 1, got 0",
            ),
            (
                "isolation:\n  limits:\n    address_space_mb: 10\n",
                "/work/config.yaml:3: `isolation.limits.address_space_mb` must be at least 128 (MiB), got 10",
            ),
            (
                // In a flow mapping: the line it is written on.
                "isolation:\n  deadlines: {compress: 0}\n",
                "/work/config.yaml:2: `isolation.deadlines.compress` must be a positive number of seconds (at most a year), got 0",
            ),
        ] {
            assert_eq!(parse(text).unwrap_err().to_string(), expected);
        }
        let error = parse("isolation:\n  deadlines:\n    compres: 3\n")
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("/work/config.yaml:3:"), "{error}");
        assert!(error.contains("compres"), "{error}");
    }
}
