//! Two-turn model tasks of `mcpeval init` (issue 52): where the server has a tool that lists or
//! searches and a tool that gets one item by an id the list's answer carries, a conversation
//! whose first turn finds items and whose second asks for "the first one".
//!
//! Pairs are read from names, descriptions and input schemas, as the other templates read them;
//! the list tool is called (only when annotated `readOnlyHint: true`, as init calls no other) to
//! learn the id its first item carries, which the second turn's expected call names.

use rmcp::model::Tool;
use serde_json::{Map, Value};

use super::models::{refuse, DraftTurn, ModelDraft, Purpose, Rejected, Stage};
use super::templates::{candidates, name_words, serves};
use super::values::Known;
use super::InitRequest;

/// Verbs of a tool that lists or searches.
const LIST_VERBS: &[&str] = &[
    "search", "find", "list", "query", "lookup", "look", "browse",
];
/// Verbs of a tool that gets one item.
const GET_VERBS: &[&str] = &[
    "get", "fetch", "read", "retrieve", "show", "describe", "view", "open",
];
/// How many argument sets are tried on the list tool before the pair is given up.
const TRIES: usize = 8;

/// A list tool and a tool that gets one of its items by the parameter `id`.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair<'t> {
    pub list: &'t Tool,
    pub get: &'t Tool,
    /// The get tool's one required parameter, an id (`id`, `issue_id`, `issueId`, `key`).
    pub id: String,
}

/// The pairs among `tools`: a list tool (its name's verb lists or searches) and, for each, the
/// first tool whose name's verb gets one thing that the list tool's name or description names
/// (`search_issues` / `get_issue`), and whose only required parameter is an id.
pub fn pairs(tools: &[Tool]) -> Vec<Pair<'_>> {
    let mut out = Vec::new();
    for list in tools.iter().filter(|t| verb_in(t, LIST_VERBS)) {
        let listed = listed_things(list);
        let get = tools.iter().find_map(|get| {
            if get.name == list.name || !verb_in(get, GET_VERBS) {
                return None;
            }
            let thing = name_words(&get.name).get(1).map(|w| singular(w))?;
            let id = id_parameter(get)?;
            listed.contains(&thing).then_some((get, id))
        });
        if let Some((get, id)) = get {
            out.push(Pair { list, get, id });
        }
    }
    out
}

/// Drafts one conversation per pair whose list tool answers, with some argument set init may
/// send, items that carry the id; a pair none answers so is said in `notes`.
pub async fn drafts(
    request: &InitRequest,
    tools: &[Tool],
    known: &Known,
    notes: &mut Vec<String>,
) -> (Vec<ModelDraft>, Vec<Rejected>) {
    let pairs = pairs(tools);
    let mut drafted = (Vec::new(), Vec::new());
    if pairs.is_empty() {
        return drafted;
    }
    let Ok(conn) = crate::mcp::McpConnection::connect(&request.server).await else {
        return drafted;
    };
    for pair in pairs {
        let (list, get) = (&pair.list.name, &pair.get.name);
        if !crate::contract::writes::is_read_only(pair.list) {
            notes.push(format!(
                "no conversation of `{list}` then `{get}`: `{list}` is not annotated \
                 readOnlyHint: true, so init does not call it to learn the ids it lists"
            ));
            continue;
        }
        let mut found = None;
        for args in tries(pair.list, known).into_iter().take(TRIES) {
            let sent = conn
                .call_tool(list, Some(args.clone()), request.timeout)
                .await;
            if let Ok(crate::mcp::CallOutcome::Result {
                is_error: false,
                text,
                ..
            }) = sent
            {
                if let Some(id) = first_id(&text, &pair.id) {
                    found = Some((args, id));
                    break;
                }
            }
        }
        let Some((args, id)) = found else {
            notes.push(format!(
                "no conversation of `{list}` then `{get}`: no answer of `{list}` to the \
                 arguments init drafted listed an item with `{}`",
                pair.id
            ));
            continue;
        };
        let Some(draft) = draft(&pair, &args, id) else {
            continue;
        };
        match refuse(&draft, tools) {
            None => drafted.0.push(draft),
            Some(reason) => drafted.1.push(Rejected {
                tool: draft.tool.clone(),
                draft: Some(draft),
                stage: Stage::Template,
                reason,
                calls: Vec::new(),
            }),
        }
    }
    conn.close().await;
    drafted
}

