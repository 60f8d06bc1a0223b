//! Gemini CLI as an app host, for real: `mcpeval run --host …` drives the Gemini CLI that
//! `scripts/install-host-apps` installs into `.apps/`, pointed at `mcpeval sim-server`'s Gemini
//! API on 127.0.0.1, against the embedded demo servers (which Gemini CLI starts itself, per
//! trial, from its settings.json).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;

const GEMINI: &str = ".apps/gemini-cli-0.61.0/node_modules/.bin/gemini";
const KEY: &str = "AIzaSy-test-0a1b2c3d4e5f6a7b8c9d";

/// The baseline's tools, as the host's allow-list names them.
const BASELINE_TOOLS: [&str; 6] = [
    "add_comment",
    "create_issue",
    "get_issue",
    "list_projects",
    "search_issues",
    "update_issue",
];

fn gemini() -> PathBuf {
    installed_app(GEMINI)
}

/// `mcpeval run --config CONFIG --suite SUITE --trials N --out OUT` with the sim-server as the
/// Gemini endpoint and a key in the environment.
fn run(config: &str, suite: &Path, trials: &str, dir: &Path, sim: &str) -> (PathBuf, String) {
    let config_path = dir.join("config.toml");
    std::fs::write(&config_path, config).unwrap();
    let out_dir = dir.join("run");
    // mcpeval's own HOME: nothing of a trial (nor of `gemini --version`) may land there.
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = config_command(&config_path, suite, trials, &out_dir)
        .env("HOME", &home)
        .env("GOOGLE_GEMINI_BASE_URL", format!("http://{sim}"))
        .env("GEMINI_API_KEY", KEY)
        .env_remove("GOOGLE_API_KEY")
        .output()
        .unwrap();
    assert_verdict(&out);
    let left: Vec<_> = std::fs::read_dir(&home).unwrap().collect();
    assert!(
        left.is_empty(),
        "the app wrote into mcpeval's HOME: {left:?}"
    );
    (out_dir, text(&out))
}

/// No file of the run holds the key.
fn assert_no_key(out_dir: &Path) {
    for file in files_under(out_dir) {
        let bytes = std::fs::read(&file).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(KEY), "{} holds the key", file.display());
    }
}

#[test]
fn gemini_cli_runs_the_trials_and_a_renamed_tool_is_refused_by_its_policy() {
    let program = gemini();
    let sim = spawn_listening(&["sim-server", "--addr", "127.0.0.1:0"], false);
    let dir = temp_dir();
    let suite = dir.path().join("suite.yaml");
    std::fs::write(&suite, APP_SUITE).unwrap();
    // The allow-list names the baseline's tools; 2.0.0 renames get_issue to fetch_issue.
    let config = format!(
        r#"
baseline = "demo:1.4.0"
candidate = "demo:2.0.0"
hosts = ["gm"]
concurrency = 2
retries = 0
[profile]
server_label = "tracker"
[host.gm]
app = "gemini-cli"
model = "sim"
program = {program:?}
allowed_tools = {allowed:?}
timeout = 120
"#,
        program = program.display().to_string(),
        allowed = BASELINE_TOOLS,
    );
    let (out_dir, output) = run(&config, &suite, "2", dir.path(), &sim.addr);
    let episodes = episodes(&out_dir);
    assert_eq!(episodes.len(), 12, "{output}");
    for e in &episodes {
        assert_eq!(e.infra_error, None, "{e:?}");
        assert_eq!(e.model, "gemini-cli:sim");
        // Gemini CLI's own prompt and tools are thousands of tokens before the server's.
        assert!(e.input_tokens > 5_000 && e.output_tokens > 0, "{e:?}");
        let app = e.app.as_ref().expect("app facts");
        assert_eq!(app.app, "gemini-cli");
        assert_eq!(app.version.as_deref(), Some("0.61.0"));
        assert!(e.final_answer.is_some(), "{e:?}");
    }
    let of = |task: &'static str, side: &'static str| {
        episodes
            .iter()
            .filter(move |e| e.task_id == task && e.side.as_str() == side)
    };
    for side in ["baseline", "candidate"] {
        for e in of("search-crash-zephyr", side) {
            // 2.0.0 also has 1.5.0's `find_issues`, outside the baseline's list: refused where
            // chosen.
            assert!(!e.calls.is_empty(), "{e:?}");
            for c in &e.calls {
                let denied = c.error_kind.as_deref() == Some("permission");
                assert_eq!(denied, c.tool != "search_issues", "{e:?}");
            }
        }
        for e in of("capital-of-france", side) {
            assert_eq!(e.tool_calls, 0, "{e:?}");
            assert!(e.success, "{e:?}");
            assert_eq!(e.turns, 1, "{e:?}");
        }
    }
    for e in of("search-crash-zephyr", "baseline") {
        assert_eq!(e.tools_called, "search_issues", "{e:?}");
        assert!(e.success, "{e:?}");
        assert!(e.calls[0].result.contains("crash"), "{:?}", e.calls[0]);
        assert!(!e.calls[0].is_error);
        assert_eq!(e.turns, 2, "{e:?}");
    }
    for e in of("show-issue-3", "baseline") {
        assert_eq!(e.tools_called, "get_issue", "{e:?}");
        assert!(e.success && e.app.as_ref().unwrap().permission_denials.is_empty());
    }
    // The candidate's renamed tool is shown to the model but refused by the policy written for
    // the baseline's names: a permission denial and a failed task.
    for e in of("show-issue-3", "candidate") {
        assert!(!e.success, "{e:?}");
        let denials = &e.app.as_ref().unwrap().permission_denials;
        assert!(denials.iter().any(|d| d == "fetch_issue"), "{e:?}");
        assert!(e
            .calls
            .iter()
            .any(|c| c.tool == "fetch_issue" && c.error_kind.as_deref() == Some("permission")));
    }
    // run.json records the app; no file of the run holds the key.
    let info = std::fs::read_to_string(out_dir.join("run.json")).unwrap();
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    let host = &info["hosts"][0];
    assert_eq!(host["model"], "gemini-cli:sim");
    assert!(
        host["version"].as_str().unwrap().contains("0.61.0"),
        "{host}"
    );
    assert_eq!(host["program"][0], program.display().to_string());
    // The summary names the app, its version and the model.
    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(
        summary.contains("| hosts | `gm` (app `gemini-cli` `0.61.0`, model `sim`) |"),
        "{summary}"
    );
    assert_no_key(&out_dir);
}

