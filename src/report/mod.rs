//! Reports of a run: the JSONL episode log, the tables (Parquet/CSV), `run.json`, the console table.

mod console;
mod jsonl;
mod run_info;
mod tables;

pub use console::summary_table;
pub use jsonl::{read_episodes, EpisodeWriter, EPISODES_JSONL, TRANSCRIPTS_JSONL};
pub use run_info::{git_commit, own_cpu_ms, HostRecord, RunInfo, ServerRecord, RUN_JSON};
pub use tables::{write_csv, write_parquet, write_tables, Tables};
