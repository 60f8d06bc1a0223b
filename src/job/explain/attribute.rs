//! The verdicts of attribution: each unit's trials against the run's candidate (did undoing the
//! change move the task back?) and against its baseline (all the way?), by the run's own test
//! of the metric, Holm across the changes tried for one task.

use serde::Serialize;

use super::plan::{label_of, Target, Trial, Unit};
use crate::analysis::{Collector, Comparison, Scope};
use crate::config::{Metric, StatsConfig};
use crate::contract::Change;
use crate::episode::{Episode, Side};
use crate::stats::{p_adjusted, Adjustment, StatsError};

/// What one tried change says about one regressed task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Attributed {
    /// Undone, the task is significantly back from the candidate and not significantly short of
    /// the baseline.
    Explains,
    /// Significantly back from the candidate, and still significantly short of the baseline.
    Partly,
    /// Not significantly back from the candidate, and significantly short of the baseline.
    NoEffect,
    /// Neither: too few trials to tell.
    Inconclusive,
    /// Not tried (the reason says why).
    NotTried,
}

impl Attributed {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Explains => "explains",
            Self::Partly => "partly",
            Self::NoEffect => "no_effect",
            Self::Inconclusive => "inconclusive",
            Self::NotTried => "not_tried",
        }
    }
}

/// One row of `attribution.csv`: a target and a change (or the reversed list).
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub task_id: String,
    pub host: String,
    pub metric: Metric,
    /// The change as the diff names it (`tools`, `search_issues`, `description`, its kind).
    pub list: String,
    pub name: String,
    pub path: Option<String>,
    pub kind: String,
    /// `revert` (the change undone alone), `only_this` (every other change undone),
    /// `reversed_order` (the candidate's list reversed) or `none`.
    pub tried: &'static str,
    /// The metric's mean on each side (a rate for success) and the trials behind it.
    pub baseline: Option<f64>,
    pub baseline_trials: u32,
    pub candidate: Option<f64>,
    pub candidate_trials: u32,
    pub reverted: Option<f64>,
    pub reverted_trials: u32,
    /// The test of the trials tried against the candidate's (`only_this`: the baseline's).
    pub p: Option<f64>,
    pub p_holm: Option<f64>,
    pub verdict: Attributed,
    /// The other changes that explain the same task on their own.
    pub together_with: Vec<String>,
    pub reason: String,
    /// The overlay file of the trials, relative to the run directory.
    pub overlay: Option<String>,
}

/// The run's own rows of one target: its baseline and candidate as the run compared them.
#[derive(Debug, Clone, Copy)]
pub struct Sides {
    pub baseline: Option<f64>,
    pub baseline_trials: u32,
    pub candidate: Option<f64>,
    pub candidate_trials: u32,
}

/// The row of `target` in `comparison`.
fn row_of<'a>(c: &'a Comparison, target: &Target) -> Option<&'a crate::analysis::Row> {
    (c.rows.iter()).find(|r| {
        r.scope == Scope::Task
            && r.task_id == target.task_id
            && r.host == target.host
            && r.metric == target.metric
    })
}

/// The run's sides for `target`.
pub fn sides(c: &Comparison, target: &Target) -> Sides {
    let row = row_of(c, target);
    Sides {
        baseline: row.and_then(|r| r.baseline_mean),
        baseline_trials: row.map_or(0, |r| r.n_baseline),
        candidate: row.and_then(|r| r.candidate_mean),
        candidate_trials: row.map_or(0, |r| r.n_candidate),
    }
}

/// One unit's trials against one side of the run: the unit's mean and trials, the test's p and
/// the difference (unit minus that side).
#[derive(Debug, Clone, Copy, Default)]
pub struct Against {
    pub mean: Option<f64>,
    pub trials: u32,
    pub p: Option<f64>,
    pub delta: Option<f64>,
}

