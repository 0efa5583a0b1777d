//! `--out-fields api`: the final context with only what the chat completions API takes, so that
//! the file can be sent as a request's `messages` as it is.
//!
//! A replayed context keeps every field its transcript had (Claude Code's `uuid`, `sessionId`,
//! `usage`…; the `thinking` and `reasoning` kept aside), since engines may read them; OpenAI's API
//! refuses a message with a property it does not know ("Additional properties are not allowed").
//! Kept:
//! - `role`, `content`, `tool_calls` (`id`, `type`, `function`), `tool_call_id`;
//! - `name` on system, user and assistant messages (a tool message has none in the API);
//! - content parts of the kinds the API takes from the message's role: `text` from every role,
//!   `image_url`, `input_audio` and `file` from the user, `refusal` from the assistant. An
//!   Anthropic `image` block in a user message becomes an `image_url` part, and a part with text of
//!   another kind (Codex's `input_text`) a `text` part. Any other part (an image in a tool's
//!   result, which the API takes only from the user) is left out, and said;
//! - a tool call's arguments that are not JSON (Codex's freeform custom tools, as `apply_patch`)
//!   become `{"input": …}`, and empty ones `{}`, and said;
//! - an assistant message with neither content nor tool calls (a Claude Code turn that held only
//!   thinking, a legacy call that was not one) is left out, and said: the API refuses it. Any
//!   other message without content gets empty text, which the API takes.

use std::collections::BTreeMap;

use ctxhost_engine_abi::{Content, Message, Role};
use serde_json::{json, Map, Value};

/// Which fields `--out` keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutFields {
    /// Every field of every message, as the engine left them.
    #[default]
    All,
    /// Only what the chat completions API takes.
    Api,
}

/// What keeping only the API's fields left out, for the one line that says so.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// Fields left out, with how many messages had each.
    pub fields: BTreeMap<String, usize>,
    /// Content parts of a kind the API does not know, by kind.
    pub parts: BTreeMap<String, usize>,
    /// Anthropic image blocks rewritten as `image_url` parts.
    pub images_converted: usize,
    /// Assistant messages with neither content nor tool calls, left out.
    pub empty_assistant_messages: usize,
    /// Tool calls whose arguments were not JSON (Codex's freeform custom tools, as `apply_patch`),
    /// written as `{"input": …}`.
    pub arguments_wrapped: usize,
}

