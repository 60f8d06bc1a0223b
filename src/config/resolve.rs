//! Resolves the config layers (embedded defaults < file < environment < flags) into one `RunConfig`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::file::{ConfigFile, HostFile, Isolation, MaxTokensFile, ServerFile};
use super::HostProfile;
use super::SimConfig;
use super::{ServerSpec, Transport};

/// The embedded defaults every config is laid over.
pub const DEFAULT_CONFIG: &str = include_str!("../../configs/default.toml");
/// The embedded demo config, used by `mcpeval run` with no arguments.
pub const DEMO_CONFIG: &str = include_str!("../../configs/demo.toml");

/// Why a config could not be resolved: always the user's input (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config `{path}`")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Every problem of one config file, in file order (`file:line:col: message`).
    #[error("{} problem(s) in config `{path}`:\n{}", problems.len(), problems.iter().map(|d| format!("  {d}")).collect::<Vec<_>>().join("\n"))]
    Problems {
        path: String,
        problems: Vec<crate::suite::Diagnostic>,
    },
    #[error("{0}")]
    Invalid(String),
}

impl crate::error::Coded for ConfigError {
    fn exit(&self) -> crate::error::Exit {
        match self {
            Self::Read { .. } | Self::Problems { .. } | Self::Invalid(_) => {
                crate::error::Exit::Usage
            }
        }
    }
}

/// A setting whose value is malformed or out of its range, in words that name the setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidSetting(pub String);

impl From<&str> for InvalidSetting {
    fn from(message: &str) -> Self {
        Self(message.to_owned())
    }
}

impl From<InvalidSetting> for ConfigError {
    fn from(e: InvalidSetting) -> Self {
        Self::Invalid(e.0)
    }
}

impl crate::error::Coded for InvalidSetting {
    fn exit(&self) -> crate::error::Exit {
        crate::error::Exit::Usage
    }
}

/// Values from the command line and environment, the top layers. `None`: not given.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub config: Option<PathBuf>,
    pub baseline: Option<String>,
    pub candidate: Option<String>,
    pub suites: Vec<PathBuf>,
    pub hosts: Vec<String>,
    pub trials: Option<u32>,
    pub concurrency: Option<usize>,
    pub seed: Option<u64>,
    pub out_dir: Option<PathBuf>,
    pub isolation: Option<Isolation>,
    pub protocol_era: Option<super::ProtocolEra>,
    pub tags: BTreeMap<String, String>,
    pub correction: Option<crate::stats::Adjustment>,
    /// `--adaptive`: adaptive trials whatever the config says.
    pub adaptive: bool,
    /// `--max-trials`: `[stats] max_trials`.
    pub max_trials: Option<u32>,
    /// `--trial-budget`: `[stats] trial_budget`.
    pub trial_budget: Option<u64>,
    /// No suite is an empty suite rather than an error (`mcpeval check`, whose stages that
    /// need tasks are skipped without one).
    pub suite_optional: bool,
    /// `--sandbox`, `--keep-sandboxes`, `--allow-writes`.
    pub writes: WriteFlags,
    /// `--tool-order`: every host's `tool_order`, over the config's profiles.
    pub tool_order: Option<super::ToolOrder>,
    /// `--recover-text-calls`: every API host recovers the tool calls its model writes as text.
    pub recover_text_calls: bool,
    /// `--replay-user-turns`: candidate trials' simulated users send the baseline's messages.
    pub replay_user_turns: bool,
    /// `--expose`: what of the server every host shows its model, over the config's profiles.
    pub expose: Option<Vec<super::Exposed>>,
    /// `--stale-list`: the candidate's trials are offered the baseline's tool list.
    pub stale_list: bool,
    /// `--tool-search`: how every host's model finds the server's tools, over the config's
    /// profiles.
    pub tool_search: Option<super::ToolSearch>,
    /// `--tool-search-k`: every host's `tool_search_k`.
    pub tool_search_k: Option<usize>,
}

/// How the command line lets trials touch the servers' state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriteFlags {
    /// `--sandbox [NAME=]PATH`: copied for every start of either server's process (over the
    /// config's `[servers.NAME] sandbox`).
    pub sandboxes: Vec<super::SandboxPath>,
    /// `--keep-sandboxes`: the copies stay on disk.
    pub keep_sandboxes: bool,
    /// `--allow-writes`: trials may change the servers' real state.
    pub allow_writes: bool,
}

/// Which provider drives a host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    Sim,
    Openai,
    /// OpenAI's Responses API (`openai-responses:MODEL`, or `api = "responses"`).
    #[serde(rename = "openai-responses")]
    OpenaiResponses,
    Anthropic,
    /// A host application (`app` says which) that runs the trial's loop itself.
    App,
}

/// One host of the run, resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostConfig {
    /// As given: `sim`, `openai:gpt-4.1-mini`, or a `[host.NAME]` name.
    pub name: String,
    pub provider: Provider,
    pub model: Option<String>,
    pub profile: HostProfile,
    /// Rate limits (`rpm`, `tpm` of a `[host.NAME]`).
    #[serde(default)]
    pub rpm: Option<u32>,
    #[serde(default)]
    pub tpm: Option<u64>,
    /// How requests are made (`[host.NAME]`): sampling, endpoint, headers, retries.
    #[serde(default)]
    pub settings: HostSettings,
    /// The app of an app host (`Provider::App`): program, arguments, allow-list, timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<crate::config::AppSettings>,
}

/// The request settings of a `[host.NAME]`; all optional, absent = the provider's default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// The output cap of one turn; `Some(0)` = none sent (`max_tokens = "none"`), `None` = the
    /// provider's default cap (`host::DEFAULT_MAX_TOKENS`, anthropic's 1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Streamed answers; `None` = yes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_timeout_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_timeout_s: Option<f64>,
    /// Anthropic extended thinking's `budget_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<u32>,
    /// Whether the trial's seed is sent (openai); `None` = yes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// `tool_choice`, sent in each provider's form; `None` = the provider's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<crate::config::ToolChoice>,
    /// Fields merged into every request body; mcpeval's own fields win. Checked to hold no
    /// credential, so written to run.json as it is.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra_body: BTreeMap<String, serde_json::Value>,
    /// Extra headers as written in the config: literal values or `$VAR` references, expanded when
    /// the host is built. run.json gets the references and `[REDACTED]` for literal values.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        serialize_with = "serialize_headers"
    )]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<usize>,
    /// Requests in a row failing for one lasting reason before the host is stopped (default
    /// `host::breaker::DEFAULT_BREAKER_AFTER`; 0 never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaker_after: Option<u32>,
}

/// The environment variable a config value names (`$VAR` or `${VAR}`), if it names one.
pub fn env_reference(value: &str) -> Option<&str> {
    value
        .strip_prefix("${")
        .and_then(|r| r.strip_suffix('}'))
        .or_else(|| value.strip_prefix('$'))
}

impl HostConfig {
    /// The variables holding the endpoint and the API key: those the `[host.NAME]` names, else
    /// the provider's (`OPENAI_BASE_URL`/`OPENAI_API_KEY`, `ANTHROPIC_BASE_URL`/`ANTHROPIC_API_KEY`).
    pub fn env_vars(&self) -> (&str, &str) {
        // An app speaks its vendor's API: Claude Code Anthropic's, Codex OpenAI's, Gemini CLI
        // Google's.
        let app = self.app.as_ref().map(|a| a.app);
        let (base, key) = match (&self.provider, app) {
            (Provider::App, Some(crate::config::AppKind::Codex)) => {
                ("OPENAI_BASE_URL", "OPENAI_API_KEY")
            }
            (Provider::App, Some(crate::config::AppKind::GeminiCli)) => {
                ("GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY")
            }
            (Provider::Anthropic | Provider::App, _) => ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
            _ => ("OPENAI_BASE_URL", "OPENAI_API_KEY"),
        };
        (
            self.settings.base_url_env.as_deref().unwrap_or(base),
            self.settings.api_key_env.as_deref().unwrap_or(key),
        )
    }
}

