//! The `TODO` stubs of `mcpeval init`: a model task per tool init could not write a sensible
//! request for (its description says none, or it takes values no user would give, such as a
//! model's own `thought`), or whose drafted tasks were all turned down, written to
//! `DIR/todo.yaml` (outside the suite, never run) for the user to finish and move into tasks/.

use serde_json::{json, Value};

use super::args_from_schema::required;
use super::values::{pick, Known, Source};

/// A tool that gets a stub instead of a drafted task, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Todo {
    pub tool: String,
    /// Its title and the first line of its description, for the stub's comment.
    pub about: String,
    pub why: String,
}

impl Todo {
    pub fn new(tool: &rmcp::model::Tool, why: String) -> Self {
        let description = tool.description.as_deref().unwrap_or_default();
        let first = description.lines().next().unwrap_or_default().trim();
        let about = match &tool.title {
            Some(title) if !first.is_empty() => format!("{title}: {first}"),
            Some(title) => title.clone(),
            None => first.to_owned(),
        };
        Self {
            tool: tool.name.to_string(),
            about: super::draft::short(&about, 160),
            why,
        }
    }
}

/// Parameter-name words of text a user supplies in a request (`query`, `title`, `message`…):
/// a neutral word there still makes a request a user could write.
const USER_TEXT: &[&str] = &[
    "query",
    "q",
    "text",
    "title",
    "body",
    "message",
    "content",
    "name",
    "comment",
    "description",
    "keyword",
    "keywords",
    "search",
    "term",
    "prompt",
    "question",
    "note",
    "subject",
    "summary",
    "label",
    "tag",
    "input",
    "topic",
    "word",
];

/// Why no sensible templated request can be written for `tool`: its description says no
/// request ([`super::phrasing::request_of`]), or a required parameter gets a neutral value no
/// user would give (a flag such as `nextThoughtNeeded`, a text such as a model's `thought`).
pub fn reason(tool: &rmcp::model::Tool, known: &Known) -> Option<String> {
    if super::phrasing::request_of(tool).is_none() {
        let about = Todo::new(tool, String::new()).about;
        return Some(format!(
            "its description (\"{about}\") says no request a user would make"
        ));
    }
    let schema = Value::Object((*tool.input_schema).clone());
    let props = schema["properties"].as_object()?;
    let unsayable: Vec<String> = (required(&schema).into_iter())
        .filter_map(|name| {
            let (value, source) = pick(name, props.get(name)?, known);
            let plain_word = value.as_str().is_some_and(|s| s.starts_with("example"));
            let user_text = (super::templates::name_words(name).iter())
                .any(|w| USER_TEXT.contains(&w.as_str()));
            let odd = value.is_boolean() || (plain_word && !user_text);
            (source == Source::Neutral && odd).then(|| format!("`{name}`"))
        })
        .collect();
    (!unsayable.is_empty()).then(|| {
        format!(
            "init knows no value a user would give for {} (the schema, its descriptions and \
             the server's command line give none)",
            unsayable.join(", ")
        )
    })
}

/// `DIR/todo.yaml`: one stub per tool, each a task that loads once its request is written.
pub fn todo_yaml(todo: &[Todo], server: &str) -> String {
    let mut out = format!(
        "# TODO stubs written by `mcpeval init` from {server}.\n\
         # A model task for each tool init could not draft a sensible one for. This file is\n\
         # outside the suite: nothing here is run. Write the request a user would make (without\n\
         # naming the tool), add the arguments the call must carry under `args`, then move the\n\
         # task into tasks/.\n"
    );
    for t in todo {
        out.push_str(&format!(
            "\n# TODO `{}` ({}): {}.\n- id: model-{}-todo\n  prompt: {}\n  set: regression\n  \
             expect:\n    calls:\n      - tool: {}\n        result: {{is_error: false}}\n",
            t.tool,
            t.about.replace('\n', " "),
            t.why,
            super::draft::slug(&t.tool),
            json!(format!(
                "TODO: a request that needs this tool ({})",
                t.about
            )),
            t.tool,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_support::listed_tool as tool;

    #[test]
    fn a_tool_with_values_no_user_gives_gets_a_stub_that_loads() {
        let thinking = tool(
            "sequentialthinking",
            "A detailed tool for dynamic and reflective problem-solving through thoughts.",
            json!({"type": "object", "required": ["thought", "nextThoughtNeeded", "thoughtNumber"],
                "properties": {
                "thought": {"type": "string", "description": "Your current thinking step"},
                "nextThoughtNeeded": {"type": "boolean"},
                "thoughtNumber": {"type": "integer", "description": "e.g., 1, 2, 3"}}}),
        );
        let why = reason(&thinking, &Known::default()).unwrap();
        assert!(
            why.contains("`thought`, `nextThoughtNeeded`") && !why.contains("thoughtNumber"),
            "{why}"
        );
        let search = tool(
            "search_issues",
            "Search issues.",
            json!({"type": "object", "required": ["query"],
                   "properties": {"query": {"type": "string"}}}),
        );
        assert_eq!(
            reason(&search, &Known::default()),
            None,
            "a query is the user's"
        );
        let noun = tool(
            "stations",
            "The weather stations of a region.",
            json!({"type": "object"}),
        );
        assert!(reason(&noun, &Known::default()).is_some());

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("todo.yaml");
        let text = todo_yaml(&[Todo::new(&thinking, why)], "`srv`");
        std::fs::write(&path, &text).unwrap();
        let suite = crate::suite::load_sources(&[(path, text.clone())]).unwrap();
        assert_eq!(suite.tasks.len(), 1);
        assert!(suite.tasks[0].prompt.starts_with("TODO"), "{text}");
    }
}
