//! The comparison of a run, computed from its episodes alone: one row per task × host × metric and
//! suite rows (`task_id = "*"`), with tests, intervals, adjusted p-values, verdicts and advice.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::verdict::{decide, margin, Level, TestName, Verdict};
use crate::config::{Metric, StatsConfig};
use crate::episode::{Episode, Side};
use crate::stats::{
    compare_counts, compare_success, compare_suite, min_detectable_drop, p_adjusted, pass_at_k,
    pass_hat_k, trials_needed_bisect, trials_needed_shift, BootstrapConfig, Comparison as Delta,
    Proportion, StatsError,
};
use crate::suite::{TaskKind, TaskSet};

/// The `task_id` of suite-level rows.
pub const SUITE: &str = "*";
/// Planning advice looks no further than this many trials per side.
pub const MAX_PLANNED_TRIALS: u64 = 400;

/// One row of `comparison.parquet`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub task_id: String,
    pub host: String,
    pub metric: Metric,
    /// Episodes counted on each side (infrastructure errors left out).
    pub n_baseline: u32,
    pub n_candidate: u32,
    pub baseline_mean: Option<f64>,
    pub candidate_mean: Option<f64>,
    /// Candidate minus baseline (suite rows: the mean of the per-task deltas).
    pub delta: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub test: TestName,
    pub p_value: Option<f64>,
    pub p_adjusted: Option<f64>,
    pub verdict: Verdict,
    /// Whether a regression of this row fails the run.
    pub gated: bool,
    /// The margin in the metric's units (rates: absolute; counts: relative × baseline mean).
    pub margin: Option<f64>,
    /// k of a pass@k / pass^k row.
    pub k: Option<u32>,
    /// For an inconclusive task row: trials per side that would detect a change of the margin
    /// with the configured power (null when it cannot be estimated or exceeds
    /// [`MAX_PLANNED_TRIALS`]).
    pub trials_needed: Option<u64>,
}

impl Row {
    /// Whether a test ran (both sides had episodes and the metric has a test).
    pub fn tested(&self) -> bool {
        self.p_value.is_some()
    }
}

/// Outcomes of one side of one task, for the written reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SideOutcome {
    pub n: u32,
    pub successes: u32,
    pub infra_errors: u32,
    /// Distinct grade explanations of failed trials, with how many trials gave each, most first.
    pub failures: Vec<(String, u32)>,
}

/// One task × host: both sides' outcomes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskOutcome {
    pub task_id: String,
    pub host: String,
    pub kind: TaskKind,
    pub set: TaskSet,
    pub baseline: SideOutcome,
    pub candidate: SideOutcome,
}

impl TaskOutcome {
    /// A regression-set task whose baseline passed every trial and whose candidate failed one.
    pub fn broke(&self) -> bool {
        self.set == TaskSet::Regression
            && self.baseline.n > 0
            && self.baseline.successes == self.baseline.n
            && self.candidate.n > 0
            && self.candidate.successes < self.candidate.n
    }
}

/// The smallest success drop the run could detect (the regression set's expectation, 100 %).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Detectable {
    pub trials: u64,
    /// The per-task level after correction in the worst case (family level / tasks).
    pub alpha: f64,
    pub power: f64,
    pub baseline_rate: f64,
    /// `None`: not even a drop to 0 % is detected with that power.
    pub drop: Option<f64>,
}

/// What the run as a whole comes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// No gated regression (exit 0).
    Pass,
    /// A gated metric regressed (exit 1).
    Regression,
    /// Too many infrastructure errors to trust the statistics (exit 3).
    InfraFailure,
}

/// The comparison of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub rows: Vec<Row>,
    pub tasks: Vec<TaskOutcome>,
    pub stats: StatsConfig,
    pub level: Level,
    pub episodes: usize,
    pub infra_errors: usize,
    /// Per host.
    pub detectable: Vec<(String, Detectable)>,
    /// What each host and side used, over every episode (infrastructure errors included).
    pub usage: Vec<UsageTotal>,
}