fn serialize_headers<S: serde::Serializer>(
    headers: &BTreeMap<String, String>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = serializer.serialize_map(Some(headers.len()))?;
    for (name, value) in headers {
        match env_reference(value) {
            Some(_) => map.serialize_entry(name, value)?,
            None => map.serialize_entry(name, "[REDACTED]")?,
        }
    }
    map.end()
}

impl RunConfig {
    /// Whether this is the embedded demo config (`mcpeval run` with no config file).
    pub fn is_embedded_demo(&self) -> bool {
        self.config_source == "<embedded demo>"
    }

    /// Every value that must never be written to a run file: server env and header values, each
    /// host's header values and API key, and the values of the `secret_env` variables.
    pub fn secret_values(&self) -> Vec<String> {
        let servers = [&self.baseline, &self.candidate].into_iter().flat_map(|s| {
            s.env
                .values()
                .chain(s.headers.values())
                .chain(&s.referenced_values)
                .cloned()
        });
        let hosts = self.hosts.iter().flat_map(|h| {
            let app_env = h.app.iter().flat_map(|a| {
                a.env
                    .values()
                    .map(|v| expand_value(v).unwrap_or_else(|_| v.clone()))
                    .chain(embedded_values(&a.env))
                    .collect::<Vec<_>>()
            });
            let key = (h.provider == Provider::App)
                .then(|| std::env::var(h.env_vars().1).ok())
                .flatten();
            h.settings
                .secret_values()
                .into_iter()
                .chain(app_env)
                .chain(key)
        });
        let marked = self.secret_env.iter().filter_map(|v| std::env::var(v).ok());
        servers.chain(hosts).chain(marked).collect()
    }
}

impl HostSettings {
    /// The headers with `$VAR` / `${VAR}` references read from the environment. `Err` names the
    /// header and the variable that is not set.
    pub fn expanded_headers(&self) -> Result<BTreeMap<String, String>, UnsetVariable> {
        expand_env(&self.headers).map_err(|e| UnsetVariable {
            key: format!("header {}", e.key),
            ..e
        })
    }

    /// Values that must never be written: every header value (expanded) and the API key the
    /// host reads.
    pub fn secret_values(&self) -> Vec<String> {
        let mut values: Vec<String> = self
            .expanded_headers()
            .unwrap_or_default()
            .into_values()
            .chain(embedded_values(&self.headers))
            .collect();
        if let Some(var) = &self.api_key_env {
            values.extend(std::env::var(var).ok());
        }
        values
    }
}

/// Everything a run needs, resolved once; written (without secrets) into `run.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunConfig {
    /// The config file used, if any (`<embedded demo>` for the demo).
    pub config_source: String,
    pub seed: u64,
    pub trials: u32,
    pub concurrency: usize,
    pub isolation: Isolation,
    pub retries: u32,
    pub suites: Vec<PathBuf>,
    /// The model hosts. Empty when none was given outside the demo: a run of model tasks then
    /// refuses to start ([`NO_HOST`]).
    pub hosts: Vec<HostConfig>,
    pub baseline: ServerSpec,
    pub candidate: ServerSpec,
    pub sim: SimConfig,
    pub out_dir: PathBuf,
    pub tags: BTreeMap<String, String>,
    /// Environment variables whose values are secrets (`secret_env`): redacted everywhere.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_env: Vec<String>,
    /// How episodes become verdicts (`[stats]`).
    #[serde(default)]
    pub stats: super::StatsConfig,
    /// Limits of the run (`[budget]`).
    #[serde(default)]
    pub budget: crate::config::Budget,
    /// US dollars per million tokens, by host or model (`[prices.MODEL]`).
    #[serde(default)]
    pub prices: BTreeMap<String, crate::config::Price>,
    /// Tools the candidate renamed, old name → new (`[renames]`, `--follow-renames`): the
    /// candidate side's expected, forbidden and called tool names are mapped, so that a renamed
    /// tool's tasks measure the model rather than the rename.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub renames: BTreeMap<String, String>,
    /// Trials may call tools that change a server's real state (`--allow-writes`,
    /// `allow_writes = true`): the header, run.json and the report say so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_writes: bool,
    /// A candidate trial's simulated user sends the baseline trial's recorded user messages
    /// first (`--replay-user-turns`); its candidate trial runs after its baseline trial.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replay_user_turns: bool,
    /// The candidate side is the stale-list window of a deploy (`--stale-list`): its trials are
    /// offered the tool list the baseline gave, as a client that cached it still offers it, and
    /// every call goes to the candidate under the name the model used.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale_list: bool,
}

/// One config file, checked: every problem of it at once (`super::check`).
fn parse_toml(path: &str, text: &str) -> Result<ConfigFile, ConfigError> {
    super::check::parse_config(path, text)
}

/// Why a run of model tasks without a host cannot start: the simulated model is the demo's.
pub const NO_HOST: &str = "no model host: pass --host openai:MODEL, --host anthropic:MODEL or \
     --host NAME (a [host.NAME] of the config), or set `hosts` in the config; the simulated model \
     `sim` is the default of the demo only, not for judging a server (`--host sim` asks for it)";

/// Resolves the run config. With no config file and no servers given, the embedded demo is used.
pub fn resolve(over: &Overrides) -> Result<RunConfig, ConfigError> {
    let mut layered = parse_toml("<embedded defaults>", DEFAULT_CONFIG)?;
    let (source, base_dir) = match &over.config {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.clone(),
                source,
            })?;
            layered = layered.layer(parse_toml(&path.display().to_string(), &text)?);
            let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            (path.display().to_string(), Some(dir))
        }
        None if over.baseline.is_none() && over.candidate.is_none() => {
            layered = layered.layer(parse_toml("<embedded demo>", DEMO_CONFIG)?);
            ("<embedded demo>".to_owned(), None)
        }
        None => ("<flags>".to_owned(), None),
    };
    layered = layered.layer(env_layer()?);
    layered = layered.layer(flag_layer(over));
    build(layered, source, base_dir.as_deref(), over)
}

/// One server for a command that needs no run (`snapshot`): `given` names a `[servers.NAME]` of
/// the config file, or is a spec as on the command line; `auth` profiles (`[auth.NAME]`) add
/// their headers and environment, in order.
pub fn resolve_server(
    config: Option<&Path>,
    given: &str,
    auth: &[String],
) -> Result<ServerSpec, ConfigError> {
    let mut file = ConfigFile::default();
    let mut base_dir = None;
    if let Some(path) = config {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        file = parse_toml(&path.display().to_string(), &text)?;
        base_dir = path.parent().map(Path::to_path_buf);
    }
    let mut spec = match file.servers.get(given) {
        Some(entry) => server_from_file(given, entry, &file.servers, base_dir.as_deref())?,
        None => ServerSpec::parse_given("server", given, &server_names(&file))
            .map_err(|e| ConfigError::Invalid(format!("--server: {e}")))?,
    };
    for name in auth {
        let profile = file.auth.get(name).ok_or_else(|| {
            let known: Vec<&str> = file.auth.keys().map(String::as_str).collect();
            ConfigError::Invalid(format!(
                "no [auth.{name}] in the config{}",
                if known.is_empty() {
                    " (pass --config FILE with [auth.NAME] tables)".to_owned()
                } else {
                    format!(" (it has: {})", known.join(", "))
                }
            ))
        })?;
        let invalid = |m: String| ConfigError::Invalid(format!("[auth.{name}]: {m}"));
        spec.headers
            .extend(expand_env(&profile.headers).map_err(|e| invalid(e.to_string()))?);
        spec.env
            .extend(expand_env(&profile.env).map_err(|e| invalid(e.to_string()))?);
        spec.referenced_values
            .extend(embedded_values(&profile.headers));
        spec.referenced_values.extend(embedded_values(&profile.env));
    }
    Ok(spec)
}

