//! Claude Code as an app host, for real: `mcpeval run --host …` drives the Claude Code that
//! `scripts/install-host-apps` installs into `.apps/`, pointed at `mcpeval sim-server` on
//! 127.0.0.1, against the embedded demo servers (which Claude Code starts itself, per trial).

use crate::common;

use std::path::PathBuf;

use common::*;

const CLAUDE: &str = ".apps/claude-code-2.1.332/node_modules/.bin/claude";
const KEY: &str = "sk-ant-test-9f8e7d6c5b4a";

fn claude() -> PathBuf {
    installed_app(CLAUDE)
}

#[test]
fn claude_code_runs_the_trials_and_a_renamed_tool_falls_out_of_its_allow_list() {
    let program = claude();
    let sim = spawn_listening(&["sim-server", "--addr", "127.0.0.1:0"], false);
    let dir = temp_dir();
    std::fs::write(dir.path().join("suite.yaml"), APP_SUITE).unwrap();
    // The allow-list names the baseline's tools; 2.0.0 renames get_issue to fetch_issue.
    let config = format!(
        r#"
baseline = "demo:1.4.0"
candidate = "demo:2.0.0"
hosts = ["cc"]
concurrency = 2
retries = 0
[profile]
server_label = "tracker"
[host.cc]
app = "claude-code"
model = "sim"
program = {program:?}
builtin_tools = false
env = {{ ENABLE_TOOL_SEARCH = "false" }}
allowed_tools = ["add_comment", "create_issue", "get_issue", "list_projects", "search_issues",
                 "update_issue"]
timeout = 120
"#,
        program = program.display().to_string()
    );
    let config_path = dir.path().join("config.toml");
    std::fs::write(&config_path, config).unwrap();
    let out_dir = dir.path().join("run");
    let out = config_command(&config_path, &dir.path().join("suite.yaml"), "2", &out_dir)
        .env("ANTHROPIC_BASE_URL", format!("http://{}", sim.addr))
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .unwrap();
    assert_verdict(&out);
    let episodes = episodes(&out_dir);
    assert_eq!(episodes.len(), 12, "{}", text(&out));
    for e in &episodes {
        assert_eq!(e.infra_error, None, "{e:?}");
        assert_eq!(e.model, "claude-code:sim");
        assert!(e.input_tokens > 1000 && e.output_tokens > 0, "{e:?}");
        let app = e.app.as_ref().expect("app facts");
        assert_eq!(app.version.as_deref(), Some("2.1.332"));
        assert!(app.cost_usd.is_some());
    }
    let of = |task: &'static str, side: &'static str| {
        episodes
            .iter()
            .filter(move |e| e.task_id == task && e.side.as_str() == side)
    };
    for e in of("search-crash-zephyr", "baseline") {
        assert_eq!(e.tools_called, "search_issues", "{e:?}");
        assert!(e.success, "{e:?}");
        assert!(e.calls[0].result.contains("crash"), "{:?}", e.calls[0]);
    }
    // 2.0.0 also has 1.5.0's `find_issues`, outside the baseline's list: refused where chosen.
    for e in of("search-crash-zephyr", "candidate") {
        for c in &e.calls {
            let denied = c.error_kind.as_deref() == Some("permission");
            assert_eq!(denied, c.tool != "search_issues", "{e:?}");
        }
    }
    for side in ["baseline", "candidate"] {
        for e in of("capital-of-france", side) {
            assert_eq!(e.tool_calls, 0, "{e:?}");
            assert!(e.success, "{e:?}");
        }
    }
    for e in of("show-issue-3", "baseline") {
        assert_eq!(e.tools_called, "get_issue", "{e:?}");
        assert!(e.success && e.app.as_ref().unwrap().permission_denials.is_empty());
    }
    // The candidate's renamed tool is refused by the rule written for the baseline.
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
    assert_eq!(host["model"], "claude-code:sim");
    assert!(
        host["version"].as_str().unwrap().contains("2.1.332"),
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
fn claude_code_reaches_streamable_http_servers_by_their_url() {
    let program = claude();
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
    std::fs::write(dir.path().join("suite.yaml"), APP_SUITE).unwrap();
    let config = format!(
        r#"
baseline = "http://{base}/mcp"
candidate = "http://{cand}/mcp"
allow_writes = true   # HTTP servers are never exempt from the write gate: these are the test's
hosts = ["cc"]
concurrency = 2
retries = 0
[profile]
server_label = "tracker"
[host.cc]
app = "claude-code"
model = "sim"
program = {program:?}
builtin_tools = false
env = {{ ENABLE_TOOL_SEARCH = "false" }}
timeout = 120
"#,
        base = base.addr,
        cand = cand.addr,
        program = program.display().to_string()
    );
    let config_path = dir.path().join("config.toml");
    std::fs::write(&config_path, config).unwrap();
    let out_dir = dir.path().join("run");
    let out = config_command(&config_path, &dir.path().join("suite.yaml"), "1", &out_dir)
        .env("ANTHROPIC_BASE_URL", format!("http://{}", sim.addr))
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .unwrap();
    assert_verdict(&out);
    let episodes = episodes(&out_dir);
    assert_eq!(episodes.len(), 6, "{}", text(&out));
    // The app connected to the running servers itself: their tools were called and answered.
    for e in &episodes {
        assert_eq!(e.infra_error, None, "{e:?}");
        // 1.5.0 answers the search with its new `find_issues`: a regression, not a failure to
        // reach the server.
        let baseline = e.side.as_str() == "baseline";
        assert!(e.success || !baseline, "{e:?}");
        match e.task_id.as_str() {
            "search-crash-zephyr" => assert!(e.calls[0].result.contains("crash"), "{e:?}"),
            "show-issue-3" => {
                assert!(e.success, "{e:?}");
                assert_eq!(e.tools_called, "get_issue", "{e:?}");
            }
            _ => assert_eq!(e.tool_calls, 0, "{e:?}"),
        }
        assert!(e.calls.iter().all(|c| !c.is_error), "{e:?}");
    }
}

#[test]
fn an_app_that_crashes_or_hangs_is_an_infrastructure_error() {
    let dir = temp_dir();
    // A "Claude Code" that answers --version and then fails or sleeps: `false` exits 1 at once.
    let script = dir.path().join("fake-app");
    write_script(
        &script,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '9.9.9 (Claude Code)'; exit 0; fi\n\
         echo 'boom: no model' >&2\nif [ -n \"$HANG\" ]; then sleep 30; fi\nexit 3\n",
    );
    std::fs::write(dir.path().join("suite.yaml"), APP_SUITE).unwrap();
    for (hang, expect) in [("", "no `result` event"), ("1", "timeout")] {
        let config = format!(
            "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.4.0\"\nhosts = [\"cc\"]\nretries = 0\n\
             [host.cc]\napp = \"claude-code\"\nprogram = {:?}\ntimeout = 1\nenv = {{ HANG = \"{hang}\" }}\n",
            script.display().to_string()
        );
        let config_path = dir.path().join("config.toml");
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
