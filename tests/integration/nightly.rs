//! `mcpeval nightly` and `mcpeval history` through the real binary: the history a night appends,
//! drift against an earlier night, an append killed before its rename, and the cron schedule
//! stopped by SIGTERM.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use mcpeval::history::{self, HistoryRow, CANDIDATE, DRIFT};

/// Two tool tasks whose tools 1.5.0 leaves alone or changes, and one no-tool task.
const SUITE: &str = r#"
- id: create-zephyr-freeze
  prompt: Create an issue in zephyr titled 'App freezes on startup' with high priority
  set: regression
  expect:
    calls:
      - tool: create_issue
        args:
          project: zephyr
          title: {regex: "(?i)freezes on startup"}
          priority: high

- id: search-crash-zephyr
  prompt: Search for crash issues in the zephyr project
  set: regression
  expect:
    calls:
      - tool: search_issues
        args:
          project: zephyr
          query: {regex: "(?i)crash"}

- id: greeting
  prompt: Hello! How are you today?
  kind: no-tool
  set: regression
"#;

/// A nightly config over the small suite; `extra` is appended (e.g. a `[sim]` table).
fn config(extra: &str) -> String {
    format!(
        "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.5.0\"\nsuites = [\"tasks\"]\n\
         hosts = [\"sim\"]\ntrials = 8\nconcurrency = 8\nseed = 7\nout_dir = \"results\"\n\
         {extra}\n[profile]\nserver_label = \"tracker\"\n\n[nightly]\n\
         history = \"results/history.parquet\"\n"
    )
}

/// A temporary working directory with the suite and `nightly.toml`.
fn workspace(extra: &str) -> tempfile::TempDir {
    let dir = temp_dir();
    std::fs::create_dir_all(dir.path().join("tasks")).unwrap();
    std::fs::write(dir.path().join("tasks/nightly.yaml"), SUITE).unwrap();
    std::fs::write(dir.path().join("nightly.toml"), config(extra)).unwrap();
    dir
}

fn command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .env_remove("OPENAI_API_KEY")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("MCPEVAL_HISTORY")
        .env_remove("MCPEVAL_FAULT")
        .env_remove("MCPEVAL_TRIALS")
        .env_remove("MCPEVAL_SEED")
        .env_remove("MCPEVAL_CONCURRENCY");
    cmd
}

/// One nightly job; the run's exit is 0 or 1 (the demo candidate may regress).
fn night(dir: &Path) -> Output {
    let out = command(dir, &["nightly", "--config", "nightly.toml", "--once"])
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    out
}

fn history_rows(dir: &Path) -> Vec<HistoryRow> {
    history::read(&dir.join("results/history.parquet")).expect("the history reads")
}

/// Run ids of the rows of one comparison kind, in history order, without repeats.
fn runs(rows: &[HistoryRow], comparison: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for r in rows.iter().filter(|r| r.comparison == comparison) {
        if !ids.contains(&r.run_id) {
            ids.push(r.run_id.clone());
        }
    }
    ids
}

fn summary_of(rows: &[HistoryRow], run: &str) -> String {
    let row = rows.iter().find(|r| r.run_id == run).unwrap();
    std::fs::read_to_string(PathBuf::from(&row.run_dir).join("summary.md")).unwrap()
}

