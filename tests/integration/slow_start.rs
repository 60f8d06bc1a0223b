//! Servers that start slowly (tests/fixtures/servers/slow_start.py, answering nothing for 11 s,
//! longer than rmcp's own 10 s probe) connect in their era in `snapshot`, `run` and `check`,
//! each probed once per command; a server that stops completing its handshake during trials
//! gives infrastructure errors, never a side's `server_error`.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Instant;

use crate::common;

use common::*;

/// Longer than rmcp's fixed 10 s `server/discover` probe, well within the 30 s start-up timeout.
const SLOW: &str = "11";

/// One call task of the fake's `echo` tool, three trials a side.
const ECHO_SUITE: &str = "\
- id: echo-says-hello
  kind: call
  trials: 3
  call: {tool: echo, args: {text: hello}}
  expect:
    is_error: false
    result_equals: hello
";

/// The fake's command line: `era`, its start state in `state`, more of its flags in `extra`.
fn fake(era: &str, state: &Path, extra: &str) -> String {
    let script = repo_path("tests/fixtures/servers/slow_start.py");
    format!(
        "python3 {} --era {era} --state {} {extra}",
        script.display(),
        state.display()
    )
}

/// The fake's starts recorded in `state`, and how many of them got mcpeval's own probe.
fn starts_and_probes(state: &Path) -> (usize, usize) {
    let text = std::fs::read_to_string(state).unwrap_or_default();
    let starts = text.lines().filter(|l| l.starts_with("start ")).count();
    let probes = text
        .matches("server/discover \"mcpeval-era-probe\"")
        .count();
    (starts, probes)
}

fn suite(dir: &Path) -> PathBuf {
    let path = dir.join("echo.yaml");
    std::fs::write(&path, ECHO_SUITE).unwrap();
    path
}

/// Times `mcpeval ARGS`.
fn timed(args: &[&str]) -> (Output, f64) {
    let started = Instant::now();
    let out = mcpeval(args);
    (out, started.elapsed().as_secs_f64())
}

fn snapshot_era(era: &str) {
    let dir = temp_dir();
    let state = dir.path().join("state");
    // Only the first start is slow: the contract's error probes start the server five times more.
    let server = fake(era, &state, &format!("--delay {SLOW} --slow-starts 1"));
    let snap = dir.path().join("snap");
    let (out, seconds) = timed(&[
        "snapshot",
        "--server",
        &server,
        "--out",
        snap.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        seconds >= 11.0,
        "the start took {seconds:.1} s: the fake was not slow"
    );
    let facts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(snap.join("server.json")).unwrap()).unwrap();
    assert_eq!(facts["protocolEra"], era, "{facts}");
    assert_eq!(facts["requestedEra"], "auto", "{facts}");
    assert_eq!(starts_and_probes(&state).1, 1);
    eprintln!("snapshot of the slow {era} fake: {seconds:.1} s");
}

#[test]
fn a_legacy_server_that_answers_discover_after_11_s_is_snapshotted_as_legacy() {
    snapshot_era("legacy");
}

#[test]
fn a_modern_server_that_answers_discover_after_11_s_is_snapshotted_as_modern() {
    snapshot_era("modern");
}

