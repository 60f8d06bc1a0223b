//! The contract of an MCP server: snapshot, normalize, diff, classify, and the trigger that turns a
//! diff into the tasks worth running.

pub mod boundary;
mod bounds;
pub mod conformance;
mod declared;
pub mod deprecations;
mod diff;
mod eras;
mod group;
pub mod host_settings;
pub mod marked;
mod mcp_header;
mod model;
pub mod portability;
mod probe;
mod report;
pub mod safety;
mod schema;
mod server_diff;
mod snapshot;
pub mod token_diff;
pub mod tokens;
mod trigger;
pub mod versions;
pub mod words;
pub mod writes;

pub use diff::diff;
pub use group::{counts, counts_line, group, Group};
pub use model::{
    AcceptedVersions, Change, ChangeKind, Diff, ErrorProbes, ProbeOutcome, ProfileMismatch,
    ServerFacts, Side, Snapshot, SnapshotReadError, ERRORS_JSON, PROMPTS_JSON, RESOURCES_JSON,
    RESOURCE_TEMPLATES_JSON, SERVER_JSON, TOOLS_JSON,
};
pub use report::{diff_snapshots, diff_table};
pub use snapshot::{normalize, take, SnapshotError};
pub use trigger::{line_kind, select, touches, ChangedText, Selection};
