//! An expected call's `position` ("the first call is X") through the binary on the demo server
//! with the simulated model: a position the trial's calls meet passes and one they miss fails,
//! each with its explanation in the episode; misused positions are refused with file:line:col
//! by `tasks check` and before a run starts.

use crate::common;

use common::*;

/// `mcpeval run` of `suite` alone with the simulated model, one trial per side, from the
/// repository root; ready for more arguments and environment.
fn run_suite(
    baseline: &str,
    candidate: &str,
    suite: &std::path::Path,
    out: &std::path::Path,
) -> std::process::Command {
    let mut cmd = std::process::Command::new(bin());
    cmd.args(["run", "--baseline", baseline, "--candidate", candidate])
        .args([
            "--suite",
            suite.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(["--host", "sim", "--trials", "1", "--seed", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("GITHUB_STEP_SUMMARY");
    cmd
}

/// The model lists the projects, then reads issue 3: two calls in that order. Each task checks
/// one position and is set to pass (`…-pass`) or to fail (`…-fail`).
const SUITE: &str = r#"
- id: first-pass
  prompt: List the projects, then show me issue 3
  expect:
    calls: [{tool: list_projects, position: 1}]
- id: first-fail
  prompt: List the projects, then show me issue 3
  expect:
    calls: [{tool: get_issue, position: first}]
- id: last-pass
  prompt: List the projects, then show me issue 3
  expect:
    calls: [{tool: get_issue, args: {id: 3}, position: last}]
- id: last-fail
  prompt: List the projects, then show me issue 3
  expect:
    calls: [{tool: get_issue, args: {id: 4}, position: -1}]
- id: ordered-pass
  prompt: List the projects, then show me issue 3
  expect:
    ordered: true
    calls: [{tool: list_projects, position: first}, {tool: get_issue}]
- id: third-fail
  prompt: List the projects, then show me issue 3
  expect:
    calls: [{tool: get_issue, position: 3}]
"#;

#[test]
fn a_position_passes_on_the_call_at_its_place_and_fails_with_what_was_there() {
    let dir = temp_dir();
    let suite = dir.path().join("position.yaml");
    std::fs::write(&suite, SUITE).unwrap();
    let out_dir = dir.path().join("run");
    let out = run_suite("demo:1.4.0", "demo:1.4.0", &suite, &out_dir)
        .output()
        .unwrap();
    assert_verdict(&out);
    let eps = episodes(&out_dir);
    assert_eq!(eps.len(), 12, "{}", text(&out));
    for e in &eps {
        let passes = e.task_id.ends_with("-pass");
        assert_eq!(e.success, passes, "{}: {:?}", e.task_id, e.grade);
        assert_eq!(e.grade.checks[0].grader, "expected_calls");
    }
    let why = |task: &str| {
        let e = eps.iter().find(|e| e.task_id == task).unwrap();
        e.grade.checks[0].explanation.clone()
    };
    assert_eq!(
        why("first-pass"),
        "1 expected call was made: `list_projects` (call 1, the first call)"
    );
    assert_eq!(
        why("first-fail"),
        "expected the first call to be `get_issue`, got `list_projects`(); the expected call \
         came as call 2"
    );
    assert_eq!(
        why("last-pass"),
        "1 expected call was made: `get_issue` (call 2, the last call)"
    );
    assert_eq!(
        why("last-fail"),
        "expected the last call to be `get_issue` with id=4, got `get_issue`(id=3) (call 2): \
         argument `id` was 3, expected 4"
    );
    assert_eq!(
        why("ordered-pass"),
        "2 expected calls were made in order: `list_projects` (call 1, the first call), \
         `get_issue` (call 2)"
    );
    assert_eq!(
        why("third-fail"),
        "expected the third call to be `get_issue`, but only 2 tool calls were made"
    );
}

/// Every way to misuse `position`, one per task.
const MISUSED: &str = r#"- id: zero
  prompt: p
  expect:
    calls: [{tool: get_issue, position: 0}]
- id: fraction
  prompt: p
  expect:
    calls: [{tool: get_issue, position: 1.5}]
- id: word
  prompt: p
  expect:
    calls: [{tool: get_issue, position: second}]
- id: twice
  prompt: p
  expect:
    calls: [{tool: get_issue, position: 1}, {tool: list_projects, position: first}]
- id: beyond-max
  prompt: p
  expect:
    max_tool_calls: 2
    calls: [{tool: get_issue, position: 3}]
- id: ordered-too-early
  prompt: p
  expect:
    ordered: true
    calls: [{tool: list_projects}, {tool: get_issue, position: 1}]
"#;

#[test]
fn misused_positions_are_refused_with_their_place() {
    let dir = temp_dir();
    let suite = dir.path().join("bad.yaml");
    std::fs::write(&suite, MISUSED).unwrap();
    let path = suite.to_str().unwrap();
    let out = mcpeval(&["tasks", "check", "--suite", path]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in [
        ":4:41: `position` counts from 1 (the first call) or from -1 (the last call); 0 is neither",
        ":8:41: `position` must be a whole number (1 = the first call, -1 = the last) or \
         `first`/`last`, got a number",
        ":12:41: unknown `position` `second`: use `first`, `last` or a number (1 = the first \
         call, -1 = the last)",
        ":16:77: two expected calls claim `position: 1` (the first call; the other at 16:41): \
         one call cannot match both",
        ":21:41: `position: 3` (the third call) can never match: `max_tool_calls` allows at \
         most 2 call(s)",
        ":26:64: with `ordered: true` this call cannot be at `position: 1`: 1 expected call(s) \
         are listed before it, so it is call 2 or later",
    ] {
        assert!(
            stderr.contains(&format!("{path}{line}")),
            "{line}\n{stderr}"
        );
    }
    // A run refuses the same file before any trial.
    let out_dir = dir.path().join("run");
    let out = run_suite("demo:1.4.0", "demo:1.4.0", &suite, &out_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!out_dir.join("episodes.jsonl").exists());
}
