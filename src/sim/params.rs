//! A tool's parameters as the sim reads them: name, schema, and what kind of value each wants.

use std::sync::LazyLock;

use serde_json::Value;

use super::lexicon::FastSet as HashSet;
use super::text::{content_stems, stem, words};

/// What a parameter is for, guessed from its name and description (bit flags).
pub(super) type Roles = u16;
pub(super) const TEXT: Roles = 1;
pub(super) const QUERY: Roles = 1 << 1;
pub(super) const ID: Roles = 1 << 2;
pub(super) const LIMIT: Roles = 1 << 3;
pub(super) const CONTAINER: Roles = 1 << 4;
pub(super) const PERSON: Roles = 1 << 5;
pub(super) const LOCATION: Roles = 1 << 6;
pub(super) const SOURCE: Roles = 1 << 7;
pub(super) const TARGET: Roles = 1 << 8;
pub(super) const TIME: Roles = 1 << 9;
pub(super) const DATE: Roles = 1 << 10;
pub(super) const EMAIL: Roles = 1 << 11;
pub(super) const URL: Roles = 1 << 12;
/// A file or directory path (or several).
pub(super) const PATH: Roles = 1 << 13;

struct Vocab {
    text: HashSet<String>,
    query: HashSet<String>,
    query_desc: HashSet<String>,
    id: HashSet<String>,
    limit: HashSet<String>,
    container: HashSet<String>,
    person: HashSet<String>,
    location: HashSet<String>,
    source: HashSet<String>,
    target: HashSet<String>,
    path: HashSet<String>,
}

fn set(words: &[&str]) -> HashSet<String> {
    words.iter().map(|w| stem(w)).collect()
}

static VOCAB: LazyLock<Vocab> = LazyLock::new(|| Vocab {
    text: set(&[
        "title",
        "name",
        "text",
        "body",
        "content",
        "contents",
        "message",
        "comment",
        "summary",
        "description",
        "observation",
        "subject",
        "label",
        "caption",
        "headline",
        "note",
        "prompt",
    ]),
    query: set(&[
        "query", "q", "search", "keyword", "keywords", "term", "pattern", "filter",
    ]),
    query_desc: set(&["find", "search", "look", "query", "match", "keyword"]),
    id: set(&["id", "number", "num", "no", "index", "idx", "identifier"]),
    limit: set(&[
        "limit", "max", "maximum", "count", "top", "size", "per", "page", "first",
    ]),
    container: set(&[
        "project",
        "repo",
        "repository",
        "workspace",
        "namespace",
        "space",
        "board",
        "folder",
        "team",
        "org",
        "organization",
        "category",
        "collection",
        "channel",
        "key",
        "bucket",
        "database",
    ]),
    person: set(&[
        "assign",
        "assignee",
        "user",
        "owner",
        "person",
        "member",
        "recipient",
        "author",
        "reviewer",
    ]),
    location: set(&[
        "timezone", "zone", "city", "location", "place", "region", "country", "locale",
    ]),
    source: set(&["source", "from", "origin"]),
    target: set(&["target", "destination", "dest", "to"]),
    path: set(&[
        "path",
        "paths",
        "file",
        "files",
        "filepath",
        "filename",
        "dir",
        "directory",
        "directories",
        "cwd",
    ]),
});

/// One property of an object schema.
#[derive(Debug)]
pub(super) struct Param<'s> {
    pub name: &'s str,
    pub schema: &'s Value,
    pub required: bool,
    /// Stems of the name's words, head noun first (`entityType` → `typ`, `entity`).
    pub keys: Vec<String>,
    pub desc: &'s str,
    pub roles: Roles,
}

impl Param<'_> {
    pub fn is(&self, role: Roles) -> bool {
        self.roles & role != 0
    }

    /// The JSON type the schema asks for (`string` when it does not say).
    pub fn ty(&self) -> &str {
        json_type(self.schema)
    }

    pub fn enum_values(&self) -> Option<&Vec<Value>> {
        self.schema.get("enum").and_then(Value::as_array)
    }
}

/// The JSON type of a schema; the first non-null one of a list.
pub(super) fn json_type(schema: &Value) -> &str {
    match schema.get("type") {
        Some(Value::String(t)) => t,
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string"),
        _ if schema.get("properties").is_some() => "object",
        _ if schema.get("items").is_some() => "array",
        _ => "string",
    }
}

