//! Contract snapshots and diffs through the real binary: the demo's releases over stdio and HTTP
//! in both eras, a real published server in two versions, and `run --trigger / --auto-trigger`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

/// (list, name, kind) of every change, and whether any breaks clients.
fn kinds(diff: &Value) -> Vec<(String, String, String)> {
    diff["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
            (s("list"), s("name"), s("kind"))
        })
        .collect()
}

fn has(kinds: &[(String, String, String)], list: &str, name: &str, kind: &str) -> bool {
    kinds
        .iter()
        .any(|(l, n, k)| l == list && n == name && k == kind)
}

/// The changes 1.4.0 → 1.5.0 makes that models see, and nothing that breaks a client.
fn assert_demo_diff(code: Option<i32>, diff: &Value) {
    assert_eq!(code, Some(0), "{diff:#}");
    let k = kinds(diff);
    assert!(has(&k, "tools", "find_issues", "tool_added"), "{k:?}");
    assert!(
        has(&k, "tools", "search_issues", "description_changed"),
        "{k:?}"
    );
    assert!(
        has(&k, "tools", "update_issue", "annotations_changed"),
        "{k:?}"
    );
    assert!(
        has(&k, "server", "instructions", "instructions_changed"),
        "{k:?}"
    );
    for c in diff["changes"].as_array().unwrap() {
        assert_eq!(c["breaksClients"], false, "{c:#}");
        assert_eq!(c["affectsModels"], true, "{c:#}");
    }
}

#[test]
fn demo_releases_diff_over_stdio_in_both_eras() {
    let dir = temp_dir();
    for era in ["modern", "legacy"] {
        let (a, b) = (
            dir.path().join(format!("a-{era}")),
            dir.path().join(format!("b-{era}")),
        );
        snapshot("demo:1.4.0", &a, &["--protocol-era", era]);
        snapshot("demo:1.5.0", &b, &["--protocol-era", era]);
        let server: Value =
            serde_json::from_str(&std::fs::read_to_string(a.join("server.json")).unwrap()).unwrap();
        assert_eq!(server["protocolEra"], era);
        // Both eras are recorded whichever the session used (the demo speaks both).
        let legacy = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
        assert_eq!(
            server["acceptedVersions"]["legacy"],
            serde_json::json!(legacy)
        );
        assert_eq!(
            server["acceptedVersions"]["modern"],
            serde_json::json!(["2026-07-28"])
        );
        let (code, d) = diff(&a, &b, dir.path());
        assert_demo_diff(code, &d);
        // A snapshot against itself: no change at all.
        let (code, same) = diff(&a, &a, dir.path());
        assert_eq!(code, Some(0));
        assert_eq!(same["changes"].as_array().unwrap().len(), 0, "{same:#}");
    }
    let tools: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("a-modern/tools.json")).unwrap(),
    )
    .unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "tools.json is sorted by name");
    let errors: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("a-modern/errors.json")).unwrap(),
    )
    .unwrap();
    let probes: Vec<(&str, &str)> = errors["probes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["probe"].as_str().unwrap(), p["era"].as_str().unwrap()))
        .collect();
    // Each probe in each era the server speaks, the session's first (issue 49: the diff
    // compares answers of the same era; before, only the session's five were made).
    let names = [
        "unknown_tool",
        "missing_argument",
        "wrong_type",
        "unknown_resource",
        "unsupported_protocol_version",
    ];
    let expected: Vec<(&str, &str)> = ["modern", "legacy"]
        .iter()
        .flat_map(|era| names.iter().map(move |name| (*name, *era)))
        .collect();
    assert_eq!(probes, expected);
    assert_eq!(
        errors["probes"][4]["code"], -32022,
        "the session's own first"
    );
}

