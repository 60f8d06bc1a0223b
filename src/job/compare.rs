//! `mcpeval compare` as a job: the comparison, verdicts and reports of a run recomputed from its
//! episodes (or its candidate against another run's baseline). The episodes are streamed into
//! the comparison, never all held: the columns it needs from `episodes.parquet` (polars), or
//! `episodes.jsonl` when the table is missing or older (a run cut short), whose tables are then
//! written in the same pass.

use std::path::{Path, PathBuf};

use super::{JobError, Note};
use crate::analysis::{Collector, Comparison};
use crate::config::InvalidSetting;
use crate::episode::Side;
use crate::report::{read_stale_list, read_tool_shift, write_reports, write_tool_shift, Report};
use crate::rundir::{rebuild_tables, scan_facts, table_is_current, RunInfo, EPISODES_JSONL};
use crate::stats::Adjustment;

/// What `mcpeval compare` asks for.
#[derive(Debug, Clone, Default)]
pub struct CompareRequest {
    /// The run whose candidate (and, without `against`, baseline) is compared.
    pub run: PathBuf,
    /// Another run whose baseline the candidate is compared against.
    pub against: Option<PathBuf>,
    /// Where the reports go (default: the run directory, or `RUN/against-<id>`).
    pub out: Option<PathBuf>,
    /// The multiplicity correction instead of the run's.
    pub correction: Option<Adjustment>,
    /// The significance level instead of the run's.
    pub alpha: Option<f64>,
}

/// A comparison made and its reports written.
pub struct Compared {
    pub comparison: Comparison,
    /// Where the reports are.
    pub out: PathBuf,
    /// What was said on the way (tasks the other run's baseline lacks).
    pub notes: Vec<Note>,
    /// A host of the run was the simulated model.
    pub simulated: bool,
    /// The stale-list window's console lines (`--stale-list`; empty for a run without it).
    pub stale_list: Vec<String>,
}

/// Compares the run `request` names and writes the reports.
pub fn compare(request: &CompareRequest) -> Result<Compared, JobError> {
    let info = RunInfo::read(&request.run)?;
    let mut stats = info.config.stats.clone();
    if let Some(c) = request.correction {
        stats.correction = c;
    }
    if let Some(a) = request.alpha {
        stats.alpha = a;
    }
    stats
        .validate()
        .map_err(|e| InvalidSetting(e.0.replace("[stats] ", "--")))?;
    let against = match &request.against {
        Some(dir) => Some(RunInfo::read(dir)?),
        None => None,
    };
    let out = match (&request.out, &against) {
        (Some(out), _) => out.clone(),
        (None, Some(other)) => request.run.join(format!("against-{}", other.run_id)),
        (None, None) => request.run.clone(),
    };
    let mut notes = Vec::new();
    if let Some(other) = &against {
        notes.extend(definition_warnings(&info, other));
    }
    let collector = collect(request, &out, against.as_ref(), &stats, &mut notes)?;
    let comparison = collector
        .comparison(&stats, info.seed)
        .map_err(JobError::Compare)?;
    // The per-episode numbers are not needed by the reports (report.html reads its few trials
    // from the files itself).
    drop(collector);
    std::fs::create_dir_all(&out).map_err(|e| JobError::write(&out, e))?;
    // Read from the episodes once (each run directory once), for tool_shift.csv and the reports
    // that say it in words.
    let baseline_dir = request.against.as_ref().unwrap_or(&request.run);
    let shift = read_tool_shift(baseline_dir, &request.run, stats.alpha, info.seed)
        .and_then(|shift| write_tool_shift(&shift, &out).map(|()| shift))
        .map_err(|e| JobError::write(&out, e))?;
    let stale =
        read_stale_list(baseline_dir, &request.run, &info).map_err(|e| JobError::write(&out, e))?;
    let report = Report {
        info: &info,
        baseline_run: against.as_ref(),
        comparison: &comparison,
        tool_shift: Some(&shift),
        stale_list: stale.as_ref(),
    };
    write_reports(&report, &out).map_err(|e| JobError::write(&out, e))?;
    Ok(Compared {
        comparison,
        out,
        notes,
        simulated: info.hosts.iter().any(|h| h.simulated),
        stale_list: (stale.iter())
            .flat_map(|window| crate::report::stale_list_lines(&info, window))
            .collect(),
    })
}