impl LeftOut {
    /// One line saying what was left out, or `None` when nothing was.
    pub fn describe(&self) -> Option<String> {
        let list = |counts: &BTreeMap<String, usize>| {
            counts
                .iter()
                .map(|(name, n)| format!("`{name}` ({n})"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut said = Vec::new();
        if !self.fields.is_empty() {
            said.push(format!("left out the fields {}", list(&self.fields)));
        }
        if !self.parts.is_empty() {
            said.push(format!(
                "left out content parts the API does not take: {}",
                list(&self.parts)
            ));
        }
        if self.empty_assistant_messages > 0 {
            said.push(format!(
                "left out {} assistant message{} with neither content nor tool calls, which the API refuses",
                self.empty_assistant_messages,
                if self.empty_assistant_messages == 1 {
                    ""
                } else {
                    "s"
                }
            ));
        }
        if self.arguments_wrapped > 0 {
            said.push(format!(
                "wrote {} tool call{} whose arguments were not JSON (a freeform tool's input) as `{{\"input\": …}}`",
                self.arguments_wrapped,
                if self.arguments_wrapped == 1 { "" } else { "s" }
            ));
        }
        if self.images_converted > 0 {
            said.push(format!(
                "wrote {} Anthropic image block{} as `image_url` parts",
                self.images_converted,
                if self.images_converted == 1 { "" } else { "s" }
            ));
        }
        (!said.is_empty()).then(|| format!("--out-fields api: {}", said.join("; ")))
    }

    /// Whether the file says less or other than the context did, beyond the fields the user
    /// asked to leave out: content parts or messages lost, or a call's arguments rewritten (the
    /// model's own words changed). The README promises a `warning:` line for these; fields left
    /// out and images converted as they are go to `-v`.
    pub fn warrants_warning(&self) -> bool {
        !self.parts.is_empty() || self.empty_assistant_messages > 0 || self.arguments_wrapped > 0
    }
}

/// Keeps in `messages` only what the chat completions API takes; returns what was left out.
pub fn keep_api_fields(messages: &mut Vec<Message>) -> LeftOut {
    let mut left_out = LeftOut::default();
    for message in messages.iter_mut() {
        for key in std::mem::take(&mut message.extra).into_iter().map(|(key, _)| key) {
            *left_out.fields.entry(key).or_default() += 1;
        }
        if message.role == Role::Tool && message.name.take().is_some() {
            *left_out.fields.entry("name".to_owned()).or_default() += 1;
        }
        if message.role != Role::Tool && message.tool_call_id.take().is_some() {
            *left_out.fields.entry("tool_call_id".to_owned()).or_default() += 1;
        }
        for call in message.tool_calls.iter_mut().flatten() {
            for key in std::mem::take(&mut call.extra).into_iter().map(|(key, _)| key) {
                *left_out.fields.entry(format!("tool_calls[].{key}")).or_default() += 1;
            }
            // The API's function arguments are a JSON object's text; a freeform tool's input is
            // not, and a client that parses it (an Anthropic-compatible endpoint) refuses it.
            let arguments = &mut call.function.arguments;
            if serde_json::from_str::<serde::de::IgnoredAny>(arguments).is_err() {
                *arguments = if arguments.trim().is_empty() {
                    "{}".to_owned()
                } else {
                    json!({ "input": arguments }).to_string()
                };
                left_out.arguments_wrapped += 1;
            }
        }
        if let Content::Parts(parts) = &mut message.content {
            let taken = std::mem::take(parts);
            *parts = taken
                .into_iter()
                .filter_map(|part| api_part(message.role, part, &mut left_out))
                .collect();
            if parts.is_empty() {
                // Every part was left out: empty text, as a result with no output reads.
                message.content = Content::Text(String::new());
            }
        }
        // The API takes `null` only beside tool calls.
        if message.content == Content::Null && message.calls().is_empty() {
            message.content = Content::Text(String::new());
        }
    }
    messages.retain(|message| {
        let empty = message.role == Role::Assistant
            && message.calls().is_empty()
            && message.content == Content::Text(String::new());
        left_out.empty_assistant_messages += usize::from(empty);
        !empty
    });
    left_out
}

/// The part as the API takes it from `role`, or `None` (counted) when it takes no such part.
fn api_part(role: Role, part: Value, left_out: &mut LeftOut) -> Option<Value> {
    let kind = part.get("type").and_then(Value::as_str).unwrap_or("").to_owned();
    match (role, kind.as_str()) {
        (_, "text") | (Role::User, "image_url" | "input_audio" | "file") | (Role::Assistant, "refusal") => {
            Some(part)
        }
        (Role::User, "image") => match image_url(&part) {
            Some(url) => {
                left_out.images_converted += 1;
                Some(json!({"type": "image_url", "image_url": {"url": url}}))
            }
            None => {
                *left_out.parts.entry(kind).or_default() += 1;
                None
            }
        },
        _ => match part.get("text").and_then(Value::as_str) {
            Some(text) => Some(json!({"type": "text", "text": text})),
            None => {
                let kind = if kind.is_empty() {
                    "untyped".to_owned()
                } else {
                    kind
                };
                *left_out.parts.entry(kind).or_default() += 1;
                None
            }
        },
    }
}

/// An Anthropic image block's source as a URL: a `data:` URL for base64 data.
fn image_url(block: &Value) -> Option<String> {
    let source: &Map<String, Value> = block.get("source")?.as_object()?;
    match source.get("type")?.as_str()? {
        "base64" => Some(format!(
            "data:{};base64,{}",
            source.get("media_type")?.as_str()?,
            source.get("data")?.as_str()?
        )),
        "url" => source.get("url")?.as_str().map(str::to_owned),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(value: Value) -> Message {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_claude_code_message_keeps_only_the_apis_fields() {
        let mut messages = vec![
            message(json!({
                "role": "assistant", "content": "ok", "uuid": "u1", "sessionId": "s",
                "thinking": "hmm", "usage": {"input_tokens": 3},
                "tool_calls": [{"id": "c1", "type": "function", "caller": "x",
                                "function": {"name": "ls", "arguments": "{}"}}],
            })),
            message(
                json!({"role": "tool", "content": "a", "tool_call_id": "c1", "name": "ls", "uuid": "u2"}),
            ),
            message(json!({"role": "user", "content": "hi", "name": "ann"})),
        ];
        let left_out = keep_api_fields(&mut messages);
        assert_eq!(
            serde_json::to_value(&messages).unwrap(),
            json!([
                {"role": "assistant", "content": "ok",
                 "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
                {"role": "tool", "content": "a", "tool_call_id": "c1"},
                {"role": "user", "content": "hi", "name": "ann"},
            ])
        );
        assert_eq!(
            left_out.describe().unwrap(),
            "--out-fields api: left out the fields `name` (1), `sessionId` (1), `thinking` (1), `tool_calls[].caller` (1), `usage` (1), `uuid` (2)"
        );
    }

    #[test]
    fn content_parts_are_written_as_the_api_takes_them_or_left_out_and_said() {
        let mut messages = vec![message(json!({"role": "user", "content": [
            {"type": "text", "text": "see"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}},
            {"type": "input_text", "text": "from codex"},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "BBB"}},
        ]}))];
        let left_out = keep_api_fields(&mut messages);
        assert_eq!(
            serde_json::to_value(&messages[0].content).unwrap(),
            json!([
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}},
                {"type": "text", "text": "from codex"},
            ])
        );
        assert_eq!(
            left_out.describe().unwrap(),
            "--out-fields api: left out content parts the API does not take: `document` (1); wrote 1 Anthropic image block as `image_url` parts"
        );
    }

    #[test]
    fn an_image_in_a_tools_result_is_left_out_since_the_api_takes_images_from_the_user_only() {
        let mut messages = vec![message(json!({"role": "tool", "tool_call_id": "c1", "content": [
            {"type": "text", "text": "screenshot taken"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}},
        ]}))];
        let left_out = keep_api_fields(&mut messages);
        assert_eq!(
            serde_json::to_value(&messages[0].content).unwrap(),
            json!([{"type": "text", "text": "screenshot taken"}])
        );
        assert_eq!(left_out.parts["image"], 1);
        // A result that was only an image is left empty text, not an empty list of parts.
        let mut messages = vec![message(json!({"role": "tool", "tool_call_id": "c1", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}},
        ]}))];
        keep_api_fields(&mut messages);
        assert_eq!(serde_json::to_value(&messages[0].content).unwrap(), json!(""));
    }

    #[test]
    fn an_assistant_message_with_neither_content_nor_calls_is_left_out_since_the_api_refuses_it() {
        let mut messages = vec![
            message(json!({"role": "user", "content": "go"})),
            // A Claude Code turn that held only thinking, and an answer whose only part is not text.
            message(json!({"role": "assistant", "content": null, "thinking": "hmm"})),
            message(json!({"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"}]})),
            message(json!({"role": "assistant", "content": null,
                           "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]})),
            message(json!({"role": "tool", "tool_call_id": "c1", "content": null})),
            message(json!({"role": "user", "content": null})),
        ];
        let left_out = keep_api_fields(&mut messages);
        assert_eq!(
            serde_json::to_value(&messages).unwrap(),
            json!([
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": null,
                 "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": ""},
                {"role": "user", "content": ""},
            ])
        );
        assert_eq!(
            left_out.describe().unwrap(),
            "--out-fields api: left out the fields `thinking` (1); left out content parts the API does not take: `thinking` (1); left out 2 assistant messages with neither content nor tool calls, which the API refuses"
        );
    }

    #[test]
    fn a_freeform_tools_input_is_written_as_json_arguments_and_said() {
        let mut messages = vec![message(json!({"role": "assistant", "content": null,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "apply_patch", "arguments": "*** Begin Patch\n*** End Patch"}},
                {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": ""}},
                {"id": "c3", "type": "function", "function": {"name": "cat", "arguments": "{\"path\": \"a\"}"}}]}))];
        let left_out = keep_api_fields(&mut messages);
        let arguments: Vec<&str> = messages[0]
            .calls()
            .iter()
            .map(|call| call.function.arguments.as_str())
            .collect();
        assert_eq!(
            arguments,
            [
                r#"{"input":"*** Begin Patch\n*** End Patch"}"#,
                "{}",
                r#"{"path": "a"}"#
            ]
        );
        assert_eq!(left_out.arguments_wrapped, 2);
        assert!(left_out.warrants_warning());
        assert!(left_out
            .describe()
            .unwrap()
            .contains("wrote 2 tool calls whose arguments were not JSON"));
    }

    #[test]
    fn a_context_with_the_apis_fields_only_is_left_as_it_is_and_nothing_is_said() {
        let value = json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": [{"type": "text", "text": "t"}]},
        ]);
        let mut messages: Vec<Message> = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(keep_api_fields(&mut messages), LeftOut::default());
        assert_eq!(serde_json::to_value(&messages).unwrap(), value);
        assert_eq!(LeftOut::default().describe(), None);
    }
}
