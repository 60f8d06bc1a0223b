//! The comparison of a run, computed from its episodes alone: one row per task × host × metric and
//! suite rows (`task_id = "*"`, one set per scope) that treat the tasks as strata, with tests,
//! intervals, adjusted p-values, verdicts and what each row could have detected.

mod build;
mod cells;
mod model;
mod planning;
mod suite_rows;
mod task_rows;
#[cfg(test)]
pub(crate) mod tests;
mod turn_rows;

pub(crate) use build::entry_of;
pub use build::{compare, Collector};

pub use crate::episode::EpisodeFacts;
pub use model::{
    Comparison, Detectable, Outcome, Row, SideOutcome, TaskOutcome, TaskVerdict, UsageTotal,
    MAX_PLANNED_TRIALS, SUITE,
};
pub use planning::{suite_metrics, suite_scopes, RunDesign};
