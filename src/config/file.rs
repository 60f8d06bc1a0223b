//! The config file format (TOML): every key optional, so files can be layered over each other.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::SimConfig;

/// A config file as written. `None` means "not set here": the layer below decides.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub seed: Option<u64>,
    pub trials: Option<u32>,
    pub concurrency: Option<usize>,
    pub isolation: Option<Isolation>,
    pub retries: Option<u32>,
    pub suites: Option<Vec<PathBuf>>,
    pub hosts: Option<Vec<String>>,
    pub out_dir: Option<PathBuf>,
    /// Server spec or the name of a `[servers.NAME]` table.
    pub baseline: Option<String>,
    pub candidate: Option<String>,
    pub sim: Option<SimConfig>,
    pub profile: Option<ProfileFile>,
    pub stats: Option<super::stats::StatsFile>,
    /// `[budget]`: limits of one run.
    pub budget: Option<crate::config::Budget>,
    /// `[prices.MODEL]`: US dollars per million input / output tokens.
    #[serde(default)]
    pub prices: BTreeMap<String, crate::config::Price>,
    #[serde(default)]
    pub servers: BTreeMap<String, ServerFile>,
    /// Environment variables whose values are secrets: redacted from run.json, transcripts,
    /// episodes and error messages (API-key variables and configured env/header values always are).
    #[serde(default)]
    pub secret_env: Vec<String>,
    #[serde(rename = "host", default)]
    pub named_hosts: BTreeMap<String, HostFile>,
    /// `[auth.NAME]`: credentials a snapshot can be taken with (`--auth-profile NAME`).
    #[serde(default)]
    pub auth: BTreeMap<String, AuthFile>,
    /// `[renames]`: `old = "new"`, tools the candidate renamed; the candidate side's expected,
    /// forbidden and called tool names are mapped (see `RunConfig::renames`).
    #[serde(default)]
    pub renames: BTreeMap<String, String>,
    /// `[nightly]`: read by `mcpeval nightly` alone (`crate::config::NightlyFile`); a run
    /// ignores it.
    pub nightly: Option<crate::config::NightlyFile>,
    /// `[check]`: read by `mcpeval check` alone (`crate::config::CheckFile`); a run ignores it.
    pub check: Option<crate::config::CheckFile>,
    /// Trials may call tools that change a server's real state (`--allow-writes`).
    pub allow_writes: Option<bool>,
}

/// `[auth.NAME]`: headers (HTTP) or environment (stdio) added to a server for one snapshot;
/// values `"$VAR"` / `"${VAR}"` are read from the environment.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthFile {
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// How far servers are shared between trials (stdio servers; HTTP servers are run by the user).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// A fresh server process per trial.
    #[default]
    Trial,
    /// One server process per task and side, shared by that task's trials.
    Task,
    /// One server process per side for the whole run.
    Run,
}

impl std::str::FromStr for Isolation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "trial" => Ok(Self::Trial),
            "task" => Ok(Self::Task),
            "run" => Ok(Self::Run),
            other => Err(format!(
                "unknown isolation `{other}` (expected trial, task or run)"
            )),
        }
    }
}

/// `[profile]` or a host's `profile = { … }`: each key overrides the layer below.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileFile {
    pub tool_naming: Option<crate::config::ToolNaming>,
    pub pass_title: Option<bool>,
    pub pass_instructions: Option<bool>,
    pub system_prompt: Option<String>,
    pub server_label: Option<String>,
    pub max_tools: Option<usize>,
    pub tool_order: Option<crate::config::ToolOrder>,
    /// Make the tool calls a model writes as text (API hosts; see docs/hosts.md).
    pub recover_text_calls: Option<bool>,
    /// What of the server the model is shown: tools, resources, prompts (API hosts).
    pub expose: Option<Vec<crate::config::Exposed>>,
    pub list_resources_tool: Option<String>,
    pub read_resource_tool: Option<String>,
    /// How the model finds the server's tools: `native` or `emulated` (API hosts).
    pub tool_search: Option<crate::config::ToolSearch>,
    pub tool_search_k: Option<usize>,
    pub tool_search_variant: Option<crate::config::SearchVariant>,
    pub search_tools_tool: Option<String>,
}