/// The conversation of a pair: turn 1 the list tool's first templated request with `args`,
/// turn 2 "Show me the first THING you found", expecting the get tool with `id`.
pub fn draft(pair: &Pair<'_>, args: &Map<String, Value>, id: Value) -> Option<ModelDraft> {
    let prompt = super::phrasing::phrasings(pair.list, args)
        .into_iter()
        .next()?;
    let first = serves(pair.list, prompt, args, String::new());
    let thing = name_words(&pair.get.name)[1..].join(" ");
    let second = second_request(pair.get, &thing);
    let mut expected = Map::new();
    expected.insert(pair.id.clone(), id);
    let (list, get) = (pair.list.name.to_string(), pair.get.name.to_string());
    Some(ModelDraft {
        id: format!(
            "conversation-{}-then-{}",
            super::draft::slug(&list),
            super::draft::slug(&get)
        ),
        tool: Some(get.clone()),
        prompt: second,
        call: Some(super::models::ExpectedCall {
            tool: get,
            args: expected,
            is_error: Some(false),
        }),
        forbidden: Vec::new(),
        purpose: Purpose::Conversation { list },
        origin: super::models::Origin::Templated,
        first_turn: Some(DraftTurn {
            prompt: first.prompt,
            call: first.call?,
        }),
    })
}

