//! The final request shaped for Anthropic prompt caching, as Hermes shapes it
//! (`agent/prompt_caching.py`, strategy `system_and_3`).
//!
//! Anthropic allows four cache breakpoints. `system_and_3` spends them so:
//! - one on the system message, when the request starts with one;
//! - the rest on the last non-system messages: the last three, or the last four without a system
//!   message (Hermes's budget; the name says three because a request usually has one).
//!
//! A marker is `{"type": "ephemeral"}`, with `"ttl": "1h"` for the hour-long cache. Where it goes:
//! - string content becomes one text part carrying the marker;
//! - content parts: the last part carries it;
//! - no content (an assistant message that only calls tools, or empty text): the message itself.

use ctxhost_engine_abi::{Content, Message, Role};
use serde_json::{json, Value};

/// Anthropic's limit of cache breakpoints in one request.
pub const MAX_BREAKPOINTS: usize = 4;

/// How to place cache markers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CacheShape {
    /// The system message and the last three non-system messages.
    #[value(name = "system_and_3")]
    SystemAnd3,
}

/// How long the cache keeps an entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum CacheTtl {
    /// Five minutes, Anthropic's default (no `ttl` key).
    #[default]
    #[value(name = "5m")]
    FiveMinutes,
    /// One hour (`"ttl": "1h"`).
    #[value(name = "1h")]
    OneHour,
}

/// The marker for `ttl`.
pub fn cache_marker(ttl: CacheTtl) -> Value {
    match ttl {
        CacheTtl::FiveMinutes => json!({ "type": "ephemeral" }),
        CacheTtl::OneHour => json!({ "type": "ephemeral", "ttl": "1h" }),
    }
}

/// Puts cache markers on `messages` as `shape` says.
pub fn apply_cache_shape(messages: &mut [Message], shape: CacheShape, ttl: CacheTtl) {
    match shape {
        CacheShape::SystemAnd3 => apply_system_and_3(messages, &cache_marker(ttl)),
    }
}

fn apply_system_and_3(messages: &mut [Message], marker: &Value) {
    let mut breakpoints = MAX_BREAKPOINTS;
    if let Some(system) = messages.first_mut().filter(|first| first.role == Role::System) {
        mark(system, marker);
        breakpoints -= 1;
    }
    let mut non_system: Vec<&mut Message> = messages
        .iter_mut()
        .filter(|message| message.role != Role::System)
        .collect();
    let from = non_system.len().saturating_sub(breakpoints);
    for message in &mut non_system[from..] {
        mark(message, marker);
    }
}

fn mark(message: &mut Message, marker: &Value) {
    match &mut message.content {
        Content::Text(text) if !text.is_empty() => {
            let text = std::mem::take(text);
            message.content = Content::Parts(vec![json!({
                "type": "text",
                "text": text,
                "cache_control": marker,
            })]);
        }
        Content::Parts(parts) if parts.last().is_some_and(Value::is_object) => {
            let last = parts.last_mut().and_then(Value::as_object_mut).expect("checked");
            last.insert("cache_control".to_owned(), marker.clone());
        }
        _ => {
            message.extra.insert("cache_control".to_owned(), marker.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_engine_abi::{messages_to_json, ToolCall};
    use pretty_assertions::assert_eq;

    fn shaped(mut messages: Vec<Message>, ttl: CacheTtl) -> Value {
        apply_cache_shape(&mut messages, CacheShape::SystemAnd3, ttl);
        serde_json::from_str(&messages_to_json(&messages)).unwrap()
    }

    #[test]
    fn the_system_message_and_the_last_three_carry_the_marker() {
        let messages = vec![
            Message::system("be brief"),
            Message::user("first"),
            Message::assistant_calls(vec![ToolCall::new("c1", "ls", "{}")]),
            Message::tool("c1", "a.txt"),
            Message::user("second"),
        ];
        let marker = json!({"type": "ephemeral"});
        assert_eq!(
            shaped(messages, CacheTtl::FiveMinutes),
            json!([
                {"role": "system", "content": [{"type": "text", "text": "be brief", "cache_control": marker}]},
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
                ], "cache_control": marker},
                {"role": "tool", "content": [{"type": "text", "text": "a.txt", "cache_control": marker}], "tool_call_id": "c1"},
                {"role": "user", "content": [{"type": "text", "text": "second", "cache_control": marker}]},
            ])
        );
    }

    #[test]
    fn an_hour_long_marker_goes_on_the_last_part_of_parts() {
        let mut image = Message::user("");
        image.content = Content::Parts(vec![
            json!({"type": "image_url", "image_url": {"url": "data:,"}}),
            json!({"type": "text", "text": "what is this?"}),
        ]);
        let marker = json!({"type": "ephemeral", "ttl": "1h"});
        assert_eq!(
            shaped(vec![image], CacheTtl::OneHour),
            json!([{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "data:,"}},
                {"type": "text", "text": "what is this?", "cache_control": marker},
            ]}])
        );
    }

    #[test]
    fn without_a_system_message_the_last_four_carry_it() {
        let messages: Vec<Message> = (0..6).map(|n| Message::user(format!("m{n}"))).collect();
        let shaped = shaped(messages, CacheTtl::FiveMinutes);
        let marked: Vec<bool> = shaped
            .as_array()
            .unwrap()
            .iter()
            .map(|message| message["content"].is_array())
            .collect();
        assert_eq!(marked, vec![false, false, true, true, true, true]);
    }
}