/// Requests and tokens of one host and side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageTotal {
    pub host: String,
    pub side: Side,
    /// The model as the provider named it (the last episode's).
    pub model: String,
    pub episodes: u64,
    /// Model requests: one per agent turn.
    pub requests: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// A task judge's calls (one per judged episode) and tokens, apart from the model's.
    pub judge_requests: u64,
    pub judge_input_tokens: u64,
    pub judge_output_tokens: u64,
}

fn usage_totals(episodes: &[(Side, &Episode)]) -> Vec<UsageTotal> {
    let mut totals: BTreeMap<(String, Side), UsageTotal> = BTreeMap::new();
    for (side, e) in episodes {
        let t = totals
            .entry((e.host.clone(), *side))
            .or_insert_with(|| UsageTotal {
                host: e.host.clone(),
                side: *side,
                model: String::new(),
                episodes: 0,
                requests: 0,
                input_tokens: 0,
                output_tokens: 0,
                judge_requests: 0,
                judge_input_tokens: 0,
                judge_output_tokens: 0,
            });
        t.model.clone_from(&e.model);
        t.episodes += 1;
        t.requests += u64::from(e.turns);
        t.input_tokens += e.input_tokens;
        t.output_tokens += e.output_tokens;
        t.judge_requests += u64::from(e.judge_input_tokens + e.judge_output_tokens > 0);
        t.judge_input_tokens += e.judge_input_tokens;
        t.judge_output_tokens += e.judge_output_tokens;
    }
    totals.into_values().collect()
}

impl Comparison {
    pub fn gated_regressions(&self) -> impl Iterator<Item = &Row> {
        self.rows
            .iter()
            .filter(|r| r.gated && r.verdict == Verdict::Regression)
    }

    pub fn infra_share(&self) -> f64 {
        if self.episodes == 0 {
            return 0.0;
        }
        self.infra_errors as f64 / self.episodes as f64
    }

    /// Infrastructure first: with too many infra errors no verdict can be trusted.
    pub fn outcome(&self) -> Outcome {
        if self.infra_share() > self.stats.max_infra_share {
            Outcome::InfraFailure
        } else if self.gated_regressions().next().is_some() {
            Outcome::Regression
        } else {
            Outcome::Pass
        }
    }

    /// The gated verdict of one task: regression beats inconclusive beats improvement beats no
    /// change, with the metrics behind it.
    pub fn task_verdict(&self, t: &TaskOutcome) -> TaskVerdict {
        let rows: Vec<&Row> = self
            .task_rows(&t.task_id, &t.host)
            .filter(|r| r.gated && r.tested())
            .collect();
        for verdict in [
            Verdict::Regression,
            Verdict::Inconclusive,
            Verdict::Improvement,
        ] {
            let metrics: Vec<Metric> = rows
                .iter()
                .filter(|r| r.verdict == verdict)
                .map(|r| r.metric)
                .collect();
            if !metrics.is_empty() {
                return TaskVerdict { verdict, metrics };
            }
        }
        TaskVerdict {
            verdict: if rows.is_empty() {
                Verdict::Inconclusive
            } else {
                Verdict::NoChange
            },
            metrics: Vec::new(),
        }
    }

    /// The rows of one task × host.
    pub fn task_rows<'a>(&'a self, task: &'a str, host: &'a str) -> impl Iterator<Item = &'a Row> {
        self.rows
            .iter()
            .filter(move |r| r.task_id == task && r.host == host)
    }
}

/// A task's gated verdict and the metrics that gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskVerdict {
    pub verdict: Verdict,
    pub metrics: Vec<Metric>,
}

impl std::fmt::Display for TaskVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.metrics.is_empty() {
            return match self.verdict {
                Verdict::Inconclusive => f.write_str("inconclusive (a side has no episodes)"),
                v => f.write_str(v.as_str()),
            };
        }
        let names: Vec<&str> = self.metrics.iter().map(|m| m.as_str()).collect();
        write!(f, "{} ({})", self.verdict, names.join(", "))
    }
}

