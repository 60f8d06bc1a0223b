//! An app host as built for a run (its settings are `config::AppSettings`): the program found,
//! its version, and one trial's run of it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::claude::ClaudeCode;
use super::codex::Codex;
use super::gemini::GeminiCli;
use crate::config::{AppKind, AppSettings, ServerSpec};
use crate::episode::TrialOutput;

/// What one trial of an app needs.
pub struct AppTrial<'a> {
    pub prompt: &'a str,
    pub max_turns: u32,
    /// The trial's seed: the apps take none; it goes to the model endpoint in a header that only
    /// `mcpeval sim-server` reads ([`crate::host::SEED_HEADER`]).
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
    ) -> Result<Self, super::AppError> {
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

/// A trial this app could not be started for: an infrastructure error naming the app.
pub(super) fn infra(app: AppKind, error: impl std::fmt::Display) -> TrialOutput {
    TrialOutput {
        infra_error: Some(format!("{}: {error}", app.as_str())),
        ..TrialOutput::default()
    }
}
