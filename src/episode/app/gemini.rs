//! Gemini CLI as an app host: the trial's private `HOME/.gemini/settings.json` (the side's server
//! under `mcpServers`, telemetry, usage statistics and auto-update off, API-key auth, the task's
//! turn limit), a policy file carrying the host's allow-list, the headless command line
//! (`-p … --output-format stream-json --policy FILE`) and its private environment.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use toml::Table;

use super::gemini_stream::parse_stream;
use super::process::{AppRun, TrialDir};
use super::settings::{infra, AppHost, AppTrial};
use crate::config::AppKind;
use crate::config::{ServerSpec, Transport};
use crate::episode::TrialOutput;

/// Variables of mcpeval's own environment the app gets (no user `GEMINI_*` or `GOOGLE_*`
/// setting leaks into a trial).
const PASSED: [&str; 4] = ["PATH", "LANG", "LC_ALL", "TZ"];

/// Gemini CLI's longest function name (`MAX_FUNCTION_NAME_LENGTH` 64, minus one).
const MAX_NAME: usize = 63;

/// Policy priorities, inside the user tier Gemini CLI puts a `--policy` file in (4 + p/1000).
/// Both sit above `tools.core`'s deny-everything-else rule (4.25 − 0.01), which
/// `builtin_tools = false` adds.
const ALLOW_PRIORITY: i64 = 400;
const ASK_PRIORITY: i64 = 300;

/// Gemini CLI, for one host.
pub struct GeminiCli<'a> {
    pub host: &'a AppHost,
}

/// The name Gemini CLI gives a server's tool: `mcp_<label>_<tool>`, every character outside
/// `[A-Za-z0-9_.:-]` replaced by `_`, and names over 63 characters cut to their first and last 30
/// around `...` (its `generateValidName`).
pub fn tool_name(label: &str, tool: &str) -> String {
    let name: String = format!("mcp_{label}_{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.len() > MAX_NAME {
        // ASCII only by now: byte offsets are character offsets.
        format!("{}...{}", &name[..30], &name[name.len() - 30..])
    } else {
        name
    }
}

/// The `mcpServers.<label>` entry: a stdio `command` with `args`, `env` and `cwd`, or a
/// Streamable HTTP `httpUrl` with `headers`; the call timeout (ms); and `trust: true` when every
/// tool is allowed (with an allow-list, the policy file decides).
pub fn server_entry(server: &ServerSpec, trusted: bool) -> Value {
    let mut entry = match &server.transport {
        Transport::Stdio { program, args } => {
            let mut entry = json!({"command": program, "args": args});
            if !server.env.is_empty() {
                entry["env"] = json!(server.env);
            }
            if let Some(cwd) = &server.cwd {
                entry["cwd"] = json!(cwd);
            }
            entry
        }
        Transport::Http { url } => {
            let mut entry = json!({"httpUrl": url});
            if !server.headers.is_empty() {
                entry["headers"] = json!(server.headers);
            }
            entry
        }
    };
    let timeout_ms = u64::try_from(server.call_timeout.as_millis()).unwrap_or(u64::MAX);
    entry["timeout"] = json!(timeout_ms);
    entry["trust"] = json!(trusted);
    entry
}

/// Whether an allow-list lets every tool through (none given, or `*` in it).
fn allows_all(allowed: Option<&[String]>) -> bool {
    allowed.is_none_or(|names| names.iter().any(|n| n == "*"))
}

/// The whole `settings.json` of a trial (Gemini CLI 0.61's schema).
pub fn settings_json(
    server: &ServerSpec,
    label: &str,
    allowed: Option<&[String]>,
    builtin_tools: bool,
    max_turns: u32,
) -> Value {
    let mut settings = json!({
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        // A model request is a turn to Gemini CLI, as to mcpeval; 0 would mean no limit.
        "model": {"maxSessionTurns": max_turns.max(1)},
        "mcpServers": {label: server_entry(server, allows_all(allowed))},
    });
    if !builtin_tools {
        // An empty core list registers none of Gemini CLI's own tools.
        settings["tools"] = json!({"core": []});
    }
    settings
}

