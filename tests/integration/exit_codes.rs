//! Each kind of error maps to its documented exit code through the binary (usage 2,
//! infrastructure 3, interrupted 130), and a run directory written by a newer mcpeval (a newer
//! major `format_version`) is refused with a message naming the file and the version.

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
    let out = mcpeval(&["run", "--suite", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("bad.yaml"), "{}", text(&out));

    let out = mcpeval(&["run", "--host", "no-such-provider:model"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
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
}

fn interrupt(child: &std::process::Child) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
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
    interrupt(&child);
    // The second Ctrl-C comes while the trials in flight (each a few 400 ms turns) still run.
    std::thread::sleep(Duration::from_millis(100));
    let second = Instant::now();
    interrupt(&child);
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
