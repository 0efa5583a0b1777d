//! An OpenHands event as read: its fields, with `tool_call_metadata` apart, and that metadata's
//! `model_response` kept as unparsed text until a message is made of it; of `llm_metrics`, only
//! the window.
//!
//! Every action of a model response carries the whole response again (its message, every tool
//! call and their arguments, the usage), and only the first action of each makes a message.
//! Parsing each copy into maps was half the reading time of a tool-heavy trajectory; skipping
//! over the text costs a scan. `llm_metrics` is the session's metrics so far, repeated on every
//! action with lists that grow by one entry a model call (costs, latencies, token usages): kept,
//! it would make the file's size, squared, the size of the messages.

use std::fmt;

use serde::{
    de::{self, IgnoredAny, MapAccess, Visitor},
    Deserialize, Deserializer,
};
use serde_json::{value::RawValue, Map, Value};

/// One event of the stream.
pub(super) struct Event {
    /// Every field but `tool_call_metadata` and `llm_metrics`, in the file's order.
    pub fields: Map<String, Value>,
    pub metadata: Metadata,
    /// The `context_window` of the last of `llm_metrics.token_usages`, when it is a number above 0.
    pub context_window: Option<u64>,
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
    /// `choices[0].message`: `Ok(None)` when the response has no `choices` (or `null`), an error
    /// saying what is there instead when it has some but no message object first.
    pub fn message(&self) -> Result<Option<ChoiceMessage>, String> {
        #[derive(Deserialize)]
        struct Choice {
            #[serde(default)]
            message: Option<ChoiceMessage>,
        }
        let Some(choices) = self.choices.as_ref().map(|raw| raw.get().trim()) else {
            return Ok(None);
        };
        if choices == "null" {
            return Ok(None);
        }
        let unreadable = |what: &str| {
            Err(format!(
                "`model_response.choices` {what}, so the calls of this action's response cannot be read"
            ))
        };
        let Ok(choices) = serde_json::from_str::<Vec<Box<RawValue>>>(choices) else {
            return unreadable("is not a list");
        };
        let Some(first) = choices.first().map(|raw| raw.get()) else {
            return unreadable("is empty");
        };
        // Lists would read as structs too: only objects are a choice and its message.
        if !first.trim_start().starts_with('{') {
            return unreadable("does not start with a choice object");
        }
        match serde_json::from_str::<Choice>(first) {
            Ok(Choice {
                message: Some(message),
            }) => Ok(Some(message)),
            Ok(Choice { message: None }) | Err(_) => unreadable("holds no `message` object first"),
        }
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
                let mut context_window = None;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "tool_call_metadata" => metadata = map.next_value()?,
                        "llm_metrics" => context_window = map.next_value::<LlmMetrics>()?.context_window,
                        _ => {
                            let value = map.next_value()?;
                            fields.insert(key, value);
                        }
                    }
                }
                Ok(Event {
                    fields,
                    metadata,
                    context_window,
                })
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

/// What is read of `llm_metrics`: the window of its last token usage. Anything else there, of any
/// shape, is skipped.
#[derive(Default)]
struct LlmMetrics {
    context_window: Option<u64>,
}

/// The `context_window` of the last entry of `token_usages`.
#[derive(Default)]
struct TokenUsages(Option<u64>);

/// A token usage's `context_window`, when it is a number above 0.
#[derive(Default)]
struct Usage(Option<u64>);

/// The visitor methods of a value read leniently: a value of a shape not expected is skipped
/// and reads as the default.
macro_rules! skip_other_shapes {
    ($value:ty) => {
        fn visit_unit<E: de::Error>(self) -> Result<$value, E> {
            Ok(Default::default())
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<$value, E> {
            Ok(Default::default())
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<$value, E> {
            Ok(Default::default())
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<$value, E> {
            Ok(Default::default())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<$value, E> {
            Ok(Default::default())
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<$value, E> {
            Ok(Default::default())
        }
    };
}

/// Skips a list's elements.
fn skip_elements<'de, A: de::SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Skips a map's entries.
fn skip_entries<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Skips a map's entries but the one named `wanted`, which is read as a `T`.
fn read_entry<'de, A: MapAccess<'de>, T: Deserialize<'de> + Default>(
    mut map: A,
    wanted: &str,
) -> Result<T, A::Error> {
    let mut found = T::default();
    while let Some(key) = map.next_key::<String>()? {
        if key == wanted {
            found = map.next_value()?;
        } else {
            map.next_value::<IgnoredAny>()?;
        }
    }
    Ok(found)
}

impl<'de> Deserialize<'de> for LlmMetrics {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MetricsVisitor;
        impl<'de> Visitor<'de> for MetricsVisitor {
            type Value = LlmMetrics;
            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("`llm_metrics`")
            }
            skip_other_shapes!(LlmMetrics);
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<LlmMetrics, A::Error> {
                skip_elements(seq).map(|()| LlmMetrics::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<LlmMetrics, A::Error> {
                let TokenUsages(context_window) = read_entry(map, "token_usages")?;
                Ok(LlmMetrics { context_window })
            }
        }
        deserializer.deserialize_any(MetricsVisitor)
    }
}

impl<'de> Deserialize<'de> for TokenUsages {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct UsagesVisitor;
        impl<'de> Visitor<'de> for UsagesVisitor {
            type Value = TokenUsages;
            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("`token_usages`")
            }
            skip_other_shapes!(TokenUsages);
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<TokenUsages, A::Error> {
                skip_entries(map).map(|()| TokenUsages(None))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<TokenUsages, A::Error> {
                let mut last = Usage(None);
                while let Some(usage) = seq.next_element::<Usage>()? {
                    last = usage;
                }
                Ok(TokenUsages(last.0))
            }
        }
        deserializer.deserialize_any(UsagesVisitor)
    }
}

impl<'de> Deserialize<'de> for Usage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct UsageVisitor;
        impl<'de> Visitor<'de> for UsageVisitor {
            type Value = Usage;
            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a token usage")
            }
            skip_other_shapes!(Usage);
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Usage, A::Error> {
                skip_elements(seq).map(|()| Usage(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Usage, A::Error> {
                let window: Option<Value> = read_entry(map, "context_window")?;
                Ok(Usage(
                    window
                        .as_ref()
                        .and_then(Value::as_u64)
                        .filter(|window| *window > 0),
                ))
            }
        }
        deserializer.deserialize_any(UsageVisitor)
    }
}
