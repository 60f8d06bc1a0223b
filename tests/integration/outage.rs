//! A provider outage: a host whose requests keep failing for one lasting reason is stopped (its
//! trials left not run, exit 3, status `incomplete`), a provider killed mid-run leaves
//! infrastructure errors, and `--resume` against the provider back runs those trials again until
//! the run is `completed`, each trial recorded once with its earlier errors.

use crate::common;

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::*;

const CONFIG: &str = "\
baseline = \"demo:1.4.0\"
candidate = \"demo:1.5.0\"
suites = [\"tasks/demo\"]
hosts = [\"openai:sim\"]
seed = 42
";

/// `mcpeval ARGS…` with the openai host's endpoint at `addr`.
fn at(addr: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OPENAI_BASE_URL", format!("http://{addr}/v1"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("GITHUB_STEP_SUMMARY");
    cmd
}

fn run_json(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap()
}

/// A port on 127.0.0.1 with nothing listening (bound, then released).
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

/// Resumes `dir` against a healthy sim-server: every trial of the run is then recorded once,
/// the run is `completed`, and the trials that had ended as infrastructure errors keep those
/// errors among their attempts. `set_aside`: how many episodes the resume should set aside.
fn resume_completes(dir: &Path, trials: usize, set_aside: usize) {
    let server = spawn_listening(&["sim-server", "--addr", "127.0.0.1:0"], false);
    let out = at(&server.addr, &["run", "--resume", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(matches!(code(&out), 0 | 1), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{set_aside} that ended as infrastructure errors")),
        "{}",
        text(&out)
    );
    let run = run_json(dir);
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["infra_errors"], 0);
    assert!(run.get("stopped_hosts").is_none());
    let eps = episodes(dir);
    let keys: HashSet<_> = eps
        .iter()
        .map(|e| (e.task_id.clone(), e.side, e.trial))
        .collect();
    assert_eq!(keys.len(), eps.len(), "a trial was recorded twice");
    assert_eq!(eps.len(), 18 * 2 * trials, "a trial is missing");
    assert!(eps.iter().all(|e| e.infra_error.is_none()));
    // The trials run again keep what went wrong before, and the set-aside records are kept.
    let with_earlier = eps.iter().filter(|e| !e.attempts.is_empty()).count();
    assert!(with_earlier >= set_aside, "{with_earlier} < {set_aside}");
    assert_eq!(lines(&dir.join("retried.jsonl")), set_aside);
    assert_eq!(lines(&dir.join("transcripts.jsonl")), eps.len());
}

#[test]
fn a_provider_refusing_connections_stops_its_host_and_resume_finishes_the_run() {
    let dir = temp_dir();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let run = dir.path().join("run");
    let started = std::time::Instant::now();
    let out = at(
        &closed_port(),
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--out",
            run.to_str().unwrap(),
            "--trials",
            "3",
        ],
    )
    .output()
    .unwrap();
    eprintln!("stopped after {:.2} s", started.elapsed().as_secs_f64());
    assert_eq!(code(&out), 3, "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("host openai:sim stopped: connection refused"),
        "{said}"
    );
    assert!(said.contains("mcpeval run --resume"), "{said}");
    let info = run_json(&run);
    assert_eq!(info["status"], "incomplete");
    let stopped = &info["stopped_hosts"][0];
    assert_eq!(stopped["host"], "openai:sim");
    let not_run = stopped["not_run"].as_u64().unwrap() as usize;
    let recorded = episodes(&run).len();
    // Only the trials in flight when the breaker opened were tried; the rest were not started.
    assert!(recorded <= 16, "{recorded} trials tried");
    assert_eq!(recorded + not_run, 18 * 2 * 3);
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(summary.starts_with("# mcpeval: incomplete"), "{summary}");
    assert!(summary.contains("It exits 3"), "{summary}");

    resume_completes(&run, 3, recorded);
}

#[test]
fn a_provider_killed_mid_run_leaves_an_incomplete_run_that_resume_finishes() {
    let dir = temp_dir();
    let config = dir.path().join("config.toml");
    // No breaker and no retries: every trial after the kill is tried once, and ends as an
    // infrastructure error.
    let text_ = CONFIG.replace("\"openai:sim\"", "\"down\"")
        + "retries = 0\n\n[host.down]\nprovider = \"openai\"\nmodel = \"sim\"\n\
           breaker_after = 0\nmax_attempts = 1\n";
    std::fs::write(&config, text_).unwrap();
    let run = dir.path().join("run");
    let mut server = spawn_listening(
        &["sim-server", "--addr", "127.0.0.1:0", "--latency-ms", "20"],
        false,
    );
    let mut child = at(
        &server.addr,
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--out",
            run.to_str().unwrap(),
            "--trials",
            "2",
            "--concurrency",
            "2",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let recorded = || lines(&run.join("episodes.jsonl"));
    assert!(wait_for(|| recorded() >= 6, Duration::from_secs(60)));
    server.child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(3));
    let info = run_json(&run);
    assert_eq!(info["status"], "incomplete");
    let infra = info["infra_errors"].as_u64().unwrap() as usize;
    assert!(infra > 0 && infra < 18 * 2 * 2, "{infra}");
    assert_eq!(episodes(&run).len(), 18 * 2 * 2);

    resume_completes(&run, 2, infra);
}
