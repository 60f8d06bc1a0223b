//! The arguments of a tool call written as text: read from the JSON object or the XML element
//! that carries it, so that the call can be made as written (`recover_text_calls`).

use serde_json::{Map, Value};

use super::{called_name, Tag, CALL_KEYS};

/// Keys whose value is a call's arguments (an object, or JSON text of one).
const ARG_KEYS: [&str; 5] = ["arguments", "parameters", "args", "input", "params"];
/// A key beside the name that is no argument when a call has its arguments inline
/// (`{"type": "function", "name": "get_issue", "id": 3}`).
const NOT_ARG: &str = "type";

/// The calls a JSON value holds, in order: `(name as written, arguments)`.
pub(super) fn calls_in(
    value: &Value,
    tools: &[&str],
    depth: u8,
    out: &mut Vec<(String, Option<Map<String, Value>>)>,
) {
    if depth > 4 {
        return;
    }
    match value {
        Value::Array(items) => items
            .iter()
            .for_each(|v| calls_in(v, tools, depth + 1, out)),
        Value::Object(map) => {
            if let Some(name) = called_name(map, tools) {
                out.push((name.to_owned(), arguments_of(map)));
                return;
            }
            for key in CALL_KEYS {
                if let Some(v) = map.get(key).filter(|v| v.is_object() || v.is_array()) {
                    calls_in(v, tools, depth + 1, out);
                }
            }
        }
        _ => {}
    }
}

/// The arguments of a call object: its `arguments` (or `parameters`, `args`, …) as an object or
/// as JSON text of one; without such a key, the keys beside the name (none: no arguments).
fn arguments_of(map: &Map<String, Value>) -> Option<Map<String, Value>> {
    match ARG_KEYS.iter().find_map(|k| map.get(*k)) {
        Some(Value::Object(args)) => Some(args.clone()),
        Some(Value::Null) => Some(Map::new()),
        Some(Value::String(text)) if text.trim().is_empty() => Some(Map::new()),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(args)) => Some(args),
            Ok(Value::Null) => Some(Map::new()),
            _ => None,
        },
        Some(_) => None,
        None => Some(
            map.iter()
                .filter(|(k, _)| !super::NAME_KEYS.contains(&k.as_str()) && k.as_str() != NOT_ARG)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
    }
}

/// The arguments of the XML element that opens `element` (the text from its `<` on): its
/// parameters, or a JSON object as its body; `None` when they cannot be read (no closing tag, a
/// body that is neither, a tool named with nothing beside it).
pub(super) fn of_element(tag: &Tag<'_>, element: &str) -> Option<Map<String, Value>> {
    let (close, open_end) = match tag {
        Tag::Named(_) => return None,
        Tag::Function(_) => ("</function>".to_owned(), element.find('>')?),
        Tag::Invoke(_) => ("</invoke>".to_owned(), element.find('>')?),
        Tag::Tool(name) => {
            let open_end = element.find('>')?;
            // `<list_projects/>`: a call with no arguments.
            if element[..open_end].ends_with('/') {
                return Some(Map::new());
            }
            (format!("</{name}>"), open_end)
        }
    };
    let body = &element[open_end + 1..];
    let body = &body[..body.find(&close)?];
    let params = match tag {
        Tag::Function(_) => parameters(body, "<parameter=", "</parameter>"),
        Tag::Invoke(_) => parameters(body, "<parameter name=", "</parameter>"),
        _ => children(body),
    };
    match params {
        Some(map) if !map.is_empty() => Some(map),
        _ => whole_body(body),
    }
}

