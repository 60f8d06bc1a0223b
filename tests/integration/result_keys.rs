//! The keys that check a call's result text, through the binary against the demo servers:
//! `result_equals`, `result_snapshot` (and `run --update-snapshots`), `case_sensitive` and
//! `max_result_chars` in call tasks; `result: {equals, max_chars, case_sensitive}` on a model
//! task's expected call and `case_sensitive` of its answer checks (sim host). Each passes, fails
//! with its explanation, and is refused with file:line:col when misused.

use std::path::Path;
use std::process::Output;

use crate::common;

use common::*;
use mcpeval::episode::Episode;

/// `tracker://projects` on both demo releases.
const PROJECTS: &str = r#"{"projects":[{"key":"apollo","name":"Apollo web app","open_issues":4},{"key":"zephyr","name":"Zephyr mobile app","open_issues":2},{"key":"hermes","name":"Hermes billing service","open_issues":3}]}"#;
/// `tracker://issues/5` on 1.4.0 (2.0.0 drops its priority).
const ISSUE_5: &str = r#"{"assignee":"sam","comments":[{"author":"sam","text":"The rate table was not updated."}],"description":"Invoices for customers in Germany show 16 % VAT instead of 19 %.","id":5,"priority":"medium","project":"hermes","status":"open","title":"Invoice PDF shows wrong VAT rate"}"#;
/// `get_issue(id: 3)` on 1.4.0.
const ISSUE_3: &str = r#"{"assignee":"dev","comments":[{"author":"dev","text":"Out of memory while resizing the image."},{"author":"maria","text":"Happens on both iOS and Android."}],"description":"Uploading a photo larger than 20 MB from the gallery closes the app immediately.","id":3,"priority":"critical","project":"zephyr","status":"open","title":"App crashes when uploading a large photo"}"#;

