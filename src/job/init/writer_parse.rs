//! Reading the writer host's answers for `mcpeval init --writer-host`: the JSON object asked for
//! (bare, in a ```json fence, or with text around it), its requests, and the arguments each
//! expected call must carry, as the task format's matchers.

use serde_json::{json, Map, Value};

/// How much of an answer or of an item a rejection quotes.
const EXCERPT_CHARS: usize = 160;

/// `format`s whose strings a model copies verbatim: kept literal in an expected call.
const LITERAL_FORMATS: [&str; 13] = [
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "url",
    "uuid",
    "date",
    "date-time",
    "time",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
];

/// The last word of an argument's name that makes it an id or a path: its value is kept literal.
const LITERAL_NAMES: [&str; 16] = [
    "id",
    "ids",
    "uuid",
    "key",
    "slug",
    "path",
    "paths",
    "file",
    "filename",
    "dir",
    "directory",
    "url",
    "uri",
    "sha",
    "hash",
    "ref",
];

/// One request the writer wrote: the user's words and the arguments of the call they need.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub prompt: String,
    pub args: Map<String, Value>,
    /// A confusion request: the tool it must not call.
    pub other: Option<String>,
}

/// An item of an answer: a request, or why the item is not one.
pub type Item = Result<Written, String>;

/// The answer holds no JSON object of the shape asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the writer's answer is not the JSON asked for: {excerpt}")]
pub struct NotAsked {
    /// A short cut of the answer, on one line.
    pub excerpt: String,
}

impl NotAsked {
    fn of(answer: &str) -> Self {
        let excerpt = match answer.trim() {
            "" => "(an empty answer)".to_owned(),
            text => cut(text),
        };
        Self { excerpt }
    }
}

/// What the writer answered for one tool: its requests (`requests`) and its confusion requests
/// (`confusions`, optional), each in the order written.
pub fn tool_answer(answer: &str) -> Result<(Vec<Item>, Vec<Item>), NotAsked> {
    let object = find_object(answer, "requests").ok_or_else(|| NotAsked::of(answer))?;
    let requests = list(&object, "requests", true).ok_or_else(|| NotAsked::of(answer))?;
    let confusions = list(&object, "confusions", false).ok_or_else(|| NotAsked::of(answer))?;
    Ok((
        requests.iter().map(|v| item(v, false)).collect(),
        confusions.iter().map(|v| item(v, true)).collect(),
    ))
}

/// What the writer answered for the whole server: the near misses (`near_misses`) and the
/// general requests (`general`, optional); only their prompts count.
pub fn server_answer(answer: &str) -> Result<(Vec<Item>, Vec<Item>), NotAsked> {
    let object = find_object(answer, "near_misses").ok_or_else(|| NotAsked::of(answer))?;
    let near = list(&object, "near_misses", true).ok_or_else(|| NotAsked::of(answer))?;
    let general = list(&object, "general", false).ok_or_else(|| NotAsked::of(answer))?;
    let prompts = |values: &[Value]| -> Vec<Item> {
        (values.iter())
            .map(|v| {
                item(v, false).map(|w| Written {
                    args: Map::new(),
                    ..w
                })
            })
            .collect()
    };
    Ok((prompts(&near), prompts(&general)))
}

/// The first JSON object in `text` (at any `{`, so in a fence or after some words) that has
/// `key`. Only strict JSON counts: no trailing commas, no single quotes, no comments.
fn find_object(text: &str, key: &str) -> Option<Map<String, Value>> {
    text.match_indices('{').find_map(|(at, _)| {
        let mut values = serde_json::Deserializer::from_str(&text[at..]).into_iter::<Value>();
        match values.next() {
            Some(Ok(Value::Object(object))) if object.contains_key(key) => Some(object),
            _ => None,
        }
    })
}

/// The array at `key`: `None` when it is something else, or missing though `required`
/// (a missing optional one, or `null`, is empty).
fn list(object: &Map<String, Value>, key: &str, required: bool) -> Option<Vec<Value>> {
    match object.get(key) {
        Some(Value::Array(values)) => Some(values.clone()),
        None | Some(Value::Null) if !required => Some(Vec::new()),
        _ => None,
    }
}

/// One request: `{"prompt": "…", "args": {…}}`, and `"other": "…"` for a confusion request.
fn item(value: &Value, confusion: bool) -> Item {
    let shape = match confusion {
        true => r#"{"other": "…", "prompt": "…", "args": {…}}"#,
        false => r#"{"prompt": "…", "args": {…}}"#,
    };
    let wrong = || {
        format!(
            "an item is not the shape asked for ({shape}): {}",
            cut(&value.to_string())
        )
    };
    let Some(object) = value.as_object() else {
        return Err(wrong());
    };
    let Some(prompt) = object.get("prompt").and_then(Value::as_str) else {
        return Err(wrong());
    };
    let args = match object.get("args") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(args)) => args.clone(),
        Some(_) => return Err(wrong()),
    };
    let other = match (confusion, object.get("other").and_then(Value::as_str)) {
        (false, _) => None,
        (true, Some(other)) => Some(other.trim().to_owned()),
        (true, None) => return Err(wrong()),
    };
    Ok(Written {
        prompt: prompt.trim().to_owned(),
        args,
        other,
    })
}

