//! Overlays through the real binary: `overlay:FILE+SPEC` over the demo server changes exactly
//! what the file says (snapshot diff), shows in a run's verdict table, renames and hides tools
//! for a run's model, and a bad file is refused with its file and line.

use crate::common;

use std::path::Path;

use common::*;
use serde_json::Value;

/// The 1.5.0 wording of `search_issues` over 1.4.0, which makes the simulated model pick it less.
const VAGUE: &str = "overlay: 1\ntools:\n  search_issues:\n    description: Looks up issues.\n";

/// `mcpeval run` of the demo's lookup tasks on the simulated model, 1.4.0 against `candidate`.
fn run_lookups(candidate: &str, out: &Path, trials: &str) -> std::process::Output {
    mcpeval(&[
        "run",
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        candidate,
        "--host",
        "sim",
        "--suite",
        "tasks/demo/lookup.yaml",
        "--trials",
        trials,
        "--out",
        out.to_str().unwrap(),
    ])
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn an_overlay_diffs_against_its_base_as_the_file_says() {
    let dir = temp_dir();
    let file = write(dir.path(), "vague.yaml", VAGUE);
    let (a, b) = (dir.path().join("base"), dir.path().join("over"));
    snapshot("demo:1.4.0", &a, &[]);
    snapshot(&format!("overlay:{file}+demo:1.4.0"), &b, &[]);
    let (code, changed) = diff(&a, &b, dir.path());
    assert_eq!(code, Some(0), "{changed:#}");
    let changes = changed["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changed:#}");
    let change = &changes[0];
    assert_eq!(
        (
            &change["list"],
            &change["name"],
            &change["path"],
            &change["kind"]
        ),
        (
            &Value::from("tools"),
            &Value::from("search_issues"),
            &Value::from("description"),
            &Value::from("description_changed")
        )
    );
    assert_eq!(change["after"], "Looks up issues.");
    // The same overlay from a config: `[servers.NAME] overlay` over another server by name.
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        "[servers.old]\ncommand = \"demo:1.4.0\"\n\n[servers.worded]\noverlay = \"vague.yaml\"\nbase = \"old\"\n",
    )
    .unwrap();
    let c = dir.path().join("config");
    snapshot("worded", &c, &["--config", config.to_str().unwrap()]);
    let (_, again) = diff(&b, &c, dir.path());
    assert_eq!(again["changes"].as_array().unwrap().len(), 0, "{again:#}");
}

#[test]
fn a_run_against_an_overlay_shows_the_wording_in_the_verdict_table() {
    let dir = temp_dir();
    let file = write(dir.path(), "vague.yaml", VAGUE);
    let out = dir.path().join("run");
    let output = run_lookups(&format!("overlay:{file}+demo:1.4.0"), &out, "10");
    assert_verdict(&output);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let row = stdout
        .lines()
        .find(|l| l.starts_with("closed-refunds-hermes"))
        .unwrap_or_else(|| panic!("{}", text(&output)));
    let success: Vec<&str> = row.split_whitespace().skip(2).take(3).collect();
    assert_eq!(success[1], "→", "{row}");
    assert_ne!(success[0], success[2], "the wording changed nothing: {row}");
}

#[test]
fn renamed_tools_reach_the_base_and_hidden_ones_are_gone() {
    let dir = temp_dir();
    let file = write(
        dir.path(),
        "rename.yaml",
        "overlay: 1\ntools:\n  get_issue:\n    rename: fetch_issue\n  add_comment: {hide: true}\n",
    );
    let snap = dir.path().join("snap");
    snapshot(&format!("overlay:{file}+demo:1.4.0"), &snap, &[]);
    let tools: Value =
        serde_json::from_str(&std::fs::read_to_string(snap.join("tools.json")).unwrap()).unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"fetch_issue"), "{names:?}");
    assert!(!names.contains(&"get_issue") && !names.contains(&"add_comment"));
    let out = dir.path().join("run");
    let output = run_lookups(&format!("overlay:{file}+demo:1.4.0"), &out, "2");
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        text(&output)
    );
    let candidate: Vec<_> = episodes(&out)
        .into_iter()
        .filter(|e| e.side.to_string() == "candidate")
        .collect();
    let fetched: Vec<_> = (candidate.iter())
        .filter(|e| e.tools_called.split(',').any(|t| t == "fetch_issue"))
        .collect();
    assert!(!fetched.is_empty(), "no call of the renamed tool");
    // The renamed tool answered as get_issue does: no tool error, no infrastructure error.
    for e in &fetched {
        assert_eq!((e.tool_errors, &e.infra_error), (0, &None), "{e:?}");
    }
    assert!(candidate.iter().all(|e| !e
        .tools_called
        .split(',')
        .any(|t| t == "get_issue" || t == "add_comment")));
}

