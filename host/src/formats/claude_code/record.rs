//! A Claude Code record as the reader needs it, read by visitors rather than into a `Value` tree.
//!
//! Read into a `Map<String, Value>`, every record, its `message` and each content block was a map
//! grown by doubling and hashed key by key, only for the reader to take most keys out again. Here
//! the keys the reader takes out (`type`, `message`, `role`, `content`) go straight to fields of
//! their own, and the others are gathered in their order into a [`Fields`], which becomes a map
//! only where one is kept (a message's `extra`, a content part), sized once.
//!
//! What a record may hold is not checked here: every value is read whole, as a `Value` would read
//! it, so that malformed JSON gives serde_json's error at the same line and column, and a record
//! of the wrong shape reaches the reader, whose errors name what is wrong.

use std::{borrow::Cow, fmt};

use serde::de::{
    value::{MapAccessDeserializer, SeqAccessDeserializer},
    Deserialize, Deserializer, Error, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::{Map, Value};

/// A JSON object's keys and values in the order they came, duplicates included. Read as a map,
/// a key has its last value at the place of its first occurrence, as serde_json's `Map` keeps it.
#[derive(Debug, Default)]
pub(super) struct Fields(Vec<(String, Value)>);

impl Fields {
    /// The value of `key`: its last one, as a map would hold it.
    pub(super) fn get(&self, key: &str) -> Option<&Value> {
        self.0
            .iter()
            .rev()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value)
    }

    /// Takes `key` out, every occurrence of it, and gives its last value.
    pub(super) fn take(&mut self, key: &str) -> Option<Value> {
        let mut taken = None;
        self.0.retain_mut(|(name, value)| {
            let found = name == key;
            if found {
                taken = Some(std::mem::take(value));
            }
            !found
        });
        taken
    }

    /// How many keys the map of these fields holds at most (fewer when one is written twice).
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Inserts the fields into `map`: a key already there keeps its place and takes the new value.
    pub(super) fn insert_into(self, map: &mut Map<String, Value>) {
        for (key, value) in self.0 {
            map.insert(key, value);
        }
    }

    /// The fields as a map, with room for `more` keys besides: sized once, since a message keeps
    /// its `extra` to the end (a map grown by doubling keeps up to half of it empty).
    pub(super) fn into_map(self, more: usize) -> Map<String, Value> {
        let mut map = Map::with_capacity(self.len() + more);
        self.insert_into(&mut map);
        map
    }

    /// Reads the rest of an object, giving `special` the first say on each key: it reads the value
    /// of a key it takes and says so, and the value of any other key is kept here.
    fn read<'de, A: MapAccess<'de>>(
        &mut self,
        mut map: A,
        mut special: impl FnMut(&str, &mut A) -> Result<bool, A::Error>,
    ) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if !special(&key, &mut map)? {
                let Exact(value) = map.next_value()?;
                self.0.push((key.into_owned(), value));
            }
        }
        Ok(())
    }
}

/// One line of the session log.
#[derive(Debug, Default)]
pub(super) struct Record {
    /// `type`, when it is text.
    pub kind: Option<String>,
    /// `message`, when it is an object.
    pub message: Option<ApiMessage>,
    /// The other keys.
    pub fields: Fields,
}

/// A record's `message`: an Anthropic API message.
#[derive(Debug, Default)]
pub(super) struct ApiMessage {
    /// `content`, when present.
    pub content: Option<Body>,
    /// The keys besides `role` and `content`.
    pub fields: Fields,
}

/// A message's `content`.
#[derive(Debug)]
pub(super) enum Body {
    Text(String),
    Blocks(Vec<Block>),
    /// Neither text nor a list (`null` included).
    Other(Value),
}

/// One element of a content list.
#[derive(Debug)]
pub(super) enum Block {
    Object(Fields),
    NotObject,
}

impl Block {
    /// The block's keys, when it is an object.
    pub(super) fn fields(&self) -> Option<&Fields> {
        match self {
            Block::Object(fields) => Some(fields),
            Block::NotObject => None,
        }
    }

    /// A text block, as an assistant message written as plain text stands for one.
    pub(super) fn text(text: String) -> Block {
        Block::Object(Fields(vec![
            ("type".to_owned(), Value::from("text")),
            ("text".to_owned(), Value::String(text)),
        ]))
    }
}

impl<'de> Deserialize<'de> for Record {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(RecordVisitor)
    }
}

struct RecordVisitor;

impl<'de> Visitor<'de> for RecordVisitor {
    type Value = Record;

