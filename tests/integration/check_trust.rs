//! `mcpeval check` whose every line matches its exit (issue 36): a stage named in --stages and
//! skipped exits 3 unless --allow-skipped; an interrupted check's last line says exit 130 and
//! `check --resume DIR` finishes it; the runs a check starts print no verdict of their own; the
//! smoke stage fails on a call task the baseline fails (unless `expected_to_fail: true`); a
//! verdict of the simulated model says so.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common;

use common::*;

/// `mcpeval check ARGS` from the repository root, with `env` set.
fn check_command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(bin());
    command
        .arg("check")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("MCPEVAL_CONFORMANCE")
        .env_remove("MCPEVAL_TRIALS");
    for (k, v) in env {
        command.env(k, v);
    }
    command
}

fn check(args: &[&str], env: &[(&str, &str)]) -> Output {
    check_command(args, env).output().expect("mcpeval runs")
}

fn record(out: &Path) -> Value {
    let text = std::fs::read_to_string(out.join("check.json")).expect("check.json");
    serde_json::from_str(&text).unwrap()
}

/// check.json's stage `name`: (status, reason, simulated).
fn stage(out: &Path, name: &str) -> (String, String, bool) {
    let record = record(out);
    let found = record["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no stage {name} in {record}"))
        .clone();
    (
        found["status"].as_str().unwrap().to_owned(),
        found["reason"].as_str().unwrap().to_owned(),
        found["simulated"].as_bool().unwrap_or(false),
    )
}

fn last_line(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout.lines().last().unwrap_or("").to_owned()
}

#[test]
fn a_stage_named_in_stages_and_skipped_could_not_be_done_unless_allowed() {
    let dir = temp_dir();
    let out = dir.path().join("named");
    let out_arg = out.to_str().unwrap();
    // No Node on PATH: the conformance suite cannot run. (Issue 39 changed the skip this test
    // used: two stdio servers with no [check] http_command are now bridged to HTTP, so the
    // missing Node is what skips the stage.)
    let pair = ["--baseline", "demo:1.4.0", "--candidate", "demo:1.5.0"];
    let no_node = dir.path().join("no-node");
    std::fs::create_dir_all(&no_node).unwrap();
    let env = [("PATH", no_node.to_str().unwrap())];
    let mut args = pair.to_vec();
    args.extend(["--stages", "conformance", "--out", out_arg]);
    let output = check(&args, &env);
    assert_eq!(output.status.code(), Some(3), "{}", text(&output));
    let (status, reason, _) = stage(&out, "conformance");
    assert_eq!(status, "error");
    assert!(
        reason.starts_with("named in --stages but skipped")
            && reason.contains("Node is not installed"),
        "{reason}"
    );
    assert!(
        last_line(&output).starts_with("check error (exit 3)"),
        "{}",
        text(&output)
    );

    let out = dir.path().join("allowed");
    let mut args = pair.to_vec();
    let out_arg = out.to_str().unwrap();
    args.extend([
        "--stages",
        "conformance",
        "--allow-skipped",
        "--out",
        out_arg,
    ]);
    let output = check(&args, &env);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(stage(&out, "conformance").0, "skipped");

    // Without --stages a skipped stage stays a skip.
    let out = dir.path().join("all");
    let mut args = pair.to_vec();
    args.extend(["--out", out.to_str().unwrap()]);
    let output = check(&args, &env);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(stage(&out, "conformance").0, "skipped");
}

/// Call tasks against a baseline started wrong (the demo 1.4.0 with `--deny-all`: every tool
/// call is denied) and the demo 2.0.0: the baseline fails the first every time; the resource
/// read passes on both.
const CALLS: &str = r#"
- id: list-projects-answers
  kind: call
  call: {tool: list_projects}
  expect: {is_error: false}

- id: projects-resource-lists-apollo
  kind: call
  call: {resource: "tracker://projects"}
  expect: {result_contains: ["apollo"]}
"#;