/// The top-level `allow_writes` of a config file: the user's consent to trials (and `init`)
/// that may change a server's real state. `false` without a file or the key.
pub fn config_allows_writes(config: Option<&Path>) -> Result<bool, ConfigError> {
    let Some(path) = config else {
        return Ok(false);
    };
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let file = parse_toml(&path.display().to_string(), &text)?;
    Ok(file.allow_writes.unwrap_or(false))
}

/// A host named outside the run's `hosts` (a task's `judge.host`), resolved like them: one of
/// the run's hosts, `sim`, `PROVIDER:MODEL`, or a `[host.NAME]` of the config the run came from.
pub fn resolve_extra_host(config: &RunConfig, given: &str) -> Result<HostConfig, ConfigError> {
    if let Some(host) = config.hosts.iter().find(|h| h.name == given) {
        return Ok(host.clone());
    }
    let mut file = parse_toml("<embedded defaults>", DEFAULT_CONFIG)?;
    let source = Path::new(&config.config_source);
    if config.config_source == "<embedded demo>" {
        file = file.layer(parse_toml("<embedded demo>", DEMO_CONFIG)?);
    } else if source.is_file() {
        let text = std::fs::read_to_string(source).map_err(|e| ConfigError::Read {
            path: source.to_path_buf(),
            source: e,
        })?;
        file = file.layer(parse_toml(&config.config_source, &text)?);
    }
    let mut profile = HostProfile::default();
    if let Some(p) = &file.profile {
        p.apply(&mut profile);
    }
    resolve_host(given, &file.named_hosts, &profile)
}

/// `MCPEVAL_TRIALS`, `MCPEVAL_CONCURRENCY`, `MCPEVAL_SEED`.
fn env_layer() -> Result<ConfigFile, ConfigError> {
    fn var<T: std::str::FromStr>(name: &str) -> Result<Option<T>, ConfigError> {
        match std::env::var(name) {
            Ok(v) => v
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| ConfigError::Invalid(format!("`{name}` is not a number: `{v}`"))),
            Err(_) => Ok(None),
        }
    }
    Ok(ConfigFile {
        trials: var("MCPEVAL_TRIALS")?,
        concurrency: var("MCPEVAL_CONCURRENCY")?,
        seed: var("MCPEVAL_SEED")?,
        ..ConfigFile::default()
    })
}

fn flag_layer(over: &Overrides) -> ConfigFile {
    ConfigFile {
        seed: over.seed,
        trials: over.trials,
        concurrency: over.concurrency,
        isolation: over.isolation,
        suites: (!over.suites.is_empty()).then(|| over.suites.clone()),
        hosts: (!over.hosts.is_empty()).then(|| over.hosts.clone()),
        out_dir: over.out_dir.clone(),
        baseline: over.baseline.clone(),
        candidate: over.candidate.clone(),
        ..ConfigFile::default()
    }
}

fn build(
    file: ConfigFile,
    source: String,
    base_dir: Option<&Path>,
    over: &Overrides,
) -> Result<RunConfig, ConfigError> {
    let invalid = |m: String| ConfigError::Invalid(m);
    let trials = file.trials.unwrap_or(10);
    if trials == 0 {
        return Err(invalid("`trials` must be at least 1".into()));
    }
    let concurrency = file.concurrency.unwrap_or(8);
    if concurrency == 0 {
        return Err(invalid("`concurrency` must be at least 1".into()));
    }
    let mut base_profile = HostProfile::default();
    if let Some(p) = &file.profile {
        p.apply(&mut base_profile);
    }
    let server = |side: &str, given: &Option<String>| -> Result<ServerSpec, ConfigError> {
        let given = given.as_deref().ok_or_else(|| {
            invalid(format!(
                "no {side} server: pass --{side} SPEC (a command line or an http:// URL) or set `{side}` in the config"
            ))
        })?;
        let mut spec = match file.servers.get(given) {
            Some(entry) => server_from_file(given, entry, &file.servers, base_dir)?,
            None => ServerSpec::parse_given(side, given, &server_names(&file))
                .map_err(|e| invalid(format!("{side}: {e}")))?,
        };
        if let Some(era) = over.protocol_era {
            spec.protocol_era = era;
        }
        with_write_flags(&mut spec, &over.writes).map_err(|e| invalid(format!("{side}: {e}")))?;
        Ok(spec)
    };
    let baseline = server("baseline", &file.baseline)?;
    let candidate = server("candidate", &file.candidate)?;
    // The simulated model is the default host of the demo alone: a pair of `demo:VERSION`
    // servers (the embedded demo config names them too). Elsewhere no host is the default, and a
    // run of model tasks asks for one (`RunConfig::hosts` is then empty).
    let demo_pair = [&file.baseline, &file.candidate].iter().all(|given| {
        given
            .as_deref()
            .is_some_and(|g| !file.servers.contains_key(g) && g.trim().starts_with("demo:"))
    });
    let hosts = match &file.hosts {
        Some(hosts) if hosts.is_empty() => {
            return Err(invalid(
                "no host: `hosts` is empty; name one (`openai:MODEL`, `anthropic:MODEL`, a                  [host.NAME], or `sim` for the simulated model)"
                    .into(),
            ))
        }
        Some(hosts) => hosts.clone(),
        None if demo_pair => vec!["sim".to_owned()],
        None => Vec::new(),
    };
    let mut hosts = hosts
        .iter()
        .map(|h| resolve_host(h, &file.named_hosts, &base_profile))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(order) = over.tool_order {
        hosts.iter_mut().for_each(|h| h.profile.tool_order = order);
    }
    if over.recover_text_calls {
        (hosts.iter_mut())
            .filter(|h| h.provider != Provider::App)
            .for_each(|h| h.profile.recover_text_calls = true);
    }
    if let Some(expose) = &over.expose {
        hosts
            .iter_mut()
            .for_each(|h| h.profile.expose = expose.clone());
    }
    if let Some(search) = over.tool_search {
        (hosts.iter_mut()).for_each(|h| h.profile.tool_search = Some(search));
    }
    if let Some(k) = over.tool_search_k {
        (hosts.iter_mut()).for_each(|h| h.profile.tool_search_k = k);
    }
    for host in &hosts {
        check_exposure(host)?;
        check_tool_search(host).map_err(|why| invalid(format!("host `{}`: {why}", host.name)))?;
    }
    let mut stats = file.stats.clone().unwrap_or_default().resolve();
    if let Some(correction) = over.correction {
        stats.correction = correction;
    }
    stats.adaptive |= over.adaptive;
    if let Some(max) = over.max_trials {
        stats.max_trials = max;
    }
    if let Some(budget) = over.trial_budget {
        stats.trial_budget = Some(budget);
    }
    stats.validate().map_err(|e| invalid(e.0))?;
    // An adaptive run's trials per task and side are its design's most.
    let trials = if stats.adaptive {
        stats.max_trials
    } else {
        trials
    };
    let suites = file.suites.clone().unwrap_or_default();
    if suites.is_empty() && !over.suite_optional {
        return Err(invalid(
            "no task suite: pass --suite DIR (a folder of task YAML files)".into(),
        ));
    }
    // `--suite` paths are the working folder's; the file's are read as `suite_path` says.
    let from_file = over.suites.is_empty();
    let suites = suites
        .into_iter()
        .map(|s| match from_file {
            true => suite_path(base_dir, s),
            false => flag_suite_path(base_dir, s),
        })
        .collect();
    Ok(RunConfig {
        config_source: source,
        seed: file.seed.unwrap_or(42),
        trials,
        concurrency,
        isolation: file.isolation.unwrap_or_default(),
        retries: file.retries.unwrap_or(2),
        suites,
        hosts,
        baseline,
        candidate,
        sim: file.sim.clone().unwrap_or_default(),
        out_dir: file.out_dir.clone().unwrap_or_else(|| "results".into()),
        tags: over.tags.clone(),
        secret_env: file.secret_env.clone(),
        stats,
        budget: file.budget.clone().unwrap_or_default(),
        prices: file.prices.clone(),
        renames: checked_renames(&file.renames)?,
        allow_writes: over.writes.allow_writes || file.allow_writes.unwrap_or(false),
        replay_user_turns: over.replay_user_turns,
        stale_list: over.stale_list,
    })
}

