//! The argument values `mcpeval init` drafts, for call tasks and templated model tasks alike:
//! the schema's own (`default`, `examples`, `enum` / `const`), then the value or form the
//! description gives, a value of the declared `format`, a value from the server's command line,
//! and only then a neutral value of the type (never a one-letter placeholder).
//! `contract::boundary::fill` stays as `tasks boundary` needs it.

use std::sync::LazyLock;

use serde_json::{json, Map, Value};

use crate::config::{ServerSpec, Transport};

/// What init knows beyond a tool's schema: the paths it may use for a path parameter, and the
/// server's command-line flags with their values (`--repository PATH`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Known {
    /// Absolute paths (or `{sandbox}`) from the command line and the answers.
    pub paths: Vec<String>,
    /// `(flag, value)`: `--repository /r` and `--repository=/r` are `("repository", "/r")`.
    pub flags: Vec<(String, String)>,
    /// Words of the titles and names the answers gave (`Login page times out` → `login`,
    /// `page`, …): queries a search answers with something.
    pub words: Vec<String>,
}

impl Known {
    /// The paths and flags of `spec`'s command line, and the paths `texts` (answers) name.
    pub fn of(spec: &ServerSpec, texts: &[&str]) -> Self {
        Self {
            paths: super::paths::known_paths(spec, texts),
            flags: flags(spec),
            words: title_words(texts),
        }
    }

    /// Only paths (tests, and callers that know no command line).
    pub fn paths(paths: &[String]) -> Self {
        Self {
            paths: paths.to_vec(),
            ..Self::default()
        }
    }
}

