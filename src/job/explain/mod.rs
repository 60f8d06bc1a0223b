//! `mcpeval explain RUN_DIR`: why a run regressed. The run's regressed tasks (its own verdicts),
//! the model-affecting changes of its diff that touch each, each undone alone on the candidate by
//! an overlay and tried with the run's hosts, seeds and trial count, within a trial budget; when
//! no single change explains a task, the baseline plus one change; with `--order`, the
//! candidate's list reversed. The trials are compared with the run's own episodes.

mod attribute;
mod plan;
mod revert;
mod trials;
mod write;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

pub use attribute::{Attributed, Row};
pub use write::{
    calls_line, lines, order_line, section, Attribution, ATTRIBUTION_CSV, ATTRIBUTION_JSON,
};

use self::attribute::{against, Tried};
use self::plan::{Target, Trial, Unit};
use self::trials::Source;
use super::{Face, JobError, Stop};
use crate::analysis::{Collector, Comparison};
use crate::contract::{Change, Diff};
use crate::episode::{Episode, Side};
use crate::rundir::RunInfo;

/// The trials `explain` runs at most when `--budget` is not given.
pub const DEFAULT_BUDGET: u64 = 2000;

/// What `mcpeval explain` is asked.
#[derive(Debug, Clone, Default)]
pub struct ExplainRequest {
    pub dir: PathBuf,
    /// Improved tasks too.
    pub all: bool,
    /// The trials to spend at most (default [`DEFAULT_BUDGET`]).
    pub budget: Option<u64>,
    /// Also try the candidate's tool list in reverse order.
    pub order: bool,
    /// The config file to read the servers' secrets from (default: the run's own).
    pub config: Option<PathBuf>,
}

/// What `explain` came to.
pub enum Explained {
    /// The run has no regressed model task (and, with `--all`, no improved one); the call
    /// tasks that regressed, if any, are left to the diff.
    Nothing { call_tasks: Vec<String> },
    /// The attribution, written under `RUN_DIR/explain/`.
    Found(Box<Attribution>),
}

/// The run's episodes, its comparison as its verdicts were made, and what it is asked to
/// explain.
struct Explaining {
    info: RunInfo,
    episodes: Vec<Episode>,
    comparison: Comparison,
    targets: Vec<Target>,
    /// The call tasks whose rows regressed (or improved, with `--all`): not targets.
    call_tasks: Vec<String>,
}

/// Explains the run `request` names; `say` shows the job's own lines (the diff used, each unit
/// as it starts).
pub async fn explain(
    request: &ExplainRequest,
    stop: Stop,
    face: &dyn Face,
    say: &dyn Fn(String),
) -> Result<Explained, JobError> {
    let dir = &request.dir;
    let run = read_run(dir, request.all)?;
    if run.targets.is_empty() {
        return Ok(Explained::Nothing {
            call_tasks: run.call_tasks,
        });
    }
    let config = super::request::stored_config(&run.info, request.config.as_deref())?;
    let (diff, diff_path) = the_diff(dir, &run.info, &config).await?;
    let changes: Vec<Change> = (diff.changes.into_iter())
        .filter(|c| c.affects_models)
        .collect();
    if changes.is_empty() {
        return Err(JobError::NothingToExplain {
            dir: dir.clone(),
            diff: diff_path,
        });
    }
    say(format!(
        "{} regressed task row(s); {} model-affecting change(s) in {}",
        run.targets.len(),
        changes.len(),
        diff_path.display()
    ));
    let suite = crate::suite::load_or_embedded(&config.suites)?;
    let plan = plan::plan(&run.targets, &changes, &suite.tasks);
    let source = Source {
        dir,
        info: &run.info,
        config: &config,
        episodes: &run.episodes,
    };
    let budget = request.budget.unwrap_or(DEFAULT_BUDGET);
    let mut ledger = Ledger::new(budget, run.info.trials);
    let mut units = plan.units;
    let mut ran = ledger.run(&source, &units, &stop, face, say).await?;
    let mut rows = single_rows(&run, &units, &ran, &changes)?;
    let combos = combinations(&run.targets, &rows, &units, &ran, &changes);
    if !combos.is_empty() && !stop.finish.is_cancelled() {
        let first = units.len();
        units.extend(combos);
        let more = ledger
            .run(&source, &units[first..], &stop, face, say)
            .await?;
        ran.extend(more);
        let found = combination_rows(&run, &rows, (&units, &ran), &changes, first)?;
        rows.extend(found);
    }
    if request.order && !stop.finish.is_cancelled() {
        let first = units.len();
        units.push(reversed_unit(&run.targets, first));
        let more = ledger
            .run(&source, &units[first..], &stop, face, say)
            .await?;
        ran.extend(more);
        rows.extend(order_rows(&run, &units, &ran, first)?);
    }
    rows.extend(untried_rows(&run, &plan.untried, &changes, &units, &ran));
    rows.sort_by_key(|r| {
        let target = (run.targets.iter())
            .position(|t| t.task_id == r.task_id && t.host == r.host && t.metric == r.metric);
        (target, r.tried == "none")
    });
    let attribution = Attribution {
        run_id: run.info.run_id.clone(),
        diff: diff_path.display().to_string(),
        budget,
        trials_spent: ledger.spent,
        tried: ledger.tried,
        skipped: ledger.skipped,
        rows,
        call_tasks: run.call_tasks,
    };
    write::write(dir, &attribution).map_err(|e| JobError::write(&dir.join("explain"), e))?;
    Ok(Explained::Found(Box::new(attribution)))
}

