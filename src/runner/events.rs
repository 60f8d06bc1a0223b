//! Typed run events: the runner emits them, sinks (progress bar, episode writer) consume them.

use std::sync::Arc;
use std::time::Duration;

use crate::episode::{Episode, Side, Transcript};

/// Something that happened in a run, `elapsed` after it started.
#[derive(Debug, Clone)]
pub struct RunEvent {
    pub elapsed: Duration,
    pub kind: RunEventKind,
}

#[derive(Debug, Clone)]
pub enum RunEventKind {
    RunStarted {
        run_id: String,
        /// Trials this invocation will run.
        total: usize,
        /// Trials already finished by an earlier invocation (`--resume`).
        already_done: usize,
        /// Of `total`, trials an earlier invocation ended as infrastructure errors, run again.
        again: usize,
        /// Its wall time, from the pre-flight's timed server starts.
        estimate: Option<super::Estimate>,
    },
    TrialStarted {
        task_id: String,
        side: Side,
        host: String,
        trial: u32,
    },
    TrialRetrying {
        task_id: String,
        side: Side,
        host: String,
        trial: u32,
        attempt: u32,
        error: String,
    },
    TrialFinished {
        episode: Arc<Episode>,
        transcript: Arc<Transcript>,
    },
    /// A host's breaker opened: its requests kept failing for one lasting reason, and the run
    /// starts none of its trials from now on.
    HostStopped {
        host: String,
        reason: String,
    },
    /// The first Ctrl-C: no new trials start; those in flight finish.
    Cancelling,
    /// A second Ctrl-C: the trials in flight are dropped; the episodes finished are kept.
    Aborting,
    /// An adaptive run decided a look: tasks × hosts settled, stopped by the trial budget and
    /// still running, and the trials per side the stopped ones did not run (against
    /// `max_trials` each).
    LookFinished {
        look: u32,
        looks: u32,
        settled: usize,
        budget_stopped: usize,
        running: usize,
        saved: u64,
    },
    RunFinished {
        completed: usize,
        cancelled: bool,
    },
}

/// A consumer of run events. Sinks run on one task, in event order.
pub trait EventSink: Send {
    fn handle(&mut self, event: &RunEvent) -> anyhow::Result<()>;
    /// Called once after the last event.
    fn finish(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// The run directory's episode writer as a sink: each finished trial appended at once.
impl EventSink for crate::rundir::EpisodeWriter {
    fn handle(&mut self, event: &RunEvent) -> anyhow::Result<()> {
        if let RunEventKind::TrialFinished {
            episode,
            transcript,
        } = &event.kind
        {
            self.append(episode, transcript)?;
        }
        Ok(())
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        self.sync()
    }
}
