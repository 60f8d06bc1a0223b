//! The shape of a config table, read from the serde types themselves: which keys a table has,
//! so that the checker's lists of known keys are the structs' own fields and cannot drift.
//!
//! [`shape_at`] asks a type to deserialize itself from a probe that follows a path of keys and,
//! at its end, records what the type asks for (a struct and its fields, a map, or a value). Every
//! probe ends in an error carrying that answer: nothing is built.

use std::fmt;

use serde::de::{self, value::StrDeserializer, DeserializeSeed, IntoDeserializer, MapAccess};
use serde::Deserialize;

/// What a type asks for at a place in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A struct: a table with these keys (as spelled in the file: renames applied).
    Table(&'static [&'static str]),
    /// A map from any key (`[servers.NAME]`, `env`).
    Map,
    /// A value that is no table of its own (a number, a list, an enum).
    Value,
    /// No such place: a key the type does not have.
    Absent,
}

/// The shape of `T` at `path` (keys from the file's root: `["host", "fast", "profile"]`).
pub(crate) fn shape_at<'a, T: Deserialize<'a>>(path: &[&str]) -> Shape {
    match T::deserialize(Probe { path }) {
        Err(Found(shape)) => shape,
        // A type that builds itself from nothing (`IgnoredAny`): nothing to check.
        Ok(_) => Shape::Value,
    }
}

/// The error every probe ends with: the shape it found.
#[derive(Debug)]
struct Found(Shape);

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl std::error::Error for Found {}

impl de::Error for Found {
    /// Any error of the type itself (an unknown key, above all) means the path is not its.
    fn custom<M: fmt::Display>(_: M) -> Self {
        Found(Shape::Absent)
    }
}

/// A deserializer that follows `path` and reports what the type asks for at its end.
struct Probe<'p> {
    path: &'p [&'p str],
}

impl<'p> Probe<'p> {
    /// A table (struct or map) at the end of the path, or its next key.
    fn table<'de, V: de::Visitor<'de>>(self, shape: Shape, visitor: V) -> Result<V::Value, Found> {
        match self.path.split_first() {
            None => Err(Found(shape)),
            Some((key, rest)) => visitor.visit_map(Step {
                key: Some(key),
                rest,
            }),
        }
    }

    /// A value: at the end of the path, or a path that goes on into something no table.
    fn value(self) -> Found {
        Found(if self.path.is_empty() {
            Shape::Value
        } else {
            Shape::Absent
        })
    }
}

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = Found;

    fn deserialize_any<V: de::Visitor<'de>>(self, _: V) -> Result<V::Value, Found> {
        Err(self.value())
    }

    fn deserialize_option<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Found> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: de::Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Found> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: de::Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Found> {
        self.table(Shape::Table(fields), visitor)
    }

    fn deserialize_map<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Found> {
        self.table(Shape::Map, visitor)
    }

    fn deserialize_ignored_any<V: de::Visitor<'de>>(self, _: V) -> Result<V::Value, Found> {
        Err(Found(Shape::Absent))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct enum identifier
    }
}

/// One step along the path: a table with the one key the path names next.
struct Step<'p> {
    key: Option<&'p str>,
    rest: &'p [&'p str],
}

impl<'de> MapAccess<'de> for Step<'_> {
    type Error = Found;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Found> {
        match self.key.take() {
            Some(key) => {
                let key: StrDeserializer<'_, Found> = key.into_deserializer();
                seed.deserialize(key).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Found> {
        seed.deserialize(Probe { path: self.rest })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConfigFile, ProfileFile, StatsFile};

    fn fields_of<'a, T: Deserialize<'a>>() -> &'static [&'static str] {
        match shape_at::<T>(&[]) {
            Shape::Table(fields) => fields,
            other => panic!("not a struct: {other:?}"),
        }
    }

    #[test]
    fn shapes_follow_the_serde_types() {
        let top = fields_of::<ConfigFile>();
        // Renamed fields are spelled as in the file.
        assert!(
            top.contains(&"host") && !top.contains(&"named_hosts"),
            "{top:?}"
        );
        assert_eq!(
            shape_at::<ConfigFile>(&["stats"]),
            Shape::Table(fields_of::<StatsFile>())
        );
        assert_eq!(shape_at::<ConfigFile>(&["servers"]), Shape::Map);
        assert_eq!(
            shape_at::<ConfigFile>(&["host", "any name", "profile"]),
            Shape::Table(fields_of::<ProfileFile>())
        );
        assert_eq!(shape_at::<ConfigFile>(&["servers", "x", "env"]), Shape::Map);
        assert_eq!(shape_at::<ConfigFile>(&["trials"]), Shape::Value);
        assert_eq!(shape_at::<ConfigFile>(&["hosts"]), Shape::Value);
        assert_eq!(shape_at::<ConfigFile>(&["trials", "x"]), Shape::Absent);
        assert_eq!(shape_at::<ConfigFile>(&["trails"]), Shape::Absent);
        assert_eq!(shape_at::<ConfigFile>(&["stats", "alpah"]), Shape::Absent);
    }
}
