//! Tool search (`--tool-search`) through the real binary: emulated, the overlay that rewrites
//! `search_issues`' title and description in words no request uses drops it out of the top 1 for
//! the request that does not name it, and the run reports the regression (found@k and success),
//! though every tool in the prompt shows none; native, against `mcpeval sim-server` standing in
//! for Anthropic's API over HTTP on 127.0.0.1, the requests carry the tool-search tool, deferred
//! tools and their beta, and the search's blocks come back; settings no host can run are refused.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;
use mcpeval::episode::{Episode, Side};
use serde_json::Value;

const HIDDEN: &str = "overlay:examples/overlays/hidden-search.yaml+demo:1.4.0";

fn run(out: &Path, extra: &[&str]) -> Output {
    Command::new(bin())
        .args(["run", "--baseline", "demo:1.4.0", "--candidate", HIDDEN])
        .args(["--suite", "tasks/tool_search", "--trials", "8"])
        .args(["--out", out.to_str().unwrap()])
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("mcpeval runs")
}

fn of<'a>(episodes: &'a [Episode], task: &str, side: Side) -> Vec<&'a Episode> {
    (episodes.iter())
        .filter(|e| e.task_id == task && e.side == side)
        .collect()
}

/// The comparison row of `task` and `metric` (from comparison.csv).
fn row(dir: &Path, task: &str, metric: &str) -> std::collections::HashMap<String, String> {
    let csv = std::fs::read_to_string(dir.join("comparison.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let line = lines
        .find(|l| l.starts_with(&format!("{task},")) && l.split(',').nth(2) == Some(metric))
        .unwrap_or_else(|| panic!("no {task} {metric} row in\n{csv}"));
    head.iter()
        .map(|h| h.to_string())
        .zip(line.split(',').map(str::to_owned))
        .collect()
}

#[test]
fn a_description_that_hides_a_tool_from_search_is_a_regression_no_full_list_run_shows() {
    let dir = temp_dir();
    // Every tool in the prompt: the sim still picks `search_issues` by its name and parameters.
    let full = run(&dir.path().join("full"), &["--host", "sim"]);
    assert_eq!(full.status.code(), Some(0), "{}", text(&full));
    // At the default k of 5, six tools: the search still returns it.
    let five = dir.path().join("five");
    let out = run(&five, &["--host", "sim", "--tool-search", "emulated"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // At k = 1 it drops out for the request that does not name it.
    let one = dir.path().join("one");
    let args = [
        "--host",
        "sim",
        "--tool-search",
        "emulated",
        "--tool-search-k",
        "1",
    ];
    let out = run(&one, &args);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    let line = (said.lines())
        .find(|l| l.starts_with("find-open-login"))
        .unwrap_or_else(|| panic!("{said}"));
    // Success, then found@k: both from all 8 trials to none.
    assert_eq!(line.matches("8/8 → 0/8").count(), 2, "{line}");
    assert!(line.contains("regression (success, found_at_k)"), "{line}");
    assert!(said.contains("found@k b → c"), "{said}");
    let episodes = episodes(&one);
    let task = "find-open-login-apollo";
    for e in of(&episodes, task, Side::Baseline) {
        let search = e.tool_search.as_ref().unwrap();
        assert_eq!(
            (search.found_rank, search.found_at_k),
            (Some(1), Some(true))
        );
        assert!(e.success);
        assert_eq!(search.searches[0].ranked[0], "search_issues");
        assert_eq!(
            (search.searches.len(), search.search_turns, search.k),
            (1, 1, 1)
        );
        // The search is the host's call; the server's tools are offered after it.
        assert_eq!(e.host_calls[0].tool, "tool_search");
        assert_eq!(e.tools_called, "search_issues");
    }
    for e in of(&episodes, task, Side::Candidate) {
        let search = e.tool_search.as_ref().unwrap();
        assert_eq!(
            (search.found_rank, search.found_at_k),
            (Some(3), Some(false))
        );
        assert!(!e.success);
        assert_ne!(e.tools_called, "search_issues");
    }
    // A request that needs another tool finds it on both sides.
    for e in of(&episodes, "show-issue-3", Side::Candidate) {
        assert_eq!(e.tool_search.as_ref().unwrap().found_rank, Some(1));
    }
    let found = row(&one, task, "found_at_k");
    assert_eq!(found["verdict"], "regression");
    assert_eq!(found["test"], "fisher_exact");
    assert_eq!(
        (
            found["baseline_mean"].as_str(),
            found["candidate_mean"].as_str()
        ),
        ("1.0", "0.0")
    );
    // The new columns come last in episodes.csv.
    let csv = std::fs::read_to_string(one.join("episodes.csv")).unwrap();
    let head = csv.lines().next().unwrap();
    assert!(
        head.ends_with(",tool_searches,found_rank,found_at_k,search_turns"),
        "{head}"
    );
    let summary = std::fs::read_to_string(one.join("summary.md")).unwrap();
    assert!(summary.contains("## Tool search"), "{summary}");
    assert!(summary.contains("| `find-open-login-apollo` | `sim` | 8/8 | 0/8 | regression |"));
    // Without tool search an episode records none, and the comparison has no found@k row.
    let full = common::episodes(&dir.path().join("full"));
    assert!(full.iter().all(|e| e.tool_search.is_none()));
    let csv = std::fs::read_to_string(dir.path().join("full/comparison.csv")).unwrap();
    assert!(!csv.contains("found_at_k"));
}

#[test]
fn anthropics_tool_search_runs_against_sim_server_over_http() {
    let dir = temp_dir();
    let log = dir.path().join("requests.jsonl");
    let server = spawn_listening(
        &[
            "sim-server",
            "--addr",
            "127.0.0.1:0",
            "--record-requests",
            log.to_str().unwrap(),
        ],
        false,
    );
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "[profile]\nserver_label = \"tracker\"\n\n[host.claude]\nprovider = \"anthropic\"\n\
         model = \"claude-sim\"\nprofile = { tool_search = \"native\", tool_search_variant = \
         \"regex\" }\n",
    )
    .unwrap();
    let out = Command::new(bin())
        .args(["run", "--config", config.to_str().unwrap()])
        .args(["--baseline", "demo:1.4.0", "--candidate", "demo:1.4.0"])
        .args([
            "--suite",
            "tasks/tool_search",
            "--trials",
            "1",
            "--host",
            "claude",
        ])
        .args(["--out", dir.path().join("run").to_str().unwrap()])
        .args(["--host", "anthropic:claude-sim", "--tool-search", "native"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("ANTHROPIC_BASE_URL", format!("http://{}", server.addr))
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    // sim-server refuses (400) a request without the beta header, a misnamed or deferred search
    // tool, deferred tools without one: every trial ran, none was refused.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let requests: Vec<Value> = (std::fs::read_to_string(&log).unwrap().lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first = &requests[0];
    let tools = first["tools"].as_array().unwrap();
    let search_tools: Vec<&Value> = tools.iter().filter(|t| t.get("type").is_some()).collect();
    assert_eq!(search_tools.len(), 1, "{tools:?}");
    let types: Vec<&str> = (requests.iter())
        .filter_map(|r| r["tools"][0]["type"].as_str())
        .collect();
    assert!(
        types.contains(&"tool_search_tool_regex_20251119"),
        "{types:?}"
    );
    assert!(
        types.contains(&"tool_search_tool_bm25_20251119"),
        "{types:?}"
    );
    let server_tools = tools.iter().filter(|t| t.get("type").is_none());
    assert!(server_tools.clone().count() == 6);
    assert!(
        server_tools.clone().all(|t| t["defer_loading"] == true),
        "{tools:?}"
    );
    // The search's blocks go back unchanged, before the call they made possible.
    let answered = (requests.iter())
        .find(|r| r["messages"].as_array().unwrap().len() > 1)
        .expect("a second request");
    let blocks = &answered["messages"][1]["content"];
    let kinds: Vec<&str> = (blocks.as_array().unwrap().iter())
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["server_tool_use", "tool_search_tool_result", "tool_use"]
    );
    let episodes = episodes(&dir.path().join("run"));
    assert_eq!(episodes.len(), 12);
    for e in &episodes {
        let search = e.tool_search.as_ref().unwrap();
        assert_eq!(search.mode, "native");
        assert_eq!(
            (search.searches.len(), search.search_turns),
            (1, 0),
            "{}",
            e.task_id
        );
        assert_eq!(search.found_at_k, Some(true), "{}: {search:?}", e.task_id);
        assert!(e.success, "{}: {:?}", e.task_id, e.grade);
    }
}

#[test]
fn tool_search_no_host_can_run_is_refused() {
    let dir = temp_dir();
    let refused = |extra: &[&str], why: &str| {
        let out = run(&dir.path().join("x"), extra);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains(why), "{}", text(&out));
    };
    refused(
        &["--host", "sim", "--tool-search", "native"],
        "needs an `anthropic`",
    );
    let app = ["--host", "claude-code", "--tool-search", "emulated"];
    refused(&app, "setting of API hosts");
    refused(
        &[
            "--host",
            "sim",
            "--tool-search",
            "emulated",
            "--tool-search-k",
            "0",
        ],
        "at least 1",
    );
    refused(
        &["--host", "sim", "--tool-search", "nearby"],
        "native or emulated",
    );
}
