//! Adaptive trials: the stopping rule asked after each look of a task, replayed by the final
//! comparison, and the p-values an adaptive run can vouch for.
//!
//! The design is the fixed one at `max_trials`, curtailed. After the look at `n` trials per side
//! (the looks of [`StatsConfig::looks`]), each gated task metric is settled when
//! - **regression / improvement** (success rate): every outcome of the task's remaining trials
//!   would still end, at `max_trials`, with Fisher's p at or below the family's level over its
//!   tasks (what Holm or BH grant a row at the least) and the delta beyond the margin, so the
//!   fixed design's verdict is already known (deterministic curtailment; it spends no α);
//! - **no change**: the row's interval at the error spent by this look (`alpha` spent over the
//!   looks by Lan–DeMets' O'Brien–Fleming-like function) keeps its worst end short of the margin;
//! - **futility**: the predictive power of ending as a regression at `max_trials` is below
//!   `[stats] futility`.
//!
//! A task stops when each gated row is settled, or at `max_trials`. A row stopped early reports
//! as its p-value the largest p its remaining trials could have ended with (success; exact),
//! or 1 (counts, whose future values have no bound): never below the p the fixed design would
//! have found, so Holm and BH over these p-values keep the fixed design's run-level α — the
//! stopping rule cannot add a false alarm, only remove one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::analysis::comparison::entry_of;
use crate::analysis::verdict::{margin, Level, Scope};
use crate::config::{Metric, StatsConfig};
use crate::episode::{EpisodeFacts, Side};
use crate::stats::{
    compare_success, fisher_exact, look_weights, normal_mean_difference, one_sided_critical,
    predictive_power, welch_standard_error, Proportion, StatsError,
};

/// Why an adaptive task stopped (the `stopped` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stopped {
    /// No outcome its remaining trials are likely to bring would make it a regression.
    Futility,
    /// Every gated row's interval already rules out a change as large as its margin.
    NoChange,
    /// A gated row crossed the boundary as a regression.
    Regression,
    /// A gated row crossed the boundary as an improvement (and none as a regression).
    Improvement,
    /// It ran to `max_trials` without settling.
    MaxTrials,
    /// The run's trial budget could not give it its next look.
    Budget,
}

impl Stopped {
    pub fn as_str(self) -> &'static str {
        match self {
            Stopped::Futility => "futility",
            Stopped::NoChange => "no_change",
            Stopped::Regression => "regression",
            Stopped::Improvement => "improvement",
            Stopped::MaxTrials => "max_trials",
            Stopped::Budget => "budget",
        }
    }
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

const TESTED: usize = Metric::TESTED.len();

/// One trial of one side: not finished, an infrastructure error, or its metric values.
#[derive(Debug, Clone, Copy, Default)]
enum Slot {
    #[default]
    Empty,
    Infra,
    Done([f64; TESTED]),
}

/// The trials of one task × host by trial index, per side.
#[derive(Debug, Clone, Default)]
struct Unit {
    sides: [Vec<Slot>; 2],
}

impl Unit {
    /// Whether trials `0..n` have finished on both sides.
    fn complete(&self, n: u32) -> bool {
        self.sides.iter().all(|s| {
            s.len() >= n as usize && s[..n as usize].iter().all(|t| !matches!(t, Slot::Empty))
        })
    }

    /// The usable values of metric `m` among the first `n` trials of a side.
    fn values(&self, side: usize, m: usize, n: u32) -> Vec<f64> {
        self.sides[side]
            .iter()
            .take(n as usize)
            .filter_map(|t| match t {
                Slot::Done(v) => Some(v[m]),
                _ => None,
            })
            .collect()
    }
}

/// What the rule says of one task × host from its trials so far.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitOutcome {
    /// The looks decided (complete on both sides).
    pub looks: u32,
    /// Trials per side at the last look decided (0 before the first).
    pub trials_run: u32,
    /// Why it stopped; `None` while it still runs.
    pub stopped: Option<Stopped>,
    /// Per metric of [`Metric::TESTED`], for a task stopped before `max_trials`: the p-value
    /// its row reports (see the module's notes); `None` where the fixed test's own stands.
    pub p_bound: [Option<f64>; TESTED],
}

/// The design an adaptive run follows: its looks, their weights, and the levels of the rule.
#[derive(Debug, Clone)]
pub struct Design {
    looks: Vec<u32>,
    /// The share of the no-change error (`alpha`) each look spends.
    weights: Vec<f64>,
    stats: StatsConfig,
    level: Level,
}

