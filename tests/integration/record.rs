//! `mcpeval run --record DIR` through the binary on the demo servers with the simulated model:
//! each side's cassette holds the server's lists and every call the episodes made, a stateful
//! server's answers in order, no planted secret; `mcpeval cassette check` reads them back and
//! refuses a bad version or a corrupted line with file:line.

use std::collections::BTreeSet;
use std::path::Path;

use mcpeval::cassette::{Answer, Cassette, ListKind, Matcher, Method, Request, Unmatched};

use crate::common;

use common::*;

/// The (tool, arguments) of every call the `side`'s episodes sent to the server, arguments
/// canonical.
fn episode_calls(run: &Path, side: &str) -> BTreeSet<(String, String)> {
    let eps = episodes(run);
    let sent = eps
        .iter()
        .filter(|e| e.side.as_str() == side)
        .flat_map(|e| &e.calls)
        // A call the model got wrong (unknown tool, bad JSON) never reached the server.
        .filter(|c| c.error_kind.as_deref() != Some("model"));
    sent.map(|c| {
        let args: serde_json::Value = serde_json::from_str(&c.arguments).unwrap();
        let args = mcpeval::cassette::canonical(&args).to_string();
        (c.tool.clone(), args)
    })
    .collect()
}

fn recorded_calls(cassette: &Cassette) -> BTreeSet<(String, String)> {
    (cassette.entries.iter())
        .filter(|e| e.request.method == Method::ToolsCall)
        .map(|e| {
            let args = e.request.arguments.clone().unwrap_or_default();
            (e.request.name.clone().unwrap(), args.to_string())
        })
        .collect()
}

