//! Reading a [`Fact`] in one pass. A derived `Deserialize` with `#[serde(flatten)]` reads the
//! whole fact into serde's intermediate tree, then builds it from that: for a fact carrying
//! messages, every string was read and copied twice. Here the messages are read straight into
//! place; the few small fields of the other kinds go through a `Value`.

use std::fmt;

use serde::{
    de::{self, MapAccess, Visitor},
    Deserialize, Deserializer,
};
use serde_json::{Map, Value};

use super::{Fact, FactBody, FactKind};
use crate::Message;

impl<'de> Deserialize<'de> for Fact {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FactVisitor)
    }
}

struct FactVisitor;

impl<'de> Visitor<'de> for FactVisitor {
    type Value = Fact;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a fact: an object with `session_id`, `at_message` and `kind`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fact, A::Error> {
        let mut session_id: Option<String> = None;
        let mut at_message: Option<u64> = None;
        let mut kind: Option<FactKind> = None;
        let mut messages: Option<Vec<Message>> = None;
        let mut rest = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "session_id" => session_id = Some(map.next_value()?),
                "at_message" => at_message = Some(map.next_value()?),
                "kind" => kind = Some(map.next_value()?),
                "messages" => messages = Some(map.next_value()?),
                _ => {
                    rest.insert(key, map.next_value()?);
                }
            }
        }
        let session_id = session_id.ok_or_else(|| de::Error::missing_field("session_id"))?;
        let at_message = at_message.ok_or_else(|| de::Error::missing_field("at_message"))?;
        let kind = kind.ok_or_else(|| de::Error::missing_field("kind"))?;
        let body = match (kind, messages) {
            (FactKind::MessagesAppended, Some(messages)) => FactBody::MessagesAppended { messages },
            (FactKind::SessionEnded, Some(messages)) => FactBody::SessionEnded { messages },
            (kind, messages) => {
                // `messages` under another kind is an unknown key, ignored as the others are.
                drop(messages);
                rest.insert("kind".to_owned(), Value::String(kind.as_str().to_owned()));
                FactBody::deserialize(Value::Object(rest)).map_err(de::Error::custom)?
            }
        };
        Ok(Fact {
            session_id,
            at_message,
            body,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn every_kind() -> Vec<FactBody> {
        vec![
            FactBody::SessionStarted {
                engine: "compressor".into(),
                model: "m".into(),
                context_length: 8_000,
            },
            FactBody::SessionReset,
            FactBody::SessionEnded {
                messages: vec![Message::user("end \"quoted\"\nline")],
            },
            FactBody::MessagesAppended {
                messages: vec![Message::user("a"), Message::assistant("b")],
            },
            FactBody::Usage {
                prompt_tokens: 1,
                completion_tokens: 2,
                total_tokens: 3,
                recorded: true,
            },
            FactBody::ThresholdCrossed {
                tokens: 10,
                threshold: 8,
            },
            FactBody::Compacted {
                engine: "lcm".into(),
                tokens_before: 100,
                tokens_after: 40,
                messages_before: 9,
                messages_after: 3,
                inserted: vec![Message::user("[summary]")],
            },
            FactBody::ToolCalled {
                engine: "lcm".into(),
                tool: "lcm_grep".into(),
                arguments: json!({ "pattern": "x" }),
                answer: json!({ "matches": [] }),
            },
            FactBody::EngineSwapped {
                from: "compressor".into(),
                to: "masking".into(),
            },
        ]
    }

    #[test]
    fn every_kind_reads_back_as_it_was_written() {
        for body in every_kind() {
            let fact = Fact {
                session_id: "s".into(),
                at_message: 7,
                body,
            };
            let json = serde_json::to_string(&fact).unwrap();
            assert_eq!(serde_json::from_str::<Fact>(&json).unwrap(), fact, "{json}");
        }
    }

    #[test]
    fn keys_in_any_order_and_unknown_keys_are_taken() {
        let fact: Fact = serde_json::from_value(json!({
            "messages": [{ "role": "user", "content": "hi" }],
            "later": { "field": 1 },
            "at_message": 3,
            "kind": "messages_appended",
            "session_id": "s",
        }))
        .unwrap();
        assert_eq!(
            fact,
            Fact {
                session_id: "s".into(),
                at_message: 3,
                body: FactBody::MessagesAppended {
                    messages: vec![Message::user("hi")]
                },
            }
        );
        let fact: Fact = serde_json::from_value(json!({
            "session_id": "s", "at_message": 0, "kind": "session_reset", "messages": [],
        }))
        .unwrap();
        assert_eq!(fact.body, FactBody::SessionReset);
    }

    #[test]
    fn a_fact_missing_what_it_needs_says_what() {
        let error = serde_json::from_str::<Fact>(r#"{"session_id": "s", "at_message": 0}"#).unwrap_err();
        assert!(error.to_string().contains("missing field `kind`"), "{error}");
        let error = serde_json::from_str::<Fact>(
            r#"{"session_id": "s", "at_message": 0, "kind": "messages_appended"}"#,
        )
        .unwrap_err();
        assert!(error.to_string().contains("missing field `messages`"), "{error}");
        let error = serde_json::from_str::<Fact>(r#"{"session_id": "s", "at_message": 0, "kind": "nope"}"#)
            .unwrap_err();
        assert!(error.to_string().contains("unknown variant `nope`"), "{error}");
    }
}