/// The arguments as an expected call matches them: a string becomes `{regex: "(?i)<it,
/// escaped>"}` (a model may write "Login" for "login", or more words around it) unless a model
/// copies it verbatim: an enum value, an id, a path, a URL, a date (by the parameter's schema,
/// its name, or the value's look); an object is wrapped in `{exact: …}`; anything else is
/// literal.
pub fn expected_args(args: &Map<String, Value>, input_schema: &Value) -> Map<String, Value> {
    let properties = input_schema["properties"].as_object();
    (args.iter())
        .map(|(name, value)| {
            let prop = properties.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
            (name.clone(), matcher(name, value, prop))
        })
        .collect()
}

fn matcher(name: &str, value: &Value, prop: &Value) -> Value {
    match value {
        Value::String(s) if !literal_string(name, s, prop) => {
            json!({ "regex": format!("(?i){}", regex::escape(s)) })
        }
        Value::Object(_) => json!({ "exact": value }),
        _ => value.clone(),
    }
}

/// Whether a string argument is one a model copies verbatim.
fn literal_string(name: &str, value: &str, prop: &Value) -> bool {
    value.trim().is_empty()
        || is_enum(prop)
        || literal_format(prop)
        || id_name(name)
        || looks_like_id(value)
}

/// A parameter with `enum` or `const`, itself or in one of its `anyOf` / `oneOf` branches.
fn is_enum(prop: &Value) -> bool {
    let direct = |p: &Value| p.get("enum").is_some() || p.get("const").is_some();
    direct(prop)
        || ["anyOf", "oneOf"].iter().any(|k| {
            prop[*k]
                .as_array()
                .is_some_and(|branches| branches.iter().any(direct))
        })
}

fn literal_format(prop: &Value) -> bool {
    prop["format"]
        .as_str()
        .is_some_and(|f| LITERAL_FORMATS.contains(&f))
}

/// A name whose last word says id or path: `id`, `issue_id`, `issueId`, `file-path`, `url`.
fn id_name(name: &str) -> bool {
    let mut last = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        let starts_word = !c.is_alphanumeric() || (c.is_uppercase() && previous_lower);
        if starts_word {
            last.clear();
        }
        if c.is_alphanumeric() {
            last.extend(c.to_lowercase());
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
    }
    LITERAL_NAMES.contains(&last.as_str())
}

/// A value that reads as an id, a path or an address rather than words: one token with a digit,
/// a slash, `@` or `://` in it (`INV-2024-001`, `/tmp/notes`, `a@b.org`), or starting with `~`
/// or `.`.
fn looks_like_id(value: &str) -> bool {
    let one_token = !value.trim().contains(char::is_whitespace);
    value.contains("://")
        || value.starts_with(['/', '~', '.'])
        || value.contains(['/', '\\'])
        || (one_token && value.contains(|c: char| c.is_ascii_digit() || c == '@'))
}

/// `text` on one line, cut to [`EXCERPT_CHARS`] characters.
pub fn cut(text: &str) -> String {
    cut_to(text, EXCERPT_CHARS)
}