#[test]
fn gemini_cli_grades_the_demo_as_the_in_process_sim_does() {
    let program = gemini();
    let sim = spawn_listening(&["sim-server", "--addr", "127.0.0.1:0"], false);
    let dir = temp_dir();
    // Both hosts in one run: the same tasks, sides and seeds.
    let config = format!(
        r#"
baseline = "demo:1.4.0"
candidate = "demo:1.5.0"
hosts = ["gm", "sim"]
concurrency = 2
retries = 0
[profile]
server_label = "tracker"
[host.gm]
app = "gemini-cli"
model = "sim"
program = {program:?}
builtin_tools = false
timeout = 120
"#,
        program = program.display().to_string(),
    );
    let suite = repo_path("tasks/demo");
    let (out_dir, output) = run(&config, &suite, "1", dir.path(), &sim.addr);
    let episodes = episodes(&out_dir);
    let key = |e: &mcpeval::episode::Episode| (e.task_id.clone(), e.side.as_str(), e.trial);
    let mut sim_grades = BTreeMap::new();
    let mut app = Vec::new();
    for e in &episodes {
        if e.model == "sim" {
            sim_grades.insert(key(e), (e.success, e.tools_called.clone()));
        } else {
            assert_eq!(e.model, "gemini-cli:sim");
            assert_eq!(e.infra_error, None, "{e:?}");
            app.push(e);
        }
    }
    assert!(app.len() >= 30, "{} app episodes\n{output}", app.len());
    assert_eq!(app.len(), sim_grades.len());
    let mut same_grade = 0;
    let mut same_tools = 0;
    let mut differ = Vec::new();
    for e in &app {
        let (success, tools) = &sim_grades[&key(e)];
        if *success == e.success {
            same_grade += 1;
        } else {
            differ.push(format!(
                "{} {} #{}: sim {success} via `{tools}`, gemini-cli {} via `{}`",
                e.task_id,
                e.side.as_str(),
                e.trial,
                e.success,
                e.tools_called
            ));
        }
        if *tools == e.tools_called {
            same_tools += 1;
        }
    }
    println!(
        "gemini-cli:sim grades {same_grade} of {} trials as the sim host does, with the same \
         tools in {same_tools}; differing: {differ:#?}",
        app.len()
    );
    // Gemini CLI passes the request, the server's instructions and its tools through, and
    // the server's results back: the sim decides as it does in-process.
    assert_eq!(same_grade, app.len(), "{differ:#?}");
    assert_no_key(&out_dir);
}