/// The words (4 letters or more, first 8 distinct, lower-case) of the `title`, `name` and
/// `summary` strings in the JSON answers.
fn title_words(texts: &[&str]) -> Vec<String> {
    fn walk(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(entries) => {
                for (key, value) in entries {
                    match (key.as_str(), value.as_str()) {
                        ("title" | "name" | "summary", Some(text)) => {
                            for word in text.split(|c: char| !c.is_alphabetic()) {
                                let word = word.to_lowercase();
                                if word.chars().count() >= 4 && !out.contains(&word) {
                                    out.push(word);
                                }
                            }
                        }
                        _ => walk(value, out),
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for text in texts {
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
            walk(&value, &mut out);
        }
    }
    out.truncate(8);
    out
}

/// A command line's `--flag value` and `--flag=value` pairs.
fn flags(spec: &ServerSpec) -> Vec<(String, String)> {
    let Transport::Stdio { args, .. } = &spec.transport else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        let Some(flag) = arg.strip_prefix("--") else {
            continue;
        };
        match flag.split_once('=') {
            Some((name, value)) => out.push((name.to_owned(), value.to_owned())),
            None => {
                if let Some(value) = args.get(i + 1).filter(|v| !v.starts_with('-')) {
                    out.push((flag.to_owned(), value.clone()));
                }
            }
        }
    }
    out
}

/// Where a drafted value came from, in the order they are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Default,
    Example,
    Enum,
    Description,
    Format,
    CommandLine,
    Neutral,
}

impl Source {
    /// Whether init chose the value (the schema did not give it): a refusal of it may be
    /// init's doing rather than the server's.
    pub fn chosen(self) -> bool {
        !matches!(self, Source::Default | Source::Example | Source::Enum)
    }
}

/// A value for parameter `name` of schema `prop`.
pub fn value_for(name: &str, prop: &Value, known: &Known) -> Value {
    pick(name, prop, known).0
}

/// A value for parameter `name` of schema `prop`, and where it came from.
pub fn pick(name: &str, prop: &Value, known: &Known) -> (Value, Source) {
    (candidates(name, prop, known).into_iter().next())
        .unwrap_or_else(|| (neutral(name, prop, type_of(prop), known), Source::Neutral))
}

/// The values init would try for a parameter after the first one ([`pick`]) was refused: the
/// later candidates, then the plain value of its type (`contract::boundary::fill`'s), each once.
pub fn alternatives(name: &str, prop: &Value, known: &Known) -> Vec<Value> {
    let mut all: Vec<Value> = (candidates(name, prop, known).into_iter())
        .map(|(v, _)| v)
        .collect();
    all.push(crate::contract::boundary::fill(prop));
    let first = all.first().cloned();
    let mut out: Vec<Value> = Vec::new();
    for v in all {
        if Some(&v) != first.as_ref() && !out.contains(&v) && v.as_str().is_none_or(|s| s.len() > 1)
        {
            out.push(v);
        }
    }
    out
}

/// Every value init has for a parameter, best first: the schema's own value alone when it
/// gives one; else the description's, the format's, the command line's (each when the schema
/// takes it), then the neutral one.
fn candidates(name: &str, prop: &Value, known: &Known) -> Vec<(Value, Source)> {
    if let Some(v) = prop.get("default") {
        return vec![(v.clone(), Source::Default)];
    }
    if let Some(v) = prop["examples"].as_array().and_then(|e| e.first()) {
        return vec![(v.clone(), Source::Example)];
    }
    if let Some(v) = prop.get("const") {
        return vec![(v.clone(), Source::Enum)];
    }
    if let Some(v) = prop["enum"].as_array().and_then(|e| e.first()) {
        return vec![(v.clone(), Source::Enum)];
    }
    // `anyOf: [{type: string}, {type: null}]` (an optional parameter of the Python SDK): the
    // first branch that is not null, read with the parameter's own description.
    for key in ["anyOf", "oneOf"] {
        let mut branches = prop[key].as_array().into_iter().flatten();
        if let Some(branch) = branches.find(|b| b["type"] != "null") {
            let mut merged = branch.clone();
            if let (Some(m), Some(d)) = (merged.as_object_mut(), prop.get("description")) {
                m.entry("description").or_insert(d.clone());
            }
            return candidates(name, &merged, known);
        }
    }
    let ty = type_of(prop);
    let tries: [(Source, Option<Value>); 3] = [
        (Source::Description, described(prop, ty)),
        (Source::Format, formatted(prop)),
        (Source::CommandLine, from_command_line(name, ty, known)),
    ];
    let mut out: Vec<(Value, Source)> = (tries.into_iter())
        .filter_map(|(source, value)| value.filter(|v| valid(prop, v)).map(|v| (v, source)))
        .collect();
    out.push((neutral(name, prop, ty, known), Source::Neutral));
    out
}

/// The schema's single type (`string` when it says none; the first not null of a list).
fn type_of(prop: &Value) -> &str {
    match &prop["type"] {
        Value::String(t) => t.as_str(),
        Value::Array(ts) => (ts.iter().filter_map(Value::as_str))
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if prop.get("properties").is_some() => "object",
        _ if prop.get("items").is_some() => "array",
        _ => "string",
    }
}

/// Whether `v` fits `prop` (a schema that does not compile, or points elsewhere with `$ref`,
/// is not judged).
fn valid(prop: &Value, v: &Value) -> bool {
    if prop.to_string().contains("\"$ref\"") {
        return true;
    }
    match jsonschema::validator_for(prop) {
        Ok(validator) => validator.is_valid(v),
        Err(_) => true,
    }
}

/// The value the description gives: after "e.g." or "for example" (quoted whole), else the
/// first quoted word, else a form it names (`(HH:MM)` → `14:30`, `YYYY-MM-DD`).
fn described(prop: &Value, ty: &str) -> Option<Value> {
    let text = prop["description"].as_str()?;
    let typed = |s: String| -> Option<Value> {
        match ty {
            "integer" => s.parse::<i64>().ok().map(|n| json!(n)),
            "number" => s.parse::<f64>().ok().map(|n| json!(n)),
            "string" => Some(json!(s)),
            _ => None,
        }
    };
    if let Some(v) = eg(text).and_then(typed) {
        return Some(v);
    }
    if ty != "string" {
        return None;
    }
    if let Some(v) = form(text) {
        return Some(json!(v));
    }
    quoted(text).map(|s| json!(s))
}

/// The example a description gives: "e.g. 42", "(e.g., 'America/New_York')", "for example
/// `apollo`", "such as \"New York\"" (a quoted example whole, spaces and all).
pub fn eg(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let at = ["e.g.", "eg.", "for example", "such as", "example:"]
        .iter()
        .filter_map(|m| lower.find(m).map(|i| i + m.len()))
        .min()?;
    let rest = text[at..].trim_start_matches([',', ':', ' ']);
    let first = rest.chars().next()?;
    let word: String = match first {
        '\'' | '"' | '`' => rest[1..].chars().take_while(|c| *c != first).collect(),
        _ => (rest.chars())
            .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | ')' | ';'))
            .collect(),
    };
    let word = word.trim_end_matches('.').trim().to_owned();
    (!word.is_empty() && word.chars().count() <= 80).then_some(word)
}

/// The first quoted word of a description (`'Etc/UTC'`, `` `main` ``), when it is short and
/// has no space.
fn quoted(text: &str) -> Option<String> {
    static QUOTED: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r#"(?:^|[\s(])['"`]([^'"`\s]{2,40})['"`]"#).expect("a valid regex")
    });
    QUOTED.captures(text).map(|c| c[1].to_owned())
}

/// A value of the form a description names: a time (`HH:MM`, `HH:MM:SS`), a date
/// (`YYYY-MM-DD`), both.
fn form(text: &str) -> Option<&'static str> {
    const FORMS: &[(&str, &str)] = &[
        ("YYYY-MM-DDTHH:MM:SS", "2026-01-15T14:30:00"),
        ("YYYY-MM-DD HH:MM:SS", "2026-01-15 14:30:00"),
        ("YYYY-MM-DD", "2026-01-15"),
        ("HH:MM:SS", "14:30:00"),
        ("HH:MM", "14:30"),
        ("ISO 8601", "2026-01-15T14:30:00Z"),
    ];
    let upper = text.to_ascii_uppercase();
    (FORMS.iter())
        .find(|(f, _)| upper.contains(f))
        .map(|(_, v)| *v)
}

