//! The progress bar sink: the run's estimate, trials done, per-side successes so far, the time
//! left, retries as they happen.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::out::errln;
use crate::episode::Side;
use crate::runner::{approx, eta, Estimate, EventSink, RunEvent, RunEventKind};

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
    /// The run's estimate before its first trial.
    estimate: Option<Estimate>,
    /// The run's time at its latest event.
    elapsed: Duration,
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
            estimate: None,
            elapsed: Duration::ZERO,
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
            "baseline {}/{} ok · candidate {}/{} ok{infra}{looks}{}",
            self.successes[0],
            self.done[0],
            self.successes[1],
            self.done[1],
            self.eta()
        )
    }

    /// The time left, from the estimate until the first round of trials is done and from their
    /// pace after (indicatif's `{eta}` goes by the latest trials alone, which uneven trials
    /// throw about); empty when neither tells.
    fn eta(&self) -> String {
        let done = u64::from(self.done[0] + self.done[1]);
        let left = self.bar.length().unwrap_or(self.total).saturating_sub(done);
        let concurrency = self.estimate.map_or(1, |e| e.plan.concurrency);
        let up_to = match self.estimate.is_some_and(|e| e.plan.up_to) {
            true => "up to ",
            false => "",
        };
        match eta(
            self.estimate.as_ref(),
            self.elapsed,
            done,
            left,
            concurrency,
        ) {
            Some(eta) if left > 0 => format!("  eta {up_to}{}", approx(eta)),
            _ => String::new(),
        }
    }

    /// The run's first event: its estimate, what a resumed run runs again, the bar's length.
    fn started(&mut self, total: usize, done: usize, again: usize, estimate: Option<Estimate>) {
        self.estimate = estimate;
        if let Some(estimate) = estimate.filter(|_| total > 0) {
            self.bar.suspend(|| errln!("{}", estimate.line()));
        }
        if again > 0 {
            self.bar.suspend(|| {
                errln!(
                    "resuming: {done} trial(s) done; {again} that ended as infrastructure errors \
                     run again (their earlier errors are kept in their records)"
                )
            });
        }
        if let Some(plain) = self.plain.as_mut() {
            plain.1 = total as u64;
        }
        self.total = total as u64;
        self.bar.set_length(total as u64);
        self.bar.set_message(self.message());
    }
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}

impl EventSink for Progress {
    fn handle(&mut self, event: &RunEvent) -> anyhow::Result<()> {
        self.elapsed = event.elapsed;
        match &event.kind {
            RunEventKind::RunStarted {
                total,
                already_done,
                again,
                estimate,
                ..
            } => self.started(*total, *already_done, *again, *estimate),
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