/// `text` on one line, cut to `max` characters.
pub fn cut_to(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"requests": [{"prompt": "Show me issue 3", "args": {"id": 3}}]}"#;

    fn prompts(items: &[Item]) -> Vec<&str> {
        items
            .iter()
            .filter_map(|i| i.as_ref().ok())
            .map(|w| w.prompt.as_str())
            .collect()
    }

    #[test]
    fn a_bare_object_a_fenced_one_and_one_with_text_around_it_are_read() {
        for answer in [
            GOOD.to_owned(),
            format!("```json\n{GOOD}\n```"),
            format!("Here are the requests you asked for:\n\n{GOOD}\n\nI hope they help."),
        ] {
            let (items, confusions) = tool_answer(&answer).unwrap();
            assert!(confusions.is_empty());
            assert_eq!(prompts(&items), ["Show me issue 3"], "{answer}");
            assert_eq!(items[0].as_ref().unwrap().args["id"], json!(3));
        }
    }

    #[test]
    fn garbage_an_empty_answer_and_loose_json_are_not_the_json_asked_for() {
        let garbage = tool_answer("I cannot help with that request.").unwrap_err();
        assert_eq!(
            garbage.to_string(),
            "the writer's answer is not the JSON asked for: I cannot help with that request."
        );
        assert_eq!(tool_answer("  ").unwrap_err().excerpt, "(an empty answer)");
        // A trailing comma and single quotes: not JSON, and nothing looser is read.
        assert!(tool_answer(r#"{"requests": [{"prompt": "x", "args": {}},]}"#).is_err());
        assert!(tool_answer("{'requests': [{'prompt': 'x'}]}").is_err());
        // A long answer is cut, on one line.
        let long = format!("no\n{}", "word ".repeat(100));
        let cut = tool_answer(&long).unwrap_err().excerpt;
        assert!(cut.starts_with("no word") && cut.ends_with('…'), "{cut}");
        assert!(cut.chars().count() <= EXCERPT_CHARS + 1);
    }

    #[test]
    fn the_wrong_shape_is_refused_whole_or_item_by_item() {
        // No `requests`, or `requests` not a list: the whole answer.
        assert!(tool_answer(r#"{"tasks": [{"prompt": "x"}]}"#).is_err());
        assert!(tool_answer(r#"{"requests": "Show me issue 3"}"#).is_err());
        assert!(tool_answer(r#"{"requests": [], "confusions": 3}"#).is_err());
        // One bad item among good ones: that item only.
        let (items, _) = tool_answer(
            r#"{"requests": [{"prompt": "Show me issue 3", "args": {"id": 3}},
                             {"text": "no prompt"}, {"prompt": "x", "args": [3]}, 7]}"#,
        )
        .unwrap();
        assert_eq!(items.len(), 4);
        assert_eq!(prompts(&items), ["Show me issue 3"]);
        let why = items[1].as_ref().unwrap_err();
        assert!(
            why.starts_with("an item is not the shape asked for"),
            "{why}"
        );
        assert!(why.contains("no prompt"), "{why}");
    }

    #[test]
    fn confusions_need_the_other_tool_and_follow_the_requests() {
        let (requests, confusions) = tool_answer(
            r#"{"requests": [{"prompt": "a", "other": "x"}], "confusions": [
                {"other": "find_issues", "prompt": "b", "args": {"query": "q"}},
                {"prompt": "c"}]}"#,
        )
        .unwrap();
        assert_eq!(requests[0].as_ref().unwrap().other, None);
        assert_eq!(
            confusions[0].as_ref().unwrap().other.as_deref(),
            Some("find_issues")
        );
        assert!(confusions[1].is_err());
    }

    #[test]
    fn the_server_answer_gives_near_misses_and_general_requests_without_args() {
        let (near, general) = server_answer(
            "```json\n{\"near_misses\": [{\"prompt\": \"How should I triage bugs?\", \"args\": \
             {\"x\": 1}}], \"general\": [{\"prompt\": \"Hello\"}]}\n```",
        )
        .unwrap();
        assert_eq!(prompts(&near), ["How should I triage bugs?"]);
        assert!(near[0].as_ref().unwrap().args.is_empty());
        assert_eq!(prompts(&general), ["Hello"]);
        assert!(server_answer(r#"{"general": []}"#).is_err());
        assert!(server_answer("").is_err());
    }

    #[test]
    fn a_string_argument_becomes_a_case_blind_regex_of_its_escaped_value() {
        let schema = json!({"properties": {"query": {"type": "string"}}});
        let mut args = Map::new();
        args.insert("query".into(), json!("login (Safari)"));
        args.insert("limit".into(), json!(5));
        let expected = expected_args(&args, &schema);
        assert_eq!(expected["query"], json!({"regex": r"(?i)login \(Safari\)"}));
        assert_eq!(expected["limit"], json!(5));
        // The regex matches what a model would send, whatever its case.
        let re = regex::Regex::new(expected["query"]["regex"].as_str().unwrap()).unwrap();
        assert!(re.is_match("LOGIN (safari) crash"));
        assert!(!re.is_match("login safari"));
    }

    #[test]
    fn enum_values_ids_paths_and_objects_stay_as_written() {
        let schema = json!({"properties": {
            "status": {"type": "string", "enum": ["open", "closed"]},
            "kind": {"anyOf": [{"const": "bug"}, {"const": "task"}]},
            "when": {"type": "string", "format": "date"},
        }});
        let mut args = Map::new();
        for (name, value) in [
            ("status", json!("open")),
            ("kind", json!("bug")),
            ("when", json!("yesterday")),
            ("issueId", json!("abc")),
            ("file_path", json!("notes")),
            ("where", json!("/tmp/fixture/notes")),
            ("invoice", json!("INV-2024-001")),
            ("filter", json!({"regex": "x"})),
            ("tags", json!(["a", "b"])),
        ] {
            args.insert(name.into(), value);
        }
        let expected = expected_args(&args, &schema);
        for name in [
            "status",
            "kind",
            "when",
            "issueId",
            "file_path",
            "where",
            "invoice",
            "tags",
        ] {
            assert_eq!(expected[name], args[name], "{name}");
        }
        assert_eq!(expected["filter"], json!({"exact": {"regex": "x"}}));
        // A name with `id` inside a word is not an id: `valid`, `width`.
        assert!(!id_name("valid") && !id_name("width") && id_name("project_key"));
    }
}
