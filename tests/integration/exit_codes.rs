//! Each kind of error maps to its documented exit code through the binary (usage 2,
//! infrastructure 3, interrupted 130), and a run directory written by a newer mcpeval (a newer
//! major `format_version`) is refused with a message naming the file and the version. Every
//! code of docs/exit-codes.md, and each case of its start-failure rule, is pinned by a test
//! named in `PINNED` and `START_RULE`; `check`'s bad input and start failures are pinned here.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

fn run_json(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap()
}

#[test]
fn usage_errors_exit_2_naming_what_is_wrong() {
    let dir = temp_dir();
    let missing = dir.path().join("missing.toml");
    let out = mcpeval(&["run", "--config", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("missing.toml"), "{}", text(&out));

    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "id: t\nkind: tool\nprompt: [unclosed\n").unwrap();
    let out = mcpeval(&["run", "--demo-servers", "--suite", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("bad.yaml"), "{}", text(&out));

    let out = mcpeval(&["run", "--demo-servers", "--host", "no-such-provider:model"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no-such-provider"), "{}", text(&out));
    // Every host kind is named.
    assert!(text(&out).contains("gemini-cli[:MODEL]"), "{}", text(&out));
}

#[test]
fn plan_refuses_values_out_of_range_naming_its_flags() {
    for (flags, says) in [
        (["--power", "1"], "--power must lie in (0, 1)"),
        (["--alpha", "0"], "--alpha must lie in (0, 1)"),
        (
            ["--baseline-rate", "1.2"],
            "--baseline-rate must lie in [0, 1]",
        ),
        (
            ["--baseline-rate", "0.1"],
            "--drop 0.2 is larger than --baseline-rate 0.1",
        ),
    ] {
        let mut args = vec!["plan", "--drop", "0.2"];
        if flags[0] != "--baseline-rate" {
            args.extend(["--baseline-rate", "0.9"]);
        }
        args.extend(flags);
        let out = mcpeval(&args);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains(says), "{says}: {}", text(&out));
        assert!(!text(&out).contains("p0"), "{}", text(&out));
    }
}

#[test]
fn a_server_that_will_not_start_exits_3() {
    let dir = temp_dir();
    let out = run_pair(
        "/nonexistent/mcp-server",
        "demo:1.5.0",
        &dir.path().join("run"),
        &[],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("baseline server"), "{}", text(&out));

    // An HTTP server with nothing listening: said in the system's words, not the transport's
    // type names.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let out = run_pair(&url, "demo:1.5.0", &dir.path().join("http"), &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains(&format!("cannot connect to {url}")), "{said}");
    assert!(said.to_lowercase().contains("connection refused"), "{said}");
    assert!(!said.contains("rmcp::"), "{said}");
}

/// Sends `child` the signal `name` (`INT`, `TERM`).
fn signal(child: &std::process::Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn an_interrupted_run_exits_130_and_a_second_ctrl_c_drops_the_trials_in_flight() {
    let server = spawn_listening(
        &["sim-server", "--addr", "127.0.0.1:0", "--latency-ms", "400"],
        false,
    );
    let dir = temp_dir();
    let out = dir.path().join("run");
    let mut child = slow_demo(&server, &out, "6");
    let episodes = out.join("episodes.jsonl");
    assert!(wait_for(|| lines(&episodes) >= 2, Duration::from_secs(60)));
    signal(&child, "INT");
    // The second Ctrl-C comes while the trials in flight (each a few 400 ms turns) still run.
    std::thread::sleep(Duration::from_millis(100));
    let second = Instant::now();
    signal(&child, "INT");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(
        second.elapsed() < Duration::from_secs(30),
        "the run did not stop after the second Ctrl-C"
    );
    let run = run_json(&out);
    assert_eq!(run["status"], "interrupted");
    assert_eq!(run["format_version"], mcpeval::rundir::FORMAT_VERSION);
    // The files are still written from the episodes that finished.
    assert!(out.join("episodes.parquet").is_file());
    assert!(out.join("summary.md").is_file());
    let total = run["tasks"].as_array().unwrap().len() * 6 * 2;
    assert!(
        lines(&episodes) < total,
        "the run finished before it was stopped"
    );
}

#[test]
fn a_run_directory_of_a_newer_format_is_refused_naming_the_file_and_the_version() {
    let dir = temp_dir();
    let out = dir.path().join("run");
    let done = run_pair("demo:1.4.0", "demo:1.5.0", &out, &["--trials", "1"]);
    assert_verdict(&done);
    assert_eq!(run_json(&out)["format_version"], "1.0");
    let compare = |dir: &Path| mcpeval(&["compare", dir.to_str().unwrap()]);
    let same = compare(&out);
    assert_eq!(same.status.code(), done.status.code(), "{}", text(&same));

    // A newer minor version is read; a newer major is refused.
    let mut run = run_json(&out);
    run["format_version"] = "1.4".into();
    std::fs::write(out.join("run.json"), run.to_string()).unwrap();
    assert_eq!(compare(&out).status.code(), done.status.code());
    run["format_version"] = "2.0".into();
    std::fs::write(out.join("run.json"), run.to_string()).unwrap();
    let refused = compare(&out);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("run.json"), "{stderr}");
    assert!(stderr.contains("format_version 2.0"), "{stderr}");

    // The same for a line of episodes.jsonl (here the last, which a killed run may leave
    // partial: a newer one is still refused, not skipped).
    run["format_version"] = "1.0".into();
    std::fs::write(out.join("run.json"), run.to_string()).unwrap();
    std::fs::remove_file(out.join("episodes.parquet")).unwrap();
    let path = out.join("episodes.jsonl");
    let text_of = std::fs::read_to_string(&path).unwrap();
    let last = text_of.lines().last().unwrap();
    let mut line: serde_json::Value = serde_json::from_str(last).unwrap();
    line["format_version"] = "3.0".into();
    line["a_field_of_format_3"] = true.into();
    let mut newer = text_of.clone();
    newer.push_str(&line.to_string());
    newer.push('\n');
    std::fs::write(&path, newer).unwrap();
    let refused = compare(&out);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("episodes.jsonl"), "{stderr}");
    assert!(stderr.contains("format_version 3.0"), "{stderr}");
}

#[test]
fn bare_mcpeval_prints_usage_and_runs_nothing() {
    let dir = temp_dir();
    let out = Command::new(bin())
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Usage: mcpeval"));
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "bare mcpeval wrote files"
    );
}