/// Gemini CLI 0.61 writes an HTTP server as `httpUrl` and connects, but its MCP SDK parses
/// every SSE event's data as JSON, and rmcp 3.11's Streamable HTTP server (the demo's) starts each
/// stream with a priming event whose data is empty (`data: \nid: 0\nretry: 3000`): the
/// connection fails, Gemini CLI goes on without the server's tools and says only "MCP issues
/// detected" on stderr. Every trial is then an infrastructure error, not a failed task, and the
/// run goes on.
#[test]
fn gemini_cli_against_rmcps_http_server_is_an_infrastructure_error_not_a_failed_task() {
    let program = gemini();
    let sim = spawn_listening(&["sim-server", "--addr", "127.0.0.1:0"], false);
    let base = spawn_listening(
        &["demo-server", "--release", "1.4.0", "--http", "127.0.0.1:0"],
        true,
    );
    let cand = spawn_listening(
        &["demo-server", "--release", "1.5.0", "--http", "127.0.0.1:0"],
        true,
    );
    let dir = temp_dir();
    let suite = dir.path().join("suite.yaml");
    std::fs::write(&suite, APP_SUITE).unwrap();
    let config = format!(
        r#"
baseline = "http://{base}/mcp"
candidate = "http://{cand}/mcp"
allow_writes = true   # HTTP servers are never exempt from the write gate: these are the test's
hosts = ["gm"]
concurrency = 2
retries = 0
[profile]
server_label = "tracker"
[host.gm]
app = "gemini-cli"
model = "sim"
program = {program:?}
builtin_tools = false
timeout = 120
"#,
        base = base.addr,
        cand = cand.addr,
        program = program.display().to_string(),
    );
    let config_path = dir.path().join("config.toml");
    std::fs::write(&config_path, config).unwrap();
    let out_dir = dir.path().join("run");
    let out = config_command(&config_path, &suite, "1", &out_dir)
        .env("GOOGLE_GEMINI_BASE_URL", format!("http://{}", sim.addr))
        .env("GEMINI_API_KEY", KEY)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let episodes = episodes(&out_dir);
    assert_eq!(episodes.len(), 6, "{}", text(&out));
    for e in &episodes {
        let error = e.infra_error.as_deref().unwrap_or_default();
        assert!(error.contains("could not use the server"), "{e:?}");
        assert!(error.contains("MCP issues detected"), "{e:?}");
        assert_eq!(e.tool_calls, 0, "{e:?}");
    }
    assert_no_key(&out_dir);
}

#[test]
fn a_gemini_cli_that_crashes_or_hangs_is_an_infrastructure_error() {
    let dir = temp_dir();
    std::fs::write(dir.path().join("suite.yaml"), APP_SUITE).unwrap();
    let config_path = dir.path().join("config.toml");
    // A "Gemini CLI" that answers --version and then fails or sleeps.
    let script = dir.path().join("fake-gemini");
    write_script(
        &script,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '9.9.9'; exit 0; fi\n\
         echo 'boom: no model' >&2\nif [ -n \"$HANG\" ]; then sleep 30; fi\nexit 3\n",
    );
    for (hang, expect) in [("", "no `result` event"), ("1", "timeout")] {
        let config = format!(
            "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.4.0\"\nhosts = [\"gm\"]\nretries = 0\n\
             [host.gm]\napp = \"gemini-cli\"\nprogram = {:?}\ntimeout = 1\nenv = {{ HANG = \"{hang}\" }}\n",
            script.display().to_string()
        );
        std::fs::write(&config_path, config).unwrap();
        let out_dir = dir.path().join(format!("run{hang}"));
        let out = config_command(&config_path, &dir.path().join("suite.yaml"), "1", &out_dir)
            .env("GEMINI_API_KEY", KEY)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3), "{}", text(&out));
        let episodes = episodes(&out_dir);
        // The run goes on: every trial has its episode.
        assert_eq!(episodes.len(), 6);
        for e in &episodes {
            let error = e.infra_error.as_deref().unwrap();
            assert!(error.starts_with("gemini-cli"), "{error}");
            assert!(error.contains(expect), "{error}");
            assert!(error.contains("boom: no model"), "{error}");
        }
        assert_no_key(&out_dir);
    }
}
