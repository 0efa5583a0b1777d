//! A message as the bytes the host wrote, and what lcm reads of it to store it.
//!
//! Observing, lcm stores each appended message's JSON exactly as the host sent it
//! ([`ctxhost_engine_abi::RawFact::view`]). It still needs the role, the time and a token
//! estimate, which come from the role, the content, the tool calls, the `tool_call_id` and the
//! `timestamp`: only those are read, every other key is skipped unread, and the result is the
//! same [`Message`] those keys make, so the token estimate (and [`crate::text::search_text`], which
//! the index no longer reads from here) give what they give for the whole message. Reading a whole `Message` (every key, each tool call's
//! unknown keys buffered through serde's `flatten`) and writing it out again was most of what lcm
//! spent outside SQLite.

use std::{borrow::Cow, fmt};

use ctxhost_engine_abi::{Content, FunctionCall, Message, Role, ToolCall};
use serde::{
    de::{self, IgnoredAny, MapAccess, Visitor},
    Deserialize, Deserializer,
};

/// The parts of the message `json` that its search text and token estimate depend on, as a
/// [`Message`] (no `name`, and of the other keys only `timestamp`). Errors where reading the whole message would: a missing
/// or unknown role, content that is not text, parts or null, a tool call without an id or name.
pub fn read_searchable(json: &str) -> Result<Message, serde_json::Error> {
    serde_json::from_str::<Searchable>(json).map(|searchable| searchable.0)
}

struct Searchable(Message);

impl<'de> Deserialize<'de> for Searchable {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(SearchableVisitor)
    }
}

struct SearchableVisitor;

impl<'de> Visitor<'de> for SearchableVisitor {
    type Value = Searchable;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a chat message object with a `role`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Searchable, A::Error> {
        let mut message = Message::new(Role::User, "");
        let mut role = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "role" => role = Some(map.next_value::<Role>()?),
                "content" => message.content = map.next_value::<Content>()?,
                "tool_calls" => {
                    let calls = map.next_value::<Option<Vec<CallFields>>>()?;
                    message.tool_calls =
                        calls.map(|calls| calls.into_iter().map(CallFields::into_call).collect());
                }
                "tool_call_id" => message.tool_call_id = map.next_value()?,
                // When the message was written ([`crate::time::message_time`]).
                "timestamp" => {
                    let timestamp = map.next_value()?;
                    message.extra.insert("timestamp".to_owned(), timestamp);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        message.role = role.ok_or_else(|| de::Error::missing_field("role"))?;
        Ok(Searchable(message))
    }
}

/// A tool call's id and function; its other keys are skipped (they are neither searched nor
/// counted).
#[derive(Deserialize)]
struct CallFields {
    id: String,
    function: FunctionCall,
}

impl CallFields {
    fn into_call(self) -> ToolCall {
        ToolCall {
            function: self.function,
            ..ToolCall::new(self.id, "", "")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::search_text;
    use ctxhost_engine_kit::tokens::estimate_message_tokens;
    use pretty_assertions::assert_eq;

    /// Messages of every shape the searchable text and the estimate depend on.
    fn shapes() -> Vec<String> {
        let mut call = Message::assistant_calls(vec![
            ToolCall::new("c1", "terminal", r#"{"command":"ls -la"}"#),
            ToolCall::new("c2", "read_file", r#"{"path":"src/é.rs"}"#),
        ]);
        call.extra
            .insert("reasoning".into(), serde_json::json!({"steps": [1, 2]}));
        call.name = Some("agent".into());
        let mut parts = Message::user("");
        parts.content = Content::Parts(vec![
            serde_json::json!({"type": "text", "text": "look at"}),
            serde_json::json!({"type": "image_url", "image_url": {"url": "data:x"}}),
            serde_json::json!({"type": "text", "text": "this \"quoted\"\nline"}),
        ]);
        let mut typed = vec![
            Message::system("You are terse."),
            Message::user("tab\there, newline\nthere, emoji 🦀, escape \\u0041"),
            Message::tool("c1", "exit 1\nerror[E0308]: mismatched types"),
            call,
            parts,
        ]
        .into_iter()
        .map(|message| serde_json::to_string(&message).unwrap())
        .collect::<Vec<_>>();
        // As another program may write them: arguments as an object, keys in another order,
        // unknown keys inside a tool call, content absent.
        typed.push(
            r#"{"tool_calls":[{"index":0,"id":"c9","type":"function","function":{"arguments":{"a":[1,2]},"name":"f"}}],"role":"assistant"}"#
                .into(),
        );
        typed
    }

    #[test]
    fn what_is_read_searches_and_counts_as_the_whole_message_does() {
        for json in shapes() {
            let whole: Message = serde_json::from_str(&json).unwrap();
            let read = read_searchable(&json).unwrap();
            assert_eq!(search_text(&read), search_text(&whole), "{json}");
            assert_eq!(
                estimate_message_tokens(&read),
                estimate_message_tokens(&whole),
                "{json}"
            );
            assert_eq!(read.role, whole.role);
        }
    }

    #[test]
    fn a_message_the_whole_reading_refuses_is_refused() {
        for json in [
            r#"{"content":"no role"}"#,
            r#"{"role":"wizard","content":"x"}"#,
            r#"{"role":"user","content":42}"#,
            r#"{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}"#,
            r#"[1]"#,
        ] {
            assert!(serde_json::from_str::<Message>(json).is_err(), "{json}");
            assert!(read_searchable(json).is_err(), "{json}");
        }
    }
}
