//! Claude Code as an app host: the `--mcp-config` file for the trial's server, the headless
//! command line (`-p … --output-format stream-json --verbose --strict-mcp-config
//! --allowedTools …`) and its private, telemetry-free environment.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::claude_stream::parse_stream;
use super::process::{AppRun, TrialDir};
use super::settings::{infra, AppHost, AppTrial};
use crate::config::AppKind;
use crate::config::{ServerSpec, Transport};
use crate::episode::TrialOutput;

/// Environment that keeps Claude Code offline except for its model endpoint, and private.
const QUIET: [(&str, &str); 4] = [
    ("DISABLE_TELEMETRY", "1"),
    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
    ("DISABLE_AUTOUPDATER", "1"),
    ("DISABLE_ERROR_REPORTING", "1"),
];

/// Variables of mcpeval's own environment the app gets (everything else stays out: no user
/// setting such as `ANTHROPIC_MODEL` or `CLAUDE_CONFIG_DIR` leaks into a trial).
const PASSED: [&str; 4] = ["PATH", "LANG", "LC_ALL", "TZ"];

/// Claude Code, for one host.
pub struct ClaudeCode<'a> {
    pub host: &'a AppHost,
}

/// The `--mcp-config` document for one server under `label`: a stdio command with its args and
/// env (and cwd), or a Streamable HTTP URL with its headers.
pub fn mcp_config(server: &ServerSpec, label: &str) -> Value {
    let entry = match &server.transport {
        Transport::Stdio { program, args } => {
            let mut entry = json!({"type": "stdio", "command": program, "args": args});
            if !server.env.is_empty() {
                entry["env"] = json!(server.env);
            }
            if let Some(cwd) = &server.cwd {
                entry["cwd"] = json!(cwd);
            }
            entry
        }
        Transport::Http { url } => {
            let mut entry = json!({"type": "http", "url": url});
            if !server.headers.is_empty() {
                entry["headers"] = json!(server.headers);
            }
            entry
        }
    };
    json!({"mcpServers": {label: entry}})
}

/// `--allowedTools`: the host's allow-list (bare tool names as the baseline has them, or `*`)
/// under the app's naming; every tool of the server when the host gives none.
pub fn allowed_tools(allowed: Option<&[String]>, label: &str) -> String {
    match allowed {
        None => format!("mcp__{label}__*"),
        Some(names) => names
            .iter()
            .map(|n| format!("mcp__{label}__{n}"))
            .collect::<Vec<_>>()
            .join(","),
    }
}

impl ClaudeCode<'_> {
    pub async fn run(&self, trial: &AppTrial<'_>) -> TrialOutput {
        let dir = match TrialDir::create(self.host.scratch()) {
            Ok(dir) => dir,
            Err(e) => {
                return infra(
                    AppKind::ClaudeCode,
                    format!("cannot make the trial's directory: {e}"),
                )
            }
        };
        let config_path = dir.root.join("mcp.json");
        let config = mcp_config(trial.server, trial.label);
        if let Err(e) = std::fs::write(&config_path, config.to_string()) {
            return infra(
                AppKind::ClaudeCode,
                format!("cannot write {}: {e}", config_path.display()),
            );
        }
        let run = AppRun {
            program: &self.host.settings.program,
            args: self.args(trial, &config_path.to_string_lossy()),
            env: self.env(trial, &dir),
            cwd: dir.work(),
            timeout: self.host.timeout(),
        };
        let finished = match run.run().await {
            Ok(f) => f,
            Err(e) => return infra(AppKind::ClaudeCode, e),
        };
        parse_stream(&finished, trial.label, trial.prompt)
    }

    fn args(&self, trial: &AppTrial<'_>, config_path: &str) -> Vec<String> {
        let settings = &self.host.settings;
        let mut args: Vec<String> = vec![
            "-p".into(),
            trial.prompt.into(),
            "--output-format".into(),
            "stream-json".into(),
            "--verbose".into(),
            "--mcp-config".into(),
            config_path.into(),
            "--strict-mcp-config".into(),
            "--allowedTools".into(),
            allowed_tools(settings.allowed_tools.as_deref(), trial.label),
            "--max-turns".into(),
            trial.max_turns.to_string(),
        ];
        if let Some(model) = &self.host.model {
            args.extend(["--model".into(), model.clone()]);
        }
        if !settings.builtin_tools {
            args.extend(["--tools".into(), String::new()]);
        }
        args.extend(settings.args.iter().cloned());
        args
    }

    fn env(&self, trial: &AppTrial<'_>, dir: &TrialDir) -> BTreeMap<String, String> {
        let mut env: BTreeMap<String, String> = PASSED
            .iter()
            .filter_map(|k| Some((k.to_string(), std::env::var(k).ok()?)))
            .collect();
        let home = dir.home();
        env.insert("HOME".into(), home.to_string_lossy().into_owned());
        env.insert(
            "CLAUDE_CONFIG_DIR".into(),
            home.join(".claude").to_string_lossy().into_owned(),
        );
        for (k, v) in QUIET {
            env.insert(k.into(), v.into());
        }
        for (ours, theirs) in [
            (&self.host.base_url_env, "ANTHROPIC_BASE_URL"),
            (&self.host.api_key_env, "ANTHROPIC_API_KEY"),
        ] {
            if let Ok(value) = std::env::var(ours) {
                env.insert(theirs.into(), value);
            }
        }
        env.insert(
            "ANTHROPIC_CUSTOM_HEADERS".into(),
            format!("{}: {}", crate::host::SEED_HEADER, trial.seed),
        );
        env.insert(
            "MCP_TIMEOUT".into(),
            trial.server.startup_timeout.as_millis().to_string(),
        );
        env.insert(
            "MCP_TOOL_TIMEOUT".into(),
            trial.server.call_timeout.as_millis().to_string(),
        );
        for (k, v) in &self.host.settings.env {
            let value = crate::config::expand_value(v).unwrap_or_else(|_| v.clone());
            env.insert(k.clone(), value);
        }
        env
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stdio_server_keeps_its_command_args_and_env() {
        let mut spec = ServerSpec::parse("baseline", "node 'my dir/index.js' --flag").unwrap();
        spec.env.insert("TOKEN".into(), "t0k".into());
        let config = mcp_config(&spec, "tracker");
        assert_eq!(
            config,
            json!({"mcpServers": {"tracker": {"type": "stdio", "command": "node",
                "args": ["my dir/index.js", "--flag"], "env": {"TOKEN": "t0k"}}}})
        );
    }

    #[test]
    fn an_http_server_keeps_its_url_and_headers() {
        let mut spec = ServerSpec::parse("candidate", "http://127.0.0.1:3002/mcp").unwrap();
        spec.headers
            .insert("Authorization".into(), "Bearer x".into());
        let config = mcp_config(&spec, "tracker");
        assert_eq!(
            config,
            json!({"mcpServers": {"tracker": {"type": "http",
                "url": "http://127.0.0.1:3002/mcp", "headers": {"Authorization": "Bearer x"}}}})
        );
    }

    #[test]
    fn allow_lists_name_tools_the_way_the_app_does() {
        assert_eq!(allowed_tools(None, "tracker"), "mcp__tracker__*");
        let names = ["search_issues".to_owned(), "get_issue".to_owned()];
        assert_eq!(
            allowed_tools(Some(&names), "tracker"),
            "mcp__tracker__search_issues,mcp__tracker__get_issue"
        );
        assert_eq!(allowed_tools(Some(&["*".to_owned()]), "t"), "mcp__t__*");
    }
}
