//! App hosts: host applications (Claude Code, Codex CLI, Gemini CLI) that run a trial's agent
//! loop themselves, headless, against the side's server; their event stream is read back into
//! the same `TrialOutput` as mcpeval's own agent loop produces.

mod claude;
mod claude_stream;
mod codex;
mod codex_events;
mod gemini;
mod gemini_stream;
mod process;
mod settings;
mod stream;

pub use crate::config::{AppKind, AppSettings, DEFAULT_TIMEOUT_S};
pub use claude::{mcp_config, ClaudeCode};
pub use claude_stream::parse_stream;
pub use codex::{config_toml, server_table, ProviderConfig};
pub use codex_events::parse_events;
pub use gemini::{policy_toml, settings_json, tool_name as gemini_tool_name};
pub use gemini_stream::parse_stream as parse_gemini_stream;
pub use process::{AppError, AppRun, Finished};
pub use settings::{AppHost, AppTrial};