impl Design {
    /// `hosts`: the run's hosts (the run-level α is split over their families, as the final
    /// comparison splits it).
    pub fn new(stats: &StatsConfig, hosts: usize) -> Result<Self, StatsError> {
        let looks = stats.looks();
        Ok(Self {
            weights: look_weights(&looks, stats.alpha)?,
            looks,
            stats: stats.clone(),
            level: Level::new(stats, hosts),
        })
    }

    /// The level a task's p-value must reach at `max_trials` to be sure of its verdict: its
    /// family's level over the family's `tasks` (Bonferroni, what Holm or BH grant at the least).
    fn task_level(&self, tasks: usize) -> f64 {
        self.level.family_alpha / tasks.max(1) as f64
    }

    pub fn looks(&self) -> &[u32] {
        &self.looks
    }

    /// The run's trials per side, if it has a budget (`[stats] trial_budget`).
    pub fn budget(&self) -> Option<u64> {
        self.stats.trial_budget
    }

    pub fn max_trials(&self) -> u32 {
        *self.looks.last().expect("a design has a look")
    }
}

/// Every adaptive task's trials by index, fed one episode at a time (a few numbers per trial).
#[derive(Debug, Clone, Default)]
pub struct Looks {
    /// By host, then task.
    units: BTreeMap<String, BTreeMap<String, Unit>>,
}

impl Looks {
    pub fn add(&mut self, side: Side, e: &EpisodeFacts) {
        let unit = entry_of(&mut self.units, e.host, e.task_id, Unit::default);
        let trials = &mut unit.sides[side as usize];
        let i = e.trial as usize;
        if trials.len() <= i {
            trials.resize(i + 1, Slot::Empty);
        }
        trials[i] = if e.infra_error {
            Slot::Infra
        } else {
            Slot::Done(Metric::TESTED.map(|m| e.value(m)))
        };
    }

    /// Trials per side recorded over every task (the larger side of each).
    pub fn trials(&self) -> u64 {
        self.units
            .values()
            .flat_map(BTreeMap::values)
            .map(|u| u.sides.iter().map(Vec::len).max().unwrap_or(0) as u64)
            .sum()
    }

    fn unit(&self, host: &str, task: &str) -> Option<&Unit> {
        self.units.get(host)?.get(task)
    }

    /// How likely the task is to end as a regression: the largest predictive power over its
    /// gated rows at its last look decided (1 before its first). A budget's looks go to the
    /// likeliest first.
    pub fn priority(&self, design: &Design, host: &str, task: &str, tasks: usize) -> f64 {
        let Ok(outcome) = self.outcome(design, host, task, tasks) else {
            return 1.0;
        };
        let Some(unit) = self.unit(host, task) else {
            return 1.0;
        };
        let n = outcome.trials_run;
        if n == 0 {
            return 1.0;
        }
        let t = f64::from(n) / f64::from(design.max_trials());
        let alpha_task = design.task_level(tasks);
        Metric::TESTED
            .into_iter()
            .enumerate()
            .filter(|(_, m)| design.stats.gated.contains(m))
            .map(|(m, metric)| {
                let (b, c) = (unit.values(0, m, n), unit.values(1, m, n));
                if b.is_empty() || c.is_empty() {
                    return 1.0;
                }
                regression_power(metric, &b, &c, t, alpha_task)
            })
            .fold(0.0, f64::max)
    }

    /// The rule replayed over the looks of one task × host that are complete. `tasks`: the
    /// host's tasks in the run (the size of each family the task's rows are adjusted in).
    pub fn outcome(
        &self,
        design: &Design,
        host: &str,
        task: &str,
        tasks: usize,
    ) -> Result<UnitOutcome, StatsError> {
        let mut out = UnitOutcome {
            looks: 0,
            trials_run: 0,
            stopped: None,
            p_bound: [None; TESTED],
        };
        let Some(unit) = self.unit(host, task) else {
            return Ok(out);
        };
        let last = design.looks.len() - 1;
        for (j, (&n, &w)) in design.looks.iter().zip(&design.weights).enumerate() {
            if !unit.complete(n) {
                break;
            }
            out.looks = j as u32 + 1;
            out.trials_run = n;
            let at = Look {
                n,
                w,
                alpha_task: design.task_level(tasks),
            };
            let settled = look(design, unit, &at)?;
            out.stopped = match settled {
                Some(reason @ (Stopped::Regression | Stopped::Improvement)) => Some(reason),
                // At the last look nothing is left to save: the task ran its course.
                _ if j == last => Some(Stopped::MaxTrials),
                settled => settled,
            };
            if out.stopped.is_some_and(|s| s != Stopped::MaxTrials) && n < design.max_trials() {
                out.p_bound = bounds(unit, n, design.max_trials())?;
            }
            if out.stopped.is_some() {
                break;
            }
        }
        Ok(out)
    }

