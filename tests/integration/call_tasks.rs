//! `kind: call` tasks through the binary against the demo servers: the example suite on 1.4.0
//! against 2.0.0 over stdio and over HTTP (tool errors, JSON-RPC codes, structured content, the
//! output schema, resources, a prompt) gives exact verdicts with the reason in each episode; a
//! server against itself changes nothing; bad call tasks are refused with file:line:col.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use crate::common;

use common::*;

const CALLS: &str = "examples/tasks/calls.yaml";

/// `mcpeval run --baseline B --candidate C --suite SUITE --out OUT …` from the repository root.
fn run_calls(baseline: &str, candidate: &str, suite: &str, out: &Path, extra: &[&str]) -> Output {
    std::process::Command::new(bin())
        .args(["run", "--baseline", baseline, "--candidate", candidate])
        .args(["--suite", suite, "--out", out.to_str().unwrap()])
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("mcpeval runs")
}

/// The task rows of `comparison.csv`: task → (host, test, verdict).
fn rows(dir: &Path) -> BTreeMap<String, (String, String, String)> {
    task_rows_of(dir, ["task_id", "host", "test", "verdict"])
        .into_iter()
        .map(|[task, host, test, verdict]| (task, (host, test, verdict)))
        .collect()
}

fn verdicts(dir: &Path) -> BTreeMap<String, String> {
    rows(dir).into_iter().map(|(t, (_, _, v))| (t, v)).collect()
}

/// What 1.4.0 → 2.0.0 does to each example task in either protocol era.
const CHANGED: [(&str, &str); 8] = [
    // `get_issue` is renamed `fetch_issue`: an unknown tool (-32602) on the candidate.
    ("get-issue-returns-the-issue", "regression"),
    ("missing-issue-is-a-tool-error", "regression"),
    // A title over 80 characters is refused by 2.0.0's schema.
    ("a-long-title-is-accepted", "regression"),
    // 2.0.0's issues have no priority, and its triage prompt no longer asks for one.
    ("issue-resource-has-a-priority", "regression"),
    ("triage-prompt-asks-for-a-priority", "regression"),
    ("unknown-tool-is-invalid-params", "no_change"),
    ("projects-resource-lists-apollo", "no_change"),
    ("triage-prompt-needs-an-id", "no_change"),
];

#[test]
fn call_tasks_on_two_releases_give_exact_verdicts_with_their_reasons() {
    let dir = temp_dir();
    let run = dir.path().join("run");
    let out = run_calls("demo:1.4.0", "demo:2.0.0", CALLS, &run, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("9 call task(s) first"), "{stderr}");
    assert!(
        stderr.contains("task `unknown-tool-is-invalid-params` calls tool `close_all_issues`"),
        "an unknown tool called on purpose is a warning: {stderr}"
    );
    let rows = rows(&run);
    assert_eq!(rows.len(), 9, "{rows:?}");
    for (host, test, _) in rows.values() {
        assert_eq!((host.as_str(), test.as_str()), ("direct", "exact"));
    }
    let verdicts = verdicts(&run);
    for (task, verdict) in CHANGED {
        assert_eq!(verdicts[task], verdict, "{task}");
    }
    // In the 2026-07-28 era rmcp answers a missing resource with -32602 in every release.
    assert_eq!(
        verdicts["missing-issue-resource-is-invalid-params"],
        "no_change"
    );

    let eps = episodes(&run);
    assert_eq!(eps.len(), 18, "one trial per side and task");
    assert!(eps.iter().all(|e| e.model == "direct" && e.turns == 0));
    let episode = |task: &str, side: &str| {
        eps.iter()
            .find(|e| e.task_id == task && e.side.as_str() == side)
            .unwrap_or_else(|| panic!("{task} {side}"))
    };
    let renamed = episode("get-issue-returns-the-issue", "candidate");
    assert_eq!(renamed.calls[0].error_code, Some(-32602));
    assert_eq!(renamed.tools_called, "get_issue");
    let why = renamed.grade.failure_summary();
    assert!(
        why.contains("expected a result without isError, got JSON-RPC error -32602"),
        "{why}"
    );
    let base = episode("get-issue-returns-the-issue", "baseline");
    let graders: Vec<&str> = base
        .grade
        .checks
        .iter()
        .map(|c| c.grader.as_str())
        .collect();
    assert_eq!(graders, ["is_error", "structured", "output_schema"]);
    assert!(base.success, "{:?}", base.grade);
    let long = episode("a-long-title-is-accepted", "candidate");
    assert!(long.calls[0].is_error && long.calls[0].error_code.is_none());
    assert!(
        long.calls[0].result.contains("80"),
        "{}",
        long.calls[0].result
    );
    let prompt = episode("triage-prompt-asks-for-a-priority", "candidate");
    assert_eq!(prompt.tools_called, "prompt:triage_issue");
    assert!(prompt
        .grade
        .failure_summary()
        .contains("\"suggest its priority\""));
    let resource = episode("projects-resource-lists-apollo", "baseline");
    assert_eq!(resource.tools_called, "resource:tracker://projects");

    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(summary.contains("`direct` (the call tasks: mcpeval's own requests, no model)"));
    assert!(
        summary.contains("unknown tool `get_issue`"),
        "the reason is shown"
    );
    assert!(
        !summary.contains("## Suite"),
        "call tasks have no suite rows"
    );
}

