//! A run killed midway, or interrupted with Ctrl-C, is finished by `--resume` with every trial
//! exactly once.

use crate::common;

use std::collections::HashSet;
use std::fs::File;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;
use polars_io::prelude::*;

fn slow_run(server: &Background, out: &Path) -> std::process::Child {
    slow_demo(server, out, "4")
}

fn resume(server: &Background, out: &Path) {
    assert_verdict(&resume_run(server, out));
}

fn assert_complete(out: &Path) {
    let eps = episodes(out);
    let tasks: HashSet<&str> = eps.iter().map(|e| e.task_id.as_str()).collect();
    let keys: HashSet<_> = eps
        .iter()
        .map(|e| (e.task_id.clone(), e.side, e.trial))
        .collect();
    assert_eq!(keys.len(), tasks.len() * 4 * 2, "missing episodes");
    assert_eq!(
        lines(&out.join("episodes.jsonl")),
        keys.len(),
        "duplicate episodes"
    );
    assert_eq!(lines(&out.join("transcripts.jsonl")), keys.len());
    // The tables were written as the runs went, the earlier invocation's episodes first: each
    // trial is in them once too.
    let table = ParquetReader::new(File::open(out.join("episodes.parquet")).unwrap())
        .finish()
        .unwrap();
    let column = |name: &str| table.column(name).unwrap().as_materialized_series().clone();
    let (task, side, trial) = (column("task_id"), column("side"), column("trial"));
    let rows: HashSet<String> = (0..table.height())
        .map(|i| {
            format!(
                "{}/{}/{}",
                task.get(i).unwrap(),
                side.get(i).unwrap(),
                trial.get(i).unwrap()
            )
        })
        .collect();
    assert_eq!(table.height(), keys.len(), "episodes.parquet rows");
    assert_eq!(rows.len(), keys.len(), "a trial twice in episodes.parquet");
    assert_eq!(lines(&out.join("episodes.csv")), keys.len() + 1);
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["status"], "completed");
}

/// A sim-server with latency, and a slow run against it that has recorded some episodes.
fn run_under_way() -> (
    Background,
    tempfile::TempDir,
    std::path::PathBuf,
    std::process::Child,
) {
    let server = spawn_listening(
        &["sim-server", "--addr", "127.0.0.1:0", "--latency-ms", "30"],
        false,
    );
    let dir = temp_dir();
    let out = dir.path().join("run");
    let child = slow_run(&server, &out);
    let episodes_file = out.join("episodes.jsonl");
    assert!(wait_for(
        || lines(&episodes_file) >= 12,
        Duration::from_secs(60)
    ));
    (server, dir, out, child)
}

#[test]
fn a_killed_run_is_finished_by_resume_without_duplicates() {
    let (server, _dir, out, mut child) = run_under_way();
    child.kill().unwrap();
    child.wait().unwrap();
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    let total = run["tasks"].as_array().unwrap().len() * 4 * 2;
    assert!(
        lines(&out.join("episodes.jsonl")) < total,
        "the run finished before it was killed"
    );
    assert!(
        !out.join("episodes.parquet").exists(),
        "a killed run left tables under their final names"
    );
    resume(&server, &out);
    assert_complete(&out);
}

#[test]
fn ctrl_c_finishes_in_flight_trials_writes_the_files_and_resume_completes() {
    let (server, _dir, out, mut child) = run_under_way();
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(130));
    assert!(
        out.join("episodes.parquet").is_file(),
        "tables not written on Ctrl-C"
    );
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["status"], "interrupted");
    resume(&server, &out);
    assert_complete(&out);
}
