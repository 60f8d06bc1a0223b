//! Model tasks from templates, for `mcpeval init` without a writer host: requests made from
//! each tool's description and input schema (its verb said another way, so the request does
//! not name the tool), no-tool requests, general and in the server's own domain, and a task for
//! each side of a pair of tools whose descriptions overlap, forbidding the other.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use super::args_from_schema::required;
use super::models::{refuse, Drafts, ExpectedCall, ModelDraft, Origin, Purpose, Rejected, Stage};
use super::phrasing::phrasings;
use super::values::{alternatives, eg, pick, value_for, Known, Source};

/// Verbs that mean the same for the confusion-pair rule.
const SAME_VERBS: &[&[&str]] = &[
    &[
        "search", "find", "lookup", "query", "look", "list", "locate",
    ],
    &[
        "get", "fetch", "read", "retrieve", "show", "describe", "open", "view",
    ],
    &["create", "add", "new", "make", "insert", "post"],
    &["update", "edit", "modify", "set", "change", "patch"],
    &["delete", "remove", "drop", "destroy", "erase"],
];

/// Words too common to tell two descriptions apart.
const STOP: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "by", "for", "and", "or", "with", "its", "their",
    "is", "are", "be", "it", "this", "that", "from", "as", "at", "each", "one", "all", "any",
    "returns", "return", "given", "e", "g", "use", "used", "can", "will", "into", "if",
];

/// The arguments chosen per tool (by the caller, from [`candidates`], as the server answers
/// them); a tool not in it gets its first candidate.
pub type Chosen = std::collections::BTreeMap<String, Map<String, Value>>;

/// Drafts model tasks for `tools` from their descriptions and schemas; `known` holds the paths
/// the server was started with or answered with, and its command line's flags.
pub fn draft(tools: &[rmcp::model::Tool], chosen: &Chosen, known: &Known) -> Drafts {
    let args_for = |t: &rmcp::model::Tool, known: &Known| -> Map<String, Value> {
        match chosen.get(t.name.as_ref()) {
            Some(args) => args.clone(),
            None => args_for(t, known),
        }
    };
    let mut out = Drafts::default();
    let push = |out: &mut Drafts, d: ModelDraft| match refuse(&d, tools) {
        None => out.drafts.push(d),
        Some(reason) => out.rejected.push(Rejected {
            tool: d.tool.clone(),
            draft: Some(d),
            stage: Stage::Template,
            reason,
            calls: Vec::new(),
        }),
    };
    let mut stubbed = BTreeSet::new();
    for tool in tools {
        if let Some(why) = super::todo::reason(tool, known) {
            out.todo.push(super::todo::Todo::new(tool, why));
            stubbed.insert(tool.name.to_string());
            continue;
        }
        for (i, prompt) in phrasings(tool, &args_for(tool, known))
            .into_iter()
            .enumerate()
        {
            let d = serves(tool, prompt, &args_for(tool, known), format!("{}", i + 1));
            push(&mut out, d);
        }
    }
    for (a, b) in overlapping(tools) {
        if stubbed.contains(a.name.as_ref()) || stubbed.contains(b.name.as_ref()) {
            continue;
        }
        for (this, other) in [(a, b), (b, a)] {
            let args = distinguishing(this, other, args_for(this, known), known);
            let Some(prompt) = phrasings(this, &args).into_iter().next() else {
                continue;
            };
            let mut d = serves(this, prompt, &args, format!("not-{}", slug(&other.name)));
            d.id = format!("pair-{}-not-{}", slug(&this.name), slug(&other.name));
            d.forbidden = vec![other.name.to_string()];
            d.purpose = Purpose::Confusion {
                other: other.name.to_string(),
            };
            push(&mut out, d);
        }
    }
    for d in no_tool(tools) {
        push(&mut out, d);
    }
    out
}

fn slug(name: &str) -> String {
    super::draft::slug(name)
}

/// A task for `tool` with `prompt`, expecting the call with `args` (strings matched ignoring
/// case, as a regex; numbers, booleans, enum values and paths exactly).
pub(super) fn serves(
    tool: &rmcp::model::Tool,
    prompt: String,
    args: &Map<String, Value>,
    n: String,
) -> ModelDraft {
    let schema = Value::Object((*tool.input_schema).clone());
    let expected: Map<String, Value> = (args.iter())
        .map(|(k, v)| {
            let exact = schema["properties"][k].get("enum").is_some() || looks_like_path(v);
            let value = match (v, exact) {
                (Value::String(s), false) => json!({"regex": format!("(?i){}", regex::escape(s))}),
                _ => v.clone(),
            };
            (k.clone(), value)
        })
        .collect();
    ModelDraft {
        id: format!("model-{}-{n}", slug(&tool.name)),
        tool: Some(tool.name.to_string()),
        prompt,
        call: Some(ExpectedCall {
            tool: tool.name.to_string(),
            args: expected,
            is_error: Some(false),
        }),
        forbidden: Vec::new(),
        purpose: Purpose::Serves,
        origin: Origin::Templated,
        first_turn: None,
    }
}

