//! A promptfoo config as mcpeval cases: one per test and prompt, the test's vars filled into
//! the prompt template, its assertions (with `defaultTest`'s) as graders where one fits.
//!
//! The format: promptfoo's docs, site/docs/configuration/expected-outputs/ (assertion types,
//! `trajectory:*` tool assertions) and site/docs/integrations/mcp.md (providers with
//! `config.mcp`), github.com/promptfoo/promptfoo.
mod assertions;
mod config;
mod prompts;
mod providers;
#[cfg(test)]
mod tests;

pub use config::convert;
