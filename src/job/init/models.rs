//! Model tasks of `mcpeval init`: what a drafted task is (a request, the call it expects, the
//! tools it forbids, where it came from), and the YAML of the kept and rejected ones.

use serde_json::{json, Map, Value};

/// What a drafted model task is for.
#[derive(Debug, Clone, PartialEq)]
pub enum Purpose {
    /// A request the tool serves (`tool` is set).
    Serves,
    /// A request no tool serves: small talk, general knowledge.
    NoToolGeneral,
    /// A request in the server's own domain that still needs no tool.
    NearMiss,
    /// A request `tool` serves and `other`, whose description overlaps, does not: the task
    /// forbids `other`.
    Confusion { other: String },
    /// Two user turns: the first asks `list` to find items, the second asks for the first one
    /// of them, which `tool` gets by the id the list carries.
    Conversation { list: String },
}

impl Purpose {
    /// The words the files and the report use.
    pub fn words(&self) -> String {
        match self {
            Purpose::Serves => "a request the tool serves".into(),
            Purpose::NoToolGeneral => "no tool: a general request".into(),
            Purpose::NearMiss => "no tool: a near miss in the server's domain".into(),
            Purpose::Confusion { other } => {
                format!("confusion pair: served by this tool, not by `{other}`")
            }
            Purpose::Conversation { list } => {
                format!("a conversation: `{list}` finds, then this tool gets the first one found")
            }
        }
    }
}

/// Who wrote a draft.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    /// From the tool's description and schema by mcpeval's templates (no model).
    Templated,
    /// By the writer host named (`openai:gpt-4.1`).
    Writer(String),
}

impl Origin {
    pub fn words(&self) -> String {
        match self {
            Origin::Templated => "templated".into(),
            Origin::Writer(host) => format!("written by {host}"),
        }
    }
}

/// One expected call of a drafted task: the tool and the arguments it must carry, each a value
/// the task format matches (a literal, or `{regex: …}`).
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedCall {
    pub tool: String,
    pub args: Map<String, Value>,
    /// What the result must say: `Some(false)` writes `result: {is_error: false}`.
    pub is_error: Option<bool>,
}

/// A drafted model task, before verification.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelDraft {
    pub id: String,
    /// The tool the task is for; `None` for a general no-tool task.
    pub tool: Option<String>,
    pub prompt: String,
    /// The expected call (none for a no-tool task).
    pub call: Option<ExpectedCall>,
    pub forbidden: Vec<String>,
    pub purpose: Purpose,
    pub origin: Origin,
    /// A conversation's first user turn (`turns:`); `prompt` and `call` are then its second.
    pub first_turn: Option<DraftTurn>,
}

/// One earlier user turn of a drafted conversation: the request and the call it expects.
#[derive(Debug, Clone, PartialEq)]
pub struct DraftTurn {
    pub prompt: String,
    pub call: ExpectedCall,
}

impl ModelDraft {
    pub fn is_no_tool(&self) -> bool {
        self.call.is_none()
    }

    /// The task as YAML (a list item), with a comment line above it.
    pub fn yaml(&self, comment: &str) -> String {
        let mut out = String::new();
        for line in comment.lines() {
            out.push_str(&format!("# {line}\n"));
        }
        out.push_str(&format!("- id: {}\n", self.id));
        if let Some(first) = &self.first_turn {
            out.push_str("  set: regression\n  turns:\n");
            let turns = [
                (&first.prompt, Some(&first.call)),
                (&self.prompt, self.call.as_ref()),
            ];
            for (prompt, call) in turns {
                out.push_str(&format!("    - prompt: {}\n", json!(prompt)));
                if let Some(call) = call {
                    out.push_str("      expect:\n");
                    expect_keys(&mut out, "        ", call, &self.forbidden);
                }
            }
            return out;
        }
        out.push_str(&format!("  prompt: {}\n", json!(self.prompt)));
        if self.is_no_tool() {
            out.push_str("  kind: no-tool\n");
        }
        out.push_str("  set: regression\n");
        let Some(call) = &self.call else {
            return out;
        };
        out.push_str("  expect:\n");
        expect_keys(&mut out, "    ", call, &self.forbidden);
        out
    }
}