/// A path or an address, matched exactly: `{sandbox}` too (the trial's copy, substituted in
/// the task before it runs, which a regex is not).
fn looks_like_path(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        s.starts_with('/') || s.contains("://") || s.starts_with("~/") || s.starts_with("{sandbox")
    })
}

/// The argument sets to try for a tool's requests, best first: the hinted values
/// ([`args_for`]), other known paths for a path, each value's alternatives, then the call
/// tasks' arguments.
pub fn candidates(tool: &rmcp::model::Tool, known: &Known) -> Vec<Map<String, Value>> {
    let hinted = args_for(tool, known);
    let filled =
        super::args_from_schema::valid_args(&Value::Object((*tool.input_schema).clone()), known);
    let mut out = vec![hinted.clone()];
    // A path parameter tries the other known paths too (a file where a directory failed).
    for (key, value) in &hinted {
        if !value
            .as_str()
            .is_some_and(|v| known.paths.iter().any(|p| p == v))
        {
            continue;
        }
        for other in known.paths.iter().take(8) {
            let mut args = hinted.clone();
            args.insert(key.clone(), json!(other));
            if !out.contains(&args) {
                out.push(args);
            }
        }
    }
    // Then each drafted value's alternatives (`id` 1 where the description's 42 is refused).
    let schema = Value::Object((*tool.input_schema).clone());
    for (key, value) in &hinted {
        for alt in alternatives(key, &schema["properties"][key.as_str()], known) {
            let mut args = hinted.clone();
            args.insert(key.clone(), alt);
            if &args[key.as_str()] != value && !out.contains(&args) {
                out.push(args);
            }
        }
    }
    if filled != hinted {
        let mut merged = hinted;
        for (k, v) in filled {
            merged.insert(k, v);
        }
        if !out.contains(&merged) {
            out.push(merged);
        }
    }
    out
}

/// The arguments a request carries: every required parameter, and the optional ones the schema
/// or the description gives an example for (not those that would carry their default); values
/// as [`super::values`] picks them.
pub fn args_for(tool: &rmcp::model::Tool, known: &Known) -> Map<String, Value> {
    let schema = Value::Object((*tool.input_schema).clone());
    let required = required(&schema);
    let mut args = Map::new();
    let Some(props) = schema["properties"].as_object() else {
        return args;
    };
    for (name, prop) in props {
        let hinted =
            prop.get("examples").is_some() || prop["description"].as_str().and_then(eg).is_some();
        if required.contains(&name.as_str()) {
            args.insert(name.clone(), value_for(name, prop, known));
            continue;
        }
        let (value, source) = pick(name, prop, known);
        if hinted && source != Source::Default && !value.is_null() {
            args.insert(name.clone(), value);
        }
    }
    args
}

/// A name's words, lower case: `search_issues` and `searchIssues` → `search`, `issues` (the
/// suggestion rule's splitting, so `getURL` is `get`, `url`).
pub fn name_words(name: &str) -> Vec<String> {
    crate::suite::name_words(name)
}

/// The pairs of tools whose purposes overlap: their names share a thing and their verbs mean
/// the same (`search_issues`, `find_issues`), or their descriptions share most of their words.
fn overlapping(tools: &[rmcp::model::Tool]) -> Vec<(&rmcp::model::Tool, &rmcp::model::Tool)> {
    let mut out = Vec::new();
    for (i, a) in tools.iter().enumerate() {
        for b in &tools[i + 1..] {
            if same_purpose(a, b) {
                out.push((a, b));
            }
        }
    }
    out
}

fn same_purpose(a: &rmcp::model::Tool, b: &rmcp::model::Tool) -> bool {
    let (wa, wb) = (name_words(&a.name), name_words(&b.name));
    let class = |w: &str| SAME_VERBS.iter().position(|c| c.contains(&w));
    let verbs = match (wa.first(), wb.first()) {
        (Some(x), Some(y)) => x == y || (class(x).is_some() && class(x) == class(y)),
        _ => false,
    };
    let things = |w: &[String]| -> BTreeSet<String> {
        w.iter()
            .skip(1)
            .map(|s| s.trim_end_matches('s').to_owned())
            .collect()
    };
    let shared = things(&wa).intersection(&things(&wb)).count() > 0;
    if verbs && shared && wa != wb {
        return true;
    }
    let words = |t: &rmcp::model::Tool| -> BTreeSet<String> {
        (t.description.as_deref().unwrap_or_default())
            .split(|c: char| !c.is_alphanumeric())
            .map(|w| w.to_ascii_lowercase().trim_end_matches('s').to_owned())
            .filter(|w| w.len() > 1 && !STOP.contains(&w.as_str()))
            .collect()
    };
    let (da, db) = (words(a), words(b));
    let union = da.union(&db).count();
    union >= 6 && da.intersection(&db).count() * 10 >= union * 6
}

