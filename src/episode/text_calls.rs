//! Tool calls a model wrote as text instead of making them: a JSON object or an XML element in an
//! answer that names one of the tools it was offered (what local models and endpoints started
//! without a tool-call parser do). Pure functions; the agent loop records what they find on the
//! episode, so that a run whose model never called a tool can say why.

mod args;

use std::ops::Range;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The longest excerpt kept of a call written as text (characters, the `…` included).
pub const EXCERPT_CHARS: usize = 200;
/// Only this much of an answer is read (a rambling answer costs no more than this).
const SCANNED_BYTES: usize = 64 * 1024;
/// JSON objects tried per answer at most (each try reads on to the object's end).
const JSON_TRIES: usize = 64;
/// Keys whose string value names the tool called (`{"name": …}`, `{"tool": …}`, Harmony's
/// `recipient_name`).
const NAME_KEYS: [&str; 5] = ["name", "tool", "tool_name", "function", "recipient_name"];
/// Keys whose object (or array of objects) value is a call (`{"function": {"name": …}}`,
/// `{"tool_calls": [{…}]}`).
const CALL_KEYS: [&str; 6] = [
    "function",
    "function_call",
    "tool_call",
    "tool_calls",
    "calls",
    "tool_use",
];
/// XML elements whose text is a tool's name (`<tool_name>list_projects</tool_name>`).
const NAME_ELEMENTS: [&str; 4] = ["name", "tool_name", "tool", "function"];

/// The answers of one trial that carried a tool call written as text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextToolCalls {
    /// How many of the model's answers (one per turn) carried one.
    #[serde(rename = "text_tool_calls", default, skip_serializing_if = "is_zero")]
    pub count: u32,
    /// The first of them, on one line, at most [`EXCERPT_CHARS`] characters.
    #[serde(
        rename = "text_tool_call",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub first: Option<String>,
    /// Calls written as text that a host recovering them (`recover_text_calls`) could not make:
    /// their arguments did not parse (JSON cut short or not JSON, a Python-style call).
    #[serde(
        rename = "unparsed_text_calls",
        default,
        skip_serializing_if = "is_zero"
    )]
    pub unparsed: u32,
    /// Calls written as text that the host made (`recover_text_calls`): counted among the
    /// episode's `tool_calls`, each marked `recovered` in `calls`.
    #[serde(rename = "recovered_calls", default, skip_serializing_if = "is_zero")]
    pub recovered: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl TextToolCalls {
    /// Reads each answer (an assistant message's text) for a call naming one of `tools` (the
    /// names the model was shown and the server's own names).
    pub fn scan<'a>(answers: impl IntoIterator<Item = &'a str>, tools: &[&str]) -> Self {
        let mut found = Self::default();
        for answer in answers {
            found.read(answer, tools);
        }
        found
    }

    /// Reads one answer: counts it when it carries a call written as text, and returns the
    /// calls it carries.
    pub fn read(&mut self, answer: &str, tools: &[&str]) -> Vec<WrittenCall> {
        let calls = read_calls(answer, tools);
        if let Some(call) = calls.first() {
            self.count += 1;
            self.first
                .get_or_insert_with(|| excerpt(&answer[call.span.clone()]));
        }
        calls
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0 && self.unparsed == 0 && self.recovered == 0
    }

    /// The same, with the excerpt freed of secrets (it is the model's text, written to disk).
    pub fn redacted(self, redactor: &super::Redactor) -> Self {
        Self {
            first: self.first.map(|f| redactor.redact(&f)),
            ..self
        }
    }
}

/// A tool call found in a model's text.
#[derive(Debug, Clone, PartialEq)]
pub struct WrittenCall {
    /// The tool's name as written, without a `functions.` prefix: a name the model was shown, a
    /// server name, or a host-style `mcp__server__tool`.
    pub name: String,
    /// Its arguments; `None` when they do not parse (JSON cut short or not JSON, a Python-style
    /// call, a name with no arguments beside it).
    pub arguments: Option<Map<String, Value>>,
    /// Where it is in the answer (bytes).
    pub span: Range<usize>,
}

/// The first tool call written as text in `answer`, as an excerpt; `None` when the answer has
/// none (a tool merely named in prose is none).
pub fn find_call(answer: &str, tools: &[&str]) -> Option<String> {
    let text = head(answer, SCANNED_BYTES);
    read_calls(text, tools)
        .first()
        .map(|c| excerpt(&text[c.span.clone()]))
}