/// A body with no parameters: empty (no arguments) or a JSON object.
fn whole_body(body: &str) -> Option<Map<String, Value>> {
    let body = body.trim();
    if body.is_empty() {
        return Some(Map::new());
    }
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// `<parameter=KEY>VALUE</parameter>` (or `<parameter name="KEY">`) elements, all of the body;
/// `None` when something else is between them.
fn parameters(body: &str, open: &str, close: &str) -> Option<Map<String, Value>> {
    let mut map = Map::new();
    let mut rest = body.trim();
    while !rest.is_empty() {
        let after = rest.strip_prefix(open)?;
        let key_end = after.find('>')?;
        let key = after[..key_end].trim().trim_matches(['"', '\'']);
        let value_text = &after[key_end + 1..];
        let value_end = value_text.find(close)?;
        map.insert(key.to_owned(), value(&value_text[..value_end]));
        rest = value_text[value_end + close.len()..].trim_start();
    }
    Some(map)
}

/// `<KEY>VALUE</KEY>` children, all of the body; `None` when something else is between them.
fn children(body: &str) -> Option<Map<String, Value>> {
    let mut map = Map::new();
    let mut rest = body.trim();
    while !rest.is_empty() {
        let after = rest.strip_prefix('<')?;
        let key_end = after.find('>')?;
        let key = &after[..key_end];
        if key.is_empty() || key.contains([' ', '/', '=', '<']) {
            return None;
        }
        let close = format!("</{key}>");
        let value_text = &after[key_end + 1..];
        let value_end = value_text.find(&close)?;
        map.insert(key.to_owned(), value(&value_text[..value_end]));
        rest = value_text[value_end + close.len()..].trim_start();
    }
    Some(map)
}

/// A parameter's text as a JSON value: JSON when it parses as JSON (`3`, `true`, `["a"]`,
/// `"quoted"`), else the text itself, trimmed.
fn value(text: &str) -> Value {
    let text = text.trim();
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::super::read_calls;
    use serde_json::json;

    const TOOLS: [&str; 3] = ["list_projects", "get_issue", "search_issues"];

    /// `(name, arguments)` of every call read from `answer`.
    fn calls(answer: &str) -> Vec<(String, Option<serde_json::Value>)> {
        read_calls(answer, &TOOLS)
            .into_iter()
            .map(|c| (c.name, c.arguments.map(serde_json::Value::Object)))
            .collect()
    }

    fn one(name: &str, args: serde_json::Value) -> Vec<(String, Option<serde_json::Value>)> {
        vec![(name.to_owned(), Some(args))]
    }

    #[test]
    fn json_calls_give_their_arguments_in_every_shape() {
        for (answer, name, args) in [
            (
                "```json\n{\"name\": \"get_issue\", \"arguments\": {\"id\": 3}}\n```",
                "get_issue",
                json!({"id": 3}),
            ),
            (
                r#"{"function": {"name": "get_issue", "arguments": "{\"id\": 3}"}}"#,
                "get_issue",
                json!({"id": 3}),
            ),
            (
                r#"{"name": "search_issues", "parameters": {"query": "login"}}"#,
                "search_issues",
                json!({"query": "login"}),
            ),
            (
                r#"{"tool": "get_issue", "id": 3}"#,
                "get_issue",
                json!({"id": 3}),
            ),
            (
                r#"{"tool": "search_issues", "query": "x", "type": "call"}"#,
                "search_issues",
                json!({"query": "x"}),
            ),
            (r#"{"name": "list_projects"}"#, "list_projects", json!({})),
            (
                r#"{"recipient_name": "functions.list_projects", "parameters": null}"#,
                "list_projects",
                json!({}),
            ),
            (
                "<tool_call>\n{\"name\": \"get_issue\", \"arguments\": {\"id\": 3}}\n</tool_call>",
                "get_issue",
                json!({"id": 3}),
            ),
        ] {
            assert_eq!(calls(answer), one(name, args), "{answer}");
        }
    }

    #[test]
    fn several_calls_in_one_answer_come_in_the_order_written() {
        let answer = "First the projects:\n<tool_call>\n{\"name\": \"list_projects\", \
                      \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_issue\", \
                      \"arguments\": {\"id\": 7}}\n</tool_call>";
        assert_eq!(
            calls(answer),
            vec![
                ("list_projects".to_owned(), Some(json!({}))),
                ("get_issue".to_owned(), Some(json!({"id": 7}))),
            ]
        );
        let listed = r#"{"tool_calls": [{"function": {"name": "get_issue", "arguments": "{\"id\": 1}"}}, {"function": {"name": "get_issue", "arguments": "{\"id\": 2}"}}]}"#;
        let got = calls(listed);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].1, Some(json!({"id": 2})));
        let spans: Vec<_> = read_calls(answer, &TOOLS)
            .into_iter()
            .map(|c| c.span)
            .collect();
        assert!(spans[0].end <= spans[1].start, "{spans:?}");
        assert_eq!(&answer[spans[0].start..spans[0].start + 1], "{");
    }

    #[test]
    fn xml_calls_give_their_parameters() {
        let qwen_coder = "<tool_call>\n<function=search_issues>\n<parameter=query>\nlogin \
                          bug\n</parameter>\n<parameter=limit>\n5\n</parameter>\n</function>\n\
                          </tool_call>";
        assert_eq!(
            calls(qwen_coder),
            one("search_issues", json!({"query": "login bug", "limit": 5}))
        );
        let invoke = "<function_calls><invoke name=\"get_issue\"><parameter name=\"id\">3\
                      </parameter></invoke></function_calls>";
        assert_eq!(calls(invoke), one("get_issue", json!({"id": 3})));
        assert_eq!(
            calls("<get_issue>\n<id>3</id>\n</get_issue>"),
            one("get_issue", json!({"id": 3}))
        );
        assert_eq!(
            calls("<function=get_issue>{\"id\": 4}</function>"),
            one("get_issue", json!({"id": 4}))
        );
        assert_eq!(
            calls("<list_projects></list_projects>"),
            one("list_projects", json!({}))
        );
        assert_eq!(calls("<list_projects/>"), one("list_projects", json!({})));
    }

    #[test]
    fn arguments_that_do_not_parse_are_none() {
        for answer in [
            // Cut short, single quotes, a trailing comma.
            r#"Calling: {"name": "get_issue", "arguments": {"id": "#,
            "{'name': 'list_projects', 'arguments': {}}",
            r#"{"name": "get_issue", "arguments": {"id": 3},}"#,
            // Arguments that are JSON text of no object.
            r#"{"name": "get_issue", "arguments": "id=3"}"#,
            r#"{"name": "get_issue", "arguments": [3]}"#,
            // Python-style calls.
            "[get_issue(id=3)]",
            "```python\nlist_projects()\n```",
            // A name alone, an element with no closing tag, a body that is prose.
            "<tool_name>list_projects</tool_name>",
            "<function=get_issue>\n<parameter=id>\n3\n",
            "<get_issue>the third one</get_issue>",
        ] {
            let got = calls(answer);
            assert_eq!(got.len(), 1, "{answer}: {got:?}");
            assert_eq!(got[0].1, None, "{answer}: {got:?}");
        }
    }

    #[test]
    fn one_broken_object_is_one_call_and_a_valid_call_is_not_read_twice() {
        let broken = "{'name': 'get_issue', 'tool': 'get_issue', 'arguments': {'id': 3}}";
        assert_eq!(calls(broken).len(), 1);
        // The name inside a valid call's arguments is no second call.
        let nested =
            r#"{"name": "search_issues", "arguments": {"query": "\"name\": \"get_issue\""}}"#;
        assert_eq!(calls(nested).len(), 1);
    }

    #[test]
    fn host_style_and_harmony_names_are_read_as_written() {
        let got = read_calls(
            r#"{"name": "mcp__tracker__get_issue", "arguments": {"id": 1}}"#,
            &TOOLS,
        );
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].name, "mcp__tracker__get_issue");
        let got = read_calls(r#"{"name": "functions.get_issue"}"#, &TOOLS);
        assert_eq!(got[0].name, "get_issue");
        assert!(read_calls(r#"{"name": "mcp__tracker__delete_all"}"#, &TOOLS).is_empty());
    }
}
