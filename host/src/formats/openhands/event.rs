//! An OpenHands event as read: its fields, with `tool_call_metadata` apart, and that metadata's
//! `model_response` kept as unparsed text until a message is made of it.
//!
//! Every action of a model response carries the whole response again (its message, every tool
//! call and their arguments, the usage), and only the first action of each makes a message.
//! Parsing each copy into maps was half the reading time of a tool-heavy trajectory; skipping
//! over the text costs a scan.

use std::fmt;

use serde::{
    de::{self, IgnoredAny, MapAccess, Visitor},
    Deserialize, Deserializer,
};
use serde_json::{value::RawValue, Map, Value};

/// One event of the stream.
pub(super) struct Event {
    /// Every field but `tool_call_metadata`, in the file's order.
    pub fields: Map<String, Value>,
    pub metadata: Metadata,
}

/// An event's `tool_call_metadata`.
pub(super) enum Metadata {
    /// None, or `null`.
    Absent,
    /// What ties the event to a tool call.
    Call(CallMetadata),
    /// Something other than an object: the kind it is, for the error.
    NotAnObject(&'static str),
}

/// The fields of `tool_call_metadata` the mapping reads (the others are dropped with it).
#[derive(Default)]
pub(super) struct CallMetadata {
    pub tool_call_id: Option<Value>,
    pub function_name: Option<Value>,
    /// The response that made the call, unparsed; `None` when absent or `null`.
    pub model_response: Option<Box<RawValue>>,
}

impl CallMetadata {
    /// The response, when it is an object; its choices are parsed only when asked for.
    pub fn response(&self) -> Option<Response> {
        let raw = self.model_response.as_ref()?.get();
        // A list would read as a struct too: only an object is a response.
        if !raw.trim_start().starts_with('{') {
            return None;
        }
        serde_json::from_str(raw).ok()
    }
}

/// The parts of a model response (LiteLLM's) a message is made of.
#[derive(Deserialize)]
pub(super) struct Response {
    #[serde(default)]
    pub id: Option<Value>,
    #[serde(default)]
    pub model: Option<Value>,
    #[serde(default)]
    pub usage: Option<Value>,
    /// Unparsed: the response's other actions need only its id.
    #[serde(default)]
    choices: Option<Box<RawValue>>,
}

impl Response {
    /// `choices[0].message`, when it is an object.
    pub fn message(&self) -> Option<ChoiceMessage> {
        #[derive(Deserialize)]
        struct Choice {
            #[serde(default)]
            message: Option<ChoiceMessage>,
        }
        let choices: Vec<Box<RawValue>> = serde_json::from_str(self.choices.as_ref()?.get()).ok()?;
        let first = choices.first()?.get();
        // Lists would read as structs too: only objects are a choice and its message.
        if !first.trim_start().starts_with('{') {
            return None;
        }
        // A message that is not an object fails the parse: no message.
        serde_json::from_str::<Choice>(first).ok()?.message
    }
}

/// The assistant message of a response's choice, the parts a message is made of.
pub(super) struct ChoiceMessage {
    pub content: Option<Value>,
    pub reasoning_content: Option<Value>,
    pub reasoning: Option<Value>,
    /// Unparsed: each call is read as a call, and parsed as JSON only when it is not one.
    tool_calls: Option<Box<RawValue>>,
}

impl ChoiceMessage {
    /// The calls of its `tool_calls`, unparsed; none when that is not a list.
    pub fn tool_calls(&self) -> Vec<Box<RawValue>> {
        self.tool_calls
            .as_ref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or_default()
    }
}

impl<'de> Deserialize<'de> for ChoiceMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MessageVisitor;
        impl<'de> Visitor<'de> for MessageVisitor {
            type Value = ChoiceMessage;
            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a choice's message")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ChoiceMessage, A::Error> {
                let mut message = ChoiceMessage {
                    content: None,
                    reasoning_content: None,
                    reasoning: None,
                    tool_calls: None,
                };
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "content" => message.content = map.next_value()?,
                        "reasoning_content" => message.reasoning_content = map.next_value()?,
                        "reasoning" => message.reasoning = map.next_value()?,
                        "tool_calls" => message.tool_calls = Some(map.next_value()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(message)
            }
        }
        deserializer.deserialize_map(MessageVisitor)
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EventVisitor;
        impl<'de> Visitor<'de> for EventVisitor {
            type Value = Event;
            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("an OpenHands event, a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Event, A::Error> {
                let mut fields = Map::new();
                let mut metadata = Metadata::Absent;
                while let Some(key) = map.next_key::<String>()? {
                    if key == "tool_call_metadata" {
                        metadata = map.next_value()?;
                    } else {
                        let value = map.next_value()?;
                        fields.insert(key, value);
                    }
                }
                Ok(Event { fields, metadata })
            }
        }
        deserializer.deserialize_map(EventVisitor)
    }
}

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MetadataVisitor;
        impl<'de> Visitor<'de> for MetadataVisitor {
            type Value = Metadata;
            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("`tool_call_metadata`")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Metadata, E> {
                Ok(Metadata::Absent)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Metadata, E> {
                Ok(Metadata::NotAnObject("a boolean"))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Metadata, E> {
                Ok(Metadata::NotAnObject("a number"))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Metadata, E> {
                Ok(Metadata::NotAnObject("a number"))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Metadata, E> {
                Ok(Metadata::NotAnObject("a number"))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Metadata, E> {
                Ok(Metadata::NotAnObject("text"))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Metadata, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Metadata::NotAnObject("a list"))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Metadata, A::Error> {
                let mut call = CallMetadata::default();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        // A `null` stays a value: it is an error where an id is needed.
                        "tool_call_id" => call.tool_call_id = Some(map.next_value()?),
                        "function_name" => call.function_name = Some(map.next_value()?),
                        "model_response" => {
                            let raw: Box<RawValue> = map.next_value()?;
                            call.model_response = (raw.get() != "null").then_some(raw);
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Metadata::Call(call))
            }
        }
        deserializer.deserialize_any(MetadataVisitor)
    }
}
