//! What keeps `mcpeval agree` (and `plan --agreement`) from comparing, and the exit code each
//! means: bad input is 2, a file that cannot be written is 3.

use std::path::PathBuf;

use crate::error::{Coded, Exit};

/// Why two hosts' verdicts could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum AgreeError {
    /// A directory without a readable `run.json`.
    #[error("`{}` is not a run directory", dir.display())]
    NotARun {
        dir: PathBuf,
        #[source]
        source: crate::rundir::RunInfoError,
    },
    /// A run without its comparison tables (cut short before its reports).
    #[error(
        "`{}` has no comparison.parquet or comparison.csv: run `mcpeval compare {}` first",
        dir.display(),
        dir.display()
    )]
    NoComparison { dir: PathBuf },
    /// A table that cannot be read, or lacks a column.
    #[error("cannot read `{}`: {message}", path.display())]
    Table { path: PathBuf, message: String },
    /// A comparison without a task's success row.
    #[error("`{}` has no success rows of tasks (metric = success, scope = task)", path.display())]
    NoSuccessRows { path: PathBuf },
    /// One run given alone whose rows come from fewer than two hosts.
    #[error(
        "`{}` has one host ({host}): give a second run directory to compare with, or a run of \
         two or more hosts",
        dir.display()
    )]
    OneHost { dir: PathBuf, host: String },
    /// Two hosts that judged no task in common.
    #[error("{a} and {b} share no task: are they runs of the same suite?")]
    NoSharedTasks { a: String, b: String },
    #[error(transparent)]
    Stats(#[from] crate::stats::StatsError),
    /// A file that cannot be written.
    #[error("cannot write `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: anyhow::Error,
    },
}

impl Coded for AgreeError {
    fn exit(&self) -> Exit {
        match self {
            Self::NotARun { .. }
            | Self::NoComparison { .. }
            | Self::Table { .. }
            | Self::NoSuccessRows { .. }
            | Self::OneHost { .. }
            | Self::NoSharedTasks { .. }
            | Self::Stats(_) => Exit::Usage,
            Self::Write { .. } => Exit::Infra,
        }
    }
}
