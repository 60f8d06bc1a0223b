//! Any stdio server over HTTP through the real binary: `mcpeval serve --base SPEC --http` serves
//! the demo's lists as the demo's own HTTP endpoint does and answers its calls as the demo does
//! over stdio, in both protocol eras;
//! `check` runs the real conformance suite on stdio servers with no `[check] http_command`
//! (writing the expected-failures file from the baseline), and refuses an `http_command` that
//! serves another server than the candidate.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common;

use common::*;

/// The example call tasks: tool results, tool errors, JSON-RPC error codes, a resource, a prompt.
const CALLS: &str = "examples/tasks/calls.yaml";

fn bridge() -> Background {
    spawn_listening(
        &["serve", "--base", "demo:1.4.0", "--http", "127.0.0.1:0"],
        true,
    )
}

#[test]
fn the_bridge_serves_the_stdio_servers_lists_in_both_eras() {
    let server = bridge();
    let url = format!("http://{}/mcp", server.addr);
    // The demo's own HTTP endpoint: errors.json's probes see HTTP's answers (a 400 to an
    // unsupported protocol version) on both.
    let demo = spawn_listening(
        &["demo-server", "--release", "1.4.0", "--http", "127.0.0.1:0"],
        true,
    );
    let demo_url = format!("http://{}/mcp", demo.addr);
    let dir = temp_dir();
    for era in ["modern", "legacy"] {
        let (a, b) = (
            dir.path().join(format!("demo-{era}")),
            dir.path().join(format!("http-{era}")),
        );
        snapshot(&demo_url, &a, &["--protocol-era", era]);
        snapshot(&url, &b, &["--protocol-era", era]);
        let (code, diff) = diff(&a, &b, dir.path());
        assert_eq!(code, Some(0), "{diff:#}");
        assert_eq!(diff["changes"].as_array().unwrap().len(), 0, "{diff:#}");
        let server: Value =
            serde_json::from_str(&std::fs::read_to_string(b.join("server.json")).unwrap()).unwrap();
        assert_eq!(server["protocolEra"], era);
    }
}

/// `mcpeval run` of the example call tasks, 1.4.0 over stdio against `candidate`.
fn run_calls(candidate: &str, out: &Path, era: &str) -> Output {
    mcpeval(&[
        "run",
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        candidate,
        "--suite",
        CALLS,
        "--protocol-era",
        era,
        // The bridged demo's state lives in the bridge's one process: its create_issue writes
        // to it, which these tests accept.
        "--allow-writes",
        "--out",
        out.to_str().unwrap(),
    ])
}

#[test]
fn the_bridge_answers_calls_as_the_stdio_server_does_in_both_eras() {
    let server = bridge();
    let url = format!("http://{}/mcp", server.addr);
    let dir = temp_dir();
    for era in ["modern", "legacy"] {
        let out = dir.path().join(era);
        let output = run_calls(&url, &out, era);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        let eps = episodes(&out);
        assert!(eps.len() >= 10, "{}", eps.len());
        for e in eps.iter().filter(|e| e.side.as_str() == "candidate") {
            let twin = eps
                .iter()
                .find(|b| b.side.as_str() == "baseline" && b.task_id == e.task_id)
                .unwrap();
            assert_eq!(e.infra_error, None, "{era} {}", e.task_id);
            assert_eq!(e.success, twin.success, "{era} {}", e.task_id);
            let codes = |x: &mcpeval::episode::Episode| -> Vec<Option<i64>> {
                x.calls.iter().map(|c| c.error_code).collect()
            };
            // JSON-RPC errors pass through unchanged (the missing resource's -32002).
            assert_eq!(codes(e), codes(twin), "{era} {}", e.task_id);
        }
        assert!(eps
            .iter()
            .any(|e| e.calls.iter().any(|c| c.error_code.is_some())));
    }
}

/// `mcpeval check ARGS --out OUT` with the installed conformance suite.
fn check(out: &Path, args: &[&str]) -> Output {
    let launcher = repo_path("target/conformance/bin/mcp-conformance");
    assert!(
        launcher.exists(),
        "{} is missing: run scripts/install-conformance (scripts/test does)",
        launcher.display()
    );
    std::process::Command::new(bin())
        .arg("check")
        .args(args)
        .args(["--out", out.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .env("MCPEVAL_CONFORMANCE", launcher)
        .output()
        .expect("mcpeval runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn check_runs_the_conformance_suite_on_stdio_servers_and_writes_the_baselines_failures() {
    let dir = temp_dir();
    let stored = dir.path().join("contract");
    let out = dir.path().join("check");
    let args = [
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        "demo:1.4.0",
        "--write-baseline",
        "--baseline-snapshot",
        stored.to_str().unwrap(),
        "--stages",
        "contract,conformance",
    ];
    let output = check(&out, &args);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let said = stdout(&output);
    let line = said
        .lines()
        .find(|l| l.starts_with("conformance: "))
        .unwrap_or_else(|| panic!("{}", text(&output)));
    assert!(
        line.starts_with("conformance: passed")
            && line.contains("0 new failure(s), 0 stale entries")
            && line.ends_with("over 2025-11-25, 2026-07-28"),
        "{line}"
    );
    let written = std::fs::read_to_string(stored.join("expected-failures.yml")).unwrap();
    assert!(
        written.contains("\"2025-11-25\":\n  server:\n"),
        "{written}"
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("(a stdio server bridged to HTTP by mcpeval)"),
        "{summary}"
    );
    assert!(out.join("conformance/baseline/2025-11-25").is_dir());
    assert!(out.join("conformance/candidate/2026-07-28").is_dir());
    // The next check reads the file from beside the stored snapshot.
    let again = dir.path().join("again");
    let output = check(
        &again,
        &args[..4]
            .iter()
            .chain(&args[5..])
            .copied()
            .collect::<Vec<_>>(),
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let summary = std::fs::read_to_string(again.join("summary.md")).unwrap();
    assert!(summary.contains("expected-failures.yml`"), "{summary}");
}

#[test]
fn an_http_command_that_serves_another_server_is_refused() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = temp_dir();
    let config = dir.path().join("mcpeval.toml");
    let serve = format!(
        "{} demo-server --release 1.5.0 --http 127.0.0.1:{port}",
        bin()
    );
    std::fs::write(
        &config,
        format!(
            "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.4.0\"\n[check]\n\
             http_command = {serve:?}\nhttp_url = \"http://127.0.0.1:{port}/mcp\"\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("check");
    let output = check(
        &out,
        &[
            "--config",
            config.to_str().unwrap(),
            "--stages",
            "conformance",
        ],
    );
    assert_eq!(output.status.code(), Some(3), "{}", text(&output));
    let said = stdout(&output);
    let line = said
        .lines()
        .find(|l| l.starts_with("conformance: "))
        .unwrap_or_else(|| panic!("{}", text(&output)));
    assert!(
        line.starts_with("conformance: error")
            && line.contains("serves another server than the candidate")
            && line.contains("serverInfo version `1.5.0` over HTTP, `1.4.0` over stdio")
            && line.contains("tools only over HTTP: find_issues"),
        "{line}"
    );
    assert!(!out.join("conformance/candidate").exists());
    // The server it started is gone.
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
}
