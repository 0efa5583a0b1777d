//! Reading an engine's config block with errors that name the key at fault.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::EngineError;

/// Reads engine `engine`'s config block (the JSON form of its `config.yaml` block) into `T`: `null`
/// (no block) gives `T::default()`, and a key left empty (`keep_last:`, `null`) is taken as absent,
/// so that it keeps its default; a value of the wrong type is an [`EngineError::config`] naming
/// its key as the user wrote it, `lcm.fresh_tail: invalid type: string "many", expected usize`,
/// which the host places at the key's file and line.
///
/// Derive `Deserialize` for `T` with `#[serde(default)]` so that missing keys take their
/// defaults. A block that is not a mapping is refused.
pub fn read_config<T: DeserializeOwned + Default>(engine: &str, block: &Value) -> Result<T, EngineError> {
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
}
