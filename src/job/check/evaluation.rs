//! The evaluation stage: the model evaluation of the tasks the contract stage marked (the whole
//! suite with `--all`), adaptive unless trials are set, as `mcpeval run` does it, into
//! `evaluation/`.

use super::{regressed_tasks, skipped, Ctx, Host, Outcome, Stage, Tasks};
use crate::error::Exit;
use crate::job::{Face, Finished, RunOutcome, RunRequest, Skipped, TaskKinds};
use crate::rundir::{Case, StageRecord, StageStatus};

/// Why the evaluation was skipped without a suite, and how to get one: `mcpeval init` drafts a
/// suite from the live baseline (docs/init.md).
fn no_suite(baseline: &str) -> String {
    let spec = match baseline.contains(char::is_whitespace) {
        true => format!("\"{baseline}\""),
        false => baseline.to_owned(),
    };
    format!(
        "no task suite given (--suite, or the config's `suites`); draft one from the baseline \
         with `mcpeval init --server {spec}`, then pass `--suite mcpeval/tasks`"
    )
}

pub(super) async fn run(ctx: &mut Ctx, face: &dyn Face) -> StageRecord {
    let stage = Stage::Evaluation;
    if ctx.breaking && ctx.settings.stop_on_breaking {
        return skipped(
            stage,
            "the contract breaks clients and --stop-on-breaking is set",
        );
    }
    if ctx.baseline.is_none() {
        return skipped(
            stage,
            "no baseline server: the baseline is a stored snapshot, and models can only be \
             compared on two running servers",
        );
    }
    match &ctx.tasks {
        Tasks::NoSuite => {
            // The baseline as given (`demo:1.4.0`), else as resolved from the config.
            let server = (ctx.overrides.baseline.clone())
                .or_else(|| ctx.baseline.as_ref().map(|s| s.display()))
                .unwrap_or_default();
            return skipped(stage, no_suite(&server));
        }
        Tasks::Counted { models: 0, .. } => {
            return skipped(stage, "the suite has no task for a model")
        }
        Tasks::Counted { .. } => {}
    }
    if ctx.host == Host::None {
        return skipped(stage, NO_HOST);
    }
    let mut overrides = ctx.run_overrides();
    // Adaptive by default: a fixed number of trials only when one is set.
    if overrides.trials.is_none() && std::env::var_os("MCPEVAL_TRIALS").is_none() {
        overrides.adaptive = true;
    }
    let dir = ctx.dir.join("evaluation");
    let (trigger, auto_trigger) = match (&ctx.diff_path, ctx.settings.all) {
        (_, true) => (None, false),
        (Some(diff), false) => (Some(diff.clone()), false),
        (None, false) => (None, true),
    };
    let request = match ctx.resume && dir.join(crate::rundir::RUN_JSON).is_file() {
        // The evaluation a resumed check cut short: finished by the run's own resume.
        true => RunRequest {
            resume: Some(dir.clone()),
            no_step_summary: true,
            kinds: TaskKinds::Models,
            ..RunRequest::default()
        },
        false => RunRequest {
            overrides,
            out: Some(dir.clone()),
            trigger,
            auto_trigger,
            allow_breaking: true,
            no_step_summary: true,
            kinds: TaskKinds::Models,
            record: ctx.settings.record.clone(),
            ..RunRequest::default()
        },
    };
    let mut out = Outcome::new(stage);
    out.output(&dir, &ctx.dir);
    let simulated = ctx.host == Host::Simulated;
    let mut record = match crate::job::run(&request, crate::job::Stop::default(), face).await {
        Ok(RunOutcome::Skipped(Skipped::NothingTriggered)) => skipped(
            stage,
            "no contract change affects models: no task to run (--all runs the whole suite)",
        ),
        Ok(RunOutcome::Skipped(Skipped::Breaking)) => skipped(stage, "the contract breaks clients"),
        Ok(RunOutcome::Finished(finished)) => finished_stage(out, &finished),
        Err(e) => out.end(StageStatus::Error, crate::error::chain(&e)),
    };
    // A verdict of the simulated model says so wherever it is shown.
    record.simulated =
        simulated && matches!(record.status, StageStatus::Passed | StageStatus::Failed);
    record
}

/// The stage of a finished evaluation: a line per task with its verdict, the tool-choice
/// shift, the diagnosis' notes, and the stage's status from the run's exit.
fn finished_stage(mut out: Outcome, finished: &Finished) -> StageRecord {
    let info = &finished.end.info;
    let regressions = regressed_tasks(&finished.end.comparison);
    out.line(format!(
        "- {} task(s), {} episodes ({} infrastructure errors) in `evaluation/` (its own \
         summary.md and report.html)",
        info.tasks.len(),
        info.episodes,
        info.infra_errors
    ));
    for r in &finished.end.recorded {
        out.line(format!(
            "- recorded: `{}` ({} requests, {} answers)",
            r.path.display(),
            r.requests,
            r.answers
        ));
    }
    if let Some(error) = &finished.end.record_error {
        out.line(format!("- cannot write the cassettes: {error}"));
    }
    for task in &info.tasks {
        let regressed = regressions.contains(task);
        out.line(format!(
            "  - {task}: {}",
            if regressed {
                "**regression**"
            } else {
                "no gated regression"
            }
        ));
        out.case(match regressed {
            true => Case::failed(task.clone(), "a gated metric regressed"),
            false => Case::passed(task.clone()),
        });
    }
    // The tool-choice shift (information, not a gate): what moved, also where success held.
    let shift = finished.tool_shift.as_ref();
    for line in shift
        .map(crate::report::tool_choice_lines)
        .unwrap_or_default()
    {
        out.line(format!("- tool choice: {line}"));
    }
    // Why the verdict may mean little (a baseline that never passed, a host that made
    // no structured call…), said in the stage line too.
    let diagnosis = crate::analysis::Diagnosis::of(&finished.end.comparison);
    for line in crate::report::diagnosis_text(&diagnosis).lines() {
        out.line(format!("- note: {}", line.trim_start()));
    }
    let notes: String = crate::report::diagnosis_headlines(&diagnosis)
        .iter()
        .map(|h| format!("; note: {h}"))
        .collect();
    let summary = format!(
        "{} task(s) evaluated, {} regression(s){}{notes}",
        info.tasks.len(),
        regressions.len(),
        if regressions.is_empty() {
            String::new()
        } else {
            format!(": {}", regressions.join(", "))
        }
    );
    match finished.exit() {
        Exit::Ok | Exit::Regression => out.judged(summary),
        Exit::Interrupted => out.end(StageStatus::Error, format!("interrupted; {summary}")),
        _ => out.end(
            StageStatus::Error,
            format!("infrastructure errors decided the run; {summary}"),
        ),
    }
}

/// Why the evaluation is skipped when no host is named (outside the embedded demo `sim` is no
/// default).
pub(super) const NO_HOST: &str = "no model host configured: pass --host or set hosts in the \
     config; the simulated model `sim` only runs the demo";