/// A warning per task whose definition differs between the run (its candidate) and the other
/// run (its baseline): the two sides then ran different tasks under one id. One warning when
/// either run recorded no definitions.
fn definition_warnings(info: &RunInfo, other: &RunInfo) -> Vec<Note> {
    let Some(changed) = crate::rundir::changed_tasks(info, other) else {
        let older: Vec<&str> = [info, other]
            .into_iter()
            .filter(|i| i.task_hashes.is_empty())
            .map(|i| i.run_id.as_str())
            .collect();
        let runs = match older.as_slice() {
            [one] => format!("run `{one}` records none"),
            _ => format!("runs `{}` record none", older.join("` and `")),
        };
        return vec![Note::warn(format!(
            "warning: the task definitions could not be compared: {runs} (made by an older \
             mcpeval); tasks that share an id are taken to be the same"
        ))];
    };
    changed
        .into_iter()
        .map(|task| {
            let what = match task.parts.as_slice() {
                [] => "its definition changed".to_owned(),
                [one] => format!("its {one} changed"),
                parts => format!("its {} changed", parts.join(", ")),
            };
            Note::warn(format!(
                "warning: task `{}` differs between run `{}` and run `{}` ({what}): its \
                 candidate and baseline episodes come from different definitions",
                task.id, info.run_id, other.run_id
            ))
        })
        .collect()
}

/// Every episode of both sides folded into a collector.
fn collect(
    request: &CompareRequest,
    out: &Path,
    against: Option<&RunInfo>,
    stats: &crate::config::StatsConfig,
    notes: &mut Vec<Note>,
) -> Result<Collector, JobError> {
    let run = &request.run;
    let unreadable = |dir: &Path| {
        let dir = dir.to_path_buf();
        move |e: anyhow::Error| JobError::Episodes {
            dir,
            source: e.into(),
        }
    };
    let mut collector = Collector::for_stats(stats);
    let own_baseline = against.is_none();
    // Reports into the run directory itself: a run cut short (or resumed since) gets its tables
    // too, written in the same pass over its episodes.
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    let rebuild = same(out, run)
        && own_baseline
        && !table_is_current(run)
        && run.join(EPISODES_JSONL).is_file();
    if rebuild {
        rebuild_tables(run, |e| collector.add(e.side, e)).map_err(unreadable(run))?;
    } else {
        scan_facts(run, |side, e| {
            if side == Side::Candidate || own_baseline {
                collector.add_facts(side, e);
            }
        })
        .map_err(unreadable(run))?;
    }
    if let (Some(other), Some(dir)) = (against, &request.against) {
        scan_facts(dir, |side, e| {
            if side == Side::Baseline {
                collector.add_facts(Side::Baseline, e);
            }
        })
        .map_err(unreadable(dir))?;
        // Tasks or hosts the other run's baseline lacks stay untested rather than failing: a
        // stored baseline may cover a smaller suite.
        let missing = collector.unmatched();
        let names = |model: bool| -> Vec<String> {
            (missing.iter())
                .filter(|(_, _, m)| *m == model)
                .map(|(t, h, _)| format!("{t} ({h})"))
                .collect()
        };
        let (models, calls) = (names(true), names(false));
        if !models.is_empty() {
            notes.push(Note::warn(format!(
                "warning: run `{}` has no baseline episodes for {} task(s), left untested: {}",
                other.run_id,
                models.len(),
                models.join(", ")
            )));
        }
        if !calls.is_empty() {
            notes.push(Note::warn(format!(
                "warning: run `{}` has no baseline episodes for {} call task(s), judged on the \
                 candidate alone (test `candidate_only`): {}",
                other.run_id,
                calls.len(),
                calls.join(", ")
            )));
        }
    }
    for side in Side::BOTH {
        if collector.count(side) == 0 {
            return Err(JobError::NoEpisodes {
                dir: run.clone(),
                side,
            });
        }
    }
    Ok(collector)
}
