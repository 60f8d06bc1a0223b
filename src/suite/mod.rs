//! Task suites: the task model and the loading and validation of task YAML files.

pub mod asks;
mod call;
mod check;
mod defaults;
mod demo;
mod exposure;
mod foreign;
pub mod import;
mod lint;
mod load;
mod position;
mod raw;
mod retry;
mod snapshot;
mod suggest;
mod task;
mod turns;
mod validate;
mod validate_result;

#[cfg(test)]
mod tests;

pub use asks::{AskCapabilities, Elicitation, Sampling, TaskAsks};
pub(crate) use check::regex_error_summary;
pub use demo::{is_embedded_fallback, load_or_embedded, DEMO_SUITE};
pub use exposure::glob_matches;
pub use lint::{lint, named_in, warning_line};
pub use load::{load_sources, load_suite, Diagnostic, Suite, SuiteError};
pub use position::position_words;
pub use snapshot::{snapshot_file, SnapshotRef, Stored, SNAPSHOTS_DIR};
/// " (did you mean `x`?)": shared with the config's checks of its keys.
pub(crate) use suggest::{suggestion, words as name_words};
pub use task::{
    AfterCheck, ArgMatcher, CallAt, CallExpectations, CallSpec, Expectations, ExpectedCall,
    FixtureCall, JudgeSpec, ResultCheck, ServerPrompt, SimulatedUser, StructuredCheck, Task,
    TaskKind, TaskSet, ToolName, UserTurn,
};
