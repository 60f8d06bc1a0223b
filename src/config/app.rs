//! App hosts' settings (`--host claude-code[:MODEL]`, a `[host.NAME]` table with `app`): which
//! host application runs the trials, and how it is started.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

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