/// Compares candidate episodes with baseline episodes (each already on its side).
///
/// Episodes with an `infra_error` are counted and left out. Bootstrap intervals are seeded from
/// `seed`, the host, the task and the metric, so the same episodes always give the same rows.
pub fn compare<'a>(
    baseline: impl IntoIterator<Item = &'a Episode>,
    candidate: impl IntoIterator<Item = &'a Episode>,
    stats: &StatsConfig,
    seed: u64,
) -> Result<Comparison, StatsError> {
    let mut hosts: BTreeMap<&str, BTreeMap<&str, Cell>> = BTreeMap::new();
    let (mut episodes, mut infra_errors) = (0, 0);
    let mut seen: Vec<(Side, &Episode)> = Vec::new();
    for (side, list) in [
        (0, baseline.into_iter().collect::<Vec<_>>()),
        (1, candidate.into_iter().collect()),
    ] {
        for e in list {
            episodes += 1;
            seen.push((
                if side == 0 {
                    Side::Baseline
                } else {
                    Side::Candidate
                },
                e,
            ));
            let cell = hosts
                .entry(&e.host)
                .or_default()
                .entry(&e.task_id)
                .or_insert_with(|| Cell::new(e));
            if e.infra_error.is_some() {
                infra_errors += 1;
                cell.infra[side] += 1;
            } else {
                cell.sides[side].push(e);
            }
        }
    }
    let level = Level::new(stats, hosts.len());
    let mut planner = Planner::new(stats);
    let mut rows = Vec::new();
    let mut tasks = Vec::new();
    let mut detectable = Vec::new();
    for (host, cells) in &hosts {
        let paired = cells.values().filter(|c| c.paired()).count();
        let ctx = Context {
            host,
            stats,
            seed,
            row_alpha: level.family_alpha / paired.max(1) as f64,
        };
        let mut host_rows = suite_rows(&ctx, cells)?;
        for (task, cell) in cells {
            host_rows.extend(task_rows(&ctx, task, cell, &mut planner)?);
            tasks.push(cell.outcome(task, host));
        }
        adjust(&mut host_rows, stats)?;
        for row in &mut host_rows {
            judge(row, level);
        }
        if let Some(d) = detectable_drop(&host_rows, &ctx)? {
            detectable.push((host.to_string(), d));
        }
        rows.extend(host_rows);
    }
    Ok(Comparison {
        rows,
        tasks,
        stats: stats.clone(),
        level,
        episodes,
        infra_errors,
        detectable,
        usage: usage_totals(&seen),
    })
}

/// One task × host: the usable episodes of each side and the infra errors left out.
struct Cell<'a> {
    kind: TaskKind,
    set: TaskSet,
    sides: [Vec<&'a Episode>; 2],
    infra: [u32; 2],
}

impl<'a> Cell<'a> {
    fn new(e: &Episode) -> Self {
        Self {
            kind: e.kind,
            set: e.set,
            sides: [Vec::new(), Vec::new()],
            infra: [0, 0],
        }
    }

    fn paired(&self) -> bool {
        !self.sides[0].is_empty() && !self.sides[1].is_empty()
    }

    fn values(&self, side: usize, metric: Metric) -> Vec<f64> {
        self.sides[side].iter().map(|e| value(e, metric)).collect()
    }

    fn successes(&self, side: usize) -> u64 {
        self.sides[side].iter().filter(|e| e.success).count() as u64
    }

    fn outcome(&self, task: &str, host: &str) -> TaskOutcome {
        let side = |i: usize| {
            let mut failures: Vec<(String, u32)> = Vec::new();
            for e in self.sides[i].iter().filter(|e| !e.success) {
                let why = e.grade.failure_summary();
                match failures.iter_mut().find(|(w, _)| *w == why) {
                    Some((_, n)) => *n += 1,
                    None => failures.push((why, 1)),
                }
            }
            failures.sort_by_key(|f| std::cmp::Reverse(f.1));
            SideOutcome {
                n: self.sides[i].len() as u32,
                successes: self.successes(i) as u32,
                infra_errors: self.infra[i],
                failures,
            }
        };
        TaskOutcome {
            task_id: task.to_owned(),
            host: host.to_owned(),
            kind: self.kind,
            set: self.set,
            baseline: side(0),
            candidate: side(1),
        }
    }
}

