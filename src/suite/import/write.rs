//! Writes imported cases as one mcpeval task file: the tasks, each under comments saying what
//! of it did not convert.

use std::collections::HashSet;
use std::fmt::Write as _;

use serde_json::Value;

use super::case::{Call, Case, Fixture};
use crate::suite::task::ToolName;

/// What became of one case: its task id (`None`: left out), what did not convert and notes.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseReport {
    pub name: String,
    pub id: Option<String>,
    pub not_converted: Vec<String>,
    pub notes: Vec<String>,
}

/// A task file's text (`None` when no case converted) and the report of each case.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub yaml: Option<String>,
    pub cases: Vec<CaseReport>,
}

/// The task ids taken so far in one import, so that ids stay unique across its files.
#[derive(Debug, Default)]
pub struct Ids(HashSet<String>);

impl Ids {
    /// The slug of `name`, made unique with `-2`, `-3`…
    pub fn unique(&mut self, name: &str) -> String {
        let base = slug(name);
        let mut id = base.clone();
        let mut n = 1;
        while self.0.contains(&id) {
            n += 1;
            id = format!("{base}-{n}");
        }
        self.0.insert(id.clone());
        id
    }
}

/// A task id from a name: lower-case ASCII letters and digits, other runs made one `-`, at
/// most 60 characters; `case` for a name with none.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.truncate(60);
    let out = out.trim_end_matches('-');
    if out.is_empty() {
        "case".to_owned()
    } else {
        out.to_owned()
    }
}

/// Writes the cases as a task file headed by `header` lines (comments). A case with no prompt
/// or no check is left out, named in a comment with its reasons.
pub fn write(header: &[String], cases: &[Case], judge_host: &str, ids: &mut Ids) -> Written {
    let mut yaml = String::new();
    for line in header {
        comment(&mut yaml, line);
    }
    let mut reports = Vec::new();
    let mut any = false;
    for case in cases {
        let mut report = CaseReport {
            name: case.name.clone(),
            id: None,
            not_converted: case.not_converted.clone(),
            notes: case.notes.clone(),
        };
        yaml.push('\n');
        match &case.prompt {
            Some(prompt) if case.has_check() => {
                let id = ids.unique(&case.name);
                if slug(&case.name) != case.name {
                    comment(&mut yaml, &format!("from {:?}", case.name));
                }
                lines(&mut yaml, case);
                task(&mut yaml, &id, prompt, case, judge_host);
                report.id = Some(id);
                any = true;
            }
            prompt => {
                let why = if prompt.is_none() {
                    "no prompt could be made"
                } else {
                    "none of its checks converts"
                };
                comment(&mut yaml, &format!("left out {:?}: {why}", case.name));
                lines(&mut yaml, case);
                report.not_converted.push(format!("the whole case: {why}"));
            }
        }
        reports.push(report);
    }
    Written {
        yaml: any.then_some(yaml),
        cases: reports,
    }
}

/// The not-converted and note lines of a case, as comments.
fn lines(yaml: &mut String, case: &Case) {
    for what in &case.not_converted {
        comment(yaml, &format!("not converted: {what}"));
    }
    for what in &case.notes {
        comment(yaml, &format!("note: {what}"));
    }
}

/// One comment line (line breaks in `text` become spaces).
fn comment(yaml: &mut String, text: &str) {
    let text = text.replace(['\n', '\r'], " ");
    let _ = writeln!(yaml, "# {}", text.trim_end());
}

fn task(yaml: &mut String, id: &str, prompt: &str, case: &Case, judge_host: &str) {
    let _ = writeln!(yaml, "- id: {}", scalar(id));
    if case.turns.is_empty() {
        let _ = writeln!(yaml, "  prompt: {}", scalar(prompt));
    } else {
        yaml.push_str("  turns:\n");
        for turn in &case.turns {
            let prompt = turn.prompt.as_deref().unwrap_or_default();
            let _ = writeln!(yaml, "    - prompt: {}", scalar(prompt));
            if turn.grades_whole() {
                yaml.push_str("      expect:\n");
                expect(yaml, "        ", turn, judge_host);
            }
        }
    }
    fixtures(yaml, "  setup", &case.setup);
    fixtures(yaml, "  teardown", &case.teardown);
    if case.turns.is_empty() || case.grades_whole() {
        yaml.push_str("  expect:\n");
        expect(yaml, "    ", case, judge_host);
    }
}

