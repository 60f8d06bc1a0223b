//! Rewrites the comparison and its reports while a run goes, so a run cut short (even killed)
//! leaves a usable `summary.md`, `comparison.csv` and `junit.xml` of what it finished.

use std::path::PathBuf;
use std::time::Duration;

use super::comparison::compare;
use super::export::{write_reports_with, Report};
use crate::episode::{Episode, Side};
use crate::rundir::RunInfo;
use crate::runner::{EventSink, RunEvent, RunEventKind};

/// How often the reports are rewritten during a run.
pub const REFRESH_EVERY: Duration = Duration::from_secs(30);

/// An event sink keeping the episodes' records (not their transcripts) and rewriting the reports
/// every [`REFRESH_EVERY`] of run time. The run writes the final reports itself at the end.
pub struct LiveReports {
    dir: PathBuf,
    info: RunInfo,
    episodes: Vec<Episode>,
    every: Duration,
    last: Duration,
    dirty: bool,
}

impl LiveReports {
    /// `episodes`: those already in the run directory (a resumed run).
    pub fn new(dir: PathBuf, info: RunInfo, episodes: Vec<Episode>, every: Duration) -> Self {
        Self {
            dir,
            info,
            episodes,
            every,
            last: Duration::ZERO,
            dirty: false,
        }
    }

    fn refresh(&mut self) -> anyhow::Result<()> {
        let (baseline, candidate): (Vec<&Episode>, Vec<&Episode>) =
            self.episodes.iter().partition(|e| e.side == Side::Baseline);
        if baseline.is_empty() || candidate.is_empty() {
            return Ok(());
        }
        let comparison = compare(baseline, candidate, &self.info.config.stats, self.info.seed)?;
        self.info.episodes = self.episodes.len();
        self.info.infra_errors = self
            .episodes
            .iter()
            .filter(|e| e.infra_error.is_some())
            .count();
        let report = Report {
            info: &self.info,
            baseline_run: None,
            comparison: &comparison,
        };
        // Not appended to $GITHUB_STEP_SUMMARY: only the final summary goes there.
        write_reports_with(&report, &self.dir, false)?;
        self.dirty = false;
        Ok(())
    }
}

impl EventSink for LiveReports {
    fn handle(&mut self, event: &RunEvent) -> anyhow::Result<()> {
        if let RunEventKind::TrialFinished { episode, .. } = &event.kind {
            self.episodes.push(Episode::clone(episode));
            self.dirty = true;
            if event.elapsed.saturating_sub(self.last) >= self.every {
                self.last = event.elapsed;
                self.refresh()?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::episode::Transcript;

    fn finished(e: &Episode, at: u64) -> RunEvent {
        RunEvent {
            elapsed: Duration::from_secs(at),
            kind: RunEventKind::TrialFinished {
                episode: Arc::new(e.clone()),
                transcript: Arc::new(Transcript {
                    run_id: e.run_id.clone(),
                    task_id: e.task_id.clone(),
                    side: e.side,
                    host: e.host.clone(),
                    trial: e.trial,
                    seed: e.seed,
                    tools: Vec::new(),
                    messages: Vec::new(),
                    judge: None,
                }),
            },
        }
    }

    #[test]
    fn rewrites_the_reports_once_the_interval_has_passed() {
        let dir = tempfile::tempdir().unwrap();
        let info = crate::rundir::info_tests::sample_info();
        let mut sink = LiveReports::new(dir.path().into(), info, Vec::new(), REFRESH_EVERY);
        let base = crate::report::comparison::tests::sample_episode("t", Side::Baseline, true);
        let cand = crate::report::comparison::tests::sample_episode("t", Side::Candidate, false);
        sink.handle(&finished(&base, 1)).unwrap();
        sink.handle(&finished(&cand, 2)).unwrap();
        assert!(!dir.path().join("summary.md").exists(), "too early");
        sink.handle(&finished(&base, 31)).unwrap();
        let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
        assert!(summary.contains("| episodes | 3 "), "{summary}");
        assert!(dir.path().join("comparison.csv").is_file());
        assert!(dir.path().join("junit.xml").is_file());
    }
}
