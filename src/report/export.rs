//! The comparison's files behind one `Exporter` trait: Parquet, CSV, Markdown summary, JUnit.

use std::path::Path;

use anyhow::Context;
use polars_io::prelude::{CsvWriter, ParquetWriter, SerWriter};

use super::frame::{comparison_frame, COMPARISON_CSV, COMPARISON_PARQUET};
use crate::analysis::stale_list::StaleWindow;
use crate::analysis::tool_shift::ToolShiftFacts;
use crate::analysis::Comparison;
use crate::rundir::RunInfo;

pub use crate::rundir::SUMMARY_MD;
pub const JUNIT_XML: &str = "junit.xml";

/// What the reports are made of.
pub struct Report<'a> {
    /// The run whose candidate is judged (and, without `baseline_run`, whose baseline too).
    pub info: &'a RunInfo,
    /// The run the baseline episodes came from, when it is another one (`compare --against`).
    pub baseline_run: Option<&'a RunInfo>,
    pub comparison: &'a Comparison,
    /// The tool-choice shift read from the episodes on disk ([`super::read_tool_shift`]), shown
    /// in summary.md and report.html; `None` while a run goes (the live reports).
    pub tool_shift: Option<&'a ToolShiftFacts>,
    /// The stale-list window's counts read from the episodes on disk
    /// ([`super::read_stale_list`]); `None` for a run without `--stale-list`, and while a run
    /// goes (the live reports).
    pub stale_list: Option<&'a StaleWindow>,
}

impl Report<'_> {
    /// The run the baseline episodes came from.
    pub fn baseline_info(&self) -> &RunInfo {
        self.baseline_run.unwrap_or(self.info)
    }
}

/// One report file.
pub trait Exporter {
    /// The file's name in the run directory.
    fn file_name(&self) -> &'static str;
    /// The file's contents.
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>>;
    /// The file's contents when written into `dir`, for a report that also reads the run
    /// directory's own files (`report.html` reads `transcripts.jsonl`); [`Exporter::render`]
    /// by default.
    fn render_in(&self, report: &Report, dir: &Path) -> anyhow::Result<Vec<u8>> {
        let _ = dir;
        self.render(report)
    }
}

pub struct ComparisonParquet;
pub struct ComparisonCsv;
pub struct SummaryMarkdown;
pub struct JunitXml;

impl Exporter for ComparisonParquet {
    fn file_name(&self) -> &'static str {
        COMPARISON_PARQUET
    }
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        let mut df = comparison_frame(&report.comparison.rows, &report.comparison.turn_rows)?;
        let mut out = Vec::new();
        ParquetWriter::new(&mut out).finish(&mut df)?;
        Ok(out)
    }
}

impl Exporter for ComparisonCsv {
    fn file_name(&self) -> &'static str {
        COMPARISON_CSV
    }
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        let mut df = comparison_frame(&report.comparison.rows, &report.comparison.turn_rows)?;
        let mut out = Vec::new();
        CsvWriter::new(&mut out)
            .include_header(true)
            .finish(&mut df)?;
        Ok(out)
    }
}

impl Exporter for SummaryMarkdown {
    fn file_name(&self) -> &'static str {
        SUMMARY_MD
    }
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        Ok(super::markdown::summary(report).into_bytes())
    }
}

impl Exporter for JunitXml {
    fn file_name(&self) -> &'static str {
        JUNIT_XML
    }
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        Ok(super::junit::junit(report).into_bytes())
    }
}

/// Every exporter, in the order their files are written.
pub fn exporters() -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(ComparisonParquet),
        Box::new(ComparisonCsv),
        Box::new(SummaryMarkdown),
        Box::new(JunitXml),
        Box::new(super::html::HtmlReport),
    ]
}

/// Writes every report into `dir`, each through a temporary file and a rename so that a reader
/// never sees half a file. When `GITHUB_STEP_SUMMARY` names a file, the summary is appended to it.
pub fn write_reports(report: &Report, dir: &Path) -> anyhow::Result<()> {
    write_reports_with(report, dir, true)
}

/// [`write_reports`], appending to `$GITHUB_STEP_SUMMARY` only when `step_summary` is set (the
/// reports rewritten during a run are not).
pub fn write_reports_with(report: &Report, dir: &Path, step_summary: bool) -> anyhow::Result<()> {
    for exporter in exporters() {
        let bytes = exporter.render_in(report, dir)?;
        let path = dir.join(exporter.file_name());
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, &bytes)
            .with_context(|| format!("cannot write `{}`", tmp.display()))?;
        std::fs::rename(&tmp, &path)
            .with_context(|| format!("cannot write `{}`", path.display()))?;
        if step_summary && exporter.file_name() == SUMMARY_MD {
            append_step_summary(&bytes)?;
        }
    }
    super::marked::refresh(dir)
}

/// Appends `summary` to the file `$GITHUB_STEP_SUMMARY` names, when it is set.
pub fn append_step_summary(summary: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return Ok(());
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| {
            format!(
                "cannot open GITHUB_STEP_SUMMARY `{}`",
                path.to_string_lossy()
            )
        })?;
    file.write_all(summary)
        .and_then(|_| file.write_all(b"\n"))
        .with_context(|| format!("cannot append to `{}`", path.to_string_lossy()))
}