/// Every tool call written as text in `answer`, in the order written, with the arguments that
/// parse: JSON objects in the shapes models write, XML elements (`<function=NAME>` with
/// `<parameter=KEY>`, `<invoke name="NAME">`, `<NAME><key>…</key></NAME>`), and — arguments
/// `None` — broken JSON and Python-style calls.
pub fn read_calls(answer: &str, tools: &[&str]) -> Vec<WrittenCall> {
    let tools: Vec<&str> = tools.iter().copied().filter(|t| !t.is_empty()).collect();
    if tools.is_empty() {
        return Vec::new();
    }
    let text = head(answer, SCANNED_BYTES);
    let mut calls = json_calls(text, &tools);
    let inside = |calls: &[WrittenCall], at: usize| calls.iter().any(|c| c.span.contains(&at));
    for call in xml_calls(text, &tools) {
        if !inside(&calls, call.span.start) {
            calls.push(call);
        }
    }
    if let Some(call) = pythonic_call(text, &tools) {
        if !inside(&calls, call.span.start) {
            calls.push(call);
        }
    }
    // A name key whose object is no valid JSON: one call per broken object.
    let mut broken: Vec<WrittenCall> = Vec::new();
    for call in quoted_name_calls(text, &tools) {
        let counted = broken.iter().any(|b| b.span.start == call.span.start);
        if !inside(&calls, call.span.start) && !counted {
            broken.push(call);
        }
    }
    calls.extend(broken);
    calls.sort_by_key(|c| c.span.start);
    calls
}

/// The JSON objects in `text` that are calls (an object may hold several: `tool_calls`).
fn json_calls(text: &str, tools: &[&str]) -> Vec<WrittenCall> {
    let mut found = Vec::new();
    let mut from = 0;
    for _ in 0..JSON_TRIES {
        let Some(i) = text[from..].find('{') else {
            break;
        };
        let start = from + i;
        let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match values.next() {
            Some(Ok(value)) => {
                let end = start + values.byte_offset();
                let mut calls = Vec::new();
                args::calls_in(&value, tools, 0, &mut calls);
                found.extend(calls.into_iter().map(|(name, arguments)| WrittenCall {
                    name,
                    arguments,
                    span: start..end,
                }));
                from = end;
            }
            _ => from = start + 1,
        }
    }
    found
}

/// The tool an object names under one of [`NAME_KEYS`], as written (without `functions.`).
pub(super) fn called_name<'v>(map: &'v Map<String, Value>, tools: &[&str]) -> Option<&'v str> {
    NAME_KEYS.iter().find_map(|k| {
        let name = map.get(*k)?.as_str()?.trim();
        names_tool(name, tools).then(|| name.strip_prefix("functions.").unwrap_or(name))
    })
}

/// Whether `name` is one of `tools`, also as `functions.NAME` (OpenAI's Harmony format) or as
/// a host's `mcp__SERVER__NAME` (Claude Code's form).
fn names_tool(name: &str, tools: &[&str]) -> bool {
    let name = name.trim();
    let name = name.strip_prefix("functions.").unwrap_or(name);
    tools.contains(&name) || host_style(name).is_some_and(|n| tools.contains(&n))
}

/// The tool's own name in a host-style `mcp__SERVER__TOOL` (`None` for any other name).
pub fn host_style(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("mcp__")?;
    rest.split_once("__")
        .map(|(_, tool)| tool)
        .filter(|t| !t.is_empty())
}

/// Tools' names quoted as the value of a name key, where the object around them is no valid
/// JSON (`{'name': 'list_projects'}`, a trailing comma, a cut answer): each starts where its
/// object does (or at the key, without a `{` close before it) and runs to the end of the text.
fn quoted_name_calls(text: &str, tools: &[&str]) -> Vec<WrittenCall> {
    let mut found = Vec::new();
    for tool in tools {
        for (at, _) in text.match_indices(tool) {
            let Some(key) = key_before_quoted(text, at, at + tool.len()) else {
                continue;
            };
            let window = &text[floor(text, key.saturating_sub(80))..key];
            let start = window.rfind('{').map_or(key, |i| key - window.len() + i);
            found.push(WrittenCall {
                name: (*tool).to_owned(),
                arguments: None,
                span: start..text.len(),
            });
        }
    }
    found
}