/// The unit's episodes of `target` against the run's episodes of `side`, by the run's test.
pub fn against(
    run: &[Episode],
    side: Side,
    unit: &[Episode],
    target: &Target,
    stats: &StatsConfig,
    seed: u64,
) -> Result<Against, StatsError> {
    let mut stats = stats.clone();
    stats.adaptive = false;
    let mut collector = Collector::for_stats(&stats);
    let of_target = |e: &&Episode| e.task_id == target.task_id && e.host == target.host;
    for e in run.iter().filter(of_target).filter(|e| e.side == side) {
        collector.add(Side::Baseline, e);
    }
    for e in unit.iter().filter(of_target) {
        collector.add(Side::Candidate, e);
    }
    let comparison = collector.comparison(&stats, seed)?;
    Ok(
        row_of(&comparison, target).map_or_else(Against::default, |r| Against {
            mean: r.candidate_mean,
            trials: r.n_candidate,
            p: r.p_value,
            delta: r.delta,
        }),
    )
}

/// The sign of the candidate's move away from the baseline (+1 up, −1 down, 0 none).
fn away(s: &Sides) -> f64 {
    match (s.baseline, s.candidate) {
        (Some(b), Some(c)) if c > b => 1.0,
        (Some(b), Some(c)) if c < b => -1.0,
        _ => 0.0,
    }
}

/// One unit tried on one target, tested against both sides of the run.
#[derive(Debug, Clone)]
pub struct Tried {
    pub unit: usize,
    pub vs_candidate: Against,
    pub vs_baseline: Against,
}

/// The rows of one target from the units tried on it (single reverts or the reversed list):
/// Holm across them on the test against the candidate.
pub fn verdicts(
    target: &Target,
    sides: &Sides,
    tried: &[Tried],
    units: &[Unit],
    changes: &[Change],
    alpha: f64,
) -> Result<Vec<Row>, StatsError> {
    let holm = holm_of(tried, |t| &t.vs_candidate)?;
    let dir = away(sides);
    let mut rows = Vec::new();
    for (t, p_holm) in tried.iter().zip(holm) {
        let back = p_holm.is_some_and(|p| p <= alpha)
            && t.vs_candidate.delta.is_some_and(|d| d * dir < 0.0);
        let short = t.vs_baseline.p.is_some_and(|p| p <= alpha)
            && t.vs_baseline.delta.is_some_and(|d| d * dir > 0.0);
        let verdict = match (back, short) {
            (true, false) => Attributed::Explains,
            (true, true) => Attributed::Partly,
            (false, true) => Attributed::NoEffect,
            (false, false) => Attributed::Inconclusive,
        };
        let reason = match verdict {
            Attributed::Inconclusive => inconclusive_reason(target, sides, t, tried.len(), alpha),
            _ => String::new(),
        };
        let mut row = tested(
            target,
            sides,
            (&units[t.unit], changes),
            &t.vs_candidate,
            p_holm,
        );
        row.verdict = verdict;
        row.reason = reason;
        rows.push(row);
    }
    together(&mut rows);
    Ok(rows)
}

/// The rows of one target from its `only_this` units (the baseline plus one change): a change
/// that alone takes the baseline significantly the candidate's way (Holm across them)
/// `explains` in combination.
pub fn combination_verdicts(
    target: &Target,
    sides: &Sides,
    tried: &[Tried],
    units: &[Unit],
    changes: &[Change],
    alpha: f64,
) -> Result<Vec<Row>, StatsError> {
    let holm = holm_of(tried, |t| &t.vs_baseline)?;
    let dir = away(sides);
    let mut rows = Vec::new();
    for (t, p_holm) in tried.iter().zip(holm) {
        let reproduces = p_holm.is_some_and(|p| p <= alpha)
            && t.vs_baseline.delta.is_some_and(|d| d * dir > 0.0);
        let mut row = tested(
            target,
            sides,
            (&units[t.unit], changes),
            &t.vs_baseline,
            p_holm,
        );
        (row.verdict, row.reason) = match reproduces {
            true => (
                Attributed::Explains,
                "in combination: with every other change undone, this one alone still moves \
                 the task away from the baseline"
                    .to_owned(),
            ),
            false => (
                Attributed::Inconclusive,
                "with every other change undone, this one alone does not move the task \
                 significantly away from the baseline"
                    .to_owned(),
            ),
        };
        rows.push(row);
    }
    together(&mut rows);
    Ok(rows)
}

/// Holm across the units tried on one target, on their test against one side.
fn holm_of(
    tried: &[Tried],
    side: impl Fn(&Tried) -> &Against,
) -> Result<Vec<Option<f64>>, StatsError> {
    let ps: Vec<Option<f64>> = tried.iter().map(|t| side(t).p).collect();
    p_adjusted(&ps, Adjustment::Holm)
}

