//! The runner: schedules interleaved paired trials with bounded concurrency and emits events.

pub mod asks;
mod budget;
mod elicited;
mod estimate;
mod events;
mod policy;
mod pool;
mod run;
pub mod sandboxed;
mod schedule;
mod stale;
mod user_scripts;

pub use budget::{cost, episode_cost, price_for, BudgetGuard, Spent};
pub use estimate::{approx, eta, Estimate, Plan};
pub use events::{EventSink, RunEvent, RunEventKind};
pub use policy::{allocate, StoppingRule};
pub use pool::{Server, ServerPool};
pub use run::{grade_output, run, DoneKey, HostRuntime, Ran, Runner, StoppedHost};
pub use schedule::{schedule, trial_seed, TrialKey};
pub use stale::StaleList;
