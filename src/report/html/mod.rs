//! `report.html`: one self-contained page per run directory (inline CSS, SVG charts and a little
//! script; nothing fetched) with the verdict, the charts and the transcripts side by side.

mod charts;
mod contract;
mod page;
mod pairs;
mod text;
mod tools;
mod transcripts;

pub use page::{HtmlReport, REPORT_HTML};
pub(super) use text::blocks;
