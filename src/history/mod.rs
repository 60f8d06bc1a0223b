//! Nightly evals: the history table (`results/history.parquet`), drift between nights, the
//! trend `mcpeval history` prints and the `--schedule` loop.

mod drift;
mod record;
mod schedule;
mod store;
mod table;
mod trend;

pub use drift::{
    compare_baselines, moved_rows, moved_tasks, references, section, DriftOutcome, Reference,
    MAY_BE_THE_MODEL,
};
pub use record::{new_run_dir, record, RecordError};
pub use schedule::{run as run_schedule, stamp, JobEnd, Schedule, ScheduleError};
pub use store::{append, read, HistoryError, DEFAULT_HISTORY, FAULT_ENV};
pub use table::{HistoryRow, RunMeta, CANDIDATE, COLUMNS, DRIFT};
pub use trend::{select, table as trend_table, value, TrendFilter};
