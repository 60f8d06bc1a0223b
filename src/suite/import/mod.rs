//! `mcpeval tasks import`: the test files of other MCP eval tools (mcpchecker, promptfoo)
//! converted into mcpeval task files, with what did not convert said per case.

mod case;
mod files;
mod mcpchecker;
mod mcpchecker_files;
mod mcpchecker_steps;
#[cfg(test)]
mod mcpchecker_tests;
mod promptfoo;
mod source;
#[cfg(test)]
mod tests;
mod write;

pub use case::{Call, Case, Converted};
pub use files::{import, FileReport, Format, ImportError, Request};
pub use source::{BadInput, Dir, Sources};
pub use write::CaseReport;