#[test]
fn a_bad_overlay_is_refused_with_its_file_and_line() {
    let dir = temp_dir();
    for (yaml, line, says) in [
        ("overlay: 2\n", 1, "unsupported overlay version 2"),
        (
            "overlay: 1\ntools:\n  search_issues:\n    descripton: x\n",
            4,
            "descripton",
        ),
        (
            "overlay: 1\ntools:\n  search_issues: {}\n  no_such_tool:\n    description: x\n",
            5,
            "tool `no_such_tool` is not listed by the base server",
        ),
    ] {
        let file = write(dir.path(), "bad.yaml", yaml);
        let out = mcpeval(&["serve", "--overlay", &file, "--base", "demo:1.4.0"]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&format!("{file}:{line}: ")), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        // As a spec: a file that does not read is refused before any server starts (exit 2);
        // a tool the base does not list shows only once the base lists (the server does not
        // start: exit 3). Either way it says why.
        let spec = format!("overlay:{file}+demo:1.4.0");
        let expected = if line == 5 { 3 } else { 2 };
        let snapshot = mcpeval(&[
            "snapshot",
            "--server",
            &spec,
            "--out",
            dir.path().join("s").to_str().unwrap(),
        ]);
        let run = run_pair(
            "demo:1.4.0",
            &spec,
            &dir.path().join("r"),
            &["--trials", "1"],
        );
        for out in [snapshot, run] {
            assert_eq!(out.status.code(), Some(expected), "{}", text(&out));
            assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("{file}:{line}: ")));
        }
    }
    // A file that is not there is a usage error before any server starts.
    let missing = dir.path().join("missing.yaml");
    let spec = format!("overlay:{}+demo:1.4.0", missing.display());
    let out = mcpeval(&["snapshot", "--server", &spec, "--out", "/nonexistent/never"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not found"));
}

#[test]
fn a_base_that_dies_is_the_sides_server_failure_and_its_env_reaches_it() {
    let dir = temp_dir();
    write(dir.path(), "vague.yaml", VAGUE);
    // The base's env (from its [servers.NAME]) makes the demo exit at its first tool call.
    let config = write(
        dir.path(),
        "crash.toml",
        "baseline = \"demo:1.4.0\"\ncandidate = \"worded\"\n\
         [servers.crashy]\ncommand = \"demo:1.4.0\"\nenv = { MCPEVAL_DEMO_CRASH_AFTER = \"0\" }\n\
         [servers.worded]\noverlay = \"vague.yaml\"\nbase = \"crashy\"\n",
    );
    let out = dir.path().join("run");
    let output = mcpeval(&[
        "run",
        "--config",
        &config,
        "--host",
        "sim",
        "--suite",
        "tasks/demo/lookup.yaml",
        "--trials",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        text(&output)
    );
    let eps = episodes(&out);
    let failed: Vec<_> = (eps.iter())
        .filter(|e| e.side.as_str() == "candidate" && e.server_error.is_some())
        .collect();
    assert!(!failed.is_empty(), "{}", text(&output));
    let said = failed[0].server_error.as_deref().unwrap();
    assert!(
        said.contains("crashing on purpose") && said.contains("the base server did not answer"),
        "{said}"
    );
    assert!(eps
        .iter()
        .filter(|e| e.side.as_str() == "baseline")
        .all(|e| e.server_error.is_none()));
}
