//! Task suites: the task model and the loading and validation of task YAML files.

mod call;
mod check;
mod defaults;
mod demo;
mod foreign;
pub mod import;
mod lint;
mod load;
mod raw;
mod suggest;
mod task;
mod validate;

#[cfg(test)]
mod tests;

pub(crate) use check::regex_error_summary;
pub use demo::{load_or_embedded, DEMO_SUITE};
pub use lint::{lint, warning_line};
pub use load::{load_sources, load_suite, Diagnostic, Suite, SuiteError};
/// " (did you mean `x`?)": shared with the config's checks of its keys.
pub(crate) use suggest::suggestion;
pub use task::{
    AfterCheck, ArgMatcher, CallAt, CallExpectations, CallSpec, Expectations, ExpectedCall,
    FixtureCall, JudgeSpec, ResultCheck, StructuredCheck, Task, TaskKind, TaskSet, ToolName,
};
