//! Adaptive runs through the binary: the demo with `--adaptive` finds the fixed design's
//! regressions with fewer trials, and a killed adaptive run resumes to the same end.

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

/// The task rows of `comparison.csv` for `metric`: task → (verdict, trials_run, stopped).
fn task_rows(dir: &Path, metric: &str) -> BTreeMap<String, (String, String, String)> {
    let text = std::fs::read_to_string(dir.join("comparison.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (task, m, scope, verdict, run, stopped) = (
        at("task_id"),
        at("metric"),
        at("scope"),
        at("verdict"),
        at("trials_run"),
        at("stopped"),
    );
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[scope] == "task" && f[m] == metric)
        .map(|f| {
            let field = |i: usize| f[i].to_owned();
            (field(task), (field(verdict), field(run), field(stopped)))
        })
        .collect()
}

fn regressed(rows: &BTreeMap<String, (String, String, String)>) -> BTreeSet<String> {
    rows.iter()
        .filter(|(_, (verdict, ..))| verdict == "regression")
        .map(|(task, _)| task.clone())
        .collect()
}

#[test]
fn the_demo_finds_the_fixed_designs_regressions_with_fewer_trials() {
    let dir = temp_dir();
    let (adaptive, fixed) = (dir.path().join("adaptive"), dir.path().join("fixed"));
    let out = run_pair(
        "demo:1.4.0",
        "demo:1.5.0",
        &adaptive,
        &["--adaptive", "--max-trials", "30"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("tasks settled"), "{}", text(&out));
    let out = run_pair("demo:1.4.0", "demo:1.5.0", &fixed, &["--trials", "30"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));

    let (a, f) = (
        task_rows(&adaptive, "success"),
        task_rows(&fixed, "success"),
    );
    assert!(!regressed(&f).is_empty());
    assert_eq!(regressed(&a), regressed(&f), "the same tasks regressed");
    // Every task stopped for a reason, after the trials it says, on both sides.
    let eps = episodes(&adaptive);
    for (task, (_, trials_run, stopped)) in &a {
        let reasons = [
            "futility",
            "no_change",
            "regression",
            "improvement",
            "max_trials",
        ];
        assert!(reasons.contains(&stopped.as_str()), "{task}: `{stopped}`");
        let n: u32 = trials_run.parse().unwrap();
        for side in ["baseline", "candidate"] {
            let trials: BTreeSet<u32> = eps
                .iter()
                .filter(|e| &e.task_id == task && e.side.as_str() == side)
                .map(|e| e.trial)
                .collect();
            assert_eq!(trials, (0..n).collect(), "{task} {side}");
        }
        // The fixed design's columns stay empty in a fixed run.
        assert_eq!(f[task].2, "", "{task}");
    }
    let fixed_episodes = episodes(&fixed).len();
    assert!(
        eps.len() * 10 <= fixed_episodes * 7,
        "{} episodes against the fixed design's {fixed_episodes}",
        eps.len()
    );
    let summary = std::fs::read_to_string(adaptive.join("summary.md")).unwrap();
    assert!(summary.contains("Adaptive trials"), "{summary}");
    let html = std::fs::read_to_string(adaptive.join("report.html")).unwrap();
    assert!(html.contains("<th>trials per side · stopped</th>"));
    let (task, (_, n, why)) = a.iter().next().unwrap();
    assert!(html.contains(&format!("{n} · {why}</td>")), "{task}");
    let html = std::fs::read_to_string(fixed.join("report.html")).unwrap();
    assert!(!html.contains("trials per side · stopped"));
}

fn adaptive_run(server: &Background, out: &Path, concurrency: &str) -> Command {
    let mut cmd = pair_command("demo:1.4.0", "demo:1.5.0", out);
    cmd.args(["--host", "openai:sim", "--adaptive", "--max-trials", "15"])
        .args(["--concurrency", concurrency])
        .env("OPENAI_BASE_URL", format!("http://{}/v1", server.addr));
    cmd
}

#[test]
fn a_killed_adaptive_run_resumes_to_the_uninterrupted_runs_end() {
    let server = spawn_listening(
        &["sim-server", "--addr", "127.0.0.1:0", "--latency-ms", "20"],
        false,
    );
    let dir = temp_dir();
    let (cut, whole) = (dir.path().join("cut"), dir.path().join("whole"));
    let mut child = adaptive_run(&server, &cut, "2")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let episodes_file = cut.join("episodes.jsonl");
    let count = || {
        std::fs::read_to_string(&episodes_file)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };
    // Past the first look (18 tasks × 5 trials × 2 sides), into the second.
    assert!(wait_for(|| count() >= 200, Duration::from_secs(120)));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_verdict(&resume_run(&server, &cut));
    let output = adaptive_run(&server, &whole, "8").output().unwrap();
    assert_verdict(&output);

    let keys = |dir: &Path| -> (usize, HashSet<(String, String, u32)>) {
        let eps = episodes(dir);
        let keys = eps
            .iter()
            .map(|e| (e.task_id.clone(), e.side.as_str().to_owned(), e.trial))
            .collect();
        (eps.len(), keys)
    };
    let (cut_count, cut_keys) = keys(&cut);
    let (whole_count, whole_keys) = keys(&whole);
    assert_eq!(cut_count, cut_keys.len(), "a trial recorded twice");
    assert_eq!(whole_count, whole_keys.len());
    assert_eq!(
        cut_keys, whole_keys,
        "the same trials as the uninterrupted run"
    );
    assert_eq!(task_rows(&cut, "success"), task_rows(&whole, "success"));
}

#[test]
fn adaptive_shards_run_whole_tasks_and_merge_to_the_whole_runs_end() {
    let dir = temp_dir();
    let whole = dir.path().join("whole");
    let out = run_pair("demo:1.4.0", "demo:1.5.0", &whole, &["--adaptive"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let mut shards = Vec::new();
    for i in 1..=2 {
        let shard = dir.path().join(format!("shard-{i}"));
        let out = run_pair(
            "demo:1.4.0",
            "demo:1.5.0",
            &shard,
            &["--adaptive", "--shard", &format!("{i}/2")],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        // Each task is one shard's, on both sides, all its trials.
        let tasks: BTreeSet<String> = episodes(&shard).into_iter().map(|e| e.task_id).collect();
        shards.push((shard, tasks));
    }
    assert!(shards[0].1.is_disjoint(&shards[1].1));
    let merged = dir.path().join("merged");
    let out = mcpeval(&[
        "merge",
        shards[0].0.to_str().unwrap(),
        shards[1].0.to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(task_rows(&merged, "success"), task_rows(&whole, "success"));
    assert_eq!(episodes(&merged).len(), episodes(&whole).len());
}

#[test]
fn a_trial_budget_stops_the_tasks_it_cannot_give_a_look() {
    let dir = temp_dir();
    let out_dir = dir.path().join("budget");
    // 18 tasks: the first look takes 90 trials per side, the second at most 90 more.
    let out = run_pair(
        "demo:1.4.0",
        "demo:1.5.0",
        &out_dir,
        &["--adaptive", "--trial-budget", "150"],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let eps = episodes(&out_dir);
    for side in ["baseline", "candidate"] {
        let n = eps.iter().filter(|e| e.side.as_str() == side).count();
        assert!(n <= 150, "{side}: {n} trials against a budget of 150");
    }
    let rows = task_rows(&out_dir, "success");
    let budget: Vec<&String> = rows
        .iter()
        .filter(|(_, (_, _, stopped))| stopped == "budget")
        .map(|(task, _)| task)
        .collect();
    assert!(!budget.is_empty(), "{rows:?}");
    // Every task got the first look; the budget's second went to tasks the first left open.
    for (task, (_, trials_run, _)) in &rows {
        let n: u32 = trials_run.parse().unwrap();
        assert!(n == 5 || n == 10, "{task}: {n}");
    }
}

#[test]
fn a_budget_smaller_than_one_look_per_task_is_refused_with_the_budget_it_needs() {
    let dir = temp_dir();
    let out_dir = dir.path().join("small");
    let out = run_pair(
        "demo:1.4.0",
        "demo:1.5.0",
        &out_dir,
        &["--adaptive", "--trial-budget", "20", "--max-trials", "40"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--trial-budget 20 is too small for 18 tasks")
            && stderr.contains("every task's first look needs 90")
            && stderr.contains("did you mean 360, 20 per task?"),
        "{stderr}"
    );
    assert!(!out_dir.join("episodes.jsonl").exists(), "no trial ran");
}

#[test]
fn a_budget_between_one_look_and_max_trials_warns_and_the_reports_count_what_it_stopped() {
    let dir = temp_dir();
    let out_dir = dir.path().join("warned");
    let out = run_pair(
        "demo:1.4.0",
        "demo:1.5.0",
        &out_dir,
        &["--adaptive", "--trial-budget", "100", "--max-trials", "40"],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        stderr.contains("warning: --trial-budget 100 gives each of the 18 tasks its first look")
            && stderr.contains("(720 = 18 tasks × 40)"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "trial budget 100 per side for the whole run (every task's first look needs 90"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("stopped by the trial budget"), "{stderr}");
    let rows = task_rows(&out_dir, "success");
    let stopped = rows
        .values()
        .filter(|(_, _, stopped)| stopped == "budget")
        .count();
    assert!(stopped > 0, "{rows:?}");
    let counts =
        format!("18 selected: 18 ran ({stopped} of them stopped by the trial budget), 0 never ran");
    assert!(stdout.contains(&format!("tasks: {counts}")), "{stdout}");
    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(
        summary.contains(&format!("| tasks | {counts} |")),
        "{summary}"
    );
    // A task the budget stopped says so in its verdict; one the evidence settled does not.
    // (Issue 36 changed the console's words by design: an end of the whole task is said
    // without the metrics, to fit 120 columns; summary.md keeps them.)
    assert!(
        stdout.contains("inconclusive: budget ran out at 5 trials"),
        "{stdout}"
    );
    assert!(
        summary.contains("success: budget ran out at 5 trials ("),
        "{summary}"
    );
    let settled = rows
        .iter()
        .find(|(_, (_, _, s))| s != "budget")
        .map(|(task, _)| task.clone());
    if let Some(task) = settled {
        let line = stdout.lines().find(|l| l.starts_with(&task)).unwrap();
        assert!(!line.contains("budget ran out"), "{line}");
    }
    // report.html shows the same facts as summary.md.
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(
        html.contains("of them stopped by the trial budget"),
        "no count in report.html"
    );
}

#[test]
fn the_plan_states_the_budget_an_adaptive_run_of_the_suite_needs() {
    let out = mcpeval(&[
        "plan",
        "--suite",
        "tasks/demo",
        "--drop",
        "0.5",
        "--adaptive",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Every task's first look needs 90; letting every task run to 30 trials per side (the recommended 26, at its look) needs 540 (18 tasks × 1 host(s) × 30)"),
        "{stdout}"
    );
}