/// The command line's sandboxes (over the config's) and `--keep-sandboxes` on `spec`; an HTTP
/// server cannot take a sandbox: its state lives in a process the user runs.
pub fn with_write_flags(spec: &mut ServerSpec, flags: &WriteFlags) -> Result<(), InvalidSetting> {
    if !flags.sandboxes.is_empty() {
        spec.sandboxes = flags.sandboxes.clone();
    }
    spec.keep_sandboxes |= flags.keep_sandboxes;
    if !spec.sandboxes.is_empty() && !spec.is_stdio() {
        return Err(InvalidSetting(format!(
            "`{}` is an HTTP server: it cannot take a sandbox (its state lives in the process \
             you run; start it on a scratch copy yourself), and --allow-writes lets trials \
             change it",
            spec.display()
        )));
    }
    Ok(())
}

/// What `tasks check --config FILE` reads of a config file: its servers, suites and
/// `[renames]`, and nothing else (a config whose hosts need keys checks its tasks all the same).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigTargets {
    /// A spec or `[servers.NAME]`, as written.
    pub baseline: Option<String>,
    pub candidate: Option<String>,
    /// Found as a run finds them (relative to the config's folder when not to the working one).
    pub suites: Vec<PathBuf>,
    pub renames: BTreeMap<String, String>,
}

/// The servers, suites and `[renames]` of a config file alone.
pub fn config_targets(path: &Path) -> Result<ConfigTargets, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let file = parse_toml(&path.display().to_string(), &text)?;
    let base_dir = path.parent();
    Ok(ConfigTargets {
        baseline: file.baseline.clone(),
        candidate: file.candidate.clone(),
        suites: (file.suites.clone().unwrap_or_default().into_iter())
            .map(|s| suite_path(base_dir, s))
            .collect(),
        renames: checked_renames(&file.renames)?,
    })
}

/// A config's `suites` entry: a relative path from where mcpeval runs when it exists there, else
/// from the config file's folder; one written `./…` always from the config file's folder.
fn suite_path(config_dir: Option<&Path>, suite: PathBuf) -> PathBuf {
    match config_dir {
        Some(dir) if suite.starts_with(".") || (suite.is_relative() && !suite.exists()) => {
            dir.join(suite)
        }
        _ => suite,
    }
}

/// A `--suite` path next to a config file: from where mcpeval runs, unless it is relative and
/// not there (then from the config file's folder, as it has always been read).
fn flag_suite_path(config_dir: Option<&Path>, suite: PathBuf) -> PathBuf {
    match config_dir {
        Some(dir) if suite.is_relative() && !suite.exists() => dir.join(suite),
        _ => suite,
    }
}

/// `[renames]`: names not empty, none renamed to itself, none renamed twice over (`a = "b"` with
/// `b = "c"`).
pub fn checked_renames(
    renames: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, ConfigError> {
    for (old, new) in renames {
        let problem = if old.trim().is_empty() || new.trim().is_empty() {
            Some("a tool name is empty".to_owned())
        } else if old == new {
            Some("a tool renamed to itself".to_owned())
        } else if renames.contains_key(new) {
            Some(format!("`{new}` is renamed again: give the final name"))
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(ConfigError::Invalid(format!(
                "[renames] {old} = \"{new}\": {problem}"
            )));
        }
    }
    Ok(renames.clone())
}

/// The names of the config's `[servers.NAME]` tables.
fn server_names(file: &ConfigFile) -> Vec<&str> {
    file.servers.keys().map(String::as_str).collect()
}

fn server_from_file(
    name: &str,
    entry: &ServerFile,
    servers: &BTreeMap<String, ServerFile>,
    base_dir: Option<&Path>,
) -> Result<ServerSpec, ConfigError> {
    let invalid = |m: String| ConfigError::Invalid(format!("[servers.{name}]: {m}"));
    if entry.overlay.is_some() || entry.replay.is_some() || entry.base.is_some() {
        return overlay_from_file(name, entry, servers, base_dir);
    }
    let text = match (&entry.command, &entry.url) {
        (Some(c), None) => c,
        (None, Some(u)) => u,
        _ => return Err(invalid("set exactly one of `command` and `url`".into())),
    };
    let mut spec = ServerSpec::parse(name, text).map_err(|e| invalid(e.0))?;
    if entry.url.is_some() && spec.is_stdio() {
        return Err(invalid(format!(
            "`url` must start with http:// or https://, got `{text}`"
        )));
    }
    spec.env = expand_env(&entry.env).map_err(|e| invalid(e.to_string()))?;
    spec.headers = expand_env(&entry.headers).map_err(|e| invalid(e.to_string()))?;
    spec.referenced_values = embedded_values(&entry.env);
    spec.referenced_values
        .extend(embedded_values(&entry.headers));
    spec.cwd = entry.cwd.as_ref().map(|c| match base_dir {
        Some(dir) if c.is_relative() => dir.join(c),
        _ => c.clone(),
    });
    if let Some(era) = entry.protocol_era {
        spec.protocol_era = era;
    }
    if let Some(ms) = entry.startup_timeout_ms {
        spec.startup_timeout = Duration::from_millis(ms);
    }
    if let Some(ms) = entry.call_timeout_ms {
        spec.call_timeout = Duration::from_millis(ms);
    }
    state_from_file(&mut spec, entry, base_dir).map_err(|e| invalid(e.0))?;
    if let Transport::Stdio { .. } = spec.transport {
        if !entry.headers.is_empty() {
            return Err(invalid("`headers` only apply to an HTTP server".into()));
        }
    }
    Ok(spec)
}

/// `[servers.NAME] state` and `sandbox` on `spec`.
fn state_from_file(
    spec: &mut ServerSpec,
    entry: &ServerFile,
    base_dir: Option<&Path>,
) -> Result<(), InvalidSetting> {
    if let Some(state) = entry.state {
        spec.state = state;
    }
    if let Some(sandbox) = &entry.sandbox {
        spec.sandboxes = sandbox.resolve(base_dir)?;
    }
    Ok(())
}

/// `[servers.NAME] overlay = "FILE"`, `base = "SPEC or NAME"`: the base resolved (another
/// `[servers.NAME]` with its env, headers, cwd and era), served under the overlay by
/// `mcpeval serve`, which gets the base's env and cwd, and its headers in
/// [`BASE_HEADERS_ENV`](super::server::BASE_HEADERS_ENV), never on its command line.
fn overlay_from_file(
    name: &str,
    entry: &ServerFile,
    servers: &BTreeMap<String, ServerFile>,
    base_dir: Option<&Path>,
) -> Result<ServerSpec, ConfigError> {
    let invalid = |m: String| ConfigError::Invalid(format!("[servers.{name}]: {m}"));
    let unmatched = layered_keys(entry, &invalid)?;
    let in_dir = |given: &Path| match base_dir {
        Some(dir) if given.is_relative() => dir.join(given),
        _ => given.to_path_buf(),
    };
    let Some(given) = &entry.base else {
        let Some(cassette) = &entry.replay else {
            return Err(invalid(
                "`overlay` and `base` go together: `base` is the server underneath".into(),
            ));
        };
        // A cassette alone: its recorded lists and answers, no live server. Any spec's
        // defaults (timeouts, era), then the cassette's transport.
        let mut spec = ServerSpec::parse(name, "mcpeval").map_err(|e| invalid(e.0))?;
        spec.transport =
            ServerSpec::replay_transport(&in_dir(cassette), "").map_err(|e| invalid(e.0))?;
        if let (Some(policy), Transport::Stdio { args, .. }) = (unmatched, &mut spec.transport) {
            args.extend(["--unmatched".into(), policy]);
        }
        state_from_file(&mut spec, entry, base_dir).map_err(|e| invalid(e.0))?;
        return Ok(spec);
    };
    if entry.command.is_some() || entry.url.is_some() {
        return Err(invalid(
            "a server with an `overlay` or a `replay` has a `base`, not `command` or `url`".into(),
        ));
    }
    let base = layered_base(name, given, servers, base_dir, &invalid)?;
    let mut transport = match (&entry.overlay, &entry.replay) {
        (Some(file), _) => ServerSpec::overlay_transport(&in_dir(file), &base.display()),
        (None, Some(file)) => ServerSpec::replay_transport(&in_dir(file), &base.display()),
        (None, None) => unreachable!("layered_keys wants one of them"),
    }
    .map_err(|e| invalid(e.0))?;
    if let (Some(policy), Transport::Stdio { args, .. }) = (unmatched, &mut transport) {
        args.extend(["--unmatched".into(), policy]);
    }
    let mut spec = served_over(name, &base, transport);
    state_from_file(&mut spec, entry, base_dir).map_err(|e| invalid(e.0))?;
    Ok(spec)
}

/// The keys of a `[servers.NAME]` with an `overlay` or a `replay` that go together (one of the
/// two, `unmatched` only with `replay`): the `unmatched` policy given, if any.
fn layered_keys(
    entry: &ServerFile,
    invalid: &dyn Fn(String) -> ConfigError,
) -> Result<Option<String>, ConfigError> {
    match (&entry.overlay, &entry.replay) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "an `overlay` or a `replay`, not both: give the overlay a [servers.NAME] of its \
                 own with this one as its `base`"
                    .into(),
            ))
        }
        (None, None) => return Err(invalid("`base` goes with `overlay` or `replay`".into())),
        _ => {}
    }
    match (entry.unmatched.as_deref(), &entry.replay) {
        (None, _) => Ok(None),
        (Some(_), None) => Err(invalid("`unmatched` goes with `replay`".into())),
        (Some(p @ ("error" | "nearest" | "live")), Some(_)) => Ok(Some(p.to_owned())),
        (Some(other), Some(_)) => Err(invalid(format!(
            "`unmatched = \"{other}\"`: one of \"error\", \"nearest\", \"live\""
        ))),
    }
}

