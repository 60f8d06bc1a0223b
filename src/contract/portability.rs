//! Schema portability: what in a tool list some clients or model APIs refuse or cannot use,
//! though the MCP spec allows it (the kind of finding the MCP Inspector CLI's `--strict` reports).
//! `mcpeval check`'s smoke stage fails on a finding the candidate has and the baseline had not.

use serde::Serialize;
use serde_json::Value;

/// One thing a client may refuse, on one tool.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Finding {
    pub tool: String,
    /// A stable name of the rule (`name_charset`, `root_not_object`, …).
    pub rule: &'static str,
    /// What is wrong, and who refuses it.
    pub message: String,
}

/// The JSON Schema keywords at the root of an input schema that OpenAI's function calling
/// refuses (its parameters must be one plain object schema).
const ROOT_COMBINATORS: [&str; 5] = ["oneOf", "anyOf", "allOf", "not", "enum"];
/// The dialects clients are known to validate with (2020-12 is the MCP default since
/// 2025-11-25; draft-07 is what most SDKs emitted before).
const KNOWN_DIALECTS: [&str; 4] = [
    "https://json-schema.org/draft/2020-12/schema",
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft-07/schema",
];

/// Every finding on the tools of a snapshot's `tools.json`, sorted by tool and rule.
pub fn findings(tools: &[Value]) -> Vec<Finding> {
    let mut out = Vec::new();
    for tool in tools {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
        let mut add = |rule: &'static str, message: String| {
            out.push(Finding {
                tool: name.to_owned(),
                rule,
                message,
            })
        };
        if name.is_empty() || name.len() > 64 {
            add(
                "name_length",
                format!(
                    "the name has {} characters: OpenAI and Gemini take 1 to 64",
                    name.chars().count()
                ),
            );
        }
        if let Some(bad) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
        {
            add(
                "name_charset",
                format!(
                    "the name has `{bad}`: OpenAI and Anthropic take only letters, digits, `_` \
                     and `-`"
                ),
            );
        }
        match tool.get("inputSchema") {
            Some(schema) => input_schema(schema, &mut add),
            None => add("no_input_schema", "no `inputSchema`".into()),
        }
        for (field, schema) in ["inputSchema", "outputSchema"]
            .iter()
            .filter_map(|f| Some((*f, tool.get(*f)?)))
        {
            if let Some(at) = type_union(schema, "") {
                add(
                    "type_union",
                    format!(
                        "`{field}` has a list of types at `{}`: Gemini's function declarations \
                         take one type per schema (use `nullable` or `anyOf`)",
                        if at.is_empty() { "/" } else { &at }
                    ),
                );
            }
        }
        if let Some(schema) = tool.get("outputSchema") {
            if schema.get("type").and_then(Value::as_str) != Some("object") {
                add(
                    "output_not_object",
                    "`outputSchema` is not `type: object`, which structured content must be".into(),
                );
            }
        }
    }
    out.sort();
    out
}

fn input_schema(schema: &Value, add: &mut impl FnMut(&'static str, String)) {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        add(
            "root_not_object",
            format!(
                "`inputSchema` has type {}: clients expect `type: object`",
                schema
                    .get("type")
                    .map_or("(none)".to_owned(), Value::to_string)
            ),
        );
    }
    for keyword in ROOT_COMBINATORS {
        if schema.get(keyword).is_some() {
            add(
                "root_combinator",
                format!(
                    "`{keyword}` at the root of `inputSchema`: OpenAI's function calling \
                     refuses it"
                ),
            );
        }
    }
    if let Some(dialect) = schema.get("$schema").and_then(Value::as_str) {
        if !KNOWN_DIALECTS.contains(&dialect) {
            add(
                "unknown_dialect",
                format!("`$schema` is `{dialect}`: clients validate with 2020-12 or draft-07"),
            );
        }
    }
    let declared = schema.get("properties").and_then(Value::as_object);
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !declared.is_some_and(|p| p.contains_key(required)) {
            add(
                "required_undeclared",
                format!("`{required}` is required but not among `properties`"),
            );
        }
    }
    let mut refs = Vec::new();
    remote_refs(schema, &mut refs);
    for r in refs {
        add(
            "remote_ref",
            format!("`$ref` to `{r}`: clients resolve only references inside the schema (`#…`)"),
        );
    }
}