#[test]
fn nights_append_their_runs_then_drift_and_history_prints_the_trend() {
    let ws = workspace("");
    let dir = ws.path();

    night(dir);
    let rows = history_rows(dir);
    let first = runs(&rows, CANDIDATE);
    assert_eq!(first.len(), 1, "{rows:?}");
    assert!(runs(&rows, DRIFT).is_empty());
    let row = &rows[0];
    assert_eq!(
        (
            row.baseline_version.as_str(),
            row.candidate_version.as_str()
        ),
        ("1.4.0", "1.5.0")
    );
    assert!(Path::new(&row.run_dir).join("episodes.jsonl").is_file());
    assert!(row.run_dir.contains("nightly-"), "{}", row.run_dir);
    assert!(
        row.date.ends_with('Z') && row.date.len() == 20,
        "{}",
        row.date
    );
    for task in [
        "create-zephyr-freeze",
        "search-crash-zephyr",
        "greeting",
        "*",
    ] {
        assert!(
            rows.iter().any(|r| r.task_id == task
                && r.metric == "success"
                && (task == "*" || r.n_baseline == 8)),
            "no success row for {task}"
        );
    }
    assert!(summary_of(&rows, &first[0]).contains("No earlier run with baseline `1.4.0`"));

    // Same seed, same deterministic sim: the baselines agree, nothing drifts.
    night(dir);
    let rows = history_rows(dir);
    let both = runs(&rows, CANDIDATE);
    assert_eq!(both.len(), 2);
    assert_eq!(runs(&rows, DRIFT), [both[1].clone()]);
    let drift: Vec<&HistoryRow> = rows.iter().filter(|r| r.comparison == DRIFT).collect();
    assert!(drift.len() >= 3 * 8, "{} drift rows", drift.len());
    for r in &drift {
        assert_eq!(r.reference_run_id.as_deref(), Some(both[0].as_str()));
        assert_eq!(r.candidate_version, "1.4.0");
        assert!(!r.moved(), "drift flagged with identical baselines: {r:?}");
        if ["success", "tool_calls", "total_tokens"].contains(&r.metric.as_str()) {
            assert_eq!(r.baseline_mean, r.candidate_mean, "{r:?}");
        }
    }
    let summary = summary_of(&rows, &both[1]);
    assert!(summary.contains("## Baseline drift"), "{summary}");
    assert!(summary.contains("No task's baseline moved"), "{summary}");

    let out = command(dir, &["history", "--task", "create-zephyr-freeze"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains("task create-zephyr-freeze · host sim · success"));
    for run in &both {
        assert!(printed.contains(run.as_str()), "{printed}");
    }
    assert!(printed.contains("1.4.0 → 1.5.0") && printed.contains("1.4.0 (A/A)"));
    assert!(
        printed.contains(&format!("vs run {}", both[0])),
        "{printed}"
    );
    let first_at = printed.find(both[0].as_str()).unwrap();
    let second_at = printed.find(both[1].as_str()).unwrap();
    assert!(first_at < second_at, "newest last:\n{printed}");

    let out = command(dir, &["history", "--task", "no-such-task"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("create-zephyr-freeze"));

    // The model changes behind the API: it now answers without calling tools.
    std::fs::write(
        dir.join("nightly.toml"),
        config("\n[sim]\ncall_threshold = 100.0\n"),
    )
    .unwrap();
    night(dir);
    let rows = history_rows(dir);
    let all = runs(&rows, CANDIDATE);
    assert_eq!(all.len(), 3);
    let moved: Vec<&HistoryRow> = rows
        .iter()
        .filter(|r| r.run_id == all[2] && r.comparison == DRIFT && r.moved())
        .collect();
    assert!(
        moved
            .iter()
            .any(|r| r.task_id == "create-zephyr-freeze" && r.metric == "success"),
        "{moved:?}"
    );
    assert!(moved
        .iter()
        .all(|r| r.task_id != "greeting" || r.metric != "success"));
    assert!(moved
        .iter()
        .all(|r| r.reference_run_id.as_deref() == Some(all[1].as_str())));
    let summary = summary_of(&rows, &all[2]);
    assert!(summary.contains("**The baseline moved on"), "{summary}");
    assert!(summary.contains(history::MAY_BE_THE_MODEL), "{summary}");
    assert!(summary.contains("| `create-zephyr-freeze` | `sim` | success | 1.000 | 0.000 |"));

    let out = command(
        dir,
        &[
            "history",
            "--task",
            "create-zephyr-freeze",
            "--metric",
            "all",
        ],
    )
    .output()
    .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains("← baseline moved"), "{printed}");
    assert!(printed.contains("· total_tokens"), "{printed}");
}

#[test]
fn a_night_whose_diff_affects_no_model_appends_nothing_unless_the_whole_suite_runs() {
    let ws = workspace("");
    let dir = ws.path();
    let same = config("").replace("demo:1.5.0", "demo:1.4.0");
    std::fs::write(dir.join("nightly.toml"), &same).unwrap();
    let out = night(dir);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing run, nothing appended"));
    assert!(!dir.join("results/history.parquet").exists());

    let whole = same.replace("[nightly]\n", "[nightly]\nwhole_suite = true\n");
    std::fs::write(dir.join("nightly.toml"), whole).unwrap();
    let out = night(dir);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let rows = history_rows(dir);
    assert_eq!(runs(&rows, CANDIDATE).len(), 1);
    assert!(rows
        .iter()
        .all(|r| r.baseline_version == "1.4.0" && r.candidate_version == "1.4.0"));
    assert!(rows.iter().any(|r| r.task_id == "greeting"));
}

#[test]
fn an_append_killed_before_its_rename_leaves_the_history_whole_and_the_next_one_works() {
    let ws = workspace("");
    let dir = ws.path();
    night(dir);
    let path = dir.join("results/history.parquet");
    let before = std::fs::read(&path).unwrap();
    let first = runs(&history_rows(dir), CANDIDATE);

    let out = command(dir, &["nightly", "--config", "nightly.toml"])
        .env(history::FAULT_ENV, "history-before-rename")
        .output()
        .unwrap();
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{}", text(&out));
    }
    assert_eq!(std::fs::read(&path).unwrap(), before, "the history changed");
    let leftovers = || -> Vec<String> {
        std::fs::read_dir(dir.join("results"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("history.parquet.tmp-"))
            .collect()
    };
    assert_eq!(leftovers().len(), 1, "the killed writer's temporary file");
    assert_eq!(runs(&history_rows(dir), CANDIDATE), first);

    let out = night(dir);
    assert!(String::from_utf8_lossy(&out.stderr).contains("left by a writer that did not finish"));
    assert!(leftovers().is_empty());
    let rows = history_rows(dir);
    let now = runs(&rows, CANDIDATE);
    assert_eq!(now.len(), 2);
    assert_eq!(now[0], first[0]);
    // The killed night was never recorded: the drift reference is the first night.
    assert!(rows
        .iter()
        .filter(|r| r.comparison == DRIFT)
        .all(|r| r.reference_run_id.as_deref() == Some(first[0].as_str())));
}

#[test]
fn the_schedule_runs_a_job_every_two_seconds_one_at_a_time_and_stops_on_sigterm() {
    let ws = workspace("");
    let dir = ws.path();
    let mut child = command(
        dir,
        &[
            "nightly",
            "--config",
            "nightly.toml",
            "--schedule",
            "*/2 * * * * *",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let stderr = child.stderr.take().unwrap();
    let lines = log.clone();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            lines.lock().unwrap().push(line);
        }
    });
    let finished = |n: u32| {
        let marker = format!("nightly: job {n} finished");
        log.lock().unwrap().iter().any(|l| l.contains(&marker))
    };
    let pid = child.id() as libc::pid_t;
    let (exited, exit) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = exited.send(child.wait().expect("the child is waited for"));
    });
    let two = wait_for(|| finished(2), Duration::from_secs(90));
    // SAFETY: sending a signal to the child this test started (and has not reaped yet).
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    let status = exit.recv_timeout(Duration::from_secs(10)).ok();
    if status.is_none() {
        // SAFETY: as above; the test has failed, the child must not outlive it.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
    waiter.join().unwrap();
    reader.join().unwrap();
    let log = log.lock().unwrap().join("\n");
    assert!(two, "two jobs never finished:\n{log}");
    let status = status.unwrap_or_else(|| panic!("still running 10 s after SIGTERM:\n{log}"));
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(log.contains("stop requested"), "{log}");

    // Jobs never overlap: each start follows the previous job's end.
    let events: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" started (fire time") || l.contains(" finished in "))
        .collect();
    for pair in events.chunks(2) {
        assert!(pair[0].contains("started"), "{log}");
        if let Some(end) = pair.get(1) {
            assert!(end.contains("finished"), "{log}");
        }
    }
    assert!(
        log.lines().filter(|l| l.contains("recorded:")).count() >= 2,
        "{log}"
    );
    let rows = history_rows(dir);
    let recorded = runs(&rows, CANDIDATE);
    assert!(
        recorded.len() == 2 || (recorded.len() == 3 && finished(3)),
        "{recorded:?}\n{log}"
    );
    assert_eq!(runs(&rows, DRIFT), recorded[1..].to_vec());
}

