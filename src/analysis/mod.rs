//! What a run's episodes say: the comparison (task and suite rows with their tests, intervals,
//! adjusted p-values and detectable changes), the verdicts, and the adaptive stopping rule the
//! runner consults through its `StoppingRule` trait. Pure of rendering: `report` shows it.

pub mod adaptive;
mod comparison;
pub mod diagnosis;
mod numbers;
mod policy;
pub mod stale_list;
pub mod tool_shift;
mod verdict;

pub use comparison::{
    compare, suite_metrics, suite_scopes, Collector, Comparison, Detectable, EpisodeFacts, Outcome,
    Row, RunDesign, SideOutcome, TaskOutcome, TaskVerdict, UsageTotal, MAX_PLANNED_TRIALS, SUITE,
};
pub use diagnosis::Diagnosis;
pub use numbers::{percent, points};
pub use policy::AdaptivePolicy;
pub use verdict::{decide, margin, significant, Level, Scope, TestName, Verdict};
