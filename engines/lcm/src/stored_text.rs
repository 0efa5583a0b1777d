//! The search text of a stored message, read from its JSON without building a [`Message`].
//!
//! A regex with no word to narrow on reads every stored message, so this is the cost of a scan
//! per row. Building an owned [`Message`] copied every string and buffered every unknown key;
//! here the strings a message almost always has (text content, tool-call names and string
//! arguments) are borrowed from the row and appended to one reused buffer. Anything else (content
//! parts, arguments given as an object, a duplicate key, a wrong type) falls back to the whole
//! reading, so the text is always exactly [`text::search_text`] of the parsed message, and the
//! raw JSON for a row that is not a message at all, as before.

use std::{borrow::Cow, fmt, marker::PhantomData};

use ctxhost_engine_abi::{Message, Role};
use serde::{
    de::{value::MapAccessDeserializer, MapAccess, Visitor},
    Deserialize, Deserializer,
};

use crate::text;

/// Replaces `out` with the search text of the stored message `json`.
pub fn search_text_into(json: &[u8], out: &mut String) {
    out.clear();
    let Ok(json_str) = std::str::from_utf8(json) else {
        // Not text at all (a file written by something else): searched as what it shows.
        out.push_str(&String::from_utf8_lossy(json));
        return;
    };
    if let Ok(MapOnly(message)) = serde_json::from_str::<MapOnly<Plain<'_>>>(json_str) {
        if let Some(content) = &message.content {
            out.push_str(content);
        }
        for call in message.tool_calls.iter().flatten() {
            text::push_call(out, &call.0.function.name, &call.0.function.arguments);
        }
        return;
    }
    match serde_json::from_str::<Message>(json_str) {
        Ok(message) => out.push_str(&text::search_text(&message)),
        Err(_) => out.push_str(json_str),
    }
}

/// The shape nearly every message has. Each field accepts only what [`Message`] reads the same
/// way; whatever else it refuses is read by the whole reading instead.
#[derive(Deserialize)]
struct Plain<'a> {
    #[allow(dead_code)] // read to refuse what `Message` refuses: a missing or unknown role
    role: Role,
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<MapOnly<PlainCall<'a>>>>,
    #[allow(dead_code)]
    #[serde(borrow, default)]
    tool_call_id: Option<Cow<'a, str>>,
    #[allow(dead_code)]
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

/// `T` read only from a JSON object. A derived struct also accepts an array of its fields in
/// order, which [`Message`] and its tool calls refuse.
struct MapOnly<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for MapOnly<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Object<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Object<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        deserializer.deserialize_map(Object(PhantomData)).map(MapOnly)
    }
}

#[derive(Deserialize)]
struct PlainCall<'a> {
    #[allow(dead_code)]
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[allow(dead_code)]
    #[serde(borrow, rename = "type", default)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    function: PlainFunction<'a>,
}

#[derive(Deserialize)]
struct PlainFunction<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    arguments: Cow<'a, str>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_engine_abi::{Content, ToolCall};
    use pretty_assertions::assert_eq;

    /// What the search saw before: the whole message parsed, or the raw JSON.
    fn whole_reading(json: &str) -> String {
        serde_json::from_str::<Message>(json).map_or_else(|_| json.to_owned(), |m| text::search_text(&m))
    }

    #[test]
    fn the_text_is_what_the_whole_reading_gives_for_every_shape() {
        let mut parts = Message::user("");
        parts.content = Content::Parts(vec![
            serde_json::json!({"type": "text", "text": "look"}),
            serde_json::json!({"type": "text", "text": "here"}),
        ]);
        let mut calls = Message::assistant("running it");
        calls.tool_calls = Some(vec![
            ToolCall::new("c1", "terminal", r#"{"command":"ls \"x\""}"#),
            ToolCall::new("c2", "read_file", "{}"),
        ]);
        let mut typed: Vec<String> = [
            Message::system("You are terse."),
            Message::user("tab\there, newline\nthere, emoji 🦀, escape \\u0041 \"q\""),
            Message::tool("c1", "exit 1\nerror[E0308]"),
            Message::assistant_calls(vec![ToolCall::new("c3", "f", "{}")]),
            calls,
            parts,
        ]
        .iter()
        .map(|m| serde_json::to_string(m).unwrap())
        .collect();
        typed.extend(
            [
                // As another program may write them.
                r#"{"role":"assistant","content":"\u0041\u00e9","tool_calls":[{"index":0,"id":"c9","function":{"arguments":{"a":[1,2]},"name":"f"}}]}"#,
                r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c9","type":"function","function":{"name":"f","arguments":null}}]}"#,
                r#"{"role":"user","content":"first","content":"second"}"#,
                r#"{"role":"user","zeta":{"deep":[1,{"x":"y"}]},"content":"after an unknown key"}"#,
                r#"{"tool_call_id":"c1","role":"tool","content":"ok"}"#,
                r#"{"role":"user"}"#,
                // Not a message: the search sees the raw JSON.
                r#"{"content":"no role"}"#,
                r#"{"role":"wizard","content":"x"}"#,
                r#"{"role":"user","content":42}"#,
                r#"{"role":"user","content":"x","name":7}"#,
                r#"{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}"#,
                r#"{"role":"assistant","tool_calls":[{"id":"c","type":null,"function":{"name":"f","arguments":"{}"}}]}"#,
                r#"[1]"#,
                r#"["user","as an array"]"#,
                r#"{"role":"assistant","tool_calls":[["c1","function",{"name":"f","arguments":"{}"}]]}"#,
                r#"{"role":"user","content":"cut"#,
            ]
            .map(str::to_owned),
        );
        typed.extend(
            crate::synthetic::conversation(3, 300, 2_600)
                .iter()
                .map(|m| serde_json::to_string(m).unwrap()),
        );
        let mut out = String::from("left over from the previous row");
        for json in typed {
            search_text_into(json.as_bytes(), &mut out);
            assert_eq!(out, whole_reading(&json), "{json}");
        }
    }

    #[test]
    fn bytes_that_are_not_text_are_searched_as_shown() {
        let mut out = String::new();
        search_text_into(b"{\"role\":\"user\",\"content\":\"a\xffb\"}", &mut out);
        assert_eq!(out, "{\"role\":\"user\",\"content\":\"a\u{fffd}b\"}");
    }
}
