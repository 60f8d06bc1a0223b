//! Validation primitives on the spanned YAML tree: typed reads that record a diagnostic on failure.

use std::ops::RangeInclusive;
use std::path::Path;

use super::load::Diagnostic;
use super::raw::{Node, Value};
pub(crate) use super::suggest::suggestion;

/// Collects the diagnostics of one file; every read returns `None` after recording its problem.
pub(crate) struct Checker<'a> {
    file: &'a Path,
    diagnostics: Vec<Diagnostic>,
}

/// The entries of a mapping whose keys were checked: strings, known, not repeated.
pub(crate) struct Fields<'n> {
    /// The mapping node itself, for "missing key" messages.
    pub node: &'n Node,
    pub entries: Vec<(&'n str, &'n Node, &'n Node)>,
}

impl<'n> Fields<'n> {
    /// The key node and value of `name`, if present.
    pub fn get(&self, name: &str) -> Option<(&'n Node, &'n Node)> {
        self.entries
            .iter()
            .find(|(key, _, _)| *key == name)
            .map(|(_, key, value)| (*key, *value))
    }
}

impl<'a> Checker<'a> {
    pub fn new(file: &'a Path) -> Self {
        Checker {
            file,
            diagnostics: Vec::new(),
        }
    }

    pub fn file(&self) -> &'a Path {
        self.file
    }

    /// How many problems were found so far (compare before and after a sub-check).
    pub fn count(&self) -> usize {
        self.diagnostics.len()
    }

    /// The problems found, in file order.
    pub fn into_diagnostics(mut self) -> Vec<Diagnostic> {
        self.diagnostics.sort_by_key(|d| (d.line, d.column));
        self.diagnostics
    }

    /// Records a problem at `node`.
    pub fn error(&mut self, node: &Node, message: impl Into<String>) {
        self.error_at(node.line, node.column, message);
    }

    pub fn error_at(&mut self, line: usize, column: usize, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic {
            file: self.file.to_path_buf(),
            line,
            column,
            message: message.into(),
        });
    }

    /// Records that `value`, the value of `name`, is not what was `expected` ("a string").
    pub fn wrong_type(&mut self, value: &Node, name: &str, expected: &str) {
        let hint = if expected == "a string" && value.value.is_plain_scalar() {
            " (quote it)"
        } else {
            ""
        };
        let got = value.value.kind();
        self.error(
            value,
            format!("`{name}` must be {expected}, got {got}{hint}"),
        );
    }

    /// Checks that `node` is a mapping with string keys, each at most once, and (when `known` is
    /// given) each one of `known`. `place` names the mapping in messages: "task", "`expect`".
    pub fn fields<'n>(
        &mut self,
        node: &'n Node,
        place: &str,
        known: Option<&[&str]>,
    ) -> Option<Fields<'n>> {
        let Value::Map(map) = &node.value else {
            let got = node.value.kind();
            self.error(node, format!("{place} must be a mapping, got {got}"));
            return None;
        };
        let mut fields = Fields {
            node,
            entries: Vec::new(),
        };
        for (key, value) in map {
            let Value::Str(name) = &key.value else {
                let got = key.value.kind();
                self.error(key, format!("keys in {place} must be strings, got {got}"));
                continue;
            };
            if let Some((_, first, _)) = fields.entries.iter().find(|(k, _, _)| k == name) {
                let line = first.line;
                self.error(
                    key,
                    format!("duplicate key `{name}` in {place} (first at line {line})"),
                );
                continue;
            }
            if let Some(known) = known.filter(|known| !known.contains(&name.as_str())) {
                let hint = suggestion(name, known);
                self.error(key, format!("unknown key `{name}` in {place}{hint}"));
                continue;
            }
            fields.entries.push((name, key, value));
        }
        Some(fields)
    }

    /// Records that the mapping `fields` lacks the required key `name`.
    pub fn missing(&mut self, fields: &Fields<'_>, name: &str, place: &str) {
        self.error(
            fields.node,
            format!("missing required key `{name}` in {place}"),
        );
    }

    pub fn string(&mut self, value: &Node, name: &str) -> Option<String> {
        match &value.value {
            Value::Str(s) => Some(s.clone()),
            _ => {
                self.wrong_type(value, name, "a string");
                None
            }
        }
    }

    /// A string that must not be empty or blank.
    pub fn non_empty_string(&mut self, value: &Node, name: &str) -> Option<String> {
        let s = self.string(value, name)?;
        if s.trim().is_empty() {
            self.error(value, format!("`{name}` is empty"));
            return None;
        }
        Some(s)
    }

    pub fn boolean(&mut self, value: &Node, name: &str) -> Option<bool> {
        match value.value {
            Value::Bool(b) => Some(b),
            _ => {
                self.wrong_type(value, name, "`true` or `false`");
                None
            }
        }
    }

    /// An integer in `range`.
    pub fn integer(&mut self, value: &Node, name: &str, range: RangeInclusive<u32>) -> Option<u32> {
        let n = match value.value {
            Value::UInt(n) => i128::from(n),
            Value::Int(n) => i128::from(n),
            _ => {
                self.wrong_type(value, name, "an integer");
                return None;
            }
        };
        match u32::try_from(n) {
            Ok(n) if range.contains(&n) => Some(n),
            _ => {
                let (low, high) = (range.start(), range.end());
                let limits = if *high == u32::MAX {
                    format!("at least {low}")
                } else {
                    format!("between {low} and {high}")
                };
                self.error(value, format!("`{name}` must be {limits}, got {n}"));
                None
            }
        }
    }

    /// A list of non-empty strings; every bad item is reported.
    pub fn string_list(&mut self, value: &Node, name: &str) -> Option<Vec<String>> {
        let Value::Seq(items) = &value.value else {
            self.wrong_type(value, name, "a list of strings");
            return None;
        };
        let before = self.count();
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match &item.value {
                Value::Str(s) if s.trim().is_empty() => {
                    self.error(item, format!("empty string in `{name}`"));
                }
                Value::Str(s) => out.push(s.clone()),
                other => {
                    let got = other.kind();
                    self.error(
                        item,
                        format!("entries of `{name}` must be strings, got {got}"),
                    );
                }
            }
        }
        (self.count() == before).then_some(out)
    }

    /// One of `choices` (by its spelling in YAML).
    pub fn choice<T: Copy>(
        &mut self,
        value: &Node,
        name: &str,
        choices: &[(&str, T)],
    ) -> Option<T> {
        let s = self.string(value, name)?;
        if let Some((_, v)) = choices.iter().find(|(spelling, _)| *spelling == s) {
            return Some(*v);
        }
        let valid: Vec<String> = choices.iter().map(|(c, _)| format!("`{c}`")).collect();
        let valid = valid.join(", ");
        self.error(
            value,
            format!("invalid {name} `{s}` (expected one of {valid})"),
        );
        None
    }

    /// A string that compiles as a regex (the regex crate's syntax).
    pub fn regex(&mut self, value: &Node, name: &str) -> Option<String> {
        let pattern = self.string(value, name)?;
        match regex::Regex::new(&pattern) {
            Ok(_) => Some(pattern),
            Err(err) => {
                let why = regex_error_summary(&err);
                self.error(value, format!("invalid regex in `{name}`: {why}"));
                None
            }
        }
    }

    /// Converts a YAML value to JSON (for argument literals); keys become strings.
    pub fn json(&mut self, node: &Node) -> Option<serde_json::Value> {
        use serde_json::Value as J;
        Some(match &node.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(n) => J::from(*n),
            Value::UInt(n) => J::from(*n),
            Value::Float(f) => match serde_json::Number::from_f64(*f) {
                Some(n) => J::Number(n),
                None => {
                    self.error(node, format!("`{f}` is not a finite number"));
                    return None;
                }
            },
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(items) => {
                let items: Vec<_> = items.iter().map(|item| self.json(item)).collect();
                J::Array(items.into_iter().collect::<Option<_>>()?)
            }
            Value::Map(entries) => {
                let mut object = serde_json::Map::new();
                let mut ok = true;
                for (key, value) in entries {
                    let key = self.json_key(key);
                    let value = self.json(value);
                    match (key, value) {
                        (Some(k), Some(v)) => drop(object.insert(k, v)),
                        _ => ok = false,
                    }
                }
                ok.then_some(J::Object(object))?
            }
        })
    }

    fn json_key(&mut self, key: &Node) -> Option<String> {
        match &key.value {
            Value::Str(s) => Some(s.clone()),
            Value::Null => Some("null".to_owned()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Int(n) => Some(n.to_string()),
            Value::UInt(n) => Some(n.to_string()),
            Value::Float(f) => Some(f.to_string()),
            Value::Seq(_) | Value::Map(_) => {
                let got = key.value.kind();
                self.error(key, format!("object keys must be strings, got {got}"));
                None
            }
        }
    }
}

/// Where each string key of a mapping is written (line, column); nothing for another node.
pub(crate) fn key_places(node: &Node) -> std::collections::BTreeMap<String, (usize, usize)> {
    let Value::Map(entries) = &node.value else {
        return Default::default();
    };
    (entries.iter())
        .filter_map(|(key, _)| match &key.value {
            Value::Str(name) => Some((name.clone(), (key.line, key.column))),
            _ => None,
        })
        .collect()
}

/// The regex crate's message without the pattern echo: its last line, minus `error: `.
pub(crate) fn regex_error_summary(err: &regex::Error) -> String {
    let text = err.to_string();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    last.trim().trim_start_matches("error: ").to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::invalid_regex, reason = "the test needs a regex error")]
    fn regex_errors_are_summarised_on_one_line() {
        let err = regex::Regex::new("(abc").unwrap_err();
        assert_eq!(regex_error_summary(&err), "unclosed group");
    }
}
