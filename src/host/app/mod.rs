//! App hosts: host applications (Claude Code, Codex CLI; Gemini CLI to come) that run a trial's
//! agent loop themselves, headless, against the side's server; their event stream is read back
//! into the same `TrialOutput` as mcpeval's own agent loop produces.

mod claude;
mod claude_stream;
mod codex;
mod codex_events;
mod process;
mod settings;

pub use claude::{mcp_config, ClaudeCode};
pub use claude_stream::parse_stream;
pub use codex::{config_toml, server_table, ProviderConfig};
pub use codex_events::parse_events;
pub use process::{AppRun, Finished};
pub use settings::{AppHost, AppKind, AppModelName, AppSettings, AppTrial, DEFAULT_TIMEOUT_S};
