//! The tools an engine offers the agent (`get_tool_schemas`), read the same way wherever the host
//! reads them: a replay, an observer, `serve`, `plugins check`.
//!
//! - A schema is `{name, description, parameters}`. OpenAI's wrapped shape, `{"type": "function",
//!   "function": {…}}`, is taken as the schema it wraps, so that every client gets one shape.
//! - A schema with no name, or an empty one, is ignored with a warning: no call could name it.
//! - A name offered twice keeps its first schema; the later one is rejected with a warning, as
//!   Hermes's tool registry does (and as model APIs refuse two functions of one name).

use serde_json::Value;

/// An engine's tools as the agent is offered them, and what was wrong with the rest.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OfferedTools {
    /// The schemas kept, in the order the engine gave them, each named.
    pub schemas: Vec<Value>,
    /// One line for each schema left out.
    pub warnings: Vec<String>,
}

impl OfferedTools {
    /// The tools' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.schemas.iter().filter_map(tool_name)
    }
}

/// The name of a schema kept by [`offered_tools`].
pub fn tool_name(schema: &Value) -> Option<&str> {
    schema.get("name").and_then(Value::as_str)
}

/// Reads the schemas engine `engine` returned from `get_tool_schemas`.
pub fn offered_tools(engine: &str, schemas: Vec<Value>) -> OfferedTools {
    let mut offered = OfferedTools::default();
    for (position, schema) in schemas.into_iter().enumerate() {
        let schema = match schema {
            Value::Object(mut wrapper)
                if !wrapper.contains_key("name") && wrapper.contains_key("function") =>
            {
                wrapper.remove("function").unwrap_or_default()
            }
            schema => schema,
        };
        match tool_name(&schema).filter(|name| !name.is_empty()) {
            None => offered.warnings.push(format!(
                "engine `{engine}`: tool schema #{} has no name; it is ignored",
                position + 1
            )),
            Some(name) if offered.names().any(|known| known == name) => offered.warnings.push(format!(
                "engine `{engine}` offers the tool `{name}` twice; the later schema is rejected"
            )),
            Some(_) => offered.schemas.push(schema),
        }
    }
    offered
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn schemas_are_kept_once_each_by_name_in_one_shape() {
        let offered = offered_tools(
            "e",
            vec![
                json!({"name": "grep", "parameters": {}}),
                json!({"type": "function", "function": {"name": "expand", "parameters": {}}}),
                json!({"name": "grep", "description": "again"}),
                json!({"name": ""}),
                json!({"description": "no name"}),
                json!("not a schema"),
            ],
        );
        assert_eq!(
            offered.schemas,
            [
                json!({"name": "grep", "parameters": {}}),
                json!({"name": "expand", "parameters": {}})
            ]
        );
        assert_eq!(
            offered.warnings,
            [
                "engine `e` offers the tool `grep` twice; the later schema is rejected",
                "engine `e`: tool schema #4 has no name; it is ignored",
                "engine `e`: tool schema #5 has no name; it is ignored",
                "engine `e`: tool schema #6 has no name; it is ignored",
            ]
        );
    }
}