#[test]
fn demo_releases_diff_over_http() {
    let base = spawn_listening(
        &["demo-server", "--release", "1.4.0", "--http", "127.0.0.1:0"],
        true,
    );
    let cand = spawn_listening(
        &["demo-server", "--release", "1.5.0", "--http", "127.0.0.1:0"],
        true,
    );
    let dir = temp_dir();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    snapshot(&format!("http://{}/mcp", base.addr), &a, &[]);
    snapshot(&format!("http://{}/mcp", cand.addr), &b, &[]);
    let (code, d) = diff(&a, &b, dir.path());
    assert_demo_diff(code, &d);
    // The legacy era over HTTP, and an auth profile's snapshot in its own directory.
    let config = dir.path().join("auth.toml");
    std::fs::write(
        &config,
        "[auth.reader]\nheaders = { X-Api-Key = 'not-a-real-key' }\n",
    )
    .unwrap();
    let legacy = dir.path().join("legacy");
    snapshot(
        &format!("http://{}/mcp", base.addr),
        &legacy,
        &[
            "--protocol-era",
            "legacy",
            "--auth-profile",
            "reader",
            "--config",
            config.to_str().unwrap(),
        ],
    );
    for snap in [legacy.clone(), legacy.join("reader")] {
        let server: Value =
            serde_json::from_str(&std::fs::read_to_string(snap.join("server.json")).unwrap())
                .unwrap();
        assert_eq!(server["protocolEra"], "legacy", "{}", snap.display());
    }
    let unknown = mcpeval(&[
        "snapshot",
        "--server",
        "demo:1.4.0",
        "--out",
        dir.path().join("x").to_str().unwrap(),
        "--auth-profile",
        "writer",
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("reader"));
}

#[test]
fn lists_without_server_facts_diff_too_and_bad_input_is_exit_2() {
    let dir = temp_dir();
    let ours = dir.path().join("ours");
    snapshot("demo:1.4.0", &ours, &[]);
    // Lists only, as the MCP Inspector CLI's output normalized with jq -S would give them.
    let theirs = dir.path().join("theirs");
    std::fs::create_dir_all(&theirs).unwrap();
    for file in ["resources.json", "resource-templates.json", "prompts.json"] {
        std::fs::copy(ours.join(file), theirs.join(file)).unwrap();
    }
    let mut tools: Value =
        serde_json::from_str(&std::fs::read_to_string(ours.join("tools.json")).unwrap()).unwrap();
    tools[0]["description"] = Value::String("Reworded.".into());
    std::fs::write(theirs.join("tools.json"), tools.to_string()).unwrap();
    let (code, d) = diff(&ours, &theirs, dir.path());
    assert_eq!(code, Some(0));
    let k = kinds(&d);
    assert_eq!(k.len(), 1, "{k:?}");
    assert_eq!(k[0].2, "description_changed");

    let missing = mcpeval(&["diff", ours.to_str().unwrap(), dir.path().to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("tools.json"));
    std::fs::write(theirs.join("prompts.json"), "{\"not\": \"a list\"}").unwrap();
    let bad = mcpeval(&["diff", ours.to_str().unwrap(), theirs.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("must hold a JSON array"));
}

#[test]
fn a_breaking_release_is_classified_as_such_and_stops_an_auto_triggered_run() {
    let dir = temp_dir();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    snapshot("demo:1.5.0", &a, &[]);
    snapshot("demo:2.0.0", &b, &[]);
    let (code, d) = diff(&a, &b, dir.path());
    assert_eq!(code, Some(1), "{d:#}");
    let k = kinds(&d);
    assert!(has(&k, "tools", "add_comment", "tool_removed"), "{k:?}");
    assert!(
        k.iter()
            .any(|(l, _, kind)| l == "tools" && kind == "tool_renamed"),
        "{k:?}"
    );
    assert!(
        has(&k, "tools", "search_issues", "parameter_made_required"),
        "{k:?}"
    );
    assert!(has(&k, "tools", "update_issue", "type_narrowed"), "{k:?}");

    let run = dir.path().join("run");
    let out = run_pair(
        "demo:1.5.0",
        "demo:2.0.0",
        &run,
        &["--auto-trigger", "--trials", "1"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-breaking"));
    assert!(run.join("contract/diff.json").is_file());
    assert!(!run.join("episodes.jsonl").exists(), "nothing ran");

    let anyway = dir.path().join("anyway");
    let out = run_pair(
        "demo:1.5.0",
        "demo:2.0.0",
        &anyway,
        &["--auto-trigger", "--allow-breaking", "--trials", "1"],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    assert!(anyway.join("contract/baseline/tools.json").is_file());
    assert!(!episodes(&anyway).is_empty(), "the run went on");
}

fn write_diff(dir: &Path, changes: Value) -> PathBuf {
    let path = dir.join("diff.json");
    let side = serde_json::json!({"label": "x", "snapshot": "s", "serverInfo": null});
    let diff = serde_json::json!({"baseline": side, "candidate": side, "changes": changes});
    std::fs::write(&path, diff.to_string()).unwrap();
    path
}

#[test]
fn a_trigger_runs_the_touched_tasks_or_nothing() {
    let dir = temp_dir();
    let quiet = write_diff(
        dir.path(),
        serde_json::json!([{"list": "tools", "name": "get_issue", "kind": "output_schema_added",
            "breaksClients": false, "affectsModels": false}]),
    );
    let run = dir.path().join("quiet");
    let out = run_pair(
        "demo:1.4.0",
        "demo:1.5.0",
        &run,
        &["--trigger", quiet.to_str().unwrap(), "--trials", "1"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to run"));
    assert!(!run.join("episodes.jsonl").exists());

    let loud = write_diff(
        dir.path(),
        serde_json::json!([{"list": "tools", "name": "add_comment", "path": "description",
            "kind": "description_changed", "breaksClients": false, "affectsModels": true}]),
    );
    let run = dir.path().join("loud");
    let out = run_pair(
        "demo:1.4.0",
        "demo:1.4.0",
        &run,
        &["--trigger", loud.to_str().unwrap(), "--trials", "1"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let eps = episodes(&run);
    let tasks: std::collections::BTreeSet<&str> = eps.iter().map(|e| e.task_id.as_str()).collect();
    assert!(tasks.contains("comment-on-issue-7"), "{tasks:?}");
    assert!(tasks.contains("greeting"), "no-tool tasks always run");
    assert!(
        !tasks.contains("report-bug-apollo"),
        "a capability task that does not touch add_comment is left out: {tasks:?}"
    );
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(summary.contains("## What triggered the run"), "{summary}");
    assert!(summary.contains("add_comment"));
}

/// Two published releases of `@modelcontextprotocol/server-memory` (installed by
/// `scripts/install-real-servers`, which this test runs when they are missing).
fn memory_server(version: &str) -> String {
    let root = repo_path("target/real-servers");
    let entry = root.join(format!(
        "memory-{version}/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
    ));
    if !entry.is_file() {
        let status = Command::new(repo_path("scripts/install-real-servers"))
            .status()
            .expect("scripts/install-real-servers runs (needs node and npm)");
        assert!(status.success(), "scripts/install-real-servers failed");
    }
    format!("node {}", entry.display())
}

#[test]
fn a_real_servers_two_releases_diff_as_they_really_changed() {
    let dir = temp_dir();
    let (a, b) = (dir.path().join("old"), dir.path().join("new"));
    // Named servers from a config file; the server keeps its graph in the file its environment
    // names: the temp dir, not node_modules.
    let memory = dir.path().join("memory.json");
    let config = dir.path().join("servers.toml");
    std::fs::write(
        &config,
        format!(
            "[servers.old]\ncommand = '{}'\nenv = {{ MEMORY_FILE_PATH = '{}' }}\n\
             [servers.new]\ncommand = '{}'\nenv = {{ MEMORY_FILE_PATH = '{}' }}\n",
            memory_server("2025.4.25"),
            memory.display(),
            memory_server("2025.11.25"),
            memory.display()
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    snapshot("old", &a, &["--config", config]);
    snapshot("new", &b, &["--config", config]);
    let (code, d) = diff(&a, &b, dir.path());
    let k = kinds(&d);
    // 2025.11.25 moved to the SDK's registerTool: every tool got a title and an outputSchema,
    // tools/list announces listChanged, newer protocol versions are spoken, and a bad call
    // became an isError result instead of a JSON-RPC -32603 error.
    assert!(
        has(&k, "tools", "create_entities", "title_changed"),
        "{k:?}"
    );
    assert!(
        has(&k, "tools", "create_entities", "output_schema_added"),
        "{k:?}"
    );
    assert!(
        has(&k, "server", "capabilities", "capability_added"),
        "{k:?}"
    );
    assert!(
        has(&k, "errors", "unknown_tool", "error_semantics_changed"),
        "{k:?}"
    );
    assert!(
        !k.iter().any(|(_, _, kind)| kind.ends_with("_removed")),
        "nothing was removed: {k:?}"
    );
    assert_eq!(code, Some(1), "changed error semantics break clients");
    let tools = |p: &Path| -> usize {
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(p.join("tools.json")).unwrap()).unwrap();
        v.as_array().unwrap().len()
    };
    assert_eq!((tools(&a), tools(&b)), (9, 9));
}
