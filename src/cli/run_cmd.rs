//! `mcpeval run`: the arguments turned into a [`RunRequest`], the library's run of it, and the
//! console that shows it: notes, progress, the verdict table, what the hosts report, and how the
//! run ended.

use std::io::IsTerminal;
use std::path::Path;

use super::args::RunArgs;
use super::hosts::{print_cache_note, print_congestion};
use super::out::{errln, out, outln};
use super::progress::Progress;
use crate::analysis::Comparison;
use crate::error::{Exit, Failure};
use crate::job::{Face, Finished, Note, RunJob, Stop};
use crate::report::verdict_table;
use crate::rundir::RunStatus;
use crate::runner::EventSink;

/// Runs `mcpeval run` and returns the exit code.
pub async fn run_command(args: &RunArgs) -> Result<Exit, Failure> {
    crate::memory::fixed_mmap_threshold();
    let outcome = crate::job::run(&args.to_request(), Stop::default(), &Console).await?;
    if let (true, crate::job::RunOutcome::Finished(finished)) = (args.explain, &outcome) {
        if !finished.end.cancelled {
            super::explain_cmd::after_verdict(&finished.dir).await;
        }
    }
    Ok(outcome.exit())
}

/// The terminal: what a run says goes to stdout (decisions, tables) and stderr (progress,
/// warnings).
pub(super) struct Console;

impl Face for Console {
    fn notes(&self, notes: &[Note]) {
        for note in notes {
            match note {
                Note::Text(text) => out!("{text}"),
                Note::Warn(line) => errln!("{line}"),
            }
        }
    }

    fn starting(&self, job: &RunJob) {
        let config = &job.config;
        let hosts: Vec<&str> = (job.hosts.iter())
            .filter(|h| !matches!(h.driver, crate::episode::Driver::Direct))
            .map(|h| h.config.name.as_str())
            .collect();
        let (base, cand) = (&job.preflight.baseline, &job.preflight.candidate);
        let side = |own: &crate::rundir::ServerRecord, other: &crate::rundir::ServerRecord| {
            let reported = own
                .info
                .as_ref()
                .map(|i| (i.name.as_str(), i.version.as_str()));
            crate::contract::versions::headed(reported, &own.spec, &other.spec)
        };
        let window = match config.stale_list {
            true => " (the stale-list window: its trials are offered the baseline's tool list)",
            false => "",
        };
        errln!(
            "baseline {} → candidate {}{window}",
            side(base, cand),
            side(cand, base)
        );
        let calls = job
            .suite
            .tasks
            .iter()
            .filter(|t| !t.kind.has_model())
            .count();
        let models = job.suite.tasks.len() - calls;
        if calls > 0 {
            errln!(
                "{calls} call task(s) first: their requests sent by mcpeval itself (no model), \
                 as many times per side as each task's `trials:` says (1 unless set)"
            );
        }
        if models > 0 || calls == 0 {
            errln!(
                "{models} task(s) × {} trial(s) per side on host {}",
                config.trials,
                hosts.join(", ")
            );
        }
        let stats = &config.stats;
        if stats.adaptive && models > 0 {
            let needs = crate::job::BudgetNeeds::of(stats, models, hosts.len());
            let budget = match stats.trial_budget {
                Some(b) => format!(
                    "trial budget {b} per side for the whole run (every task's first look needs \
                     {}, every task to max_trials {})",
                    needs.first_look, needs.max_trials
                ),
                None => format!(
                    "no trial budget (every task to max_trials would be {} per side)",
                    needs.max_trials
                ),
            };
            errln!(
                "adaptive: looks of {} trials per side up to {}; {budget}",
                stats.look_every,
                stats.max_trials
            );
        }
        errln!("run directory: {}", job.dir.display());
    }

    fn sinks(&self) -> Vec<Box<dyn EventSink>> {
        vec![Box::new(Progress::new())]
    }

