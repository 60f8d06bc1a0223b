//! What each row could have detected (`mde`), how many trials an inconclusive task row needs,
//! which suite rows a suite gets, and the design of a planned run (`mcpeval plan --suite`, the
//! warning `mcpeval run` prints).

use std::collections::HashMap;

use super::model::{Row, MAX_PLANNED_TRIALS};
use crate::analysis::verdict::{Level, Scope, Verdict};
use crate::config::{Metric, StatsConfig};
use crate::stats::{
    cmh_mde, mann_whitney_mde, min_fisher_p, trials_needed_bisect, trials_needed_shift,
    van_elteren_mde, FisherPlan, StatsError,
};
use crate::suite::{TaskKind, TaskSet};

/// What a row's planning figures are computed from.
#[derive(Debug, Clone)]
pub(super) enum Plan {
    /// No test, nothing to plan.
    None,
    /// A task's success: the baseline rate and the trials per side (exact Fisher power).
    Fisher { p0: f64, n: (u64, u64) },
    /// A task's count: each side's standard deviation and trials (normal approximation).
    Shift { sd: (f64, f64), n: (u64, u64) },
    /// A stratified rate: (baseline trials, candidate trials, baseline rate) per task.
    Cmh {
        strata: Vec<(u64, u64, f64)>,
        higher_is_better: bool,
    },
    /// A stratified count: (baseline trials, candidate trials, baseline mean, pooled sd).
    VanElteren { strata: Vec<(u64, u64, f64, f64)> },
}

/// A row waiting for its adjusted p-value, verdict and planning figures.
#[derive(Debug, Clone)]
pub(super) struct Pending {
    pub row: Row,
    pub plan: Plan,
}

impl Pending {
    pub fn untested(row: Row) -> Self {
        Self {
            row,
            plan: Plan::None,
        }
    }
}

/// The suite scopes a host's tasks get: the whole suite, and each set and kind that holds some
/// of the tasks but not all of them (a part equal to the whole would repeat its rows and cost
/// the family power for nothing).
pub fn suite_scopes(tasks: &[(TaskKind, TaskSet)]) -> Vec<Scope> {
    Scope::SUITE_SCOPES
        .into_iter()
        .filter(|scope| {
            let held = tasks.iter().filter(|(k, s)| scope.holds(*k, *s)).count();
            *scope == Scope::Suite || (held > 0 && held < tasks.len())
        })
        .collect()
}

/// The metrics of a scope's suite rows, in report order: the tested ones, pass@k and pass^k,
/// and the false- and missed-call rates (whole suite always; a set when it holds tasks of the
/// kind; never a kind scope, where they would repeat the whole suite's).
pub fn suite_metrics(scope: Scope, has_tool: bool, has_no_tool: bool) -> Vec<Metric> {
    let mut metrics: Vec<Metric> = Metric::TESTED.to_vec();
    metrics.extend([Metric::PassAtK, Metric::PassHatK]);
    let part = matches!(scope, Scope::Set(_));
    if scope == Scope::Suite || (part && has_no_tool) {
        metrics.push(Metric::FalseCallRate);
    }
    if scope == Scope::Suite || (part && has_tool) {
        metrics.push(Metric::MissedCallRate);
    }
    metrics
}

/// Computes `mde` for every row and `trials_needed` for inconclusive task rows, caching the
/// exact Fisher figures (rows of one host often share their trial counts and baseline rate).
pub(super) struct Planner<'a> {
    stats: &'a StatsConfig,
    fisher_trials: HashMap<(u64, u64), Option<u64>>,
    /// The Fisher design used last, under its (baseline trials, candidate trials, level). Only
    /// one is kept: each holds a few numbers per trial of its design, and while a run goes (a
    /// live rewrite) the tasks' trial counts differ, so one per task would grow with the run.
    /// Rows that share a design come one after another (a finished run's tasks share one).
    fisher: Option<((u64, u64, u64), FisherPlan)>,
}

impl<'a> Planner<'a> {
    pub fn new(stats: &'a StatsConfig) -> Self {
        Self {
            stats,
            fisher_trials: HashMap::new(),
            fisher: None,
        }
    }

    /// Fills the row's `mde` at `level` (the row's level in the worst case of the correction)
    /// and, for an inconclusive task row, its `trials_needed`.
    pub fn plan(&mut self, p: &mut Pending, level: f64) -> Result<(), StatsError> {
        if !p.row.tested() {
            return Ok(());
        }
        p.row.mde = self.mde(&p.row, &p.plan, level)?;
        if p.row.verdict == Verdict::Inconclusive && p.row.scope == Scope::Task {
            p.row.trials_needed = self.trials(&p.row, &p.plan, level)?;
        }
        Ok(())
    }

    fn mde(&mut self, row: &Row, plan: &Plan, level: f64) -> Result<Option<f64>, StatsError> {
        let (power, margin) = (self.stats.power, row.margin.unwrap_or(0.0));
        Ok(match plan {
            Plan::None => None,
            Plan::Fisher { p0, n } => {
                if *p0 <= 0.0 {
                    return Ok(None);
                }
                let design = (n.0, n.1, level.to_bits());
                let plan = match self.fisher.take() {
                    Some((kept, plan)) if kept == design => plan,
                    _ => FisherPlan::new(n.0, n.1, level)?,
                };
                let (_, plan) = self.fisher.insert((design, plan));
                plan.mde(*p0, power, margin)?
            }
            Plan::Shift { sd, n } => mann_whitney_mde(sd.0, sd.1, n.0, n.1, level, power, margin)?,
            Plan::Cmh {
                strata,
                higher_is_better,
            } => cmh_mde(strata, *higher_is_better, level, power, margin)?,
            Plan::VanElteren { strata } => match row.baseline_mean {
                Some(base) if base > 0.0 => {
                    van_elteren_mde(strata, level, power, self.stats.suite_relative_margin)?
                        .map(|r| r * base)
                }
                // Nothing to scale (no tool errors on the baseline, say): the same absolute
                // rise in every task, against the margin of 0 that a zero baseline mean gives.
                _ => {
                    let unit: Vec<_> = strata
                        .iter()
                        .map(|&(b, c, _, sd)| (b, c, 1.0, sd))
                        .collect();
                    van_elteren_mde(&unit, level, power, 0.0)?
                }
            },
        })
    }

