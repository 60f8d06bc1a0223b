//! The run directory, its one owner: creating it, appending episodes and transcripts as a run
//! goes, reading the episodes back as a stream, `run.json`, the episode tables, and merging the
//! shards of a run. The runner writes through it; reports, history, merge and compare read
//! through it.

mod check;
mod columns;
mod create;
mod info;
mod jsonl;
mod merge;
mod retry;
mod shard;
mod tables;
mod task_hash;

pub use check::{Case, CheckRecord, Reported, StageRecord, StageStatus, CHECK_JSON};
pub use create::{create, new_run_id, CreateError};
pub use info::{
    git_commit, own_cpu_ms, EstimateRecord, HostRecord, MergedShard, NewerFormat, RunInfo,
    RunInfoError, RunStatus, ServerRecord, StoppedHostRecord, FORMAT_VERSION, RUN_JSON,
};
pub use jsonl::{
    read_episodes, scan_episodes, EpisodeSource, EpisodeWriter, EPISODES_JSONL, TRANSCRIPTS_JSONL,
};
pub use merge::{merge, MergeError, Merged};
pub use retry::{scan_retried, set_aside_infra_errors, RETRIED_JSONL, RETRIED_TRANSCRIPTS_JSONL};
pub use shard::{
    assign, comparable_config, config_differences, config_hash, units, Deal, Shard, Unit,
};
pub(crate) use tables::col;
pub use task_hash::{changed_tasks, task_hash, task_hashes, ChangedTask, TaskHash, TaskHashes};

/// The run's summary (written by `report`; a nightly job appends its drift section to it).
pub const SUMMARY_MD: &str = "summary.md";
pub use tables::{
    rebuild_tables, scan_episode_table, scan_facts, table_is_current, write_csv, write_parquet,
    write_tables, TableWriter, Tables, EPISODES_CSV, EPISODES_PARQUET, TOOL_CALLS_PARQUET,
};
