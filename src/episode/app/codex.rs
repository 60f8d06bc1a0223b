//! Codex CLI as an app host: the trial's private `CODEX_HOME/config.toml` (a model provider at
//! the host's base URL speaking the Responses API, the side's server under `[mcp_servers.*]`
//! with the host's allow-list as `enabled_tools`), the headless command line (`exec --json
//! --skip-git-repo-check --ephemeral`) and its private environment.

use std::collections::BTreeMap;

use toml::{Table, Value};

use super::codex_events::parse_events;
use super::process::{AppRun, TrialDir};
use super::settings::{infra, AppHost, AppTrial};
use crate::config::AppKind;
use crate::config::{ServerSpec, Transport};
use crate::episode::TrialOutput;

/// The model provider's name in the written config.
const PROVIDER: &str = "mcpeval";

/// Where the provider's API key is read from: the app's environment, copied from the host's
/// key variable (the key itself is never written to a file).
const KEY_VAR: &str = "MCPEVAL_CODEX_API_KEY";

/// Variables of mcpeval's own environment the app gets (no user `OPENAI_*` or `CODEX_*`
/// setting leaks into a trial).
const PASSED: [&str; 4] = ["PATH", "LANG", "LC_ALL", "TZ"];

/// Codex CLI, for one host.
pub struct Codex<'a> {
    pub host: &'a AppHost,
}

/// What the written `config.toml` needs besides the server.
pub struct ProviderConfig<'a> {
    pub base_url: &'a str,
    pub model: Option<&'a str>,
    /// Whether an API key is passed (then `env_key` names [`KEY_VAR`]).
    pub has_key: bool,
    pub seed: u64,
}

/// The `[mcp_servers.<label>]` table: a stdio command with args, env and cwd, or a Streamable
/// HTTP `url` with `http_headers`; `required` (a server that does not start ends the trial);
/// the start-up and call timeouts; the allow-list (bare names
/// as the baseline has them) as `enabled_tools`, which hides every other tool from the model.
pub fn server_table(server: &ServerSpec, allowed: Option<&[String]>) -> Table {
    let mut t = Table::new();
    match &server.transport {
        Transport::Stdio { program, args } => {
            t.insert("command".into(), program.clone().into());
            t.insert("args".into(), strings(args));
            if !server.env.is_empty() {
                t.insert("env".into(), map(&server.env));
            }
            if let Some(cwd) = &server.cwd {
                t.insert("cwd".into(), cwd.to_string_lossy().into_owned().into());
            }
        }
        Transport::Http { url } => {
            t.insert("url".into(), url.clone().into());
            if !server.headers.is_empty() {
                t.insert("http_headers".into(), map(&server.headers));
            }
        }
    }
    // Without it Codex goes on, silently, without the server's tools.
    t.insert("required".into(), true.into());
    t.insert(
        "startup_timeout_sec".into(),
        server.startup_timeout.as_secs_f64().into(),
    );
    t.insert(
        "tool_timeout_sec".into(),
        server.call_timeout.as_secs_f64().into(),
    );
    if let Some(names) = allowed.filter(|n| !n.iter().any(|n| n == "*")) {
        t.insert("enabled_tools".into(), strings(names));
    }
    t
}

/// The whole `config.toml` of a trial.
pub fn config_toml(
    provider: &ProviderConfig<'_>,
    server: &ServerSpec,
    label: &str,
    allowed: Option<&[String]>,
) -> String {
    let mut p = Table::new();
    p.insert("name".into(), PROVIDER.into());
    p.insert("base_url".into(), provider.base_url.into());
    p.insert("wire_api".into(), "responses".into());
    if provider.has_key {
        p.insert("env_key".into(), KEY_VAR.into());
    }
    let mut headers = Table::new();
    headers.insert(
        crate::host::SEED_HEADER.into(),
        provider.seed.to_string().into(),
    );
    p.insert("http_headers".into(), headers.into());
    let mut providers = Table::new();
    providers.insert(PROVIDER.into(), p.into());
    let mut servers = Table::new();
    servers.insert(label.into(), server_table(server, allowed).into());
    let mut history = Table::new();
    history.insert("persistence".into(), "none".into());
    let mut analytics = Table::new();
    analytics.insert("enabled".into(), false.into());

    let mut root = Table::new();
    if let Some(model) = provider.model {
        root.insert("model".into(), model.into());
    }
    root.insert("model_provider".into(), PROVIDER.into());
    root.insert("check_for_update_on_startup".into(), false.into());
    root.insert("model_providers".into(), providers.into());
    root.insert("mcp_servers".into(), servers.into());
    root.insert("history".into(), history.into());
    root.insert("analytics".into(), analytics.into());
    toml::to_string(&root).expect("a table of strings, numbers and tables serializes")
}

fn strings(items: &[String]) -> Value {
    Value::Array(items.iter().cloned().map(Value::from).collect())
}

fn map(m: &BTreeMap<String, String>) -> Value {
    Value::Table(
        m.iter()
            .map(|(k, v)| (k.clone(), Value::from(v.clone())))
            .collect(),
    )
}

