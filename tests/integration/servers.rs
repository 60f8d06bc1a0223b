//! The demo server through the real binary over stdio and HTTP, both protocol eras; servers that
//! fail to start; runs against HTTP servers.

use crate::common;

use std::time::Duration;

use common::*;
use mcpeval::config::{ProtocolEra, ServerSpec};
use mcpeval::mcp::McpConnection;

fn stdio_spec(release: &str, era: ProtocolEra) -> ServerSpec {
    let mut spec = ServerSpec::parse(
        "demo",
        &format!("{} demo-server --release {release}", bin()),
    )
    .unwrap();
    spec.protocol_era = era;
    spec
}

fn http_spec(addr: &str, era: ProtocolEra) -> ServerSpec {
    let mut spec = ServerSpec::parse("demo", &format!("http://{addr}/mcp")).unwrap();
    spec.protocol_era = era;
    spec
}

async fn exercise(spec: &ServerSpec, release: &str, expected_era: &str) {
    let conn = McpConnection::connect(spec).await.expect("connects");
    let info = conn.server_info().clone();
    assert_eq!(info.version, release);
    assert_eq!(info.era, expected_era, "{info:?}");
    let tools = conn.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"search_issues"));
    assert_eq!(names.contains(&"find_issues"), release == "1.5.0");
    let args = serde_json::json!({"id": 3}).as_object().cloned();
    match conn
        .call_tool("get_issue", args, Duration::from_secs(10))
        .await
        .unwrap()
    {
        mcpeval::mcp::CallOutcome::Result { is_error, text, .. } => {
            assert!(!is_error, "{text}");
            assert!(text.contains("uploading a large photo"), "{text}");
        }
        other => panic!("unexpected {other:?}"),
    }
    conn.close().await;
}

#[tokio::test]
async fn demo_server_over_stdio_in_both_eras() {
    for release in ["1.4.0", "1.5.0"] {
        exercise(&stdio_spec(release, ProtocolEra::Legacy), release, "legacy").await;
        exercise(&stdio_spec(release, ProtocolEra::Modern), release, "modern").await;
        exercise(&stdio_spec(release, ProtocolEra::Auto), release, "modern").await;
    }
}

#[tokio::test]
async fn demo_server_over_http_in_both_eras() {
    let server = spawn_listening(
        &["demo-server", "--release", "1.5.0", "--http", "127.0.0.1:0"],
        true,
    );
    exercise(
        &http_spec(&server.addr, ProtocolEra::Legacy),
        "1.5.0",
        "legacy",
    )
    .await;
    exercise(
        &http_spec(&server.addr, ProtocolEra::Modern),
        "1.5.0",
        "modern",
    )
    .await;
    exercise(
        &http_spec(&server.addr, ProtocolEra::Auto),
        "1.5.0",
        "modern",
    )
    .await;
}

#[test]
fn a_run_against_http_servers() {
    let base = spawn_listening(
        &["demo-server", "--release", "1.4.0", "--http", "127.0.0.1:0"],
        true,
    );
    let cand = spawn_listening(
        &["demo-server", "--release", "1.5.0", "--http", "127.0.0.1:0"],
        true,
    );
    let dir = temp_dir();
    let b = format!("http://{}/mcp", base.addr);
    let c = format!("http://{}/mcp", cand.addr);
    // HTTP servers are never exempt from the write gate; these are the test's own.
    let out = run_pair(
        &b,
        &c,
        dir.path(),
        &["--host", "sim", "--trials", "2", "--allow-writes"],
    );
    assert_verdict(&out);
    let eps = episodes(dir.path());
    assert!(!eps.is_empty());
    assert!(eps.iter().all(|e| e.infra_error.is_none()));
}

#[test]
fn a_server_that_cannot_start_stops_the_run_with_exit_3_and_its_stderr() {
    let dir = temp_dir();
    let out = run_pair("ls /definitely/not/here", "demo:1.5.0", dir.path(), &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("baseline"), "{err}");
    assert!(err.contains("/definitely/not/here"), "{err}");
    assert!(
        err.to_lowercase().contains("no such file"),
        "stderr tail missing: {err}"
    );

    // A candidate that cannot start while the baseline does: the pre-flight names the candidate.
    let out = run_pair("demo:1.4.0", "/nonexistent/server --flag", dir.path(), &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("candidate server `/nonexistent/server --flag`: failed to start"),
        "{err}"
    );
}

#[test]
fn an_unreachable_http_server_is_an_infrastructure_failure() {
    let dir = temp_dir();
    // Port 9 on loopback: nothing listens there.
    let out = run_pair("http://127.0.0.1:9/mcp", "demo:1.5.0", dir.path(), &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("127.0.0.1:9"));
}

