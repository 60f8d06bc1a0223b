//! The graders themselves: expected calls, forbidden tools, no-tool, answer checks, call budget.

use super::{Grade, Observed};
use crate::suite::Task;

/// Grades one trial against its task. Every grader the task sets runs; success = all pass.
pub fn grade(task: &Task, observed: &Observed<'_>) -> Grade {
    let _ = (task, observed);
    todo!("graders")
}