/// The server under an overlay or a replay: another `[servers.NAME]` (not itself, not an
/// overlay), or a spec.
fn layered_base(
    name: &str,
    given: &str,
    servers: &BTreeMap<String, ServerFile>,
    base_dir: Option<&Path>,
    invalid: &dyn Fn(String) -> ConfigError,
) -> Result<ServerSpec, ConfigError> {
    match servers.get(given) {
        Some(_) if given == name => Err(invalid("`base` names this server itself".into())),
        Some(other) if other.overlay.is_some() => Err(invalid(format!(
            "`base` names [servers.{given}], itself an overlay: put both files' changes in one"
        ))),
        Some(other) => server_from_file(given, other, servers, base_dir),
        None => ServerSpec::parse(name, given).map_err(|e| invalid(format!("`base`: {e}"))),
    }
}

/// The spec of `mcpeval serve` over `base` (`transport`): the base's era and headers handed
/// over, the headers through the environment, never the command line, and kept secret.
/// `base` served with the overlay `file` over it, under its own name, as a `[servers.NAME]`
/// with `overlay` and `base` is (`mcpeval explain`'s reverts).
pub fn overlay_over(base: &ServerSpec, file: &Path) -> Result<ServerSpec, InvalidSetting> {
    let transport = ServerSpec::overlay_transport(file, &base.display())?;
    Ok(served_over(&base.name, base, transport))
}

fn served_over(name: &str, base: &ServerSpec, mut transport: Transport) -> ServerSpec {
    if base.protocol_era != crate::config::ProtocolEra::Auto {
        if let Transport::Stdio { args, .. } = &mut transport {
            let era = serde_json::to_value(base.protocol_era).unwrap_or_default();
            args.extend([
                "--protocol-era".into(),
                era.as_str().unwrap_or("auto").to_owned(),
            ]);
        }
    }
    let mut spec = base.clone();
    spec.name = name.to_owned();
    spec.transport = transport;
    spec.headers = BTreeMap::new();
    if !base.headers.is_empty() {
        let json = serde_json::to_string(&base.headers).unwrap_or_default();
        spec.env
            .insert(super::server::BASE_HEADERS_ENV.to_owned(), json);
        // The values are secrets wherever they show (the JSON holds them inside a longer text).
        spec.referenced_values
            .extend(base.headers.values().cloned());
    }
    spec
}

/// Replaces a value of the form `$VAR` by the variable's value, and each `${VAR}` inside a
/// value (`Bearer ${TOKEN}`, `${HOME}/graph.json`) by its variable's.
fn expand_env(map: &BTreeMap<String, String>) -> Result<BTreeMap<String, String>, UnsetVariable> {
    map.iter()
        .map(|(k, v)| {
            expand_value(v)
                .map(|value| (k.clone(), value))
                .map_err(|UnsetVar(var)| UnsetVariable {
                    key: format!("`{k}`"),
                    var,
                })
        })
        .collect()
}

/// An environment variable that a value names and that is not set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("environment variable `{0}` is not set")]
pub struct UnsetVar(pub String);

/// A setting (`key`: a header, an env entry) whose value names an environment variable that is
/// not set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key} names environment variable `{var}`, which is not set")]
pub struct UnsetVariable {
    pub key: String,
    pub var: String,
}

/// The value with its references read from the environment; `Err` is the first variable that
/// is not set. A `${` without its `}` is kept as text.
pub fn expand_value(value: &str) -> Result<String, UnsetVar> {
    expand_with(value, |var| {
        std::env::var(var).map_err(|_| UnsetVar(var.to_owned()))
    })
}

