//! A tool whose baseline declared no input schema (none, `{}`, or only `$schema`) and whose
//! candidate declares one: one `input_schema_declared` change instead of a type narrowed and a
//! parameter added per property, all for one cause.

use serde_json::Value;

use super::model::{Change, ChangeKind};
use super::schema;

/// Keys that describe a schema without constraining any value.
const DESCRIBING: [&str; 6] = [
    "$schema",
    "$id",
    "$comment",
    "title",
    "description",
    "examples",
];

/// Whether a tool's `inputSchema` declares nothing a validator would use: absent, or an object
/// with only describing keys (`{}`, `{"$schema": …}`).
pub fn undeclared(input: Option<&Value>) -> bool {
    match input.map(schema::normalize) {
        None | Some(Value::Null) => true,
        Some(Value::Object(map)) => map.keys().all(|k| DESCRIBING.contains(&k.as_str())),
        Some(_) => false,
    }
}

/// The one change for a tool whose baseline declared no input schema and whose candidate
/// declares one; `None` otherwise. It breaks clients when the new schema requires a property
/// (a call that sent nothing now fails); it affects models, which now see the parameters.
pub fn first_declaration(
    name: &str,
    before: Option<&Value>,
    after: Option<&Value>,
) -> Option<Change> {
    if !undeclared(before) || undeclared(after) {
        return None;
    }
    let schema = schema::normalize(after?);
    let properties: Vec<&str> = (schema.get("properties").and_then(Value::as_object))
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let required: Vec<&str> = (schema.get("required").and_then(Value::as_array))
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let listed = |names: &[&str]| match names {
        [] => "none".to_owned(),
        names => names.join(", "),
    };
    let note = format!(
        "input schema declared for the first time: {} parameter(s) ({}), required: {}",
        properties.len(),
        listed(&properties),
        listed(&required)
    );
    let mut change = Change::new("tools", name, ChangeKind::InputSchemaDeclared)
        .at("inputSchema")
        .values(before.cloned(), after.cloned())
        .note(note);
    change.breaks_clients = !required.is_empty();
    Some(change)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_schema_or_nothing_is_undeclared() {
        let draft = json!({"$schema": "http://json-schema.org/draft-07/schema#"});
        assert!(undeclared(Some(&draft)));
        assert!(undeclared(Some(&json!({}))));
        assert!(undeclared(None));
        assert!(!undeclared(Some(&json!({"type": "object"}))));
        assert!(!undeclared(Some(&json!({"properties": {"a": {}}}))));
        assert!(!undeclared(Some(&json!({"anyOf": [{"type": "object"}]}))));
    }

    #[test]
    fn a_first_schema_is_one_change_classified_by_what_it_requires() {
        let before = json!({"$schema": "http://json-schema.org/draft-07/schema#"});
        let after = json!({"type": "object", "required": ["path"],
            "properties": {"path": {"type": "string"}, "tail": {"type": "number"}}});
        let c = first_declaration("read_file", Some(&before), Some(&after)).expect("one change");
        assert_eq!(c.kind, ChangeKind::InputSchemaDeclared);
        assert_eq!((c.breaks_clients, c.affects_models), (true, true));
        assert_eq!(
            c.note.as_deref(),
            Some("input schema declared for the first time: 2 parameter(s) (path, tail), required: path")
        );
        let optional = json!({"type": "object", "properties": {"tail": {"type": "number"}}});
        let c = first_declaration("read_file", Some(&json!({})), Some(&optional)).unwrap();
        assert_eq!((c.breaks_clients, c.affects_models), (false, true));
        assert!(first_declaration("t", Some(&after), Some(&optional)).is_none());
        assert!(first_declaration("t", Some(&before), Some(&json!({}))).is_none());
    }
}