/// Where the name key begins when `text[at..end]` is a quoted value (`"NAME"`, `'NAME'`, also
/// `"functions.NAME"`) of `name:`, `"tool": `, `function=` and the like.
fn key_before_quoted(text: &str, at: usize, end: usize) -> Option<usize> {
    let before = &text[..at];
    let before = before.strip_suffix("functions.").unwrap_or(before);
    let quote = before
        .chars()
        .next_back()
        .filter(|c| matches!(c, '"' | '\''))?;
    if !text[end..].starts_with(quote) {
        return None;
    }
    let before = before[..before.len() - 1].trim_end();
    let before = before
        .strip_suffix(':')
        .or_else(|| before.strip_suffix('='))?
        .trim_end();
    let before = before
        .strip_suffix(['"', '\''])
        .unwrap_or(before)
        .trim_end();
    NAME_KEYS.iter().find_map(|k| {
        let key_at = before.len().checked_sub(k.len())?;
        let word = before.get(key_at..)?;
        let bounded = !before[..key_at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        (word.eq_ignore_ascii_case(k) && bounded).then_some(key_at)
    })
}

/// The XML elements that name a tool: `<function=NAME>` (Llama 3.1, Qwen3-Coder), `<invoke
/// name="NAME">` (Anthropic-style function calls), `<NAME>` (the tool as the element), or
/// `<tool_name>NAME</tool_name>`, with the arguments their parameters give.
fn xml_calls(text: &str, tools: &[&str]) -> Vec<WrittenCall> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find('<') {
        let start = from + i;
        let Some(tag) = element_tag(&text[start + 1..], tools) else {
            from = start + 1;
            continue;
        };
        let end = start + element(text, start).len();
        let arguments = args::of_element(&tag, &text[start..]);
        found.push(WrittenCall {
            name: tag.tool().to_owned(),
            arguments,
            span: start..end,
        });
        from = end.max(start + 1);
    }
    found
}

