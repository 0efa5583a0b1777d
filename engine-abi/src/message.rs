//! OpenAI-format chat messages, the unit every engine works on.
//!
//! A [`Message`] knows the fields the contract gives meaning to and keeps every other key in
//! [`Message::extra`], in its order, so a message survives a round trip through an engine
//! untouched.

use std::{borrow::Cow, fmt};

use serde::{
    de::{self, MapAccess, Visitor},
    ser::SerializeMap,
    Deserialize, Deserializer, Serialize, Serializer,
};
use serde_json::{Map, Value};

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The person.
    User,
    /// The model.
    Assistant,
    /// The answer to a tool call.
    Tool,
}

impl Role {
    /// The role as written in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

const ROLES: &[&str] = &["system", "user", "assistant", "tool"];

// Read as text rather than derived: serde_json's derived enums answer "expected value" for a
// role written as a number or null, which reads as if the value were missing.
impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(RoleVisitor)
    }
}

struct RoleVisitor;

impl Visitor<'_> for RoleVisitor {
    type Value = Role;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a role: `system`, `user`, `assistant` or `tool`")
    }

    fn visit_str<E: de::Error>(self, role: &str) -> Result<Role, E> {
        match role {
            "system" => Ok(Role::System),
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "tool" => Ok(Role::Tool),
            other => Err(E::unknown_variant(other, ROLES)),
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A message's `content`: text, a list of content parts, or nothing.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Content {
    /// `null` or absent (an assistant message that only calls tools).
    #[default]
    Null,
    /// Plain text.
    Text(String),
    /// Content parts (`{"type": "text", "text": …}`, `{"type": "image_url", …}`, …), kept as JSON.
    Parts(Vec<Value>),
}

impl Content {
    /// The text the model reads: the string, or the `text` of every text part joined by newlines.
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            Content::Null => Cow::Borrowed(""),
            Content::Text(text) => Cow::Borrowed(text),
            Content::Parts(parts) => {
                let mut texts = parts.iter().filter_map(part_text);
                match (texts.next(), texts.next()) {
                    (None, _) => Cow::Borrowed(""),
                    (Some(only), None) => Cow::Borrowed(only),
                    (Some(first), Some(second)) => {
                        let mut joined = format!("{first}\n{second}");
                        for text in texts {
                            joined.push('\n');
                            joined.push_str(text);
                        }
                        Cow::Owned(joined)
                    }
                }
            }
        }
    }

    /// Whether there is no text and no part at all.
    pub fn is_empty(&self) -> bool {
        match self {
            Content::Null => true,
            Content::Text(text) => text.is_empty(),
            Content::Parts(parts) => parts.is_empty(),
        }
    }
}

// By hand rather than `#[serde(untagged)]`: untagged tries each variant in turn, and every failed
// try formats an error that quotes the whole text, which made parsing long tool outputs several
// times slower.
impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ContentVisitor)
    }
}

struct ContentVisitor;

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = Content;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, a list of content parts, or null")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Content, E> {
        Ok(Content::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Content, E> {
        Ok(Content::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Content, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Content, E> {
        Ok(Content::Text(text.to_owned()))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Content, E> {
        Ok(Content::Text(text))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
        let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(part) = seq.next_element()? {
            parts.push(part);
        }
        Ok(Content::Parts(parts))
    }
}

/// The `text` of a content part, when it is a text part.
pub fn part_text(part: &Value) -> Option<&str> {
    match part.get("type").and_then(Value::as_str) {
        Some("text") | Some("input_text") | Some("output_text") | None => {
            part.get("text").and_then(Value::as_str)
        }
        _ => None,
    }
}

/// Whether a content part is an image.
pub fn is_image_part(part: &Value) -> bool {
    matches!(
        part.get("type").and_then(Value::as_str),
        Some("image_url") | Some("image") | Some("input_image")
    )
}

/// One call an assistant message makes to a tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id its tool result answers.
    pub id: String,
    /// Always `"function"` in practice.
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    /// Which function, with which arguments.
    pub function: FunctionCall,
    /// Any other key, kept as it came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn function_kind() -> String {
    "function".to_owned()
}

impl ToolCall {
    /// A function call with `arguments` as JSON text.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            kind: function_kind(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.into(),
            },
            extra: Map::new(),
        }
    }
}

