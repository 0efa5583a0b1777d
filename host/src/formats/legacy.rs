//! OpenAI's legacy function calling (the 2023 API: `function_call` and `role: "function"`), read
//! as tool calls.
//!
//! The API deprecated it for `tool_calls`, but public fine-tuning and evaluation datasets and old
//! agent logs still hold it. Left as it is, a `function` message is not a message at all and a
//! `function_call` sits unseen in the message's extra fields, so neither compaction nor the
//! pairing repair would see a call. So the OpenAI readers read it as what it means:
//! - an assistant message with `function_call: {name, arguments}` and no `tool_calls` gets one
//!   tool call of that name and arguments (an object kept as its JSON text, as for tool calls),
//!   and loses the `function_call` key. The legacy API gave calls no id, so the id is made from
//!   where the record is (`legacy_function_call_line_4`, plus the column in a JSON document): the
//!   same on every read, and plainly not the model's;
//! - a `function` message becomes a `tool` message, keeping its `name`, answering the latest call
//!   of that name still unanswered since the last message that was not a result. One answering no
//!   such call gets no `tool_call_id`: the pairing repair drops it with a warning naming its line,
//!   as it drops any result that answers no call;
//! - Anthropic's own message shape (`tool_use` blocks in an assistant's content, `tool_result`
//!   blocks in a user's) is not read as calls: once the file is read, one warning says how many
//!   messages hold such blocks, that they are replayed as content the engine sees no call in, and
//!   which line has the first;
//! - once the file is read, one warning says how many of each were read so (a result dropped as
//!   answering no call is not counted: it has its own warning): the conversion is
//!   worth knowing about (the ids are made up), but not once per message.

use std::path::Path;

use ctxhost_engine_abi::{FunctionCall, Message, Role, ToolCall};
use serde_json::{Map, Value};

use super::{
    pairing::{kind_of, message_with_fixed_ids},
    Located, TranscriptMeta,
};

/// The start of every id made for a legacy call.
const LEGACY_CALL_ID_PREFIX: &str = "legacy_function_call_line_";

/// The legacy calls and results of one file.
#[derive(Debug, Default)]
pub(super) struct LegacyFunctions {
    /// The legacy calls of the last message that was not a result, not answered yet: id and name.
    open: Vec<(String, String)>,
    calls: u64,
    results: u64,
    /// Messages holding Anthropic `tool_use` or `tool_result` blocks, and where the first is.
    anthropic_blocks: u64,
    first_anthropic_block: Option<String>,
}

impl LegacyFunctions {
    /// Takes a message as the reader read it: a legacy call becomes a tool call; a message that is
    /// not a result closes the calls still open (a result after it answers none of them).
    pub(super) fn take_message(
        &mut self,
        mut located: Located,
        path: &Path,
        meta: &mut TranscriptMeta,
    ) -> Located {
        if holds_anthropic_calls(&located.message) {
            self.anthropic_blocks += 1;
            self.first_anthropic_block.get_or_insert_with(|| located.place());
        }
        let message = &mut located.message;
        if message.role == Role::Tool {
            return located;
        }
        self.open.clear();
        if message.role != Role::Assistant || !message.calls().is_empty() {
            return located;
        }
        // `null` is no call: openai-python's dumps of replies write it on every assistant message.
        let Some(function_call) = message.extra.get("function_call").filter(|call| !call.is_null()) else {
            return located;
        };
        match tool_call_of(function_call.clone(), located.line, located.column) {
            Ok(call) => {
                self.calls += 1;
                self.open.push((call.id.clone(), call.function.name.clone()));
                message.extra.shift_remove("function_call");
                message.tool_calls = Some(vec![call]);
            }
            Err(why) => {
                let warning = format!(
                    "{}: `function_call` is not a legacy call ({why}); it is kept in the message as it is",
                    located.place()
                );
                meta.warn(path, warning);
            }
        }
        located
    }