/// The policy file: the allowed tools (under Gemini CLI's names) `allow`; with an allow-list,
/// every other tool of the server `ask_user`, which headless Gemini CLI refuses at the call
/// ("requires user confirmation") while still showing the tool to the model, as Claude Code
/// does. (A tool matching no rule would be hidden instead: headless, the default is `deny`.)
pub fn policy_toml(label: &str, allowed: Option<&[String]>) -> String {
    let rule = |tools: Value, decision: &str, priority: i64| {
        let mut t = Table::new();
        let tools = match tools {
            Value::Array(names) => toml::Value::Array(
                names
                    .into_iter()
                    .filter_map(|n| n.as_str().map(toml::Value::from))
                    .collect(),
            ),
            other => toml::Value::from(other.as_str().unwrap_or_default()),
        };
        t.insert("toolName".into(), tools);
        t.insert("decision".into(), decision.into());
        t.insert("priority".into(), priority.into());
        toml::Value::Table(t)
    };
    let every = json!(format!("mcp_{label}_*"));
    let rules = match allowed {
        Some(names) if !allows_all(allowed) => {
            let names: Vec<Value> = names.iter().map(|n| json!(tool_name(label, n))).collect();
            let mut rules = Vec::new();
            if !names.is_empty() {
                rules.push(rule(Value::Array(names), "allow", ALLOW_PRIORITY));
            }
            rules.push(rule(every, "ask_user", ASK_PRIORITY));
            rules
        }
        _ => vec![rule(every, "allow", ALLOW_PRIORITY)],
    };
    let mut root = Table::new();
    root.insert("rule".into(), toml::Value::Array(rules));
    toml::to_string(&root).expect("a table of strings and numbers serializes")
}

