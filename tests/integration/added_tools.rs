//! Call tasks on a tool only the candidate lists (issue 49): the demo's `find_issues`, added in
//! 1.5.0, runs on the candidate alone and is judged there, by `run` and by `check`'s smoke stage
//! alike; the baseline's missing tool is not read as a server started wrong.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::common::*;

/// Two call tasks on `find_issues` (one passes on 1.5.0, one cannot) and one on a tool both
/// releases list.
const SUITE: &str = r#"
- id: find-issues-finds-the-vat-bug
  kind: call
  call: {tool: find_issues, args: {text: VAT}}
  expect: {is_error: false, result_contains: ["VAT"]}

- id: get-issue-5
  kind: call
  call: {tool: get_issue, args: {id: 5}}
  expect: {is_error: false, result_contains: ["VAT"]}
"#;

const FAILING: &str = r#"
- id: find-issues-finds-nothing-of-the-kind
  kind: call
  call: {tool: find_issues, args: {text: VAT}}
  expect: {result_contains: ["no such words in any issue"]}
"#;

/// The task rows of a `comparison.csv`: task → (test, verdict).
fn verdicts(file: &Path) -> BTreeMap<String, (String, String)> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (task, test, verdict, scope) = (col("task_id"), col("test"), col("verdict"), col("scope"));
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[scope] == "task")
        .map(|f| {
            (
                f[task].to_owned(),
                (f[test].to_owned(), f[verdict].to_owned()),
            )
        })
        .collect()
}

fn run(suite: &Path, out: &Path) -> std::process::Output {
    mcpeval(&[
        "run",
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        "demo:1.5.0",
        "--suite",
        suite.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
}

fn check(suite: &Path, out: &Path) -> std::process::Output {
    mcpeval(&[
        "check",
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        "demo:1.5.0",
        "--suite",
        suite.to_str().unwrap(),
        "--stages",
        "smoke",
        "--out",
        out.to_str().unwrap(),
    ])
}

/// The smoke stage of `check.json`: status, reason, lines.
fn smoke(out: &Path) -> (String, String, String) {
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("check.json")).unwrap()).unwrap();
    let stage = (record["stages"].as_array().unwrap().iter())
        .find(|s| s["name"] == "smoke")
        .unwrap()
        .clone();
    let lines: Vec<&str> = (stage["lines"].as_array().unwrap().iter())
        .map(|l| l.as_str().unwrap())
        .collect();
    (
        stage["status"].as_str().unwrap().to_owned(),
        stage["reason"].as_str().unwrap().to_owned(),
        lines.join("\n"),
    )
}

#[test]
fn a_call_task_on_an_added_tool_is_judged_on_the_candidate_alone_by_run_and_check_alike() {
    let dir = temp_dir();
    let suite = dir.path().join("added.yaml");
    std::fs::write(&suite, SUITE).unwrap();

    let ran = run(&suite, &dir.path().join("run"));
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran));
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(
        stderr.contains("1 call task(s) use tools added in the candidate")
            && stderr.contains("  - find-issues-finds-the-vat-bug (`find_issues`)"),
        "{stderr}"
    );
    let run_rows = verdicts(&dir.path().join("run").join("comparison.csv"));
    assert_eq!(
        run_rows["find-issues-finds-the-vat-bug"],
        ("candidate_only".to_owned(), "no_change".to_owned())
    );
    assert_eq!(
        run_rows["get-issue-5"],
        ("exact".to_owned(), "no_change".to_owned())
    );
    // No baseline episode of the added tool's task: the baseline cannot call it.
    let episodes = std::fs::read_to_string(dir.path().join("run").join("episodes.jsonl")).unwrap();
    let baseline_find = episodes.lines().filter(|l| {
        l.contains("\"side\":\"baseline\"") && l.contains("find-issues-finds-the-vat-bug")
    });
    assert_eq!(baseline_find.count(), 0);
    let info: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("run").join("run.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        info["candidate_only_tasks"],
        serde_json::json!(["find-issues-finds-the-vat-bug"])
    );

    let checked = check(&suite, &dir.path().join("check"));
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked));
    let (status, reason, lines) = smoke(&dir.path().join("check"));
    assert_eq!(status, "passed", "{reason}\n{lines}");
    assert!(!reason.contains("the baseline failed"), "{reason}");
    assert!(
        reason.contains("1 using tools added in the candidate")
            && lines.contains("1 call task(s) use tools added in the candidate")
            && lines.contains("    - find-issues-finds-the-vat-bug"),
        "{reason}\n{lines}"
    );
    let check_rows = verdicts(
        &dir.path()
            .join("check")
            .join("smoke")
            .join("calls")
            .join("comparison.csv"),
    );
    assert_eq!(
        run_rows, check_rows,
        "run and check judge the call tasks alike"
    );
}

#[test]
fn an_added_tool_that_fails_its_call_task_is_a_regression_in_run_and_check() {
    let dir = temp_dir();
    let suite = dir.path().join("failing.yaml");
    std::fs::write(&suite, FAILING).unwrap();
    let ran = run(&suite, &dir.path().join("run"));
    assert_eq!(ran.status.code(), Some(1), "{}", text(&ran));
    let run_rows = verdicts(&dir.path().join("run").join("comparison.csv"));
    assert_eq!(
        run_rows["find-issues-finds-nothing-of-the-kind"],
        ("candidate_only".to_owned(), "regression".to_owned())
    );
    let checked = check(&suite, &dir.path().join("check"));
    assert_eq!(checked.status.code(), Some(1), "{}", text(&checked));
    let (status, reason, _) = smoke(&dir.path().join("check"));
    assert_eq!(status, "failed");
    assert!(
        reason.contains("1 regression(s)") && !reason.contains("the baseline failed"),
        "{reason}"
    );
    let check_rows = verdicts(
        &dir.path()
            .join("check")
            .join("smoke")
            .join("calls")
            .join("comparison.csv"),
    );
    assert_eq!(run_rows, check_rows);
}

#[test]
fn a_stored_baseline_without_a_call_task_judges_it_on_the_candidate_alone_and_says_so() {
    let dir = temp_dir();
    let (small, large) = (dir.path().join("small.yaml"), dir.path().join("large.yaml"));
    let get_issue = &SUITE[SUITE.find("- id: get-issue-5").unwrap()..];
    std::fs::write(&small, get_issue).unwrap();
    std::fs::write(&large, SUITE).unwrap();
    let (stored, new) = (dir.path().join("stored"), dir.path().join("new"));
    assert_eq!(run(&small, &stored).status.code(), Some(0));
    assert_eq!(run(&large, &new).status.code(), Some(0));
    let out = mcpeval(&[
        "compare",
        new.to_str().unwrap(),
        "--against",
        stored.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no baseline episodes for 1 call task(s), judged on the candidate alone")
            && stderr.contains("find-issues-finds-the-vat-bug (direct)")
            && !stderr.contains("left untested"),
        "{stderr}"
    );
}
