//! A contract section a person reads, through the real binary: changes that differ only in a
//! number grouped, one change for a first input schema, both sides named when they report the
//! same `serverInfo.version`, the verdict before the contract in report.html, and the
//! deprecations stage reading what the tool list says is deprecated.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::{json, Value};

/// A stdio MCP server that serves the lists of the JSON file named by its last argument
/// (`{"serverInfo": …, "tools": […], …}`); the other arguments are ignored, so a test can put a
/// package name in its command line as `npx -y PACKAGE@VERSION` would.
pub(crate) const LIST_SERVER: &str = r#"#!/usr/bin/env python3
import json, sys
spec = json.load(open(sys.argv[-1]))
lists = {"tools/list": "tools", "resources/list": "resources",
         "resources/templates/list": "resourceTemplates", "prompts/list": "prompts"}
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                  "serverInfo": spec["serverInfo"]}
    elif method in lists:
        result = {lists[method]: spec.get(lists[method], [])}
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": "method not found"}
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": error}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"#;

const DRAFT: &str = "http://json-schema.org/draft-07/schema#";

/// Two "releases" of a filesystem server that both report `0.2.0`: the first declares no
/// input schema (only `$schema`, as server-filesystem 2025.3.28 does), the second declares
/// them and retitles `read_file` as deprecated. Returns the two server specs.
fn filesystem_releases(dir: &Path) -> (String, String) {
    let server = dir.join("list-server");
    write_script(&server, LIST_SERVER);
    let info = json!({"name": "secure-filesystem-server", "version": "0.2.0"});
    let undeclared = json!({"$schema": DRAFT});
    let old = json!({"serverInfo": info, "tools": [
        {"name": "read_file", "description": "Read a file.", "inputSchema": undeclared},
        {"name": "list_directory", "description": "List a directory.", "inputSchema": undeclared},
        {"name": "read_text_file", "description": "Read a file as text.", "inputSchema": undeclared},
    ]});
    let path = json!({"type": "string"});
    let new = json!({"serverInfo": info, "tools": [
        {"name": "read_file", "title": "Read File (Deprecated)",
         "description": "DEPRECATED: Use read_text_file instead.",
         "inputSchema": {"$schema": DRAFT, "type": "object", "required": ["path"],
            "properties": {"path": path, "tail": {"type": "number"}, "head": {"type": "number"}}}},
        {"name": "list_directory", "description": "List a directory.",
         "inputSchema": {"type": "object", "properties": {"path": path}}},
        {"name": "read_text_file", "description": "Read a file as text.",
         "inputSchema": {"type": "object", "required": ["path"], "properties": {"path": path}}},
    ]});
    let spec = |name: &str, package: &str, lists: &Value| {
        let file = dir.join(format!("{name}.json"));
        std::fs::write(&file, lists.to_string()).unwrap();
        format!(
            "{} @modelcontextprotocol/server-filesystem@{package} {}",
            server.display(),
            file.display()
        )
    };
    (
        spec("old", "2025.3.28", &old),
        spec("new", "2026.8.31", &new),
    )
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_first_input_schema_is_one_change_and_equal_versions_name_their_package() {
    let dir = temp_dir();
    let (old, new) = filesystem_releases(dir.path());
    let (a, b) = (dir.path().join("snap-old"), dir.path().join("snap-new"));
    snapshot(&old, &a, &[]);
    snapshot(&new, &b, &[]);
    let out = mcpeval(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    let table = stdout(&out);
    // Before: `0.2.0 → 0.2.0` and a type_narrowed plus a parameter per property, per tool.
    assert!(
        table.starts_with(
            "contract diff 0.2.0 (@modelcontextprotocol/server-filesystem@2025.3.28) → 0.2.0 \
             (@modelcontextprotocol/server-filesystem@2026.8.31); both report serverInfo version \
             0.2.0: 5 change(s), 2 breaking clients, 5 affecting models"
        ),
        "{table}"
    );
    assert!(
        table.contains("per kind: 3 input_schema_declared, 1 description_changed, 1 title_changed"),
        "{table}"
    );
    assert!(
        table.contains(
            "input schema declared for the first time: 3 parameter(s) (head, path, tail), \
             required: path"
        ),
        "{table}"
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "a new required property breaks clients"
    );
    let (_, d) = diff(&a, &b, dir.path());
    let changes = d["changes"].as_array().unwrap();
    let kinds: Vec<(&str, &str, bool)> = changes
        .iter()
        .filter(|c| c["kind"] == "input_schema_declared")
        .map(|c| {
            let name = c["name"].as_str().unwrap();
            (
                name,
                c["path"].as_str().unwrap(),
                c["breaksClients"] == true,
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("read_file", "inputSchema", true),
            ("read_text_file", "inputSchema", true),
            ("list_directory", "inputSchema", false)
        ],
        "one change per tool, breaking only where a property is required: {d:#}"
    );
    assert!(
        !changes.iter().any(|c| c["kind"] == "type_narrowed"
            || c["kind"].as_str().unwrap().ends_with("parameter_added")),
        "{d:#}"
    );
    assert_eq!(
        d["baseline"]["label"],
        "0.2.0 (@modelcontextprotocol/server-filesystem@2025.3.28)"
    );
}

/// Writes the four lists (no server.json, as another tool's snapshot) into `dir`.
fn lists(dir: &Path, resources: Value) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    for (file, value) in [
        ("tools.json", json!([])),
        ("resources.json", resources),
        ("resource-templates.json", json!([])),
        ("prompts.json", json!([])),
    ] {
        std::fs::write(dir.join(file), value.to_string()).unwrap();
    }
    dir.to_path_buf()
}

#[test]
fn a_hundred_removed_resources_are_one_line_and_every_one_stays_in_diff_json() {
    let dir = temp_dir();
    let resources: Vec<Value> = (1..=100)
        .map(|n| json!({"uri": format!("test://static/resource/{n}"), "name": format!("Resource {n}")}))
        .chain([json!({"uri": "test://other", "name": "Other"})])
        .collect();
    let a = lists(&dir.path().join("a"), Value::Array(resources));
    let b = lists(
        &dir.path().join("b"),
        json!([{"uri": "test://other", "name": "Other"}]),
    );
    let out = mcpeval(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    let table = stdout(&out);
    let removed: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("BREAKING"))
        .collect();
    // Before: 100 lines `BREAKING  resource_removed  resources test://static/resource/N`.
    assert_eq!(removed.len(), 1, "{table}");
    assert!(
        removed[0].contains("100 × resource_removed")
            && removed[0].contains("resources test://static/resource/{1..100}"),
        "{table}"
    );
    assert!(table.contains("per kind: 100 resource_removed"), "{table}");
    let (code, d) = diff(&a, &b, dir.path());
    assert_eq!(code, Some(1));
    assert_eq!(
        d["changes"].as_array().unwrap().len(),
        100,
        "diff.json keeps each change"
    );
}

/// A diff whose 20 changes differ only in a tool's number, and 14 others, each its own line.
fn numbered_diff(dir: &Path) -> PathBuf {
    let side = json!({"label": "1.4.0", "snapshot": "s", "serverInfo": {"version": "1.4.0"}});
    let mut changes: Vec<Value> = (1..=20)
        .map(|n| {
            json!({"list": "tools", "name": format!("tool_{n}"), "path": "description",
                "kind": "description_changed", "breaksClients": false, "affectsModels": true})
        })
        .collect();
    let others =
        ("abcdefghijklm".chars().map(|c| format!("tool_{c}"))).chain(["add_comment".into()]);
    for name in others {
        changes.push(json!({"list": "tools", "name": name, "path": "description",
            "kind": "description_changed", "breaksClients": false, "affectsModels": true}));
    }
    let diff = json!({"baseline": side, "candidate": side, "changes": changes});
    let path = dir.join("diff.json");
    std::fs::write(&path, diff.to_string()).unwrap();
    path
}

#[test]
fn the_trigger_counts_per_kind_and_report_html_shows_the_verdict_first() {
    let dir = temp_dir();
    let diff = numbered_diff(dir.path());
    let run = dir.path().join("run");
    let out = run_pair(
        "demo:1.4.0",
        "demo:1.5.0",
        &run,
        &["--trigger", diff.to_str().unwrap(), "--trials", "1"],
    );
    assert_verdict(&out);
    let console = stdout(&out);
    // Before: `34 change(s) in … affect models:` and a line per change.
    assert!(
        console.contains("34 change(s) in ")
            && console.contains("affect models: 34 description_changed"),
        "{console}"
    );
    assert!(
        console.contains("  … and 3 more line(s): summary.md lists them all"),
        "the console shows 12 of the 15 lines: {console}"
    );
    assert!(
        console.contains("  tools `tool_{1..20}` at `description`: 20 × description_changed"),
        "{console}"
    );
    assert!(!console.contains("tool_7"), "{console}");
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    let at = |needle: &str| {
        html.find(needle)
            .unwrap_or_else(|| panic!("report.html lacks {needle}"))
    };
    assert!(
        at("id=\"verdicts-section\"") < at("id=\"contract\""),
        "the verdict table comes before the contract section"
    );
    let kinds = &html[at("<table class=\"kinds\">")..];
    assert!(
        kinds.contains("<td><code>description_changed</code></td><td class=\"num\">34</td>"),
        "{}",
        &kinds[..400.min(kinds.len())]
    );
    assert!(html.contains("<details class=\"changes\"><summary>the 34 change(s), 15 line(s)"));
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(
        info["trigger_changes"].as_array().unwrap().len(),
        15,
        "{info:#}"
    );
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(
        summary.contains("- tools `add_comment` at `description`: description_changed"),
        "{summary}"
    );
}

#[test]
fn the_deprecations_stage_reads_what_the_tool_list_says() {
    let dir = temp_dir();
    let (old, new) = filesystem_releases(dir.path());
    let stored = dir.path().join("stored");
    snapshot(&old, &stored, &[]);
    let out = dir.path().join("check");
    let output = mcpeval(&[
        "check",
        "--baseline-snapshot",
        stored.to_str().unwrap(),
        "--candidate",
        &new,
        "--stages",
        "deprecations",
        "--out",
        out.to_str().unwrap(),
    ]);
    let console = text(&output);
    // Before: `deprecations: passed …: 0 deprecated feature(s), 0 new`.
    assert!(
        console.contains("1 deprecated feature(s), 1 new (reported only"),
        "{console}"
    );
    assert_eq!(output.status.code(), Some(0), "{console}");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains(
            "  - **new** tool `read_file`: says \"Read File (Deprecated)\", \"DEPRECATED: Use \
             read_text_file instead.\"; use `read_text_file` instead"
        ),
        "{summary}"
    );
    // Marked in the baseline too: found, not new.
    let same = dir.path().join("same");
    snapshot(&new, &dir.path().join("stored-new"), &[]);
    let output = mcpeval(&[
        "check",
        "--baseline-snapshot",
        dir.path().join("stored-new").to_str().unwrap(),
        "--candidate",
        &new,
        "--stages",
        "deprecations",
        "--fail-on-new-deprecations",
        "--out",
        same.to_str().unwrap(),
    ]);
    let console = text(&output);
    assert!(
        console.contains("1 deprecated feature(s), 0 new"),
        "{console}"
    );
    assert_eq!(output.status.code(), Some(0), "{console}");
}

#[test]
fn the_contract_stage_groups_its_lines_and_names_both_releases() {
    let dir = temp_dir();
    let (old, new) = filesystem_releases(dir.path());
    let out = dir.path().join("check");
    let output = mcpeval(&[
        "check",
        "--baseline",
        &old,
        "--candidate",
        &new,
        "--stages",
        "contract",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains(
            "  - per kind: 3 input_schema_declared, 1 description_changed, 1 title_changed"
        ),
        "{summary}"
    );
    assert!(
        summary.contains(
            "(0.2.0 (@modelcontextprotocol/server-filesystem@2025.3.28) → 0.2.0 \
             (@modelcontextprotocol/server-filesystem@2026.8.31); both report serverInfo \
             version 0.2.0)"
        ),
        "{summary}"
    );
    let lines = summary
        .lines()
        .filter(|l| l.contains("input_schema_declared `"))
        .count();
    assert_eq!(lines, 3, "one line per tool, not per property: {summary}");
}