    fn finished(&self, finished: &Finished) {
        let Finished {
            end,
            dir,
            shard,
            congestion,
            cache,
            simulated,
            tool_shift: _,
            stale_list,
        } = finished;
        let info = &end.info;
        if end.cancelled {
            errln!(
                "interrupted after {} episodes: the verdict below is of the trials that finished; \
                 the run exits 130",
                info.episodes
            );
        }
        for line in crate::report::diagnosis_lines(&crate::analysis::Diagnosis::of(&end.comparison))
        {
            outln!("{line}");
        }
        let stale: Vec<String> = (stale_list.iter())
            .flat_map(|w| crate::report::stale_list_lines(info, w))
            .collect();
        print_verdict(&end.comparison, dir, !simulated.is_empty(), &stale);
        let counts = crate::report::TaskCounts::of(info, &end.comparison);
        if counts.short() {
            outln!("tasks: {}{}", counts.words(), counts.never_ran_cause());
        }
        outln!(
            "{} episodes ({} infrastructure errors) in {}",
            info.episodes,
            info.infra_errors,
            dir.display()
        );
        if !simulated.is_empty() {
            outln!(
                "note: host {} is the embedded simulated model, not a real LLM",
                simulated.join(", ")
            );
        }
        for r in &end.recorded {
            outln!(
                "recorded: {} ({} requests, {} answers)",
                r.path.display(),
                r.requests,
                r.answers
            );
        }
        if let Some(error) = &end.record_error {
            errln!("cannot write the cassettes (exit 3): {error}");
        }
        print_congestion(congestion);
        print_cache_note(cache.as_deref());
        if let Some(note) = &end.budget_note {
            errln!(
                "{note}: stopped scheduling, finished the trials in flight; the reports cover the \
                 {} episodes recorded",
                info.episodes
            );
        } else if end.cancelled {
            errln!(
                "interrupted: {} episodes recorded; finish with: mcpeval run --resume {}",
                info.episodes,
                dir.display()
            );
        } else if let Some(s) = shard.filter(|_| finished.is_partial_shard()) {
            errln!(
                "shard {s}: the reports cover this shard's episodes only; join the shards with \
                 `mcpeval merge RUN_DIR... --out DIR` for the run's verdict"
            );
        }
        for host in &info.hosts {
            for note in &host.notes {
                errln!("host {}: {note}", host.name);
            }
        }
        for s in &end.stopped {
            errln!(
                "host {} stopped: {}; {} of its trials were not run (not counted as failures)",
                s.host,
                s.reason,
                s.not_run
            );
        }
        if info.status == RunStatus::Incomplete {
            errln!(
                "incomplete: {} infrastructure error(s){}; once the cause is fixed, finish the \
                 run (it runs those trials again): mcpeval run --resume {}",
                info.infra_errors,
                if end.stopped.is_empty() {
                    ""
                } else {
                    " and trials not run"
                },
                dir.display()
            );
        }
    }
}

/// The verdict table, the lines that explain it (`after`: the stale-list window's) and where the
/// reports are. A verdict of the simulated model says so on its outcome line.
pub(super) fn print_verdict(
    comparison: &Comparison,
    dir: &Path,
    simulated: bool,
    after: &[String],
) {
    let colors = std::io::stdout().is_terminal() && console::colors_enabled();
    let table = verdict_table(comparison, colors);
    match simulated {
        true => outln!("{} (simulated model)", table.trim_end()),
        false => out!("{table}"),
    }
    out!("{}", crate::report::verdict_notes(comparison));
    for line in after {
        outln!("{line}");
    }
    print_report_paths(dir);
}

/// Where the reports of a run directory are.
fn print_report_paths(dir: &Path) {
    outln!(
        "reports: {}",
        [
            "summary.md",
            "comparison.csv",
            "comparison.parquet",
            "junit.xml",
            "report.html"
        ]
        .map(|f| dir.join(f).display().to_string())
        .join(", ")
    );
}
