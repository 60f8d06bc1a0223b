//! The graders themselves: expected calls, forbidden tools, no-tool, answer checks, call budget.

use regex::Regex;
use serde_json::Value;

use super::matchers::{
    assignment, case_note, describe_call, show_value, subsequence, texts_in_case, CallMatcher,
};
use super::position;
use super::{check, Check, Grade, Observed, ObservedCall};
use crate::suite::{position_words, regex_error_summary, Expectations, Task, TaskKind};

/// How many observed calls a message lists before "and N more".
const MAX_LISTED_CALLS: usize = 5;

/// Grades one trial against its task. Every grader the task sets runs; success = all pass.
pub fn grade(task: &Task, observed: &Observed<'_>) -> Grade {
    grade_expect(task.kind, &task.expect, observed)
}

/// Grades what was observed against one set of graders (a task's `expect`, or one user turn's):
/// every grader set runs; success = all pass (and at least one ran).
pub fn grade_expect(kind: TaskKind, expect: &Expectations, observed: &Observed<'_>) -> Grade {
    let calls = &observed.calls;
    let mut checks = Vec::new();
    if !expect.calls.is_empty() {
        let matchers: Vec<CallMatcher<'_>> = expect.calls.iter().map(CallMatcher::new).collect();
        let positions: Vec<Option<i32>> = expect.calls.iter().map(|c| c.position).collect();
        checks.push(expected_calls(&matchers, &positions, expect.ordered, calls));
    }
    if !expect.forbidden_tools.is_empty() {
        checks.push(forbidden_tools(&expect.forbidden_tools, calls));
    }
    if expect.no_tool || kind == TaskKind::NoTool {
        checks.push(no_tool(calls));
    }
    if !expect.answer_contains.is_empty() {
        let case = expect.case_sensitive;
        checks.push(answer_contains(
            &expect.answer_contains,
            observed.answer,
            case,
        ));
    }
    if let Some(pattern) = &expect.answer_regex {
        checks.push(answer_regex(pattern, observed.answer));
    }
    if let Some(max) = expect.max_tool_calls {
        checks.push(max_tool_calls(max, calls.len()));
    }
    if let Some(min) = expect.min_tool_calls {
        checks.push(min_tool_calls(min, calls.len()));
    }
    if !expect.answer_not_contains.is_empty() {
        checks.push(answer_not_contains(
            &expect.answer_not_contains,
            observed.answer,
            expect.case_sensitive,
        ));
    }
    if let Some(max) = expect.max_latency_ms {
        checks.push(max_latency_ms(max, observed.latency_ms));
    }
    let success = !checks.is_empty() && checks.iter().all(|c| c.passed);
    Grade { success, checks }
}

/// `min_tool_calls`: at least `min` calls.
fn min_tool_calls(min: u32, made: usize) -> Check {
    let passed = made >= min as usize;
    let explanation = match passed {
        true => format!("{made} tool call(s), at least {min} expected"),
        false => format!("{made} tool call(s), fewer than the {min} expected"),
    };
    check("min_tool_calls", passed, explanation)
}

/// `answer_not_contains`: none of the texts is in the final answer (case-insensitive unless
/// `case_sensitive`).
fn answer_not_contains(texts: &[String], answer: Option<&str>, case_sensitive: bool) -> Check {
    let case = case_note(case_sensitive);
    let found: Vec<String> = texts_in_case(texts, answer.unwrap_or_default(), true, case_sensitive)
        .into_iter()
        .map(|t| format!("\"{t}\""))
        .collect();
    match found.is_empty() {
        true => check(
            "answer_not_contains",
            true,
            format!(
                "the answer contains none of {} forbidden text(s){case}",
                texts.len()
            ),
        ),
        false => check(
            "answer_not_contains",
            false,
            format!("the answer contains {}{case}", found.join(", ")),
        ),
    }
}

/// `max_latency_ms`: the trial took at most `max` ms. A trial whose time is not known fails
/// (it cannot be shown to be in time).
fn max_latency_ms(max: u64, latency_ms: Option<f64>) -> Check {
    let Some(took) = latency_ms else {
        return check(
            "max_latency_ms",
            false,
            "the trial's time is not known".to_owned(),
        );
    };
    let passed = took <= max as f64;
    let relation = if passed { "within" } else { "over" };
    check(
        "max_latency_ms",
        passed,
        format!("the trial took {took:.0} ms, {relation} the {max} ms allowed"),
    )
}

