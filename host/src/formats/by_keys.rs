//! Reading a JSON object into a struct by the keys it names, as a map would read it (a repeated
//! key's last value kept, every other key read past) without building the map: the readers'
//! typed records for what they use of lines they mostly skip.

use std::{fmt, marker::PhantomData};

use serde::{
    de::{self, value::MapAccessDeserializer, IgnoredAny, MapAccess, SeqAccess, Visitor},
    Deserialize, Deserializer,
};

/// Implements `Deserialize` for a struct with `Default` from a JSON object: each named key into
/// its field, read as the field's type; a repeated key's last value kept; every other key read
/// past. `expecting` names what a value that is no object should have been.
macro_rules! deserialize_by_keys {
    ($name:ident, $expecting:literal, { $($key:literal => $field:ident),* $(,)? }) => {
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct KeysVisitor;

                impl<'de> serde::de::Visitor<'de> for KeysVisitor {
                    type Value = $name;

                    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                        formatter.write_str($expecting)
                    }

                    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        let mut value = <$name as Default>::default();
                        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                            match key.as_ref() {
                                $($key => value.$field = map.next_value()?,)*
                                _ => {
                                    map.next_value::<serde::de::IgnoredAny>()?;
                                }
                            }
                        }
                        Ok(value)
                    }
                }

                deserializer.deserialize_map(KeysVisitor)
            }
        }
    };
}
pub(super) use deserialize_by_keys;

/// `T` when the value is an object; nothing, the value read past, when it is anything else (a
/// Codex token count's `info: null`).
pub(super) struct IfObject<T>(pub Option<T>);

impl<T> Default for IfObject<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for IfObject<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IfObjectVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for IfObjectVisitor<T> {
            type Value = IfObject<T>;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("any value")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(|value| IfObject(Some(value)))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(IfObject(None))
            }

            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(IfObject(None))
            }

            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(IfObject(None))
            }

            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(IfObject(None))
            }

            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(IfObject(None))
            }

            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(IfObject(None))
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(IfObject(None))
            }
        }

        deserializer.deserialize_any(IfObjectVisitor(PhantomData))
    }
}
