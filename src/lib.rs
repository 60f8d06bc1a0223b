//! mcpeval: runs MCP task suites against a baseline and a candidate server through LLM hosts.
//!
//! The modules in layers, from the face down: each imports only modules listed below it
//! (docs/architecture.md; `tests/integration/layering.rs` keeps it so).

pub mod analysis;
pub mod cassette;
pub mod cli;
pub mod config;
pub mod contract;
pub mod episode;
pub mod error;
pub mod grade;
pub mod history;
pub mod host;
pub mod job;
pub mod mcp;
pub mod memory;
pub mod net;
pub mod report;
pub mod rundir;
pub mod runner;
pub mod sim;
pub mod stats;
pub mod suite;
#[cfg(test)]
pub(crate) mod test_support;