/// An episode's value of a per-episode metric.
fn value(e: &Episode, metric: Metric) -> f64 {
    match metric {
        Metric::Success => f64::from(u8::from(e.success)),
        Metric::ToolCalls => f64::from(e.tool_calls),
        Metric::ToolErrors => f64::from(e.tool_errors),
        Metric::InputTokens => e.input_tokens as f64,
        Metric::OutputTokens => e.output_tokens as f64,
        Metric::TotalTokens => e.total_tokens as f64,
        Metric::Turns => f64::from(e.turns),
        Metric::LatencyMs => e.latency_ms,
        Metric::FalseCallRate | Metric::MissedCallRate => f64::from(u8::from(e.tool_calls > 0)),
        Metric::PassAtK | Metric::PassHatK => {
            unreachable!("pass rows are per task, not per episode")
        }
    }
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

struct Context<'a> {
    host: &'a str,
    stats: &'a StatsConfig,
    seed: u64,
    /// The level one task row must reach in the worst case of the step-down correction: the
    /// family's level over the number of tasks in it (what planning advice aims at).
    row_alpha: f64,
}

impl Context<'_> {
    fn bootstrap(&self, task: &str, metric: Metric) -> BootstrapConfig {
        let key = format!("{}/{}/{task}/{metric}", self.seed, self.host);
        BootstrapConfig {
            resamples: self.stats.bootstrap_resamples,
            seed: xxhash_rust::xxh3::xxh3_64(key.as_bytes()),
            alpha: self.stats.alpha,
        }
    }

    fn row(
        &self,
        task: &str,
        metric: Metric,
        n: (usize, usize),
        means: (Option<f64>, Option<f64>),
    ) -> Row {
        Row {
            task_id: task.to_owned(),
            host: self.host.to_owned(),
            metric,
            n_baseline: n.0 as u32,
            n_candidate: n.1 as u32,
            baseline_mean: means.0,
            candidate_mean: means.1,
            delta: means.0.zip(means.1).map(|(b, c)| c - b),
            ci_low: None,
            ci_high: None,
            test: TestName::None,
            p_value: None,
            p_adjusted: None,
            verdict: Verdict::Inconclusive,
            gated: self.stats.gated.contains(&metric),
            margin: means.0.map(|b| margin(metric, b, self.stats)),
            k: None,
            trials_needed: None,
        }
    }
}

fn with_delta(mut row: Row, d: Delta, test: TestName) -> Row {
    row.delta = Some(d.delta);
    row.ci_low = Some(d.interval.low);
    row.ci_high = Some(d.interval.high);
    row.test = test;
    row.p_value = Some(d.test.p_value);
    row
}

fn task_rows(
    ctx: &Context,
    task: &str,
    cell: &Cell,
    planner: &mut Planner,
) -> Result<Vec<Row>, StatsError> {
    let n = (cell.sides[0].len(), cell.sides[1].len());
    let mut rows = Vec::new();
    for metric in Metric::TESTED {
        let (b, c) = (cell.values(0, metric), cell.values(1, metric));
        let row = ctx.row(task, metric, n, (mean(&b), mean(&c)));
        let mut row = match (cell.paired(), metric) {
            (false, _) => row,
            (true, Metric::Success) => {
                let (pb, pc) = (
                    Proportion::new(cell.successes(0), n.0 as u64),
                    Proportion::new(cell.successes(1), n.1 as u64),
                );
                with_delta(
                    row,
                    compare_success(pb, pc, ctx.stats.alpha)?,
                    TestName::FisherExact,
                )
            }
            (true, _) => {
                let d = compare_counts(&b, &c, &ctx.bootstrap(task, metric))?;
                with_delta(row, d, TestName::MannWhitneyU)
            }
        };
        if cell.paired() {
            row.trials_needed = planner.trials(&row, (sd(&b), sd(&c)), ctx.row_alpha)?;
        }
        rows.push(row);
    }
    for metric in [Metric::PassAtK, Metric::PassHatK] {
        let k = u64::from(ctx.stats.pass_k).min(n.0 as u64).min(n.1 as u64);
        let estimate = |side: usize, nn: usize| {
            let (nn, c) = (nn as u64, cell.successes(side));
            match metric {
                Metric::PassAtK => pass_at_k(nn, c, k),
                _ => pass_hat_k(nn, c, k),
            }
        };
        let means = if cell.paired() {
            (estimate(0, n.0), estimate(1, n.1))
        } else {
            (None, None)
        };
        let mut row = ctx.row(task, metric, n, means);
        row.k = cell.paired().then_some(k as u32);
        row.gated = false;
        rows.push(row);
    }
    Ok(rows)
}

