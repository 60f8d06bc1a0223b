//! The stale-list window (`run --stale-list`) through the binary on the demo's 1.5.0 → 2.0.0
//! (which renames `get_issue` to `fetch_issue`, removes `add_comment`, and advertises a `ttlMs`):
//! the candidate's trials are offered 1.5.0's list, their calls of the old names answered by
//! 2.0.0, and the report counts them per task with the window's length; a suite of call tasks
//! alone is refused.

use std::path::Path;

use crate::common;

use common::*;

const SUITE: &str = "- id: show-issue-3
  prompt: Show me issue 3
  expect:
    calls: [{tool: get_issue, args: {id: 3}, result: {is_error: false}}]
- id: comment-on-issue-7
  prompt: Add a comment 'Fixed in build 12' to issue 7
  expect:
    calls: [{tool: add_comment, args: {id: 7}, result: {is_error: false}}]
- id: list-projects
  prompt: Which projects are in the tracker?
  expect:
    calls: [{tool: list_projects}]
";

fn stale_run(suite: &Path, out: &Path) -> std::process::Output {
    std::process::Command::new(bin())
        .args([
            "run",
            "--baseline",
            "demo:1.5.0",
            "--candidate",
            "demo:2.0.0",
        ])
        .args(["--suite", suite.to_str().unwrap(), "--trials", "2"])
        .args(["--protocol-era", "legacy", "--stale-list"])
        .args(["--out", out.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("mcpeval runs")
}

/// The line the report should have for `task`, from the candidate episodes' own calls of
/// `tool`: how many, how many answered -32602, how many trials failed on each side.
fn expected_line(dir: &Path, task: &str, tool: &str) -> String {
    let all = episodes(dir);
    let of = |side: &'static str| {
        (all.iter()).filter(move |e| e.task_id == task && e.side.as_str() == side)
    };
    let calls: Vec<_> = of("candidate")
        .flat_map(|e| e.calls.iter().filter(|c| c.tool == tool))
        .collect();
    assert!(!calls.is_empty(), "the model called `{tool}` in {task}");
    let refused = calls
        .iter()
        .filter(|c| c.error_code == Some(-32602))
        .count();
    let failed = |side| of(side).filter(|e| !e.success).count();
    format!(
        "{task}: {} calls to `{tool}` (gone), {refused} answered -32602; {} of 2 trials failed \
         (baseline: {} of 2)",
        calls.len(),
        failed("candidate"),
        failed("baseline")
    )
}

#[test]
fn the_window_counts_calls_to_the_old_names_and_shows_the_candidate_s_ttl() {
    let dir = temp_dir();
    let suite = dir.path().join("suite.yaml");
    std::fs::write(&suite, SUITE).unwrap();
    let out_dir = dir.path().join("run");
    let out = stale_run(&suite, &out_dir);
    assert_verdict(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let show = expected_line(&out_dir, "show-issue-3", "get_issue");
    let comment = expected_line(&out_dir, "comment-on-issue-7", "add_comment");
    assert!(
        show.contains("answered -32602; 2 of 2 trials failed (baseline: 0 of 2)"),
        "every old-name call refused, every candidate trial failed: {show}"
    );
    let console = [
        "Stale list (candidate offered 1.5.0's tools, calls answered by 2.0.0):".to_owned(),
        format!("  {comment}"),
        format!("  {show}"),
        "  1 other task(s) made no call to a tool the candidate no longer lists".to_owned(),
        "  window: no ttlMs advertised: clients may cache 1.5.0's list until the next \
         list_changed or reconnect"
            .to_owned(),
        "  2.0.0 advertises ttlMs = 60000: after this deploy, clients may hold its list up to \
         60 s"
            .to_owned(),
    ]
    .join("\n");
    assert!(stdout.contains(&console), "{}", text(&out));
    // The warning about a tool only the baseline lists says what the window does with it, and
    // offers no rename to follow.
    let said = text(&out);
    assert!(
        said.contains("in the stale-list window the model is offered it"),
        "{said}"
    );
    assert!(!said.contains("--follow-renames"), "{said}");

    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(summary.contains("## Stale-list window"), "{summary}");
    assert!(summary.contains(&format!("- {show}\n")), "{summary}");
    assert!(summary.contains("**the stale-list window**"), "{summary}");
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(info["config"]["stale_list"], true);
    assert_eq!(info["candidate"]["tools_ttl_ms"], 60000);
    assert!(info["baseline"].get("tools_ttl_ms").is_none(), "{info}");
    let offered = episodes(&out_dir)
        .into_iter()
        .find(|e| e.side.as_str() == "candidate")
        .unwrap()
        .tools_offered;
    assert!(
        offered.contains("get_issue") && offered.contains("add_comment"),
        "{offered}"
    );
    assert!(!offered.contains("fetch_issue"), "{offered}");

    // A suite of call tasks alone is offered no list: refused before any server starts.
    let calls = dir.path().join("calls.yaml");
    let call = "- id: c\n  kind: call\n  call: {tool: get_issue, args: {id: 3}}\n  expect: {is_error: false}\n";
    std::fs::write(&calls, call).unwrap();
    let refused = stale_run(&calls, &dir.path().join("calls"));
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        text(&refused).contains("only call tasks"),
        "{}",
        text(&refused)
    );
}
