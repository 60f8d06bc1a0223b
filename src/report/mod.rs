//! Renderers of a run's comparison (made by `analysis`): the console table, the comparison
//! tables, summary.md, junit.xml, report.html, and their live rewrites while a run goes. The run
//! directory's own files are `rundir`'s.

mod console;
mod export;
mod format;
mod frame;
mod html;
mod junit;
mod live;
mod markdown;

pub use console::verdict_table;
pub use export::{exporters, write_reports, Exporter, Report, JUNIT_XML, SUMMARY_MD};
pub use format::{percent as format_percent, points as format_points};
pub use frame::{comparison_frame, COMPARISON_CSV, COMPARISON_PARQUET};
pub use html::{HtmlReport, REPORT_HTML};
pub use live::{lock as lock_collector, LiveReports, REFRESH_EVERY};