/// An `expect`'s `calls` (the one expected call) and `forbidden_tools`, indented by `pad`.
fn expect_keys(out: &mut String, pad: &str, call: &ExpectedCall, forbidden: &[String]) {
    out.push_str(&format!("{pad}calls:\n{pad}  - tool: {}\n", call.tool));
    if !call.args.is_empty() {
        out.push_str(&format!(
            "{pad}    args: {}\n",
            Value::Object(call.args.clone())
        ));
    }
    if let Some(is_error) = call.is_error {
        out.push_str(&format!("{pad}    result: {{is_error: {is_error}}}\n"));
    }
    if !forbidden.is_empty() {
        out.push_str(&format!("{pad}forbidden_tools: {}\n", json!(forbidden)));
    }
}

/// A draft that was not kept, the stage that turned it down, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// The draft, when there was one to speak of (a writer's answer that is not JSON has none).
    pub draft: Option<ModelDraft>,
    /// The tool it was for, if known.
    pub tool: Option<String>,
    /// `writer` (the writer host's answer refused before any trial) or `verification`.
    pub stage: Stage,
    /// Why: `names the tool`, `another tool chosen: find_issues`, `no tool called`, `wrong
    /// arguments: …`, `a failed check: …`, `not JSON: …`.
    pub reason: String,
    /// The model's calls in the failing trials (tool and arguments as JSON), one per line.
    pub calls: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Drafted by templates and refused before any trial.
    Template,
    Writer,
    Verification,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Template => "template",
            Stage::Writer => "writer",
            Stage::Verification => "verification",
        }
    }
}

/// What drafting gave: the drafts to verify, the ones turned down at once, and the writer
/// host's tokens (zero for templates).
#[derive(Debug, Clone, Default)]
pub struct Drafts {
    pub drafts: Vec<ModelDraft>,
    pub rejected: Vec<Rejected>,
    pub writer_input_tokens: u64,
    pub writer_output_tokens: u64,
    /// Lines for the report (a writer that failed for a tool, say).
    pub notes: Vec<String>,
    /// The tools templates could write no sensible request for: a `TODO` stub each.
    pub todo: Vec<super::todo::Todo>,
}

/// Why a draft cannot be a task, checked before any trial: its request names its tool (the
/// lint's rule), it expects a tool the server does not list, or the arguments it expects are
/// ones the tool's input schema refuses (literal values only: a `{regex: …}` is not checked).
/// `None`: the draft may go to verification.
pub fn refuse(draft: &ModelDraft, tools: &[rmcp::model::Tool]) -> Option<String> {
    if let Some(first) = &draft.first_turn {
        let turn = ModelDraft {
            prompt: first.prompt.clone(),
            call: Some(first.call.clone()),
            first_turn: None,
            ..draft.clone()
        };
        if let Some(why) = refuse(&turn, tools) {
            return Some(format!("its first turn: {why}"));
        }
    }
    if draft.prompt.trim().is_empty() {
        return Some("the request is empty".into());
    }
    let Some(call) = &draft.call else {
        // A no-tool request must not name any tool: it would read as asking for it.
        return (tools.iter())
            .find_map(|t| crate::suite::named_in(&draft.prompt, &t.name).map(|s| (t, s)))
            .map(|(t, s)| format!("the request names the tool `{}` (as \"{s}\")", t.name));
    };
    let Some(tool) = tools.iter().find(|t| t.name == call.tool.as_str()) else {
        return Some(format!(
            "it expects `{}`, which the server does not list",
            call.tool
        ));
    };
    if let Some(spelled) = crate::suite::named_in(&draft.prompt, &call.tool) {
        return Some(format!(
            "the request names the tool `{}` (as \"{spelled}\"): a model could pick it by its \
             name alone",
            call.tool
        ));
    }
    let schema = Value::Object((*tool.input_schema).clone());
    let properties = schema["properties"].as_object();
    for (name, value) in &call.args {
        let Some(prop) = properties.and_then(|p| p.get(name)) else {
            if properties.is_some() || schema["additionalProperties"] == json!(false) {
                return Some(format!(
                    "argument `{name}` is not in the input schema of `{}`",
                    call.tool
                ));
            }
            continue;
        };
        if is_matcher(value) {
            continue;
        }
        // A parameter schema that does not compile alone (a `$ref` into the whole schema)
        // is not checked here: verification will show a refused call.
        let Ok(validator) = jsonschema::validator_for(prop) else {
            continue;
        };
        if !validator.is_valid(value) {
            return Some(format!(
                "argument `{name}` = {value} is refused by the input schema of `{}`",
                call.tool
            ));
        }
    }
    None
}