    /// [`Looks::outcome`] of a run that has ended: in a budgeted run, a task whose trials end
    /// at a look that did not settle it stopped because the budget gave it no more
    /// ([`Stopped::Budget`], with the p-values of a task stopped early).
    pub fn final_outcome(
        &self,
        design: &Design,
        host: &str,
        task: &str,
        tasks: usize,
    ) -> Result<UnitOutcome, StatsError> {
        let mut out = self.outcome(design, host, task, tasks)?;
        let Some(unit) = self.unit(host, task) else {
            return Ok(out);
        };
        let recorded = unit.sides.iter().map(Vec::len).max().unwrap_or(0);
        let ends_at_look = recorded == out.trials_run as usize && out.trials_run > 0;
        if out.stopped.is_none() && design.stats.trial_budget.is_some() && ends_at_look {
            out.stopped = Some(Stopped::Budget);
            out.p_bound = bounds(unit, out.trials_run, design.max_trials())?;
        }
        Ok(out)
    }
}

/// How one gated row stands after a look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RowState {
    Open,
    Settled(Stopped),
}

/// Where a look stands in the design.
struct Look {
    /// Trials per side.
    n: u32,
    /// The share of the no-change error it spends.
    w: f64,
    /// The level a task's p-value must reach at `max_trials`.
    alpha_task: f64,
}

/// One look: whether the task is settled, and why.
fn look(design: &Design, unit: &Unit, at: &Look) -> Result<Option<Stopped>, StatsError> {
    let stats = &design.stats;
    let max = design.max_trials();
    let t = f64::from(at.n) / f64::from(max);
    let mut states = Vec::new();
    for (m, metric) in Metric::TESTED.into_iter().enumerate() {
        if !stats.gated.contains(&metric) {
            continue;
        }
        let (b, c) = (unit.values(0, m, at.n), unit.values(1, m, at.n));
        if b.is_empty() || c.is_empty() {
            states.push(RowState::Open);
            continue;
        }
        let worse = |x: f64| if metric.higher_is_better() { -x } else { x };
        let mb = mean(&b);
        let row_margin = margin(metric, mb, Scope::Task, stats);
        let remaining = u64::from(max - at.n);
        let certain = |s: Stopped| -> Result<bool, StatsError> {
            if metric != Metric::Success {
                return Ok(false);
            }
            let mut all = true;
            each_ending(&b, &c, remaining, |p, delta| {
                let beyond = match s {
                    Stopped::Regression => worse(delta) > row_margin,
                    _ => -worse(delta) > row_margin,
                };
                all &= p <= at.alpha_task && beyond;
                all
            })?;
            Ok(all)
        };
        let state = if certain(Stopped::Regression)? {
            RowState::Settled(Stopped::Regression)
        } else if certain(Stopped::Improvement)? {
            RowState::Settled(Stopped::Improvement)
        } else {
            let spent = stats.alpha * at.w;
            let (low, high) = if metric == Metric::Success {
                let i = compare_success(proportion(&b), proportion(&c), spent)?.interval;
                (i.low, i.high)
            } else {
                let i = normal_mean_difference(&b, &c, spent)?;
                (i.low, i.high)
            };
            let worst_end = worse(low).max(worse(high));
            if worst_end < row_margin || worst_end <= 0.0 {
                RowState::Settled(Stopped::NoChange)
            } else {
                if regression_power(metric, &b, &c, t, at.alpha_task) < stats.futility {
                    RowState::Settled(Stopped::Futility)
                } else {
                    RowState::Open
                }
            }
        };
        states.push(state);
    }
    if states.is_empty() || states.contains(&RowState::Open) {
        return Ok(None);
    }
    let any = |s: Stopped| states.contains(&RowState::Settled(s));
    Ok(Some(if any(Stopped::Regression) {
        Stopped::Regression
    } else if any(Stopped::Improvement) {
        Stopped::Improvement
    } else if states
        .iter()
        .all(|s| *s == RowState::Settled(Stopped::NoChange))
    {
        Stopped::NoChange
    } else {
        Stopped::Futility
    }))
}