/// The run's record, episodes and comparison (recomputed from its episodes by its own
/// statistics, as `compare` does), and the task rows to explain.
fn read_run(dir: &Path, all: bool) -> Result<Explaining, JobError> {
    let info = RunInfo::read(dir)?;
    let stats = &info.config.stats;
    let mut collector = Collector::for_stats(stats);
    let mut episodes = Vec::new();
    let mut models = BTreeSet::new();
    crate::rundir::scan_episodes(dir, |e| {
        collector.add(e.side, &e);
        if e.kind.has_model() {
            models.insert(e.task_id.clone());
            if e.infra_error.is_none() {
                episodes.push(e);
            }
        }
    })
    .map_err(|e| JobError::Episodes {
        dir: dir.to_path_buf(),
        source: e.into(),
    })?;
    let comparison = collector
        .comparison(stats, info.seed)
        .map_err(JobError::Compare)?;
    // A call task's calls are the suite's, not a model's: no revert can move them.
    let (targets, calls): (Vec<Target>, Vec<Target>) = plan::targets(&comparison, all, &models)
        .into_iter()
        .partition(|t| models.contains(&t.task_id));
    let call_tasks: BTreeSet<String> = calls.into_iter().map(|t| t.task_id).collect();
    let call_tasks = call_tasks.into_iter().collect();
    let kept: BTreeSet<&str> = targets.iter().map(|t| t.task_id.as_str()).collect();
    episodes.retain(|e| kept.contains(e.task_id.as_str()));
    Ok(Explaining {
        info,
        episodes,
        comparison,
        targets,
        call_tasks,
    })
}

/// The run's diff: the one it kept (`--auto-trigger`, `check`) or was given (`--trigger`), else
/// both servers snapshotted and diffed into `RUN_DIR/explain/contract/`.
async fn the_diff(
    dir: &Path,
    info: &RunInfo,
    config: &crate::config::RunConfig,
) -> Result<(Diff, PathBuf), JobError> {
    let kept = dir.join("contract").join("diff.json");
    for path in std::iter::once(kept).chain(info.trigger_diff.clone()) {
        if path.is_file() {
            return Ok((super::read_diff(&path)?, path));
        }
    }
    let contract = dir.join("explain").join("contract");
    let diff = super::trigger::snapshot_and_diff(config, &contract).await?;
    Ok((diff, contract.join("diff.json")))
}

/// The trials spent and the units tried or skipped, against the budget.
struct Ledger {
    budget: u64,
    trials: u32,
    spent: u64,
    tried: Vec<String>,
    skipped: Vec<String>,
}

/// A unit's trials: its candidate's episodes, or `None` when it did not run (the budget, a stop).
type Ran = Option<Vec<Episode>>;

impl Ledger {
    fn new(budget: u64, trials: u32) -> Self {
        Self {
            budget,
            trials,
            spent: 0,
            tried: Vec::new(),
            skipped: Vec::new(),
        }
    }

