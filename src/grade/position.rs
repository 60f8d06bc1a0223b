//! Expected calls with a `position` ("the first call is `list_projects`"): which observed call
//! the position names, and why an expectation with one found no call.

use super::matchers::{describe_call, CallMatcher};
use super::ObservedCall;
use crate::suite::position_words;

/// The index of the observed call that `position` names among `n` calls (1 = the first, -1 =
/// the last); `None` when fewer calls were made.
pub(crate) fn index(position: i32, n: usize) -> Option<usize> {
    let place = usize::try_from(position.unsigned_abs()).ok()?;
    if place == 0 || place > n {
        return None;
    }
    Some(if position > 0 { place - 1 } else { n - place })
}

/// Whether call `i` of `n` is where the expectation's position (if any) allows.
pub(crate) fn allows(position: Option<i32>, i: usize, n: usize) -> bool {
    position.is_none_or(|p| index(p, n) == Some(i))
}

/// How matching went for a positioned expected call that found no call.
pub(crate) struct Missed<'f> {
    pub ordered: bool,
    /// The observed call matched to the closest earlier expected call (ordered matching).
    pub previous: Option<usize>,
    /// Which observed calls would satisfy this expectation on their own, position included.
    pub fits: &'f [bool],
}

/// Why an expected call with `position` was not matched: "expected the first call to be
/// `list_projects`, got `search_issues`(query="x")".
pub(crate) fn explain(
    e: &CallMatcher<'_>,
    position: i32,
    missed: &Missed<'_>,
    calls: &[ObservedCall<'_>],
) -> String {
    let wanted = format!(
        "expected {} to be {}",
        position_words(position),
        e.describe()
    );
    if calls.is_empty() {
        return format!("{wanted}, got no tool call");
    }
    let Some(at) = index(position, calls.len()) else {
        let n = calls.len();
        let noun = if n == 1 { "call was" } else { "calls were" };
        return format!("{wanted}, but only {n} tool {noun} made");
    };
    let n = at + 1;
    if missed.fits[at] {
        return match missed.previous {
            Some(previous) if missed.ordered && at <= previous => format!(
                "{wanted} after call {} ({}), but it is call {n}",
                previous + 1,
                describe_call(calls[previous].tool, calls[previous].arguments)
            ),
            _ => format!("{wanted}: call {n} is, but it already counts for another expected call"),
        };
    }
    let call = &calls[at];
    let got = describe_call(call.tool, call.arguments);
    if e.is_tool(call.tool) {
        let mut mismatches = e.mismatches(call.arguments);
        mismatches.extend(e.result_mismatches(call.result, call.is_error));
        return format!("{wanted}, got {got} (call {n}): {}", mismatches.join(", "));
    }
    let elsewhere: Vec<String> = calls
        .iter()
        .enumerate()
        .filter(|(_, c)| e.matches(c))
        .map(|(i, _)| (i + 1).to_string())
        .collect();
    match elsewhere.as_slice() {
        [] => format!("{wanted}, got {got}"),
        [one] => format!("{wanted}, got {got}; the expected call came as call {one}"),
        many => format!(
            "{wanted}, got {got}; the expected call came as calls {}",
            many.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_from_the_start_or_from_the_end() {
        assert_eq!(index(1, 3), Some(0));
        assert_eq!(index(3, 3), Some(2));
        assert_eq!(index(4, 3), None);
        assert_eq!(index(-1, 3), Some(2));
        assert_eq!(index(-3, 3), Some(0));
        assert_eq!(index(-4, 3), None);
        assert_eq!(index(1, 0), None);
        assert!(allows(None, 5, 6));
        assert!(allows(Some(-1), 5, 6));
        assert!(!allows(Some(1), 5, 6));
    }
}

#[cfg(test)]
mod grading {
    use serde_json::{json, Value};

    use crate::grade::{grade, Observed, ObservedCall};
    use crate::suite::{Task, TaskKind, TaskSet};

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
            call_at: Default::default(),
            turns: Vec::new(),
            stop_on_failure: false,
            user: None,
            asks: Default::default(),
            attach: Vec::new(),
            server_prompt: None,
            source: "t.yaml:1".into(),
        }
    }

    /// The expected_calls check's outcome on calls given as (tool, arguments).
    fn outcome(expect: Value, calls: &[(&str, Value)]) -> (bool, String) {
        let calls = calls
            .iter()
            .map(|(tool, arguments)| ObservedCall {
                tool,
                arguments: Some(arguments),
                ..ObservedCall::default()
            })
            .collect();
        let observed = Observed {
            calls,
            ..Observed::default()
        };
        let g = grade(&task(expect), &observed);
        (g.success, g.checks[0].explanation.clone())
    }

    #[test]
    fn the_first_call_must_be_the_expected_one() {
        let expect = json!({"calls": [{"tool": "list_projects", "position": 1}]});
        let (passed, why) = outcome(
            expect.clone(),
            &[("list_projects", json!({})), ("search_issues", json!({}))],
        );
        assert!(passed, "{why}");
        assert_eq!(
            why,
            "1 expected call was made: `list_projects` (call 1, the first call)"
        );
        let (passed, why) = outcome(
            expect.clone(),
            &[
                ("search_issues", json!({"query": "login"})),
                ("list_projects", json!({})),
            ],
        );
        assert!(!passed);
        assert_eq!(
            why,
            "expected the first call to be `list_projects`, got `search_issues`(query=\"login\"); \
             the expected call came as call 2"
        );
        let (_, why) = outcome(expect, &[]);
        assert_eq!(
            why,
            "expected the first call to be `list_projects`, got no tool call"
        );
    }

    #[test]
    fn last_calls_too_few_calls_and_wrong_arguments_are_explained() {
        let last = json!({"calls": [{"tool": "get_issue", "args": {"id": 3}, "position": -1}]});
        let calls = [
            ("get_issue", json!({"id": 3})),
            ("get_issue", json!({"id": 4})),
        ];
        let (passed, why) = outcome(last, &calls);
        assert!(!passed);
        assert_eq!(
            why,
            "expected the last call to be `get_issue` with id=3, got `get_issue`(id=4) (call 2): \
             argument `id` was 4, expected 3"
        );
        let third = json!({"calls": [{"tool": "get_issue", "position": 3}]});
        let (passed, why) = outcome(third, &calls);
        assert!(!passed);
        assert_eq!(
            why,
            "expected the third call to be `get_issue`, but only 2 tool calls were made"
        );
    }

    #[test]
    fn one_call_cannot_be_both_the_first_and_the_last_and_order_still_holds() {
        let both = json!({"calls": [
            {"tool": "get_issue", "position": 1}, {"tool": "get_issue", "position": -1}]});
        let (passed, why) = outcome(both, &[("get_issue", json!({}))]);
        assert!(!passed);
        assert_eq!(
            why,
            "expected the last call to be `get_issue`: call 1 is, but it already counts for \
             another expected call"
        );
        let ordered = json!({"ordered": true, "calls": [
            {"tool": "search_issues"}, {"tool": "get_issue", "position": -1}]});
        let calls = [
            ("search_issues", json!({})),
            ("get_issue", json!({})),
            ("search_issues", json!({})),
        ];
        let (passed, why) = outcome(ordered.clone(), &calls);
        assert!(!passed);
        assert_eq!(
            why,
            "expected the last call to be `get_issue`, got `search_issues`(); the expected call \
             came as call 2"
        );
        let (passed, why) = outcome(ordered, &calls[..2]);
        assert!(passed, "{why}");
        assert_eq!(
            why,
            "2 expected calls were made in order: `search_issues` (call 1), `get_issue` (call 2, \
             the last call)"
        );
    }
}