fn suite_rows(ctx: &Context, cells: &BTreeMap<&str, Cell>) -> Result<Vec<Row>, StatsError> {
    let paired: Vec<&Cell> = cells.values().filter(|c| c.paired()).collect();
    let pooled = |side: usize| -> usize { paired.iter().map(|c| c.sides[side].len()).sum() };
    let n = (pooled(0), pooled(1));
    let mut rows = Vec::new();
    for metric in Metric::TESTED {
        let all = |side: usize| -> Vec<f64> {
            paired.iter().flat_map(|c| c.values(side, metric)).collect()
        };
        let row = ctx.row(SUITE, metric, n, (mean(&all(0)), mean(&all(1))));
        let deltas: Vec<f64> = paired
            .iter()
            .filter_map(|c| Some(mean(&c.values(1, metric))? - mean(&c.values(0, metric))?))
            .collect();
        rows.push(if deltas.is_empty() {
            row
        } else {
            let d = compare_suite(&deltas, &ctx.bootstrap(SUITE, metric))?;
            with_delta(row, d, TestName::WilcoxonSignedRank)
        });
    }
    for metric in [Metric::PassAtK, Metric::PassHatK] {
        let per_task = |side: usize| -> Vec<f64> {
            paired
                .iter()
                .filter_map(|c| {
                    let k = u64::from(ctx.stats.pass_k)
                        .min(c.sides[0].len() as u64)
                        .min(c.sides[1].len() as u64);
                    let (nn, s) = (c.sides[side].len() as u64, c.successes(side));
                    match metric {
                        Metric::PassAtK => pass_at_k(nn, s, k),
                        _ => pass_hat_k(nn, s, k),
                    }
                })
                .collect()
        };
        let mut row = ctx.row(SUITE, metric, n, (mean(&per_task(0)), mean(&per_task(1))));
        row.k = (!paired.is_empty()).then_some(ctx.stats.pass_k);
        row.gated = false;
        rows.push(row);
    }
    for (metric, kind) in [
        (Metric::FalseCallRate, TaskKind::NoTool),
        (Metric::MissedCallRate, TaskKind::Tool),
    ] {
        let hits = |side: usize| -> (u64, u64) {
            let episodes = cells
                .values()
                .filter(|c| c.kind == kind)
                .flat_map(|c| c.sides[side].iter());
            let (mut n, mut hit) = (0, 0);
            for e in episodes {
                n += 1;
                let called = e.tool_calls > 0;
                hit += u64::from(called == (metric == Metric::FalseCallRate));
            }
            (hit, n)
        };
        let ((hb, nb), (hc, nc)) = (hits(0), hits(1));
        let rate = |h: u64, n: u64| (n > 0).then(|| h as f64 / n as f64);
        let row = ctx.row(
            SUITE,
            metric,
            (nb as usize, nc as usize),
            (rate(hb, nb), rate(hc, nc)),
        );
        rows.push(if nb > 0 && nc > 0 {
            let d = compare_success(
                Proportion::new(hb, nb),
                Proportion::new(hc, nc),
                ctx.stats.alpha,
            )?;
            with_delta(row, d, TestName::FisherExact)
        } else {
            row
        });
    }
    Ok(rows)
}

/// Adjusts p-values within each family of one host: the task rows of one metric; the gated
/// suite rows; the suite rows that are not gated (kept apart so they cost the gate no power).
fn adjust(rows: &mut [Row], stats: &StatsConfig) -> Result<(), StatsError> {
    #[derive(PartialEq, Eq, Hash)]
    enum Family {
        Tasks(Metric),
        Suite { gated: bool },
    }
    let mut families: HashMap<Family, Vec<usize>> = HashMap::new();
    for (i, row) in rows.iter().enumerate() {
        if row.p_value.is_some() {
            let family = if row.task_id == SUITE {
                Family::Suite { gated: row.gated }
            } else {
                Family::Tasks(row.metric)
            };
            families.entry(family).or_default().push(i);
        }
    }
    for members in families.values() {
        let p: Vec<Option<f64>> = members.iter().map(|&i| rows[i].p_value).collect();
        for (&i, adjusted) in members.iter().zip(p_adjusted(&p, stats.correction)?) {
            rows[i].p_adjusted = adjusted;
        }
    }
    Ok(())
}

