//! Reports of a run: the JSONL episode log, the tables (Parquet/CSV), `run.json`, the comparison
//! and its verdicts, the console table.

mod comparison;
#[cfg(test)]
pub(crate) use comparison::tests as comparison_tests;
mod console;
mod export;
mod format;
mod html;
mod jsonl;
mod junit;
mod live;
mod markdown;
mod run_info;
mod tables;
mod verdict;

pub use comparison::{
    compare, suite_metrics, suite_scopes, Collector, Comparison, Detectable, Outcome, Row,
    RunDesign, SideOutcome, TaskOutcome, TaskVerdict, UsageTotal, MAX_PLANNED_TRIALS, SUITE,
};
pub use console::verdict_table;
pub use export::{exporters, write_reports, Exporter, Report, JUNIT_XML, SUMMARY_MD};
pub use format::{percent as format_percent, points as format_points};
pub use html::{HtmlReport, REPORT_HTML};
pub use jsonl::{read_episodes, scan_episodes, EpisodeWriter, EPISODES_JSONL, TRANSCRIPTS_JSONL};
pub use live::{LiveReports, REFRESH_EVERY};
pub use run_info::MergedShard;
pub use run_info::{git_commit, own_cpu_ms, HostRecord, RunInfo, ServerRecord, RUN_JSON};
pub(crate) use tables::col;
pub use tables::{
    comparison_frame, write_csv, write_parquet, write_tables, Tables, COMPARISON_CSV,
    COMPARISON_PARQUET,
};
pub use verdict::{decide, margin, Level, Scope, TestName, Verdict};