    // What serde_json's `Map` says, so that a line that is not an object reads as before.
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Record, A::Error> {
        let mut record = Record::default();
        let (kind, message) = (&mut record.kind, &mut record.message);
        record.fields.read(map, |key, map| {
            match key {
                "type" => {
                    *kind = match map.next_value()? {
                        Value::String(kind) => Some(kind),
                        _ => None,
                    }
                }
                "message" => *message = map.next_value::<MaybeMessage>()?.0,
                // Claude Code's copy of a tool's output for its own interface (a Bash command's
                // stdout again, an edited file's whole original): the model never saw it, and
                // kept, it doubled every tool result the replay holds, copies and hands engines.
                "toolUseResult" => drop(map.next_value::<IgnoredAny>()?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(record)
    }
}

/// `message`, read whatever it holds: only an object is kept.
struct MaybeMessage(Option<ApiMessage>);

impl<'de> Deserialize<'de> for MaybeMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let message = match deserializer.deserialize_any(AnyValue(ApiMessageShape))? {
            Read::Wanted(message) => Some(message),
            Read::Other(_) => None,
        };
        Ok(MaybeMessage(message))
    }
}

struct ApiMessageShape;

impl<'de> Shape<'de> for ApiMessageShape {
    type Value = ApiMessage;

    fn object<A: MapAccess<'de>>(self, map: A) -> Result<Read<ApiMessage>, A::Error> {
        let mut message = ApiMessage::default();
        let content = &mut message.content;
        message.fields.read(map, |key, map| {
            match key {
                // The role is the record's `type`: read, and left out.
                "role" => drop(map.next_value::<Value>()?),
                "content" => *content = Some(map.next_value()?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(Read::Wanted(message))
    }
}

impl<'de> Deserialize<'de> for Body {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match deserializer.deserialize_any(AnyValue(BodyShape))? {
            Read::Wanted(body) => body,
            Read::Other(other) => Body::Other(other),
        })
    }
}

struct BodyShape;

impl<'de> Shape<'de> for BodyShape {
    type Value = Body;

    fn text(self, text: String) -> Read<Body> {
        Read::Wanted(Body::Text(text))
    }

    fn list<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Read<Body>, A::Error> {
        let mut blocks = Vec::new();
        while let Some(block) = seq.next_element()? {
            blocks.push(block);
        }
        Ok(Read::Wanted(Body::Blocks(blocks)))
    }
}

impl<'de> Deserialize<'de> for Block {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match deserializer.deserialize_any(AnyValue(BlockShape))? {
            Read::Wanted(fields) => Block::Object(fields),
            Read::Other(_) => Block::NotObject,
        })
    }
}

struct BlockShape;

impl<'de> Shape<'de> for BlockShape {
    type Value = Fields;

    fn object<A: MapAccess<'de>>(self, map: A) -> Result<Read<Fields>, A::Error> {
        let mut fields = Fields::default();
        fields.read(map, |_, _| Ok(false))?;
        Ok(Read::Wanted(fields))
    }
}

/// A value kept as it is (a record's `cwd`, the API message's `usage`…), read as a
/// `Value` whose objects are sized to their keys, like the maps of [`Fields::into_map`].
struct Exact(Value);

impl<'de> Deserialize<'de> for Exact {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match deserializer.deserialize_any(AnyValue(ExactShape))? {
            Read::Wanted(value) | Read::Other(value) => Exact(value),
        })
    }
}

struct ExactShape;

impl<'de> Shape<'de> for ExactShape {
    type Value = Value;

    fn list<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Read<Value>, A::Error> {
        let mut items = Vec::new();
        while let Some(Exact(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Read::Wanted(Value::Array(items)))
    }

    fn object<A: MapAccess<'de>>(self, map: A) -> Result<Read<Value>, A::Error> {
        let mut fields = Fields::default();
        fields.read(map, |_, _| Ok(false))?;
        Ok(Read::Wanted(Value::Object(fields.into_map(0))))
    }
}

/// What [`AnyValue`] read: the shape wanted, or any other value.
enum Read<T> {
    Wanted(T),
    Other(Value),
}

/// The shapes of a value one reads in a way of one's own (text, a list, an object); by default a
/// shape is read as a `Value`.
trait Shape<'de>: Sized {
    type Value;

    fn text(self, text: String) -> Read<Self::Value> {
        Read::Other(Value::String(text))
    }

    fn list<A: SeqAccess<'de>>(self, seq: A) -> Result<Read<Self::Value>, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq)).map(Read::Other)
    }

    fn object<A: MapAccess<'de>>(self, map: A) -> Result<Read<Self::Value>, A::Error> {
        Value::deserialize(MapAccessDeserializer::new(map)).map(Read::Other)
    }
}

/// Reads any JSON value, the shapes `S` wants its own way and the others as `Value` reads them
/// (with its errors: a number out of range, a string that is not UTF-8…).
struct AnyValue<S>(S);

impl<'de, S: Shape<'de>> Visitor<'de> for AnyValue<S> {
    type Value = Read<S::Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E: Error>(self, value: bool) -> Result<Self::Value, E> {
        Ok(Read::Other(Value::Bool(value)))
    }

    fn visit_i64<E: Error>(self, value: i64) -> Result<Self::Value, E> {
        Ok(Read::Other(Value::from(value)))
    }

    fn visit_u64<E: Error>(self, value: u64) -> Result<Self::Value, E> {
        Ok(Read::Other(Value::from(value)))
    }

    fn visit_f64<E: Error>(self, value: f64) -> Result<Self::Value, E> {
        // A finite float is a number, any other `null`, as `Value` reads it.
        Ok(Read::Other(Value::from(value)))
    }

    fn visit_str<E: Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(self.0.text(text.to_owned()))
    }

    fn visit_string<E: Error>(self, text: String) -> Result<Self::Value, E> {
        Ok(self.0.text(text))
    }

    fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
        Ok(Read::Other(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.list(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.object(map)
    }
}