/// Sets a row's verdict; the trials-needed advice stays only on an inconclusive row.
fn judge(row: &mut Row, level: Level) {
    if let (Some(delta), Some(low), Some(high), Some(margin)) =
        (row.delta, row.ci_low, row.ci_high, row.margin)
    {
        row.verdict = decide(
            row.metric,
            delta,
            (low, high),
            row.p_adjusted,
            margin,
            level.family_alpha,
        );
    }
    if row.verdict != Verdict::Inconclusive {
        row.trials_needed = None;
    }
}

/// Trials-needed advice: Fisher's exact power for success (cached, as rows of one host often
/// share a baseline rate), the normal approximation for Mann–Whitney on the counts.
struct Planner<'a> {
    stats: &'a StatsConfig,
    fisher: HashMap<(u64, u64), Option<u64>>,
}

impl<'a> Planner<'a> {
    fn new(stats: &'a StatsConfig) -> Self {
        Self {
            stats,
            fisher: HashMap::new(),
        }
    }

    /// Trials per side to detect a change of the row's margin in the bad direction at `alpha`.
    fn trials(&mut self, row: &Row, sd: (f64, f64), alpha: f64) -> Result<Option<u64>, StatsError> {
        let (Some(base), Some(margin)) = (row.baseline_mean, row.margin) else {
            return Ok(None);
        };
        let needed = if row.metric == Metric::Success {
            let drop = margin.min(base);
            if drop <= 0.0 {
                return Ok(None);
            }
            let key = (base.to_bits(), alpha.to_bits());
            match self.fisher.get(&key) {
                Some(n) => *n,
                None => {
                    let n = trials_needed_bisect(
                        base,
                        drop,
                        alpha,
                        self.stats.power,
                        MAX_PLANNED_TRIALS,
                    )?;
                    self.fisher.insert(key, n);
                    n
                }
            }
        } else {
            trials_needed_shift(sd.0, sd.1, margin, alpha, self.stats.power)?
        };
        Ok(needed.filter(|&n| n <= MAX_PLANNED_TRIALS))
    }
}

/// The sample standard deviation (n − 1), 0 for fewer than two values.
fn sd(values: &[f64]) -> f64 {
    let Some(m) = mean(values) else { return 0.0 };
    if values.len() < 2 {
        return 0.0;
    }
    let ss: f64 = values.iter().map(|v| (v - m).powi(2)).sum();
    (ss / (values.len() - 1) as f64).sqrt()
}