    /// Runs each unit the budget still covers, in order; the rest are skipped. A stop ends the
    /// units (those cut short count as not run).
    async fn run(
        &mut self,
        source: &Source<'_>,
        units: &[Unit],
        stop: &Stop,
        face: &dyn Face,
        say: &dyn Fn(String),
    ) -> Result<Vec<Ran>, JobError> {
        let mut ran = Vec::new();
        for unit in units {
            let cost = unit.cost(self.trials);
            let what = format!(
                "{}: {} task(s) × {} host(s) × {} trials",
                unit.id,
                unit.tasks.len(),
                unit.hosts.len(),
                self.trials
            );
            if stop.finish.is_cancelled() || self.spent + cost > self.budget {
                let why = match stop.finish.is_cancelled() {
                    true => "the explanation was stopped",
                    false => "the budget was spent",
                };
                self.skipped.push(format!("{what} ({why})"));
                ran.push(None);
                continue;
            }
            say(format!("trying {what}"));
            let episodes = trials::run_unit(source, unit, stop.clone(), face).await?;
            if episodes.is_some() {
                self.spent += cost;
                self.tried.push(what);
            }
            ran.push(episodes);
        }
        Ok(ran)
    }
}

/// Each target's unit tried against both sides of the run.
fn tried_on(
    run: &Explaining,
    target: &Target,
    units: &[Unit],
    ran: &[Ran],
    which: impl Fn(&Unit) -> bool,
) -> Result<Vec<Tried>, JobError> {
    let (stats, seed) = (&run.info.config.stats, run.info.seed);
    let mut tried = Vec::new();
    for (i, (unit, episodes)) in units.iter().zip(ran).enumerate() {
        let Some(episodes) = episodes else { continue };
        if !which(unit)
            || !unit.tasks.contains(&target.task_id)
            || !unit.hosts.contains(&target.host)
        {
            continue;
        }
        let test = |side| against(&run.episodes, side, episodes, target, stats, seed);
        tried.push(Tried {
            unit: i,
            vs_candidate: test(Side::Candidate).map_err(JobError::Compare)?,
            vs_baseline: test(Side::Baseline).map_err(JobError::Compare)?,
        });
    }
    Ok(tried)
}

/// The single reverts' rows, per target.
fn single_rows(
    run: &Explaining,
    units: &[Unit],
    ran: &[Ran],
    changes: &[Change],
) -> Result<Vec<Row>, JobError> {
    let alpha = run.info.config.stats.alpha;
    let mut rows = Vec::new();
    for target in &run.targets {
        let is_revert = |u: &Unit| matches!(u.trial, Trial::Revert(_));
        let tried = tried_on(run, target, units, ran, is_revert)?;
        let sides = attribute::sides(&run.comparison, target);
        let found = attribute::verdicts(target, &sides, &tried, units, changes, alpha)
            .map_err(JobError::Compare)?;
        rows.extend(found);
    }
    Ok(rows)
}

/// The targets a task's verdict rests on: its success row where success regressed (or
/// improved), else each of its metric rows. Combinations are tried for these only, and the
/// terminal names these only.
pub fn primary(targets: &[Target]) -> Vec<&Target> {
    let success = |t: &Target| {
        targets.iter().any(|o| {
            o.task_id == t.task_id && o.host == t.host && o.metric == crate::config::Metric::Success
        })
    };
    (targets.iter())
        .filter(|t| t.metric == crate::config::Metric::Success || !success(t))
        .collect()
}

/// Whether single reverts explain `target` (a row of it says `explains`).
fn explained(rows: &[Row], target: &Target) -> bool {
    rows.iter().any(|r| {
        r.task_id == target.task_id
            && r.host == target.host
            && r.metric == target.metric
            && r.verdict == Attributed::Explains
    })
}

/// For each primary target no single revert explains (two or more tried on it): one unit per
/// tried change with every other tried change undone (the baseline plus that change), on that
/// task and host alone.
fn combinations(
    targets: &[Target],
    rows: &[Row],
    units: &[Unit],
    ran: &[Ran],
    changes: &[Change],
) -> Vec<Unit> {
    let mut out: Vec<Unit> = Vec::new();
    for target in primary(targets) {
        let done = out
            .iter()
            .any(|u| u.tasks.contains(&target.task_id) && u.hosts.contains(&target.host));
        if done || explained(rows, target) {
            continue;
        }
        let reverts: Vec<&Unit> = (units.iter().zip(ran))
            .filter(|(u, ran)| ran.is_some() && matches!(u.trial, Trial::Revert(_)))
            .map(|(u, _)| u)
            .filter(|u| u.tasks.contains(&target.task_id) && u.hosts.contains(&target.host))
            .collect();
        if reverts.len() < 2 {
            continue;
        }
        for kept in &reverts {
            let Trial::Revert(change) = kept.trial else {
                continue;
            };
            let others = (reverts.iter())
                .filter(|u| u.id != kept.id)
                .filter_map(|u| u.overlay.as_ref());
            out.push(Unit {
                id: format!(
                    "{:02}-only-{}-{}",
                    units.len() + out.len() + 1,
                    plan::slug(&changes[change]),
                    target.task_id
                ),
                trial: Trial::OnlyThis { change },
                overlay: Some(revert::merged(others)),
                tasks: BTreeSet::from([target.task_id.clone()]),
                hosts: BTreeSet::from([target.host.clone()]),
            });
        }
    }
    out
}

