//! The graders of a `kind: call` task: exact checks of one request's answer (is it an error,
//! which code, what text, what structured content, does it fit the tool's outputSchema).

use serde_json::Value;

use super::matchers::{case_note, json_equal, show_value, texts_in_case};
use super::{check, snapshot, Check, Grade};
use crate::mcp::CallOutcome;
use crate::suite::{CallExpectations, StructuredCheck};

/// How many schema violations a check names before "and N more".
const MAX_LISTED_ERRORS: usize = 3;

/// One answer as the call graders see it.
#[derive(Debug, Clone, Copy)]
pub struct CallAnswer<'a> {
    pub outcome: &'a CallOutcome,
    /// The answer as text: the result's text, or the error's message.
    pub text: &'a str,
    pub latency_ms: f64,
    /// The called tool's `outputSchema` on this side (`None`: it declares none, or the request
    /// is no tool call).
    pub output_schema: Option<&'a Value>,
}

/// Grades one answer; every check the task sets runs; success = all pass.
pub fn grade_call(expect: &CallExpectations, answer: &CallAnswer<'_>) -> Grade {
    let mut checks = Vec::new();
    if let Some(wanted) = expect.is_error {
        checks.push(is_error(wanted, answer.outcome));
    }
    if let Some(code) = expect.error_code {
        checks.push(error_code(code, answer.outcome));
    }
    let case = expect.case_sensitive;
    if !expect.result_contains.is_empty() {
        checks.push(result_contains(&expect.result_contains, answer.text, case));
    }
    if !expect.result_not_contains.is_empty() {
        checks.push(result_not_contains(
            &expect.result_not_contains,
            answer.text,
            case,
        ));
    }
    if let Some(expected) = &expect.result_equals {
        checks.push(snapshot::result_equals(expected, answer.text));
    }
    if let Some(stored) = &expect.result_snapshot {
        checks.push(snapshot::result_snapshot(stored, answer.text));
    }
    if let Some(max) = expect.max_result_chars {
        checks.push(max_result_chars(max, answer.text));
    }
    if !expect.structured.is_empty() {
        checks.push(structured(
            &expect.structured,
            structured_of(answer.outcome),
        ));
    }
    if expect.output_schema {
        checks.push(output_schema(
            answer.output_schema,
            structured_of(answer.outcome),
        ));
    }
    if let Some(max) = expect.max_latency_ms {
        let passed = answer.latency_ms <= max as f64;
        let relation = if passed { "within" } else { "over" };
        let took = answer.latency_ms;
        checks.push(check(
            "max_latency_ms",
            passed,
            format!("answered in {took:.0} ms, {relation} the {max} ms allowed"),
        ));
    }
    let success = !checks.is_empty() && checks.iter().all(|c| c.passed);
    Grade { success, checks }
}

/// What the answer was, in words: "a result", "a result with isError: true", "JSON-RPC error
/// -32602 (unknown tool)", "no answer in time".
pub fn describe(outcome: &CallOutcome) -> String {
    match outcome {
        CallOutcome::Result {
            is_error: false, ..
        } => "a result".to_owned(),
        CallOutcome::Result {
            is_error: true,
            text,
            ..
        } => format!("a result with isError: true ({})", first_line(text, 80)),
        CallOutcome::ProtocolError { code, message, .. } => {
            format!("JSON-RPC error {code} ({})", first_line(message, 80))
        }
        CallOutcome::Timeout => "no answer in time".to_owned(),
    }
}

fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

fn is_error(wanted: bool, outcome: &CallOutcome) -> Check {
    let passed = matches!(outcome, CallOutcome::Result { is_error, .. } if *is_error == wanted);
    let expected = match wanted {
        true => "a result with isError: true",
        false => "a result without isError",
    };
    check(
        "is_error",
        passed,
        format!("expected {expected}, got {}", describe(outcome)),
    )
}

fn error_code(code: i64, outcome: &CallOutcome) -> Check {
    let passed = matches!(outcome, CallOutcome::ProtocolError { code: got, .. } if *got == code);
    check(
        "error_code",
        passed,
        format!("expected JSON-RPC error {code}, got {}", describe(outcome)),
    )
}

fn result_contains(texts: &[String], text: &str, case_sensitive: bool) -> Check {
    let missing: Vec<String> = texts_in_case(texts, text, false, case_sensitive)
        .into_iter()
        .map(|t| format!("\"{t}\""))
        .collect();
    let case = case_note(case_sensitive);
    match missing.is_empty() {
        true => check(
            "result_contains",
            true,
            format!("the answer contains all {} text(s){case}", texts.len()),
        ),
        false => check(
            "result_contains",
            false,
            format!(
                "the answer lacks {}{case}: \"{}\"",
                missing.join(", "),
                first_line(text, 120)
            ),
        ),
    }
}