/// The arguments that set `this` apart from `other`: its own, plus a parameter `other` lacks
/// (with a value), so the request is one only `this` serves.
fn distinguishing(
    this: &rmcp::model::Tool,
    other: &rmcp::model::Tool,
    mut args: Map<String, Value>,
    known: &Known,
) -> Map<String, Value> {
    let theirs = other
        .input_schema
        .get("properties")
        .and_then(Value::as_object);
    let schema = Value::Object((*this.input_schema).clone());
    if let Some(props) = schema["properties"].as_object() {
        for (name, prop) in props {
            let lacks = theirs.is_none_or(|t| !t.contains_key(name));
            let concrete = prop.get("enum").is_some() || prop.get("examples").is_some();
            if lacks && concrete && !args.contains_key(name) {
                args.insert(name.clone(), value_for(name, prop, known));
            }
        }
    }
    args
}

/// No-tool tasks: three general requests, and near misses in the server's domain (what a
/// thing the tools deal with is, in general).
fn no_tool(tools: &[rmcp::model::Tool]) -> Vec<ModelDraft> {
    let general = [
        ("no-tool-greeting", "Hello! How are you today?"),
        ("no-tool-capital", "What is the capital of France?"),
        ("no-tool-haiku", "Write a haiku about autumn leaves."),
    ];
    let mut out: Vec<ModelDraft> = (general.iter())
        .map(|(id, prompt)| no_tool_draft(id, prompt, Purpose::NoToolGeneral))
        .collect();
    let mut things: Vec<String> = Vec::new();
    for tool in tools {
        for w in name_words(&tool.name).into_iter().skip(1) {
            let w = w.trim_end_matches('s').to_owned();
            if w.len() > 2 && !things.contains(&w) {
                things.push(w);
            }
        }
    }
    if let Some(thing) = things.first() {
        let prompt = format!(
            "In one sentence and in general terms, what is a {thing}? No need to look anything up."
        );
        out.push(no_tool_draft(
            "no-tool-near-what-is",
            &prompt,
            Purpose::NearMiss,
        ));
    }
    if let [a, b, ..] = things.as_slice() {
        let prompt = format!(
            "Without looking anything up, explain briefly how a {a} differs from a {b} in general."
        );
        out.push(no_tool_draft(
            "no-tool-near-differ",
            &prompt,
            Purpose::NearMiss,
        ));
    }
    out
}

fn no_tool_draft(id: &str, prompt: &str, purpose: Purpose) -> ModelDraft {
    ModelDraft {
        id: id.to_owned(),
        tool: None,
        prompt: prompt.to_owned(),
        call: None,
        forbidden: Vec::new(),
        purpose,
        origin: Origin::Templated,
        first_turn: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_support::listed_tool as tool;

    #[test]
    fn a_request_says_the_verb_another_way_and_carries_the_values() {
        let t = tool(
            "search_issues",
            "Search issues by keywords in their title. Filter by project.",
            json!({"type": "object", "properties": {
                "query": {"type": "string"},
                "project": {"type": "string", "examples": ["apollo"]}},
                "required": ["query"]}),
        );
        let args = args_for(&t, &Known::default());
        assert_eq!(
            Value::Object(args.clone()),
            json!({"query": "example", "project": "apollo"})
        );
        let p = phrasings(&t, &args);
        assert_eq!(p.len(), 3);
        assert_eq!(
            p[0],
            "Look for issues by keywords in their title, with project \"apollo\" and query \"example\"."
        );
        assert!(p
            .iter()
            .all(|p| crate::suite::named_in(p, "search_issues").is_none()));
    }

    #[test]
    fn values_come_from_the_description_and_known_paths() {
        let t = tool(
            "get_issue",
            "Get one issue.",
            json!({"type": "object", "properties": {
                "id": {"type": "integer", "description": "The issue number, e.g. 42"}}}),
        );
        assert_eq!(args_for(&t, &Known::default())["id"], json!(42));
        let f = tool(
            "read_text_file",
            "Read a file.",
            json!({"type": "object", "properties": {"path": {"type": "string"}},
                   "required": ["path"]}),
        );
        let paths = ["/tmp/d".to_owned(), "/tmp/d/notes.txt".to_owned()];
        assert_eq!(
            args_for(&f, &Known::paths(&paths))["path"],
            json!("/tmp/d"),
            "a path, not a file"
        );
    }

    #[test]
    fn overlapping_tools_get_a_task_each_that_forbids_the_other() {
        let s = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let tools = [
            tool("search_issues", "Looks up issues.", s.clone()),
            tool("find_issues", "Find issues that match a text.", s.clone()),
            tool("list_projects", "List every project.", s),
        ];
        let drafts = draft(&tools, &Chosen::new(), &Known::default());
        let pairs: Vec<&ModelDraft> = (drafts.drafts.iter())
            .filter(|d| matches!(d.purpose, Purpose::Confusion { .. }))
            .collect();
        assert_eq!(pairs.len(), 2, "{pairs:?}");
        assert_eq!(pairs[0].forbidden, ["find_issues"]);
        assert_eq!(pairs[1].forbidden, ["search_issues"]);
        assert!(drafts.drafts.iter().any(|d| d.purpose == Purpose::NearMiss));
        assert!(drafts.drafts.iter().filter(|d| d.is_no_tool()).count() >= 4);
    }
}
