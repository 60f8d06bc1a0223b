//! What an app host is configured with (`[host.NAME] app = …`), and the host as built for a run:
//! the program found, its version, and one trial's run of it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::claude::ClaudeCode;
use super::codex::Codex;
use super::gemini::GeminiCli;
use crate::config::ServerSpec;
use crate::episode::TrialOutput;

/// Seconds one trial of an app may take before it is killed (an infrastructure error).
pub const DEFAULT_TIMEOUT_S: f64 = 300.0;

/// Which host application runs the trials.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AppKind {
    #[serde(rename = "claude-code")]
    ClaudeCode,
    #[serde(rename = "codex")]
    Codex,
    #[serde(rename = "gemini-cli")]
    GeminiCli,
}

impl AppKind {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "claude-code" => Some(Self::ClaudeCode),
            "codex" => Some(Self::Codex),
            "gemini-cli" => Some(Self::GeminiCli),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::GeminiCli => "gemini-cli",
        }
    }

    /// A trial this app could not be started for: an infrastructure error naming the app.
    pub fn infra(self, error: String) -> TrialOutput {
        TrialOutput {
            infra_error: Some(format!("{}: {error}", self.as_str())),
            ..TrialOutput::default()
        }
    }

    /// The program run when the config names none (looked up on `PATH`).
    pub fn default_program(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude",
            Self::Codex => "codex",
            Self::GeminiCli => "gemini",
        }
    }
}

/// An app host's settings, resolved from `--host claude-code[:MODEL]` or a `[host.NAME]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppSettings {
    pub app: AppKind,
    /// The command line that starts the app: one program, or an argv such as
    /// `["npx", "-y", "@anthropic-ai/claude-code"]`. Never run through a shell.
    pub program: Vec<String>,
    /// Extra arguments after mcpeval's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment set for the app, after mcpeval's; values may be `${VAR}` references (and are
    /// secrets: run.json gets only the names).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        serialize_with = "names_only"
    )]
    pub env: BTreeMap<String, String>,
    /// Tools the app may call without asking, written against the baseline's bare tool names
    /// (`["search_issues"]`, `["*"]`); `None` = every tool of the trial's server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    /// Whether the app keeps its built-in tools (Claude Code's Bash, Read, …); `false` passes
    /// `--tools ""` to Claude Code and writes `tools.core = []` for Gemini CLI. Codex always
    /// keeps its own (it has no such switch).
    pub builtin_tools: bool,
    /// Seconds one trial may take.
    pub timeout_s: f64,
}

fn names_only<S: serde::Serializer>(
    env: &BTreeMap<String, String>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = serializer.serialize_map(Some(env.len()))?;
    for name in env.keys() {
        map.serialize_entry(name, "[REDACTED]")?;
    }
    map.end()
}

impl AppSettings {
    /// The defaults for an app: its program from `PATH`, every server tool allowed, the app's
    /// built-in tools kept, [`DEFAULT_TIMEOUT_S`].
    pub fn new(app: AppKind) -> Self {
        Self {
            app,
            program: vec![app.default_program().to_owned()],
            args: Vec::new(),
            env: BTreeMap::new(),
            allowed_tools: None,
            builtin_tools: true,
            timeout_s: DEFAULT_TIMEOUT_S,
        }
    }
}

/// What one trial of an app needs.
pub struct AppTrial<'a> {
    pub prompt: &'a str,
    pub max_turns: u32,
    /// The trial's seed: the apps take none; it goes to the model endpoint in a header that only
    /// `mcpeval sim-server` reads ([`crate::host::sim_server::SEED_HEADER`]).
    pub seed: u64,
    /// The side's server; the app starts (stdio) or connects to (HTTP) it itself.
    pub server: &'a ServerSpec,
    /// The server's name in the app's config (`mcp__<label>__<tool>`): the same on both sides.
    pub label: &'a str,
}

/// An app host as built for a run.
#[derive(Debug, Clone)]
pub struct AppHost {
    pub settings: AppSettings,
    /// The model passed to the app (`--model`), if the host names one.
    pub model: Option<String>,
    /// The variables the app reads its endpoint and key from, copied from mcpeval's environment
    /// (Claude Code `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`; Codex `OPENAI_BASE_URL`,
    /// `OPENAI_API_KEY`; Gemini CLI `GOOGLE_GEMINI_BASE_URL`, `GEMINI_API_KEY`; unless the host
    /// names others).
    pub base_url_env: String,
    pub api_key_env: String,
    /// What `PROGRAM --version` printed when the host was built.
    pub version: Option<String>,
    /// Where per-trial directories are made (the system's temporary directory).
    pub scratch: PathBuf,
}

impl AppHost {
    /// Finds the program and asks its version, so that a missing app fails the run before its
    /// first trial. `Err` says what is wrong.
    pub fn build(
        settings: AppSettings,
        model: Option<String>,
        base_url_env: &str,
        api_key_env: &str,
    ) -> Result<Self, String> {
        let version = super::process::version(&settings.program)?;
        Ok(Self {
            settings,
            model,
            base_url_env: base_url_env.to_owned(),
            api_key_env: api_key_env.to_owned(),
            version: Some(version),
            scratch: std::env::temp_dir(),
        })
    }

    /// `claude-code:MODEL` (or `claude-code` for the app's default model), as episodes name it.
    pub fn id(&self) -> String {
        match &self.model {
            Some(m) => format!("{}:{m}", self.settings.app.as_str()),
            None => self.settings.app.as_str().to_owned(),
        }
    }

    /// Runs one trial in a private directory that is removed afterwards.
    pub async fn run_trial(&self, trial: &AppTrial<'_>) -> TrialOutput {
        match self.settings.app {
            AppKind::ClaudeCode => ClaudeCode { host: self }.run(trial).await,
            AppKind::Codex => Codex { host: self }.run(trial).await,
            AppKind::GeminiCli => GeminiCli { host: self }.run(trial).await,
        }
    }

    pub(super) fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.settings.timeout_s)
    }

    pub(super) fn scratch(&self) -> &Path {
        &self.scratch
    }
}

/// The name an app host goes by where the runner expects a model (`claude-code:MODEL`): the
/// app runs its own loop, so nothing asks it for a completion, and a request would be a bug.
pub struct AppModelName(pub String);

#[async_trait::async_trait]
impl crate::host::Model for AppModelName {
    fn id(&self) -> &str {
        &self.0
    }

    async fn complete(
        &self,
        _request: &crate::host::CompletionRequest,
    ) -> Result<crate::host::Completion, crate::host::HostError> {
        Err(crate::host::HostError::Other(format!(
            "`{}` is an app host: it runs its own loop and answers no completion requests",
            self.0
        )))
    }
}