/// A value of the declared `format`.
fn formatted(prop: &Value) -> Option<Value> {
    let v = match prop["format"].as_str()? {
        "date" => "2026-01-01",
        "date-time" => "2026-01-01T00:00:00Z",
        "time" => "12:00:00",
        "email" => "user@example.com",
        "uri" | "url" | "iri" => "https://example.com/",
        "uri-reference" | "iri-reference" => "/example",
        "hostname" => "example.com",
        "uuid" => "123e4567-e89b-12d3-a456-426614174000",
        "ipv4" => "127.0.0.1",
        "ipv6" => "::1",
        _ => return None,
    };
    Some(json!(v))
}

/// Words of a parameter name that say its kind, not what it is about.
const KIND_WORDS: &[&str] = &[
    "path",
    "dir",
    "directory",
    "file",
    "folder",
    "name",
    "id",
    "url",
    "value",
];

/// A value from the server's command line: a flag whose name matches the parameter's
/// (`--repository PATH` for `repo_path`), else a path it was started with, for a path
/// parameter (`path`, `*_dir`, `repo*`, `root`…): a file for a `*file*`, else a directory.
fn from_command_line(name: &str, ty: &str, known: &Known) -> Option<Value> {
    let words = super::templates::name_words(name);
    for (flag, value) in &known.flags {
        let flag_words = super::templates::name_words(flag);
        let matches = words.iter().any(|w| {
            flag_words.iter().any(|f| {
                f == w
                    || (!KIND_WORDS.contains(&w.as_str())
                        && w.len() >= 3
                        && f.len() >= 3
                        && (f.starts_with(w.as_str()) || w.starts_with(f.as_str())))
            })
        });
        if matches {
            return match ty {
                "integer" => value.parse::<i64>().ok().map(|n| json!(n)),
                "number" => value.parse::<f64>().ok().map(|n| json!(n)),
                "string" => Some(json!(value)),
                _ => None,
            };
        }
    }
    if ty != "string" {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    let pathy = [
        "path",
        "dir",
        "file",
        "folder",
        "repo",
        "root",
        "workspace",
        "cwd",
    ];
    if !pathy.iter().any(|p| lower.contains(p)) {
        return None;
    }
    let want_file = lower.contains("file");
    (known.paths.iter())
        .find(|p| want_file == has_extension(p))
        .or_else(|| known.paths.first())
        .map(|p| json!(p))
}

fn has_extension(path: &str) -> bool {
    let last = path.rsplit('/').next().unwrap_or_default();
    last.contains('.') && !last.starts_with('.')
}

/// A neutral value of the type: a word (`example`, as long as `minLength` asks; `HEAD` for a
/// revision), a number in
/// the bounds (1 where it may be), `true`, one item of an array (or `minItems`), an object's
/// required members.
fn neutral(name: &str, prop: &Value, ty: &str, known: &Known) -> Value {
    match ty {
        "integer" | "number" => crate::contract::boundary::fill(&json!({
            "type": ty,
            "minimum": prop.get("minimum"),
            "exclusiveMinimum": prop.get("exclusiveMinimum"),
            "maximum": prop.get("maximum"),
        })),
        "boolean" => json!(true),
        "null" => Value::Null,
        "array" => {
            let n = prop["minItems"].as_u64().unwrap_or(1).max(1) as usize;
            let item = value_for(name.trim_end_matches('s'), &prop["items"], known);
            Value::Array(vec![item; n])
        }
        "object" => {
            let mut map = Map::new();
            for member in prop["required"].as_array().into_iter().flatten() {
                if let Some(member) = member.as_str() {
                    let v = value_for(member, &prop["properties"][member], known);
                    map.insert(member.to_owned(), v);
                }
            }
            Value::Object(map)
        }
        _ => {
            let min = prop["minLength"].as_u64().unwrap_or(0) as usize;
            // A revision of a repository: the one every repository with a commit has.
            let words = super::templates::name_words(name);
            let revision = ["revision", "rev", "ref", "commit", "sha", "treeish"];
            if words.iter().any(|w| revision.contains(&w.as_str())) && min <= 4 {
                return json!("HEAD");
            }
            // A link or an address by its name: the value of its format.
            let web = ["url", "uri", "link", "href", "endpoint", "website"];
            if words.iter().any(|w| web.contains(&w.as_str())) {
                return json!("https://example.com/");
            }
            if words.iter().any(|w| w == "email") {
                return json!("user@example.com");
            }
            let mut word = "example".to_owned();
            while word.chars().count() < min {
                word.push_str(" example");
            }
            match prop["maxLength"].as_u64() {
                Some(max) if (max as usize) < word.chars().count() => word
                    .chars()
                    .take(max.max(2) as usize)
                    .collect::<String>()
                    .into(),
                _ => json!(word),
            }
        }
    }
}

#[cfg(test)]
#[path = "values_tests.rs"]
mod tests;
