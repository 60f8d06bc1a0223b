//! The rows of a conversation's user turns (`scope = turn`): each turn's own success compared
//! between the sides with Fisher's exact test, as a task's is, so a report can say which turn
//! regressed. They explain a task's row and gate nothing: their p-values are adjusted together
//! (one family per host), apart from the gated families.

use super::build::{with_delta, Context};
use super::cells::Cell;
use super::model::Row;
use crate::analysis::verdict::{decide, Scope, TestName};
use crate::config::{Metric, StatsConfig};
use crate::stats::{compare_success, p_adjusted, Proportion, StatsError};

/// The turn rows of one task × host: one per user turn graded on both sides.
pub(super) fn turn_rows(ctx: &Context, task: &str, cell: &Cell) -> Result<Vec<Row>, StatsError> {
    let [b, c] = [cell.sides[0].turn_counts(), cell.sides[1].turn_counts()];
    let mut rows = Vec::new();
    for (i, (&(bp, bn), &(cp, cn))) in b.iter().zip(c).enumerate() {
        if bn == 0 || cn == 0 {
            continue;
        }
        let rate = |passed: u32, graded: u32| f64::from(passed) / f64::from(graded);
        let n = (bn as usize, cn as usize);
        let means = (Some(rate(bp, bn)), Some(rate(cp, cn)));
        let mut row = ctx.row(task, Scope::Turn, Metric::Success, n, means);
        let (pb, pc) = (
            Proportion::new(u64::from(bp), u64::from(bn)),
            Proportion::new(u64::from(cp), u64::from(cn)),
        );
        row = with_delta(
            row,
            compare_success(pb, pc, ctx.stats.alpha)?,
            TestName::FisherExact,
        );
        row.turn = Some(i as u32 + 1);
        row.gated = false;
        rows.push(row);
    }
    Ok(rows)
}

/// Adjusts the turn rows of one host together and judges each at the family level `level`.
pub(super) fn judge_turns(
    rows: &mut [Row],
    stats: &StatsConfig,
    level: f64,
) -> Result<(), StatsError> {
    let p: Vec<Option<f64>> = rows.iter().map(|r| r.p_value).collect();
    for (row, adjusted) in rows.iter_mut().zip(p_adjusted(&p, stats.correction)?) {
        row.p_adjusted = adjusted;
        if let (Some(delta), Some(low), Some(high), Some(margin)) =
            (row.delta, row.ci_low, row.ci_high, row.margin)
        {
            row.verdict = decide(row.metric, delta, (low, high), adjusted, margin, level);
        }
    }
    Ok(())
}