/// `run` of the echo call task, 3 trials a side, over two slow fakes of `era` whose first start
/// is slow: every trial passes, and each side was probed once, at its first start.
fn run_era(era: &str) {
    let dir = temp_dir();
    let slow = format!("--delay {SLOW} --slow-starts 1");
    let (b, c) = (dir.path().join("b"), dir.path().join("c"));
    let out_dir = dir.path().join("run");
    let (out, seconds) = timed(&[
        "run",
        "--baseline",
        &fake(era, &b, &slow),
        "--candidate",
        &fake(era, &c, &slow),
        "--suite",
        suite(dir.path()).to_str().unwrap(),
        "--trials",
        "3",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let eps = episodes(&out_dir);
    assert_eq!(eps.len(), 6);
    assert!(eps.iter().all(|e| e.success && e.infra_error.is_none()));
    for state in [&b, &c] {
        let (starts, probes) = starts_and_probes(state);
        assert!(starts >= 3, "{starts} starts");
        assert_eq!(probes, 1, "probed more than once per command");
    }
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["baseline"]["info"]["era"], era, "{}", run["baseline"]);
    eprintln!("run of two slow {era} fakes: {seconds:.1} s");
}

#[test]
fn a_run_over_slow_legacy_servers_probes_each_once_and_passes() {
    run_era("legacy");
}

#[test]
fn a_run_over_slow_modern_servers_probes_each_once_and_passes() {
    run_era("modern");
}

/// `check --stages smoke,contract` over two slow fakes of `era`: both stages pass, the contract
/// records the era, and each side was probed once in the whole check.
fn check_era(era: &str) {
    let dir = temp_dir();
    let slow = format!("--delay {SLOW} --slow-starts 1");
    let (b, c) = (dir.path().join("b"), dir.path().join("c"));
    let out_dir = dir.path().join("check");
    let (out, seconds) = timed(&[
        "check",
        "--baseline",
        &fake(era, &b, &slow),
        "--candidate",
        &fake(era, &c, &slow),
        "--suite",
        suite(dir.path()).to_str().unwrap(),
        "--stages",
        "smoke,contract",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let record = std::fs::read_to_string(out_dir.join("check.json")).unwrap();
    let record: serde_json::Value = serde_json::from_str(&record).unwrap();
    for stage in record["stages"].as_array().unwrap() {
        assert_eq!(stage["status"], "passed", "{stage}");
    }
    let facts = out_dir.join("contract/candidate/server.json");
    let facts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&facts).unwrap()).unwrap();
    assert_eq!(facts["protocolEra"], era, "{facts}");
    for state in [&b, &c] {
        assert_eq!(starts_and_probes(state).1, 1, "probed more than once");
    }
    eprintln!("check of two slow {era} fakes: {seconds:.1} s");
}

#[test]
fn a_check_over_slow_legacy_servers_probes_each_once_and_passes() {
    check_era("legacy");
}

#[test]
fn a_check_over_slow_modern_servers_probes_each_once_and_passes() {
    check_era("modern");
}

/// A candidate that starts for the pre-flight (which serves its first trial) and then fails
/// every handshake: its later trials are infrastructure errors after their retries, never the
/// candidate's `server_error`; the run is incomplete (exit 3), and `--resume` runs those trials
/// again once the server starts.
#[test]
fn a_handshake_that_fails_during_trials_is_an_infrastructure_error() {
    let dir = temp_dir();
    let (b, c) = (dir.path().join("b"), dir.path().join("c"));
    let flag = dir.path().join("failing");
    std::fs::write(&flag, "").unwrap();
    let failing = format!("--healthy-starts 1 --fail-flag {}", flag.display());
    let out_dir = dir.path().join("run");
    let out = mcpeval(&[
        "run",
        "--baseline",
        &fake("legacy", &b, ""),
        "--candidate",
        &fake("legacy", &c, &failing),
        "--suite",
        suite(dir.path()).to_str().unwrap(),
        "--trials",
        "3",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let eps = episodes(&out_dir);
    assert_eq!(eps.len(), 6);
    assert!(eps.iter().all(|e| e.server_error.is_none()), "{eps:?}");
    let candidate = |e: &&mcpeval::episode::Episode| e.side.as_str() == "candidate";
    let failed: Vec<_> = eps
        .iter()
        .filter(candidate)
        .filter(|e| !e.success)
        .collect();
    assert_eq!(failed.len(), 2, "{eps:?}");
    for e in failed {
        let error = e.infra_error.as_deref().unwrap_or_default();
        assert!(error.contains("failed to start server"), "{error}");
        assert!(
            error.contains("fails on purpose"),
            "no stderr tail: {error}"
        );
        assert!(e.attempts.len() > 1, "not retried: {:?}", e.attempts);
    }
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["status"], "incomplete");

    std::fs::remove_file(&flag).unwrap();
    let out = mcpeval(&["run", "--resume", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let eps = episodes(&out_dir);
    assert_eq!(eps.len(), 6, "{eps:?}");
    assert!(
        eps.iter().all(|e| e.success && e.infra_error.is_none()),
        "{eps:?}"
    );
}
