//! Host settings that name tools — Claude Code's `permissions`, Gemini CLI's
//! `includeTools`/`excludeTools`, Codex's `enabled_tools`/`disabled_tools`, VS Code's tool sets,
//! mcpeval's own `allowed_tools` — read with each entry's line, and the entries that name a tool
//! the candidate renamed or removed: such an entry silently stops matching (docs/check.md, "Host
//! settings that name tools").

mod entry;
mod files;
mod find;
mod json;
mod tie;
mod toml_files;

pub use entry::{Entry, Scope};
pub use files::{defaults, read_all, server_files, Found, Kind, SettingsFile};
pub use find::{findings, Fate, Finding, ToolChanges};
pub use tie::{ServerDef, Tie, UnderTest};