/// Calls `f(p, delta)` with Fisher's p and the candidate-minus-baseline rate of every way the
/// `remaining` trials per side could end (all usable), until `f` returns false.
fn each_ending(
    b: &[f64],
    c: &[f64],
    remaining: u64,
    mut f: impl FnMut(f64, f64) -> bool,
) -> Result<(), StatsError> {
    let (pb, pc) = (proportion(b), proportion(c));
    let (nb, nc) = (pb.trials + remaining, pc.trials + remaining);
    for xb in 0..=remaining {
        for xc in 0..=remaining {
            let (sb, sc) = (pb.successes + xb, pc.successes + xc);
            let p = fisher_exact(Proportion::new(sb, nb), Proportion::new(sc, nc))?.p_value;
            if !f(p, sc as f64 / nc as f64 - sb as f64 / nb as f64) {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The p-values a task stopped at `n` of `max` trials reports: for the success rate, the largest
/// Fisher p any ending of its remaining trials could give; 1 for the counts.
fn bounds(unit: &Unit, n: u32, max: u32) -> Result<[Option<f64>; TESTED], StatsError> {
    let mut out = [None; TESTED];
    for (m, metric) in Metric::TESTED.into_iter().enumerate() {
        let (b, c) = (unit.values(0, m, n), unit.values(1, m, n));
        if b.is_empty() || c.is_empty() {
            continue;
        }
        out[m] = Some(if metric == Metric::Success {
            let mut largest = 0.0f64;
            each_ending(&b, &c, u64::from(max - n), |p, _| {
                largest = largest.max(p);
                // No p is larger than 1 (an ending with equal rates): nothing more to find.
                largest < 1.0 - 1e-9
            })?;
            largest
        } else {
            1.0
        });
    }
    Ok(out)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn proportion(v: &[f64]) -> Proportion {
    Proportion::new(
        v.iter().filter(|x| **x > 0.5).count() as u64,
        v.len() as u64,
    )
}

/// The predictive power of a row ending as a regression at `max_trials` (its p at or below
/// `alpha_task`, two-sided), from its values at information fraction `t`.
fn regression_power(metric: Metric, b: &[f64], c: &[f64], t: f64, alpha_task: f64) -> f64 {
    let z_crit = one_sided_critical(alpha_task / 2.0);
    predictive_power(worse_z(metric, b, c), t, z_crit)
}

/// The standardised change in the bad direction: for a rate, the difference of the rates with
/// half a success and half a failure added to each side (so that 5 of 5 against 5 of 5 has a
/// spread); for a count, Welch's `Δ / √(s_b²/n_b + s_c²/n_c)`. Positive = worse.
fn worse_z(metric: Metric, b: &[f64], c: &[f64]) -> f64 {
    let sign = if metric.higher_is_better() { -1.0 } else { 1.0 };
    let (delta, se) = if metric == Metric::Success {
        let rate = |v: &[f64]| (proportion(v).successes as f64 + 0.5) / (v.len() as f64 + 1.0);
        let (pb, pc) = (rate(b), rate(c));
        let var = |p: f64, n: usize| p * (1.0 - p) / n as f64;
        (pc - pb, (var(pb, b.len()) + var(pc, c.len())).sqrt())
    } else {
        (mean(c) - mean(b), welch_standard_error(b, c))
    };
    let d = sign * delta;
    if se > 0.0 {
        d / se
    } else if d == 0.0 {
        0.0
    } else {
        d.signum() * f64::INFINITY
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::runner::allocate;
    use crate::stats::{cmh_test, mh_risk_difference, Table2x2};
    use crate::suite::{TaskKind, TaskSet};

    pub(crate) fn facts(task: &str, trial: u32, success: bool, calls: u32) -> EpisodeFacts<'_> {
        EpisodeFacts {
            host: "sim",
            task_id: task,
            trial,
            model: "m",
            kind: TaskKind::Tool,
            set: TaskSet::Regression,
            infra_error: false,
            error_text: None,
            server_error: false,
            text_tool_calls: 0,
            replay_unmatched: 0,
            recovered_calls: 0,
            text_tool_call: None,
            turns_of_user: Default::default(),
            success,
            tool_calls: calls,
            tool_errors: 0,
            turns: 2,
            input_tokens: 100,
            output_tokens: 10,
            total_tokens: 110,
            reasoning_tokens: 0,
            judge_input_tokens: 0,
            judge_output_tokens: 0,
            latency_ms: 1.0,
            truncated: false,
            timed_out: false,
            ttft_ms: None,
            failure: "".into(),
            unprepared_requests: 0,
            found_at_k: None,
        }
    }

    fn success_only() -> StatsConfig {
        StatsConfig {
            adaptive: true,
            gated: vec![Metric::Success],
            ..StatsConfig::default()
        }
    }

    #[test]
    fn an_unchanged_perfect_task_stops_early_for_futility() {
        let design = Design::new(&success_only(), 1).unwrap();
        let mut looks = Looks::default();
        for trial in 0..10 {
            for side in Side::BOTH {
                looks.add(side, &facts("t", trial, true, 1));
            }
        }
        let out = looks.outcome(&design, "sim", "t", 30).unwrap();
        // 5 of 5 on both sides leaves a predictive power of 7 %: one more look (under 5 %).
        assert_eq!(out.looks, 2);
        assert_eq!(out.trials_run, 10);
        assert_eq!(out.stopped, Some(Stopped::Futility));
        assert!(
            out.p_bound[0].unwrap() > 1.0 - 1e-9,
            "nothing could come of it"
        );
    }

    #[test]
    fn a_look_waits_for_both_sides_and_every_trial_of_it() {
        let design = Design::new(&success_only(), 1).unwrap();
        let mut looks = Looks::default();
        for trial in [0, 1, 2, 4] {
            for side in Side::BOTH {
                looks.add(side, &facts("t", trial, true, 1));
            }
        }
        looks.add(Side::Baseline, &facts("t", 3, true, 1));
        let out = looks.outcome(&design, "sim", "t", 30).unwrap();
        assert_eq!((out.looks, out.stopped), (0, None));
        // An infrastructure error finishes a trial too (with nothing to count).
        let mut infra = facts("t", 3, false, 0);
        infra.infra_error = true;
        looks.add(Side::Candidate, &infra);
        let out = looks.outcome(&design, "sim", "t", 30).unwrap();
        assert_eq!(out.looks, 1);
    }

    #[test]
    fn a_collapse_is_a_regression_before_max_trials_and_a_drift_goes_on() {
        let design = Design::new(&success_only(), 1).unwrap();
        let mut looks = Looks::default();
        for trial in 0..30 {
            looks.add(Side::Baseline, &facts("gone", trial, true, 1));
            looks.add(Side::Candidate, &facts("gone", trial, false, 1));
            // 0.8 against 0.6: neither settled nor hopeless at 5 or 10 trials.
            looks.add(Side::Baseline, &facts("drift", trial, trial % 5 != 0, 1));
            looks.add(Side::Candidate, &facts("drift", trial, trial % 5 > 1, 1));
        }
        let gone = looks.outcome(&design, "sim", "gone", 30).unwrap();
        // 25 of 25 against 0 of 25: even if the last 5 went the other way, Fisher's p would be
        // far below the level.
        assert_eq!(gone.stopped, Some(Stopped::Regression));
        assert_eq!(gone.trials_run, 25, "{gone:?}");
        assert!(gone.p_bound[0].unwrap() < 1e-5, "{gone:?}");
        let drift = looks.outcome(&design, "sim", "drift", 30).unwrap();
        assert!(drift.looks >= 2, "{drift:?}");
        assert_ne!(drift.stopped, Some(Stopped::Regression));
    }

    #[test]
    fn a_task_that_never_settles_stops_at_max_trials() {
        let stats = StatsConfig {
            futility: 0.0001,
            max_trials: 10,
            ..success_only()
        };
        let design = Design::new(&stats, 1).unwrap();
        let mut looks = Looks::default();
        for trial in 0..10 {
            looks.add(Side::Baseline, &facts("t", trial, trial % 2 == 0, 1));
            looks.add(Side::Candidate, &facts("t", trial, trial % 3 == 0, 1));
        }
        let out = looks.outcome(&design, "sim", "t", 1).unwrap();
        assert_eq!((out.looks, out.trials_run), (2, 10));
        assert_eq!(out.stopped, Some(Stopped::MaxTrials));
    }

    /// The rule in simulation (sides independent, the stopping rule applied after each look,
    /// Holm over the tasks' reported p-values at the family's level): the whole-run false
    /// alarm rate of an A/A suite, the trials the rule saves, and its power against the fixed
    /// design at `max_trials`.
    pub(crate) struct Simulated {
        pub false_alarms: f64,
        pub share_of_trials: f64,
        pub detected: f64,
        pub detected_fixed: f64,
    }

    pub(crate) fn simulate(rates: &[(f64, f64)], runs: usize, seed: u64) -> Simulated {
        simulate_with(&success_only(), rates, runs, seed, 30)
    }

    /// The adaptive run look by look as the runner makes it (each look to the tasks still
    /// running, through [`allocate`] when there is a budget), and the fixed design at
    /// `fixed_trials` on the same draws, judged by its task rows and its CMH suite row.
    pub(crate) fn simulate_with(
        stats: &StatsConfig,
        rates: &[(f64, f64)],
        runs: usize,
        seed: u64,
        fixed_trials: u32,
    ) -> Simulated {
        let design = Design::new(stats, 1).unwrap();
        let max = design.max_trials().max(fixed_trials);
        let k = rates.len();
        let ids: Vec<String> = (0..k).map(|i| format!("t{i}")).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (mut alarms, mut trials, mut detected, mut detected_fixed) = (0, 0u64, 0, 0);
        let moved: Vec<bool> = rates.iter().map(|(b, c)| b != c).collect();
        let level = design.level.family_alpha;
        for _ in 0..runs {
            let draws: Vec<[Vec<bool>; 2]> = rates
                .iter()
                .map(|&(b, c)| {
                    [b, c].map(|p| (0..max).map(|_| rng.random_bool(p)).collect::<Vec<bool>>())
                })
                .collect();
            let mut looks = Looks::default();
            let mut running = vec![true; k];
            let mut from = 0;
            for &n in design.looks() {
                let waiting: Vec<usize> = (0..k).filter(|&i| running[i]).collect();
                if let Some(budget) = stats.trial_budget {
                    let priorities: Vec<f64> = waiting
                        .iter()
                        .map(|&i| looks.priority(&design, "sim", &ids[i], k))
                        .collect();
                    let left = budget.saturating_sub(looks.trials());
                    let chosen = allocate(&priorities, u64::from(n - from), Some(left));
                    for (&i, chosen) in waiting.iter().zip(chosen) {
                        running[i] &= chosen;
                    }
                }
                let now: Vec<usize> = (0..k).filter(|&i| running[i]).collect();
                for i in now {
                    for trial in from..n {
                        for (s, side) in Side::BOTH.into_iter().enumerate() {
                            let ok = draws[i][s][trial as usize];
                            looks.add(side, &facts(&ids[i], trial, ok, 1));
                        }
                    }
                    let o = looks.outcome(&design, "sim", &ids[i], k).unwrap();
                    running[i] = o.stopped.is_none();
                }
                from = n;
            }
            let p: Vec<(Option<f64>, f64)> = ids
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    let out = looks.final_outcome(&design, "sim", id, k).unwrap();
                    trials += u64::from(out.trials_run);
                    let n = out.trials_run as usize;
                    let (b, c) = (&draws[i][0][..n], &draws[i][1][..n]);
                    let fixed = fisher_exact(count(b), count(c)).unwrap().p_value;
                    (out.p_bound[0].or(Some(fixed)), mean_of(c) - mean_of(b))
                })
                .collect();
            let flagged = flags(&p, stats, level);
            alarms += usize::from(flagged.iter().zip(&moved).any(|(f, m)| *f && !m));
            detected += usize::from(flagged.iter().zip(&moved).any(|(f, m)| *f && *m));
            // Fixed: Fisher at fixed_trials for every task, Holm, and the CMH suite row.
            let n = fixed_trials as usize;
            let fixed: Vec<(Option<f64>, f64)> = draws
                .iter()
                .map(|[b, c]| {
                    let p = fisher_exact(count(&b[..n]), count(&c[..n]))
                        .unwrap()
                        .p_value;
                    (Some(p), mean_of(&c[..n]) - mean_of(&b[..n]))
                })
                .collect();
            let flagged = flags(&fixed, stats, level);
            let tables: Vec<Table2x2> = draws
                .iter()
                .map(|[b, c]| Table2x2::new(count(&b[..n]), count(&c[..n])))
                .collect();
            let suite = cmh_test(&tables).unwrap().p_value <= level
                && mh_risk_difference(&tables).unwrap().estimate < -stats.suite_success_margin;
            let task = flagged.iter().zip(&moved).any(|(f, m)| *f && *m);
            detected_fixed += usize::from(task || suite);
        }
        let fixed_trials = (runs * k) as f64 * f64::from(design.max_trials());
        Simulated {
            false_alarms: alarms as f64 / runs as f64,
            share_of_trials: trials as f64 / fixed_trials,
            detected: detected as f64 / runs as f64,
            detected_fixed: detected_fixed as f64 / runs as f64,
        }
    }

    fn count(v: &[bool]) -> Proportion {
        Proportion::new(v.iter().filter(|x| **x).count() as u64, v.len() as u64)
    }

    fn mean_of(v: &[bool]) -> f64 {
        v.iter().filter(|x| **x).count() as f64 / v.len().max(1) as f64
    }

    /// Which tasks are regressions: Holm-adjusted p at or below the level, delta beyond the
    /// margin.
    fn flags(p: &[(Option<f64>, f64)], stats: &StatsConfig, level: f64) -> Vec<bool> {
        let raw: Vec<Option<f64>> = p.iter().map(|x| x.0).collect();
        let adjusted = crate::stats::p_adjusted(&raw, stats.correction).unwrap();
        adjusted
            .iter()
            .zip(p)
            .map(|(a, (_, d))| a.is_some_and(|a| a <= level) && -d > stats.success_margin)
            .collect()
    }

    fn suite_rates(rng_seed: u64, tasks: usize, moved: usize, drop: f64) -> Vec<(f64, f64)> {
        let mut rng = ChaCha8Rng::seed_from_u64(rng_seed);
        let pool: [f64; 5] = [1.0, 0.95, 0.9, 0.8, 0.6];
        (0..tasks)
            .map(|i| {
                let b = pool[rng.random_range(0..pool.len())];
                let b = if i < moved { b.max(drop + 0.2) } else { b };
                (b, if i < moved { b - drop } else { b })
            })
            .collect()
    }

    #[test]
    fn an_a_a_suite_keeps_the_false_alarm_rate_and_saves_trials() {
        let rates = suite_rates(1, 30, 0, 0.0);
        let sim = simulate(&rates, 400, 7);
        eprintln!(
            "A/A, 30 tasks: false alarms {:.4} of 400 runs, trials {:.3} of the fixed design's",
            sim.false_alarms, sim.share_of_trials
        );
        assert!(sim.false_alarms <= 0.05, "{}", sim.false_alarms);
        assert!(sim.share_of_trials <= 0.6, "{}", sim.share_of_trials);
    }

    #[test]
    fn three_falling_tasks_are_found_about_as_often_as_by_the_fixed_design() {
        let rates = suite_rates(2, 30, 3, 0.4);
        let sim = simulate(&rates, 300, 8);
        eprintln!(
            "3 of 30 tasks falling by 0.4: adaptive detects {:.3}, fixed at 30 trials {:.3}; \
             trials {:.3} of the fixed design's",
            sim.detected, sim.detected_fixed, sim.share_of_trials
        );
        assert!(
            sim.detected >= sim.detected_fixed - 0.05,
            "adaptive {} fixed {}",
            sim.detected,
            sim.detected_fixed
        );
        assert!(sim.share_of_trials <= 0.6, "{}", sim.share_of_trials);
    }

    #[test]
    fn a_budget_goes_where_the_candidate_moved() {
        // 18 tasks, 3 falling by 0.4; 20 trials per task and side in all.
        let rates = suite_rates(3, 18, 3, 0.4);
        let stats = StatsConfig {
            trial_budget: Some(20 * 18),
            max_trials: 40,
            ..success_only()
        };
        let budgeted = simulate_with(&stats, &rates, 300, 9, 20);
        eprintln!(
            "budget of 20 per task: adaptive detects {:.3}, the fixed 20-trial design {:.3}; \
             trials {:.3} of 40 per task",
            budgeted.detected, budgeted.detected_fixed, budgeted.share_of_trials
        );
        assert!(budgeted.detected >= 0.8, "{}", budgeted.detected);
        assert!(budgeted.share_of_trials <= 0.5 + 1e-9, "over budget");
        assert!(budgeted.false_alarms <= 0.05, "{}", budgeted.false_alarms);
    }
}
