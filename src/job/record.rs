//! `run --record DIR`: one recorder per side while the trials run, and each side's cassette
//! written, with the run's secrets redacted, when they end (cut short or not).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::request::Note;
use super::JobError;
use crate::cassette::{CassetteError, Recorder};
use crate::episode::{Redactor, Side};
use crate::runner::HostRuntime;

/// The recording `--record DIR` asks for, its directory made now (not found unwritable after
/// the trials), with a note for each app host, whose own MCP client mcpeval does not see.
pub fn start(
    dir: Option<&Path>,
    hosts: &[HostRuntime],
    notes: &mut Vec<Note>,
) -> Result<Option<Recording>, JobError> {
    let Some(dir) = dir else {
        return Ok(None);
    };
    std::fs::create_dir_all(dir).map_err(|e| JobError::write(dir, e))?;
    for app in hosts.iter().filter(|h| h.driver.app().is_some()) {
        notes.push(Note::warn(format!(
            "--record: host `{}` is an app that talks to the server itself: its trials' traffic \
             is not recorded in the cassettes",
            app.config.name
        )));
    }
    Ok(Some(Recording::new(dir)))
}

/// The recorders of a run that records its servers' traffic.
#[derive(Debug, Clone)]
pub struct Recording {
    dir: PathBuf,
    /// Baseline, candidate.
    recorders: [Arc<Recorder>; 2],
}

/// A cassette written at the end of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub side: Side,
    pub path: PathBuf,
    /// Distinct requests, and the answers they hold in all.
    pub requests: usize,
    pub answers: usize,
}

impl Recording {
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            recorders: [Recorder::new(), Recorder::new()],
        }
    }

    /// The cassette of a side: `DIR/baseline.cassette.jsonl` or `DIR/candidate.cassette.jsonl`.
    pub fn path(&self, side: Side) -> PathBuf {
        self.dir.join(format!("{side}.cassette.jsonl"))
    }

    /// The recorders, baseline then candidate, as the runner's server pool takes them.
    pub fn sides(&self) -> [Option<Arc<Recorder>>; 2] {
        self.recorders.clone().map(Some)
    }

    /// Writes both cassettes, every string passed through `redactor`.
    pub fn write(&self, redactor: &Redactor) -> Result<Vec<Recorded>, CassetteError> {
        std::fs::create_dir_all(&self.dir).map_err(|source| CassetteError::Write {
            path: self.dir.clone(),
            source,
        })?;
        let recorded_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let mut written = Vec::new();
        for side in [Side::Baseline, Side::Candidate] {
            let mut cassette = self.recorders[side as usize].cassette(recorded_at.clone());
            cassette.redact(&|text: &str| redactor.redact(text));
            let path = self.path(side);
            cassette.write(&path)?;
            written.push(Recorded {
                side,
                path,
                requests: cassette.entries.len(),
                answers: cassette.answers(),
            });
        }
        Ok(written)
    }
}
