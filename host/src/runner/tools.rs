//! The engine's tools during a replay: which names are the engine's, and the calls of the
//! transcript that name one, waiting for their results.
//!
//! - At start the host reads `get_tool_schemas` ([`crate::tools::offered_tools`]: a name offered
//!   twice keeps its first schema, a schema without a name is ignored, each with a warning).
//! - An assistant message's call naming an engine tool waits for its result in the transcript.
//!   When the result comes, the host calls `handle_tool_call(name, args, context)` live. The
//!   active engine's answer replaces the recorded one: the model would have seen it. An
//!   observer's is compared and reported, and the recorded one stays: observers never change
//!   the context.
//! - A call the transcript never answers is still dispatched when its turn is over (its answer is
//!   logged, nothing is inserted: the transcript is replayed as it is).

use serde::Serialize;
use serde_json::Value;

/// Which engine answers a tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ToolOwner {
    /// The active engine.
    Active,
    /// Observer number `n`, in attachment order.
    Observer(usize),
}

/// A tool no longer offered because the observer offering it was detached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DetachedTool {
    /// The tool.
    pub tool: String,
    /// The observer that offered it.
    pub observer: String,
}

/// The tools the agent is offered: the active engine's, then each observer's; a name offered
/// twice keeps its first owner, with one warning.
pub(crate) fn merge_tool_owners<'a>(
    active: Vec<String>,
    observers: impl Iterator<Item = (usize, &'a str, &'a str)>,
) -> (Vec<(String, ToolOwner)>, Vec<String>) {
    let mut table: Vec<(String, ToolOwner)> =
        active.into_iter().map(|name| (name, ToolOwner::Active)).collect();
    let mut warnings = Vec::new();
    for (index, observer, tool) in observers {
        match table.iter().find(|(name, _)| name == tool) {
            Some((_, owner)) => warnings.push(format!(
                "observer `{observer}` offers the tool `{tool}`, which {} offers already; the first keeps it",
                match owner {
                    ToolOwner::Active => "the active engine".to_owned(),
                    ToolOwner::Observer(_) => "another observer".to_owned(),
                }
            )),
            None => table.push((tool.to_owned(), ToolOwner::Observer(index))),
        }
    }
    (table, warnings)
}

/// The names of the tools a transcript records its agent was offered: a `tools` list of
/// schemas (`{name}` or OpenAI's `{function: {name}}`) at its top level or in Hermes's
/// `session_meta` record, as its reader kept them. Empty when it records none.
pub fn recorded_tool_names(extra: &serde_json::Map<String, Value>) -> Vec<String> {
    let lists = [
        extra.get("tools"),
        extra.get("session_meta").and_then(|meta| meta.get("tools")),
    ];
    lists
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|schema| {
            schema
                .get("function")
                .unwrap_or(schema)
                .get("name")
                .and_then(Value::as_str)
        })
        .map(str::to_owned)
        .collect()
}

/// Warnings for the tools a transcript lists as its agent's own only after its messages (a
/// `tools` key after `messages`): a streamed replay learns of them too late, and an observer
/// offering such a name was given the agent's calls of it. One line a tool, naming the observer.
pub fn tools_listed_too_late(
    listed_before: &[String],
    listed_after: &[String],
    dispatches: &[ToolDispatch],
) -> Vec<String> {
    let mut warnings = Vec::new();
    for tool in listed_after.iter().filter(|tool| !listed_before.contains(tool)) {
        let answered: Vec<&ToolDispatch> = dispatches
            .iter()
            .filter(|dispatch| &dispatch.tool == tool && !dispatch.replaced)
            .collect();
        let Some(first) = answered.first() else {
            continue;
        };
        warnings.push(format!(
            "it lists its tools after its messages, too late to know `{tool}` as the agent's own: observer `{}` was asked its {} call(s) (the context kept the recorded results); list `tools` ahead of `messages` to keep them from it",
            first.engine,
            answered.len()
        ));
    }
    warnings
}

/// A call of the transcript to an engine tool, waiting for its result.
#[derive(Clone, Debug)]
pub(super) struct PendingCall {
    pub message_index: usize,
    pub call_id: String,
    pub tool: String,
    pub arguments: String,
}

