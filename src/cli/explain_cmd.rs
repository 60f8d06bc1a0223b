//! `mcpeval explain RUN_DIR` (and `--explain` on `run` and `check`): the library's attribution
//! of a run's regressions, shown as it goes (each set of trials with a progress bar) and as one
//! line per regressed task at the end.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Mutex;

use super::args::ExplainArgs;
use super::out::{errln, outln};
use super::progress::Progress;
use crate::error::{Exit, Failure};
use crate::job::explain::{explain as attribute, ExplainRequest, Explained};
use crate::job::{Face, Finished, Note, RunJob, Stop};
use crate::runner::EventSink;

/// Runs `mcpeval explain` and returns its exit code: 0 once it has finished.
pub async fn explain(args: &ExplainArgs) -> Result<Exit, Failure> {
    let request = ExplainRequest {
        dir: args.run.clone(),
        all: args.all,
        budget: Some(args.budget),
        order: args.order,
        config: args.config.clone(),
    };
    explain_run(&request).await?;
    Ok(Exit::Ok)
}

/// Explains the run `request` names and prints what was found.
pub async fn explain_run(request: &ExplainRequest) -> Result<(), Failure> {
    let face = Quiet::default();
    let say = |line: String| errln!("explain: {line}");
    let dir = &request.dir;
    match attribute(request, Stop::default(), &face, &say).await? {
        Explained::Nothing { call_tasks } => match crate::job::explain::calls_line(&call_tasks) {
            None => outln!("no regression in {}: nothing to explain", dir.display()),
            Some(line) => {
                outln!(
                    "no model task regressed in {}: nothing to explain",
                    dir.display()
                );
                outln!("{line}");
            }
        },
        Explained::Found(found) => {
            outln!("why it regressed:");
            for line in crate::job::explain::lines(&found.rows) {
                outln!("  {line}");
            }
            if let Some(line) = crate::job::explain::order_line(&found.rows) {
                outln!("{line}");
            }
            if let Some(line) = crate::job::explain::calls_line(&found.call_tasks) {
                outln!("{line}");
            }
            outln!(
                "{} trial(s) spent of a budget of {}{}",
                found.trials_spent,
                found.budget,
                match found.skipped.len() {
                    0 => String::new(),
                    n => format!("; {n} set(s) of trials skipped (see explain/summary.md)"),
                }
            );
            outln!("attribution: {}", attribution_path(dir).display());
        }
    }
    Ok(())
}

/// `--explain` on `run` and `check`: the run directory explained after the verdict; a failure
/// to explain is said, and leaves the verdict's exit code alone.
pub async fn after_verdict(dir: &Path) {
    let request = ExplainRequest {
        dir: dir.to_path_buf(),
        ..ExplainRequest::default()
    };
    if let Err(failure) = explain_run(&request).await {
        errln!(
            "explain: cannot explain {}: {:#}",
            dir.display(),
            failure.error
        );
    }
}

fn attribution_path(dir: &Path) -> std::path::PathBuf {
    dir.join("explain")
        .join(crate::job::explain::ATTRIBUTION_CSV)
}

/// The face of the runs `explain` makes: their warnings once each, a progress bar, no verdict
/// tables (the attribution is what it shows).
#[derive(Default)]
struct Quiet {
    said: Mutex<BTreeSet<String>>,
}

impl Face for Quiet {
    fn notes(&self, notes: &[Note]) {
        let mut said = self.said.lock().unwrap_or_else(|e| e.into_inner());
        for note in notes {
            if let Note::Warn(line) = note {
                if line.starts_with("warning") && said.insert(line.clone()) {
                    errln!("{line}");
                }
            }
        }
    }

    fn starting(&self, _job: &RunJob) {}

    fn sinks(&self) -> Vec<Box<dyn EventSink>> {
        vec![Box::new(Progress::new())]
    }

    fn finished(&self, _finished: &Finished) {}
}