/// An opening tag that names a tool, by its form.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tag<'t> {
    /// `<function=NAME>`.
    Function(&'t str),
    /// `<invoke name="NAME">`.
    Invoke(&'t str),
    /// `<tool_name>NAME</tool_name>` and the like (no arguments beside it).
    Named(&'t str),
    /// `<NAME>`, the tool as the element.
    Tool(&'t str),
}

impl<'t> Tag<'t> {
    fn tool(&self) -> &'t str {
        match self {
            Tag::Function(t) | Tag::Invoke(t) | Tag::Named(t) | Tag::Tool(t) => t,
        }
    }
}

/// The tag that `tag` opens (the text after `<`), when it names a tool.
fn element_tag<'t>(tag: &'t str, tools: &[&'t str]) -> Option<Tag<'t>> {
    let ends_name = |rest: &str| rest.starts_with(['>', '/', ' ', '\n', '\t', '\r']);
    if let Some(rest) = tag.strip_prefix("function=") {
        return tools
            .iter()
            .find(|t| {
                rest.strip_prefix(**t)
                    .is_some_and(|r| r.is_empty() || ends_name(r))
            })
            .map(|t| Tag::Function(t));
    }
    if let Some(rest) = tag.strip_prefix("invoke") {
        let value = rest.trim_start().strip_prefix("name=")?;
        let value = value.trim_start_matches(['"', '\'']);
        return tools
            .iter()
            .find(|t| {
                value
                    .strip_prefix(**t)
                    .is_some_and(|r| r.starts_with(['"', '\'']))
            })
            .map(|t| Tag::Invoke(t));
    }
    for name in NAME_ELEMENTS {
        if let Some(inner) = tag.strip_prefix(name).and_then(|r| r.strip_prefix('>')) {
            let close = format!("</{name}>");
            if let Some(end) = inner.find(&close) {
                let written = inner[..end].trim();
                if names_tool(written, tools) {
                    return Some(Tag::Named(
                        written.strip_prefix("functions.").unwrap_or(written),
                    ));
                }
            }
        }
    }
    tools
        .iter()
        .find(|t| {
            tag.strip_prefix(**t)
                .is_some_and(|r| !r.is_empty() && ends_name(r))
        })
        .map(|t| Tag::Tool(t))
}

/// The element opened at `start`: up to the end of its closing tag when one follows soon, else
/// what follows the opening.
fn element(text: &str, start: usize) -> &str {
    let rest = &text[start..];
    let name_end = rest[1..]
        .find(['=', '>', '/', ' ', '\n', '\t', '\r'])
        .map_or(rest.len(), |e| e + 1);
    let close = format!("</{}>", &rest[1..name_end]);
    let limit = floor(rest, 4 * EXCERPT_CHARS);
    match rest[..limit].find(&close) {
        Some(at) => &rest[..at + close.len()],
        None => rest,
    }
}

/// An answer that is nothing but calls in Python syntax (Llama 3.2's `[list_projects(),
/// get_issue(id=3)]`), in a code fence or not; a call inside a sentence is prose. Its arguments
/// are not read.
fn pythonic_call(text: &str, tools: &[&str]) -> Option<WrittenCall> {
    let body = text.trim();
    let body = body.strip_prefix("<|python_tag|>").unwrap_or(body).trim();
    let body = strip_fence(body);
    let inner = body.strip_prefix('[').unwrap_or(body).trim_start();
    let tool = tools.iter().find(|t| {
        inner
            .strip_prefix(**t)
            .is_some_and(|r| r.trim_start().starts_with('('))
    })?;
    let closes = body.ends_with(')') || (body.starts_with('[') && body.ends_with(")]"));
    closes.then(|| {
        let start = text.find(body).unwrap_or(0);
        WrittenCall {
            name: (*tool).to_owned(),
            arguments: None,
            span: start..start + body.len(),
        }
    })
}

/// The text inside a Markdown code fence that is the whole of `text`, else `text`.
fn strip_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return text;
    };
    // The fence's language tag (```json, ```python) runs to the end of the first line.
    match body.split_once('\n') {
        Some((_, code)) => code.trim(),
        None => body.trim(),
    }
}

/// `text` on one line, at most [`EXCERPT_CHARS`] characters (`…` ends a cut one).
fn excerpt(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(EXCERPT_CHARS - 1) {
        Some((cut, _)) if line.chars().count() > EXCERPT_CHARS => format!("{}…", &line[..cut]),
        _ => line,
    }
}

/// The first `max` bytes of `text`, cut on a character boundary.
fn head(text: &str, max: usize) -> &str {
    &text[..floor(text, max)]
}

/// The largest character boundary of `text` at or below `i`.
fn floor(text: &str, i: usize) -> usize {
    let mut i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: [&str; 3] = ["list_projects", "get_issue", "mcp__tracker__search_issues"];

    fn call(answer: &str) -> Option<String> {
        find_call(answer, &TOOLS)
    }

    #[test]
    fn json_calls_in_the_shapes_models_write_them() {
        let fenced = "I will list the projects.\n```json\n{\"name\": \"list_projects\", \
                      \"arguments\": {}}\n```";
        assert_eq!(
            call(fenced).as_deref(),
            Some(r#"{"name": "list_projects", "arguments": {}}"#)
        );
        for answer in [
            r#"{"tool": "get_issue", "args": {"id": 3}}"#,
            r#"{"function": {"name": "get_issue", "arguments": "{\"id\": 3}"}}"#,
            r#"{"type": "function", "function": {"name": "list_projects", "parameters": {}}}"#,
            r#"{"tool_calls": [{"id": "c1", "function": {"name": "get_issue"}}]}"#,
            r#"[TOOL_CALLS] [{"name": "list_projects", "arguments": {}}]"#,
            r#"<|python_tag|>{"name": "get_issue", "parameters": {"id": 3}}"#,
            r#"{"recipient_name": "functions.list_projects", "parameters": {}}"#,
            // The name the model was shown (prefixed by the host profile).
            r#"{"name": "mcp__tracker__search_issues", "arguments": {"query": "bug"}}"#,
        ] {
            assert!(call(answer).is_some(), "missed: {answer}");
        }
    }

    #[test]
    fn xml_calls_hermes_qwen_llama_and_anthropic_styles() {
        let hermes =
            "<tool_call>\n{\"name\": \"get_issue\", \"arguments\": {\"id\": 3}}\n</tool_call>";
        assert_eq!(
            call(hermes).as_deref(),
            Some(r#"{"name": "get_issue", "arguments": {"id": 3}}"#)
        );
        let qwen_coder = "<tool_call>\n<function=get_issue>\n<parameter=id>\n3\n</parameter>\n\
                          </function>\n</tool_call>";
        let found = call(qwen_coder).unwrap();
        assert!(found.starts_with("<function=get_issue>"), "{found}");
        assert!(found.ends_with("</function>"), "{found}");
        assert!(call("<function=list_projects>{}</function>").is_some());
        let invoke = "<function_calls><invoke name=\"get_issue\"><parameter name=\"id\">3\
                      </parameter></invoke></function_calls>";
        assert!(call(invoke)
            .unwrap()
            .starts_with("<invoke name=\"get_issue\">"));
        assert!(call("<list_projects></list_projects>").is_some());
        assert!(call("<get_issue>\n<id>3</id>\n</get_issue>").is_some());
        assert!(call("<tool_name>list_projects</tool_name>").is_some());
    }

    #[test]
    fn broken_json_python_dicts_and_pythonic_calls() {
        // Single quotes, a trailing comma, an answer cut short: no valid JSON, still a call.
        for answer in [
            "{'name': 'list_projects', 'arguments': {}}",
            r#"{"name": "get_issue", "arguments": {"id": 3},}"#,
            r#"Calling: {"name": "get_issue", "arguments": {"id": "#,
            "[get_issue(id=3)]",
            "```python\nlist_projects()\n```",
        ] {
            assert!(call(answer).is_some(), "missed: {answer}");
        }
        let dict = call("Sure: {'name': 'list_projects', 'arguments': {}}").unwrap();
        assert!(dict.starts_with("{'name'"), "{dict}");
    }

    #[test]
    fn a_tool_named_in_prose_is_no_call() {
        for answer in [
            "I used the list_projects tool and found three projects.",
            "You can call `list_projects` to see them, or get_issue with an id.",
            "Run list_projects() first, then get_issue(3).",
            "The project \"list_projects\" does not exist.",
            r#"{"project": "apollo", "open_issues": 3}"#,
            r#"{"name": "apollo", "owner": "list_projects team"}"#,
            // A tool that was not offered.
            r#"{"name": "delete_everything", "arguments": {}}"#,
            "<b>list_projects</b> lists the projects.",
            "<function=list_projectsX>",
            "a <list_projects_count> tag",
            "",
        ] {
            assert_eq!(call(answer), None, "false call in: {answer}");
        }
        assert_eq!(find_call(r#"{"name": "x"}"#, &[]), None);
    }

    #[test]
    fn counts_answers_and_keeps_the_first_excerpt_short() {
        let long_args = "x".repeat(500);
        let first =
            format!("{{\"name\": \"get_issue\", \"arguments\": {{\"q\": \"{long_args}\"}}}}");
        let answers = [
            first.as_str(),
            "No call here.",
            "<tool_call>{\"name\": \"list_projects\"}</tool_call> and {\"name\": \"get_issue\"}",
        ];
        let found = TextToolCalls::scan(answers, &TOOLS);
        assert_eq!(found.count, 2, "one per answer that carried a call");
        let excerpt = found.first.unwrap();
        assert_eq!(excerpt.chars().count(), EXCERPT_CHARS);
        assert!(excerpt.starts_with(r#"{"name": "get_issue""#) && excerpt.ends_with('…'));
        assert!(TextToolCalls::scan(["plain"], &TOOLS).is_empty());
    }

    #[test]
    fn serialized_under_the_episode_names_and_left_out_when_empty() {
        let found = TextToolCalls {
            count: 2,
            first: Some("{\"name\": \"get_issue\"}".into()),
            ..Default::default()
        };
        let v = serde_json::to_value(&found).unwrap();
        assert_eq!(v["text_tool_calls"], 2);
        assert_eq!(v["text_tool_call"], "{\"name\": \"get_issue\"}");
        assert_eq!(
            serde_json::to_value(TextToolCalls::default()).unwrap(),
            serde_json::json!({})
        );
    }

    #[test]
    fn an_episode_carries_them_at_its_top_level() {
        let mut episode =
            crate::test_support::sample_episode("t", super::super::Side::Baseline, false);
        let plain = serde_json::to_value(&episode).unwrap();
        assert!(plain.get("text_tool_calls").is_none(), "left out when none");
        episode.text_calls = TextToolCalls {
            count: 3,
            first: Some("{\"name\": \"get_issue\"}".into()),
            unparsed: 1,
            recovered: 2,
        };
        let line = serde_json::to_string(&episode).unwrap();
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["text_tool_calls"], 3);
        assert_eq!(value["recovered_calls"], 2);
        assert_eq!(value["unparsed_text_calls"], 1);
        assert_eq!(episode.recovered_calls(), 2);
        assert_eq!(value["text_tool_call"], "{\"name\": \"get_issue\"}");
        let back: super::super::Episode = serde_json::from_str(&line).unwrap();
        assert_eq!(back, episode);
        let old: super::super::Episode = serde_json::from_value(plain).unwrap();
        assert!(
            old.text_calls.is_empty(),
            "lines written before read as none"
        );
    }

    #[test]
    fn long_answers_cost_a_bounded_scan() {
        let braces = "{".repeat(200_000);
        assert_eq!(call(&braces), None);
        let late = format!("{}{{\"name\": \"get_issue\"}}", " ".repeat(SCANNED_BYTES));
        assert_eq!(call(&late), None, "only the head of an answer is read");
    }
}
