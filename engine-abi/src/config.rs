//! Reading an engine's config block with errors that name the key at fault, and warnings that
//! name a mistyped key with the key it resembles.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::EngineError;

/// Reads engine `engine`'s config block (the JSON form of its `config.yaml` block) into `T`: `null`
/// (no block) gives `T::default()`, and a key left empty (`keep_last:`, `null`) is taken as absent,
/// so that it keeps its default; a value of the wrong type is an [`EngineError::config`] naming
/// its key as the user wrote it, `lcm.fresh_tail: invalid type: string "many", expected usize`,
/// which the host places at the key's file and line.
///
/// A key `T` does not have but that is spelt like one of its fields is logged as a warning
/// (`lcm.fresh_tial: unknown setting, ignored; did you mean \`lcm.fresh_tail\`?`), which the host
/// shows with the file and line of the key. Keys unlike every field are left alone: a block may
/// hold settings of another version of the engine.
///
/// Derive `Deserialize` for `T` with `#[serde(default)]` so that missing keys take their
/// defaults. A block that is not a mapping is refused.
pub fn read_config<T: DeserializeOwned + Default>(engine: &str, block: &Value) -> Result<T, EngineError> {
    for warning in misspelt_keys(
        engine,
        block,
        serde_aux::serde_introspection::serde_introspect::<T>(),
    ) {
        tracing::warn!("{warning}");
    }
    let given;
    let block = match block {
        Value::Null => return Ok(T::default()),
        Value::Object(map) if map.values().any(Value::is_null) => {
            given = Value::Object(
                map.iter()
                    .filter(|(_, value)| !value.is_null())
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            );
            &given
        }
        Value::Object(_) => block,
        // serde would read a list as the fields in order.
        other => {
            return Err(EngineError::config(format!(
                "{engine}: expected a mapping of settings, found {}",
                kind_of(other)
            )))
        }
    };
    serde_path_to_error::deserialize(block).map_err(|error| {
        let key = error.path().to_string();
        let message = error.into_inner();
        EngineError::config(match key.as_str() {
            "." => format!("{engine}: {message}"),
            key => format!("{engine}.{key}: {message}"),
        })
    })
}

/// How alike (Jaro-Winkler) an unknown key must be to a known one to be taken for a typo of it.
/// Far enough to leave other programs' keys that share a section alone (Hermes's
/// `model.provider`), close enough for a dropped, doubled or swapped letter.
const TYPO_SIMILARITY: f64 = 0.88;

/// The known key `name` is most likely a typo of, if any is that close.
pub fn closest_key<'k>(name: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|candidate| (strsim::jaro_winkler(name, candidate), *candidate))
        .filter(|(score, _)| *score >= TYPO_SIMILARITY)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, closest)| closest)
}

/// For an engine's config `block`: each key it does not know that is spelt like one it does, with
/// that key, as a warning to show (`lcm.databse: unknown setting, ignored; did you mean
/// \`lcm.database\`?`). Keys unlike any known one are not listed: a block may hold settings of
/// another version of the engine. [`read_config`] logs these; call it for a block read otherwise.
pub fn misspelt_keys(engine: &str, block: &Value, known: &[&str]) -> Vec<String> {
    let Value::Object(map) = block else {
        return Vec::new();
    };
    map.keys()
        .filter(|key| !known.contains(&key.as_str()))
        .filter_map(|key| {
            closest_key(key, known).map(|closest| {
                format!("{engine}.{key}: unknown setting, ignored; did you mean `{engine}.{closest}`?")
            })
        })
        .collect()
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Default, Deserialize)]
    #[serde(default, expecting = "a mapping of settings")]
    struct Settings {
        fresh_tail: usize,
        kinds: Vec<Kind>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Usage,
    }

    fn message(block: Value) -> String {
        read_config::<Settings>("lcm", &block)
            .unwrap_err()
            .message
            .into_string()
    }

    #[test]
    fn a_wrong_value_names_its_key_and_no_block_gives_the_defaults() {
        assert_eq!(
            message(json!({"fresh_tail": "many"})),
            r#"lcm.fresh_tail: invalid type: string "many", expected usize"#
        );
        assert_eq!(
            message(json!({"kinds": ["usage", "bogus"]})),
            "lcm.kinds[1]: unknown variant `bogus`, expected `usage`"
        );
        assert_eq!(
            message(json!(7)),
            "lcm: expected a mapping of settings, found a number"
        );
        assert_eq!(
            message(json!([1, 2])),
            "lcm: expected a mapping of settings, found a list"
        );
        let defaults: Settings = read_config("lcm", &Value::Null).unwrap();
        assert_eq!((defaults.fresh_tail, defaults.kinds.len()), (0, 0));
        let left_empty: Settings =
            read_config("lcm", &json!({"fresh_tail": null, "kinds": ["usage"]})).unwrap();
        assert_eq!((left_empty.fresh_tail, left_empty.kinds.len()), (0, 1));
    }

    #[test]
    fn a_key_one_slip_away_from_a_known_one_is_named_and_others_are_left_alone() {
        let known = ["database", "threshold", "fresh_tail"];
        let block = json!({"databse": "x", "treshold": 0.5, "fresh_tail": 3, "colour": "blue"});
        assert_eq!(
            misspelt_keys("lcm", &block, &known),
            [
                "lcm.databse: unknown setting, ignored; did you mean `lcm.database`?",
                "lcm.treshold: unknown setting, ignored; did you mean `lcm.threshold`?",
            ]
        );
        assert_eq!(misspelt_keys("lcm", &Value::Null, &known), Vec::<String>::new());
        assert_eq!(
            closest_key("context_lenght", &["context_length", "max_tokens"]),
            Some("context_length")
        );
        assert_eq!(
            closest_key("provider", &["context_length", "max_tokens", "default"]),
            None
        );
    }

    #[test]
    fn read_config_warns_of_a_key_spelt_like_a_field_of_the_struct_it_reads() {
        let warnings = warnings_while(|| {
            let settings: Settings = read_config("lcm", &json!({"fresh_tial": 3, "colour": 1})).unwrap();
            assert_eq!(settings.fresh_tail, 0, "ignored, its default kept");
        });
        assert_eq!(
            warnings,
            ["lcm.fresh_tial: unknown setting, ignored; did you mean `lcm.fresh_tail`?"]
        );
    }

    /// The messages of the warnings logged while `work` runs on this thread.
    fn warnings_while(work: impl FnOnce()) -> Vec<String> {
        use std::sync::{Arc, Mutex};
        use tracing_subscriber::{layer::Context, prelude::*, Layer, Registry};

        struct Collect(Arc<Mutex<Vec<String>>>);
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        impl<S: tracing::Subscriber> Layer<S> for Collect {
            fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
                if *event.metadata().level() == tracing::Level::WARN {
                    let mut message = Message(String::new());
                    event.record(&mut message);
                    self.0.lock().unwrap().push(message.0);
                }
            }
        }
        let said = Arc::new(Mutex::new(Vec::new()));
        let subscriber = Registry::default().with(Collect(Arc::clone(&said)));
        tracing::subscriber::with_default(subscriber, work);
        let said = said.lock().unwrap().clone();
        said
    }
}
