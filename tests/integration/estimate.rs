//! The wall-time estimate a run prints after its header, once the pre-flight has timed both
//! servers' starts, the ETA on its progress lines, and the estimate and the trials' real time in
//! `run.json`: through the binary, on the demo. No timing is asserted, only the lines' shape and
//! counts (the machine's speed is not the test's).

use crate::common;

use common::*;

/// The estimate line of a run's stderr: the one after `run directory: …`.
fn estimate_line(stderr: &str) -> &str {
    let lines: Vec<&str> = stderr.lines().collect();
    let at = (lines.iter())
        .position(|l| l.starts_with("run directory: "))
        .unwrap_or_else(|| panic!("no run directory line:\n{stderr}"));
    lines.get(at + 1).copied().unwrap_or_default()
}

/// `estimate: [up to ]~N s|min ([up to ]T trials, S server starts of X.XX s, concurrency C[ on K
/// cores])`: (trials, server starts, concurrency).
fn parse(line: &str, up_to: bool) -> (usize, usize, usize) {
    let ceiling = if up_to { "up to " } else { "" };
    let shape = format!(
        r"^estimate: {ceiling}~\d+ (s|min|h)( \d+ min)? \({ceiling}(\d+) trials, (\d+) server starts of \d+\.\d\d s, concurrency (\d+)( on \d+ cores)?\)$"
    );
    let caps = regex::Regex::new(&shape)
        .unwrap()
        .captures(line)
        .unwrap_or_else(|| panic!("not an estimate line: {line:?}"));
    let n = |i: usize| caps[i].parse::<usize>().unwrap();
    (n(3), n(4), n(5))
}

fn run_json(dir: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("run.json")).expect("run.json");
    serde_json::from_str(&text).expect("run.json is JSON")
}

#[test]
fn a_run_prints_its_estimate_after_the_header_and_records_it_with_the_real_time() {
    let dir = temp_dir();
    let out_dir = dir.path().join("run");
    let out = mcpeval(&[
        "run",
        "--out",
        out_dir.to_str().unwrap(),
        "--trials",
        "4",
        "--concurrency",
        "3",
    ]);
    assert_verdict(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let (trials, starts, concurrency) = parse(estimate_line(&stderr), false);
    let episodes = episodes(&out_dir).len();
    assert_eq!(trials, episodes, "{stderr}");
    // A server per trial (`isolation = "trial"`), but the pre-flight's two serve the first.
    assert_eq!(starts, episodes - 2, "{stderr}");
    assert_eq!(concurrency, 3);
    // The progress lines (stderr is no terminal here: a line per tenth) give the time left
    // until the last.
    let progress: Vec<&str> = (stderr.lines())
        .filter(|l| l.starts_with("progress: "))
        .collect();
    assert!(progress.len() >= 9, "{stderr}");
    let (last, before) = progress.split_last().unwrap();
    let eta = regex::Regex::new(r"  eta ~\d+ (s|min)").unwrap();
    assert!(before.iter().all(|l| eta.is_match(l)), "{stderr}");
    assert!(!last.contains("eta"), "{last}");

    let estimate = &run_json(&out_dir)["estimate"];
    let seconds = |key: &str| estimate[key].as_f64().unwrap_or(-1.0);
    assert!(seconds("estimate_s") > 0.0, "{estimate}");
    assert!(seconds("actual_s") > 0.0, "{estimate}");
    assert!(seconds("server_start_s") > 0.0, "{estimate}");
    assert_eq!(estimate["trials"], episodes);
    assert_eq!(estimate["server_starts"], starts);
    assert_eq!(estimate["up_to"], false);
    assert_eq!(estimate["model_time_small"], true);
}

#[test]
fn shared_servers_are_estimated_with_their_starts_and_an_adaptive_run_says_up_to() {
    let dir = temp_dir();
    let out = run_pair(
        "demo:1.4.0",
        "demo:1.5.0",
        dir.path(),
        &["--adaptive", "--max-trials", "10", "--isolation", "task"],
    );
    assert_verdict(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let (trials, starts, _) = parse(estimate_line(&stderr), true);
    let tasks = run_json(dir.path())["tasks"].as_array().unwrap().len();
    assert_eq!(trials, tasks * 10 * 2, "{stderr}");
    // One server per task and side, the pre-flight's two among them.
    assert_eq!(starts, tasks * 2 - 2, "{stderr}");
    assert_eq!(run_json(dir.path())["estimate"]["up_to"], true);
}