/// A row of `target` for `unit` with the test against one side: its mean, trials, p, p_holm.
fn tested(
    target: &Target,
    sides: &Sides,
    (unit, changes): (&Unit, &[Change]),
    against: &Against,
    p_holm: Option<f64>,
) -> Row {
    let mut row = base_row(target, sides, unit, changes);
    row.reverted = against.mean;
    row.reverted_trials = against.trials;
    row.p = against.p;
    row.p_holm = p_holm;
    row
}

/// A row of `target` for `unit`, its test columns empty.
fn base_row(target: &Target, sides: &Sides, unit: &Unit, changes: &[Change]) -> Row {
    let (list, name, path, kind, tried) = match unit.trial {
        Trial::Revert(c) | Trial::OnlyThis { change: c } => {
            let ch = &changes[c];
            let tried = match unit.trial {
                Trial::Revert(_) => "revert",
                _ => "only_this",
            };
            let (list, name, path) = (ch.list.clone(), ch.name.clone(), ch.path.clone());
            (list, name, path, ch.kind.as_str(), tried)
        }
        Trial::Reversed => (
            "tools".into(),
            "(the candidate's list)".into(),
            None,
            "tool_order".into(),
            "reversed_order",
        ),
    };
    Row {
        task_id: target.task_id.clone(),
        host: target.host.clone(),
        metric: target.metric,
        list,
        name,
        path,
        kind,
        tried,
        baseline: sides.baseline,
        baseline_trials: sides.baseline_trials,
        candidate: sides.candidate,
        candidate_trials: sides.candidate_trials,
        reverted: None,
        reverted_trials: 0,
        p: None,
        p_holm: None,
        verdict: Attributed::NotTried,
        together_with: Vec::new(),
        reason: String::new(),
        overlay: unit
            .overlay
            .as_ref()
            .map(|_| format!("explain/overlays/{}.yaml", unit.id)),
    }
}

/// A row for a change not tried on `target`, with the reason.
pub fn untried_row(target: &Target, sides: &Sides, change: &Change, reason: &str) -> Row {
    Row {
        task_id: target.task_id.clone(),
        host: target.host.clone(),
        metric: target.metric,
        list: change.list.clone(),
        name: change.name.clone(),
        path: change.path.clone(),
        kind: change.kind.as_str(),
        tried: "none",
        baseline: sides.baseline,
        baseline_trials: sides.baseline_trials,
        candidate: sides.candidate,
        candidate_trials: sides.candidate_trials,
        reverted: None,
        reverted_trials: 0,
        p: None,
        p_holm: None,
        verdict: Attributed::NotTried,
        together_with: Vec::new(),
        reason: reason.to_owned(),
        overlay: None,
    }
}

/// Each explaining row names the other changes that explain the same target on their own.
fn together(rows: &mut [Row]) {
    let explaining: Vec<String> = (rows.iter())
        .filter(|r| r.verdict == Attributed::Explains)
        .map(Row::change_label)
        .collect();
    for row in rows
        .iter_mut()
        .filter(|r| r.verdict == Attributed::Explains)
    {
        let own = row.change_label();
        row.together_with = explaining.iter().filter(|l| **l != own).cloned().collect();
    }
}

impl Row {
    /// The change as the tables name it (`tool_added find_issues`).
    pub fn change_label(&self) -> String {
        match self.tried {
            "reversed_order" => "the tool order".to_owned(),
            _ => label_of(&self.kind, &self.list, &self.name, self.path.as_deref()),
        }
    }
}