fn result_not_contains(texts: &[String], text: &str, case_sensitive: bool) -> Check {
    let found: Vec<String> = texts_in_case(texts, text, true, case_sensitive)
        .into_iter()
        .map(|t| format!("\"{t}\""))
        .collect();
    let case = case_note(case_sensitive);
    match found.is_empty() {
        true => check(
            "result_not_contains",
            true,
            format!("the answer contains none of {} text(s){case}", texts.len()),
        ),
        false => check(
            "result_not_contains",
            false,
            format!("the answer contains {}{case}", found.join(", ")),
        ),
    }
}

/// `max_result_chars`: the answer's text is at most `max` characters long.
fn max_result_chars(max: u64, text: &str) -> Check {
    let n = text.chars().count() as u64;
    let passed = n <= max;
    let relation = if passed { "within" } else { "over" };
    check(
        "max_result_chars",
        passed,
        format!("the answer has {n} characters, {relation} the {max} allowed"),
    )
}

/// The structured content of an answer: a tool's `structuredContent`, a resource's or prompt's
/// whole result; none for an error.
fn structured_of(outcome: &CallOutcome) -> Option<&Value> {
    match outcome {
        CallOutcome::Result { structured, .. } => structured.as_ref(),
        _ => None,
    }
}

fn structured(checks: &[StructuredCheck], content: Option<&Value>) -> Check {
    let Some(content) = content else {
        return check(
            "structured",
            false,
            "the answer has no structured content".to_owned(),
        );
    };
    let mut failed = Vec::new();
    for c in checks {
        let Ok(path) = serde_json_path::JsonPath::parse(&c.path) else {
            failed.push(format!("`{}` is not a JSONPath", c.path));
            continue;
        };
        let nodes = path.query(content).all();
        match (&c.equals, nodes.as_slice()) {
            (_, []) => failed.push(format!("`{}` finds nothing", c.path)),
            (None, _) => {}
            (Some(want), found) => {
                if let Some(other) = found.iter().find(|n| !json_equal(n, want)) {
                    failed.push(format!(
                        "`{}` is {}, expected {}",
                        c.path,
                        show_value(other),
                        show_value(want)
                    ));
                }
            }
        }
    }
    match failed.is_empty() {
        true => check(
            "structured",
            true,
            format!("{} path check(s) hold", checks.len()),
        ),
        false => check("structured", false, failed.join("; ")),
    }
}