/// `expected_calls`: each expected call is matched by a distinct observed call (the one at its
/// `position`, when it has one); when `ordered`, the matches must come in order (a greedy
/// subsequence of the observed calls).
fn expected_calls(
    expected: &[CallMatcher<'_>],
    positions: &[Option<i32>],
    ordered: bool,
    calls: &[ObservedCall<'_>],
) -> Check {
    let n = calls.len();
    let fits: Vec<Vec<bool>> = expected
        .iter()
        .zip(positions)
        .map(|(e, &p)| {
            let fit = |(i, c)| position::allows(p, i, n) && e.matches(c);
            calls.iter().enumerate().map(fit).collect()
        })
        .collect();
    let assigned = if ordered {
        subsequence(&fits)
    } else {
        assignment(&fits, calls.len())
    };
    let mut problems = Vec::new();
    for (index, e) in expected.iter().enumerate() {
        if assigned[index].is_none() {
            let previous = assigned[..index].iter().rev().flatten().next().copied();
            if let Some(p) = positions[index] {
                let missed = position::Missed {
                    ordered,
                    previous,
                    fits: &fits[index],
                };
                problems.push(position::explain(e, p, &missed, calls));
                continue;
            }
            let context = Unmatched {
                ordered,
                previous,
                fits: &fits[index],
            };
            problems.push(explain_unmatched(e, &context, calls));
        }
    }
    if problems.is_empty() {
        let matched: Vec<String> = expected
            .iter()
            .zip(&assigned)
            .zip(positions)
            .map(|((e, at), p)| {
                let at = at.map_or(0, |i| i + 1);
                match p {
                    Some(p) => format!("{} (call {at}, {})", e.tool, position_words(*p)),
                    None => format!("{} (call {at})", e.tool),
                }
            })
            .collect();
        let order = if ordered { " in order" } else { "" };
        let n = expected.len();
        let noun = if n == 1 { "call was" } else { "calls were" };
        let explanation = format!("{n} expected {noun} made{order}: {}", matched.join(", "));
        return check("expected_calls", true, explanation);
    }
    check("expected_calls", false, problems.join("; "))
}

/// What is known about an expected call that found no observed call.
struct Unmatched<'f> {
    ordered: bool,
    /// The observed call matched to the closest earlier expected call (ordered matching).
    previous: Option<usize>,
    /// Which observed calls would satisfy this expectation on their own.
    fits: &'f [bool],
}

/// Why an expected call was not matched: against the closest call of the same tool (which
/// arguments differed), or naming the tools that were called.
fn explain_unmatched(
    e: &CallMatcher<'_>,
    context: &Unmatched<'_>,
    calls: &[ObservedCall<'_>],
) -> String {
    let wanted = format!("expected {}", e.describe());
    if calls.is_empty() {
        return format!("{wanted}, got no tool call");
    }
    // A call that satisfies this expectation exists, but it went to another expected call, or
    // (ordered) came too early: say so rather than compare arguments that did match.
    if let Some(call) = context.fits.iter().rposition(|&fit| fit) {
        let n = call + 1;
        return match context.previous {
            Some(previous) if context.ordered && call != previous => format!(
                "{wanted} after call {} ({}), but the matching call {n} came before it",
                previous + 1,
                describe_call(calls[previous].tool, calls[previous].arguments)
            ),
            _ => format!(
                "{wanted} once more: the matching call {n} already counts for another expected call"
            ),
        };
    }
    let closest = calls
        .iter()
        .enumerate()
        .filter(|(_, c)| e.is_tool(c.tool))
        .map(|(i, c)| {
            let mut mismatches = e.mismatches(c.arguments);
            mismatches.extend(e.result_mismatches(c.result, c.is_error));
            (i, mismatches)
        })
        .min_by_key(|(_, mismatches)| mismatches.len());
    if let Some((i, mismatches)) = closest {
        let got = describe_call(calls[i].tool, calls[i].arguments);
        return format!(
            "{wanted}, got {got} (call {}): {}",
            i + 1,
            mismatches.join(", ")
        );
    }
    format!("{wanted}, got {}", list_calls(calls))
}

/// The observed calls in words, the first few of them.
fn list_calls(calls: &[ObservedCall<'_>]) -> String {
    let mut listed: Vec<String> = calls
        .iter()
        .take(MAX_LISTED_CALLS)
        .map(|c| describe_call(c.tool, c.arguments))
        .collect();
    if calls.len() > MAX_LISTED_CALLS {
        listed.push(format!("and {} more", calls.len() - MAX_LISTED_CALLS));
    }
    listed.join(", ")
}

/// `forbidden_tools`: none of these tools was called.
fn forbidden_tools(forbidden: &[String], calls: &[ObservedCall<'_>]) -> Check {
    let mut hits: Vec<String> = Vec::new();
    for tool in forbidden {
        let at: Vec<String> = calls
            .iter()
            .enumerate()
            .filter(|(_, c)| c.tool == tool)
            .map(|(i, _)| (i + 1).to_string())
            .collect();
        if !at.is_empty() {
            let plural = if at.len() == 1 { "" } else { "s" };
            hits.push(format!("`{tool}` (call{plural} {})", at.join(", ")));
        }
    }
    if hits.is_empty() {
        let names: Vec<String> = forbidden.iter().map(|t| format!("`{t}`")).collect();
        let explanation = format!("none of {} was called", names.join(", "));
        return check("forbidden_tools", true, explanation);
    }
    let explanation = format!("called forbidden tool {}", hits.join(", "));
    check("forbidden_tools", false, explanation)
}

/// `no_tool`: the model answered without calling any tool.
fn no_tool(calls: &[ObservedCall<'_>]) -> Check {
    if calls.is_empty() {
        return check("no_tool", true, "no tool was called".to_owned());
    }
    let mut names: Vec<String> = calls
        .iter()
        .take(MAX_LISTED_CALLS)
        .map(|c| format!("`{}`", c.tool))
        .collect();
    if calls.len() > MAX_LISTED_CALLS {
        names.push(format!("and {} more", calls.len() - MAX_LISTED_CALLS));
    }
    let explanation = format!(
        "expected no tool call, got {}: {}",
        calls.len(),
        names.join(", ")
    );
    check("no_tool", false, explanation)
}

/// `answer_contains`: the final answer contains each text, ignoring case unless
/// `case_sensitive`.
fn answer_contains(needles: &[String], answer: Option<&str>, case_sensitive: bool) -> Check {
    let case = case_note(case_sensitive);
    let quoted = |texts: &[&String]| {
        let quoted: Vec<String> = texts
            .iter()
            .map(|t| Value::from(t.as_str()).to_string())
            .collect();
        quoted.join(", ")
    };
    let all: Vec<&String> = needles.iter().collect();
    let Some(answer) = answer else {
        let explanation = format!(
            "there is no final answer (expected it to contain {})",
            quoted(&all)
        );
        return check("answer_contains", false, explanation);
    };
    let missing = texts_in_case(needles, answer, false, case_sensitive);
    if missing.is_empty() {
        return check(
            "answer_contains",
            true,
            format!("the answer contains {}{case}", quoted(&all)),
        );
    }
    let explanation = format!("the answer does not contain {}{case}", quoted(&missing));
    check("answer_contains", false, explanation)
}

/// `answer_regex`: the final answer matches the regex.
fn answer_regex(pattern: &str, answer: Option<&str>) -> Check {
    let regex = match Regex::new(pattern) {
        Ok(regex) => regex,
        Err(err) => {
            let explanation = format!("invalid regex /{pattern}/: {}", regex_error_summary(&err));
            return check("answer_regex", false, explanation);
        }
    };
    let Some(answer) = answer else {
        let explanation = format!("there is no final answer to match /{pattern}/");
        return check("answer_regex", false, explanation);
    };
    match regex.find(answer) {
        Some(found) => {
            let at = show_value(&Value::from(found.as_str()));
            check(
                "answer_regex",
                true,
                format!("the answer matches /{pattern}/ at {at}"),
            )
        }
        None => {
            let explanation = format!("the answer does not match /{pattern}/");
            check("answer_regex", false, explanation)
        }
    }
}

/// `max_tool_calls`: the model made at most this many tool calls.
fn max_tool_calls(max: u32, made: usize) -> Check {
    let noun = if made == 1 { "tool call" } else { "tool calls" };
    let passed = made <= max as usize;
    check(
        "max_tool_calls",
        passed,
        format!("{made} {noun}, at most {max} allowed"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::TaskSet;
    use serde_json::json;

    fn task(expect: Value) -> Task {
        Task {
            id: "t".into(),
            prompt: "p".into(),
            kind: TaskKind::Tool,
            set: TaskSet::Regression,
            tools: Vec::new(),
            max_turns: 8,
            expect: serde_json::from_value(expect).unwrap(),
            call: None,
            call_expect: Default::default(),
            trials: None,
            expected_to_fail: false,
            malformed: false,
            setup: Vec::new(),
            teardown: Vec::new(),
            after: Vec::new(),
            source: "t.yaml:1".into(),
            call_at: Default::default(),
            turns: Vec::new(),
            stop_on_failure: false,
            user: None,
            asks: Default::default(),
            attach: Vec::new(),
            server_prompt: None,
        }
    }

    /// Observed calls from (tool, arguments) pairs.
    fn observed<'a>(
        calls: &'a [(&'a str, Option<Value>)],
        answer: Option<&'a str>,
    ) -> Observed<'a> {
        let calls = calls
            .iter()
            .map(|(tool, arguments)| ObservedCall {
                tool,
                arguments: arguments.as_ref(),
                ..ObservedCall::default()
            })
            .collect();
        Observed {
            calls,
            answer,
            latency_ms: None,
        }
    }

    fn only_check(grade: &Grade) -> &Check {
        assert_eq!(grade.checks.len(), 1, "{grade:?}");
        &grade.checks[0]
    }

    #[test]
    fn expected_calls_pass_with_extra_arguments_and_calls() {
        let t = task(json!({"calls": [{"tool": "search_issues", "args": {"project": "apollo"}}]}));
        let calls = [
            ("list_projects", Some(json!({}))),
            (
                "search_issues",
                Some(json!({"project": "apollo", "query": "login"})),
            ),
        ];
        let g = grade(&t, &observed(&calls, None));
        assert!(g.success);
        let c = only_check(&g);
        assert_eq!(c.grader, "expected_calls");
        assert_eq!(
            c.explanation,
            "1 expected call was made: `search_issues` (call 2)"
        );
    }

    #[test]
    fn wrong_tool_names_the_calls_made() {
        let t = task(json!({"calls": [{"tool": "create_issue", "args": {"project": "apollo"}}]}));
        let calls = [("search_issues", Some(json!({"query": "login"})))];
        let g = grade(&t, &observed(&calls, None));
        assert!(!g.success);
        assert_eq!(
            only_check(&g).explanation,
            r#"expected `create_issue` with project=apollo, got `search_issues`(query="login")"#
        );
    }

    #[test]
    fn wrong_argument_is_explained_against_the_closest_call_of_the_tool() {
        let t = task(json!({"calls": [{"tool": "update_issue",
            "args": {"id": 7, "status": "open"}}]}));
        let calls = [
            ("update_issue", Some(json!({"id": 8, "status": "closed"}))),
            ("update_issue", Some(json!({"id": 7.0, "status": "closed"}))),
        ];
        let g = grade(&t, &observed(&calls, None));
        assert_eq!(
            only_check(&g).explanation,
            "expected `update_issue` with id=7, status=open, got `update_issue`(id=7.0, \
             status=\"closed\") (call 2): argument `status` was \"closed\", expected \"open\""
        );
    }

    #[test]
    fn no_calls_at_all() {
        let t = task(json!({"calls": [{"tool": "get_issue"}]}));
        let g = grade(&t, &observed(&[], Some("I don't know")));
        assert_eq!(
            only_check(&g).explanation,
            "expected `get_issue`, got no tool call"
        );
    }

    #[test]
    fn invalid_json_arguments_never_match_an_args_check() {
        let t = task(json!({"calls": [{"tool": "get_issue", "args": {"id": {"any": true}}}]}));
        let g = grade(&t, &observed(&[("get_issue", None)], None));
        assert!(!g.success);
        assert_eq!(
            only_check(&g).explanation,
            "expected `get_issue` with id (any value), got `get_issue`(<invalid JSON>) (call 1): \
             the arguments were not valid JSON"
        );
    }

    #[test]
    fn unordered_matching_ignores_order_ordered_does_not() {
        let expect = json!({"calls": [{"tool": "search_issues"}, {"tool": "get_issue"}]});
        let calls = [
            ("get_issue", Some(json!({}))),
            ("search_issues", Some(json!({}))),
        ];
        assert!(grade(&task(expect.clone()), &observed(&calls, None)).success);

        let mut ordered = expect;
        ordered["ordered"] = json!(true);
        let g = grade(&task(ordered), &observed(&calls, None));
        assert!(!g.success);
        assert_eq!(
            only_check(&g).explanation,
            "expected `get_issue` after call 2 (`search_issues`()), but the matching call 1 \
             came before it"
        );
    }

    #[test]
    fn ordered_matching_is_a_subsequence() {
        let t = task(json!({"ordered": true, "calls": [
            {"tool": "search_issues"}, {"tool": "get_issue", "args": {"id": 3}}]}));
        let calls = [
            ("search_issues", Some(json!({}))),
            ("get_issue", Some(json!({"id": 1}))),
            ("get_issue", Some(json!({"id": 3}))),
        ];
        let g = grade(&t, &observed(&calls, None));
        assert!(g.success, "{g:?}");
        assert_eq!(
            only_check(&g).explanation,
            "2 expected calls were made in order: `search_issues` (call 1), `get_issue` (call 3)"
        );
    }

    #[test]
    fn each_expected_call_needs_its_own_observed_call() {
        let t = task(json!({"calls": [{"tool": "search_issues"}, {"tool": "search_issues"}]}));
        let g = grade(&t, &observed(&[("search_issues", Some(json!({})))], None));
        assert_eq!(
            only_check(&g).explanation,
            "expected `search_issues` once more: the matching call 1 already counts for another \
             expected call"
        );
    }

    #[test]
    fn a_loose_expectation_does_not_steal_the_call_a_strict_one_needs() {
        let t = task(json!({"calls": [
            {"tool": "search_issues", "args": {"query": {"regex": "."}}},
            {"tool": "search_issues", "args": {"query": "login"}}]}));
        let calls = [
            ("search_issues", Some(json!({"query": "login"}))),
            ("search_issues", Some(json!({"query": "logout"}))),
        ];
        assert!(grade(&t, &observed(&calls, None)).success);
    }

    #[test]
    fn forbidden_tools_name_the_offending_calls() {
        let t = task(json!({"forbidden_tools": ["create_issue", "delete_issue"]}));
        let ok = grade(&t, &observed(&[("get_issue", None)], None));
        assert!(ok.success);
        assert_eq!(
            only_check(&ok).explanation,
            "none of `create_issue`, `delete_issue` was called"
        );
        let calls = [
            ("create_issue", None),
            ("get_issue", None),
            ("create_issue", None),
        ];
        let g = grade(&t, &observed(&calls, None));
        assert_eq!(
            only_check(&g).explanation,
            "called forbidden tool `create_issue` (calls 1, 3)"
        );
    }

    #[test]
    fn no_tool_runs_for_no_tool_tasks() {
        let mut t = task(json!({}));
        t.kind = TaskKind::NoTool;
        let calls = [("update_issue", None), ("get_issue", None)];
        let g = grade(&t, &observed(&calls, Some("done")));
        let c = only_check(&g);
        assert_eq!(c.grader, "no_tool");
        assert_eq!(
            c.explanation,
            "expected no tool call, got 2: `update_issue`, `get_issue`"
        );
        assert!(grade(&t, &observed(&[], Some("hello"))).success);
    }

    #[test]
    fn answer_contains_ignores_case() {
        let t = task(json!({"answer_contains": ["Login page", "apollo"]}));
        let g = grade(
            &t,
            &observed(&[], Some("The LOGIN PAGE of Apollo is broken")),
        );
        assert!(g.success);
        let g = grade(&t, &observed(&[], Some("Apollo is fine")));
        assert_eq!(
            only_check(&g).explanation,
            r#"the answer does not contain "Login page""#
        );
        let g = grade(&t, &observed(&[], None));
        assert!(only_check(&g)
            .explanation
            .starts_with("there is no final answer"));
    }

    #[test]
    fn answer_regex_explains_and_survives_a_bad_pattern() {
        let t = task(json!({"answer_regex": "(?i)timed? ?out"}));
        let g = grade(&t, &observed(&[], Some("The request Timed out.")));
        assert!(g.success);
        assert_eq!(
            only_check(&g).explanation,
            r#"the answer matches /(?i)timed? ?out/ at "Timed out""#
        );
        let g = grade(&t, &observed(&[], Some("it worked")));
        assert_eq!(
            only_check(&g).explanation,
            "the answer does not match /(?i)timed? ?out/"
        );
        let bad = task(json!({"answer_regex": "("}));
        let g = grade(&bad, &observed(&[], Some("x")));
        assert!(!g.success);
        assert_eq!(
            only_check(&g).explanation,
            "invalid regex /(/: unclosed group"
        );
    }

    #[test]
    fn max_tool_calls_counts_every_call() {
        let t = task(json!({"max_tool_calls": 2}));
        let calls = [("a", None), ("b", None), ("c", None)];
        let g = grade(&t, &observed(&calls, None));
        assert_eq!(
            only_check(&g).explanation,
            "3 tool calls, at most 2 allowed"
        );
        assert!(grade(&t, &observed(&calls[..1], None)).success);
    }

    #[test]
    fn only_set_graders_run_and_success_needs_one() {
        let t = task(json!({"calls": [{"tool": "a"}], "max_tool_calls": 1}));
        let calls = [("a", None), ("a", None)];
        let g = grade(&t, &observed(&calls, None));
        let names: Vec<&str> = g.checks.iter().map(|c| c.grader.as_str()).collect();
        assert_eq!(names, ["expected_calls", "max_tool_calls"]);
        assert!(!g.success);
        assert_eq!(
            g.failure_summary(),
            "max_tool_calls: 2 tool calls, at most 1 allowed"
        );
        assert!(!grade(&task(json!({})), &observed(&[], Some("x"))).success);
    }

    #[test]
    fn call_counts_forbidden_answer_texts_and_the_time_bound_pass_and_fail_with_reasons() {
        let calls = [("a", Some(json!({}))), ("b", Some(json!({})))];
        let g = grade(&task(json!({"min_tool_calls": 2})), &observed(&calls, None));
        assert!(g.success);
        assert_eq!(
            only_check(&g).explanation,
            "2 tool call(s), at least 2 expected"
        );
        let g = grade(&task(json!({"min_tool_calls": 3})), &observed(&calls, None));
        assert!(!g.success);
        assert_eq!(
            only_check(&g).explanation,
            "2 tool call(s), fewer than the 3 expected"
        );

        let t = task(json!({"answer_not_contains": ["Sorry", "error"]}));
        let g = grade(&t, &observed(&[], Some("All done.")));
        assert!(g.success, "{g:?}");
        let g = grade(&t, &observed(&[], Some("sorry, an ERROR occurred")));
        assert!(!g.success);
        assert_eq!(
            only_check(&g).explanation,
            "the answer contains \"Sorry\", \"error\""
        );

        let t = task(json!({"max_latency_ms": 1000}));
        let timed = |ms: Option<f64>| Observed {
            latency_ms: ms,
            ..Observed::default()
        };
        assert!(grade(&t, &timed(Some(999.6))).success);
        let g = grade(&t, &timed(Some(1500.0)));
        assert!(!g.success);
        assert_eq!(
            only_check(&g).explanation,
            "the trial took 1500 ms, over the 1000 ms allowed"
        );
        assert!(!grade(&t, &timed(None)).success);
    }

    #[test]
    fn a_tool_may_be_one_of_several_or_a_pattern_and_a_call_must_return_what_is_asked() {
        let t = task(json!({"calls": [{"tool": {"any_of": ["read_file", "read_text_file"]}}]}));
        let read = [("read_text_file", Some(json!({})))];
        let g = grade(&t, &observed(&read, None));
        assert!(g.success, "{g:?}");
        assert_eq!(
            only_check(&g).explanation,
            "1 expected call was made: one of `read_file`, `read_text_file` (call 1)"
        );
        assert!(!grade(&t, &observed(&[("list_files", None)], None)).success);

        let t = task(json!({"calls": [{"tool": {"pattern": "get_.*"}}]}));
        assert!(grade(&t, &observed(&[("get_issue", None)], None)).success);
        // Matched whole: `forget_issue` is not `get_…`.
        let g = grade(&t, &observed(&[("forget_issue", None)], None));
        assert!(!g.success);
        assert!(
            only_check(&g)
                .explanation
                .contains("a tool matching /get_.*/"),
            "{g:?}"
        );

        let t = task(json!({"calls": [{"tool": "get_issue",
            "result": {"contains": ["not found"], "is_error": true}}]}));
        let call = |result, is_error| Observed {
            calls: vec![ObservedCall {
                tool: "get_issue",
                arguments: None,
                result,
                is_error,
            }],
            ..Observed::default()
        };
        assert!(grade(&t, &call("Issue 99 NOT FOUND", true)).success);
        let g = grade(&t, &call("Issue 99: open", false));
        assert!(!g.success);
        let why = &only_check(&g).explanation;
        assert!(
            why.contains("whose result is an error, containing \"not found\""),
            "{why}"
        );
        assert!(why.contains("its result was not an error"), "{why}");
        assert!(
            why.contains("its result does not contain \"not found\""),
            "{why}"
        );
    }
}