#[test]
fn a_suite_or_hosts_without_servers_is_refused_unless_the_demo_servers_are_asked_for() {
    let dir = temp_dir();
    for flags in [["--suite", "tasks/demo"], ["--host", "sim"]] {
        let out = mcpeval(&[
            "run",
            flags[0],
            flags[1],
            "--out",
            dir.path().join("x").to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains("--demo-servers"), "{}", text(&out));
        assert!(!dir.path().join("x").exists());
    }
    let out = mcpeval(&[
        "run",
        "--demo-servers",
        "--suite",
        "tasks/demo/no_tool.yaml",
        "--trials",
        "1",
        "--out",
        dir.path().join("demo").to_str().unwrap(),
    ]);
    assert_verdict(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--release 1.4.0) → candidate"), "{stderr}");
    assert!(stderr.contains("trial(s) per side on host sim"), "{stderr}");
}

#[test]
fn sigterm_stops_a_run_as_a_first_ctrl_c_and_resume_finishes_it() {
    let server = spawn_listening(
        &["sim-server", "--addr", "127.0.0.1:0", "--latency-ms", "30"],
        false,
    );
    let dir = temp_dir();
    let out = dir.path().join("run");
    let mut child = slow_demo(&server, &out, "4");
    let episodes = out.join("episodes.jsonl");
    assert!(wait_for(|| lines(&episodes) >= 6, Duration::from_secs(60)));
    signal(&child, "TERM");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let run = run_json(&out);
    assert_eq!(run["status"], "interrupted");
    for file in [
        "episodes.parquet",
        "comparison.csv",
        "summary.md",
        "junit.xml",
        "report.html",
        "tool_shift.csv",
    ] {
        assert!(out.join(file).is_file(), "{file} missing");
    }
    let total = run["tasks"].as_array().unwrap().len() * 4 * 2;
    assert!(lines(&episodes) < total, "the run finished before SIGTERM");
    // The summary says so first, with the trials that ran and the exit code it ends with.
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.starts_with("# mcpeval: interrupted\n"), "{summary}");
    assert!(summary.contains("It exits 130"), "{summary}");
    let planned = format!("of the {} per side planned", total / 2);
    assert!(summary.contains(&planned), "{summary}");
    assert!(!summary.contains("Exit code 1."), "{summary}");
    assert_verdict(&resume_run(&server, &out));
    assert_eq!(run_json(&out)["status"], "completed");
    assert_eq!(lines(&episodes), total);
}

/// `mcpeval run 2>&1 | head -1`: both streams into a pipe whose reader has gone. The run goes
/// on to its end and writes every file, then exits as SIGPIPE would have; nothing panics.
#[test]
fn a_run_into_a_closed_pipe_finishes_its_files_without_a_panic() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just created and are owned here alone.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(reader);
    let dir = temp_dir();
    let out = dir.path().join("run");
    let status = Command::new(bin())
        .args(["run", "--trials", "2", "--out", out.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::from(writer.try_clone().unwrap()))
        .stderr(std::process::Stdio::from(writer))
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(141));
    assert_eq!(run_json(&out)["status"], "completed");
    for file in [
        "episodes.parquet",
        "comparison.csv",
        "summary.md",
        "junit.xml",
        "report.html",
        "tool_shift.csv",
    ] {
        assert!(out.join(file).is_file(), "{file} missing");
    }
}

