//! Jobs: one run (or nightly job) built from resolved config — hosts, judges, response cache,
//! preflight, run directory, trigger — run through the runner and its event sinks, and returned
//! as a typed outcome for the command line to show.

mod added;
pub mod agree;
mod arguments;
pub mod check;
mod compare;
mod error;
mod expectations;
pub mod explain;
mod hosts;
pub mod init;
mod models;
pub mod nightly;
mod plan;
mod record;
mod request;
mod run;
mod samplers;
mod served;
mod snapshots;
mod stale;
mod trigger;
pub mod writes;

pub use compare::{compare, CompareRequest, Compared};
pub use error::JobError;
pub use expectations::{check as check_expectations, Found};
pub use hosts::{build_hosts, build_judges, build_users, cached, rate_limited, Judges};
pub use models::{build as build_model, Built};
pub use plan::{plan, PlanRequest};
pub use record::{Recorded, Recording};
pub use request::{
    prepare, run, stored_config, BudgetNeeds, Face, Finished, Note, Prepared, ReadyRun, RunOutcome,
    RunRequest, Skipped, Start, TaskKinds,
};
pub use run::{preflight, Preflight, PreflightError, RunEnd, RunJob, Stop};
pub use served::read_served_files;
pub use snapshots::SnapshotWriter;
pub use trigger::{apply as apply_trigger, read_diff, Triggered};
