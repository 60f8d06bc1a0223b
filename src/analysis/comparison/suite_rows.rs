//! The suite rows of one scope of one host: the tasks are strata and the trials within them are
//! pooled — Cochran–Mantel–Haenszel and the Mantel–Haenszel risk difference for rates, van
//! Elteren's stratified rank test for counts — plus the descriptive pass@k / pass^k.

use super::build::{relative, with_delta, Context};
use super::cells::{mean, pooled_sd, Cell, SideValues};
use super::model::SUITE;
use super::planning::{suite_metrics, Pending, Plan};
use crate::analysis::verdict::{Scope, TestName};
use crate::config::Metric;
use crate::stats::{
    cluster_bootstrap_mean, compare_stratified_rates, pass_at_k, pass_hat_k, van_elteren,
    Comparison as Delta, Proportion, StatsError, Table2x2,
};
use crate::suite::TaskKind;

/// The rows of `scope` over `cells` (its tasks; only those with episodes on both sides count).
pub(super) fn suite_rows(
    ctx: &Context,
    scope: Scope,
    cells: &[&Cell],
) -> Result<Vec<Pending>, StatsError> {
    let paired: Vec<&Cell> = cells.iter().copied().filter(|c| c.paired()).collect();
    let has = |kind: TaskKind| cells.iter().any(|c| c.kind == kind);
    let key = match scope {
        Scope::Suite => SUITE.to_owned(),
        other => format!("{SUITE}|{other}"),
    };
    let mut rows = Vec::new();
    for metric in suite_metrics(scope, has(TaskKind::Tool), has(TaskKind::NoTool)) {
        let any_reasoning = || {
            paired.iter().any(|c| {
                let sides = [0, 1].map(|s| c.sides[s].metric(Metric::ReasoningTokens));
                super::task_rows::reported(metric, [&sides[0], &sides[1]])
            })
        };
        if metric == Metric::ReasoningTokens && !any_reasoning() {
            continue;
        }
        let row = match metric {
            Metric::PassAtK | Metric::PassHatK => pass_row(ctx, scope, metric, &paired),
            Metric::Success => rate_row(ctx, scope, metric, &paired, |s| s.successes())?,
            Metric::FalseCallRate | Metric::MissedCallRate => {
                let kind = if metric == Metric::FalseCallRate {
                    TaskKind::NoTool
                } else {
                    TaskKind::Tool
                };
                let of_kind: Vec<&Cell> =
                    paired.iter().copied().filter(|c| c.kind == kind).collect();
                if metric == Metric::FalseCallRate {
                    rate_row(ctx, scope, metric, &of_kind, SideValues::called)?
                } else {
                    rate_row(ctx, scope, metric, &of_kind, |s| {
                        s.len() as u64 - s.called()
                    })?
                }
            }
            _ => count_row(ctx, scope, &key, metric, &paired)?,
        };
        rows.push(row);
    }
    Ok(rows)
}

fn sizes(cells: &[&Cell]) -> (usize, usize) {
    let pooled = |side: usize| cells.iter().map(|c| c.sides[side].len()).sum();
    (pooled(0), pooled(1))
}

