//! Reports of a run: the comparison and its verdicts, and the files and console table made of
//! it (comparison tables, summary.md, junit.xml, report.html). The run directory's own files are
//! `rundir`'s.

pub mod adaptive;
mod comparison;
#[cfg(test)]
pub(crate) use comparison::tests as comparison_tests;
mod console;
mod export;
mod format;
mod frame;
mod html;
mod junit;
mod live;
mod markdown;
mod verdict;

pub use comparison::{
    compare, suite_metrics, suite_scopes, Collector, Comparison, Detectable, EpisodeFacts, Outcome,
    Row, RunDesign, SideOutcome, TaskOutcome, TaskVerdict, UsageTotal, MAX_PLANNED_TRIALS, SUITE,
};
pub use console::verdict_table;
pub use export::{exporters, write_reports, Exporter, Report, JUNIT_XML, SUMMARY_MD};
pub use format::{percent as format_percent, points as format_points};
pub use frame::{comparison_frame, COMPARISON_CSV, COMPARISON_PARQUET};
pub use html::{HtmlReport, REPORT_HTML};
pub use live::{lock as lock_collector, LiveReports, REFRESH_EVERY};
pub use verdict::{decide, margin, Level, Scope, TestName, Verdict};