#[test]
fn a_recorded_demo_run_holds_the_lists_and_every_call_the_episodes_made() {
    let dir = temp_dir();
    let (run, record) = (dir.path().join("run"), dir.path().join("cassettes"));
    let out = run_pair(
        "demo:1.4.0",
        "demo:1.5.0",
        &run,
        &["--trials", "2", "--record", record.to_str().unwrap()],
    );
    assert_verdict(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for side in ["baseline", "candidate"] {
        let path = record.join(format!("{side}.cassette.jsonl"));
        assert!(
            stdout.contains(&format!("recorded: {}", path.display())),
            "{}",
            text(&out)
        );
        let cassette = Cassette::read(&path).unwrap();
        let calls = recorded_calls(&cassette);
        assert!(!calls.is_empty());
        assert_eq!(calls, episode_calls(&run, side), "{side}");
        // Every answer of the demo is a tool result.
        let answers = cassette.entries.iter().flat_map(|e| &e.answers);
        assert!(answers.into_iter().all(|a| matches!(a, Answer::Result(_))));
    }
    // The lists are the server's: 1.5.0 added `find_issues`, which 1.4.0 never had.
    let tools = |side: &str| -> Vec<String> {
        let cassette = Cassette::read(&record.join(format!("{side}.cassette.jsonl"))).unwrap();
        let items = &cassette.lists[&ListKind::Tools];
        items
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let (baseline, candidate) = (tools("baseline"), tools("candidate"));
    assert!(
        baseline.contains(&"search_issues".to_owned()),
        "{baseline:?}"
    );
    assert!(
        !baseline.contains(&"find_issues".to_owned()),
        "{baseline:?}"
    );
    assert!(
        candidate.contains(&"find_issues".to_owned()),
        "{candidate:?}"
    );
    let baseline = Cassette::read(&record.join("baseline.cassette.jsonl")).unwrap();
    assert_eq!(
        (
            baseline.header.server.name.as_str(),
            baseline.header.server.version.as_str()
        ),
        ("mcpeval-demo-tracker", "1.4.0")
    );
    assert!(!baseline.lists[&ListKind::Resources].is_empty());
    assert!(baseline.handshake.instructions.is_some());
    // The candidate's calls answered from the baseline's cassette, a session per episode (what
    // `replay:baseline.cassette.jsonl+demo:1.5.0` will do): `find_issues`, which 1.4.0 never
    // had, is never matched; the calls 1.4.0 was asked too are.
    let matcher = Matcher::new(baseline.clone(), Unmatched::Error);
    let (mut find_issues, mut unmatched) = (0, 0);
    for e in episodes(&run)
        .iter()
        .filter(|e| e.side.as_str() == "candidate")
    {
        let mut session = matcher.session();
        for call in e
            .calls
            .iter()
            .filter(|c| c.error_kind.as_deref() != Some("model"))
        {
            let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
            let reply = session.answer(&Request::tool(&call.tool, args.as_object().cloned()));
            if call.tool == "find_issues" {
                find_issues += 1;
                assert!(!reply.matched(), "{call:?}");
            }
        }
        unmatched += session.unmatched();
    }
    assert!(
        find_issues > 0 && unmatched >= find_issues,
        "{find_issues} {unmatched}"
    );
    eprintln!("candidate calls unmatched in the baseline's cassette: {unmatched} ({find_issues} find_issues)");
    // `cassette check` reads both and says what they hold.
    let check = mcpeval(&[
        "cassette",
        "check",
        record.join("baseline.cassette.jsonl").to_str().unwrap(),
        record.join("candidate.cassette.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(
        said.contains("cassette 1 of `mcpeval-demo-tracker` 1.4.0"),
        "{said}"
    );
    assert!(said.contains(&format!(
        "lists: {} tools",
        baseline.lists[&ListKind::Tools].len()
    )));
}

const CREATES: &str = r#"- id: create-three
  kind: call
  trials: 3
  call:
    tool: create_issue
    args: {project: apollo, title: "Printer catches fire"}
  expect: {is_error: false}
"#;

#[test]
fn a_stateful_server_s_answers_are_kept_in_order() {
    let dir = temp_dir();
    let suite = dir.path().join("creates.yaml");
    std::fs::write(&suite, CREATES).unwrap();
    let (run, record) = (dir.path().join("run"), dir.path().join("cassettes"));
    // One server per side for the whole run: each create gives the next issue number.
    let out = mcpeval(&[
        "run",
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        "demo:1.4.0",
        "--suite",
        suite.to_str().unwrap(),
        "--isolation",
        "run",
        // One trial at a time: concurrent creates on the shared server could answer in an
        // order other than the one they were recorded in.
        "--concurrency",
        "1",
        "--out",
        run.to_str().unwrap(),
        "--record",
        record.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let cassette = Cassette::read(&record.join("baseline.cassette.jsonl")).unwrap();
    assert_eq!(cassette.entries.len(), 1, "{:?}", cassette.entries);
    let ids: Vec<i64> = (cassette.entries[0].answers.iter())
        .map(|a| match a {
            Answer::Result(r) => r["structuredContent"]["id"].as_i64().unwrap(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert!(
        ids.windows(2).all(|w| w[0] + 1 == w[1]),
        "in the server's order: {ids:?}"
    );
    let check = mcpeval(&[
        "cassette",
        "check",
        record.join("baseline.cassette.jsonl").to_str().unwrap(),
    ]);
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(
        said.contains("requests: 1 (tools/call 1), answers: 3, requests with several answers: 1"),
        "{said}"
    );
}

#[test]
fn planted_secrets_never_reach_a_cassette() {
    let dir = temp_dir();
    let suite = dir.path().join("leak.yaml");
    // The calls carry a token the config marks secret and the API key: the server sees both,
    // and its answer echoes the issue it created, so both would land in the cassettes.
    std::fs::write(
        &suite,
        "- id: create-with-token\n  kind: call\n  call:\n    tool: create_issue\n    args: \
         {project: apollo, title: \"Leak tok-planted-7f3a9e\", description: \"key \
         sk-planted-key-91b2\"}\n  expect: {is_error: false}\n",
    )
    .unwrap();
    let config = dir.path().join("secrets.toml");
    std::fs::write(
        &config,
        format!(
            "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.5.0\"\nsuites = [\"{}\"]\n\
             trials = 2\nsecret_env = [\"PLANTED_SESSION_TOKEN\"]\n",
            suite.display()
        ),
    )
    .unwrap();
    let (run, record) = (dir.path().join("run"), dir.path().join("cassettes"));
    let out = std::process::Command::new(bin())
        .args(["run", "--config", config.to_str().unwrap()])
        .args([
            "--out",
            run.to_str().unwrap(),
            "--record",
            record.to_str().unwrap(),
        ])
        .env("PLANTED_SESSION_TOKEN", "tok-planted-7f3a9e")
        .env("OPENAI_API_KEY", "sk-planted-key-91b2")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    assert_verdict(&out);
    let mut redacted = 0;
    for side in ["baseline", "candidate"] {
        let content =
            std::fs::read_to_string(record.join(format!("{side}.cassette.jsonl"))).unwrap();
        for secret in ["tok-planted-7f3a9e", "sk-planted-key-91b2"] {
            assert!(!content.contains(secret), "{secret} in the {side} cassette");
        }
        redacted += content.matches("[REDACTED]").count();
    }
    // Both reached the server, in the request and in its answer, and were redacted there.
    assert!(redacted >= 8, "{redacted}");
}

#[test]
fn a_bad_version_or_a_corrupted_line_is_refused_with_file_and_line() {
    let dir = temp_dir();
    let good = concat!(
        r#"{"cassette":1,"server":{"name":"demo","version":"1","protocol":"2025-11-25"},"recorded_at":"t"}"#,
        "\n",
        r#"{"list":"tools","items":[{"name":"get_issue"}]}"#,
        "\n",
        r#"{"request":{"method":"tools/call","name":"get_issue","arguments":{"id":1}},"answers":[{"result":{"content":[]}}]}"#,
        "\n"
    );
    let cases = [
        (
            "v2.jsonl",
            good.replacen(r#""cassette":1"#, r#""cassette":2"#, 1),
            ":1: cassette version 2 is not supported (this mcpeval reads version 1)",
        ),
        (
            "cut.jsonl",
            good.replacen(r#""answers":[{"#, r#""answers":[{,"#, 1),
            ":3: not JSON: ",
        ),
        (
            "odd.jsonl",
            good.replacen(r#"{"list":"tools","#, r#"{"lists":"tools","#, 1),
            ":2: not a cassette line",
        ),
    ];
    for (name, content, expected) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        let out = mcpeval(&["cassette", "check", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        let expected = format!("{}{expected}", path.display());
        assert!(
            stderr.contains(&expected),
            "expected `{expected}` in {stderr}"
        );
    }
    let path = dir.path().join("good.jsonl");
    std::fs::write(&path, good).unwrap();
    let out = mcpeval(&["cassette", "check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn a_run_cut_short_by_ctrl_c_still_writes_its_cassettes() {
    let server = spawn_listening(
        &["sim-server", "--addr", "127.0.0.1:0", "--latency-ms", "300"],
        false,
    );
    let dir = temp_dir();
    let (run, record) = (dir.path().join("run"), dir.path().join("cassettes"));
    let mut child = pair_command("demo:1.4.0", "demo:1.5.0", &run)
        .args([
            "--host",
            "openai:sim",
            "--trials",
            "6",
            "--concurrency",
            "2",
        ])
        .args(["--record", record.to_str().unwrap()])
        .env("OPENAI_BASE_URL", format!("http://{}/v1", server.addr))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let episodes_file = run.join("episodes.jsonl");
    let started = wait_for(
        || lines(&episodes_file) >= 4,
        std::time::Duration::from_secs(60),
    );
    assert!(started, "no episode within a minute");
    // Sent by this test to the child it started, by its process id.
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    assert_eq!(child.wait().unwrap().code(), Some(130));
    // Every call of the episodes that finished is in the cassettes.
    for side in ["baseline", "candidate"] {
        let cassette = Cassette::read(&record.join(format!("{side}.cassette.jsonl"))).unwrap();
        let recorded = recorded_calls(&cassette);
        let made = episode_calls(&run, side);
        assert!(!made.is_empty() || side == "candidate");
        assert!(
            made.is_subset(&recorded),
            "{side}: {made:?} not all in {recorded:?}"
        );
        assert!(!cassette.lists[&ListKind::Tools].is_empty());
    }
}

#[test]
fn check_records_its_evaluation_too() {
    let dir = temp_dir();
    let (out_dir, record) = (dir.path().join("check"), dir.path().join("cassettes"));
    let out = mcpeval(&[
        "check",
        "--stages",
        "evaluation",
        "--trials",
        "1",
        "--out",
        out_dir.to_str().unwrap(),
        "--record",
        record.to_str().unwrap(),
    ]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let run = out_dir.join("evaluation");
    for side in ["baseline", "candidate"] {
        let path = record.join(format!("{side}.cassette.jsonl"));
        let cassette = Cassette::read(&path).unwrap();
        assert_eq!(
            recorded_calls(&cassette),
            episode_calls(&run, side),
            "{side}"
        );
    }
    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(summary.contains("- recorded: `"), "{summary}");
}

#[test]
fn cassettes_that_cannot_be_written_are_exit_3_and_the_reports_stay() {
    let dir = temp_dir();
    let (run, record) = (dir.path().join("run"), dir.path().join("cassettes"));
    // A directory where the baseline's cassette goes: the rename onto it fails at the end.
    std::fs::create_dir_all(record.join("baseline.cassette.jsonl").join("x")).unwrap();
    let out = run_pair(
        "demo:1.4.0",
        "demo:1.5.0",
        &run,
        &["--trials", "1", "--record", record.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot write the cassettes (exit 3): cannot write cassette "),
        "{stderr}"
    );
    assert!(run.join("summary.md").is_file() && run.join("comparison.csv").is_file());
}