#[test]
fn over_http_in_the_legacy_era_the_missing_resource_code_changes_as_sep_2164_says() {
    let base = spawn_listening(
        &["demo-server", "--release", "1.4.0", "--http", "127.0.0.1:0"],
        true,
    );
    let cand = spawn_listening(
        &["demo-server", "--release", "2.0.0", "--http", "127.0.0.1:0"],
        true,
    );
    let dir = temp_dir();
    let run = dir.path().join("run");
    let (b, c) = (
        format!("http://{}/mcp", base.addr),
        format!("http://{}/mcp", cand.addr),
    );
    // HTTP servers are never exempt from the write gate: their state is the test's own.
    let extra = [
        "--protocol-era",
        "legacy",
        "--trials",
        "3",
        "--allow-writes",
    ];
    let out = run_calls(&b, &c, CALLS, &run, &extra);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let verdicts = verdicts(&run);
    for (task, verdict) in CHANGED {
        assert_eq!(verdicts[task], verdict, "{task}");
    }
    // 1.4.0 answers -32002 (as SDKs did before 2026-07-28), 2.0.0 -32602.
    assert_eq!(
        verdicts["missing-issue-resource-is-invalid-params"],
        "improvement"
    );
    let eps = episodes(&run);
    assert_eq!(
        eps.len(),
        18,
        "call tasks run once per side whatever --trials says"
    );
    let old = eps
        .iter()
        .find(|e| {
            e.task_id == "missing-issue-resource-is-invalid-params" && e.side.as_str() == "baseline"
        })
        .unwrap();
    assert_eq!(old.calls[0].error_code, Some(-32002));
}