#[test]
fn a_night_against_a_candidate_that_breaks_clients_runs_when_nightly_is_told_to() {
    let ws = workspace("");
    let dir = ws.path();
    let breaking = config("").replace("demo:1.5.0", "demo:2.0.0");
    std::fs::write(dir.join("nightly.toml"), &breaking).unwrap();
    let out = night(dir);
    // Stopped before its trials; the advice names what nightly accepts (before issue 36 it said
    // `pass --allow-breaking`, which `mcpeval nightly` refused as an unexpected argument).
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "pass --allow-breaking to `mcpeval nightly` or set [nightly] allow_breaking = true"
        ),
        "{stderr}"
    );
    assert!(!dir.join("results/history.parquet").exists());

    let flagged = command(
        dir,
        &[
            "nightly",
            "--config",
            "nightly.toml",
            "--once",
            "--allow-breaking",
        ],
    )
    .output()
    .unwrap();
    assert!(
        matches!(flagged.status.code(), Some(0 | 1)),
        "{}",
        text(&flagged)
    );
    let rows = history_rows(dir);
    assert_eq!(runs(&rows, CANDIDATE).len(), 1, "{}", text(&flagged));
    assert!(rows.iter().all(|r| r.candidate_version == "2.0.0"));

    let table = breaking.replace("[nightly]\n", "[nightly]\nallow_breaking = true\n");
    std::fs::write(dir.join("nightly.toml"), table).unwrap();
    night(dir);
    assert_eq!(runs(&history_rows(dir), CANDIDATE).len(), 2);
}