/// Why a tried change is inconclusive: for a rate, the recovery that would have shown at this
/// trial count (Holm's first step, the strictest).
fn inconclusive_reason(
    target: &Target,
    sides: &Sides,
    t: &Tried,
    tried: usize,
    alpha: f64,
) -> String {
    let n = t.vs_candidate.trials;
    let m = sides.candidate_trials;
    let cand = sides.candidate.unwrap_or(0.0);
    if target.metric != Metric::Success || n == 0 || m == 0 {
        return format!("too few trials to tell at {n} trial(s)");
    }
    let c = (cand * f64::from(m)).round() as u64;
    let level = alpha / tried.max(1) as f64;
    let shows = |k: u64| {
        let (a, b) = (
            crate::stats::Proportion::new(c, u64::from(m)),
            crate::stats::Proportion::new(k, u64::from(n)),
        );
        crate::stats::fisher_exact(a, b).is_ok_and(|r| r.p_value <= level)
    };
    let up = sides.baseline.unwrap_or(1.0) > cand;
    let found = match up {
        true => (0..=u64::from(n)).find(|&k| k as f64 / f64::from(n) > cand && shows(k)),
        false => (0..=u64::from(n))
            .rev()
            .find(|&k| (k as f64 / f64::from(n)) < cand && shows(k)),
    };
    match (found, up) {
        (Some(k), true) => format!(
            "too few trials to tell: at {n} trials only a recovery to {k}/{n} or more would \
             have shown"
        ),
        (Some(k), false) => format!(
            "too few trials to tell: at {n} trials only a fall to {k}/{n} or less would have \
             shown"
        ),
        (None, _) => format!("too few trials to tell: no result at {n} trials would have shown"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::ChangeKind;

    fn unit(change: usize) -> Unit {
        Unit {
            id: format!("{change:02}"),
            trial: Trial::Revert(change),
            overlay: Some(serde_json::json!({"overlay": 1})),
            tasks: ["t".to_owned()].into(),
            hosts: ["sim".to_owned()].into(),
        }
    }

    fn tried(unit: usize, vs_candidate: (f64, f64), vs_baseline: (f64, f64)) -> Tried {
        let against = |(p, delta): (f64, f64)| Against {
            mean: Some(0.5),
            trials: 10,
            p: Some(p),
            delta: Some(delta),
        };
        Tried {
            unit,
            vs_candidate: against(vs_candidate),
            vs_baseline: against(vs_baseline),
        }
    }

    #[test]
    fn each_verdict_follows_both_tests_and_explaining_changes_name_each_other() {
        let target = Target {
            task_id: "t".into(),
            host: "sim".into(),
            metric: Metric::Success,
            verdict: crate::analysis::Verdict::Regression,
        };
        let sides = Sides {
            baseline: Some(1.0),
            baseline_trials: 10,
            candidate: Some(0.0),
            candidate_trials: 10,
        };
        let changes: Vec<Change> = (0..5)
            .map(|i| Change::new("tools", &format!("tool_{i}"), ChangeKind::ToolAdded))
            .collect();
        let units: Vec<Unit> = (0..5).map(unit).collect();
        let all = [
            // Back from the candidate, level with the baseline: explains.
            tried(0, (1e-5, 1.0), (1.0, 0.0)),
            tried(1, (1e-4, 0.7), (0.2, -0.3)),
            // Back from the candidate, still short of the baseline: partly.
            tried(2, (1e-3, 0.5), (0.01, -0.5)),
            // Short of the baseline, not back from the candidate: no effect.
            tried(3, (0.5, 0.1), (1e-4, -0.9)),
            // Neither: inconclusive, with what would have shown.
            tried(4, (0.2, 0.3), (0.08, -0.7)),
        ];
        let rows = verdicts(&target, &sides, &all, &units, &changes, 0.05).unwrap();
        let got: Vec<Attributed> = rows.iter().map(|r| r.verdict).collect();
        use Attributed::*;
        assert_eq!(got, [Explains, Explains, Partly, NoEffect, Inconclusive]);
        assert_eq!(rows[0].together_with, ["tool_added tool_1"]);
        assert_eq!(rows[1].together_with, ["tool_added tool_0"]);
        assert!(rows[2].together_with.is_empty());
        assert!(rows[4].reason.contains("recovery to"), "{}", rows[4].reason);
        // Holm: the smallest p is multiplied by the number of changes tried.
        assert!((rows[0].p_holm.unwrap() - 5e-5).abs() < 1e-12);
        // A revert that moves the task further from the baseline does not explain it.
        let worse = [tried(0, (1e-5, -1.0), (1e-5, -1.0))];
        let rows = verdicts(&target, &sides, &worse, &units, &changes, 0.05).unwrap();
        assert_eq!(rows[0].verdict, NoEffect);
    }
}