/// The keys of an `expect`, each line indented by `pad`.
fn expect(yaml: &mut String, pad: &str, case: &Case, judge_host: &str) {
    if !case.calls.is_empty() {
        let _ = writeln!(yaml, "{pad}calls:");
        for call in &case.calls {
            expected_call(yaml, pad, call);
        }
    }
    if case.ordered() {
        let _ = writeln!(yaml, "{pad}ordered: true");
    }
    let list = |yaml: &mut String, key: &str, items: &[String]| {
        if !items.is_empty() {
            let items: Vec<String> = items.iter().map(|i| scalar(i)).collect();
            let _ = writeln!(yaml, "{pad}{key}: [{}]", items.join(", "));
        }
    };
    list(yaml, "forbidden_tools", &case.forbidden_tools);
    if let Some(n) = case.max_tool_calls {
        let _ = writeln!(yaml, "{pad}max_tool_calls: {n}");
    }
    if let Some(n) = case.min_tool_calls {
        let _ = writeln!(yaml, "{pad}min_tool_calls: {n}");
    }
    list(yaml, "answer_contains", &case.answer_contains);
    list(yaml, "answer_not_contains", &case.answer_not_contains);
    if let Some(regex) = &case.answer_regex {
        let _ = writeln!(yaml, "{pad}answer_regex: {}", quoted(regex));
    }
    if let Some(ms) = case.max_latency_ms {
        let _ = writeln!(yaml, "{pad}max_latency_ms: {ms}");
    }
    list(yaml, "resources_read", &case.resources_read);
    list(yaml, "resources_not_read", &case.resources_not_read);
    list(yaml, "prompts_used", &case.prompts_used);
    list(yaml, "prompts_not_used", &case.prompts_not_used);
    if !case.after.is_empty() {
        let _ = writeln!(yaml, "{pad}after:");
        for after in &case.after {
            let _ = writeln!(yaml, "{pad}  - call: {}", fixture(&after.call));
            let _ = writeln!(yaml, "{pad}    expect: {{is_error: {}}}", after.is_error);
        }
    }
    if let Some(rubric) = rubric(&case.rubrics) {
        let _ = writeln!(yaml, "{pad}judge:");
        let _ = writeln!(yaml, "{pad}  rubric: {}", quoted(&rubric));
        let _ = writeln!(yaml, "{pad}  host: {}", scalar(judge_host));
    }
}

/// `KEY:` and its calls, one per line (nothing when there are none).
fn fixtures(yaml: &mut String, key: &str, calls: &[Fixture]) {
    if !calls.is_empty() {
        let _ = writeln!(yaml, "{key}:");
        for call in calls {
            let _ = writeln!(yaml, "    - {}", fixture(call));
        }
    }
}

/// A fixture call in flow style: `{tool: NAME, args: {…}}`.
fn fixture(call: &Fixture) -> String {
    if call.args.is_empty() {
        format!("{{tool: {}}}", scalar(&call.tool))
    } else {
        let args = flow(&Value::Object(call.args.clone()));
        format!("{{tool: {}, args: {args}}}", scalar(&call.tool))
    }
}

/// One rubric, or several joined: each must hold.
fn rubric(rubrics: &[String]) -> Option<String> {
    match rubrics {
        [] => None,
        [one] => Some(one.clone()),
        many => {
            let items: Vec<String> = many.iter().map(|r| format!("- {r}")).collect();
            Some(format!("Each of these holds:\n{}", items.join("\n")))
        }
    }
}