/// The function a tool call names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON text (an object given instead of text is kept as its JSON text).
    #[serde(deserialize_with = "arguments_as_text")]
    pub arguments: String,
}

fn arguments_as_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::String(text) => Ok(text),
        Value::Null => Ok(String::new()),
        other => Ok(other.to_string()),
    }
}

/// One OpenAI-format chat message.
#[derive(Clone, Debug)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// What it says.
    pub content: Content,
    /// The tools an assistant message calls (`None` when the key is absent).
    pub tool_calls: Option<Vec<ToolCall>>,
    /// For a tool message: the call it answers.
    pub tool_call_id: Option<String>,
    /// An optional author name (OpenAI's `name`).
    pub name: Option<String>,
    /// Every other key, in the order it came.
    pub extra: Map<String, Value>,
}

/// Equal when every field is, `extra`'s keys in any order, as JSON objects compare.
impl PartialEq for Message {
    fn eq(&self, other: &Self) -> bool {
        self.role == other.role
            && self.tool_call_id == other.tool_call_id
            && self.name == other.name
            && self.tool_calls == other.tool_calls
            && self.content == other.content
            && same_fields(&self.extra, &other.extra)
    }
}

/// Whether two objects hold the same keys and values. A copy keeps its keys' order, so they are
/// first compared in order: a map's own comparison hashes every key to find it in the other
/// (SipHash), which was most of what comparing a context of Claude Code messages cost.
fn same_fields(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.len() == b.len()
        && (a
            .iter()
            .zip(b.iter())
            .all(|((key_a, a), (key_b, b))| key_a == key_b && same_value(a, b))
            || a == b)
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => same_fields(a, b),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_value(a, b))
        }
        _ => a == b,
    }
}

impl Message {
    /// A message with `role` and text content.
    pub fn new(role: Role, text: impl Into<String>) -> Self {
        Self {
            role,
            content: Content::Text(text.into()),
            tool_calls: None,
            tool_call_id: None,
            name: None,
            extra: Map::new(),
        }
    }

    /// A system message.
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, text)
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, text)
    }

    /// An assistant message.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, text)
    }

    /// An assistant message that calls tools (content `null`).
    pub fn assistant_calls(calls: Vec<ToolCall>) -> Self {
        Self {
            content: Content::Null,
            tool_calls: Some(calls),
            ..Self::assistant("")
        }
    }

    /// A tool result answering `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(tool_call_id.into()),
            ..Self::new(Role::Tool, text)
        }
    }

    /// The text the model reads in this message's content.
    pub fn text(&self) -> Cow<'_, str> {
        self.content.text()
    }

    /// The tool calls, empty when there are none.
    pub fn calls(&self) -> &[ToolCall] {
        self.tool_calls.as_deref().unwrap_or_default()
    }

    /// Whether this is an assistant message with at least one tool call.
    pub fn has_tool_calls(&self) -> bool {
        !self.calls().is_empty()
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("role", &self.role)?;
        map.serialize_entry("content", &self.content)?;
        if let Some(calls) = &self.tool_calls {
            map.serialize_entry("tool_calls", calls)?;
        }
        if let Some(id) = &self.tool_call_id {
            map.serialize_entry("tool_call_id", id)?;
        }
        if let Some(name) = &self.name {
            map.serialize_entry("name", name)?;
        }
        for (key, value) in &self.extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MessageVisitor)
    }
}

struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = Message;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a chat message object with a `role`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
        let mut role = None;
        let mut content = Content::Null;
        let mut tool_calls = None;
        let mut tool_call_id = None;
        let mut name = None;
        let mut extra = Map::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "role" => role = Some(map.next_value::<Role>()?),
                "content" => content = map.next_value()?,
                "tool_calls" => tool_calls = map.next_value::<Option<Vec<ToolCall>>>()?,
                "tool_call_id" => tool_call_id = map.next_value()?,
                "name" => name = map.next_value()?,
                _ => {
                    extra.insert(key.into_owned(), map.next_value()?);
                }
            }
        }
        let role = role.ok_or_else(|| de::Error::missing_field("role"))?;
        Ok(Message {
            role,
            content,
            tool_calls,
            tool_call_id,
            name,
            extra,
        })
    }
}

/// Parses a JSON array of messages, as it crosses the boundary.
pub fn messages_from_json(json: &str) -> Result<Vec<Message>, serde_json::Error> {
    serde_json::from_str(json)
}

/// Writes messages as a JSON array, as they cross the boundary.
pub fn messages_to_json(messages: &[Message]) -> String {
    // Sized once from the texts: grown by doubling from empty, the buffer of a context passed
    // through each size in turn, and each size took fresh pages from the allocator (handing an
    // idle observer the final context took 8 more of them, 71 instead of 63 at the peak).
    let mut json = Vec::with_capacity(json_size_hint(messages));
    // Serialising these types cannot fail: every map key is a string.
    serde_json::to_writer(&mut json, messages).expect("messages always serialise");
    String::from_utf8(json).expect("serde_json writes UTF-8")
}

/// About the bytes of `messages` as JSON: their texts, a quarter more for escapes, and the keys.
fn json_size_hint(messages: &[Message]) -> usize {
    let text_bytes = |message: &Message| -> usize {
        let content = match &message.content {
            Content::Null => 0,
            Content::Text(text) => text.len(),
            // A part's text, or a guess for an image or another kind: a hint, not a measure.
            Content::Parts(parts) => parts
                .iter()
                .map(|part| part_text(part).map_or(256, |text| text.len() + 32))
                .sum(),
        };
        let calls: usize = message
            .calls()
            .iter()
            .map(|call| call.id.len() + call.function.name.len() + call.function.arguments.len() + 64)
            .sum();
        let ids = message.tool_call_id.as_ref().map_or(0, String::len)
            + message.name.as_ref().map_or(0, String::len);
        content + calls + ids + 64 * message.extra.len()
    };
    messages
        .iter()
        .map(|message| {
            let bytes = text_bytes(message);
            bytes + bytes / 4 + 64
        })
        .sum::<usize>()
        + 2
}

#[cfg(test)]
mod tests {

    #[test]
    fn messages_compare_their_extra_keys_in_any_order() {
        let message = |extra: Value| Message {
            extra: extra.as_object().unwrap().clone(),
            ..Message::user("hi")
        };
        let a = message(
            serde_json::json!({"uuid": "u1", "usage": {"in": 1, "out": 2}, "tags": [{"a": 1, "b": 2}]}),
        );
        let reordered = message(
            serde_json::json!({"tags": [{"b": 2, "a": 1}], "usage": {"out": 2, "in": 1}, "uuid": "u1"}),
        );
        assert_eq!(a, a.clone());
        assert_eq!(a, reordered);
        let other_value = message(
            serde_json::json!({"uuid": "u1", "usage": {"in": 1, "out": 3}, "tags": [{"a": 1, "b": 2}]}),
        );
        assert_ne!(a, other_value);
        let other_key = message(
            serde_json::json!({"uuid": "u1", "usage": {"in": 1, "out": 2}, "tag": [{"a": 1, "b": 2}]}),
        );
        assert_ne!(a, other_key);
        let fewer = message(serde_json::json!({"uuid": "u1", "usage": {"in": 1, "out": 2}}));
        assert_ne!(a, fewer);
        assert_ne!(
            a,
            Message {
                content: Content::Text("ho".into()),
                ..a.clone()
            }
        );
    }

    use super::*;

