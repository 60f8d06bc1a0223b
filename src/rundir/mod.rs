//! The run directory, its one owner: creating it, appending episodes and transcripts as a run
//! goes, reading the episodes back as a stream, `run.json`, the episode tables, and merging the
//! shards of a run. The runner writes through it; reports, history, merge and compare read
//! through it.

mod columns;
mod create;
mod info;
#[cfg(test)]
pub(crate) use info::tests as info_tests;
mod jsonl;
mod merge;
mod tables;

pub use create::{create, new_run_id, CreateError};
pub use info::{git_commit, own_cpu_ms, HostRecord, MergedShard, RunInfo, ServerRecord, RUN_JSON};
pub use jsonl::{
    read_episodes, scan_episodes, EpisodeSource, EpisodeWriter, EPISODES_JSONL, TRANSCRIPTS_JSONL,
};
pub use merge::{merge, MergeError, Merged};
pub(crate) use tables::col;
pub use tables::{
    rebuild_tables, scan_episode_table, scan_facts, table_is_current, write_csv, write_parquet,
    write_tables, TableWriter, Tables, EPISODES_CSV, EPISODES_PARQUET, TOOL_CALLS_PARQUET,
};