fn expected_call(yaml: &mut String, pad: &str, call: &Call) {
    let tool = match &call.tool {
        ToolName::Literal(name) => scalar(name),
        ToolName::AnyOf { any_of } => {
            let names: Vec<String> = any_of.iter().map(|n| scalar(n)).collect();
            format!("{{any_of: [{}]}}", names.join(", "))
        }
        ToolName::Pattern { pattern } => format!("{{pattern: {}}}", quoted(pattern)),
    };
    let _ = writeln!(yaml, "{pad}  - tool: {tool}");
    if !call.args.is_empty() {
        let args: Vec<String> = call
            .args
            .iter()
            .map(|(name, value)| {
                let value = match value {
                    Value::Object(_) => format!("{{exact: {}}}", flow(value)),
                    other => flow(other),
                };
                format!("{}: {value}", scalar(name))
            })
            .collect();
        let _ = writeln!(yaml, "{pad}    args: {{{}}}", args.join(", "));
    }
}

/// A JSON value in YAML's flow style.
fn flow(value: &Value) -> String {
    match value {
        Value::String(s) => scalar(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(flow).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(entries) => {
            let entries: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", scalar(k), flow(v)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        other => other.to_string(),
    }
}

/// A string as a plain YAML scalar when that reads back as the same string (`search_issues`,
/// `apollo`), double-quoted otherwise.
fn scalar(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n"
        );
    if plain {
        s.to_owned()
    } else {
        quoted(s)
    }
}

/// A double-quoted YAML scalar: JSON's escapes are YAML's.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::suite::load_sources;

    #[test]
    fn slugs_are_valid_ids_and_unique() {
        assert_eq!(
            slug("Search open issues: login!"),
            "search-open-issues-login"
        );
        assert_eq!(slug("  ¿Qué?  "), "qu");
        assert_eq!(slug("***"), "case");
        let mut ids = Ids::default();
        assert_eq!(ids.unique("A b"), "a-b");
        assert_eq!(ids.unique("a-b"), "a-b-2");
        assert_eq!(ids.unique("A  B"), "a-b-3");
    }

    #[test]
    fn written_tasks_validate_and_read_back_the_same() {
        let mut case = Case::named("Find: login issues");
        case.prompt = Some("Find \"login\" issues: #1\nplease".into());
        let mut args = std::collections::BTreeMap::new();
        args.insert("project".to_owned(), Value::from("apollo"));
        args.insert("filter".to_owned(), serde_json::json!({"state": "open"}));
        args.insert("id".to_owned(), Value::from(3));
        args.insert("tags".to_owned(), serde_json::json!(["a b", "true"]));
        case.expect_with_args("search_issues".into(), args);
        case.expect(ToolName::AnyOf {
            any_of: vec!["get_issue".into(), "fetch_issue".into()],
        });
        case.expect(ToolName::Pattern {
            pattern: ".*issue.*".into(),
        });
        case.forbid("delete_issue");
        case.answer_contains("yes");
        case.answer_not_contains("null");
        case.answer_regex("(?i)\\d+ issues?".into(), "regex");
        case.max_calls(4);
        case.min_calls(1);
        case.rubrics = vec!["It lists them.".into(), "It is polite.".into()];
        case.not_converted("`javascript` assertion");
        case.finish();
        let mut left_out = Case::named("nothing");
        left_out.prompt = Some("p".into());
        left_out.not_converted("`is-json` assertion");
        let written = write(
            &["Imported from x.yaml".to_owned()],
            &[case, left_out],
            "openai:gpt-4.1-mini",
            &mut Ids::default(),
        );
        let yaml = written.yaml.unwrap();
        assert!(
            yaml.contains("# not converted: `javascript` assertion"),
            "{yaml}"
        );
        assert!(
            yaml.contains("# left out \"nothing\": none of its checks converts"),
            "{yaml}"
        );
        let suite = load_sources(&[(PathBuf::from("x.yaml"), yaml.clone())])
            .unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        let [task] = suite.tasks.as_slice() else {
            panic!("one task: {yaml}")
        };
        assert_eq!(task.id, "find-login-issues");
        assert_eq!(task.prompt, "Find \"login\" issues: #1\nplease");
        let expect = &task.expect;
        assert_eq!(expect.calls.len(), 3);
        let args = &expect.calls[0].args;
        assert_eq!(
            args["filter"],
            crate::suite::ArgMatcher::Exact {
                exact: serde_json::json!({"state": "open"})
            }
        );
        assert_eq!(
            args["tags"],
            crate::suite::ArgMatcher::Literal(serde_json::json!(["a b", "true"]))
        );
        assert_eq!(
            args["id"],
            crate::suite::ArgMatcher::Literal(Value::from(3))
        );
        assert_eq!(expect.forbidden_tools, ["delete_issue"]);
        assert_eq!(expect.answer_not_contains, ["null"]);
        assert_eq!(expect.answer_regex.as_deref(), Some("(?i)\\d+ issues?"));
        assert_eq!(
            (expect.min_tool_calls, expect.max_tool_calls),
            (Some(1), Some(4))
        );
        let judge = expect.judge.as_ref().unwrap();
        assert_eq!(judge.host, "openai:gpt-4.1-mini");
        assert_eq!(
            judge.rubric,
            "Each of these holds:\n- It lists them.\n- It is polite."
        );
        assert_eq!(written.cases[0].id.as_deref(), Some("find-login-issues"));
        assert_eq!(written.cases[1].id, None);
        assert!(written.cases[1]
            .not_converted
            .iter()
            .any(|n| n.contains("`is-json`")));
    }

    #[test]
    fn a_conversation_is_written_as_turns_that_validate_and_read_back() {
        let mut find = Case::named("c");
        find.prompt = Some("Find login issues".into());
        find.expect("search_issues".into());
        find.answer_contains("login");
        find.finish();
        let mut close = Case::named("c");
        close.prompt = Some("Close the first one".into());
        let mut args = std::collections::BTreeMap::new();
        args.insert("id".to_owned(), Value::from(1));
        close.expect_with_args("update_issue".into(), args);
        close.rubrics.push("Says it is closed".into());
        close.finish();
        let mut chat = Case::named("c");
        chat.prompt = Some("Thanks!".into());
        let case = Case::conversation("login thread", vec![find, chat, close]);
        let written = write(&[], &[case], "sim", &mut Ids::default());
        let yaml = written.yaml.unwrap();
        let suite = load_sources(&[(PathBuf::from("x.yaml"), yaml.clone())])
            .unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        let [task] = suite.tasks.as_slice() else {
            panic!("one task: {yaml}")
        };
        assert!(task.is_conversation(), "{yaml}");
        let prompts: Vec<&str> = task.turns.iter().map(|t| t.prompt.as_str()).collect();
        assert_eq!(
            prompts,
            ["Find login issues", "Thanks!", "Close the first one"]
        );
        let first = task.turns[0].expect.as_ref().unwrap();
        assert_eq!(first.calls[0].tool, ToolName::from("search_issues"));
        assert_eq!(first.answer_contains, ["login"]);
        assert_eq!(
            task.turns[1].expect, None,
            "a turn with no check is not graded"
        );
        let last = task.turns[2].expect.as_ref().unwrap();
        assert_eq!(
            last.calls[0].args["id"],
            crate::suite::ArgMatcher::Literal(Value::from(1))
        );
        assert!(last.judge.is_none());
        let judge = task
            .expect
            .judge
            .as_ref()
            .expect("the conversation's judge");
        assert_eq!(
            judge.rubric,
            "About the answer to the user's message 3 (\"Close the first one\"): Says it is closed"
        );
    }

    #[test]
    fn nothing_is_written_when_no_case_converts() {
        let mut case = Case::named("c");
        case.prompt = Some("p".into());
        let written = write(&[], &[case], "sim", &mut Ids::default());
        assert_eq!(written.yaml, None);
    }
}
