//! `telemetry`: the smallest complete observer. Attach it with `context.observers: [telemetry]`
//! and it writes every fact of the session, one JSON object a line, to `telemetry.path`
//! (relative to the config file; default `.ctxhost/telemetry.jsonl` beside it), appended to: each
//! fact names its session, and several sessions (`ctxhost serve`) may write one file. `telemetry.kinds`
//! narrows what it asks for (default: every kind). It never changes the context: selected as the
//! active engine, it returns the context as it was.
//!
//! The engine below is the whole observer: an example for plugin authors.
#![forbid(unsafe_code)]

use std::{fs, io::Write, path::PathBuf};

use ctxhost_engine_abi::{CompressRequest, Counters, Engine, EngineError, Fact, FactKind, Host, Message};
use serde::Deserialize;
use serde_json::Value;

/// The `telemetry:` block.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of settings")]
struct Config {
    path: Option<PathBuf>,
    kinds: Option<Vec<FactKind>>,
}

/// Writes every fact it receives as a JSON line.
pub struct Telemetry {
    counters: Counters,
    kinds: Vec<FactKind>,
    file: fs::File,
}

impl Engine for Telemetry {
    const NAME: &'static str = "telemetry";

    fn new(config: &Value, host: Host) -> Result<Self, EngineError> {
        let config: Config = ctxhost_engine_abi::read_config("telemetry", config)?;
        let paths = host
            .paths()
            .unwrap_or_else(|_| ctxhost_engine_abi::HostPaths::current_dir());
        let path = match config.path {
            Some(path) => paths.config_dir.join(path),
            None => paths.data_dir.join("telemetry.jsonl"),
        };
        let open = || {
            fs::create_dir_all(path.parent().unwrap_or(&paths.config_dir))?;
            fs::OpenOptions::new().create(true).append(true).open(&path)
        };
        let file =
            open().map_err(|error| EngineError::config(format!("telemetry: {}: {error}", path.display())))?;
        let kinds = config.kinds.unwrap_or_else(|| FactKind::ALL.to_vec());
        Ok(Self {
            counters: Counters::default(),
            kinds,
            file,
        })
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn counters_mut(&mut self) -> &mut Counters {
        &mut self.counters
    }

    fn compress(&mut self, messages: Vec<Message>, _: &CompressRequest) -> Result<Vec<Message>, EngineError> {
        Ok(messages)
    }

    fn interests(&self) -> Vec<FactKind> {
        self.kinds.clone()
    }

    fn observe(&mut self, fact: &Fact) -> Result<(), EngineError> {
        // One write of the whole line: another session's writer may append between two writes.
        let mut line = serde_json::to_string(fact).expect("facts serialise");
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .map_err(|error| EngineError::other(format!("telemetry: {error}")))
    }
}