/// The first place in the schema whose `type` is a list, as a JSON pointer.
fn type_union(value: &Value, at: &str) -> Option<String> {
    match value {
        Value::Object(map) => {
            if map.get("type").is_some_and(Value::is_array) {
                return Some(at.to_owned());
            }
            map.iter()
                .filter(|(k, _)| k.as_str() != "enum" && k.as_str() != "const")
                .find_map(|(k, v)| type_union(v, &format!("{at}/{k}")))
        }
        Value::Array(items) => {
            (items.iter().enumerate()).find_map(|(i, v)| type_union(v, &format!("{at}/{i}")))
        }
        _ => None,
    }
}

/// Every `$ref` in the schema that points outside it.
fn remote_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("$ref", Value::String(r)) if !r.starts_with('#') => out.push(r.clone()),
                    _ => remote_refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| remote_refs(v, out)),
        _ => {}
    }
}

/// The candidate's findings that the baseline's tools did not have (same tool, same rule, same
/// message), in order.
pub fn new_findings(baseline: &[Finding], candidate: &[Finding]) -> Vec<Finding> {
    (candidate.iter())
        .filter(|f| !baseline.contains(f))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_portable_tool_has_no_finding() {
        let tools = [
            json!({"name": "get_issue", "inputSchema": {"type": "object",
            "properties": {"id": {"type": "integer", "$ref": "#/$defs/id"}}, "required": ["id"]},
            "outputSchema": {"type": "object"}}),
        ];
        assert_eq!(findings(&tools), vec![]);
    }

    #[test]
    fn each_rule_finds_its_fault() {
        let long = "x".repeat(65);
        let tools = [
            json!({"name": "files.read", "inputSchema": {"type": "object",
                "anyOf": [{"required": ["a"]}], "required": ["a"]}}),
            json!({"name": long, "inputSchema": {"type": "string",
                "$schema": "http://json-schema.org/draft-04/schema#"}}),
            json!({"name": "r", "inputSchema": {"type": "object", "properties": {"p":
                {"$ref": "https://example.com/s.json"}}}, "outputSchema": {"type": "array"}}),
            json!({"name": "n"}),
            json!({"name": "u", "inputSchema": {"type": "object"}, "outputSchema": {
                "type": "object", "properties": {"p": {"type": ["string", "null"]}}}}),
        ];
        let found = findings(&tools);
        let rules: Vec<(&str, &str)> = found.iter().map(|f| (f.tool.as_str(), f.rule)).collect();
        assert_eq!(
            rules,
            vec![
                ("files.read", "name_charset"),
                ("files.read", "required_undeclared"),
                ("files.read", "root_combinator"),
                ("n", "no_input_schema"),
                ("r", "output_not_object"),
                ("r", "remote_ref"),
                ("u", "type_union"),
                (long.as_str(), "name_length"),
                (long.as_str(), "root_not_object"),
                (long.as_str(), "unknown_dialect"),
            ]
        );
    }

    #[test]
    fn only_findings_the_baseline_lacked_are_new() {
        let old = findings(&[json!({"name": "a.b", "inputSchema": {"type": "object"}})]);
        let new = findings(&[
            json!({"name": "a.b", "inputSchema": {"type": "object"}}),
            json!({"name": "c.d", "inputSchema": {"type": "object"}}),
        ]);
        let fresh = new_findings(&old, &new);
        assert_eq!(fresh.len(), 1);
        assert_eq!(fresh[0].tool, "c.d");
    }
}
