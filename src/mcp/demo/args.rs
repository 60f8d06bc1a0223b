//! Checks tool arguments against the tool's own input schema and reads them.
//!
//! The checks are driven by the catalogue's schemas (required properties, `string` / `integer`
//! types, `enum` values, `maxLength`), so a message always names the argument, what it should be and, where
//! there is a closed set, the valid values. Unknown arguments are ignored, as most servers do.

use rmcp::model::{JsonObject, Tool};
use serde_json::Value;

use super::data::{fail, ToolError};

/// The arguments of one call, checked against the tool's input schema.
pub struct Args<'a> {
    map: Option<&'a JsonObject>,
}

impl<'a> Args<'a> {
    /// Checks `arguments` against `tool`'s input schema.
    pub fn check(tool: &Tool, arguments: Option<&'a JsonObject>) -> Result<Self, ToolError> {
        let args = Self { map: arguments };
        let schema = &tool.input_schema;
        let empty = serde_json::Map::new();
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let required = schema.get("required").and_then(Value::as_array);
        for name in required.into_iter().flatten().filter_map(Value::as_str) {
            if args.get(name).is_none() {
                let about = describe(properties.get(name));
                return fail(format!(
                    "missing required argument `{name}` of `{}` ({about})",
                    tool.name
                ));
            }
        }
        for (name, property) in properties {
            if let Some(value) = args.get(name) {
                check_value(name, property, value)?;
            }
        }
        Ok(args)
    }

    /// The argument's value; an explicit `null` counts as absent.
    fn get(&self, name: &str) -> Option<&'a Value> {
        self.map?.get(name).filter(|v| !v.is_null())
    }

    /// A string argument (already checked to be a string when present).
    pub fn str(&self, name: &str) -> Option<&'a str> {
        self.get(name).and_then(Value::as_str)
    }

    /// A required string argument.
    pub fn required_str(&self, name: &str) -> Result<&'a str, ToolError> {
        self.str(name)
            .map_or_else(|| fail(format!("missing required argument `{name}`")), Ok)
    }

    /// An integer argument (already checked to be an integer when present).
    pub fn int(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(as_integer)
    }

    /// A required integer argument.
    pub fn required_int(&self, name: &str) -> Result<i64, ToolError> {
        self.int(name)
            .map_or_else(|| fail(format!("missing required argument `{name}`")), Ok)
    }
}

/// A whole number, also when a client sent it as `3.0`.
fn as_integer(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| f as i64)
    })
}

/// "string: Project key, e.g. apollo" for a property schema.
fn describe(property: Option<&Value>) -> String {
    let Some(property) = property else {
        return "no description".to_owned();
    };
    let kind = property["type"].as_str().unwrap_or("value");
    match property["description"].as_str() {
        Some(description) => format!("{kind}: {description}"),
        None => kind.to_owned(),
    }
}

fn check_value(name: &str, property: &Value, value: &Value) -> Result<(), ToolError> {
    let kind = property["type"].as_str().unwrap_or("any");
    let type_ok = match kind {
        "string" => value.is_string(),
        "integer" => as_integer(value).is_some(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        _ => true,
    };
    if !type_ok {
        let example = match kind {
            "integer" => " (e.g. 42)",
            "string" => " (text in quotes)",
            _ => "",
        };
        return fail(format!(
            "argument `{name}` must be {} {kind}{example}, got {}",
            article(kind),
            show(value)
        ));
    }
    if let Some(allowed) = property["enum"].as_array() {
        if !allowed.contains(value) {
            let valid: Vec<&str> = allowed.iter().filter_map(Value::as_str).collect();
            return fail(format!(
                "invalid value {value} for `{name}`; valid values: {}",
                valid.join(", ")
            ));
        }
    }
    if let (Some(max), Some(text)) = (property["maxLength"].as_u64(), value.as_str()) {
        // JSON Schema counts characters (code points), not bytes.
        let length = text.chars().count();
        if length as u64 > max {
            return fail(format!(
                "argument `{name}` must be at most {max} characters long, got {length}"
            ));
        }
    }
    Ok(())
}

fn article(kind: &str) -> &'static str {
    if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// A value as the caller sent it, with its JSON type for clarity.
fn show(value: &Value) -> String {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let mut text = value.to_string();
    if text.len() > 60 {
        let cut = (0..=57)
            .rev()
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(0);
        text.truncate(cut);
        text.push('…');
    }
    format!("the {kind} {text}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::catalogue::{tool, Release};
    use super::*;

    fn check(name: &str, args: Value) -> Result<(), String> {
        check_in(Release::V1_4_0, name, args)
    }

    fn check_in(release: Release, name: &str, args: Value) -> Result<(), String> {
        let tool = tool(release, name).unwrap();
        let map = args.as_object().cloned();
        Args::check(tool, map.as_ref()).map(|_| ()).map_err(|e| e.0)
    }

    #[test]
    fn messages_name_the_argument_and_what_is_valid() {
        assert_eq!(
            check("get_issue", json!({})).unwrap_err(),
            "missing required argument `id` of `get_issue` (integer: The issue number, e.g. 42)"
        );
        assert_eq!(
            check("get_issue", json!({ "id": "42" })).unwrap_err(),
            "argument `id` must be an integer (e.g. 42), got the string \"42\""
        );
        assert_eq!(
            check("search_issues", json!({ "query": "x", "status": "done" })).unwrap_err(),
            "invalid value \"done\" for `status`; valid values: open, closed, any"
        );
        assert_eq!(
            check("create_issue", json!({ "project": 7, "title": "t" })).unwrap_err(),
            "argument `project` must be a string (text in quotes), got the number 7"
        );
    }

    #[test]
    fn nulls_floats_and_unknown_arguments_are_tolerated() {
        assert!(check("get_issue", json!({ "id": 3.0 })).is_ok());
        assert!(check("get_issue", json!({ "id": 3, "verbose": true })).is_ok());
        assert!(check("search_issues", json!({ "query": "x", "status": null })).is_ok());
        assert!(check("get_issue", json!({ "id": null })).is_err());
        assert!(check("get_issue", json!({ "id": 3.5 })).is_err());
    }

    #[test]
    fn max_length_counts_characters() {
        let create = |title: String| {
            check_in(
                Release::V2_0_0,
                "create_issue",
                json!({ "project": "apollo", "title": title }),
            )
        };
        assert!(create("é".repeat(80)).is_ok());
        assert_eq!(
            create("x".repeat(81)).unwrap_err(),
            "argument `title` must be at most 80 characters long, got 81"
        );
        let long = json!({ "project": "apollo", "title": "x".repeat(81) });
        assert!(check_in(Release::V1_5_0, "create_issue", long).is_ok());
    }
}
