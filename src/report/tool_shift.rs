//! The tool-choice shift read from the stored episodes of each side ([`read_tool_shift`]), and
//! `tool_shift.csv`: every model task's paired table of first tools (baseline tool × candidate
//! tool, the diagonal included) with its Fisher–Freeman–Halton p, Holm-adjusted p and whether it
//! shifted.

use std::path::Path;

use polars_core::prelude::*;

use crate::analysis::tool_shift::{tool_shift, FirstCall, TaskShift, ToolShiftFacts};
use crate::episode::Side;
use crate::rundir::{col, scan_episodes, write_csv};

pub const TOOL_SHIFT_CSV: &str = "tool_shift.csv";

/// What the shift reads of a stored episode: task, host, side, trial, first tool.
type Facts = (String, String, Side, u32, Option<String>);

/// Reads the baseline's episodes from `baseline_dir` and the candidate's from `candidate_dir`
/// (the same run directory but for `compare --against`), each directory once: every model task's
/// shift of the first call, tested at `alpha` (sampled p-values draw from `seed`), and each side's
/// calls. Episodes of call tasks and those that ended in an infrastructure error are left out.
pub fn read_tool_shift(
    baseline_dir: &Path,
    candidate_dir: &Path,
    alpha: f64,
    seed: u64,
) -> anyhow::Result<ToolShiftFacts> {
    let mut facts: Vec<Facts> = Vec::new();
    let mut out = ToolShiftFacts::default();
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
                let key = (e.task_id.clone(), e.host.clone());
                let side = usize::from(e.side != Side::Baseline);
                out.calls.entry(key).or_default()[side].add(&e.tools_called);
                facts.push((e.task_id, e.host, e.side, e.trial, e.first_tool));
            }
        })?;
    }
    let first = facts
        .iter()
        .map(|(task, host, side, trial, first)| FirstCall {
            task_id: task,
            host,
            baseline: *side == Side::Baseline,
            trial: *trial,
            first_tool: first.as_deref(),
        });
    out.shifts = tool_shift(first, alpha, seed)?;
    Ok(out)
}

/// Writes `out/tool_shift.csv` of `facts`.
pub fn write_tool_shift(facts: &ToolShiftFacts, out: &Path) -> anyhow::Result<()> {
    write_csv(&mut frame(&facts.shifts)?, &out.join(TOOL_SHIFT_CSV))?;
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_without_episodes_has_no_shift_and_an_empty_table() {
        let dir = tempfile::tempdir().unwrap();
        let facts = read_tool_shift(dir.path(), dir.path(), 0.05, 1).unwrap();
        assert_eq!(facts, ToolShiftFacts::default());
        assert!(crate::report::tool_choice_lines(&facts).is_empty());
        write_tool_shift(&facts, dir.path()).unwrap();
        let csv = std::fs::read_to_string(dir.path().join(TOOL_SHIFT_CSV)).unwrap();
        assert_eq!(csv.lines().count(), 1, "{csv}");
        assert!(csv.starts_with("task_id,host,from_tool,to_tool,"), "{csv}");
    }
}