/// The second turn's request, from the get tool's description as templates say it, its one
/// thing made "the first" of those found: `Get the full details of one issue by its id` →
/// "Show me the full details of the first issue, please."; without such a phrase, "Show me the
/// first issue, please."
fn second_request(get: &Tool, thing: &str) -> String {
    let (say, rest) = super::phrasing::request_of(get).unwrap_or_default();
    let say = match say.is_empty() {
        true => "Show me".to_owned(),
        false => say,
    };
    let head = thing.split(' ').next().unwrap_or_default();
    let words: Vec<&str> = rest.split_whitespace().collect();
    let at = (0..words.len().saturating_sub(1)).find(|&i| {
        let next = words[i + 1].trim_matches(|c: char| !c.is_alphanumeric());
        ["one", "a", "an", "the", "single"].contains(&words[i].to_lowercase().as_str())
            && singular(next) == head
    });
    let lead = at.map(|i| words[..i].join(" ")).unwrap_or_default();
    let phrase = [say.as_str(), lead.as_str(), "the first", thing]
        .iter()
        .filter(|w| !w.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    let mut chars = phrase.chars();
    let capital: String = chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default();
    format!("{capital}, please.")
}

/// The argument sets to try on the list tool: its candidates, then each with its text
/// parameters (a query, a keyword) set to a word of the titles the server answered with.
fn tries(list: &Tool, known: &Known) -> Vec<Map<String, Value>> {
    let mut out = candidates(list, known);
    let schema = Value::Object((*list.input_schema).clone());
    let Some(first) = out.first().cloned() else {
        return out;
    };
    let texts: Vec<&String> = (first.keys())
        .filter(|k| {
            let prop = &schema["properties"][k.as_str()];
            prop["type"] == "string" && prop.get("enum").is_none()
        })
        .filter(|k| crate::suite::name_words(k).iter().any(|w| is_query_word(w)))
        .collect();
    for word in &known.words {
        let mut args = first.clone();
        for key in &texts {
            args.insert((*key).clone(), Value::from(word.as_str()));
        }
        if !texts.is_empty() && !out.contains(&args) {
            out.push(args);
        }
    }
    out
}

fn is_query_word(word: &str) -> bool {
    matches!(
        word,
        "query" | "q" | "keyword" | "keywords" | "text" | "search" | "term" | "terms"
    )
}

/// The first item's `id` in a list answer: the first list of objects in the JSON (depth
/// first, in the answer's order), its first object's `id` (a string or a number); `None` when
/// the answer is not JSON or lists nothing that carries it.
pub fn first_id(text: &str, id: &str) -> Option<Value> {
    fn walk(value: &Value, id: &str) -> Option<Value> {
        match value {
            Value::Array(items) => match items.first() {
                Some(Value::Object(item)) => match item.get(id) {
                    Some(v @ (Value::String(_) | Value::Number(_))) => Some(v.clone()),
                    _ => None,
                },
                _ => items.iter().find_map(|i| walk(i, id)),
            },
            Value::Object(entries) => entries.values().find_map(|v| walk(v, id)),
            _ => None,
        }
    }
    walk(&serde_json::from_str(text).ok()?, id)
}

/// Whether the tool's name starts with one of `verbs`.
fn verb_in(tool: &Tool, verbs: &[&str]) -> bool {
    name_words(&tool.name)
        .first()
        .is_some_and(|w| verbs.contains(&w.as_str()))
}

/// The things a list tool lists, singular: the words of its name after the verb
/// (`search_issues`), or, for a bare verb (`search`), of its description's first sentence.
fn listed_things(list: &Tool) -> Vec<String> {
    let mut words: Vec<String> = name_words(&list.name).into_iter().skip(1).collect();
    if words.is_empty() {
        let description = list.description.as_deref().unwrap_or_default();
        let sentence = description.split(". ").next().unwrap_or_default();
        words = crate::suite::name_words(sentence);
    }
    words.iter().map(|w| singular(w)).collect()
}

/// A plural made singular the simple way (`issues` → `issue`, `entries` → `entry`).
fn singular(word: &str) -> String {
    let word = word.to_lowercase();
    if let Some(stem) = word.strip_suffix("ies") {
        return format!("{stem}y");
    }
    match word.strip_suffix('s') {
        Some(stem) if !stem.ends_with('s') && stem.len() > 2 => stem.to_owned(),
        _ => word,
    }
}

/// The tool's only required parameter when it is an id: named `id`, `key`, or ending in one
/// (`issue_id`, `issueId`), of type integer, number or string.
fn id_parameter(tool: &Tool) -> Option<String> {
    let schema = Value::Object((*tool.input_schema).clone());
    let required = super::args_from_schema::required(&schema);
    let [only] = required.as_slice() else {
        return None;
    };
    let words = crate::suite::name_words(only);
    let last = words.last()?;
    let kind = schema["properties"][*only]["type"].as_str();
    let id_like = matches!(last.as_str(), "id" | "key");
    let typed = matches!(kind, Some("integer" | "number" | "string") | None);
    (id_like && typed).then(|| (*only).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str, schema: Value, read_only: bool) -> Tool {
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        let tool = Tool::new(
            name.to_owned(),
            description.to_owned(),
            std::sync::Arc::new(schema),
        );
        match read_only {
            true => tool.with_annotations(rmcp::model::ToolAnnotations::new().read_only(true)),
            false => tool,
        }
    }

    fn demo() -> Vec<Tool> {
        let query = json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "Keywords"},
            "project": {"type": "string"}}, "required": ["query"]});
        let id = json!({"type": "object", "properties": {"id": {"type": "integer"}},
            "required": ["id"]});
        let update = json!({"type": "object", "properties": {"id": {"type": "integer"},
            "status": {"type": "string"}}, "required": ["id", "status"]});
        vec![
            tool(
                "list_projects",
                "List the projects.",
                json!({"type": "object"}),
                true,
            ),
            tool("search_issues", "Search issues by keywords.", query, true),
            tool("update_issue", "Update one issue.", update, false),
            tool("get_issue", "Get one issue by its id.", id, true),
        ]
    }

    #[test]
    fn a_search_pairs_with_the_get_of_what_it_lists_by_its_id() {
        let tools = demo();
        let found = pairs(&tools);
        let names: Vec<(&str, &str, &str)> = (found.iter())
            .map(|p| (p.list.name.as_ref(), p.get.name.as_ref(), p.id.as_str()))
            .collect();
        // `list_projects` lists projects, which no tool gets; `update_issue` needs more than
        // an id.
        assert_eq!(names, [("search_issues", "get_issue", "id")]);
        let getter = json!({"type": "object", "properties": {"issueKey": {"type": "string"}},
            "required": ["issueKey"]});
        let tools = vec![
            tool(
                "find_issues",
                "Find issues.",
                json!({"type": "object"}),
                true,
            ),
            tool("fetch_issue", "Fetch an issue.", getter, true),
        ];
        assert_eq!(pairs(&tools)[0].id, "issueKey");
    }

    #[test]
    fn the_first_item_s_id_is_read_from_the_list_answer() {
        let answer = r#"{"issues": [{"id": 7, "title": "a"}, {"id": 2, "title": "b"}]}"#;
        assert_eq!(first_id(answer, "id"), Some(json!(7)));
        assert_eq!(first_id(r#"[{"key": "AP-1"}]"#, "key"), Some(json!("AP-1")));
        assert_eq!(first_id(r#"{"issues": []}"#, "id"), None, "nothing found");
        assert_eq!(first_id("issue #7: a", "id"), None, "not JSON");
        assert_eq!(first_id(r#"{"issues": [{"title": "a"}]}"#, "id"), None);
    }

    #[test]
    fn the_draft_is_two_turns_the_loader_takes_and_asks_for_the_first_one() {
        let tools = demo();
        let pair = pairs(&tools).remove(0);
        let mut args = Map::new();
        args.insert("query".into(), json!("login"));
        let draft = draft(&pair, &args, json!(1)).expect("a draft");
        assert_eq!(draft.id, "conversation-search-issues-then-get-issue");
        assert_eq!(refuse(&draft, &tools), None);
        let text = draft.yaml("c");
        let suite = crate::suite::load_sources(&[("t.yaml".into(), text.clone())])
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        let task = &suite.tasks[0];
        assert_eq!(task.turns.len(), 2, "{text}");
        assert_eq!(task.turns[1].prompt, "Show me the first issue, please.");
        let first = task.turns[0].expect.as_ref().unwrap();
        assert_eq!(first.calls[0].tool, "search_issues".into());
        let second = task.turns[1].expect.as_ref().unwrap();
        assert_eq!(second.calls[0].tool, "get_issue".into());
        assert_eq!(
            second.calls[0].args["id"],
            crate::suite::ArgMatcher::Literal(json!(1))
        );
        assert_eq!(
            second.calls[0].result.as_ref().and_then(|r| r.is_error),
            Some(false)
        );
        // A first turn that names its tool is refused, as a one-turn draft would be.
        let mut named = draft.clone();
        if let Some(first) = &mut named.first_turn {
            first.prompt = "Use search_issues for login".into();
        }
        assert!(refuse(&named, &tools)
            .unwrap()
            .starts_with("its first turn: the request names the tool `search_issues`"));
    }

    #[test]
    fn the_second_request_says_the_get_tool_s_request_of_the_first_one() {
        let get = |description: &str| {
            let schema = json!({"type": "object", "properties": {"id": {"type": "integer"}}});
            tool("get_issue", description, schema, true)
        };
        let detailed = get("Get the full details of one issue by its numeric id: its status.");
        assert_eq!(
            second_request(&detailed, "issue"),
            "Show me the full details of the first issue, please."
        );
        assert_eq!(
            second_request(&get("Returns data."), "issue"),
            "Show me the first issue, please."
        );
    }

    #[test]
    fn words_of_answered_titles_are_tried_as_the_query() {
        let tools = demo();
        let known = Known {
            words: vec!["login".into()],
            ..Known::default()
        };
        let tried = tries(&tools[1], &known);
        assert!(tried.iter().any(|a| a["query"] == "login"), "{tried:?}");
    }
}