/// `mcpeval run --baseline B --candidate C --suite SUITE --out OUT …`.
fn run(baseline: &str, candidate: &str, suite: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["run", "--baseline", baseline, "--candidate", candidate];
    args.extend([
        "--suite",
        suite.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    args.extend(extra);
    mcpeval(&args)
}

/// The check `grader` of the episode of `task` on `side` (trial 0).
fn check(episodes: &[Episode], task: &str, side: &str, grader: &str) -> (bool, String) {
    let e = episodes
        .iter()
        .find(|e| e.task_id == task && e.side.as_str() == side && e.trial == 0)
        .unwrap_or_else(|| panic!("no episode of {task} on {side}"));
    let c = e
        .grade
        .checks
        .iter()
        .find(|c| c.grader == grader)
        .unwrap_or_else(|| panic!("no {grader} check in {task}: {:?}", e.grade));
    (c.passed, c.explanation.clone())
}

#[test]
fn call_tasks_check_exact_text_case_and_size() {
    let dir = temp_dir();
    let suite = dir.path().join("calls.yaml");
    std::fs::write(
        &suite,
        format!(
            r#"- id: projects-are-exactly-these
  kind: call
  call: {{resource: "tracker://projects"}}
  expect: {{result_equals: '{PROJECTS}'}}
- id: issue-5-is-exactly-this
  kind: call
  call: {{resource: "tracker://issues/5"}}
  expect: {{result_equals: '{ISSUE_5}'}}
- id: name-in-its-case
  kind: call
  call: {{resource: "tracker://projects"}}
  expect: {{result_contains: [Apollo web app], case_sensitive: true}}
- id: name-in-another-case
  kind: call
  call: {{resource: "tracker://projects"}}
  expect: {{result_contains: [apollo WEB app], case_sensitive: true}}
- id: name-in-another-case-ignoring-case
  kind: call
  call: {{resource: "tracker://projects"}}
  expect: {{result_contains: [apollo WEB app]}}
- id: forbidden-in-its-case
  kind: call
  call: {{resource: "tracker://projects"}}
  expect: {{result_not_contains: [APOLLO], case_sensitive: true}}
- id: projects-are-short
  kind: call
  call: {{resource: "tracker://projects"}}
  expect: {{max_result_chars: 500}}
- id: projects-are-not-that-short
  kind: call
  call: {{resource: "tracker://projects"}}
  expect: {{max_result_chars: 50}}
- id: after-checks-take-the-same-keys
  kind: call
  call: {{resource: "tracker://projects"}}
  expect:
    max_result_chars: 500
    after:
      - call: {{tool: list_projects}}
        expect: {{result_contains: [APOLLO], case_sensitive: true, max_result_chars: 10}}
"#
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("run");
    let out = run("demo:1.4.0", "demo:2.0.0", &suite, &out_dir, &[]);
    // 2.0.0 drops issue 5's priority: the one regression.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let eps = episodes(&out_dir);
    let (passed, why) = check(
        &eps,
        "projects-are-exactly-these",
        "candidate",
        "result_equals",
    );
    assert!(passed, "{why}");
    assert_eq!(
        why,
        format!(
            "the answer is the expected text ({} characters)",
            PROJECTS.len()
        )
    );
    assert!(check(&eps, "issue-5-is-exactly-this", "baseline", "result_equals").0);
    let (passed, why) = check(
        &eps,
        "issue-5-is-exactly-this",
        "candidate",
        "result_equals",
    );
    assert!(!passed);
    assert!(
        why.starts_with(
            "the answer differs from the expected text (by line, - expected, + answer): -1 \"…"
        ) && why.contains(r#"\"priority\":\"medium\""#)
            && why.contains(r#"", +1 "…"#),
        "{why}"
    );
    let (passed, why) = check(&eps, "name-in-its-case", "baseline", "result_contains");
    assert!(passed, "{why}");
    let (passed, why) = check(&eps, "name-in-another-case", "baseline", "result_contains");
    assert!(!passed);
    assert!(
        why.starts_with("the answer lacks \"apollo WEB app\" (matching case): "),
        "{why}"
    );
    assert!(
        check(
            &eps,
            "name-in-another-case-ignoring-case",
            "baseline",
            "result_contains"
        )
        .0
    );
    let (passed, why) = check(
        &eps,
        "forbidden-in-its-case",
        "candidate",
        "result_not_contains",
    );
    assert!(passed, "{why}");
    assert_eq!(why, "the answer contains none of 1 text(s) (matching case)");
    let (passed, why) = check(&eps, "projects-are-short", "baseline", "max_result_chars");
    assert!(passed, "{why}");
    let (passed, why) = check(
        &eps,
        "projects-are-not-that-short",
        "baseline",
        "max_result_chars",
    );
    assert!(!passed);
    assert_eq!(
        why,
        format!(
            "the answer has {} characters, over the 50 allowed",
            PROJECTS.len()
        )
    );
    let (passed, why) = check(&eps, "after-checks-take-the-same-keys", "baseline", "after");
    assert!(!passed);
    assert!(
        why.starts_with(
            "`list_projects`({}): result_contains: the answer lacks \"APOLLO\" (matching case): "
        ) && why.contains("; max_result_chars: the answer has ")
            && why.ends_with(" characters, over the 10 allowed"),
        "{why}"
    );
}

#[test]
fn snapshots_are_written_only_when_asked_and_compared_on_both_sides() {
    let dir = temp_dir();
    let suite = dir.path().join("prompts.yaml");
    std::fs::write(
        &suite,
        r#"- id: triage-prompt
  kind: call
  call: {prompt: triage_issue, args: {id: "5"}}
  expect: {result_snapshot: triage-v1}
"#,
    )
    .unwrap();
    let file = dir.path().join("__snapshots__/prompts/triage-v1.txt");
    let shown = file.display().to_string();

    // No snapshot yet: refused before the first trial, naming the file and the flag.
    let out = run(
        "demo:1.4.0",
        "demo:2.0.0",
        &suite,
        &dir.path().join("r1"),
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let at = format!("prompts.yaml:4:29: task `triage-prompt`: no snapshot `{shown}` yet");
    assert!(stderr.contains(&at), "{stderr}");
    assert!(
        stderr.contains("run `mcpeval run --update-snapshots`"),
        "{stderr}"
    );
    assert!(!dir.path().join("r1/episodes.jsonl").exists());
    assert!(!file.exists());

    // Written from the baseline's answer; nothing compared, so no regression.
    let out = run(
        "demo:1.4.0",
        "demo:2.0.0",
        &suite,
        &dir.path().join("r2"),
        &["--update-snapshots"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "wrote snapshot `{shown}` from the baseline's answer"
        )),
        "{stderr}"
    );
    let stored = std::fs::read_to_string(&file).unwrap();
    assert!(stored.starts_with("Triage issue #5"), "{stored}");
    assert!(stored.contains("suggest its priority"), "{stored}");
    let (passed, why) = check(
        &episodes(&dir.path().join("r2")),
        "triage-prompt",
        "candidate",
        "result_snapshot",
    );
    assert!(
        passed && why.starts_with("not compared: this run writes"),
        "{why}"
    );

    // Compared on both sides: the candidate's prompt no longer asks for a priority.
    let out = run(
        "demo:1.4.0",
        "demo:2.0.0",
        &suite,
        &dir.path().join("r3"),
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let eps = episodes(&dir.path().join("r3"));
    let (passed, why) = check(&eps, "triage-prompt", "baseline", "result_snapshot");
    assert!(passed, "{why}");
    assert_eq!(why, format!("the answer is the snapshot `{shown}`"));
    let (passed, why) = check(&eps, "triage-prompt", "candidate", "result_snapshot");
    assert!(!passed);
    let head = format!(
        "the answer differs from the snapshot `{shown}` (by line, - snapshot, + answer): -1 \""
    );
    assert!(why.starts_with(&head), "{why}");
    assert!(
        why.contains("suggest its priority") && why.contains(", +1 \""),
        "{why}"
    );

    // A second update with the same answer leaves the file as it is.
    let out = run(
        "demo:1.4.0",
        "demo:1.4.0",
        &suite,
        &dir.path().join("r4"),
        &["--update-snapshots"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("snapshot `{shown}` unchanged")));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), stored);
}

#[test]
fn expected_calls_check_exact_text_size_and_case_and_answers_their_case() {
    let dir = temp_dir();
    let suite = dir.path().join("model.yaml");
    std::fs::write(
        &suite,
        format!(
            r#"- id: issue-3-exactly
  prompt: Show me issue 3
  expect:
    calls: [{{tool: get_issue, args: {{id: 3}}, result: {{equals: '{ISSUE_3}', max_chars: 400, contains: [App crashes], case_sensitive: true}}}}]
    answer_contains: [Here is]
    case_sensitive: true
- id: issue-3-not-this-text
  prompt: Show me issue 3
  expect:
    calls: [{{tool: get_issue, result: {{equals: '{{"id":3}}'}}}}]
- id: issue-3-not-that-short
  prompt: Show me issue 3
  expect:
    calls: [{{tool: get_issue, result: {{max_chars: 100}}}}]
- id: issue-3-in-another-case
  prompt: Show me issue 3
  expect:
    calls: [{{tool: get_issue, result: {{contains: [app CRASHES], case_sensitive: true}}}}]
    answer_not_contains: [here is]
    case_sensitive: true
"#
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("run");
    let out = run(
        "demo:1.4.0",
        "demo:1.4.0",
        &suite,
        &out_dir,
        &["--host", "sim", "--trials", "1"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let eps = episodes(&out_dir);
    let (passed, why) = check(&eps, "issue-3-exactly", "baseline", "expected_calls");
    assert!(passed, "{why}");
    let (passed, why) = check(&eps, "issue-3-exactly", "baseline", "answer_contains");
    assert!(passed && why.ends_with("(matching case)"), "{why}");
    let (passed, why) = check(&eps, "issue-3-not-this-text", "baseline", "expected_calls");
    assert!(!passed);
    assert!(
        why.starts_with("expected `get_issue` whose result is exactly \"{\\\"id\\\":3}\", got `get_issue`(id=3) (call 1): its result is not the expected text (by line, - expected, + result): -1 \"{\\\"id\\\":3}\", +1 \""),
        "{why}"
    );
    let (passed, why) = check(&eps, "issue-3-not-that-short", "baseline", "expected_calls");
    assert!(!passed);
    assert!(
        why.ends_with(&format!(
            "its result has {} characters, over the 100 allowed",
            ISSUE_3.len()
        )),
        "{why}"
    );
    let (passed, why) = check(
        &eps,
        "issue-3-in-another-case",
        "baseline",
        "expected_calls",
    );
    assert!(!passed);
    assert!(
        why.ends_with("its result does not contain \"app CRASHES\" (matching case)"),
        "{why}"
    );
    let (passed, why) = check(
        &eps,
        "issue-3-in-another-case",
        "baseline",
        "answer_not_contains",
    );
    assert!(passed, "{why}");
}

#[test]
fn misused_result_keys_are_refused_with_their_place() {
    let dir = temp_dir();
    let file = dir.path().join("bad.yaml");
    std::fs::write(
        &file,
        r#"- id: equals-not-a-string
  kind: call
  call: {resource: "tracker://projects"}
  expect: {result_equals: 42}
- id: case-with-nothing-to-apply-to
  kind: call
  call: {resource: "tracker://projects"}
  expect: {result_equals: x, case_sensitive: true}
- id: snapshot-on-a-model-task
  prompt: Show me issue 3
  expect: {calls: [{tool: get_issue}], result_snapshot: true}
- id: snapshot-name-is-a-path
  kind: call
  call: {resource: "tracker://projects"}
  expect: {result_snapshot: ../projects}
- id: snapshot-in-an-after-check
  kind: call
  call: {resource: "tracker://projects"}
  expect:
    is_error: false
    after: [{call: {tool: get_issue, args: {id: 1}}, expect: {result_snapshot: true}}]
- id: max-chars-beyond-the-record
  prompt: Show me issue 3
  expect: {calls: [{tool: get_issue, result: {max_chars: 5000}}]}
- id: result-case-without-contains
  prompt: Show me issue 3
  expect: {calls: [{tool: get_issue, result: {equals: x, case_sensitive: true}}]}
- id: answer-case-without-texts
  prompt: Show me issue 3
  expect: {answer_regex: Issue, case_sensitive: true}
- id: negative-size
  kind: call
  call: {resource: "tracker://projects"}
  expect: {max_result_chars: -1}
- id: equals-and-snapshot
  kind: call
  call: {resource: "tracker://projects"}
  expect: {result_equals: x, result_snapshot: true}
- id: equals-on-a-model-task
  prompt: Show me issue 3
  expect: {answer_contains: [x], result_equals: x}
"#,
    )
    .unwrap();
    let out = mcpeval(&["tasks", "check", "--suite", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for expected in [
        "4:27: `result_equals` must be a string, got an integer (quote it)",
        "8:30: `case_sensitive` applies to `result_contains` and `result_not_contains`; set one",
        "11:40: `result_snapshot` belongs to `kind: call` tasks",
        "15:29: invalid snapshot name `../projects`",
        "21:80: `result_snapshot` applies to a `kind: call` task's answer, not to an `after` check",
        "24:58: `result.max_chars` can be at most 4000, got 5000",
        "27:58: `case_sensitive` applies to `contains`",
        "30:33: `case_sensitive` applies to `answer_contains` and `answer_not_contains`",
        "34:30: `max_result_chars` must be at least 0, got -1",
        "38:30: `result_equals` and `result_snapshot` both fix the whole answer: set one",
        "41:34: `result_equals` belongs to `kind: call` tasks (check a call's result with `result: {equals: …}`",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
}
