//! The validity rules of the `x-mcp-header` parameter annotation (MCP 2026-07-28): which
//! annotations of a tool's input schema an HTTP client must reject, and why.

use std::collections::BTreeMap;

use serde_json::Value;

use super::schema::{listed, DATA_KEYWORDS};

/// An `x-mcp-header` annotation of a tool's input schema and why it is invalid, if it is.
#[derive(Debug, Clone, PartialEq)]
pub struct HeaderAnnotation {
    /// The annotation's value (the `{name}` of `Mcp-Param-{name}`).
    pub value: Value,
    pub problem: Option<String>,
}

/// The `tchar` of RFC 9110 §5.6.2: `!#$%&'*+-.^_`|~`, digits and letters.
fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// Every `x-mcp-header` annotation in a raw input schema (not [`normalize`]d: a `$ref` on the way
/// to a property makes its annotation invalid), by the dotted path of the schema carrying it.
///
/// The rules, from MCP 2026-07-28, Streamable HTTP, "Custom Headers from Tool Parameters"
/// (`basic/transports/streamable-http`): the value "MUST NOT be empty", "MUST match HTTP
/// field-name token syntax (`1*tchar`, RFC 9110 Section 5.1)", "MUST NOT contain control
/// characters", "MUST be case-insensitively unique among all `x-mcp-header` values in the
/// `inputSchema`", "MUST only be applied to parameters with primitive types (integer, string,
/// boolean). Parameters with type `number` are not permitted", and "MUST only be applied to
/// properties that are statically reachable from the schema root: reachable via a chain consisting
/// solely of `properties` keys. The chain MUST NOT pass through `items` (or any other array
/// keyword), composition keywords (`oneOf`, `anyOf`, `allOf`, `not`), conditional keywords
/// (`if`/`then`/`else`), or `$ref`." And: "Clients using the Streamable HTTP transport MUST reject
/// tool definitions where any `x-mcp-header` value violates these constraints. Rejection means
/// the client MUST exclude the invalid tool from the result of `tools/list`."
///
/// Read here: a `type` array passes when its types other than `"null"` are all string, integer or
/// boolean (a null value only omits the header); a property without `type` fails. The safe-integer
/// range constrains call values, not the definition, so it is not checked.
pub fn header_annotations(input_schema: &Value, path: &str) -> BTreeMap<String, HeaderAnnotation> {
    let mut out = BTreeMap::new();
    collect_headers(input_schema, path, Reach::Root, &mut out);
    let names = out
        .values()
        .filter_map(|h| h.value.as_str())
        .map(str::to_ascii_lowercase);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    names.for_each(|name| *counts.entry(name).or_default() += 1);
    for header in out.values_mut().filter(|h| h.problem.is_none()) {
        let name = header.value.as_str().unwrap_or_default();
        if counts[&name.to_ascii_lowercase()] > 1 {
            let problem = format!("header name `{name}` is not case-insensitively unique");
            header.problem = Some(problem);
        }
    }
    out
}

/// Where a schema sits relative to the root, for the static-reachability rule.
#[derive(Clone, Copy, PartialEq)]
enum Reach {
    Root,
    /// Through `properties` keys alone.
    Property,
    Elsewhere,
}

fn collect_headers(
    node: &Value,
    path: &str,
    reach: Reach,
    out: &mut BTreeMap<String, HeaderAnnotation>,
) {
    match node {
        Value::Object(map) => {
            if let Some(value) = map.get("x-mcp-header") {
                let problem = header_problem(node, value, reach);
                let header = HeaderAnnotation {
                    value: value.clone(),
                    problem,
                };
                out.insert(path.to_owned(), header);
            }
            for (key, child) in map.iter().filter(|(k, _)| !listed(DATA_KEYWORDS, k)) {
                match (key.as_str(), child) {
                    ("x-mcp-header", _) => {}
                    ("properties", Value::Object(props)) if reach != Reach::Elsewhere => {
                        for (name, schema) in props {
                            let at = format!("{path}.properties.{name}");
                            collect_headers(schema, &at, Reach::Property, out);
                        }
                    }
                    _ => collect_headers(child, &format!("{path}.{key}"), Reach::Elsewhere, out),
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                collect_headers(item, &format!("{path}.{i}"), Reach::Elsewhere, out);
            }
        }
        _ => {}
    }
}

fn header_problem(schema: &Value, value: &Value, reach: Reach) -> Option<String> {
    let Some(name) = value.as_str() else {
        return Some(format!("the annotation {value} is not a string"));
    };
    let types = match schema.get("type") {
        Some(Value::Array(many)) => many.iter().filter(|t| *t != "null").collect(),
        one => Vec::from_iter(one),
    };
    let primitive = |t: &&Value| matches!(t.as_str(), Some("string" | "integer" | "boolean"));
    let problem = if name.is_empty() {
        "the header name is empty".to_owned()
    } else if !name.bytes().all(is_tchar) {
        format!(
            "`{}` is not an HTTP field-name token (RFC 9110 `1*tchar`)",
            name.escape_debug()
        )
    } else if reach != Reach::Property {
        "the annotated schema is not reachable from the root through `properties` alone".to_owned()
    } else if types.is_empty() || !types.iter().all(primitive) {
        let found = schema
            .get("type")
            .map_or("no type".to_owned(), |t| format!("type {t}"));
        format!("the parameter has {found}; only string, integer and boolean ones may be mirrored")
    } else {
        return None;
    };
    Some(problem)
}
