//! Arguments for a drafted call, from a tool's input schema and what init knows of the server
//! (its command line): the values of [`super::values`] (the schema's own, the description's,
//! the format's, the command line's, then a neutral one), and the malformed variants that probe
//! a server's error semantics.

use serde_json::{json, Map, Value};

use super::values::{pick, Known, Source};

/// The arguments of a valid call: every parameter the schema requires, plus the optional ones
/// the schema itself gives a value for (an example, a default, a const); others stay out, so
/// the call asks for as little as the server allows.
pub fn valid_args(schema: &Value, known: &Known) -> Map<String, Value> {
    (picked_args(schema, known).into_iter())
        .map(|(name, value, _)| (name, value))
        .collect()
}

/// [`valid_args`], each value with where it came from.
pub fn picked_args(schema: &Value, known: &Known) -> Vec<(String, Value, Source)> {
    let required = required(schema);
    let mut args = Vec::new();
    let Some(props) = schema["properties"].as_object() else {
        return args;
    };
    for (name, prop) in props {
        let given = ["examples", "default", "const"]
            .iter()
            .any(|k| prop.get(*k).is_some());
        if required.contains(&name.as_str()) || given {
            let (value, source) = pick(name, prop, known);
            args.push((name.clone(), value, source));
        }
    }
    args
}

/// The schema's required parameter names.
pub fn required(schema: &Value) -> Vec<&str> {
    (schema["required"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect()
}

/// A valid call with one parameter of a declared type given a value of another type: the
/// parameter's name and the arguments. Required parameters are tried first. `None` when no
/// parameter declares a single type.
pub fn wrong_type_args(schema: &Value, known: &Known) -> Option<(String, Map<String, Value>)> {
    let props = schema["properties"].as_object()?;
    let required = required(schema);
    let mut names: Vec<&String> = props.keys().collect();
    names.sort_by_key(|n| !required.contains(&n.as_str()));
    let (name, wrong) = names.into_iter().find_map(|name| {
        let ty = props[name.as_str()]["type"].as_str()?;
        Some((name, wrong_value(ty)))
    })?;
    let mut args = valid_args(schema, known);
    args.insert(name.clone(), wrong);
    Some((name.clone(), args))
}

/// A value that is not of JSON Schema type `ty`.
fn wrong_value(ty: &str) -> Value {
    match ty {
        "string" => json!(12345),
        _ => json!("not-a-valid-value"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "id": {"type": "integer", "minimum": 3},
            "project": {"type": "string", "examples": ["apollo"]},
            "status": {"enum": ["open", "closed"]},
            "when": {"type": "string", "format": "date"}},
            "required": ["id", "when"]})
    }

    #[test]
    fn valid_arguments_are_the_required_ones_and_those_the_schema_suggests() {
        let args = valid_args(&schema(), &Known::default());
        assert_eq!(
            Value::Object(args.clone()),
            json!({"id": 3, "project": "apollo", "when": "2026-01-01"})
        );
        assert!(jsonschema::is_valid(&schema(), &Value::Object(args)));
        assert!(valid_args(&json!({"type": "object"}), &Known::default()).is_empty());
    }

    #[test]
    fn a_wrong_type_goes_to_a_required_typed_parameter_and_breaks_the_schema() {
        let (name, args) = wrong_type_args(&schema(), &Known::default()).unwrap();
        assert_eq!(name, "id");
        assert_eq!(args["id"], "not-a-valid-value");
        assert_eq!(args["project"], "apollo", "the rest stays valid");
        assert!(!jsonschema::is_valid(&schema(), &Value::Object(args)));
        let untyped = json!({"type": "object", "properties": {"s": {"enum": ["a"]}}});
        assert_eq!(wrong_type_args(&untyped, &Known::default()), None);
    }
}