#[test]
fn the_smoke_stage_fails_on_a_call_task_the_baseline_fails_unless_expected() {
    let dir = temp_dir();
    let suite = dir.path().join("calls.yaml");
    std::fs::write(&suite, CALLS).unwrap();
    let out = dir.path().join("broken");
    let args = |out: &Path| {
        [
            "--baseline",
            &format!("{} demo-server --release 1.4.0 --deny-all", bin()),
            "--candidate",
            "demo:2.0.0",
            "--suite",
            suite.to_str().unwrap(),
            "--stages",
            "smoke",
            "--out",
            out.to_str().unwrap(),
        ]
        .map(str::to_owned)
    };
    let output = check_command(&args(&out).each_ref().map(|s| s.as_str()), &[])
        .output()
        .unwrap();
    // Before issue 36: `0/1 → 1/1` improvement, the stage passed, exit 0.
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let (status, reason, simulated) = stage(&out, "smoke");
    assert_eq!(status, "failed");
    assert!(!simulated, "call tasks run no model");
    assert!(
        reason.contains("the baseline failed 1 of 2 call task(s)")
            && reason.contains("list-projects-answers")
            && reason.contains("first failure"),
        "{reason}"
    );
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(
        junit.contains("baseline passes list-projects-answers"),
        "{junit}"
    );
    // Marked as known to fail on the baseline: the stage passes and says why.
    std::fs::write(
        &suite,
        CALLS.replace(
            "  expect: {is_error: false}",
            "  expected_to_fail: true\n  expect: {is_error: false}",
        ),
    )
    .unwrap();
    let out = dir.path().join("expected");
    let output = check_command(&args(&out).each_ref().map(|s| s.as_str()), &[])
        .output()
        .unwrap();
    // 2.0.0's schemas have a new portability finding, which fails the stage on its own: the
    // baseline's failure no longer does.
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let (_, reason, _) = stage(&out, "smoke");
    assert!(
        reason.contains("1 new portability finding(s); 2 call task(s), 0 regression(s)")
            && !reason.contains("the baseline failed"),
        "{reason}"
    );
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(!junit.contains("baseline passes"), "{junit}");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("as `expected_to_fail: true` says"),
        "{summary}"
    );
}