/// The arguments of a call as JSON: its text parsed, `{}` when empty.
pub(super) fn parse_arguments(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(text).map_err(|error| format!("the arguments are not JSON: {error}"))
}

/// One engine tool called live, against the result the transcript recorded.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolDispatch {
    /// The index of the tool result it answered (of the assistant message, for a call the
    /// transcript never answered).
    pub message_index: usize,
    /// The engine that answered: the active engine, or the observer offering the tool.
    pub engine: String,
    /// The call's id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// Its arguments as the transcript recorded them (JSON text).
    pub arguments: String,
    /// The result the transcript recorded; `None` when it has none. Cut at 64 KiB, saying its
    /// whole length (the context keeps it whole).
    pub recorded: Option<String>,
    /// The engine's answer now (JSON text), cut as `recorded` is.
    pub live: String,
    /// Whether the engine failed (an error, a panic, its process lost): the answer is
    /// `{"error": …}` saying so, and the failure is one of the report's errors.
    pub failed: bool,
    /// Whether they are the same text, or the same JSON value.
    pub equal: bool,
    /// Whether the live answer replaced the recorded result in the context: the active engine's
    /// does; an observer's never does, nor does the answer to a call the transcript left
    /// unanswered.
    pub replaced: bool,
}

/// Whether a recorded tool result and a live answer say the same: the same text, or the same JSON
/// value (the engine's answer is re-serialised by the host, so spacing may differ).
pub(super) fn answers_equal(recorded: &str, live: &str) -> bool {
    if recorded == live {
        return true;
    }
    match (
        serde_json::from_str::<Value>(recorded),
        serde_json::from_str::<Value>(live),
    ) {
        (Ok(recorded), Ok(live)) => recorded == live,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn answers_are_equal_as_text_or_as_json() {
        assert!(answers_equal("plain", "plain"));
        assert!(answers_equal(r#"{"a": 1, "b": [2]}"#, r#"{"a":1,"b":[2]}"#));
        assert!(!answers_equal(r#"{"a": 1}"#, r#"{"a":2}"#));
        assert!(!answers_equal("plain", r#""plain""#));
    }

    #[test]
    fn empty_arguments_are_an_empty_object_and_broken_ones_an_error() {
        assert_eq!(parse_arguments(" "), Ok(json!({})));
        assert_eq!(parse_arguments(r#"{"q":"x"}"#), Ok(json!({"q": "x"})));
        assert!(parse_arguments("{oops")
            .unwrap_err()
            .starts_with("the arguments are not JSON"));
    }

    #[test]
    fn the_tools_a_transcript_records_are_read_in_either_schema_shape_and_where_hermes_keeps_them() {
        let extra = json!({
            "tools": [{"type": "function", "function": {"name": "terminal"}}, {"name": "read_file"}, 7],
            "session_meta": {"tools": [{"name": "patch"}]},
        });
        let names = recorded_tool_names(extra.as_object().unwrap());
        assert_eq!(names, ["terminal", "read_file", "patch"]);
        assert!(recorded_tool_names(&serde_json::Map::new()).is_empty());
    }

    #[test]
    fn a_tool_offered_by_two_engines_keeps_its_first_owner_with_one_warning() {
        let active = vec!["lcm_grep".to_owned(), "probe".to_owned()];
        let observers = [
            (0, "lcm", "lcm_grep"),
            (0, "lcm", "lcm_expand"),
            (1, "other", "lcm_expand"),
        ];
        let (table, warnings) = merge_tool_owners(active, observers.into_iter());
        assert_eq!(
            table,
            vec![
                ("lcm_grep".to_owned(), ToolOwner::Active),
                ("probe".to_owned(), ToolOwner::Active),
                ("lcm_expand".to_owned(), ToolOwner::Observer(0)),
            ]
        );
        assert_eq!(
            warnings,
            vec![
                "observer `lcm` offers the tool `lcm_grep`, which the active engine offers already; the first keeps it",
                "observer `other` offers the tool `lcm_expand`, which another observer offers already; the first keeps it",
            ]
        );
    }
}
