//! Codex CLI as an app host, for real: `mcpeval run --host …` drives the Codex that
//! `scripts/install-host-apps` installs into `.apps/`, pointed at `mcpeval sim-server`'s
//! Responses API on 127.0.0.1, against the embedded demo servers (which Codex starts itself,
//! per trial, from its config.toml).

use crate::common;

use std::path::PathBuf;

use common::*;

const CODEX: &str = ".apps/codex-0.171.0/node_modules/.bin/codex";
const KEY: &str = "sk-proj-test-1a2b3c4d5e6f";

/// The baseline's tools, as the host's allow-list names them.
const BASELINE_TOOLS: [&str; 6] = [
    "add_comment",
    "create_issue",
    "get_issue",
    "list_projects",
    "search_issues",
    "update_issue",
];

fn codex() -> PathBuf {
    installed_app(CODEX)
}

#[test]
fn codex_runs_the_trials_and_a_renamed_tool_falls_out_of_its_enabled_tools() {
    let program = codex();
    let sim = spawn_listening(&["sim-server", "--addr", "127.0.0.1:0"], false);
    let dir = temp_dir();
    std::fs::write(dir.path().join("suite.yaml"), APP_SUITE).unwrap();
    // The allow-list names the baseline's tools; 2.0.0 renames get_issue to fetch_issue.
    let config = format!(
        r#"
baseline = "demo:1.4.0"
candidate = "demo:2.0.0"
hosts = ["cx"]
concurrency = 2
retries = 0
[profile]
server_label = "tracker"
[host.cx]
app = "codex"
model = "sim"
program = {program:?}
allowed_tools = {allowed:?}
timeout = 120
"#,
        program = program.display().to_string(),
        allowed = BASELINE_TOOLS,
    );
    let config_path = dir.path().join("config.toml");
    std::fs::write(&config_path, config).unwrap();
    let out_dir = dir.path().join("run");
    let out = config_command(&config_path, &dir.path().join("suite.yaml"), "2", &out_dir)
        .env("OPENAI_BASE_URL", format!("http://{}/v1", sim.addr))
        .env("OPENAI_API_KEY", KEY)
        .output()
        .unwrap();
    assert_verdict(&out);
    let episodes = episodes(&out_dir);
    assert_eq!(episodes.len(), 12, "{}", text(&out));
    for e in &episodes {
        assert_eq!(e.infra_error, None, "{e:?}");
        assert_eq!(e.model, "codex:sim");
        // Codex's own prompt and tools are ~13k tokens before the server's.
        assert!(e.input_tokens > 10_000 && e.output_tokens > 0, "{e:?}");
        let app = e.app.as_ref().expect("app facts");
        assert_eq!(app.app, "codex");
        assert_eq!(app.version.as_deref(), Some("0.171.0"));
        // Every call is a server tool, by its bare name, inside the allow-list.
        for c in &e.calls {
            assert!(BASELINE_TOOLS.contains(&c.tool.as_str()), "{e:?}");
        }
    }
    let of = |task: &'static str, side: &'static str| {
        episodes
            .iter()
            .filter(move |e| e.task_id == task && e.side.as_str() == side)
    };
    for side in ["baseline", "candidate"] {
        for e in of("search-crash-zephyr", side) {
            assert_eq!(e.tools_called, "search_issues", "{e:?}");
            assert!(e.success, "{e:?}");
            assert!(e.calls[0].result.contains("crash"), "{:?}", e.calls[0]);
            assert!(!e.calls[0].is_error);
            assert_eq!(e.turns, 2, "{e:?}");
        }
        for e in of("capital-of-france", side) {
            assert_eq!(e.tool_calls, 0, "{e:?}");
            assert!(e.success, "{e:?}");
        }
    }
    for e in of("show-issue-3", "baseline") {
        assert_eq!(e.tools_called, "get_issue", "{e:?}");
        assert!(e.success, "{e:?}");
    }
    // The candidate's renamed tool is not in `enabled_tools`: Codex hides it from the model
    // (no denial to record), so the lookup fails.
    for e in of("show-issue-3", "candidate") {
        assert!(!e.success, "{e:?}");
        assert!(e.calls.iter().all(|c| c.tool != "fetch_issue"), "{e:?}");
    }
    // run.json records the app; no file of the run holds the key.
    let info = std::fs::read_to_string(out_dir.join("run.json")).unwrap();
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    let host = &info["hosts"][0];
    assert_eq!(host["model"], "codex:sim");
    assert!(
        host["version"].as_str().unwrap().contains("0.171.0"),
        "{host}"
    );
    assert_eq!(host["program"][0], program.display().to_string());
    for file in files_under(&out_dir) {
        let bytes = std::fs::read(&file).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(KEY), "{} holds the key", file.display());
    }
}

#[test]
fn a_codex_that_crashes_or_hangs_is_an_infrastructure_error() {
    let dir = temp_dir();
    std::fs::write(dir.path().join("suite.yaml"), APP_SUITE).unwrap();
    let config_path = dir.path().join("config.toml");
    // A "Codex" that answers --version and then fails or sleeps.
    let script = dir.path().join("fake-codex");
    write_script(
        &script,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'codex-cli 9.9.9'; exit 0; fi\n\
         echo 'boom: no model' >&2\nif [ -n \"$HANG\" ]; then sleep 30; fi\nexit 3\n",
    );
    for (hang, expect) in [("", "no `turn.completed`"), ("1", "timeout")] {
        let config = format!(
            "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.4.0\"\nhosts = [\"cx\"]\nretries = 0\n\
             [host.cx]\napp = \"codex\"\nprogram = {:?}\ntimeout = 1\nenv = {{ HANG = \"{hang}\" }}\n",
            script.display().to_string()
        );
        std::fs::write(&config_path, config).unwrap();
        let out_dir = dir.path().join(format!("run{hang}"));
        let out = config_command(&config_path, &dir.path().join("suite.yaml"), "1", &out_dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3), "{}", text(&out));
        let episodes = episodes(&out_dir);
        assert_eq!(episodes.len(), 6);
        for e in &episodes {
            let error = e.infra_error.as_deref().unwrap();
            assert!(error.contains(expect), "{error}");
            assert!(error.contains("boom: no model"), "{error}");
        }
    }
}