#[test]
fn the_demo_check_says_its_verdict_is_the_simulated_models_and_nested_runs_print_none() {
    let dir = temp_dir();
    let out = dir.path().join("demo");
    let output = check(
        &[
            "--baseline",
            "demo:1.4.0",
            "--candidate",
            "demo:1.5.0",
            "--suite",
            "tasks/demo",
            "--stages",
            "smoke,evaluation",
            "--trials",
            "4",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        text(&output)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    // The nested runs' verdicts are not check's: only the stage lines and the last line.
    assert!(!stdout.contains("on the gated metrics"), "{stdout}");
    assert!(!stdout.contains("REGRESSION"), "{stdout}");
    assert_eq!(stdout.trim().lines().count(), 3, "{stdout}");
    let (_, _, simulated) = stage(&out, "evaluation");
    assert!(simulated);
    assert!(
        stdout.contains("evaluation: failed (simulated model, ")
            || stdout.contains("evaluation: passed (simulated model, "),
        "{stdout}"
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("simulated model (`sim`)"), "{summary}");
    let code = output.status.code().unwrap();
    assert!(
        last_line(&output).contains(&format!("(exit {code})")),
        "{stdout}"
    );
}

/// `check` of the demo pair whose evaluation runs on a sim-server with latency, until its
/// evaluation has recorded an episode; then SIGTERM.
#[test]
fn an_interrupted_check_says_exit_130_and_resume_finishes_it() {
    let server = spawn_listening(
        &["sim-server", "--addr", "127.0.0.1:0", "--latency-ms", "100"],
        false,
    );
    let base_url = format!("http://{}/v1", server.addr);
    let env = [("OPENAI_BASE_URL", base_url.as_str())];
    let dir = temp_dir();
    let out = dir.path().join("check");
    let mut child = check_command(
        &[
            "--baseline",
            "demo:1.4.0",
            "--candidate",
            "demo:1.5.0",
            "--suite",
            "tasks/demo",
            "--host",
            "openai:sim",
            "--trials",
            "6",
            "--stages",
            "smoke,contract,evaluation",
            "--out",
            out.to_str().unwrap(),
        ],
        &env,
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || BufReader::new(stderr).lines().for_each(drop));
    let episodes = out.join("evaluation/episodes.jsonl");
    assert!(
        wait_for(
            || std::fs::metadata(&episodes).is_ok_and(|m| m.len() > 0),
            Duration::from_secs(120)
        ),
        "the evaluation recorded an episode"
    );
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", text(&output));
    // Before issue 36 the last line said `check error (exit 3)` while the process exited 130.
    let last = last_line(&output);
    assert!(
        last.starts_with("check error, interrupted (exit 130)"),
        "{}",
        text(&output)
    );
    assert_eq!(record(&out)["interrupted"], true);
    let (status, reason, _) = stage(&out, "evaluation");
    assert_eq!(status, "error");
    assert!(reason.starts_with("interrupted"), "{reason}");
    let smoke = stage(&out, "smoke");

    let output = check(&["--resume", out.to_str().unwrap()], &env);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        text(&output)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("check: smoke: kept from check.json"),
        "{stderr}"
    );
    assert!(
        stderr.contains("check: contract: kept from check.json"),
        "{stderr}"
    );
    assert_eq!(stage(&out, "smoke"), smoke, "kept as it was");
    let (status, _, simulated) = stage(&out, "evaluation");
    assert!(status == "passed" || status == "failed", "{status}");
    assert!(
        !simulated,
        "openai:sim is a host over HTTP, not the embedded model"
    );
    assert!(record(&out).get("interrupted").is_none());
    let run: Value =
        serde_json::from_slice(&std::fs::read(out.join("evaluation/run.json")).unwrap()).unwrap();
    assert_eq!(run["status"], "completed");
    let code = output.status.code().unwrap();
    assert!(
        last_line(&output).contains(&format!("(exit {code})")),
        "{}",
        text(&output)
    );
    // A directory holding no check cannot be resumed.
    let output = check(&["--resume", dir.path().to_str().unwrap()], &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
}

/// The action's `mcpeval check` step, run by bash with a stand-in `mcpeval` that writes its
/// arguments: the `host` input (a repository variable in the example workflows) becomes one
/// `--host` each.
#[test]
fn the_actions_host_input_is_passed_as_host_flags() {
    let action: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(repo_path("action.yml")).unwrap()).unwrap();
    assert!(action["inputs"]["host"]["description"]
        .as_str()
        .unwrap()
        .contains("vars.MCPEVAL_HOST"));
    let steps = action["runs"]["steps"].as_array().unwrap();
    let step = steps.iter().find(|s| s["id"] == "check").unwrap();
    let dir = temp_dir();
    let fake = dir.path().join("mcpeval");
    let log = dir.path().join("args.txt");
    write_script(
        &fake,
        &format!(
            "#!/usr/bin/env bash\nprintf '%s\\n' \"$@\" >\"{}\"\n",
            log.display()
        ),
    );
    let output_file = dir.path().join("github_output");
    std::fs::write(&output_file, "").unwrap();
    let output = Command::new("bash")
        .args(["-e", "-c", step["run"].as_str().unwrap()])
        .current_dir(dir.path())
        .env("MCPEVAL", &fake)
        .env("GITHUB_OUTPUT", &output_file)
        .env("IN_CANDIDATE", "node dist/index.js")
        .env(
            "IN_HOST",
            "openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5",
        )
        .env("IN_STAGES", "all")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    let args = std::fs::read_to_string(&log).unwrap();
    let args: Vec<&str> = args.lines().collect();
    let hosts: Vec<&str> = args
        .windows(2)
        .filter(|w| w[0] == "--host")
        .map(|w| w[1])
        .collect();
    assert_eq!(
        hosts,
        ["openai:gpt-4.1-mini", "anthropic:claude-sonnet-4-5"],
        "{args:?}"
    );
    assert!(std::fs::read_to_string(&output_file)
        .unwrap()
        .contains("exit-code=0"));
}

/// Outside the demo (servers that are not `demo:VERSION`) and without a host, the evaluation is
/// skipped with its reason instead of judging the server on the simulated model.
#[test]
fn without_a_host_the_evaluation_is_skipped_outside_the_demo() {
    let dir = temp_dir();
    let out = dir.path().join("nohost");
    let server = |release: &str| format!("{} demo-server --release {release}", bin());
    let output = check(
        &[
            "--baseline",
            &server("1.4.0"),
            "--candidate",
            &server("1.5.0"),
            "--suite",
            "tasks/demo",
            "--stages",
            "evaluation",
            "--allow-skipped",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let (status, reason, simulated) = stage(&out, "evaluation");
    assert_eq!(status, "skipped");
    assert!(!simulated);
    assert!(
        reason.starts_with("no model host configured: pass --host or set hosts in the config"),
        "{reason}"
    );
}
