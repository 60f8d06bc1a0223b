//! Rewrites the comparison and its reports while a run goes, so a run cut short (even killed)
//! leaves a usable `summary.md`, `comparison.csv` and `junit.xml` of what it finished.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::export::{write_reports_with, Report};
use crate::analysis::Collector;
use crate::episode::Side;
use crate::rundir::RunInfo;
use crate::runner::{EventSink, RunEvent, RunEventKind};

/// How often the reports are rewritten during a run (at the least: see [`LiveReports`]).
pub const REFRESH_EVERY: Duration = Duration::from_secs(30);

/// A rewrite takes at most this share of the run's time: after one that took `d`, the next waits
/// at least `d / MAX_SHARE` (a large run's reports take longer to write).
const MAX_SHARE: u32 = 10;

/// An event sink folding each finished episode into the comparison's aggregates (a few numbers
/// per episode, never the episodes or their transcripts) and rewriting the reports every
/// [`REFRESH_EVERY`] of run time. A rewrite runs on a thread of its own, so the events keep
/// flowing (and the trials' records are not queued in memory) while it reads the run directory;
/// only its comparison holds the aggregates back. The run writes the final reports itself at the end.
pub struct LiveReports {
    dir: PathBuf,
    info: RunInfo,
    collector: Arc<Mutex<Collector>>,
    every: Duration,
    last: Duration,
    /// The rewrite in progress, if any; it returns how long it took.
    writing: Option<JoinHandle<anyhow::Result<Duration>>>,
}

impl LiveReports {
    /// `collector`: holding the episodes already in the run directory (a resumed run); shared
    /// with the caller, who compares the run from it at the end.
    pub fn new(
        dir: PathBuf,
        info: RunInfo,
        collector: Arc<Mutex<Collector>>,
        every: Duration,
    ) -> Self {
        Self {
            dir,
            info,
            collector,
            every,
            last: Duration::ZERO,
            writing: None,
        }
    }

    /// Waits for the rewrite in progress; the next one waits for a tenth of its time at least.
    fn join(&mut self) -> anyhow::Result<()> {
        if let Some(writing) = self.writing.take() {
            let took = writing
                .join()
                .map_err(|_| anyhow::anyhow!("the live reports' writer panicked"))??;
            self.every = self.every.max(took * MAX_SHARE);
        }
        Ok(())
    }

    fn refresh(&mut self) -> anyhow::Result<()> {
        if Side::BOTH
            .iter()
            .any(|s| lock(&self.collector).count(*s) == 0)
        {
            return Ok(());
        }
        self.join()?;
        let (mut info, dir, collector) =
            (self.info.clone(), self.dir.clone(), self.collector.clone());
        self.writing = Some(std::thread::spawn(move || {
            let start = Instant::now();
            // Compared under the lock rather than from a copy of the aggregates (a few bytes
            // per episode, twice over): new episodes wait meanwhile, the trials do not.
            let comparison = {
                let collector = lock(&collector);
                info.episodes = collector.episodes();
                info.infra_errors = collector.infra_errors();
                collector.comparison(&info.config.stats, info.seed)?
            };
            let report = Report {
                info: &info,
                baseline_run: None,
                comparison: &comparison,
                tool_shift: None,
                stale_list: None,
            };
            // Not appended to $GITHUB_STEP_SUMMARY: only the final summary goes there.
            write_reports_with(&report, &dir, false)?;
            drop(comparison);
            crate::memory::return_free_memory();
            Ok(start.elapsed())
        }));
        Ok(())
    }
}

/// The collector, even if a thread panicked while holding it (its numbers are still whole: an
/// episode is added in one call).
pub fn lock(collector: &Mutex<Collector>) -> std::sync::MutexGuard<'_, Collector> {
    collector
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl EventSink for LiveReports {
    fn handle(&mut self, event: &RunEvent) -> anyhow::Result<()> {
        if let RunEventKind::TrialFinished { episode, .. } = &event.kind {
            lock(&self.collector).add(episode.side, episode);
            let busy = self.writing.as_ref().is_some_and(|w| !w.is_finished());
            if !busy && event.elapsed.saturating_sub(self.last) >= self.every {
                self.last = event.elapsed;
                self.refresh()?;
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        self.join()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::episode::{Episode, Transcript};

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
                    tools: Vec::new().into(),
                    messages: Vec::new(),
                    judge: None,
                }),
            },
        }
    }

    #[test]
    fn rewrites_the_reports_once_the_interval_has_passed() {
        let dir = tempfile::tempdir().unwrap();
        let info = crate::test_support::sample_info();
        let collector = Arc::new(Mutex::new(Collector::default()));
        let mut sink = LiveReports::new(dir.path().into(), info, collector.clone(), REFRESH_EVERY);
        let base = crate::test_support::sample_episode("t", Side::Baseline, true);
        let cand = crate::test_support::sample_episode("t", Side::Candidate, false);
        sink.handle(&finished(&base, 1)).unwrap();
        sink.handle(&finished(&cand, 2)).unwrap();
        assert!(!dir.path().join("summary.md").exists(), "too early");
        sink.handle(&finished(&base, 31)).unwrap();
        sink.finish().unwrap();
        assert_eq!(
            lock(&collector).episodes(),
            3,
            "the caller's copy holds them too"
        );
        let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
        assert!(summary.contains("| episodes | 3 "), "{summary}");
        assert!(dir.path().join("comparison.csv").is_file());
        assert!(dir.path().join("junit.xml").is_file());
    }
}
