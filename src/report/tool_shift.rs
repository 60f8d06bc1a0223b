//! `tool_shift.csv`: every model task's paired table of first tools (baseline tool × candidate
//! tool, the diagonal included) with its Fisher–Freeman–Halton p, Holm-adjusted p and whether it
//! shifted, from the stored episodes of each side.

use std::path::Path;

use polars_core::prelude::*;

use crate::analysis::tool_shift::{tool_shift, FirstCall, TaskShift};
use crate::episode::Side;
use crate::rundir::{col, scan_episodes, write_csv};

pub const TOOL_SHIFT_CSV: &str = "tool_shift.csv";

/// What the shift reads of a stored episode: task, host, side, trial, first tool.
type Facts = (String, String, Side, u32, Option<String>);

/// Reads the baseline's episodes from `baseline_dir` and the candidate's from `candidate_dir`
/// (the same run directory but for `compare --against`), and writes `out/tool_shift.csv`.
/// Episodes of call tasks and those that ended in an infrastructure error are left out.
pub fn write_tool_shift(
    baseline_dir: &Path,
    candidate_dir: &Path,
    out: &Path,
    alpha: f64,
    seed: u64,
) -> anyhow::Result<Vec<TaskShift>> {
    let mut facts: Vec<Facts> = Vec::new();
    // Each directory read once, for the sides it provides (both, in a run's own directory).
    let sources: Vec<(&Path, Vec<Side>)> = match baseline_dir == candidate_dir {
        true => vec![(baseline_dir, vec![Side::Baseline, Side::Candidate])],
        false => vec![
            (baseline_dir, vec![Side::Baseline]),
            (candidate_dir, vec![Side::Candidate]),
        ],
    };
    for (dir, sides) in sources {
        scan_episodes(dir, |e| {
            if sides.contains(&e.side) && e.kind.has_model() && e.infra_error.is_none() {
                facts.push((e.task_id, e.host, e.side, e.trial, e.first_tool));
            }
        })?;
    }
    let calls = facts
        .iter()
        .map(|(task, host, side, trial, first)| FirstCall {
            task_id: task,
            host,
            baseline: *side == Side::Baseline,
            trial: *trial,
            first_tool: first.as_deref(),
        });
    let shifts = tool_shift(calls, alpha, seed)?;
    write_csv(&mut frame(&shifts)?, &out.join(TOOL_SHIFT_CSV))?;
    Ok(shifts)
}

/// One row per task, host and (from, to) pair, each with its task's test.
fn frame(shifts: &[TaskShift]) -> PolarsResult<DataFrame> {
    let rows: Vec<(&TaskShift, &(String, String), u32)> = (shifts.iter())
        .flat_map(|s| s.pairs.iter().map(move |(pair, n)| (s, pair, *n)))
        .collect();
    macro_rules! field {
        ($f:expr) => {
            rows.iter().map($f).collect::<Vec<_>>()
        };
    }
    DataFrame::new_infer_height(vec![
        col("task_id", field!(|(s, _, _)| s.task_id.as_str())),
        col("host", field!(|(s, _, _)| s.host.as_str())),
        col("from_tool", field!(|(_, (from, _), _)| from.as_str())),
        col("to_tool", field!(|(_, (_, to), _)| to.as_str())),
        col("trials", field!(|(_, _, n)| *n)),
        col("p", field!(|(s, _, _)| s.p)),
        col("p_holm", field!(|(s, _, _)| s.p_holm)),
        col("shifted", field!(|(s, _, _)| s.shifted)),
    ])
}