fn detectable_drop(rows: &[Row], ctx: &Context) -> Result<Option<Detectable>, StatsError> {
    let mut sizes: Vec<u64> = rows
        .iter()
        .filter(|r| r.task_id != SUITE && r.metric == Metric::Success && r.p_value.is_some())
        .map(|r| u64::from(r.n_baseline.min(r.n_candidate)))
        .collect();
    if sizes.is_empty() {
        return Ok(None);
    }
    sizes.sort_unstable();
    let trials = sizes[sizes.len() / 2];
    let alpha = ctx.row_alpha;
    let drop = min_detectable_drop(1.0, trials, alpha, ctx.stats.power)?;
    Ok(Some(Detectable {
        trials,
        alpha,
        power: ctx.stats.power,
        baseline_rate: 1.0,
        drop,
    }))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::episode::Side;
    use crate::grade::{Check, Grade};
    use crate::stats::Adjustment;

    /// An episode of `task` on `side` with the given outcome; tokens follow the tool calls.
    fn ep(
        task: &str,
        kind: TaskKind,
        side: Side,
        trial: u32,
        success: bool,
        calls: u32,
    ) -> Episode {
        Episode {
            run_id: "r".into(),
            task_id: task.into(),
            kind,
            set: TaskSet::Regression,
            side,
            host: "sim".into(),
            model: "sim".into(),
            trial,
            seed: u64::from(trial),
            success,
            infra_error: None,
            turns: calls + 1,
            tool_calls: calls,
            tool_errors: 0,
            protocol_errors: 0,
            input_tokens: 1000 + 500 * u64::from(calls),
            output_tokens: 50,
            total_tokens: 1050 + 500 * u64::from(calls),
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            judge_input_tokens: 0,
            judge_output_tokens: 0,
            latency_ms: 10.0,
            first_tool: None,
            tools_called: String::new(),
            final_answer: None,
            hit_max_turns: false,
            calls: Vec::new(),
            grade: Grade {
                success,
                checks: vec![Check {
                    grader: "expected_calls".into(),
                    passed: success,
                    explanation: if success { "ok" } else { "got `find_issues`" }.into(),
                }],
            },
            attempts: Vec::new(),
            request_retries: Vec::new(),
            started_at: String::new(),
        }
    }

    /// A one-call tool episode of `task`, for other modules' tests.
    pub(crate) fn sample_episode(task: &str, side: Side, success: bool) -> Episode {
        ep(task, TaskKind::Tool, side, 0, success, 1)
    }

    /// `n` trials per side: `task` with `b` and `c` successes, plus a steady task and a no-tool one.
    fn run(b: u32, c: u32, n: u32) -> (Vec<Episode>, Vec<Episode>) {
        let side = |s: Side, wins: u32| -> Vec<Episode> {
            (0..n)
                .flat_map(|t| {
                    [
                        ep("moving", TaskKind::Tool, s, t, t < wins, 1),
                        ep("steady", TaskKind::Tool, s, t, true, 1),
                        ep("chat", TaskKind::NoTool, s, t, true, 0),
                    ]
                })
                .collect()
        };
        (side(Side::Baseline, b), side(Side::Candidate, c))
    }

    fn row<'a>(c: &'a Comparison, task: &str, metric: Metric) -> &'a Row {
        c.rows
            .iter()
            .find(|r| r.task_id == task && r.metric == metric)
            .unwrap_or_else(|| panic!("no row {task} {metric}"))
    }

    #[test]
    fn a_collapse_is_a_gated_regression_and_the_rest_is_not() {
        let (b, c) = run(10, 0, 10);
        let cmp = compare(&b, &c, &StatsConfig::default(), 1).unwrap();
        // 12 suite rows, then 10 per task.
        assert_eq!(cmp.rows.len(), 12 + 3 * 10);
        let moving = row(&cmp, "moving", Metric::Success);
        assert_eq!(moving.test, TestName::FisherExact);
        assert_eq!(moving.verdict, Verdict::Regression);
        assert_eq!(moving.delta, Some(-1.0));
        let expected =
            compare_success(Proportion::new(10, 10), Proportion::new(0, 10), 0.05).unwrap();
        assert_eq!(moving.p_value, Some(expected.test.p_value));
        assert_eq!(
            row(&cmp, "steady", Metric::Success).verdict,
            Verdict::Inconclusive
        );
        assert_eq!(
            row(&cmp, "steady", Metric::ToolCalls).verdict,
            Verdict::NoChange
        );
        assert_eq!(cmp.outcome(), Outcome::Regression);
        assert!(cmp
            .tasks
            .iter()
            .find(|t| t.task_id == "moving")
            .unwrap()
            .broke());
        let failures = &cmp
            .tasks
            .iter()
            .find(|t| t.task_id == "moving")
            .unwrap()
            .candidate
            .failures;
        assert_eq!(
            failures,
            &vec![("expected_calls: got `find_issues`".to_owned(), 10)]
        );
    }

    #[test]
    fn swapping_the_sides_turns_a_regression_into_an_improvement() {
        let (b, c) = run(10, 0, 10);
        let cmp = compare(&c, &b, &StatsConfig::default(), 1).unwrap();
        assert_eq!(
            row(&cmp, "moving", Metric::Success).verdict,
            Verdict::Improvement
        );
        assert_eq!(cmp.outcome(), Outcome::Pass);
    }

    #[test]
    fn p_adjusted_is_holm_or_bh_over_the_task_rows_of_a_metric() {
        let (b, c) = run(10, 3, 10);
        for method in [Adjustment::Holm, Adjustment::BenjaminiHochberg] {
            let stats = StatsConfig {
                correction: method,
                ..StatsConfig::default()
            };
            let cmp = compare(&b, &c, &stats, 1).unwrap();
            let family: Vec<&Row> = cmp
                .rows
                .iter()
                .filter(|r| r.task_id != SUITE && r.metric == Metric::Success)
                .collect();
            let raw: Vec<Option<f64>> = family.iter().map(|r| r.p_value).collect();
            let adjusted = p_adjusted(&raw, method).unwrap();
            let got: Vec<Option<f64>> = family.iter().map(|r| r.p_adjusted).collect();
            assert_eq!(got, adjusted);
        }
    }

    #[test]
    fn infra_errors_are_counted_and_left_out() {
        let (b, mut c) = run(10, 10, 10);
        for e in c.iter_mut().filter(|e| e.task_id == "moving").take(4) {
            e.infra_error = Some("server crashed".into());
            e.success = false;
        }
        let cmp = compare(&b, &c, &StatsConfig::default(), 1).unwrap();
        assert_eq!((cmp.episodes, cmp.infra_errors), (60, 4));
        let moving = row(&cmp, "moving", Metric::Success);
        assert_eq!((moving.n_baseline, moving.n_candidate), (10, 6));
        assert_eq!(moving.candidate_mean, Some(1.0));
        assert_eq!(cmp.outcome(), Outcome::Pass, "4/60 is under the 10 % limit");
        let strict = StatsConfig {
            max_infra_share: 0.05,
            ..StatsConfig::default()
        };
        let cmp = compare(&b, &c, &strict, 1).unwrap();
        assert_eq!(cmp.outcome(), Outcome::InfraFailure);
    }

    #[test]
    fn a_side_without_episodes_gets_untested_rows() {
        let (b, c) = run(10, 10, 10);
        let c: Vec<Episode> = c.into_iter().filter(|e| e.task_id != "moving").collect();
        let cmp = compare(&b, &c, &StatsConfig::default(), 1).unwrap();
        let moving = row(&cmp, "moving", Metric::Success);
        assert_eq!((moving.test, moving.p_value), (TestName::None, None));
        assert_eq!(moving.verdict, Verdict::Inconclusive);
        assert_eq!(
            cmp.task_verdict(&cmp.tasks[1]).to_string(),
            "inconclusive (a side has no episodes)"
        );
    }

    #[test]
    fn pass_rows_use_k_at_most_n_and_call_rates_count_episodes() {
        let (b, mut c) = run(2, 0, 2);
        for e in c.iter_mut().filter(|e| e.task_id == "chat") {
            e.tool_calls = 1;
        }
        let cmp = compare(&b, &c, &StatsConfig::default(), 1).unwrap();
        let at = row(&cmp, "moving", Metric::PassAtK);
        assert_eq!(at.k, Some(2), "k = min(3, n = 2)");
        assert_eq!(
            (at.test, at.verdict, at.gated),
            (TestName::None, Verdict::Inconclusive, false)
        );
        assert_eq!(at.candidate_mean, pass_at_k(2, 0, 2));
        let false_calls = row(&cmp, SUITE, Metric::FalseCallRate);
        assert_eq!(
            (false_calls.baseline_mean, false_calls.candidate_mean),
            (Some(0.0), Some(1.0))
        );
        assert_eq!(false_calls.test, TestName::FisherExact);
        let missed = row(&cmp, SUITE, Metric::MissedCallRate);
        assert_eq!((missed.n_baseline, missed.candidate_mean), (4, Some(0.0)));
    }

    #[test]
    fn the_same_episodes_give_the_same_rows() {
        let (b, c) = run(9, 4, 10);
        let one = compare(&b, &c, &StatsConfig::default(), 7).unwrap();
        let two = compare(&b, &c, &StatsConfig::default(), 7).unwrap();
        assert_eq!(one, two);
        let suite = row(&one, SUITE, Metric::Success);
        assert_eq!(suite.test, TestName::WilcoxonSignedRank);
        assert!((suite.delta.unwrap() - (-0.5 / 3.0)).abs() < 1e-12);
    }
}