    /// Trials per side to detect a change of the row's margin in the bad direction at `alpha`:
    /// Fisher's exact power for success, the normal approximation for Mann–Whitney on counts.
    fn trials(&mut self, row: &Row, plan: &Plan, alpha: f64) -> Result<Option<u64>, StatsError> {
        let (Some(base), Some(margin)) = (row.baseline_mean, row.margin) else {
            return Ok(None);
        };
        let needed = match plan {
            Plan::Fisher { .. } => {
                let drop = margin.min(base);
                if drop <= 0.0 {
                    return Ok(None);
                }
                let key = (base.to_bits(), alpha.to_bits());
                match self.fisher_trials.get(&key) {
                    Some(n) => *n,
                    None => {
                        let n = trials_needed_bisect(
                            base,
                            drop,
                            alpha,
                            self.stats.power,
                            MAX_PLANNED_TRIALS,
                        )?;
                        self.fisher_trials.insert(key, n);
                        n
                    }
                }
            }
            Plan::Shift { sd, .. } => {
                trials_needed_shift(sd.0, sd.1, margin, alpha, self.stats.power)?
            }
            _ => None,
        };
        Ok(needed.filter(|&n| n <= MAX_PLANNED_TRIALS))
    }
}

/// The shape of a planned run as the verdicts see it: its tasks (kind and set) and hosts. Gives
/// the levels the correction will apply and what the rows can detect at a number of trials.
#[derive(Debug, Clone, PartialEq)]
pub struct RunDesign {
    pub tasks: Vec<(TaskKind, TaskSet)>,
    pub hosts: usize,
}

impl RunDesign {
    pub fn level(&self, stats: &StatsConfig) -> Level {
        Level::new(stats, self.hosts)
    }

    /// A task row's level in the worst case of the correction: its family's level over the
    /// number of tasks.
    pub fn task_level(&self, stats: &StatsConfig) -> f64 {
        self.level(stats).family_alpha / self.tasks.len().max(1) as f64
    }

    /// The gated suite rows of one host (one family, adjusted together).
    pub fn gated_suite_rows(&self, stats: &StatsConfig) -> usize {
        let has = |kind: TaskKind| self.tasks.iter().any(|(k, _)| *k == kind);
        suite_scopes(&self.tasks)
            .into_iter()
            .flat_map(|scope| suite_metrics(scope, has(TaskKind::Tool), has(TaskKind::NoTool)))
            .filter(|m| stats.gated.contains(m))
            .count()
    }

    /// A gated suite row's level in the worst case of the correction.
    pub fn suite_level(&self, stats: &StatsConfig) -> f64 {
        self.level(stats).family_alpha / self.gated_suite_rows(stats).max(1) as f64
    }

    /// Whether, with `trials` per side, a single task's success row can reach its level at all:
    /// the smallest two-sided Fisher p, 2 / C(2k, k), must not be above it.
    pub fn task_flaggable(&self, stats: &StatsConfig, trials: u64) -> bool {
        min_fisher_p(trials.max(1)) <= self.task_level(stats)
    }

    /// The drop of every task's success rate (from `rates`, one per task; 100 % when empty) that
    /// the whole-suite success row flags with `power` at `trials` per side.
    pub fn suite_drop(
        &self,
        stats: &StatsConfig,
        trials: u64,
        rates: &[f64],
    ) -> Result<Option<f64>, StatsError> {
        let strata: Vec<(u64, u64, f64)> = (0..self.tasks.len())
            .map(|i| (trials, trials, rates.get(i).copied().unwrap_or(1.0)))
            .collect();
        cmh_mde(
            &strata,
            true,
            self.suite_level(stats),
            stats.power,
            stats.suite_success_margin,
        )
    }

    /// The one warning line `mcpeval run` prints before it starts when, at `trials` per side, no
    /// single task can be flagged at all; it says what the suite rows can still see.
    pub fn warning(&self, stats: &StatsConfig, trials: u64) -> Result<Option<String>, StatsError> {
        if self.task_flaggable(stats, trials) || !stats.gated.contains(&Metric::Success) {
            return Ok(None);
        }
        let suite = match self.suite_drop(stats, trials, &[])? {
            Some(d) => format!(
                "the suite rows can still flag a drop of every task's success by {} points \
                 from 100 %, or a few tasks falling further",
                super::super::points(d)
            ),
            None => "and neither can the suite rows".into(),
        };
        Ok(Some(format!(
            "warning: with {trials} trials per side no single task can be flagged (the smallest \
             Fisher p, {:.4}, is above the per-task level {:.2e} of {} tasks); {suite}; \
             `mcpeval plan --suite` tells how many trials a task needs",
            min_fisher_p(trials.max(1)),
            self.task_level(stats),
            self.tasks.len()
        )))
    }
}
