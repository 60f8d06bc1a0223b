//! A generic YAML tree in which every node knows its line and column, parsed with serde-saphyr.
//!
//! Task files are validated on this tree rather than deserialized straight into `Task`, so that
//! every problem can be reported (not only the first) and each one points at its key or value.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::{DuplicateKeyPolicy, MessageFormatter, Spanned, UserMessageFormatter};

/// One YAML node and where it starts (1-based line and column, in characters).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub value: Value,
    pub line: usize,
    pub column: usize,
}

/// The value of a node, with YAML 1.2 core-schema scalars already resolved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Entries in file order; duplicate keys are kept so that the validator can report them.
    Map(Vec<(Node, Node)>),
}

impl Value {
    /// The kind of value, for messages: "got a string".
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) | Value::UInt(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    /// Whether this is a scalar other than a string (a value that quoting would make a string).
    pub fn is_plain_scalar(&self) -> bool {
        matches!(
            self,
            Value::Bool(_) | Value::Int(_) | Value::UInt(_) | Value::Float(_)
        )
    }
}

/// A YAML error: where, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// How deeply lists and mappings may nest in a task file.
const MAX_DEPTH: usize = 24;

/// Parses one YAML document. An empty document (or only comments) is `Value::Null`.
pub(crate) fn parse(text: &str) -> Result<Node, SyntaxError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // Only `true`/`false` are booleans (`n: 1` must not be read as `false: 1`), and duplicate keys
    // reach the validator, which reports them with the task's other problems.
    // The depth limit keeps the recursive descent well inside a 2 MiB thread stack even in debug
    // builds (about 30 KiB a level there); tasks need 8 levels, and `exact` values a few more.
    let options = serde_saphyr::options! {
        strict_booleans: true,
        duplicate_keys: DuplicateKeyPolicy::PassThrough,
        budget: serde_saphyr::budget! { max_depth: MAX_DEPTH },
    };
    serde_saphyr::from_str_with_options::<Node>(text, options).map_err(|err| {
        let err = err.without_snippet();
        let (line, column) = err
            .location()
            .map_or((1, 1), |loc| (loc.line() as usize, loc.column() as usize));
        let message = match err {
            serde_saphyr::Error::MultipleDocuments { .. } => {
                "more than one YAML document in a task file; put several tasks in a list instead"
                    .to_owned()
            }
            serde_saphyr::Error::Budget {
                breach: BudgetBreach::Depth { .. },
                ..
            } => format!("invalid YAML: nested more than {MAX_DEPTH} levels deep"),
            _ => format!("invalid YAML: {}", UserMessageFormatter.format_message(err)),
        };
        SyntaxError {
            line: line.max(1),
            column: column.max(1),
            message,
        }
    })
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<Value>::deserialize(deserializer)?;
        Ok(Node {
            value: spanned.value,
            line: spanned.referenced.line() as usize,
            column: spanned.referenced.column() as usize,
        })
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::UInt(v))
    }

    fn visit_i128<E>(self, v: i128) -> Result<Value, E> {
        Ok(i64::try_from(v).map_or(Value::Float(v as f64), Value::Int))
    }

    fn visit_u128<E>(self, v: u128) -> Result<Value, E> {
        Ok(u64::try_from(v).map_or(Value::Float(v as f64), Value::UInt))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(v.to_owned()))
    }

    fn visit_bytes<E>(self, v: &[u8]) -> Result<Value, E> {
        Ok(Value::Str(String::from_utf8_lossy(v).into_owned()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Value::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Node>()? {
            let value = map.next_value::<Node>()?;
            entries.push((key, value));
        }
        Ok(Value::Map(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(node: &Node) -> &[(Node, Node)] {
        match &node.value {
            Value::Map(entries) => entries,
            other => panic!("not a mapping: {other:?}"),
        }
    }

    #[test]
    fn nodes_carry_positions_of_keys_and_values() {
        let root = parse("id: a\nexpect:\n  calls:\n    - tool: t\n").unwrap();
        let entries = map(&root);
        assert_eq!((entries[0].0.line, entries[0].0.column), (1, 1));
        assert_eq!((entries[0].1.line, entries[0].1.column), (1, 5));
        let calls = &map(&entries[1].1)[0];
        assert_eq!((calls.0.line, calls.0.column), (3, 3));
        let Value::Seq(items) = &calls.1.value else {
            panic!("calls is not a list")
        };
        let tool = &map(&items[0])[0];
        assert_eq!((tool.1.line, tool.1.column), (4, 13));
    }

    #[test]
    fn scalars_follow_the_core_schema() {
        let root = parse("n: yes\nq: \"3\"\ni: 3\nf: 3.5\nb: true\nz: ~\n").unwrap();
        let values: Vec<_> = map(&root)
            .iter()
            .map(|(k, v)| (&k.value, &v.value))
            .collect();
        assert_eq!(
            values[0],
            (&Value::Str("n".into()), &Value::Str("yes".into()))
        );
        assert_eq!(values[1].1, &Value::Str("3".into()));
        assert_eq!(values[2].1, &Value::UInt(3));
        assert_eq!(values[3].1, &Value::Float(3.5));
        assert_eq!(values[4].1, &Value::Bool(true));
        assert_eq!(values[5].1, &Value::Null);
    }

    #[test]
    fn duplicate_keys_are_kept_for_the_validator() {
        let root = parse("id: a\nid: b\n").unwrap();
        assert_eq!(map(&root).len(), 2);
    }

    #[test]
    fn empty_and_comment_only_documents_are_null() {
        assert_eq!(parse("").unwrap().value, Value::Null);
        assert_eq!(parse("# nothing\n").unwrap().value, Value::Null);
    }

    #[test]
    fn syntax_errors_have_a_position_and_a_message() {
        let err = parse("id: [a\n").unwrap_err();
        assert_eq!((err.line, err.column), (1, 5));
        assert!(err.message.starts_with("invalid YAML: "), "{}", err.message);
        let err = parse("a: 1\n---\nb: 2\n").unwrap_err();
        assert!(err.message.contains("more than one YAML document"));
    }
}
