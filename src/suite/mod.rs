//! Task suites: the task model and the loading and validation of task YAML files.

mod load;
mod task;

pub use load::{load_sources, load_suite, Diagnostic, Suite, SuiteError};
pub use task::{ArgMatcher, Expectations, ExpectedCall, Task, TaskKind, TaskSet};
