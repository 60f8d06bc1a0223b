//! The integration tests, one test binary (`cargo test --test integration`): each module drives
//! the real `mcpeval` binary (or the library, for the simulations) as its file says. One binary
//! links the library and polars once rather than once per file.

mod common;
mod synthetic;

mod adaptive;
mod adaptive_false_alarm;
mod after_retry;
mod anthropic_host;
mod budget;
mod cache;
mod call_position;
mod call_tasks;
mod check;
mod check_trust;
mod claude_code_host;
mod codex_host;
mod config_file;
mod contract;
mod contract_reading;
mod diagnostics;
mod exit_codes;
mod false_alarm;
mod faults;
mod fixtures;
mod gemini_cli_host;
mod graders;
mod html_report;
mod init;
mod judge;
mod layering;
mod nightly;
mod openai_host;
mod outage;
mod packaging;
mod power;
mod readme;
mod real_llm;
mod renames;
mod report_snapshots;
mod result_keys;
mod resume;
mod row_words;
mod run_demo;
mod secrets_and_storms;
mod servers;
mod shard;
mod sim_real_args;
mod slow_models;
mod tasks_check;
mod tasks_import;
mod tasks_lint;
mod text_tool_calls;
mod trust;
mod user_meant;
mod verdicts;
