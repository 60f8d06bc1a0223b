//! `mcpeval compare`: the comparison, verdicts and reports of a run, recomputed from its episodes.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::Context;

use super::args::CompareArgs;
use super::out::out;
use crate::analysis::{Collector, Comparison};
use crate::config::InvalidSetting;
use crate::episode::Side;
use crate::error::{Exit, Failure};
use crate::report::{verdict_table, write_reports, Report};
use crate::rundir::{rebuild_tables, scan_facts, table_is_current, RunInfo, EPISODES_JSONL};

/// Runs `mcpeval compare` and returns the exit code of the verdict. The episodes are streamed
/// into the comparison, never all held: the columns it needs from `episodes.parquet` (polars),
/// or `episodes.jsonl` when the table is missing or older (a run cut short).
pub fn compare(args: &CompareArgs) -> Result<Exit, Failure> {
    let info = RunInfo::read(&args.run)?;
    let mut stats = info.config.stats.clone();
    if let Some(c) = args.correction {
        stats.correction = c;
    }
    if let Some(a) = args.alpha {
        stats.alpha = a;
    }
    stats
        .validate()
        .map_err(|e| InvalidSetting(e.0.replace("[stats] ", "--")))?;
    let against = match &args.against {
        Some(dir) => Some(RunInfo::read(dir)?),
        None => None,
    };
    let out = match (&args.out, &against) {
        (Some(out), _) => out.clone(),
        (None, Some(other)) => args.run.join(format!("against-{}", other.run_id)),
        (None, None) => args.run.clone(),
    };
    let mut collector = Collector::for_stats(&stats);
    let own_baseline = against.is_none();
    // Reports into the run directory itself: a run cut short (or resumed since) gets its tables
    // too, written in the same pass over its episodes.
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    let rebuild = same(&out, &args.run)
        && own_baseline
        && !table_is_current(&args.run)
        && args.run.join(EPISODES_JSONL).is_file();
    if rebuild {
        rebuild_tables(&args.run, |e| collector.add(e.side, e)).map_err(Failure::usage)?;
    } else {
        scan_facts(&args.run, |side, e| {
            if side == Side::Candidate || own_baseline {
                collector.add_facts(side, e);
            }
        })
        .map_err(Failure::usage)?;
    }
    if let (Some(other), Some(dir)) = (&against, &args.against) {
        scan_facts(dir, |side, e| {
            if side == Side::Baseline {
                collector.add_facts(Side::Baseline, e);
            }
        })
        .map_err(Failure::usage)?;
        warn_unmatched(&collector, &other.run_id);
    }
    for side in Side::BOTH {
        if collector.count(side) == 0 {
            return Err(Failure::usage(anyhow::anyhow!(
                "`{}` has no {side} episodes to compare",
                args.run.display()
            )));
        }
    }
    let comparison = collector
        .comparison(&stats, info.seed)
        .map_err(|e| Failure::from(e).context("cannot compare"))?;
    // The per-episode numbers are not needed by the reports (report.html reads its few trials
    // from the files itself).
    drop(collector);
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create `{}`", out.display()))?;
    let report = Report {
        info: &info,
        baseline_run: against.as_ref(),
        comparison: &comparison,
    };
    Ok(publish(&report, &out)?)
}

/// Says which candidate tasks or hosts the other run's baseline lacks (their rows stay
/// untested) rather than failing: a stored baseline may cover a smaller suite.
fn warn_unmatched(collector: &Collector, other_id: &str) {
    let missing = collector.unmatched();
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
fn publish(report: &Report, dir: &Path) -> anyhow::Result<Exit> {
    write_reports(report, dir)?;
    let c: &Comparison = report.comparison;
    out!(
        "{}",
        verdict_table(
            c,
            std::io::stdout().is_terminal() && console::colors_enabled()
        )
    );
    super::run_cmd::print_report_paths(dir);
    Ok(c.outcome().exit())
}
