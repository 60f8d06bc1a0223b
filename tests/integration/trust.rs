//! Verdicts a user can trust (issue 36): why a run measured nothing is said before its verdict, a
//! side whose server breaks is blamed, and the simulated model judges no server by default.

use crate::common::*;

/// Two call tasks that pass on a healthy demo server.
const CALLS: &str = "\
- id: get-issue-5
  kind: call
  call: {tool: get_issue, args: {id: 5}}
  expect: {is_error: false}
- id: list-projects
  kind: call
  call: {tool: list_projects}
  expect: {is_error: false}
";

/// A config in `dir` whose baseline is the demo 1.4.0 started on the wrong directory (every call
/// denied) and whose candidate is the healthy demo 1.4.0, with `suite` and `more` keys.
fn wrong_dir_config(dir: &std::path::Path, suite: &str, more: &str) -> std::path::PathBuf {
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "baseline = \"wrong-dir\"\ncandidate = \"demo:1.4.0\"\nsuites = [{suite:?}]\n{more}\
             [servers.wrong-dir]\ncommand = \"{} demo-server --release 1.4.0\"\n\
             env = {{ MCPEVAL_DEMO_DENY_ALL = \"1\" }}\n",
            bin()
        ),
    )
    .unwrap();
    config
}

/// A baseline started on the wrong directory (every call answers "Access denied") used to read
/// as an improvement on every task with no word of why; now the run says first that the
/// baseline failed every trial, with its error, on the console, in summary.md and junit.xml.
#[test]
fn a_baseline_that_fails_every_trial_is_named_before_the_verdict() {
    let dir = temp_dir();
    std::fs::write(dir.path().join("calls.yaml"), CALLS).unwrap();
    let config = wrong_dir_config(dir.path(), "calls.yaml", "");
    let out_dir = dir.path().join("run");
    let out = mcpeval(&[
        "run",
        "--config",
        config.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    // Call tasks need no model: no host is asked for.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let note = "note: the baseline failed every trial of 2 of 2 tasks: check the servers' setup";
    let (note_at, table_at) = (stdout.find(note), stdout.find("verdict (gated metrics)"));
    assert!(note_at.is_some(), "{stdout}");
    assert!(
        note_at < table_at,
        "the note comes before the verdict:\n{stdout}"
    );
    assert!(stdout.contains("Access denied"), "{stdout}");
    // Each such improvement is marked in the table and in summary.md.
    assert_eq!(
        stdout
            .matches("improvement (success): baseline failed every trial")
            .count(),
        2,
        "{stdout}"
    );
    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    let first_block = summary.split("\n## ").next().unwrap();
    assert!(
        first_block.contains("**The baseline failed every trial of 2 of 2 tasks"),
        "{summary}"
    );
    assert!(first_block.contains("get-issue-5"), "{summary}");
    assert!(first_block.contains("Access denied"), "{summary}");
    assert!(
        summary.contains(
            "improvement (success): the baseline failed every trial: check the servers' setup"
        ),
        "{summary}"
    );
    let junit = std::fs::read_to_string(out_dir.join("junit.xml")).unwrap();
    assert!(junit.contains("name=\"diagnosis\""), "{junit}");
    assert!(
        junit.contains("note: the baseline failed every trial: check the servers&apos; setup")
            || junit.contains("note: the baseline failed every trial: check the servers' setup"),
        "{junit}"
    );
}

/// The simulated model used to be every run's default host, so a user's own server was judged
/// by it unasked. Outside the demo a run of model tasks now needs a host (exit 2, naming
/// `--host`); the demo pair still runs on `sim`, and its summary says the model was simulated.
#[test]
fn the_simulated_model_judges_no_users_server_by_default() {
    let dir = temp_dir();
    let candidate = format!("{} demo-server --release 1.5.0", bin());
    let out = mcpeval(&[
        "run",
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        &candidate,
        "--suite",
        repo_path("tasks/demo").to_str().unwrap(),
        "--out",
        dir.path().join("none").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no model host: pass --host"), "{stderr}");
    assert!(!dir.path().join("none").join("episodes.jsonl").exists());
    // Named explicitly, `sim` runs the same pair.
    let named = dir.path().join("named");
    let out = mcpeval(&[
        "run",
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        &candidate,
        "--suite",
        repo_path("tasks/demo").to_str().unwrap(),
        "--host",
        "sim",
        "--trials",
        "1",
        "--out",
        named.to_str().unwrap(),
    ]);
    assert_verdict(&out);
    // Both sides `demo:VERSION`: the demo, where `sim` stays the default, labelled as such.
    let demo = dir.path().join("demo");
    let out = mcpeval(&[
        "run",
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        "demo:1.5.0",
        "--suite",
        repo_path("tasks/demo").to_str().unwrap(),
        "--trials",
        "1",
        "--out",
        demo.to_str().unwrap(),
    ]);
    assert_verdict(&out);
    let summary = std::fs::read_to_string(demo.join("summary.md")).unwrap();
    let title = summary.lines().next().unwrap();
    assert!(title.ends_with("(simulated model)"), "{title}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("REGRESSION") && l.ends_with("(simulated model)")),
        "{stdout}"
    );
}

/// `check`'s evaluation stage line says why its verdict may mean little, as the run's console
/// does: here a baseline started wrong, whose every tool call is denied.
#[test]
fn the_evaluation_stage_line_says_the_baseline_failed_every_trial() {
    let dir = temp_dir();
    let suite = repo_path("tasks/demo/lookup.yaml");
    let config = wrong_dir_config(dir.path(), suite.to_str().unwrap(), "hosts = [\"sim\"]\n");
    let out_dir = dir.path().join("check");
    let out = mcpeval(&[
        "check",
        "--config",
        config.to_str().unwrap(),
        "--stages",
        "evaluation",
        "--all",
        "--trials",
        "2",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("evaluation: "))
        .unwrap_or_else(|| panic!("no evaluation line: {}", text(&out)));
    assert!(
        line.contains("(simulated model")
            && line.contains("note: the baseline failed every trial of"),
        "{line}"
    );
    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(
        summary.contains("- note: the baseline failed every trial of"),
        "{summary}"
    );
}