impl Codex<'_> {
    pub async fn run(&self, trial: &AppTrial<'_>) -> TrialOutput {
        let dir = match TrialDir::create(self.host.scratch()) {
            Ok(dir) => dir,
            Err(e) => {
                return infra(
                    AppKind::Codex,
                    format!("cannot make the trial's directory: {e}"),
                )
            }
        };
        let codex_home = dir.home().join(".codex");
        let key = std::env::var(&self.host.api_key_env).ok();
        let base_url = std::env::var(&self.host.base_url_env)
            .unwrap_or_else(|_| "https://api.openai.com/v1".to_owned());
        let provider = ProviderConfig {
            base_url: &base_url,
            model: self.host.model.as_deref(),
            has_key: key.is_some(),
            seed: trial.seed,
        };
        let allowed = self.host.settings.allowed_tools.as_deref();
        let config = config_toml(&provider, trial.server, trial.label, allowed);
        let config_path = codex_home.join("config.toml");
        if let Err(e) =
            std::fs::create_dir_all(&codex_home).and_then(|_| std::fs::write(&config_path, config))
        {
            return infra(
                AppKind::Codex,
                format!("cannot write {}: {e}", config_path.display()),
            );
        }
        let mut env: BTreeMap<String, String> = PASSED
            .iter()
            .filter_map(|k| Some((k.to_string(), std::env::var(k).ok()?)))
            .collect();
        env.insert("HOME".into(), dir.home().to_string_lossy().into_owned());
        env.insert(
            "CODEX_HOME".into(),
            codex_home.to_string_lossy().into_owned(),
        );
        if let Some(key) = key {
            env.insert(KEY_VAR.into(), key);
        }
        for (k, v) in &self.host.settings.env {
            let value = crate::config::expand_value(v).unwrap_or_else(|_| v.clone());
            env.insert(k.clone(), value);
        }
        let run = AppRun {
            program: &self.host.settings.program,
            args: self.args(trial),
            env,
            cwd: dir.work(),
            timeout: self.host.timeout(),
        };
        let finished = match run.run().await {
            Ok(f) => f,
            Err(e) => return infra(AppKind::Codex, e),
        };
        parse_events(
            &finished,
            trial.label,
            trial.prompt,
            self.host.version.as_deref(),
            self.host.model.as_deref(),
        )
    }

    /// `exec --json --skip-git-repo-check --ephemeral -c analytics.enabled=false`, the host's
    /// extra arguments, then `--` and the prompt (so a prompt starting with `-` stays one).
    /// Codex has no turn limit: the trial's timeout bounds it instead.
    fn args(&self, trial: &AppTrial<'_>) -> Vec<String> {
        let mut args: Vec<String> = [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--ephemeral",
            "-c",
            "analytics.enabled=false",
        ]
        .map(String::from)
        .into();
        args.extend(self.host.settings.args.iter().cloned());
        args.extend(["--".into(), trial.prompt.into()]);
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> ProviderConfig<'static> {
        ProviderConfig {
            base_url: "http://127.0.0.1:8089/v1",
            model: Some("sim"),
            has_key: true,
            seed: 42,
        }
    }

    #[test]
    fn a_stdio_server_and_the_provider_are_written_as_codex_reads_them() {
        let mut spec = ServerSpec::parse("baseline", "node 'my dir/index.js' --flag").unwrap();
        spec.env.insert("TOKEN".into(), "t0k".into());
        let names = ["search_issues".to_owned(), "get_issue".to_owned()];
        let text = config_toml(&provider(), &spec, "tracker", Some(&names));
        let doc: Table = text.parse().unwrap();
        assert_eq!(doc["model"].as_str(), Some("sim"));
        assert_eq!(doc["model_provider"].as_str(), Some(PROVIDER));
        assert_eq!(doc["analytics"]["enabled"].as_bool(), Some(false));
        let p = &doc["model_providers"][PROVIDER];
        assert_eq!(p["base_url"].as_str(), Some("http://127.0.0.1:8089/v1"));
        assert_eq!(p["wire_api"].as_str(), Some("responses"));
        assert_eq!(p["env_key"].as_str(), Some(KEY_VAR));
        assert_eq!(p["http_headers"]["x-mcpeval-seed"].as_str(), Some("42"));
        let s = &doc["mcp_servers"]["tracker"];
        assert_eq!(s["command"].as_str(), Some("node"));
        assert_eq!(
            s["args"],
            Value::Array(vec!["my dir/index.js".into(), "--flag".into()])
        );
        assert_eq!(s["env"]["TOKEN"].as_str(), Some("t0k"));
        assert_eq!(s["required"].as_bool(), Some(true));
        assert_eq!(s["startup_timeout_sec"].as_float(), Some(30.0));
        assert_eq!(s["tool_timeout_sec"].as_float(), Some(60.0));
        assert_eq!(
            s["enabled_tools"],
            Value::Array(vec!["search_issues".into(), "get_issue".into()])
        );
    }

    #[test]
    fn an_http_server_keeps_its_url_and_headers_and_no_key_means_no_env_key() {
        let mut spec = ServerSpec::parse("candidate", "http://127.0.0.1:3002/mcp").unwrap();
        spec.headers
            .insert("Authorization".into(), "Bearer x".into());
        let mut provider = provider();
        provider.has_key = false;
        provider.model = None;
        let doc: Table = config_toml(&provider, &spec, "tracker", Some(&["*".to_owned()]))
            .parse()
            .unwrap();
        assert!(doc.get("model").is_none());
        assert!(doc["model_providers"][PROVIDER].get("env_key").is_none());
        let s = &doc["mcp_servers"]["tracker"];
        assert_eq!(s["url"].as_str(), Some("http://127.0.0.1:3002/mcp"));
        assert_eq!(
            s["http_headers"]["Authorization"].as_str(),
            Some("Bearer x")
        );
        assert!(s.get("command").is_none());
        // `*` (or no list) allows every tool: no enabled_tools at all.
        assert!(s.get("enabled_tools").is_none());
    }
}
