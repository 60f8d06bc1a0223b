//! Building a comparison: episodes are folded into cells as they arrive ([`Collector`]), then
//! each host's task and suite rows are tested, adjusted per family, judged and planned.

use std::collections::{BTreeMap, HashMap};

use super::cells::Cell;
use super::model::{Comparison, Detectable, Row, Usage, SUITE};
use super::planning::{suite_scopes, Pending, Planner};
use super::suite_rows::suite_rows;
use super::task_rows::{exact_rows, task_rows};
use super::EpisodeFacts;
use crate::analysis::adaptive::{Design, Looks, UnitOutcome};
use crate::analysis::verdict::{decide, margin, Level, Scope, TestName, Verdict};
use crate::config::{Metric, StatsConfig};
use crate::episode::{Episode, Side};
use crate::stats::{
    min_detectable_drop, p_adjusted, BootstrapConfig, Comparison as Delta, StatsError,
};

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
    let mut collector = Collector::default();
    for e in baseline {
        collector.add(Side::Baseline, e);
    }
    for e in candidate {
        collector.add(Side::Candidate, e);
    }
    collector.comparison(stats, seed)
}

/// Folds episodes one at a time into what the comparison needs (a few numbers per episode), so
/// that a run's episodes can be streamed from disk instead of held.
#[derive(Debug, Default, Clone)]
pub struct Collector {
    hosts: BTreeMap<String, BTreeMap<String, Cell>>,
    episodes: usize,
    infra_errors: usize,
    usage: Usage,
    adaptive: Option<Adaptive>,
}

/// What an adaptive run's comparison keeps besides the cells: every trial by index (to replay the
/// stopping rule), and the cells of the trials before the first look, which the suite rows test
/// (a fixed number per task, so the stratified tests stay valid whatever stopped the tasks).
#[derive(Debug, Clone)]
struct Adaptive {
    looks: Looks,
    first_look: u32,
    suite_cells: BTreeMap<String, BTreeMap<String, Cell>>,
}

fn index(side: Side) -> usize {
    match side {
        Side::Baseline => 0,
        Side::Candidate => 1,
    }
}

impl Collector {
    /// A collector for a run compared with `stats`: an adaptive run's also keeps its trials by
    /// index (see [`crate::analysis::adaptive`]).
    pub fn for_stats(stats: &StatsConfig) -> Self {
        Self {
            adaptive: stats.adaptive.then(|| Adaptive {
                looks: Looks::default(),
                first_look: stats.looks()[0],
                suite_cells: BTreeMap::new(),
            }),
            ..Self::default()
        }
    }

    /// Counts an episode on `side` (whatever side it records itself: `compare --against` takes
    /// the baseline from another run).
    pub fn add(&mut self, side: Side, e: &Episode) {
        self.add_facts(side, &EpisodeFacts::of(e));
    }

    /// Counts what the comparison reads of an episode (from a stored episode or a table row).
    pub fn add_facts(&mut self, side: Side, e: &EpisodeFacts) {
        self.episodes += 1;
        self.infra_errors += usize::from(e.infra_error);
        self.usage.add(side, e);
        cell_of(&mut self.hosts, e).add(index(side), e);
        if let Some(adaptive) = &mut self.adaptive {
            adaptive.looks.add(side, e);
            if e.trial < adaptive.first_look {
                cell_of(&mut adaptive.suite_cells, e).add(index(side), e);
            }
        }
    }

    /// An adaptive run's trials by index, as counted so far (`None` for a fixed run).
    pub fn looks(&self) -> Option<&Looks> {
        self.adaptive.as_ref().map(|a| &a.looks)
    }

    /// Episodes counted on `side`, infrastructure errors included.
    pub fn count(&self, side: Side) -> usize {
        let i = index(side);
        self.hosts
            .values()
            .flat_map(BTreeMap::values)
            .map(|c| c.sides[i].len() + c.sides[i].infra as usize + c.server_failed_on(i))
            .sum()
    }

    /// The (task, host) pairs that have candidate episodes but no baseline episode at all, and
    /// whether each is a model's task (a `kind: call` task is then judged on the candidate alone).
    pub fn unmatched(&self) -> Vec<(String, String, bool)> {
        let mut out = Vec::new();
        for (host, cells) in &self.hosts {
            for (task, cell) in cells {
                if cell.has_side(1) && !cell.has_side(0) {
                    out.push((task.clone(), host.clone(), cell.kind.has_model()));
                }
            }
        }
        out
    }

    /// Episodes counted so far, infrastructure errors included.
    pub fn episodes(&self) -> usize {
        self.episodes
    }

    /// Episodes counted so far that ended in an infrastructure error, with the trials whose
    /// servers failed on both sides of a task (see [`Cell::settled`]).
    pub fn infra_errors(&self) -> usize {
        self.infra_errors + self.server_failed_both()
    }

    fn server_failed_both(&self) -> usize {
        (self.hosts.values())
            .flat_map(BTreeMap::values)
            .map(Cell::server_failed_both)
            .sum()
    }

