//! Correcting arguments after a tool error, from what the error message says.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::params;

/// "known projects: a, b, c", "must be one of: x | y", "valid values are a, b".
static ALTERNATIVES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:known|valid|available|allowed|expected|one of|possible|supported)\b[^:;.]*?(?::|\bare\b|\bis\b)\s*([^;\n]+)",
    )
    .expect("regex")
});

/// Corrected arguments, or `None` when the error gives nothing to correct.
///
/// A value the error names is replaced by the closest alternative the error lists; an optional
/// argument the error complains about is dropped; a required one the error says is missing is
/// filled from `fresh` (the arguments the sim would give now).
pub(super) fn correct(
    previous: &str,
    error: &str,
    schema: &Value,
    fresh: &Map<String, Value>,
) -> Option<Map<String, Value>> {
    let mut args = match serde_json::from_str::<Value>(previous) {
        Ok(Value::Object(map)) => map,
        _ => {
            let changed = serde_json::to_string(fresh).ok().as_deref() != Some(previous);
            return changed.then(|| fresh.clone());
        }
    };
    let before = args.clone();
    let lower = error.to_lowercase();
    let alternatives = alternatives(error);
    for p in params::params(schema) {
        let mentioned = mentions(&lower, &p.name.to_lowercase());
        match args.get(p.name).cloned() {
            Some(v) => {
                let text = value_text(&v);
                let named = !text.is_empty() && mentions(&lower, &text.to_lowercase());
                if !(named || mentioned) {
                    continue;
                }
                if let Some(alt) = closest(&text, &alternatives) {
                    args.insert(p.name.to_owned(), Value::String(alt));
                } else if !p.required {
                    args.remove(p.name);
                } else if let Some(f) = fresh.get(p.name).filter(|f| **f != v) {
                    args.insert(p.name.to_owned(), f.clone());
                }
            }
            None if mentioned && p.required => {
                if let Some(f) = fresh.get(p.name) {
                    args.insert(p.name.to_owned(), f.clone());
                }
            }
            None => {}
        }
    }
    (args != before).then_some(args)
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}

/// True when `needle` appears in `hay` as a whole word (or quoted).
fn mentions(hay: &str, needle: &str) -> bool {
    hay.match_indices(needle).any(|(at, _)| {
        let before = hay[..at].chars().next_back();
        let after = hay[at + needle.len()..].chars().next();
        let edge = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        edge(before) && edge(after)
    })
}

fn alternatives(error: &str) -> Vec<String> {
    let Some(list) = ALTERNATIVES.captures(error).and_then(|c| c.get(1)) else {
        return Vec::new();
    };
    list.as_str()
        .split([',', '|'])
        .flat_map(|s| s.split(" or "))
        .map(|s| {
            s.trim()
                .trim_matches(|c: char| !(c.is_alphanumeric() || "/_-.+@".contains(c)))
                .to_owned()
        })
        .filter(|s| !s.is_empty() && !s.contains(' '))
        .collect()
}

/// The alternative closest to the rejected value: longest common prefix, then shortest.
fn closest(value: &str, alternatives: &[String]) -> Option<String> {
    let v = value.to_lowercase();
    alternatives
        .iter()
        .filter(|a| a.to_lowercase() != v)
        .max_by_key(|a| {
            let common = a
                .to_lowercase()
                .chars()
                .zip(v.chars())
                .take_while(|(x, y)| x == y)
                .count();
            (common, std::cmp::Reverse(a.len()))
        })
        .cloned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn corrects_from_the_error_message() {
        let schema = json!({"type": "object", "required": ["project"], "properties": {
            "project": {"type": "string"}, "status": {"type": "string"}
        }});
        let fresh = Map::new();
        let error = "unknown project `zeph`; known projects: apollo, hermes, zephyr";
        let fixed = correct(r#"{"project":"zeph"}"#, error, &schema, &fresh).unwrap();
        assert_eq!(fixed["project"], "zephyr");
        let error = "invalid status `x`";
        let fixed = correct(r#"{"project":"a","status":"x"}"#, error, &schema, &fresh).unwrap();
        assert!(fixed.get("status").is_none());
        assert!(correct(r#"{"project":"a"}"#, "server exploded", &schema, &fresh).is_none());
    }
}