/// Each code in the table of docs/exit-codes.md, and the test that pins it (module::function).
const PINNED: [(&str, &str); 6] = [
    (
        "0",
        "call_tasks::a_server_against_itself_changes_nothing_and_trials_repeat_a_call",
    ),
    (
        "1",
        "call_tasks::call_tasks_on_two_releases_give_exact_verdicts_with_their_reasons",
    ),
    ("2", "exit_codes::usage_errors_exit_2_naming_what_is_wrong"),
    ("3", "exit_codes::a_server_that_will_not_start_exits_3"),
    (
        "130",
        "exit_codes::an_interrupted_run_exits_130_and_a_second_ctrl_c_drops_the_trials_in_flight",
    ),
    (
        "141",
        "exit_codes::a_run_into_a_closed_pipe_finishes_its_files_without_a_panic",
    ),
];

/// Each case of "When a server cannot start" in docs/exit-codes.md, and the test that pins it.
const START_RULE: [(&str, &str); 6] = [
    (
        "run: baseline → 3",
        "exit_codes::a_server_that_will_not_start_exits_3",
    ),
    (
        "run: candidate → 3, named",
        "servers::a_server_that_cannot_start_stops_the_run_with_exit_3_and_its_stderr",
    ),
    (
        "check: baseline → 3, candidate → 1",
        "exit_codes::check_exits_3_for_a_baseline_that_cannot_start_and_1_for_a_candidate",
    ),
    (
        "check: bad input → 2 before any stage",
        "exit_codes::check_refuses_bad_task_files_and_config_with_exit_2_before_any_stage",
    ),
    (
        "a start that fails during trials → infra_error",
        "slow_start::a_handshake_that_fails_during_trials_is_an_infrastructure_error",
    ),
    (
        "a slow start → no failure",
        "slow_start::a_run_over_slow_legacy_servers_probes_each_once_and_passes",
    ),
];

#[test]
fn every_documented_exit_code_is_pinned_by_a_test_that_exists() {
    let doc = std::fs::read_to_string(repo_path("docs/exit-codes.md")).unwrap();
    let documented: Vec<&str> = (doc.lines())
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|l| l.strip_prefix("| ")?.split(" |").next())
        .filter(|code| code.chars().all(|c| c.is_ascii_digit()))
        .collect();
    let pinned: Vec<&str> = PINNED.iter().map(|(code, _)| *code).collect();
    assert_eq!(
        documented, pinned,
        "a documented code without a test, or the reverse"
    );
    assert!(doc.contains("## When a server cannot start"));
    for (_, test) in PINNED.iter().chain(&START_RULE) {
        let (module, function) = test.split_once("::").unwrap();
        let file = repo_path(&format!("tests/integration/{module}.rs"));
        let source = std::fs::read_to_string(&file).unwrap();
        assert!(
            source.contains(&format!("#[test]\nfn {function}(")),
            "{test} is not a test"
        );
    }
}

/// `mcpeval check ARGS` from the repository root.
fn check(args: &[&str]) -> std::process::Output {
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    mcpeval(&all)
}

#[test]
fn check_refuses_bad_task_files_and_config_with_exit_2_before_any_stage() {
    let dir = temp_dir();
    let suite = dir.path().join("suite");
    std::fs::create_dir(&suite).unwrap();
    std::fs::write(suite.join("a.yaml"), "- id: a\n  prompt: [unclosed\n").unwrap();
    std::fs::write(
        suite.join("b.yaml"),
        "- id: b\n  kind: call\n  call: {tool: x}\n  expect: {no_such_check: 1}\n",
    )
    .unwrap();
    let out_dir = dir.path().join("check");
    let out = check(&[
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        "demo:1.5.0",
        "--suite",
        suite.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    for file in ["a.yaml:2:", "b.yaml:4:"] {
        assert!(said.contains(file), "{file} not named: {said}");
    }
    for stage in ["smoke", "contract", "evaluation"] {
        assert!(!said.contains(stage), "a stage ran: {said}");
    }
    assert!(!out_dir.exists(), "the check wrote its directory");

    // A config that does not parse is refused the same way.
    let config = dir.path().join("bad.toml");
    std::fs::write(&config, "baseline = \"demo:1.4.0\"\ntrials = \"many\"\n").unwrap();
    let out = check(&["--config", config.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("bad.toml"), "{}", text(&out));
    assert!(!text(&out).contains("smoke"), "{}", text(&out));
}

#[test]
fn check_exits_3_for_a_baseline_that_cannot_start_and_1_for_a_candidate() {
    let dir = temp_dir();
    let smoke = |baseline: &str, candidate: &str, out: &Path| {
        check(&[
            "--baseline",
            baseline,
            "--candidate",
            candidate,
            "--stages",
            "smoke",
            "--out",
            out.to_str().unwrap(),
        ])
    };
    let out = smoke(
        "/nonexistent/mcp-server",
        "demo:1.5.0",
        &dir.path().join("b"),
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("the baseline server did not answer"),
        "{}",
        text(&out)
    );
    let out = smoke(
        "demo:1.4.0",
        "/nonexistent/mcp-server",
        &dir.path().join("c"),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("the candidate did not start or list"),
        "{}",
        text(&out)
    );
}