/// The rows of the `only_this` units (from index `first`), per target.
fn combination_rows(
    run: &Explaining,
    singles: &[Row],
    (units, ran): (&[Unit], &[Ran]),
    changes: &[Change],
    first: usize,
) -> Result<Vec<Row>, JobError> {
    let alpha = run.info.config.stats.alpha;
    let mut rows = Vec::new();
    for target in primary(&run.targets) {
        if explained(singles, target) {
            continue;
        }
        let only = |u: &Unit| matches!(u.trial, Trial::OnlyThis { .. });
        let tried: Vec<Tried> = tried_on(run, target, units, ran, only)?
            .into_iter()
            .filter(|t| t.unit >= first)
            .collect();
        if tried.is_empty() {
            continue;
        }
        let sides = attribute::sides(&run.comparison, target);
        let found = attribute::combination_verdicts(target, &sides, &tried, units, changes, alpha)
            .map_err(JobError::Compare)?;
        rows.extend(found);
    }
    Ok(rows)
}

/// The candidate as served with its tool list reversed, on every target.
fn reversed_unit(targets: &[Target], n: usize) -> Unit {
    Unit {
        id: format!("{:02}-reversed-order", n + 1),
        trial: Trial::Reversed,
        overlay: None,
        tasks: targets.iter().map(|t| t.task_id.clone()).collect(),
        hosts: targets.iter().map(|t| t.host.clone()).collect(),
    }
}

/// The reversed list's rows: the regression follows the tools' positions where it explains.
fn order_rows(
    run: &Explaining,
    units: &[Unit],
    ran: &[Ran],
    first: usize,
) -> Result<Vec<Row>, JobError> {
    let alpha = run.info.config.stats.alpha;
    let mut rows = Vec::new();
    for target in &run.targets {
        let tried: Vec<Tried> = tried_on(run, target, units, ran, |u| u.trial == Trial::Reversed)?
            .into_iter()
            .filter(|t| t.unit >= first)
            .collect();
        let sides = attribute::sides(&run.comparison, target);
        let mut found = attribute::verdicts(target, &sides, &tried, units, &[], alpha)
            .map_err(JobError::Compare)?;
        for row in &mut found {
            if row.verdict == Attributed::Explains {
                row.reason = "the regression follows the tools' positions: offered in reverse \
                              order, the task recovers"
                    .into();
            }
        }
        rows.extend(found);
    }
    Ok(rows)
}

/// The rows of the changes not tried on each target: not touching it, not undoable, or
/// skipped for the budget (or a stop).
fn untried_rows(
    run: &Explaining,
    untried: &[plan::Untried],
    changes: &[Change],
    units: &[Unit],
    ran: &[Ran],
) -> Vec<Row> {
    let mut rows = Vec::new();
    for u in untried {
        let target = &run.targets[u.target];
        let sides = attribute::sides(&run.comparison, target);
        rows.push(attribute::untried_row(
            target,
            &sides,
            &changes[u.change],
            &u.reason,
        ));
    }
    for (unit, episodes) in units.iter().zip(ran) {
        let Trial::Revert(c) = unit.trial else {
            continue;
        };
        if episodes.is_some() {
            continue;
        }
        for target in run
            .targets
            .iter()
            .filter(|t| unit.tasks.contains(&t.task_id) && unit.hosts.contains(&t.host))
        {
            let sides = attribute::sides(&run.comparison, target);
            let reason = "skipped: the budget was spent (or the explanation stopped) before it";
            rows.push(attribute::untried_row(target, &sides, &changes[c], reason));
        }
    }
    rows
}