/// A `{regex: …}` matcher rather than a literal value.
fn is_matcher(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|o| o.len() == 1 && o.contains_key("regex"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draft_is_a_task_the_loader_takes() {
        let mut args = Map::new();
        args.insert("id".into(), json!(3));
        let tool = ModelDraft {
            id: "model-get-issue-1".into(),
            tool: Some("get_issue".into()),
            prompt: "Show me issue 3: \"it\" breaks".into(),
            call: Some(ExpectedCall {
                tool: "get_issue".into(),
                args,
                is_error: Some(false),
            }),
            forbidden: vec!["find_issues".into()],
            purpose: Purpose::Confusion {
                other: "find_issues".into(),
            },
            origin: Origin::Templated,
            first_turn: None,
        };
        let none = ModelDraft {
            id: "no-tool-hello".into(),
            tool: None,
            prompt: "Hello".into(),
            call: None,
            forbidden: vec![],
            purpose: Purpose::NoToolGeneral,
            origin: Origin::Templated,
            first_turn: None,
        };
        let text = format!("{}{}", tool.yaml("one\ntwo"), none.yaml("three"));
        let suite = crate::suite::load_sources(&[("t.yaml".into(), text)]).unwrap();
        assert_eq!(suite.tasks.len(), 2);
        assert_eq!(suite.tasks[0].prompt, "Show me issue 3: \"it\" breaks");
        assert_eq!(suite.tasks[0].expect.forbidden_tools, ["find_issues"]);
        assert_eq!(suite.tasks[1].kind, crate::suite::TaskKind::NoTool);
    }

    #[test]
    fn a_draft_that_names_its_tool_or_breaks_the_schema_is_refused_before_any_trial() {
        let schema = json!({"type": "object", "properties": {
            "id": {"type": "integer"}, "status": {"enum": ["open", "closed"]}}});
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        let tools = [rmcp::model::Tool::new(
            "get_issue".to_owned(),
            "Get one issue.".to_owned(),
            std::sync::Arc::new(schema),
        )];
        let draft = |prompt: &str, tool: &str, args: Value| ModelDraft {
            id: "t".into(),
            tool: Some(tool.into()),
            prompt: prompt.into(),
            call: Some(ExpectedCall {
                tool: tool.into(),
                args: args.as_object().cloned().unwrap_or_default(),
                is_error: Some(false),
            }),
            forbidden: vec![],
            purpose: Purpose::Serves,
            origin: Origin::Templated,
            first_turn: None,
        };
        let ok = draft("Show me issue 3", "get_issue", json!({"id": 3}));
        assert_eq!(refuse(&ok, &tools), None);
        let regex = draft(
            "Show me issue 3",
            "get_issue",
            json!({"id": {"regex": "3"}}),
        );
        assert_eq!(refuse(&regex, &tools), None, "a matcher is not a value");
        let named = draft("Use get issue for 3", "get_issue", json!({"id": 3}));
        assert!(refuse(&named, &tools)
            .unwrap()
            .contains("names the tool `get_issue`"));
        let typed = draft("Show me issue abc", "get_issue", json!({"id": "abc"}));
        assert!(refuse(&typed, &tools)
            .unwrap()
            .contains("`id` = \"abc\" is refused"));
        let status = draft("Show me issue 3", "get_issue", json!({"status": "gone"}));
        assert!(refuse(&status, &tools).is_some());
        let unknown = draft("Show me issue 3", "get_issue", json!({"issue_id": 3}));
        assert!(refuse(&unknown, &tools)
            .unwrap()
            .contains("`issue_id` is not in the input schema"));
        let missing = draft("Show me issue 3", "fetch_issue", json!({}));
        assert!(refuse(&missing, &tools).unwrap().contains("does not list"));
        let mut quiet = ok.clone();
        quiet.call = None;
        quiet.prompt = "What does get_issue do?".into();
        assert!(
            refuse(&quiet, &tools).is_some(),
            "a no-tool request names no tool"
        );
    }
}