    /// The comparison of the episodes counted so far: every row tested, adjusted, judged and
    /// planned. More episodes may be added afterwards (live reports during a run).
    pub fn comparison(&self, stats: &StatsConfig, seed: u64) -> Result<Comparison, StatsError> {
        // The hosts of models: the `kind: call` tasks' host takes no share of the level (its rows
        // are compared exactly, with no test).
        let model_hosts = (self.hosts.values())
            .filter(|cells| cells.values().any(|c| c.kind.has_model()))
            .count();
        let searched = (self.hosts.values())
            .flat_map(BTreeMap::values)
            .any(Cell::has_found_at_k);
        let level = Level::with_found_at_k(stats, model_hosts, searched);
        let mut planner = Planner::new(stats);
        let design = match &self.adaptive {
            Some(_) => Some(Design::new(stats, model_hosts)?),
            None => None,
        };
        let (mut rows, mut tasks, mut detectable) = (Vec::new(), Vec::new(), Vec::new());
        let mut turn_rows = Vec::new();
        for (host, cells) in &self.hosts {
            let ctx = Context { host, stats, seed };
            let mut pending: Vec<Pending> = Vec::new();
            let suite_cells = match &self.adaptive {
                Some(a) => a.suite_cells.get(host).unwrap_or(cells),
                None => cells,
            };
            let members: Vec<(std::borrow::Cow<'_, Cell>, _)> = (suite_cells.values())
                .filter(|c| c.kind.has_model())
                .map(|c| (c.settled(), (c.kind, c.set)))
                .collect();
            let kinds: Vec<_> = members.iter().map(|(_, ks)| *ks).collect();
            // A host of call tasks only has no suite rows.
            let scopes = match kinds.is_empty() {
                true => Vec::new(),
                false => suite_scopes(&kinds),
            };
            for scope in scopes {
                let in_scope: Vec<&Cell> = members
                    .iter()
                    .filter(|(_, (kind, set))| scope.holds(*kind, *set))
                    .map(|(c, _)| c.as_ref())
                    .collect();
                pending.extend(suite_rows(&ctx, scope, &in_scope)?);
            }
            let mut host_turns = Vec::new();
            for (task, cell) in cells {
                let cell = &*cell.settled();
                if !cell.kind.has_model() {
                    pending.extend(exact_rows(&ctx, task, cell));
                    tasks.push(cell.outcome(task, host));
                    continue;
                }
                let mut task_pending = task_rows(&ctx, task, cell)?;
                if let (Some(adaptive), Some(design)) = (&self.adaptive, &design) {
                    let outcome = adaptive
                        .looks
                        .final_outcome(design, host, task, cells.len())?;
                    for p in &mut task_pending {
                        stopped_row(&mut p.row, &outcome);
                    }
                }
                pending.extend(task_pending);
                host_turns.extend(super::turn_rows::turn_rows(&ctx, task, cell)?);
                tasks.push(cell.outcome(task, host));
            }
            super::turn_rows::judge_turns(&mut host_turns, stats, level.family_alpha)?;
            turn_rows.append(&mut host_turns);
            let levels = adjust(&mut pending, stats, level)?;
            let mut suite_level = None;
            for (p, row_level) in pending.iter_mut().zip(levels) {
                judge(&mut p.row, level);
                planner.plan(p, row_level)?;
                if p.row.scope == Scope::Suite && p.row.metric == Metric::Success {
                    suite_level = Some(row_level);
                }
            }
            let host_rows: Vec<Row> = pending.into_iter().map(|p| p.row).collect();
            if let Some(d) = detectable_drop(&host_rows, stats, level, suite_level)? {
                detectable.push((host.to_string(), d));
            }
            rows.extend(host_rows);
        }
        Ok(Comparison {
            rows,
            tasks,
            stats: stats.clone(),
            level,
            episodes: self.episodes,
            infra_errors: self.infra_errors + self.server_failed_both(),
            detectable,
            usage: self.usage.totals(),
            turn_rows,
        })
    }
}

/// The entry of (`host`, `task`) in a map by host, then task, made by `make` on the pair's first
/// episode; the names are looked up by reference, so an episode copies neither.
pub(crate) fn entry_of<'a, T>(
    map: &'a mut BTreeMap<String, BTreeMap<String, T>>,
    host: &str,
    task: &str,
    make: impl FnOnce() -> T,
) -> &'a mut T {
    if !map.contains_key(host) {
        map.insert(host.to_owned(), BTreeMap::new());
    }
    let tasks = map.get_mut(host).expect("inserted above");
    if !tasks.contains_key(task) {
        tasks.insert(task.to_owned(), make());
    }
    tasks.get_mut(task).expect("inserted above")
}

/// The episode's cell.
fn cell_of<'a>(
    hosts: &'a mut BTreeMap<String, BTreeMap<String, Cell>>,
    e: &EpisodeFacts,
) -> &'a mut Cell {
    entry_of(hosts, e.host, e.task_id, || Cell::new(e))
}

