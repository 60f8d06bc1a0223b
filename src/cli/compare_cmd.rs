//! `mcpeval compare`: the comparison, verdicts and reports of a run, recomputed from its episodes.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::Context;

use super::args::CompareArgs;
use super::exit::{CliError, Exit};
use super::out::{out, outln};
use crate::episode::{Episode, Side};
use crate::report::{compare as compare_episodes, read_episodes, verdict_table, write_reports};
use crate::report::{Comparison, Outcome, Report, RunInfo};

/// Runs `mcpeval compare` and returns the exit code of the verdict.
pub fn compare(args: &CompareArgs) -> Result<Exit, CliError> {
    let (info, episodes) = load_run(&args.run)?;
    let mut stats = info.config.stats.clone();
    if let Some(c) = args.correction {
        stats.correction = c;
    }
    if let Some(a) = args.alpha {
        stats.alpha = a;
    }
    stats
        .validate()
        .map_err(|e| CliError::usage(anyhow::anyhow!(e.replace("[stats] ", "--"))))?;
    let candidate: Vec<&Episode> = on_side(&episodes, Side::Candidate);
    let against = match &args.against {
        Some(dir) => Some(load_run(dir)?),
        None => None,
    };
    let baseline: Vec<&Episode> = match &against {
        Some((other, eps)) => {
            warn_unmatched(&candidate, eps, &other.run_id);
            on_side(eps, Side::Baseline)
        }
        None => on_side(&episodes, Side::Baseline),
    };
    if baseline.is_empty() || candidate.is_empty() {
        return Err(CliError::usage(anyhow::anyhow!(
            "`{}` has no {} episodes to compare",
            args.run.display(),
            if baseline.is_empty() {
                "baseline"
            } else {
                "candidate"
            }
        )));
    }
    let comparison = compare_episodes(baseline, candidate, &stats, info.seed)
        .map_err(|e| CliError::usage(anyhow::anyhow!("cannot compare: {e}")))?;
    let out = match (&args.out, &against) {
        (Some(out), _) => out.clone(),
        (None, Some((other, _))) => args.run.join(format!("against-{}", other.run_id)),
        (None, None) => args.run.clone(),
    };
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create `{}`", out.display()))?;
    let report = Report {
        info: &info,
        baseline_run: against.as_ref().map(|(i, _)| i),
        comparison: &comparison,
    };
    Ok(publish(&report, &out)?)
}

fn load_run(dir: &Path) -> Result<(RunInfo, Vec<Episode>), CliError> {
    let info = RunInfo::read(dir).map_err(CliError::usage)?;
    let episodes = read_episodes(dir).map_err(CliError::usage)?;
    Ok((info, episodes))
}

fn on_side(episodes: &[Episode], side: Side) -> Vec<&Episode> {
    episodes.iter().filter(|e| e.side == side).collect()
}

/// Says which candidate tasks or hosts the other run's baseline lacks (their rows stay
/// untested) rather than failing: a stored baseline may cover a smaller suite.
fn warn_unmatched(candidate: &[&Episode], other: &[Episode], other_id: &str) {
    let key = |e: &Episode| (e.task_id.clone(), e.host.clone());
    let known: std::collections::HashSet<(String, String)> = other
        .iter()
        .filter(|e| e.side == Side::Baseline)
        .map(key)
        .collect();
    let mut missing: Vec<(String, String)> = candidate
        .iter()
        .map(|e| key(e))
        .filter(|k| !known.contains(k))
        .collect();
    missing.sort();
    missing.dedup();
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|(t, h)| format!("{t} ({h})")).collect();
        eprintln!(
            "warning: run `{other_id}` has no baseline episodes for {} task(s), left untested: {}",
            missing.len(),
            names.join(", ")
        );
    }
}

/// Writes the reports into `dir`, prints the verdict table and returns the verdict's exit code.
pub(super) fn publish(report: &Report, dir: &Path) -> anyhow::Result<Exit> {
    write_reports(report, dir)?;
    let c: &Comparison = report.comparison;
    out!(
        "{}",
        verdict_table(
            c,
            std::io::stdout().is_terminal() && console::colors_enabled()
        )
    );
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
    Ok(exit_code(c.outcome()))
}

pub(super) fn exit_code(outcome: Outcome) -> Exit {
    match outcome {
        Outcome::Pass => Exit::Ok,
        Outcome::Regression => Exit::Regression,
        Outcome::InfraFailure => Exit::Infra,
    }
}