/// A server that dies mid-trial on one side only is that side's failure, not an infrastructure
/// error: a behaviour change by design (issue 36; until then the crash was an `infra_error`, left
/// out of the statistics, and the run could end in exit 3 as if it were flaky). Its trials are
/// retried as before; after the last attempt the episode says `server_error` with the side, the
/// call and the server's stderr, and counts as a failure.
#[test]
fn a_server_that_crashes_mid_trial_fails_its_side_with_a_server_error() {
    let dir = temp_dir();
    // The candidate dies on its second tool call; tasks that need two calls hit it every attempt.
    let out_dir = run_config(
        dir.path(),
        &format!(
            "baseline = \"demo:1.4.0\"\ncandidate = \"crashing\"\nsuites = [\"tasks/demo\"]\nretries = 1\n\
             hosts = [\"sim\"]\n\
             [servers.crashing]\ncommand = \"{} demo-server --release 1.5.0\"\n\
             env = {{ MCPEVAL_DEMO_CRASH_AFTER = \"1\" }}\n",
            bin()
        ),
        "2",
    );
    let eps = episodes(&out_dir);
    let tasks: std::collections::HashSet<&str> = eps.iter().map(|e| e.task_id.as_str()).collect();
    assert_eq!(eps.len(), tasks.len() * 2 * 2, "episodes lost");
    assert!(
        eps.iter().all(|e| e.infra_error.is_none()),
        "a crash left as infra"
    );
    let crashed: Vec<_> = eps.iter().filter(|e| e.server_error.is_some()).collect();
    assert!(!crashed.is_empty(), "no trial hit the crash");
    for e in &crashed {
        assert_eq!(e.side, mcpeval::episode::Side::Candidate);
        assert!(!e.success);
        assert_eq!(e.attempts.len(), 1, "the retry is not kept");
        let error = e.server_error.as_deref().unwrap();
        assert!(
            error.starts_with("candidate server failed during tools/call `"),
            "{error}"
        );
        assert!(
            error.contains("crashing on purpose"),
            "stderr tail missing: {error}"
        );
    }
    assert!(eps
        .iter()
        .any(|e| e.side == mcpeval::episode::Side::Candidate && e.server_error.is_none()));
    // The tables carry it, and the comparison counts those trials as the candidate's failures.
    let csv = std::fs::read_to_string(out_dir.join("episodes.csv")).unwrap();
    assert!(
        csv.lines().next().unwrap().contains("server_error"),
        "{csv}"
    );
    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(
        summary.contains("candidate server failed during tools/call"),
        "{summary}"
    );
}

/// The servers the preflight started (and listed) serve the run's first trials: with
/// `isolation = "run"` each side's server process starts once, not once for the preflight and
/// again for the run; with `isolation = "trial"` one start per trial, the preflight's included.
#[test]
fn the_preflight_servers_serve_the_first_trials() {
    let dir = temp_dir();
    let starts = dir.path().join("starts.log");
    let launcher = dir.path().join("launch-demo");
    write_script(
        &launcher,
        &format!(
            "#!/bin/sh\necho \"$1\" >> '{}'\nexec '{}' demo-server --release \"$1\"\n",
            starts.display(),
            bin()
        ),
    );
    let count = |release: &str| {
        std::fs::read_to_string(&starts)
            .unwrap_or_default()
            .lines()
            .filter(|l| *l == release)
            .count()
    };
    for (isolation, trials, expected) in [("run", "3", 1), ("trial", "2", 2 * 2)] {
        let _ = std::fs::remove_file(&starts);
        let run = dir.path().join(format!("run-{isolation}"));
        let out = mcpeval(&[
            "run",
            "--baseline",
            &format!("{} 1.4.0", launcher.display()),
            "--candidate",
            &format!("{} 1.5.0", launcher.display()),
            "--suite",
            "tasks/demo/no_tool.yaml",
            "--host",
            "sim",
            "--trials",
            trials,
            "--isolation",
            isolation,
            // A launcher script of the demo: its state dies with its process, which the
            // config would say with `state = "process"`.
            "--allow-writes",
            "--out",
            run.to_str().unwrap(),
        ]);
        assert_verdict(&out);
        let tasks = episodes(&run)
            .iter()
            .map(|e| e.task_id.clone())
            .collect::<std::collections::HashSet<_>>()
            .len();
        let expected = if isolation == "trial" {
            tasks * expected / 2
        } else {
            expected
        };
        for release in ["1.4.0", "1.5.0"] {
            assert_eq!(count(release), expected, "{isolation}: starts of {release}");
        }
    }
}
