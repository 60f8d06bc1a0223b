//! The embedded demo run end to end through the real binary: files, rows, sides, determinism.

use crate::common;

use std::collections::{BTreeMap, HashSet};
use std::fs::File;

use common::*;
use mcpeval::episode::{Episode, Side};
use polars_io::prelude::*;

fn run_demo(dir: &std::path::Path, trials: &str, extra: &[&str]) -> Vec<Episode> {
    let mut args = vec!["run", "--out", dir.to_str().unwrap(), "--trials", trials];
    args.extend_from_slice(extra);
    let out = mcpeval(&args);
    assert_verdict(&out);
    episodes(dir)
}

/// (task, side, trial) → (success, tools called, input tokens, output tokens, arguments).
type Fingerprint = BTreeMap<(String, Side, u32), (bool, String, u64, u64, String)>;

/// What must reproduce for a seed: everything but timings and the run id.
fn fingerprint(eps: &[Episode]) -> Fingerprint {
    eps.iter()
        .map(|e| {
            let args: Vec<&str> = e.calls.iter().map(|c| c.arguments.as_str()).collect();
            (
                (e.task_id.clone(), e.side, e.trial),
                (
                    e.success,
                    e.tools_called.clone(),
                    e.input_tokens,
                    e.output_tokens,
                    args.join("|"),
                ),
            )
        })
        .collect()
}

#[test]
fn demo_run_writes_every_episode_of_both_sides_and_reproduces_for_a_seed() {
    let first = temp_dir();
    let eps = run_demo(first.path(), "3", &[]);
    for file in [
        "run.json",
        "episodes.parquet",
        "episodes.csv",
        "tool_calls.parquet",
        "transcripts.jsonl",
        "episodes.jsonl",
    ] {
        assert!(first.path().join(file).is_file(), "missing {file}");
    }
    let tasks: HashSet<&str> = eps.iter().map(|e| e.task_id.as_str()).collect();
    assert!(tasks.len() >= 15, "only {} tasks", tasks.len());
    assert_eq!(eps.len(), tasks.len() * 3 * 2);
    assert!(
        eps.iter().all(|e| e.infra_error.is_none()),
        "infra errors in the demo"
    );
    assert!(eps
        .iter()
        .any(|e| e.kind == mcpeval::suite::TaskKind::NoTool));
    for side in Side::BOTH {
        assert_eq!(
            eps.iter().filter(|e| e.side == side).count(),
            tasks.len() * 3
        );
    }

    // The sides differ on some tasks and agree on others.
    let mut rate: BTreeMap<(&str, Side), u32> = BTreeMap::new();
    for e in &eps {
        *rate.entry((&e.task_id, e.side)).or_default() += e.success as u32;
    }
    let differing = tasks
        .iter()
        .filter(|t| rate[&(**t, Side::Baseline)] != rate[&(**t, Side::Candidate)])
        .count();
    assert!(differing >= 1, "1.5.0 changed nothing");
    assert!(differing < tasks.len(), "every task moved");

    // The tables hold the same episodes.
    let df = ParquetReader::new(File::open(first.path().join("episodes.parquet")).unwrap())
        .finish()
        .unwrap();
    assert_eq!(df.height(), eps.len());
    for column in [
        "run_id",
        "task_id",
        "kind",
        "set",
        "side",
        "host",
        "model",
        "trial",
        "seed",
        "success",
        "infra_error",
        "turns",
        "tool_calls",
        "tool_errors",
        "protocol_errors",
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "latency_ms",
        "first_tool",
        "tools_called",
    ] {
        assert!(df.column(column).is_ok(), "episodes.parquet lacks {column}");
    }
    let calls = ParquetReader::new(File::open(first.path().join("tool_calls.parquet")).unwrap())
        .finish()
        .unwrap();
    let total_calls: u32 = eps.iter().map(|e| e.tool_calls).sum();
    assert_eq!(calls.height() as u32, total_calls);
    let csv = std::fs::read_to_string(first.path().join("episodes.csv")).unwrap();
    assert_eq!(csv.lines().count(), eps.len() + 1);

    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(first.path().join("run.json")).unwrap()).unwrap();
    assert_eq!(run["status"], "completed");
    assert_eq!(run["baseline"]["info"]["version"], "1.4.0");
    assert_eq!(run["candidate"]["info"]["version"], "1.5.0");
    assert_eq!(run["hosts"][0]["simulated"], true);

    let second = temp_dir();
    let again = run_demo(second.path(), "3", &["--concurrency", "3"]);
    assert_eq!(
        fingerprint(&eps),
        fingerprint(&again),
        "same seed, different episodes"
    );
    let third = temp_dir();
    let other_seed = run_demo(third.path(), "3", &["--seed", "7"]);
    assert_ne!(fingerprint(&eps), fingerprint(&other_seed));
}

#[test]
fn shared_servers_run_every_trial_too() {
    for isolation in ["task", "run"] {
        let dir = temp_dir();
        let eps = run_demo(dir.path(), "2", &["--isolation", isolation]);
        let tasks: HashSet<&str> = eps.iter().map(|e| e.task_id.as_str()).collect();
        assert_eq!(eps.len(), tasks.len() * 2 * 2, "isolation {isolation}");
        assert!(
            eps.iter().all(|e| e.infra_error.is_none()),
            "isolation {isolation}"
        );
    }
}