    /// The `tool` message a record with `role: "function"` stands for, and the ids of the wrong
    /// type read as text (for warnings); why it is not one otherwise.
    pub(super) fn read_function_result(
        &mut self,
        mut record: Map<String, Value>,
    ) -> Result<(Message, Vec<String>), String> {
        record.insert("role".to_owned(), Value::String("tool".to_owned()));
        let answered = if record.contains_key("tool_call_id") {
            None
        } else {
            // A result without a name (the API required one) can only answer the latest call.
            let name = record.get("name").and_then(Value::as_str);
            self.open
                .iter()
                .rposition(|(_, open_name)| name.is_none_or(|name| name == open_name))
        };
        if let Some(at) = answered {
            record.insert("tool_call_id".to_owned(), Value::String(self.open[at].0.clone()));
        }
        let read = message_with_fixed_ids(record)?;
        // One answering no call is dropped by the pairing repair, with its own warning: it was
        // not read as a result.
        if let Some(at) = answered {
            self.open.remove(at);
            self.results += 1;
        }
        Ok(read)
    }

    /// The file is read: one warning says what was read as tool calls, if anything was.
    pub(super) fn report(&mut self, path: &Path, meta: &mut TranscriptMeta) {
        if let Some(first) = self.first_anthropic_block.take() {
            let count = std::mem::take(&mut self.anthropic_blocks);
            meta.warn(
                path,
                format!(
                    "{count} {} Anthropic `tool_use`/`tool_result` blocks (the first at {first}): this looks like an Anthropic Messages transcript, which ctxhost does not read; the blocks are replayed as content, and the engine sees no tool call or result in them",
                    plural(count, "message holds", "messages hold")
                ),
            );
        }
        let (calls, results) = (std::mem::take(&mut self.calls), std::mem::take(&mut self.results));
        // A result is counted only once it answers a call: there are no results without calls.
        if calls == 0 {
            return;
        }
        let results = match results {
            0 => String::new(),
            n => format!(
                " and {n} `function` {} as their `tool` results",
                plural(n, "message", "messages")
            ),
        };
        let warning = format!(
            "legacy function calling read as tool calls: {calls} `function_call` {} (ids `{LEGACY_CALL_ID_PREFIX}…` made from their place in the file){results}",
            plural(calls, "message", "messages"),
        );
        meta.warn(path, warning);
    }
}

/// Whether `message` holds Anthropic `tool_use` or `tool_result` content blocks.
fn holds_anthropic_calls(message: &Message) -> bool {
    match &message.content {
        ctxhost_engine_abi::Content::Parts(parts) => parts.iter().any(|part| {
            matches!(
                part.get("type").and_then(Value::as_str),
                Some("tool_use" | "tool_result")
            )
        }),
        _ => false,
    }
}

fn plural(count: u64, one: &'static str, many: &'static str) -> &'static str {
    if count == 1 {
        one
    } else {
        many
    }
}

/// The tool call a legacy `function_call` stands for, with the id made from its record's place.
/// Keys besides `name` and `arguments` go to the call's extra fields.
fn tool_call_of(function_call: Value, line: usize, column: Option<usize>) -> Result<ToolCall, String> {
    let Value::Object(mut fields) = function_call else {
        return Err(format!("{}, not an object", kind_of(&function_call)));
    };
    let name = fields.get("name").and_then(Value::as_str).unwrap_or("");
    if name.is_empty() {
        return Err("it has no `name`".to_owned());
    }
    let mut function = Map::new();
    for key in ["name", "arguments"] {
        if let Some(value) = fields.shift_remove(key) {
            function.insert(key.to_owned(), value);
        }
    }
    // Read as a tool call's function is, so that `arguments` given as an object (or missing) is
    // what it would be there.
    function.entry("arguments").or_insert(Value::Null);
    let function: FunctionCall =
        serde_json::from_value(Value::Object(function)).map_err(|error| error.to_string())?;
    let id = match column {
        Some(column) => format!("{LEGACY_CALL_ID_PREFIX}{line}_column_{column}"),
        None => format!("{LEGACY_CALL_ID_PREFIX}{line}"),
    };
    Ok(ToolCall {
        function,
        extra: fields,
        ..ToolCall::new(id, "", "")
    })
}