    #[test]
    fn a_context_is_written_as_json_in_the_buffer_first_sized_for_it() {
        let output = "line \"quoted\"\tand tabbed\n".repeat(200);
        let messages = vec![
            Message::system("You are terse."),
            Message::user("list the files"),
            Message::assistant_calls(vec![ToolCall::new("c1", "ls", r#"{"path":"."}"#)]),
            Message::tool("c1", output),
            Message::assistant("Done."),
        ];
        let json = messages_to_json(&messages);
        assert_eq!(json, serde_json::to_string(&messages).unwrap());
        assert!(
            json_size_hint(&messages) >= json.len(),
            "{} < {}",
            json_size_hint(&messages),
            json.len()
        );
    }

    #[test]
    fn unknown_keys_survive_a_round_trip_in_their_order() {
        let json = r#"{"role":"assistant","zeta":1,"content":null,"alpha":{"x":[1,2]},"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"},"index":0}]}"#;
        let message: Message = serde_json::from_str(json).unwrap();
        assert_eq!(message.extra.keys().collect::<Vec<_>>(), ["zeta", "alpha"]);
        let back = serde_json::to_string(&message).unwrap();
        assert_eq!(
            back,
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"},"index":0}],"zeta":1,"alpha":{"x":[1,2]}}"#
        );
    }

    #[test]
    fn text_joins_text_parts_and_skips_images() {
        let message: Message = serde_json::from_str(
            r#"{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"b"}]}"#,
        )
        .unwrap();
        assert_eq!(message.text(), "a\nb");
    }

    #[test]
    fn content_is_null_text_or_parts_and_nothing_else() {
        let parse = |json: &str| serde_json::from_str::<Message>(json).map(|m| m.content);
        assert_eq!(
            parse(r#"{"role":"assistant","content":null}"#).unwrap(),
            Content::Null
        );
        assert_eq!(parse(r#"{"role":"assistant"}"#).unwrap(), Content::Null);
        assert_eq!(
            parse(r#"{"role":"user","content":"hi"}"#).unwrap(),
            Content::Text("hi".into())
        );
        assert_eq!(
            parse(r#"{"role":"user","content":[{"type":"text","text":"a"}]}"#).unwrap(),
            Content::Parts(vec![serde_json::json!({"type":"text","text":"a"})])
        );
        let error = parse(r#"{"role":"user","content":42}"#).unwrap_err().to_string();
        assert!(
            error.contains("expected a string, a list of content parts, or null"),
            "{error}"
        );
    }

    #[test]
    fn a_message_without_a_role_is_refused() {
        let error = serde_json::from_str::<Message>(r#"{"content":"hi"}"#).unwrap_err();
        assert!(error.to_string().contains("missing field `role`"), "{error}");
    }

    #[test]
    fn a_role_that_is_not_text_says_what_it_got_and_what_a_role_is() {
        // serde_json's derived enums answer "expected value" for a number, which reads as if the
        // value were missing.
        for (json, got) in [
            (r#"{"role":17,"content":"hi"}"#, "integer `17`"),
            (r#"{"role":null,"content":"hi"}"#, "null"),
            (r#"{"role":["user"],"content":"hi"}"#, "sequence"),
        ] {
            let error = serde_json::from_str::<Message>(json).unwrap_err().to_string();
            assert!(
                error.starts_with(&format!(
                    "invalid type: {got}, expected a role: `system`, `user`, `assistant` or `tool`"
                )),
                "{json}: {error}"
            );
        }
        let error = serde_json::from_str::<Message>(r#"{"role":"wizard"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(
                "unknown variant `wizard`, expected one of `system`, `user`, `assistant`, `tool`"
            ),
            "{error}"
        );
    }

    #[test]
    fn object_arguments_are_kept_as_json_text() {
        let call: ToolCall =
            serde_json::from_str(r#"{"id":"c","function":{"name":"f","arguments":{"a":1}}}"#).unwrap();
        assert_eq!(call.function.arguments, r#"{"a":1}"#);
        assert_eq!(call.kind, "function");
    }
}
