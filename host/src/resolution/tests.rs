use ctxhost_engine_abi::{CompressRequest, Counters, Engine, EngineError, Host, Message};
use serde_json::Value;

use super::*;

struct Echo {
    counters: Counters,
    label: String,
}

impl Engine for Echo {
    const NAME: &'static str = "echo";

    fn new(config: &Value, _host: Host) -> Result<Self, EngineError> {
        let label = config
            .get("label")
            .and_then(Value::as_str)
            .unwrap_or("none")
            .to_owned();
        Ok(Self {
            counters: Counters::default(),
            label,
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
    fn get_status(&self) -> Value {
        serde_json::json!({ "label": self.label })
    }
}

fn settings(yaml: &str) -> (tempfile::TempDir, Settings) {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings::parse(yaml, &dir.path().join("config.yaml")).unwrap();
    (dir, settings)
}

#[test]
fn a_registered_engine_is_found_after_the_plugin_folders_with_its_config_block() {
    let mut registry = Registry::default();
    registry.register::<Echo>().unwrap();
    let (_dir, settings) = settings("context:\n  engine: echo\necho:\n  label: from config\n");
    let mut resolution = resolve_engine("echo", &settings, &registry);
    assert_eq!(resolution.fallback, None);
    assert_eq!(resolution.engine.origin(), &EngineOrigin::Registered);
    assert_eq!(resolution.engine.get_status().unwrap()["label"], "from config");
}

#[test]
fn a_second_registration_under_a_taken_name_is_refused() {
    let mut registry = Registry::default();
    registry.register::<Echo>().unwrap();
    assert_eq!(
        registry.register::<Echo>().unwrap_err().to_string(),
        "an engine named `echo` is already registered; the second registration is refused"
    );
}

#[test]
fn an_unknown_engine_falls_back_to_the_compressor_with_the_reason() {
    let (_dir, settings) = settings("");
    let resolution = resolve_engine("lcm", &settings, &Registry::default());
    assert_eq!(resolution.engine.name(), "compressor");
    assert_eq!(resolution.engine.origin(), &EngineOrigin::BuiltIn);
    let fallback = resolution.fallback.unwrap();
    assert_eq!(fallback.requested, "lcm");
    assert!(
        fallback.reason.starts_with("no plugin folder `lcm` in "),
        "{}",
        fallback.reason
    );
}
