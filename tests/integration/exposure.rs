//! What a host shows besides tools (`--expose`), through the real binary against the demo
//! server over stdio and HTTP: the resource tools and `attach:` read the server's resources, a
//! task starts from its prompt, an overlay that hides them triggers the run, picks those tasks
//! and fails them; a task that needs what no host shows, or an app host asked to show it, is
//! refused before any trial.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;
use mcpeval::episode::Side;

const EXPOSE: &str = "tools,resources,prompts";

fn run(baseline: &str, candidate: &str, out: &Path, extra: &[&str]) -> Output {
    Command::new(bin())
        .args(["run", "--baseline", baseline, "--candidate", candidate])
        .args([
            "--suite",
            "tasks/exposure",
            "--host",
            "sim",
            "--trials",
            "3",
        ])
        .args(["--out", out.to_str().unwrap()])
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("mcpeval runs")
}

/// Each task's successes per side (baseline, candidate).
fn successes(dir: &Path, task: &str) -> (usize, usize) {
    let episodes = common::episodes(dir);
    let count = |side: Side| {
        (episodes.iter())
            .filter(|e| e.task_id == task && e.side == side && e.success)
            .count()
    };
    (count(Side::Baseline), count(Side::Candidate))
}

#[test]
fn exposed_resources_and_prompts_are_read_and_used_on_both_releases_over_stdio_and_http() {
    let dir = temp_dir();
    let stdio = dir.path().join("stdio");
    let out = run("demo:1.4.0", "demo:1.5.0", &stdio, &["--expose", EXPOSE]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    for task in [
        "read-issue-5-resource",
        "triage-from-prompt",
        "attached-issue-title",
    ] {
        assert_eq!(successes(&stdio, task), (3, 3), "{task}: {}", text(&out));
    }
    let episodes = common::episodes(&stdio);
    let of = |task: &str| episodes.iter().find(|e| e.task_id == task).unwrap();
    // The model's read is a host call, not a tool call: tools_called stays empty.
    let read = of("read-issue-5-resource");
    assert_eq!((read.tool_calls, read.tools_called.as_str()), (0, ""));
    let tools: Vec<&str> = read.host_calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(tools, ["resource:tracker://issues/5"]);
    assert!(
        read.host_calls[0].result.contains("\"id\":5"),
        "{:?}",
        read.host_calls
    );
    assert!(
        !read.tools_offered.contains("read_resource"),
        "{}",
        read.tools_offered
    );
    // The attachment is read before the model's first turn and marked as such; the no-tool
    // task still passes.
    let attached = of("attached-issue-title");
    assert!(attached.host_calls[0]
        .arguments
        .contains("\"attached\":true"));
    let prompt = of("triage-from-prompt");
    assert_eq!(prompt.host_calls[0].tool, "prompt:triage_issue");
    let transcripts = std::fs::read_to_string(stdio.join("transcripts.jsonl")).unwrap();
    assert!(
        transcripts.contains("Triage issue #5"),
        "the prompt's message opens the trial"
    );
    assert!(transcripts.contains("<attachment uri=\\\"tracker://issues/5\\\">"));

    // Over HTTP: the same, each side a server of its own.
    let baseline = spawn_listening(
        &["demo-server", "--release", "1.4.0", "--http", "127.0.0.1:0"],
        true,
    );
    let candidate = spawn_listening(
        &["demo-server", "--release", "1.5.0", "--http", "127.0.0.1:0"],
        true,
    );
    let http = dir.path().join("http");
    let out = run(
        &format!("http://{}/mcp", baseline.addr),
        &format!("http://{}/mcp", candidate.addr),
        &http,
        &["--expose", EXPOSE, "--allow-writes"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(successes(&http, "read-issue-5-resource"), (3, 3));
    assert_eq!(successes(&http, "triage-from-prompt"), (3, 3));
}

#[test]
fn an_overlay_that_hides_the_template_and_prompt_triggers_and_fails_their_tasks() {
    let dir = temp_dir();
    let overlay = "overlay:examples/overlays/hide-issue-resources.yaml+demo:1.4.0";
    let extra = ["--expose", EXPOSE, "--auto-trigger", "--allow-breaking"];
    let out = run("demo:1.4.0", overlay, dir.path(), &extra);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let console = text(&out);
    for line in [
        "read-issue-5-resource: reads changed resource `tracker://issues/{id}`",
        "triage-from-prompt: starts from changed prompt `triage_issue`",
    ] {
        assert!(console.contains(line), "{line}\n{console}");
    }
    for task in ["read-issue-5-resource", "triage-from-prompt"] {
        assert_eq!(successes(dir.path(), task), (3, 0), "{task}: {console}");
    }
    let episodes = common::episodes(dir.path());
    let refused = (episodes.iter())
        .find(|e| e.task_id == "triage-from-prompt" && e.side == Side::Candidate)
        .unwrap();
    assert_eq!(refused.turns, 0, "no model turn without its prompt");
    assert!(
        refused
            .grade
            .checks
            .iter()
            .any(|c| c.grader == "server_prompt"
                && c.explanation.contains("unknown prompt `triage_issue`")),
        "{:?}",
        refused.grade
    );
}

#[test]
fn what_no_host_shows_is_refused_before_any_trial() {
    let dir = temp_dir();
    let out = run("demo:1.4.0", "demo:1.5.0", dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("task `read-issue-5-resource`") && said.contains("--expose tools,resources"),
        "{said}"
    );
    assert!(!dir.path().join("episodes.jsonl").exists());
    let out = run(
        "demo:1.4.0",
        "demo:1.5.0",
        &dir.path().join("app"),
        &["--host", "claude-code", "--expose", EXPOSE],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("setting of API hosts"),
        "{}",
        text(&out)
    );
}