fn output_schema(schema: Option<&Value>, content: Option<&Value>) -> Check {
    let Some(schema) = schema else {
        return check(
            "output_schema",
            false,
            "the tool declares no outputSchema on this side".to_owned(),
        );
    };
    let Some(content) = content else {
        return check(
            "output_schema",
            false,
            "the answer has no structuredContent to validate".to_owned(),
        );
    };
    let validator = match jsonschema::validator_for(schema) {
        Ok(v) => v,
        Err(e) => {
            return check(
                "output_schema",
                false,
                format!("the tool's outputSchema does not compile: {e}"),
            )
        }
    };
    let errors: Vec<String> = validator
        .iter_errors(content)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "/".to_owned() } else { at };
            format!("at {at}: {e}")
        })
        .collect();
    match errors.len() {
        0 => check(
            "output_schema",
            true,
            "the structured content validates against the tool's outputSchema".to_owned(),
        ),
        n => {
            let mut shown: Vec<String> = errors.into_iter().take(MAX_LISTED_ERRORS).collect();
            if n > MAX_LISTED_ERRORS {
                shown.push(format!("and {} more", n - MAX_LISTED_ERRORS));
            }
            check(
                "output_schema",
                false,
                format!(
                    "the structured content breaks the tool's outputSchema: {}",
                    shown.join("; ")
                ),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn result(is_error: bool, text: &str, structured: Option<Value>) -> CallOutcome {
        CallOutcome::Result {
            is_error,
            text: text.to_owned(),
            structured,
            replay_unmatched: false,
        }
    }

    fn grade(expect: CallExpectations, outcome: &CallOutcome, schema: Option<&Value>) -> Grade {
        let text = match outcome {
            CallOutcome::Result { text, .. } => text.clone(),
            CallOutcome::ProtocolError { message, .. } => message.clone(),
            CallOutcome::Timeout => String::new(),
        };
        let answer = CallAnswer {
            outcome,
            text: &text,
            latency_ms: 12.0,
            output_schema: schema,
        };
        grade_call(&expect, &answer)
    }

    #[test]
    fn is_error_tells_a_tool_error_from_a_protocol_error() {
        let expect = CallExpectations {
            is_error: Some(true),
            ..Default::default()
        };
        assert!(grade(expect.clone(), &result(true, "not found", None), None).success);
        let protocol = CallOutcome::ProtocolError {
            code: -32602,
            message: "unknown tool".into(),
            data: None,
        };
        let g = grade(expect, &protocol, None);
        assert!(!g.success);
        assert_eq!(
            g.checks[0].explanation,
            "expected a result with isError: true, got JSON-RPC error -32602 (unknown tool)"
        );
    }

    #[test]
    fn error_code_needs_that_code() {
        let expect = CallExpectations {
            error_code: Some(-32602),
            ..Default::default()
        };
        let wrong = CallOutcome::ProtocolError {
            code: -32002,
            message: "resource not found".into(),
            data: None,
        };
        let g = grade(expect.clone(), &wrong, None);
        assert!(!g.success);
        assert!(g.checks[0]
            .explanation
            .contains("got JSON-RPC error -32002"));
        let g = grade(expect, &result(true, "x", None), None);
        assert!(g.checks[0]
            .explanation
            .ends_with("got a result with isError: true (x)"));
    }

    #[test]
    fn texts_are_found_case_insensitively_and_forbidden_ones_fail() {
        let expect = CallExpectations {
            result_contains: vec!["Not Found".into()],
            result_not_contains: vec!["stack trace".into()],
            ..Default::default()
        };
        assert!(
            grade(
                expect.clone(),
                &result(true, "issue 9 not found", None),
                None
            )
            .success
        );
        let g = grade(
            expect,
            &result(true, "panic: stack trace follows", None),
            None,
        );
        assert!(!g.success);
        let failed: Vec<&str> = g
            .checks
            .iter()
            .filter(|c| !c.passed)
            .map(|c| c.grader.as_str())
            .collect();
        assert_eq!(failed, ["result_contains", "result_not_contains"]);
    }

    #[test]
    fn structured_paths_find_and_compare_values() {
        let content = json!({"issue": {"state": "open", "id": 5, "labels": ["a", "b"]}});
        let at = |path: &str, equals: Option<Value>| StructuredCheck {
            path: path.into(),
            equals,
        };
        let expect = CallExpectations {
            structured: vec![
                at("$.issue.state", Some(json!("open"))),
                at("$.issue.id", Some(json!(5.0))),
                at("$.issue.labels[1]", None),
            ],
            ..Default::default()
        };
        let ok = result(false, "", Some(content.clone()));
        assert!(grade(expect, &ok, None).success);
        let expect = CallExpectations {
            structured: vec![
                at("$.issue.state", Some(json!("closed"))),
                at("$.issue.owner", None),
            ],
            ..Default::default()
        };
        let g = grade(expect, &ok, None);
        assert!(!g.success);
        assert_eq!(
            g.checks[0].explanation,
            "`$.issue.state` is \"open\", expected \"closed\"; `$.issue.owner` finds nothing"
        );
        let none = CallExpectations {
            structured: vec![at("$.a", None)],
            ..Default::default()
        };
        let g = grade(none, &result(false, "text only", None), None);
        assert_eq!(
            g.checks[0].explanation,
            "the answer has no structured content"
        );
    }

    #[test]
    fn output_schema_validates_the_structured_content() {
        let schema = json!({
            "type": "object",
            "properties": {"id": {"type": "integer"}, "state": {"enum": ["open", "closed"]}},
            "required": ["id", "state"]
        });
        let expect = CallExpectations {
            output_schema: true,
            ..Default::default()
        };
        let good = result(false, "", Some(json!({"id": 1, "state": "open"})));
        assert!(grade(expect.clone(), &good, Some(&schema)).success);
        let bad = result(false, "", Some(json!({"id": "1", "state": "gone"})));
        let g = grade(expect.clone(), &bad, Some(&schema));
        assert!(!g.success);
        let why = &g.checks[0].explanation;
        assert!(why.contains("at /id") && why.contains("at /state"), "{why}");
        let g = grade(expect, &good, None);
        assert_eq!(
            g.checks[0].explanation,
            "the tool declares no outputSchema on this side"
        );
    }
}