/// A rate over the cells' 2×2 tables of `hits` per side: CMH (or its exact conditional test
/// when the counts are small) and the MH risk difference.
fn rate_row(
    ctx: &Context,
    scope: Scope,
    metric: Metric,
    cells: &[&Cell],
    hits: impl Fn(&SideValues) -> u64,
) -> Result<Pending, StatsError> {
    let n = sizes(cells);
    let rate = |side: usize| {
        let hit: u64 = cells.iter().map(|c| hits(&c.sides[side])).sum();
        let total = if side == 0 { n.0 } else { n.1 };
        (total > 0).then(|| hit as f64 / total as f64)
    };
    let row = ctx.row(SUITE, scope, metric, n, (rate(0), rate(1)));
    if cells.is_empty() {
        return Ok(Pending::untested(row));
    }
    let tables: Vec<Table2x2> = cells
        .iter()
        .map(|c| {
            let side = |i: usize| Proportion::new(hits(&c.sides[i]), c.sides[i].len() as u64);
            Table2x2 {
                baseline: side(0),
                candidate: side(1),
            }
        })
        .collect();
    let rates = compare_stratified_rates(&tables, ctx.stats.alpha)?;
    let test = if rates.exact {
        TestName::CmhExact
    } else {
        TestName::Cmh
    };
    let strata = tables
        .iter()
        .map(|t| {
            let (b, c) = (t.baseline, t.candidate);
            (b.trials, c.trials, b.successes as f64 / b.trials as f64)
        })
        .collect();
    Ok(Pending {
        row: with_delta(row, rates.comparison, test),
        plan: Plan::Cmh {
            strata,
            higher_is_better: metric.higher_is_better(),
        },
    })
}

/// A count: van Elteren's test, the mean of the per-task deltas with a task-level bootstrap
/// interval, and the ratio of the pooled means.
fn count_row(
    ctx: &Context,
    scope: Scope,
    key: &str,
    metric: Metric,
    cells: &[&Cell],
) -> Result<Pending, StatsError> {
    let n = sizes(cells);
    let pooled_mean = |side: usize| {
        let sum: f64 = cells
            .iter()
            .flat_map(|c| c.sides[side].metric(metric).into_owned())
            .sum();
        let count = if side == 0 { n.0 } else { n.1 };
        (count > 0).then(|| sum / count as f64)
    };
    let row = ctx.row(SUITE, scope, metric, n, (pooled_mean(0), pooled_mean(1)));
    if cells.is_empty() {
        return Ok(Pending::untested(row));
    }
    let columns: Vec<_> = cells
        .iter()
        .map(|c| (c.sides[0].metric(metric), c.sides[1].metric(metric)))
        .collect();
    let strata: Vec<(&[f64], &[f64])> = columns.iter().map(|(b, c)| (&**b, &**c)).collect();
    let deltas: Vec<f64> = strata
        .iter()
        .filter_map(|(b, c)| Some(mean(c)? - mean(b)?))
        .collect();
    let d = Delta {
        delta: mean(&deltas).unwrap_or(0.0),
        interval: cluster_bootstrap_mean(&deltas, &ctx.bootstrap(key, metric))?,
        test: van_elteren(&strata)?,
    };
    let plan = Plan::VanElteren {
        strata: strata
            .iter()
            .map(|(b, c)| {
                let m = mean(b).unwrap_or(0.0);
                (b.len() as u64, c.len() as u64, m, pooled_sd(b, c))
            })
            .collect(),
    };
    let mut row = with_delta(row, d, TestName::VanElteren);
    row.relative_change = relative(row.baseline_mean, row.candidate_mean);
    Ok(Pending { row, plan })
}

/// The mean over the tasks of each side's pass@k or pass^k (k at most any task's trials).
fn pass_row(ctx: &Context, scope: Scope, metric: Metric, cells: &[&Cell]) -> Pending {
    let per_task = |side: usize| -> Vec<f64> {
        cells
            .iter()
            .filter_map(|c| {
                let k = u64::from(ctx.stats.pass_k)
                    .min(c.sides[0].len() as u64)
                    .min(c.sides[1].len() as u64);
                let s = &c.sides[side];
                match metric {
                    Metric::PassAtK => pass_at_k(s.len() as u64, s.successes(), k),
                    _ => pass_hat_k(s.len() as u64, s.successes(), k),
                }
            })
            .collect()
    };
    let (b, c) = (per_task(0), per_task(1));
    let mut row = ctx.row(SUITE, scope, metric, sizes(cells), (mean(&b), mean(&c)));
    row.k = (!cells.is_empty()).then_some(ctx.stats.pass_k);
    row.gated = false;
    Pending::untested(row)
}