#[test]
fn host_profile_prefixes_tool_names_for_the_model_and_maps_them_back() {
    let dir = temp_dir();
    let out_dir = run_config(
        dir.path(),
        "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.5.0\"\nsuites = [\"tasks/demo\"]\n\
         [profile]\ntool_naming = \"prefixed\"\nserver_label = \"tracker\"\npass_instructions = false\n",
        "1",
    );
    let transcripts = std::fs::read_to_string(out_dir.join("transcripts.jsonl")).unwrap();
    let first: serde_json::Value =
        serde_json::from_str(transcripts.lines().next().unwrap()).unwrap();
    assert!(first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["name"].as_str().unwrap().starts_with("mcp__tracker__")));
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(
        !system.contains("Issue tracker for"),
        "instructions passed: {system}"
    );
    let eps = episodes(&out_dir);
    let called: Vec<&str> = eps
        .iter()
        .flat_map(|e| e.calls.iter().map(|c| c.tool.as_str()))
        .collect();
    assert!(!called.is_empty());
    assert!(called.iter().all(|t| !t.starts_with("mcp__")), "{called:?}");
    assert!(eps.iter().any(|e| e.success));
}

/// Output into a pipe whose reader has gone (`mcpeval plan | head -0`) ends the process quietly
/// with the status a SIGPIPE gives, not a panic; SIGPIPE itself stays ignored, so that a stdio
/// server that exits early cannot kill a run (see tests/integration/servers.rs).
#[test]
fn output_into_a_closed_pipe_ends_quietly_with_status_141() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just created and are owned here alone.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(reader);
    let out = std::process::Command::new(bin())
        .args(["plan", "--baseline-rate", "0.9", "--drop", "0.2"])
        .stdout(std::process::Stdio::from(writer))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(141), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `compare` reads the columns it needs from episodes.parquet when the table is up to date and
/// falls back on episodes.jsonl when it is missing or older: the comparison is the same either
/// way, and a stale table is never read.
#[test]
fn compare_reads_the_table_or_the_jsonl_with_the_same_result() {
    let run = temp_dir();
    run_demo(run.path(), "4", &[]);
    let other = temp_dir();
    run_demo(other.path(), "4", &["--seed", "7"]);
    let compare_into = |dir: &std::path::Path, out: &std::path::Path| {
        let result = mcpeval(&[
            "compare",
            dir.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(
            matches!(result.status.code(), Some(0 | 1)),
            "{}",
            text(&result)
        );
        std::fs::read_to_string(out.join("comparison.csv")).unwrap()
    };
    let reports = temp_dir();
    let both = compare_into(run.path(), &reports.path().join("both"));
    assert_eq!(
        both,
        std::fs::read_to_string(run.path().join("comparison.csv")).unwrap(),
        "compare differs from the run's own comparison"
    );

    // Only the table (the JSONL gone): the table alone gives the same comparison.
    let table_only = temp_dir();
    for name in ["run.json", "episodes.parquet"] {
        std::fs::copy(run.path().join(name), table_only.path().join(name)).unwrap();
    }
    assert_eq!(
        compare_into(table_only.path(), &reports.path().join("table")),
        both
    );

    // Only the JSONL (a run cut short before its tables).
    let jsonl_only = temp_dir();
    for name in ["run.json", "episodes.jsonl"] {
        std::fs::copy(run.path().join(name), jsonl_only.path().join(name)).unwrap();
    }
    assert_eq!(
        compare_into(jsonl_only.path(), &reports.path().join("jsonl")),
        both
    );
    assert!(!jsonl_only.path().join("episodes.parquet").exists());
    // Reporting into the run directory itself writes its missing tables on the way.
    assert_eq!(compare_into(jsonl_only.path(), jsonl_only.path()), both);
    let rebuilt =
        ParquetReader::new(File::open(jsonl_only.path().join("episodes.parquet")).unwrap())
            .finish()
            .unwrap();
    let original = ParquetReader::new(File::open(run.path().join("episodes.parquet")).unwrap())
        .finish()
        .unwrap();
    assert!(
        rebuilt.equals_missing(&original),
        "the rebuilt table differs"
    );
    assert!(jsonl_only.path().join("episodes.csv").is_file());
    assert!(jsonl_only.path().join("tool_calls.parquet").is_file());

    // A table older than the JSONL (another run's, written before it) is not read.
    let stale = temp_dir();
    std::fs::copy(
        other.path().join("episodes.parquet"),
        stale.path().join("episodes.parquet"),
    )
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    for name in ["run.json", "episodes.jsonl"] {
        std::fs::copy(run.path().join(name), stale.path().join(name)).unwrap();
    }
    assert_eq!(
        compare_into(stale.path(), &reports.path().join("stale")),
        both
    );
    let other_comparison = compare_into(other.path(), &reports.path().join("other"));
    assert_ne!(
        other_comparison, both,
        "the two seeds gave the same comparison"
    );
}
