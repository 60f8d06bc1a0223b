//! The contract of an MCP server: snapshot, normalize, diff, classify, and the trigger that turns a
//! diff into the tasks worth running.

pub mod boundary;
pub mod conformance;
pub mod deprecations;
mod diff;
mod model;
pub mod portability;
mod probe;
mod report;
mod schema;
mod snapshot;
mod trigger;

pub use diff::diff;
pub use model::{
    Change, ChangeKind, Diff, ErrorProbes, ProbeOutcome, ProfileMismatch, ServerFacts, Side,
    Snapshot, SnapshotReadError, ERRORS_JSON, PROMPTS_JSON, RESOURCES_JSON,
    RESOURCE_TEMPLATES_JSON, SERVER_JSON, TOOLS_JSON,
};
pub use report::{diff_snapshots, diff_table};
pub use snapshot::{normalize, take, SnapshotError};
pub use trigger::{select, Selection};