#[test]
fn a_server_against_itself_changes_nothing_and_trials_repeat_a_call() {
    let dir = temp_dir();
    let suite = dir.path().join("calls.yaml");
    std::fs::write(
        &suite,
        "- id: list\n  kind: call\n  trials: 3\n  call: {tool: list_projects}\n  expect: {output_schema: true, structured: [{path: \"$.projects[*].key\"}]}\n",
    )
    .unwrap();
    let run = dir.path().join("run");
    let out = run_calls(
        "demo:1.4.0",
        "demo:1.4.0",
        suite.to_str().unwrap(),
        &run,
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(episodes(&run).len(), 6);
    assert!(episodes(&run).iter().all(|e| e.success));
    assert_eq!(verdicts(&run)["list"], "no_change");
}

#[test]
fn bad_call_tasks_are_refused_with_their_place() {
    let dir = temp_dir();
    let file = dir.path().join("bad.yaml");
    std::fs::write(
        &file,
        r#"- id: a
  kind: call
  prompt: Show me issue 3
  call: {tool: get_issue, resource: "tracker://projects"}
  expect: {is_error: true}
- id: b
  kind: call
  call: {tool: get_issue}
  expect: {answer_contains: [x]}
- id: c
  prompt: Show me issue 3
  call: {tool: get_issue}
  expect: {calls: [{tool: get_issue}]}
- id: d
  kind: call
  call: {prompt: triage_issue, args: {id: 5}}
  expect: {structured: [{path: "issue.state"}]}
- id: e
  kind: call
  call: {tool: get_issue}
  expect: {is_error: true, error_code: -32602}
"#,
    )
    .unwrap();
    let out = mcpeval(&["tasks", "check", "--suite", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for expected in [
        "3:3: `prompt` does not apply to a `kind: call` task",
        "4:9: `call` takes one of `tool`, `resource` or `prompt`, got `tool` and `resource`",
        "9:12: `answer_contains` grades a model's trial; a `kind: call` task has no model (use `result_contains`)",
        "12:3: `call` belongs to `kind: call` tasks",
        "16:43: `call.args.id` must be a string",
        "17:32: invalid JSONPath in `structured.path`",
        "21:28: `is_error: true` expects a result and `error_code` a JSON-RPC error",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
}

#[test]
fn boundary_tasks_from_the_demo_diff_fail_on_the_candidate_and_pass_on_the_baseline() {
    let dir = temp_dir();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    snapshot("demo:1.4.0", &a, &[]);
    snapshot("demo:2.0.0", &b, &[]);
    let (code, _) = diff(&a, &b, dir.path());
    assert_eq!(code, Some(1), "2.0.0 breaks clients");
    let diff = dir.path().join("diff.json");
    let tasks = dir.path().join("tasks");
    let args = ["tasks", "boundary", "--diff", diff.to_str().unwrap()];
    let out = mcpeval(&[&args[..], &["--out", tasks.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let file = tasks.join("boundary.yaml");
    let yaml = std::fs::read_to_string(&file).unwrap();
    // One narrowing each: a maxLength added, a parameter made required, an enum value removed.
    for id in [
        "boundary-create-issue-title-refused-1",
        "boundary-search-issues-project-refused-1",
        "boundary-update-issue-status-refused-1",
        "boundary-create-issue-title-border-1",
    ] {
        assert!(yaml.contains(&format!("- id: {id}\n")), "{id}\n{yaml}");
    }
    let again = mcpeval(&[&args[..], &["--out", tasks.to_str().unwrap()]].concat());
    assert_eq!(
        again.status.code(),
        Some(2),
        "no silent overwrite: {}",
        text(&again)
    );

    let run = dir.path().join("run");
    let out = run_calls(
        "demo:1.4.0",
        "demo:2.0.0",
        file.to_str().unwrap(),
        &run,
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let verdicts = verdicts(&run);
    assert!(verdicts.len() >= 4, "{verdicts:?}");
    for (task, verdict) in &verdicts {
        let expected = match task.contains("-refused-") {
            true => "regression",
            false => "no_change",
        };
        assert_eq!(verdict, expected, "{task}");
    }
    let eps = episodes(&run);
    let status = eps
        .iter()
        .find(|e| {
            e.task_id == "boundary-update-issue-status-refused-1" && e.side.as_str() == "candidate"
        })
        .unwrap();
    assert!(
        status.calls[0].result.contains("open"),
        "{}",
        status.calls[0].result
    );

    // A diff whose snapshots are gone says which option points at them.
    std::fs::remove_dir_all(&a).unwrap();
    let out = mcpeval(
        &[
            &args[..],
            &["--out", dir.path().join("t2").to_str().unwrap()],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--baseline-snapshot"));
}
