//! The progress bar sink: trials done, per-side successes so far, retries as they happen.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::out::errln;
use crate::episode::Side;
use crate::runner::{EventSink, RunEvent, RunEventKind};

/// Shows a progress bar on stderr when it is a terminal; otherwise (CI logs) a line at every
/// tenth of the run.
pub struct Progress {
    bar: ProgressBar,
    done: [u32; 2],
    successes: [u32; 2],
    infra: u32,
    /// For plain output: the next tenth of the run to report, and the total.
    plain: Option<(u64, u64)>,
    /// The trials this invocation would run at most.
    total: u64,
    /// An adaptive run after a look: tasks settled, still running, and trials saved so far.
    settled: Option<(usize, usize, u64)>,
}

impl Progress {
    pub fn new() -> Self {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} trials  {msg}",
            )
            .expect("static template"),
        );
        let plain = (!std::io::stderr().is_terminal()).then_some((1, 0));
        Self {
            bar,
            done: [0; 2],
            successes: [0; 2],
            infra: 0,
            plain,
            total: 0,
            settled: None,
        }
    }

    /// Without a terminal: one line each time another tenth of the trials is done.
    fn plain_line(&mut self) {
        let Some((next, total)) = self.plain else {
            return;
        };
        let done = (self.done[0] + self.done[1]) as u64;
        if total > 0 && done * 10 >= next * total {
            self.plain = Some((done * 10 / total + 1, total));
            errln!("progress: {done}/{total} trials, {}", self.message());
        }
    }

    fn message(&self) -> String {
        let infra = if self.infra > 0 {
            format!("  infra errors {}", self.infra)
        } else {
            String::new()
        };
        let looks = match self.settled {
            Some((settled, running, skipped)) => {
                format!("  tasks settled {settled}, running {running}, trials saved {skipped}")
            }
            None => String::new(),
        };
        format!(
            "baseline {}/{} ok · candidate {}/{} ok{infra}{looks}",
            self.successes[0], self.done[0], self.successes[1], self.done[1]
        )
    }
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}

impl EventSink for Progress {
    fn handle(&mut self, event: &RunEvent) -> anyhow::Result<()> {
        match &event.kind {
            RunEventKind::RunStarted {
                total,
                already_done,
                again,
                ..
            } => {
                if *again > 0 {
                    self.bar.suspend(|| {
                        errln!(
                            "resuming: {already_done} trial(s) done; {again} that ended as \
                             infrastructure errors run again (their earlier errors are kept in \
                             their records)"
                        )
                    });
                }
                if let Some(plain) = self.plain.as_mut() {
                    plain.1 = *total as u64;
                }
                self.total = *total as u64;
                self.bar.set_length(*total as u64);
                self.bar.set_message(self.message());
            }
            RunEventKind::TrialRetrying {
                task_id,
                side,
                trial,
                attempt,
                error,
                ..
            } => {
                let first_line = error.lines().next().unwrap_or_default();
                self.bar.suspend(|| {
                    errln!("retry {attempt}: {task_id} {side} trial {trial}: {first_line}")
                });
            }
            RunEventKind::TrialFinished { episode, .. } => {
                let i = matches!(episode.side, Side::Candidate) as usize;
                self.done[i] += 1;
                self.successes[i] += episode.success as u32;
                self.infra += episode.infra_error.is_some() as u32;
                self.bar.inc(1);
                self.bar.set_message(self.message());
                self.plain_line();
            }
            RunEventKind::Cancelling => {
                self.bar.suspend(|| {
                    errln!(
                        "interrupted: finishing the trials in flight, then writing the files (Ctrl-C again to stop now)"
                    )
                });
            }
            RunEventKind::HostStopped { host, reason } => {
                self.bar.suspend(|| {
                    errln!("host {host} stopped: {reason}; its trials left are not run")
                });
            }
            RunEventKind::Aborting => {
                self.bar.suspend(|| {
                    errln!(
                        "stopping now: the trials in flight are dropped; the files are written from the episodes that finished"
                    )
                });
            }
            RunEventKind::LookFinished {
                look,
                looks,
                settled,
                budget_stopped,
                running,
                saved,
            } => {
                // Both sides' trials the settled tasks will not run.
                let skipped = 2 * saved;
                if let Some(total) = self.total.checked_sub(skipped) {
                    self.bar.set_length(total.max(self.bar.position()));
                }
                self.settled = Some((*settled, *running, skipped));
                self.bar.set_message(self.message());
                self.bar.suspend(|| {
                    let budget = match budget_stopped {
                        0 => String::new(),
                        n => format!("{n} stopped by the trial budget, "),
                    };
                    errln!(
                        "look {look}/{looks}: {settled} tasks settled, {budget}{running} running, {skipped} trials saved"
                    )
                });
            }
            RunEventKind::TrialStarted { .. } | RunEventKind::RunFinished { .. } => {}
        }
        Ok(())
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        self.bar.finish_and_clear();
        Ok(())
    }
}