/// The properties of an object schema, in schema order.
pub(super) fn params(schema: &Value) -> Vec<Param<'_>> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    props
        .iter()
        .map(|(name, schema)| {
            let desc = schema
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            let mut keys: Vec<String> = words(name).into_iter().map(|w| w.stem).collect();
            keys.reverse();
            let roles = roles(&keys, desc, schema);
            Param {
                name,
                schema,
                required: required.contains(&name.as_str()),
                keys,
                desc,
                roles,
            }
        })
        .collect()
}

fn roles(keys: &[String], desc: &str, schema: &Value) -> Roles {
    let v = &*VOCAB;
    let ty = json_type(schema);
    let any = |set: &HashSet<String>| keys.iter().any(|k| set.contains(k));
    let d = content_stems(desc);
    let any_desc = |set: &HashSet<String>| d.iter().any(|k| set.contains(k));
    let format = schema.get("format").and_then(Value::as_str).unwrap_or("");
    let mut r: Roles = 0;
    let stringy = ty == "string" || ty == "array";
    if stringy && any(&v.query) || stringy && any(&v.text) && any_desc(&v.query_desc) {
        r |= QUERY;
    } else if stringy && any(&v.text) {
        r |= TEXT;
    }
    let numeric = matches!(ty, "integer" | "number");
    if any(&v.limit) {
        r |= LIMIT;
    } else if any(&v.id) || numeric && d.iter().any(|s| v.id.contains(s)) {
        r |= ID;
    }
    // Containers, people and places by the name first; by the description only when the name
    // says none of them ("Project key to search in" names a container, "…by the user" no person).
    let flags = [
        (CONTAINER, &v.container),
        (PERSON, &v.person),
        (LOCATION, &v.location),
    ];
    for (role, set) in flags {
        if any(set) {
            r |= role;
        }
    }
    if r & (TEXT | QUERY | CONTAINER | PERSON | LOCATION) == 0 {
        if let Some((role, _)) = flags.iter().find(|(_, set)| any_desc(set)) {
            r |= role;
        }
    }
    // A path by its name, or by a description that speaks of paths when the name says nothing
    // else ("path": "Array of file paths to read").
    let path_desc = d.iter().any(|s| s == "path") && r & (TEXT | QUERY | LIMIT | ID) == 0;
    if stringy && (any(&v.path) || path_desc) {
        r |= PATH;
    }
    if any(&v.source) {
        r |= SOURCE;
    }
    if any(&v.target) {
        r |= TARGET;
    }
    let time_key = keys.iter().any(|k| k == "tim");
    if format == "time" || time_key && (desc.contains("HH:MM") || desc.contains("hh:mm")) {
        r |= TIME;
    }
    if format.starts_with("date") || keys.iter().any(|k| k == "dat") {
        r |= DATE;
    }
    if format == "email" || keys.iter().any(|k| k == "email") {
        r |= EMAIL;
    }
    if format.starts_with("ur") || keys.iter().any(|k| matches!(k.as_str(), "url" | "uri")) {
        r |= URL;
    }
    r
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn roles_from_names_and_descriptions() {
        let schema = json!({"type": "object", "required": ["query"], "properties": {
            "query": {"type": "string", "description": "Keywords"},
            "text": {"type": "string", "description": "Text to find in issues"},
            "project": {"type": "string", "description": "Project key, e.g. apollo"},
            "id": {"type": "integer", "description": "The issue number"},
            "limit": {"type": "integer", "description": "Maximum number of results"},
            "assignee": {"type": "string"},
            "source_timezone": {"type": "string"},
            "time": {"type": "string", "description": "Time in 24-hour format (HH:MM)"},
            "entityType": {"type": "string"}
        }});
        let ps = params(&schema);
        let get = |n: &str| ps.iter().find(|p| p.name == n).unwrap();
        assert!(get("query").is(QUERY) && get("query").required);
        assert!(get("text").is(QUERY));
        assert!(get("project").is(CONTAINER));
        assert!(get("id").is(ID) && !get("limit").is(ID) && get("limit").is(LIMIT));
        assert!(get("assignee").is(PERSON));
        assert!(get("source_timezone").is(SOURCE | LOCATION));
        assert!(get("time").is(TIME));
        assert_eq!(get("entityType").keys, ["typ", "entity"]);
    }
}
