//! Task fixtures through the binary on the demo servers with the simulated model: `setup`
//! creates the state a trial needs on the trial's server, `expect.after` grades the state the
//! trial left, `teardown` runs after it; a failing setup is an infrastructure error, not the
//! model's failure; a fixture naming a tool neither server lists is refused before the run.

use crate::common;

use common::*;

const SUITE: &str = r#"- id: close-new-issue
  prompt: Close issue 13
  setup:
    - {tool: create_issue, args: {project: apollo, title: "Printer catches fire"}}
  expect:
    calls: [{tool: update_issue, args: {id: 13, status: closed}}]
    after:
      - call: {tool: get_issue, args: {id: 13}}
        expect: {structured: [{path: "$.status", equals: closed}]}
  teardown:
    - {tool: add_comment, args: {id: 13, body: "checked by mcpeval"}}
- id: after-expects-open
  prompt: Close issue 13
  setup:
    - {tool: create_issue, args: {project: apollo, title: "Printer catches fire"}}
  expect:
    after:
      - call: {tool: get_issue, args: {id: 13}}
        expect: {structured: [{path: "$.status", equals: open}]}
- id: setup-fails
  prompt: Close issue 13
  setup:
    - {tool: get_issue, args: {id: 999}}
  expect: {max_tool_calls: 5}
"#;

fn run(suite: &str, out: &std::path::Path) -> std::process::Output {
    let dir = out.parent().unwrap();
    let file = dir.join("suite.yaml");
    std::fs::write(&file, suite).unwrap();
    std::process::Command::new(bin())
        .args([
            "run",
            "--baseline",
            "demo:1.4.0",
            "--candidate",
            "demo:1.5.0",
        ])
        .args([
            "--suite",
            file.to_str().unwrap(),
            "--trials",
            "2",
            "--seed",
            "3",
        ])
        .args(["--out", out.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("mcpeval runs")
}

#[test]
fn setup_after_and_teardown_run_on_the_trial_s_server() {
    let dir = temp_dir();
    let out_dir = dir.path().join("run");
    let out = run(SUITE, &out_dir);
    assert_eq!(
        out.status.code(),
        Some(3),
        "the failing setup's trials: {}",
        text(&out)
    );
    let eps = episodes(&out_dir);
    let of = |task: &'static str| eps.iter().filter(move |e| e.task_id == task);
    // The issue the setup created is the one the model closed, as the after check sees.
    for e in of("close-new-issue") {
        assert!(e.success && e.infra_error.is_none(), "{:?}", e.grade);
        let after: Vec<_> = e
            .grade
            .checks
            .iter()
            .filter(|c| c.grader == "after")
            .collect();
        assert_eq!(after.len(), 1);
        assert!(after[0].explanation.contains("1 path check(s) hold"));
    }
    for e in of("after-expects-open") {
        assert!(!e.success);
        assert_eq!(
            e.grade.failure_summary(),
            "after: `get_issue`({\"id\":13}): structured: `$.status` is \"closed\", expected \"open\""
        );
    }
    for e in of("setup-fails") {
        let error = e.infra_error.as_deref().unwrap_or_default();
        assert!(
            error.starts_with("setup call `get_issue` failed: expected a result without isError"),
            "{error}"
        );
        assert!(!e.success);
    }
}

#[test]
fn a_fixture_on_a_tool_neither_server_lists_is_refused_with_its_place() {
    let dir = temp_dir();
    let suite = "- id: t\n  prompt: Close issue 13\n  setup:\n    - {tool: create_isue}\n  expect: {max_tool_calls: 3}\n";
    let out = run(suite, &dir.path().join("run"));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "suite.yaml:4:14: task `t`: setup calls tool `create_isue`, which neither server lists (did you mean `create_issue`?)"
        ),
        "{stderr}"
    );
    assert!(!dir.path().join("run").exists(), "nothing ran");
}
