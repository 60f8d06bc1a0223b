//! The rows of one task × host: Fisher's exact test for success, Mann–Whitney U for the counts,
//! and the descriptive pass@k / pass^k.

use super::build::{relative, with_delta, Context};
use super::cells::{mean, sd, Cell};
use super::planning::{Pending, Plan};
use crate::analysis::verdict::{Scope, TestName, Verdict};
use crate::config::Metric;
use crate::stats::{
    compare_counts, compare_success, pass_at_k, pass_hat_k, Proportion, StatsError,
};

/// Whether a metric's row is written: reasoning tokens only where some episode reported any
/// (a model without reasoning would add a row of zeros to every task).
pub(super) fn reported(metric: Metric, sides: [&[f64]; 2]) -> bool {
    metric != Metric::ReasoningTokens || sides.iter().any(|s| s.iter().any(|v| *v != 0.0))
}

/// The row of a `kind: call` task: its success compared exactly, no test. A check that passes on
/// every baseline trial and fails on every candidate trial is a regression, the other way round
/// an improvement; the same outcome on every trial of both sides is no change; a check that
/// passes on some trials and fails on others is inconclusive (the server answers it unevenly).
/// A task with no baseline episode at all (it uses a tool only the candidate lists, and ran
/// there alone) is judged on the candidate: passed on every trial is no change, failed on every
/// trial a regression (test `candidate_only`).
pub(super) fn exact_rows(ctx: &Context, task: &str, cell: &Cell) -> Vec<Pending> {
    let [b_side, c_side] = &cell.sides;
    let n = (b_side.len(), c_side.len());
    let rates = |s: &super::cells::SideValues| {
        (!s.is_empty()).then(|| s.successes() as f64 / s.len() as f64)
    };
    let (b, c) = (rates(b_side), rates(c_side));
    let mut row = ctx.row(task, Scope::Task, Metric::Success, n, (b, c));
    row.test = TestName::Exact;
    row.margin = None;
    if !cell.has_side(0) && cell.has_side(1) {
        // A task on a tool only the candidate lists ran there alone (`job::added`).
        row.test = TestName::CandidateOnly;
        row.verdict = match c {
            Some(1.0) => Verdict::NoChange,
            Some(0.0) => Verdict::Regression,
            _ => Verdict::Inconclusive,
        };
        return vec![Pending::untested(row)];
    }
    row.verdict = match (b, c) {
        (Some(1.0), Some(0.0)) => Verdict::Regression,
        (Some(0.0), Some(1.0)) => Verdict::Improvement,
        (Some(b), Some(c)) if b == c && (b == 0.0 || b == 1.0) => Verdict::NoChange,
        _ => Verdict::Inconclusive,
    };
    vec![Pending::untested(row)]
}

/// The found@k row of a task under tool search: the share of trials whose search ranked one of
/// the task's expected tools within k, compared as success is (Fisher's exact test, the success
/// margin) and gated when success is: a description that no longer leads a search to its tool
/// is a regression even where no full-list run shows it.
fn found_row(ctx: &Context, task: &str, cell: &Cell) -> Result<Pending, StatsError> {
    let [(fb, nb), (fc, nc)] = [cell.sides[0].found_at_k(), cell.sides[1].found_at_k()];
    let rate = |found: u64, n: u64| (n > 0).then(|| found as f64 / n as f64);
    let n = (nb as usize, nc as usize);
    let mut row = ctx.row(
        task,
        Scope::Task,
        Metric::FoundAtK,
        n,
        (rate(fb, nb), rate(fc, nc)),
    );
    row.gated = crate::analysis::verdict::found_at_k_gated(ctx.stats);
    if nb == 0 || nc == 0 {
        return Ok(Pending::untested(row));
    }
    let (pb, pc) = (Proportion::new(fb, nb), Proportion::new(fc, nc));
    let row = with_delta(
        row,
        compare_success(pb, pc, ctx.stats.alpha)?,
        TestName::FisherExact,
    );
    Ok(Pending {
        row,
        plan: Plan::Fisher {
            p0: fb as f64 / nb as f64,
            n: (nb, nc),
        },
    })
}

pub(super) fn task_rows(
    ctx: &Context,
    task: &str,
    cell: &Cell,
) -> Result<Vec<Pending>, StatsError> {
    let [b_side, c_side] = &cell.sides;
    let n = (b_side.len(), c_side.len());
    let sizes = (n.0 as u64, n.1 as u64);
    let mut rows = Vec::new();
    for metric in Metric::TESTED {
        let (b, c) = (b_side.metric(metric), c_side.metric(metric));
        let (b, c) = (&*b, &*c);
        if !reported(metric, [b, c]) {
            continue;
        }
        let row = ctx.row(task, Scope::Task, metric, n, (mean(b), mean(c)));
        if !cell.paired() {
            rows.push(Pending::untested(row));
            continue;
        }
        let pending = if metric == Metric::Success {
            let (pb, pc) = (
                Proportion::new(b_side.successes(), sizes.0),
                Proportion::new(c_side.successes(), sizes.1),
            );
            let row = with_delta(
                row,
                compare_success(pb, pc, ctx.stats.alpha)?,
                TestName::FisherExact,
            );
            let p0 = b_side.successes() as f64 / sizes.0 as f64;
            Pending {
                row,
                plan: Plan::Fisher { p0, n: sizes },
            }
        } else {
            let d = compare_counts(b, c, &ctx.bootstrap(task, metric))?;
            let mut row = with_delta(row, d, TestName::MannWhitneyU);
            row.relative_change = relative(row.baseline_mean, row.candidate_mean);
            Pending {
                row,
                plan: Plan::Shift {
                    sd: (sd(b), sd(c)),
                    n: sizes,
                },
            }
        };
        rows.push(pending);
    }
    if cell.has_found_at_k() {
        rows.push(found_row(ctx, task, cell)?);
    }
    for metric in [Metric::PassAtK, Metric::PassHatK] {
        let k = u64::from(ctx.stats.pass_k).min(sizes.0).min(sizes.1);
        let estimate = |side: usize| {
            let s = &cell.sides[side];
            match metric {
                Metric::PassAtK => pass_at_k(s.len() as u64, s.successes(), k),
                _ => pass_hat_k(s.len() as u64, s.successes(), k),
            }
        };
        let means = if cell.paired() {
            (estimate(0), estimate(1))
        } else {
            (None, None)
        };
        let mut row = ctx.row(task, Scope::Task, metric, n, means);
        row.k = cell.paired().then_some(k as u32);
        row.gated = false;
        rows.push(Pending::untested(row));
    }
    Ok(rows)
}