/// `[servers.NAME]`: one server version.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerFile {
    /// A command line (split like a shell would, never run by one) …
    pub command: Option<String>,
    /// … or a Streamable HTTP URL.
    pub url: Option<String>,
    /// Environment for a stdio server. A value `"$VAR"` or `"${VAR}"` is read from mcpeval's own
    /// environment, so secrets need not be written into the file.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// HTTP headers; values may name environment variables the same way.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    pub protocol_era: Option<crate::config::ProtocolEra>,
    pub startup_timeout_ms: Option<u64>,
    pub call_timeout_ms: Option<u64>,
    /// An overlay file put over `base`'s lists (relative to the config file's folder); this
    /// server is then `overlay:FILE+BASE`, and `command`/`url` are not set.
    pub overlay: Option<PathBuf>,
    /// A cassette (`run --record DIR` writes them; relative to the config file's folder) that
    /// answers `base`'s calls; this server is then `replay:CASSETTE+BASE`.
    pub replay: Option<PathBuf>,
    /// With `replay`: a request the cassette does not hold is answered with an `error` (the
    /// default), from the `nearest` recorded call of the same tool, or by the `live` base.
    pub unmatched: Option<String>,
    /// The server under an overlay or a replay: a spec, or the name of another
    /// `[servers.NAME]` (whose env, headers, cwd and era reach it).
    pub base: Option<String>,
    /// `"process"`: each process starts from nothing, so trials may call its tools that write;
    /// `"external"` (the default): its state may outlive the process.
    pub state: Option<crate::config::ServerState>,
    /// A path (or `{ NAME = "PATH" }`, several) copied afresh for every start of the server's
    /// process; `{sandbox}` (`{sandbox.NAME}`) in its command, env, cwd and the tasks is the copy.
    pub sandbox: Option<crate::config::SandboxFile>,
}

/// `[host.NAME]`: a named host.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostFile {
    /// `sim`, `openai`, `openai-responses` or `anthropic` (empty for an app host).
    #[serde(default)]
    pub provider: String,
    /// Which OpenAI API an `openai` host speaks: `chat` (chat completions, the default) or
    /// `responses` (the Responses API, as `provider = "openai-responses"`).
    pub api: Option<String>,
    /// A host application that runs the trials itself: `claude-code`, `codex` or `gemini-cli`.
    pub app: Option<String>,
    /// The app's program: a path or name on `PATH`, or an argv (`["npx", "-y", "pkg"]`).
    pub program: Option<ProgramFile>,
    /// Extra arguments for the app.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment for the app; `${VAR}` values are read from mcpeval's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Tools the app may call, by the baseline's bare names (`["*"]` = all): Claude Code's
    /// `--allowedTools`, Codex's `enabled_tools`.
    pub allowed_tools: Option<Vec<String>>,
    /// Keep the app's built-in tools (default true; false passes Claude Code `--tools ""`;
    /// Codex cannot drop its own).
    pub builtin_tools: Option<bool>,
    /// Seconds one trial of the app may take (default 300).
    pub timeout: Option<f64>,
    pub model: Option<String>,
    pub profile: Option<ProfileFile>,
    /// Make the tool calls the model writes as text, as if it had made them (API hosts: an app
    /// runs its own loop). The same as `profile = { recover_text_calls = … }`.
    pub recover_text_calls: Option<bool>,
    /// Requests per minute the runner sends this host at most (evenly spaced).
    pub rpm: Option<u32>,
    /// Tokens per minute (input + output) this host may use at most.
    pub tpm: Option<u64>,
    /// Sampling temperature sent with every request (absent: the provider's default).
    pub temperature: Option<f64>,
    /// Output-token limit of one model turn (default 4096 for openai, 1024 for anthropic);
    /// `0` or `"none"` sends no limit (openai only: the Messages API requires one).
    pub max_tokens: Option<MaxTokensFile>,
    /// Ask for answers as a stream of events (default true): tells a provider that does not
    /// answer from a model that answers slowly, and keeps what a generation cut at `timeout_s`
    /// produced.
    pub stream: Option<bool>,
    /// Seconds connecting may take (default 10).
    pub connect_timeout_s: Option<f64>,
    /// Seconds a streamed answer may take to send its first byte (default 60); longer is a
    /// provider not answering, retried.
    pub first_byte_timeout_s: Option<f64>,
    /// Anthropic extended thinking: `budget_tokens` of every request (at least 1024).
    pub thinking_budget: Option<u32>,
    /// Send the trial's seed (openai; default true). Some compatible servers reject `seed`.
    pub seed: Option<bool>,
    /// `parallel_tool_calls` sent to openai endpoints (absent: the provider's default).
    pub parallel_tool_calls: Option<bool>,
    /// `auto`, `required`, `none` or a tool's name, sent in each provider's form (absent: the
    /// provider's default). `required` and a tool force a call only before a trial's first tool
    /// result.
    pub tool_choice: Option<String>,
    /// Fields merged into every request body (as LiteLLM's `extra_body`), e.g. vLLM's
    /// `chat_template_kwargs = { enable_thinking = false }`. Never credentials (refused: this
    /// table is written to run.json); fields mcpeval sets itself are refused too.
    #[serde(default)]
    pub extra_body: BTreeMap<String, serde_json::Value>,
    /// Extra HTTP headers; a value `"$VAR"` / `"${VAR}"` is read from the environment and is
    /// treated as a secret (redacted from every file the run writes).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The environment variable holding the endpoint (default `OPENAI_BASE_URL` /
    /// `ANTHROPIC_BASE_URL`).
    pub base_url_env: Option<String>,
    /// The environment variable holding the API key (default `OPENAI_API_KEY` /
    /// `ANTHROPIC_API_KEY`).
    pub api_key_env: Option<String>,
    /// Seconds one request may take (default 120).
    pub timeout_s: Option<f64>,
    /// Attempts per request, the first included (default 4).
    pub max_attempts: Option<u32>,
    /// Requests in flight to this host at most; on 429 answers the host backs off below it and
    /// grows back (default: the run's concurrency).
    pub max_concurrency: Option<usize>,
    /// Requests in a row that fail for one lasting reason (connection refused, DNS, TLS, 401 or
    /// 403, quota exhausted) before the run stops sending this host trials (default 10; 0
    /// never stops).
    pub breaker_after: Option<u32>,
}