impl GeminiCli<'_> {
    pub async fn run(&self, trial: &AppTrial<'_>) -> TrialOutput {
        let dir = match TrialDir::create(self.host.scratch()) {
            Ok(dir) => dir,
            Err(e) => {
                return infra(
                    AppKind::GeminiCli,
                    format!("cannot make the trial's directory: {e}"),
                )
            }
        };
        let settings = &self.host.settings;
        let allowed = settings.allowed_tools.as_deref();
        let gemini_dir = dir.home().join(".gemini");
        let settings_path = gemini_dir.join("settings.json");
        let doc = settings_json(
            trial.server,
            trial.label,
            allowed,
            settings.builtin_tools,
            trial.max_turns,
        );
        let policy_path = dir.root.join("policy.toml");
        let tmp = dir.root.join("tmp");
        let written = std::fs::create_dir_all(&gemini_dir)
            .and_then(|_| std::fs::create_dir_all(&tmp))
            .and_then(|_| std::fs::write(&settings_path, doc.to_string()))
            .and_then(|_| std::fs::write(&policy_path, policy_toml(trial.label, allowed)));
        if let Err(e) = written {
            return infra(
                AppKind::GeminiCli,
                format!("cannot write the trial's settings: {e}"),
            );
        }
        let run = AppRun {
            program: &settings.program,
            args: self.args(trial, &policy_path.to_string_lossy()),
            env: self.env(trial, &dir),
            cwd: dir.work(),
            timeout: self.host.timeout(),
        };
        let finished = match run.run().await {
            Ok(f) => f,
            Err(e) => return infra(AppKind::GeminiCli, e),
        };
        parse_stream(
            &finished,
            trial.label,
            trial.prompt,
            self.host.version.as_deref(),
        )
    }

    /// `-p PROMPT --output-format stream-json --policy FILE [-m MODEL] [args…]`. `-p` takes the
    /// prompt as its value, so a prompt starting with `-` stays one argument.
    fn args(&self, trial: &AppTrial<'_>, policy: &str) -> Vec<String> {
        let mut args: Vec<String> = vec![
            format!("--prompt={}", trial.prompt),
            "--output-format".into(),
            "stream-json".into(),
            "--policy".into(),
            policy.into(),
        ];
        if let Some(model) = &self.host.model {
            args.extend(["-m".into(), model.clone()]);
        }
        args.extend(self.host.settings.args.iter().cloned());
        args
    }

    fn env(&self, trial: &AppTrial<'_>, dir: &TrialDir) -> BTreeMap<String, String> {
        let mut env: BTreeMap<String, String> = PASSED
            .iter()
            .filter_map(|k| Some((k.to_string(), std::env::var(k).ok()?)))
            .collect();
        env.insert("HOME".into(), dir.home().to_string_lossy().into_owned());
        // Gemini CLI writes error reports to the temporary directory: keep them in the trial's.
        env.insert(
            "TMPDIR".into(),
            dir.root.join("tmp").to_string_lossy().into_owned(),
        );
        // The empty, private working directory is trusted (headless, an untrusted folder ends
        // the run at once).
        env.insert("GEMINI_CLI_TRUST_WORKSPACE".into(), "true".into());
        for (ours, theirs) in [
            (&self.host.base_url_env, "GOOGLE_GEMINI_BASE_URL"),
            (&self.host.api_key_env, "GEMINI_API_KEY"),
        ] {
            if let Ok(value) = std::env::var(ours) {
                env.insert(theirs.into(), value);
            }
        }
        env.insert(
            "GEMINI_CLI_CUSTOM_HEADERS".into(),
            format!("{}: {}", crate::host::SEED_HEADER, trial.seed),
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
    fn a_stdio_server_is_written_as_gemini_cli_reads_it() {
        let mut spec = ServerSpec::parse("baseline", "node 'my dir/index.js' --flag").unwrap();
        spec.env.insert("TOKEN".into(), "t0k".into());
        let doc = settings_json(&spec, "tracker", None, false, 8);
        assert_eq!(
            doc["mcpServers"]["tracker"],
            json!({"command": "node", "args": ["my dir/index.js", "--flag"],
                   "env": {"TOKEN": "t0k"}, "timeout": 60000, "trust": true})
        );
        assert_eq!(doc["security"]["auth"]["selectedType"], "gemini-api-key");
        assert_eq!(doc["privacy"]["usageStatisticsEnabled"], false);
        assert_eq!(doc["telemetry"]["enabled"], false);
        assert_eq!(doc["general"]["enableAutoUpdate"], false);
        assert_eq!(doc["model"]["maxSessionTurns"], 8);
        assert_eq!(doc["tools"]["core"], json!([]));
        // Built-in tools kept: no `tools` at all; a zero turn limit is still a limit.
        let doc = settings_json(&spec, "tracker", None, true, 0);
        assert!(doc.get("tools").is_none());
        assert_eq!(doc["model"]["maxSessionTurns"], 1);
    }

    #[test]
    fn an_http_server_keeps_its_url_and_headers_and_an_allow_list_drops_trust() {
        let mut spec = ServerSpec::parse("candidate", "http://127.0.0.1:3002/mcp").unwrap();
        spec.headers
            .insert("Authorization".into(), "Bearer x".into());
        let names = ["get_issue".to_owned()];
        let doc = settings_json(&spec, "tracker", Some(&names), true, 8);
        assert_eq!(
            doc["mcpServers"]["tracker"],
            json!({"httpUrl": "http://127.0.0.1:3002/mcp",
                   "headers": {"Authorization": "Bearer x"}, "timeout": 60000, "trust": false})
        );
        let star = ["*".to_owned()];
        let doc = settings_json(&spec, "tracker", Some(&star), true, 8);
        assert_eq!(doc["mcpServers"]["tracker"]["trust"], true);
    }

    #[test]
    fn the_policy_allows_the_listed_tools_and_asks_for_the_rest() {
        let names = ["search_issues".to_owned(), "get_issue".to_owned()];
        let doc: Table = policy_toml("tracker", Some(&names)).parse().unwrap();
        let rules = doc["rule"].as_array().unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(
            rules[0]["toolName"],
            toml::Value::Array(vec![
                "mcp_tracker_search_issues".into(),
                "mcp_tracker_get_issue".into()
            ])
        );
        assert_eq!(rules[0]["decision"].as_str(), Some("allow"));
        assert_eq!(rules[1]["toolName"].as_str(), Some("mcp_tracker_*"));
        assert_eq!(rules[1]["decision"].as_str(), Some("ask_user"));
        assert!(rules[0]["priority"].as_integer() > rules[1]["priority"].as_integer());
        // No list, or `*`: one rule allowing the whole server.
        for allowed in [None, Some(&["*".to_owned()][..])] {
            let doc: Table = policy_toml("tracker", allowed).parse().unwrap();
            let rules = doc["rule"].as_array().unwrap();
            assert_eq!(rules.len(), 1);
            assert_eq!(rules[0]["toolName"].as_str(), Some("mcp_tracker_*"));
            assert_eq!(rules[0]["decision"].as_str(), Some("allow"));
        }
    }

    #[test]
    fn tool_names_follow_gemini_clis_rules() {
        assert_eq!(tool_name("tracker", "get_issue"), "mcp_tracker_get_issue");
        assert_eq!(tool_name("t", "note/add v2"), "mcp_t_note_add_v2");
        assert_eq!(tool_name("t", "a.b:c-d"), "mcp_t_a.b:c-d");
        let long = tool_name("tracker", &"x".repeat(80));
        assert_eq!(long.len(), 63);
        assert!(long.starts_with("mcp_tracker_xxx") && long.contains("..."));
    }
}
