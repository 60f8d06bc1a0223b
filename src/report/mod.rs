//! Renderers of a run's comparison (made by `analysis`): the console table, the comparison
//! tables, summary.md, junit.xml, report.html, and their live rewrites while a run goes. The run
//! directory's own files are `rundir`'s.

mod check;
mod console;
mod diagnosis;
mod export;
mod format;
mod frame;
mod html;
mod junit;
mod live;
mod markdown;
mod marked;
mod stale_list;
mod tool_choice;
mod tool_search;
mod tool_shift;
mod tool_tokens;
mod triggered;

pub use check::{
    check_junit, check_summary, exit as check_exit, record_exit as check_record_exit,
    sides as check_sides, stage_line,
};
pub use console::{verdict_notes, verdict_table};
pub use diagnosis::{
    console_lines as diagnosis_lines, headlines as diagnosis_headlines, text as diagnosis_text,
};
pub use export::{
    append_step_summary, exporters, write_reports, write_reports_with, Exporter, Report, JUNIT_XML,
    SUMMARY_MD,
};
pub use format::{p as format_p, percent as format_percent, points as format_points, TaskCounts};
pub use frame::{comparison_frame, COMPARISON_CSV, COMPARISON_PARQUET};
pub use html::{HtmlReport, REPORT_HTML};
pub use live::{lock as lock_collector, LiveReports, REFRESH_EVERY};
pub use marked::{refresh as refresh_sections, AGREEMENT_MD, WHY_MD};
pub use stale_list::{console as stale_list_lines, read_stale_list};
pub use tool_choice::{
    all_calls as tool_choice_all_calls, lines as tool_choice_lines, TOOL_CHOICE,
};
pub use tool_shift::{read_tool_shift, write_tool_shift, TOOL_SHIFT_CSV};
pub use triggered::code as markdown_code;