/// An adaptive task's row: how far it ran, why it stopped, and, stopped early, the p-value the
/// design vouches for in place of the fixed test's.
fn stopped_row(row: &mut Row, outcome: &UnitOutcome) {
    row.trials_run = Some(outcome.trials_run);
    row.stopped = outcome.stopped;
    let tested = Metric::TESTED.iter().position(|m| *m == row.metric);
    if let Some(bound) = tested.and_then(|m| outcome.p_bound[m]) {
        if row.p_value.is_some() {
            row.p_value = Some(bound);
        }
    }
}

/// What every row of one host shares.
pub(super) struct Context<'a> {
    pub host: &'a str,
    pub stats: &'a StatsConfig,
    pub seed: u64,
}

impl Context<'_> {
    /// The seeded bootstrap of one row; `key` is the task id, or `*` (whole suite) and
    /// `*|scope` for the other scopes' rows.
    pub fn bootstrap(&self, key: &str, metric: Metric) -> BootstrapConfig {
        let key = format!("{}/{}/{key}/{metric}", self.seed, self.host);
        BootstrapConfig {
            resamples: self.stats.bootstrap_resamples,
            seed: xxhash_rust::xxh3::xxh3_64(key.as_bytes()),
            alpha: self.stats.alpha,
        }
    }

    /// A row with its counts and means, untested.
    pub fn row(
        &self,
        task: &str,
        scope: Scope,
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
            margin: means.0.map(|b| margin(metric, b, scope, self.stats)),
            k: None,
            trials_needed: None,
            scope,
            relative_change: None,
            mde: None,
            trials_run: None,
            stopped: None,
            turn: None,
        }
    }
}

/// The row with a test's delta, interval and p-value.
pub(super) fn with_delta(mut row: Row, d: Delta, test: TestName) -> Row {
    row.delta = Some(d.delta);
    row.ci_low = Some(d.interval.low);
    row.ci_high = Some(d.interval.high);
    row.test = test;
    row.p_value = Some(d.test.p_value);
    row
}

/// Candidate mean over baseline mean, minus 1; `None` without a positive baseline mean.
pub(super) fn relative(baseline: Option<f64>, candidate: Option<f64>) -> Option<f64> {
    match (baseline, candidate) {
        (Some(b), Some(c)) if b > 0.0 => Some(c / b - 1.0),
        _ => None,
    }
}

/// Adjusts p-values within each family of one host: the task rows of one metric; the gated
/// suite rows of every scope; the suite rows that are not gated (kept apart so they cost the
/// gate no power). Returns each row's level in the worst case of the correction: the family's
/// level over the number of tested rows in it (what an `mde` is computed at).
fn adjust(rows: &mut [Pending], stats: &StatsConfig, level: Level) -> Result<Vec<f64>, StatsError> {
    #[derive(PartialEq, Eq, Hash)]
    enum Family {
        Tasks(Metric),
        Suite { gated: bool },
    }
    let family = |row: &Row| {
        if row.is_suite() {
            Family::Suite { gated: row.gated }
        } else {
            Family::Tasks(row.metric)
        }
    };
    let mut families: HashMap<Family, Vec<usize>> = HashMap::new();
    for (i, p) in rows.iter().enumerate() {
        if p.row.p_value.is_some() {
            families.entry(family(&p.row)).or_default().push(i);
        }
    }
    for members in families.values() {
        let p: Vec<Option<f64>> = members.iter().map(|&i| rows[i].row.p_value).collect();
        for (&i, adjusted) in members.iter().zip(p_adjusted(&p, stats.correction)?) {
            rows[i].row.p_adjusted = adjusted;
        }
    }
    Ok(rows
        .iter()
        .map(|p| {
            let size = families.get(&family(&p.row)).map_or(1, Vec::len);
            level.family_alpha / size.max(1) as f64
        })
        .collect())
}

/// Sets a row's verdict.
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
}

/// What the host's run could detect: a task at 100 % (the median task's trials, the worst case
/// of the correction), and the whole-suite success row's `mde`.
fn detectable_drop(
    rows: &[Row],
    stats: &StatsConfig,
    level: Level,
    suite_level: Option<f64>,
) -> Result<Option<Detectable>, StatsError> {
    let mut sizes: Vec<u64> = rows
        .iter()
        .filter(|r| !r.is_suite() && r.metric == Metric::Success && r.p_value.is_some())
        .map(|r| u64::from(r.n_baseline.min(r.n_candidate)))
        .collect();
    if sizes.is_empty() {
        return Ok(None);
    }
    sizes.sort_unstable();
    let trials = sizes[sizes.len() / 2];
    let alpha = level.family_alpha / sizes.len() as f64;
    let drop = min_detectable_drop(1.0, trials, alpha, stats.power)?;
    let suite = rows
        .iter()
        .find(|r| r.task_id == SUITE && r.scope == Scope::Suite && r.metric == Metric::Success);
    Ok(Some(Detectable {
        trials,
        alpha,
        power: stats.power,
        baseline_rate: 1.0,
        drop,
        suite_drop: suite.and_then(|r| r.mde),
        suite_alpha: suite_level,
    }))
}
