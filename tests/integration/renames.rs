//! Renamed tools followed (`--follow-renames DIFF.json`, `[renames]`): through the binary on the
//! demo's 1.5.0 → 2.0.0 (which renames `get_issue` to `fetch_issue`) with the simulated model, a
//! task of the renamed tool goes from failing every candidate trial to the model's rate, and a
//! call task calls the new name; bad `[renames]` are refused.

use std::path::Path;

use crate::common;

use common::*;

const SUITE: &str = "- id: show-issue-3
  prompt: Show me issue 3
  expect:
    calls: [{tool: get_issue, args: {id: 3}}]
    forbidden_tools: [add_comment]
    answer_contains: [\"large photo\"]
- id: get-issue-by-call
  kind: call
  call: {tool: get_issue, args: {id: 3}}
  expect: {is_error: false, output_schema: true}
";

fn diff_of_demo(dir: &Path) -> std::path::PathBuf {
    let (a, b) = (dir.join("a"), dir.join("b"));
    snapshot("demo:1.5.0", &a, &[]);
    snapshot("demo:2.0.0", &b, &[]);
    assert_eq!(diff(&a, &b, dir).0, Some(1));
    dir.join("diff.json")
}

fn run(dir: &Path, name: &str, extra: &[&str]) -> (std::process::Output, std::path::PathBuf) {
    let suite = dir.join("suite.yaml");
    std::fs::write(&suite, SUITE).unwrap();
    let out_dir = dir.join(name);
    let out = std::process::Command::new(bin())
        .args([
            "run",
            "--baseline",
            "demo:1.5.0",
            "--candidate",
            "demo:2.0.0",
        ])
        .args(["--suite", suite.to_str().unwrap(), "--trials", "4"])
        .args(["--out", out_dir.to_str().unwrap()])
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("mcpeval runs");
    (out, out_dir)
}

fn successes(dir: &Path, task: &str, side: &str) -> usize {
    episodes(dir)
        .iter()
        .filter(|e| e.task_id == task && e.side.as_str() == side && e.success)
        .count()
}

#[test]
fn following_the_diff_s_renames_measures_the_model_not_the_rename() {
    let dir = temp_dir();
    let diff = diff_of_demo(dir.path());
    let (out, plain) = run(dir.path(), "plain", &[]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--follow-renames"),
        "the warning says how: {stderr}"
    );
    assert_eq!(successes(&plain, "show-issue-3", "baseline"), 4);
    assert_eq!(
        successes(&plain, "show-issue-3", "candidate"),
        0,
        "the rename fails it"
    );
    assert_eq!(successes(&plain, "get-issue-by-call", "candidate"), 0);

    let (out, followed) = run(
        dir.path(),
        "followed",
        &["--follow-renames", diff.to_str().unwrap()],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("renames followed on the candidate side: `get_issue` → `fetch_issue`"));
    assert_eq!(successes(&followed, "show-issue-3", "candidate"), 4);
    let call = episodes(&followed)
        .into_iter()
        .find(|e| e.task_id == "get-issue-by-call" && e.side.as_str() == "candidate")
        .unwrap();
    assert_eq!(call.tools_called, "fetch_issue");
    assert!(call.success, "{:?}", call.grade);
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(followed.join("run.json")).unwrap()).unwrap();
    assert_eq!(info["config"]["renames"]["get_issue"], "fetch_issue");
    let summary = std::fs::read_to_string(followed.join("summary.md")).unwrap();
    assert!(
        summary.contains("| renames | `get_issue` → `fetch_issue`"),
        "{summary}"
    );
}

#[test]
fn renames_in_the_config_apply_and_bad_ones_are_refused() {
    let dir = temp_dir();
    let config = dir.path().join("c.toml");
    std::fs::write(&config, "[renames]\nget_issue = \"fetch_issue\"\n").unwrap();
    let (out, run_dir) = run(
        dir.path(),
        "config",
        &["--config", config.to_str().unwrap()],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    assert_eq!(successes(&run_dir, "show-issue-3", "candidate"), 4);

    std::fs::write(
        &config,
        "[renames]\nget_issue = \"fetch_issue\"\nfetch_issue = \"read_issue\"\n",
    )
    .unwrap();
    let (out, _) = run(dir.path(), "bad", &["--config", config.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("`fetch_issue` is renamed again"),
        "{}",
        text(&out)
    );
}