/// [`expand_value`] with the variables read by `read`.
fn expand_with(
    value: &str,
    mut read: impl FnMut(&str) -> Result<String, UnsetVar>,
) -> Result<String, UnsetVar> {
    if let Some(var) = value.strip_prefix('$').filter(|v| is_var_name(v)) {
        return read(var);
    }
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else {
            break;
        };
        let var = &rest[start + 2..start + 2 + len];
        out.push_str(&rest[..start]);
        if is_var_name(var) {
            out.push_str(&read(var)?);
        } else {
            out.push_str(&rest[start..start + 3 + len]);
        }
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The values of the variables that this value names inside a longer text (not those of a value
/// that is one reference: that value is the variable's).
fn embedded_values(values: &BTreeMap<String, String>) -> Vec<String> {
    let mut found = Vec::new();
    for v in values
        .values()
        .filter(|v| env_reference(v).is_none_or(|var| !is_var_name(var)))
    {
        // An unset variable fails the config's expansion of the same value; nothing to add then.
        let _ = expand_with(v, |var| {
            let value = std::env::var(var).map_err(|_| UnsetVar(var.to_owned()))?;
            if !value.is_empty() {
                found.push(value.clone());
            }
            Ok(value)
        });
    }
    found
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What a host's profile shows besides tools must be something it can show: an app host decides
/// itself what its model sees; the resource tools need two names of their own.
fn check_exposure(host: &HostConfig) -> Result<(), ConfigError> {
    let profile = &host.profile;
    let refuse = |why: String| Err(ConfigError::Invalid(format!("host `{}`: {why}", host.name)));
    if profile.expose.is_empty() {
        return refuse("`expose` is empty: list at least one of tools, resources, prompts".into());
    }
    if host.provider == Provider::App && profile.exposes_more_than_tools() {
        return refuse(format!(
            "expose = {:?} is a setting of API hosts: an app host decides itself what of a \
             server its model sees (its resources, its prompts), so mcpeval cannot show them",
            profile
                .expose
                .iter()
                .map(|e| e.as_str())
                .collect::<Vec<_>>()
        ));
    }
    let (list, read) = (&profile.list_resources_tool, &profile.read_resource_tool);
    if list.trim().is_empty() || read.trim().is_empty() || list == read {
        return refuse(format!(
            "list_resources_tool (`{list}`) and read_resource_tool (`{read}`) must be two \
             different, non-empty names"
        ));
    }
    Ok(())
}

/// A host's tool search must be one it can run: an app host searches (or not) its own way,
/// Anthropic's own search needs Anthropic's API, and the search tool needs a name of its own.
fn check_tool_search(host: &HostConfig) -> Result<(), InvalidSetting> {
    let profile = &host.profile;
    let Some(search) = profile.tool_search else {
        return Ok(());
    };
    if host.provider == Provider::App {
        return Err(InvalidSetting(format!(
            "tool_search = \"{}\" is a setting of API hosts: an app host loads its tools its own \
             way (Claude Code searches MCP tools on demand by itself), so mcpeval cannot set it",
            search.as_str()
        )));
    }
    if search == super::ToolSearch::Native && host.provider != Provider::Anthropic {
        return Err(
            "tool_search = \"native\" is Anthropic's tool-search tool and needs an `anthropic` \
             host; use \"emulated\" (mcpeval's search_tools over a BM25 index) on any other"
                .into(),
        );
    }
    if profile.tool_search_k == 0 {
        return Err("tool_search_k must be at least 1".into());
    }
    let name = &profile.search_tools_tool;
    let resource_tools = [&profile.list_resources_tool, &profile.read_resource_tool];
    if name.trim().is_empty() || resource_tools.contains(&name) {
        return Err(InvalidSetting(format!(
            "search_tools_tool (`{name}`) must be a non-empty name apart from the resource tools'"
        )));
    }
    Ok(())
}

fn resolve_host(
    given: &str,
    named: &BTreeMap<String, HostFile>,
    base: &HostProfile,
) -> Result<HostConfig, ConfigError> {
    let mut profile = base.clone();
    let (mut rpm, mut tpm) = (None, None);
    let mut settings = HostSettings::default();
    let mut app = None;
    let (provider, model) = if let Some(entry) = named.get(given) {
        if let Some(p) = &entry.profile {
            p.apply(&mut profile);
        }
        if let Some(v) = entry.recover_text_calls {
            profile.recover_text_calls = v;
        }
        (rpm, tpm) = (entry.rpm, entry.tpm);
        settings = host_settings(given, entry)?;
        app = app_settings(given, entry)?;
        let provider = match (&app, entry.provider.as_str()) {
            (Some(_), "") => Provider::App,
            (Some(_), _) => {
                return Err(ConfigError::Invalid(format!(
                    "[host.{given}]: give `app` or `provider`, not both"
                )))
            }
            (None, p) => parse_provider(p)?,
        };
        let provider = match (provider, entry.api.as_deref()) {
            (p, None) => p,
            (Provider::Openai | Provider::OpenaiResponses, Some("responses")) => {
                Provider::OpenaiResponses
            }
            (Provider::Openai, Some("chat")) => Provider::Openai,
            (_, Some(api)) => {
                return Err(ConfigError::Invalid(format!(
                    "[host.{given}]: api = \"{api}\": an openai host's api is \"chat\" (chat \
                     completions, the default) or \"responses\" (the Responses API)"
                )))
            }
        };
        (provider, entry.model.clone())
    } else {
        let (head, model) = match given.split_once(':') {
            Some((p, m)) if !m.is_empty() => (p, Some(m.to_owned())),
            _ => (given, None),
        };
        match crate::config::AppKind::parse(head) {
            Some(kind) => {
                app = Some(crate::config::AppSettings::new(kind));
                (Provider::App, model)
            }
            None => (parse_provider(head)?, model),
        }
    };
    if provider == Provider::Anthropic && settings.max_tokens == Some(0) {
        return Err(ConfigError::Invalid(format!(
            "[host.{given}]: max_tokens = 0 / \"none\": the Messages API requires a limit; give \
             the model's own maximum instead"
        )));
    }
    if provider != Provider::Anthropic && settings.thinking_budget.is_some() {
        return Err(ConfigError::Invalid(format!(
            "[host.{given}]: thinking_budget is a setting of anthropic hosts (Anthropic's \
             extended thinking)"
        )));
    }
    if let Some(why) = super::host_request::misplaced(&provider, &settings) {
        return Err(ConfigError::Invalid(format!("[host.{given}]: {why}")));
    }
    if provider == Provider::App {
        let asked = named.get(given).is_some_and(|e| {
            e.recover_text_calls == Some(true)
                || e.profile.as_ref().and_then(|p| p.recover_text_calls) == Some(true)
        });
        if asked {
            return Err(ConfigError::Invalid(format!(
                "[host.{given}]: recover_text_calls is a setting of API hosts: an app host runs \
                 its own agent loop, so mcpeval cannot make the calls its model writes as text"
            )));
        }
        // `[profile]`'s setting is for the API hosts among all.
        profile.recover_text_calls = false;
    }
    if !matches!(provider, Provider::Sim | Provider::App) && model.is_none() {
        return Err(ConfigError::Invalid(format!(
            "host `{given}` needs a model: write `{given}:MODEL`"
        )));
    }
    Ok(HostConfig {
        name: given.to_owned(),
        provider,
        model,
        profile,
        rpm,
        tpm,
        settings,
        app,
    })
}

/// The app of `[host.NAME] app = …`, checked; `None` for an API host.
fn app_settings(
    name: &str,
    entry: &HostFile,
) -> Result<Option<crate::config::AppSettings>, ConfigError> {
    use crate::config::{AppKind, AppSettings};
    let invalid = |m: String| ConfigError::Invalid(format!("[host.{name}]: {m}"));
    let Some(app) = &entry.app else {
        let app_only = entry.program.is_some()
            || !entry.args.is_empty()
            || !entry.env.is_empty()
            || entry.allowed_tools.is_some()
            || entry.builtin_tools.is_some()
            || entry.timeout.is_some();
        if app_only {
            return Err(invalid(
                "program, args, env, allowed_tools, builtin_tools and timeout are settings of an \
                 app host: add `app = \"claude-code\"`, `app = \"codex\"` or `app = \"gemini-cli\"`"
                    .into(),
            ));
        }
        return Ok(None);
    };
    let kind = AppKind::parse(app).ok_or_else(|| {
        invalid(format!(
            "unknown app `{app}`: expected claude-code, codex or gemini-cli"
        ))
    })?;
    let mut settings = AppSettings::new(kind);
    if let Some(program) = &entry.program {
        let argv = program.argv();
        if argv.first().is_none_or(|p| p.trim().is_empty()) {
            return Err(invalid("`program` is empty".into()));
        }
        settings.program = argv;
    }
    settings.args = entry.args.clone();
    settings.env = entry.env.clone();
    settings.allowed_tools = entry.allowed_tools.clone();
    if let Some(b) = entry.builtin_tools {
        if !b && kind == AppKind::Codex {
            return Err(invalid(
                "`builtin_tools = false`: Codex has no switch to drop its own tools".into(),
            ));
        }
        settings.builtin_tools = b;
    }
    if let Some(t) = entry.timeout {
        if !(t.is_finite() && t > 0.0) {
            return Err(invalid(format!(
                "timeout must be a positive number of seconds, got {t}"
            )));
        }
        settings.timeout_s = t;
    }
    Ok(Some(settings))
}

/// The request settings of `[host.NAME]`, checked.
fn host_settings(name: &str, entry: &HostFile) -> Result<HostSettings, ConfigError> {
    let invalid = |m: String| ConfigError::Invalid(format!("[host.{name}]: {m}"));
    if let Some(t) = entry.temperature {
        if !(0.0..=2.0).contains(&t) {
            return Err(invalid(format!(
                "temperature must be between 0 and 2, got {t}"
            )));
        }
    }
    let max_tokens = match &entry.max_tokens {
        None => None,
        Some(MaxTokensFile::Count(n)) => Some(*n),
        Some(MaxTokensFile::Word(w)) if w.trim().eq_ignore_ascii_case("none") => Some(0),
        Some(MaxTokensFile::Word(w)) => {
            return Err(invalid(format!(
                "max_tokens must be a number of tokens, or 0 or \"none\" for no limit, got `{w}`"
            )))
        }
    };
    if let Some(budget) = entry.thinking_budget {
        if budget < 1024 {
            return Err(invalid(format!(
                "thinking_budget must be at least 1024 tokens (the API's minimum), got {budget}"
            )));
        }
        if max_tokens.is_some_and(|m| m <= budget) {
            return Err(invalid(format!(
                "max_tokens ({}) must be larger than thinking_budget ({budget}): thinking counts \
                 towards it",
                max_tokens.unwrap_or(0)
            )));
        }
    }
    for (key, value) in [
        ("timeout_s", entry.timeout_s),
        ("connect_timeout_s", entry.connect_timeout_s),
        ("first_byte_timeout_s", entry.first_byte_timeout_s),
    ] {
        if let Some(t) = value.filter(|t| !(t.is_finite() && *t > 0.0)) {
            return Err(invalid(format!(
                "{key} must be a positive number of seconds, got {t}"
            )));
        }
    }
    if entry.max_attempts == Some(0) {
        return Err(invalid("max_attempts must be at least 1".into()));
    }
    if entry.max_concurrency == Some(0) {
        return Err(invalid("max_concurrency must be at least 1".into()));
    }
    let tool_choice = super::host_request::read(entry).map_err(|e| invalid(e.0))?;
    for header in entry.headers.keys() {
        if reqwest::header::HeaderName::from_bytes(header.as_bytes()).is_err() {
            return Err(invalid(format!(
                "`{header}` is not a valid HTTP header name"
            )));
        }
    }
    Ok(HostSettings {
        temperature: entry.temperature,
        max_tokens,
        stream: entry.stream,
        connect_timeout_s: entry.connect_timeout_s,
        first_byte_timeout_s: entry.first_byte_timeout_s,
        thinking_budget: entry.thinking_budget,
        seed: entry.seed,
        parallel_tool_calls: entry.parallel_tool_calls,
        tool_choice,
        extra_body: entry.extra_body.clone(),
        headers: entry.headers.clone(),
        base_url_env: entry.base_url_env.clone(),
        api_key_env: entry.api_key_env.clone(),
        timeout_s: entry.timeout_s,
        max_attempts: entry.max_attempts,
        max_concurrency: entry.max_concurrency,
        breaker_after: entry.breaker_after,
    })
}

fn parse_provider(p: &str) -> Result<Provider, ConfigError> {
    match p {
        "sim" => Ok(Provider::Sim),
        "openai" => Ok(Provider::Openai),
        "openai-responses" => Ok(Provider::OpenaiResponses),
        "anthropic" => Ok(Provider::Anthropic),
        other => Err(ConfigError::Invalid(format!(
            "unknown host `{other}`: expected sim, openai:MODEL, openai-responses:MODEL, anthropic:MODEL, claude-code[:MODEL], codex[:MODEL], gemini-cli[:MODEL] or a [host.NAME] from the config"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overlay_server_hands_its_bases_env_headers_and_era_to_mcpeval_serve() {
        let file = parse_toml(
            "t.toml",
            "[servers.api]\nurl = \"http://127.0.0.1:9/mcp\"\nheaders = { X-Key = \"k-123\" }\n\
             protocol_era = \"legacy\"\n\
             [servers.tool]\ncommand = \"node x.js\"\nenv = { A = \"1\" }\n\
             [servers.worded]\noverlay = \"w.yaml\"\nbase = \"api\"\n\
             [servers.local]\noverlay = \"w.yaml\"\nbase = \"tool\"\n\
             [servers.bad]\noverlay = \"w.yaml\"\n",
        )
        .unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("w.yaml"), "overlay: 1\n").unwrap();
        let file_arg = dir.join("w.yaml").display().to_string();
        let resolve =
            |name: &str| server_from_file(name, &file.servers[name], &file.servers, Some(dir));
        let worded = resolve("worded").unwrap();
        let Transport::Stdio { args, .. } = &worded.transport else {
            panic!("an overlay is served over stdio")
        };
        assert_eq!(
            args[1..],
            [
                "--overlay",
                file_arg.as_str(),
                "--base",
                "http://127.0.0.1:9/mcp",
                "--protocol-era",
                "legacy"
            ]
        );
        assert!(worded.headers.is_empty());
        assert_eq!(
            worded.env[super::super::BASE_HEADERS_ENV],
            r#"{"X-Key":"k-123"}"#
        );
        assert!(worded.referenced_values.contains(&"k-123".to_owned()));
        // The key is on no command line.
        assert!(!worded.display().contains("k-123"));
        let local = resolve("local").unwrap();
        assert_eq!(local.env.get("A").map(String::as_str), Some("1"));
        assert!(!local.env.contains_key(super::super::BASE_HEADERS_ENV));
        let err = resolve("bad").unwrap_err().to_string();
        assert!(err.contains("`overlay` and `base` go together"), "{err}");
    }

    #[test]
    fn references_expand_whole_or_inside_a_text() {
        // Cargo sets CARGO_PKG_NAME for the tests it runs.
        assert_eq!(expand_value("$CARGO_PKG_NAME").unwrap(), "mcpeval");
        assert_eq!(
            expand_value("Bearer ${CARGO_PKG_NAME}").unwrap(),
            "Bearer mcpeval"
        );
        assert_eq!(
            expand_value("${CARGO_PKG_NAME}/a-${CARGO_PKG_NAME}.json").unwrap(),
            "mcpeval/a-mcpeval.json"
        );
        assert_eq!(
            expand_value("plain $5 ${ not a var}").unwrap(),
            "plain $5 ${ not a var}"
        );
        assert_eq!(
            expand_value("open ${CARGO_PKG_NAME").unwrap(),
            "open ${CARGO_PKG_NAME"
        );
        assert_eq!(
            expand_value("x ${MCPEVAL_SURELY_UNSET_1234} y")
                .unwrap_err()
                .0,
            "MCPEVAL_SURELY_UNSET_1234"
        );
        let map = BTreeMap::from([
            ("A".to_owned(), "token ${CARGO_PKG_NAME}".to_owned()),
            ("B".to_owned(), "$CARGO_PKG_NAME".to_owned()),
        ]);
        // Only the reference inside a longer text adds its variable's value on its own.
        assert_eq!(embedded_values(&map), ["mcpeval"]);
        let err = expand_env(&BTreeMap::from([(
            "K".to_owned(),
            "${MCPEVAL_SURELY_UNSET_1234}/x".to_owned(),
        )]))
        .unwrap_err()
        .to_string();
        assert!(err.contains("`MCPEVAL_SURELY_UNSET_1234`"), "{err}");
    }

    #[test]
    fn codex_hosts_read_openais_variables_and_keep_their_own_tools() {
        use crate::config::AppKind;
        let profile = HostProfile::default();
        let cli = resolve_host("codex:sim", &BTreeMap::new(), &profile).unwrap();
        assert_eq!(cli.provider, Provider::App);
        assert_eq!(cli.model.as_deref(), Some("sim"));
        assert_eq!(cli.app.as_ref().unwrap().app, AppKind::Codex);
        assert_eq!(cli.env_vars(), ("OPENAI_BASE_URL", "OPENAI_API_KEY"));
        let claude = resolve_host("claude-code", &BTreeMap::new(), &profile).unwrap();
        assert_eq!(
            claude.env_vars(),
            ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")
        );
        let text = "[host.cx]\napp = \"codex\"\nallowed_tools = [\"get_issue\"]\n\
                    [host.bad]\napp = \"codex\"\nbuiltin_tools = false\n";
        let file = parse_toml("t.toml", text).unwrap();
        let cx = resolve_host("cx", &file.named_hosts, &profile).unwrap();
        let app = cx.app.unwrap();
        assert_eq!(app.program, ["codex"]);
        assert_eq!(
            app.allowed_tools.as_deref(),
            Some(&["get_issue".to_owned()][..])
        );
        let err = resolve_host("bad", &file.named_hosts, &profile).unwrap_err();
        assert!(err.to_string().contains("Codex has no switch"), "{err}");
    }

    #[test]
    fn hosts_tables_are_named_hosts_that_all_run() {
        let text = "[hosts.claude-code-like]\nprovider = \"sim\"\n\
                    profile = { tool_naming = \"prefixed\" }\n\
                    [hosts.plain]\nprovider = \"openai\"\nmodel = \"m\"\ntemperature = 0.2\n";
        let file = parse_toml("t.toml", text).unwrap();
        assert_eq!(
            file.hosts.as_deref(),
            Some(&["claude-code-like".to_owned(), "plain".to_owned()][..])
        );
        let profile = HostProfile::default();
        let host = resolve_host("claude-code-like", &file.named_hosts, &profile).unwrap();
        assert_eq!(
            host.profile.tool_naming,
            crate::config::ToolNaming::Prefixed
        );
        let plain = resolve_host("plain", &file.named_hosts, &profile).unwrap();
        assert_eq!(plain.settings.temperature, Some(0.2));
        // Both spellings of one host, and errors elsewhere, are still errors (with a position).
        let both = "[hosts.x]\nprovider = \"sim\"\n[host.x]\nprovider = \"sim\"\n";
        let err = parse_toml("t.toml", both).unwrap_err().to_string();
        assert!(err.contains("both as [hosts.x] and [host.x]"), "{err}");
        let typo = "trials = \"ten\"\n";
        let err = parse_toml("t.toml", typo).unwrap_err().to_string();
        // The position is `file:line:col`, at the value.
        assert!(err.contains("t.toml:1:10: `trials`: invalid type"), "{err}");
    }

    #[test]
    fn a_suite_written_dot_slash_is_the_config_folders_even_if_one_is_where_mcpeval_runs() {
        let config = Path::new("/configs");
        // Unit tests run from the crate's root, which has `src/`.
        assert_eq!(suite_path(Some(config), "src".into()), PathBuf::from("src"));
        assert_eq!(
            suite_path(Some(config), "./src".into()),
            config.join("./src")
        );
        assert_eq!(
            suite_path(Some(config), "no-such".into()),
            config.join("no-such")
        );
        assert_eq!(suite_path(None, "./src".into()), PathBuf::from("./src"));
        let flag = flag_suite_path(Some(config), "./src".into());
        assert_eq!(
            flag,
            PathBuf::from("./src"),
            "a flag's is the working folder's"
        );
    }

    #[test]
    fn no_arguments_resolve_to_the_embedded_demo() {
        let config = resolve(&Overrides::default()).unwrap();
        assert_eq!(config.config_source, "<embedded demo>");
        assert_eq!(config.suites, [PathBuf::from("tasks/demo")]);
        assert_eq!(config.hosts[0].provider, Provider::Sim);
        assert_eq!(config.hosts[0].profile.server_label, "tracker");
        assert!(config
            .baseline
            .display()
            .ends_with("demo-server --release 1.4.0"));
    }

    #[test]
    fn flags_win_over_files_and_one_server_alone_is_an_error() {
        let over = Overrides {
            baseline: Some("node a.js".into()),
            candidate: Some("http://127.0.0.1:3002/mcp".into()),
            suites: vec!["tasks/x".into()],
            trials: Some(3),
            hosts: vec!["openai:gpt-4.1-mini".into()],
            ..Overrides::default()
        };
        let config = resolve(&over).unwrap();
        assert_eq!(config.trials, 3);
        assert_eq!(config.hosts[0].model.as_deref(), Some("gpt-4.1-mini"));
        let only_one = Overrides {
            baseline: Some("node a.js".into()),
            suites: vec!["t".into()],
            ..Overrides::default()
        };
        let err = resolve(&only_one).unwrap_err().to_string();
        assert!(err.contains("no candidate server"), "{err}");
    }

    #[test]
    fn gemini_cli_hosts_read_googles_variables_and_may_drop_their_own_tools() {
        use crate::config::AppKind;
        let profile = HostProfile::default();
        let cli = resolve_host("gemini-cli:gemini-2.5-flash", &BTreeMap::new(), &profile).unwrap();
        assert_eq!(cli.provider, Provider::App);
        assert_eq!(cli.model.as_deref(), Some("gemini-2.5-flash"));
        let app = cli.app.as_ref().unwrap();
        assert_eq!(app.app, AppKind::GeminiCli);
        assert_eq!(app.program, ["gemini"]);
        assert_eq!(cli.env_vars(), ("GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY"));
        let text = "[host.gm]\napp = \"gemini-cli\"\nbuiltin_tools = false\n";
        let file = parse_toml("t.toml", text).unwrap();
        let gm = resolve_host("gm", &file.named_hosts, &profile).unwrap();
        assert!(!gm.app.unwrap().builtin_tools);
    }

    #[test]
    fn unknown_keys_and_hosts_are_errors() {
        assert!(parse_toml("x", "trails = 3").is_err());
        let named = BTreeMap::new();
        let err = resolve_host("gemini:x", &named, &HostProfile::default()).unwrap_err();
        assert!(err.to_string().contains("unknown host `gemini`"));
        assert!(resolve_host("openai", &named, &HostProfile::default()).is_err());
    }
}