/// `max_tokens`: a count, or `"none"` for no limit.
#[derive(Debug, Clone, Deserialize)]
#[serde(
    untagged,
    expecting = "expected a number of tokens, or 0 or \"none\" for no limit"
)]
pub enum MaxTokensFile {
    Count(u32),
    Word(String),
}

/// An app's `program`: one path or name, or an argv list.
#[derive(Debug, Clone, Deserialize)]
#[serde(
    untagged,
    expecting = "expected a program (a string) or an argv (an array of strings)"
)]
pub enum ProgramFile {
    One(String),
    Argv(Vec<String>),
}

impl ProgramFile {
    pub fn argv(&self) -> Vec<String> {
        match self {
            Self::One(p) => vec![p.clone()],
            Self::Argv(v) => v.clone(),
        }
    }
}

impl ConfigFile {
    /// Lays `over` on top of `self`: keys `over` sets win.
    pub fn layer(mut self, over: ConfigFile) -> ConfigFile {
        macro_rules! take {
            ($($field:ident),*) => { $( if over.$field.is_some() { self.$field = over.$field; } )* };
        }
        take!(
            seed,
            trials,
            concurrency,
            isolation,
            retries,
            suites,
            hosts,
            out_dir,
            baseline,
            candidate,
            sim,
            allow_writes
        );
        self.profile = match (self.profile.take(), over.profile) {
            (Some(below), Some(above)) => Some(below.layer(above)),
            (below, above) => above.or(below),
        };
        self.stats = match (self.stats.take(), over.stats) {
            (Some(below), Some(above)) => Some(below.layer(above)),
            (below, above) => above.or(below),
        };
        if over.budget.is_some() {
            self.budget = over.budget;
        }
        self.prices.extend(over.prices);
        self.servers.extend(over.servers);
        self.secret_env.extend(over.secret_env);
        self.named_hosts.extend(over.named_hosts);
        self.auth.extend(over.auth);
        self.renames.extend(over.renames);
        self
    }
}

impl ProfileFile {
    pub fn layer(self, over: ProfileFile) -> ProfileFile {
        ProfileFile {
            tool_naming: over.tool_naming.or(self.tool_naming),
            pass_title: over.pass_title.or(self.pass_title),
            pass_instructions: over.pass_instructions.or(self.pass_instructions),
            system_prompt: over.system_prompt.or(self.system_prompt),
            server_label: over.server_label.or(self.server_label),
            max_tools: over.max_tools.or(self.max_tools),
            tool_order: over.tool_order.or(self.tool_order),
            recover_text_calls: over.recover_text_calls.or(self.recover_text_calls),
            expose: over.expose.or(self.expose),
            list_resources_tool: over.list_resources_tool.or(self.list_resources_tool),
            read_resource_tool: over.read_resource_tool.or(self.read_resource_tool),
            tool_search: over.tool_search.or(self.tool_search),
            tool_search_k: over.tool_search_k.or(self.tool_search_k),
            tool_search_variant: over.tool_search_variant.or(self.tool_search_variant),
            search_tools_tool: over.search_tools_tool.or(self.search_tools_tool),
        }
    }

    /// Applies the keys set here to a resolved profile.
    pub fn apply(&self, profile: &mut super::HostProfile) {
        if let Some(v) = self.tool_naming {
            profile.tool_naming = v;
        }
        if let Some(v) = self.pass_title {
            profile.pass_title = v;
        }
        if let Some(v) = self.pass_instructions {
            profile.pass_instructions = v;
        }
        if let Some(v) = &self.system_prompt {
            profile.system_prompt = v.clone();
        }
        if let Some(v) = &self.server_label {
            profile.server_label = v.clone();
        }
        if let Some(v) = self.max_tools {
            profile.max_tools = Some(v);
        }
        if let Some(v) = self.tool_order {
            profile.tool_order = v;
        }
        if let Some(v) = self.recover_text_calls {
            profile.recover_text_calls = v;
        }
        if let Some(v) = &self.expose {
            profile.expose = v.clone();
        }
        if let Some(v) = &self.list_resources_tool {
            profile.list_resources_tool = v.clone();
        }
        if let Some(v) = &self.read_resource_tool {
            profile.read_resource_tool = v.clone();
        }
        if let Some(v) = self.tool_search {
            profile.tool_search = Some(v);
        }
        if let Some(v) = self.tool_search_k {
            profile.tool_search_k = v;
        }
        if let Some(v) = self.tool_search_variant {
            profile.tool_search_variant = v;
        }
        if let Some(v) = &self.search_tools_tool {
            profile.search_tools_tool = v.clone();
        }
    }
}
