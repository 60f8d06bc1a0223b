//! A new run's id and directory.

use std::path::{Path, PathBuf};

use super::jsonl::EPISODES_JSONL;
use crate::config::RunConfig;

/// Why a run directory could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// The directory holds the episodes of a run already.
    #[error("`{}` already holds a run: pass --resume {} to finish it, or another --out", .0.display(), .0.display())]
    HoldsRun(PathBuf),
    #[error("cannot create run directory `{}`", path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl crate::error::Coded for CreateError {
    fn exit(&self) -> crate::error::Exit {
        match self {
            Self::HoldsRun(_) => crate::error::Exit::Usage,
            Self::Create { .. } => crate::error::Exit::Infra,
        }
    }
}

/// A run id: the UTC start time and a short hash (`20261130T051500Z-3fa2c1`), unique enough
/// across the runs of one results folder.
pub fn new_run_id(config: &RunConfig) -> String {
    let now = chrono::Utc::now();
    let seed_text = format!(
        "{}{}{:?}{}",
        now.timestamp_nanos_opt().unwrap_or_default(),
        config.seed,
        config.suites,
        std::process::id()
    );
    let hash = xxhash_rust::xxh3::xxh3_64(seed_text.as_bytes());
    format!("{}-{:06x}", now.format("%Y%m%dT%H%M%SZ"), hash & 0xff_ffff)
}

/// Creates the run directory: `out`, or `<out_dir>/<run_id>`; refuses one that holds a run.
pub fn create(
    out: Option<&Path>,
    config: &RunConfig,
    run_id: &str,
) -> Result<PathBuf, CreateError> {
    let dir = match out {
        Some(dir) => dir.to_path_buf(),
        None => config.out_dir.join(run_id),
    };
    if dir.join(EPISODES_JSONL).exists() {
        return Err(CreateError::HoldsRun(dir));
    }
    std::fs::create_dir_all(&dir).map_err(|source| CreateError::Create {
        path: dir.clone(),
        source,
    })?;
    Ok(dir)
}
