//! The graders added for what real suites test (`min_tool_calls`, `answer_not_contains`,
//! `max_latency_ms`, a tool named as one of several or by a pattern, a call's result), through
//! the binary on the demo servers with the simulated model: each passes and fails where it
//! should, and says why in the episode.

use crate::common;

use common::*;

/// Variants of the demo's `show-issue-3` (the model calls `get_issue` with id 3, the answer
/// names the issue), one grader each, set to pass (`…-pass`) or to fail (`…-fail`).
const SUITE: &str = r#"
- id: min-calls-pass
  prompt: Show me issue 3
  expect: {min_tool_calls: 1}
- id: min-calls-fail
  prompt: Show me issue 3
  expect: {min_tool_calls: 5}
- id: not-contains-pass
  prompt: Show me issue 3
  expect: {answer_not_contains: ["no such issue"]}
- id: not-contains-fail
  prompt: Show me issue 3
  expect: {answer_not_contains: ["large photo"]}
- id: latency-pass
  prompt: Show me issue 3
  expect: {max_latency_ms: 600000}
- id: latency-fail
  prompt: Show me issue 3
  expect: {max_latency_ms: 1}
- id: any-of-pass
  prompt: Show me issue 3
  expect:
    calls: [{tool: {any_of: [fetch_issue, get_issue]}, args: {id: 3}}]
- id: any-of-fail
  prompt: Show me issue 3
  expect:
    calls: [{tool: {any_of: [add_comment, list_projects]}}]
- id: pattern-pass
  prompt: Show me issue 3
  expect:
    calls: [{tool: {pattern: "get_.*"}}]
- id: pattern-fail
  prompt: Show me issue 3
  expect:
    calls: [{tool: {pattern: "list_.*"}}]
- id: result-pass
  prompt: Show me issue 3
  expect:
    calls: [{tool: get_issue, result: {contains: ["large photo"], is_error: false}}]
- id: result-fail
  prompt: Show me issue 3
  expect:
    calls: [{tool: get_issue, result: {is_error: true}}]
"#;

#[test]
fn each_new_grader_passes_and_fails_with_its_explanation() {
    let dir = temp_dir();
    let suite = dir.path().join("suite");
    std::fs::create_dir(&suite).unwrap();
    std::fs::write(suite.join("graders.yaml"), SUITE).unwrap();
    let config = format!(
        "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.4.0\"\nsuites = [\"{}\"]\nhosts = [\"sim\"]\nseed = 1\n",
        suite.display()
    );
    let run = run_config(dir.path(), &config, "1");
    let eps = episodes(&run);
    assert_eq!(eps.len(), 24);
    for e in &eps {
        let passes = e.task_id.ends_with("-pass");
        assert_eq!(e.success, passes, "{}: {:?}", e.task_id, e.grade);
        let check = &e.grade.checks[0];
        assert_eq!(check.passed, passes, "{}: {check:?}", e.task_id);
    }
    let why = |task: &str| {
        let e = eps.iter().find(|e| e.task_id == task).unwrap();
        e.grade.checks[0].explanation.clone()
    };
    assert_eq!(
        why("min-calls-fail"),
        "1 tool call(s), fewer than the 5 expected"
    );
    assert_eq!(
        why("not-contains-fail"),
        "the answer contains \"large photo\""
    );
    assert!(
        why("latency-fail").ends_with("over the 1 ms allowed"),
        "{}",
        why("latency-fail")
    );
    assert!(
        why("any-of-fail")
            .starts_with("expected one of `add_comment`, `list_projects`, got `get_issue`"),
        "{}",
        why("any-of-fail")
    );
    assert!(
        why("pattern-fail").contains("a tool matching /list_.*/"),
        "{}",
        why("pattern-fail")
    );
    assert!(
        why("result-fail").contains("its result was not an error"),
        "{}",
        why("result-fail")
    );
}

#[test]
fn a_task_expecting_a_tool_neither_server_has_is_refused_before_the_run() {
    let dir = temp_dir();
    let suite = dir.path().join("suite");
    std::fs::create_dir(&suite).unwrap();
    std::fs::write(
        suite.join("t.yaml"),
        "- id: typo\n  prompt: Show me issue 3\n  expect:\n    calls: [{tool: get_isue, args: {id: 3}}]\n\
         - id: bad-arg\n  prompt: Show me issue 3\n  expect:\n    calls: [{tool: get_issue, args: {idd: 3}}]\n",
    )
    .unwrap();
    let out_dir = dir.path().join("run");
    let out = mcpeval(&[
        "run",
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        "demo:1.5.0",
        "--suite",
        suite.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    let file = suite.join("t.yaml");
    assert!(
        said.contains(&format!(
            "{}:4:20: task `typo` expects tool `get_isue`, which neither server lists (did you \
             mean `get_issue`?)",
            file.display()
        )),
        "{said}"
    );
    // The argument's own key is the place (issue 37; it was the call's tool, 8:20).
    assert!(
        said.contains(&format!(
            "{}:8:38: task `bad-arg` expects argument `idd`",
            file.display()
        )),
        "{said}"
    );
    // Refused before the run: no directory, no trial.
    assert!(!out_dir.exists());
}
