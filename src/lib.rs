//! mcpeval: runs MCP task suites against a baseline and a candidate server through LLM hosts.

pub mod cli;
pub mod config;
pub mod contract;
pub mod episode;
pub mod grade;
pub mod history;
pub mod host;
pub mod job;
pub mod mcp;
pub mod memory;
pub mod report;
pub mod rundir;
pub mod runner;
pub mod stats;
pub mod suite;
