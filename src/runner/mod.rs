//! The runner: schedules interleaved paired trials with bounded concurrency and emits events.

mod budget;
mod events;
mod policy;
mod pool;
mod run;
mod schedule;
mod shard;

pub use budget::{cost, episode_cost, price_for, Budget, BudgetGuard, Price, Spent};
pub use events::{EventSink, RunEvent, RunEventKind};
pub use policy::StoppingPolicy;
pub use pool::{Server, ServerPool};
pub use run::{run, DoneKey, HostRuntime, Runner};
pub use schedule::{schedule, trial_seed, TrialKey};
pub use shard::{
    assign, comparable_config, config_differences, config_hash, units, Deal, Shard, Unit,
};
