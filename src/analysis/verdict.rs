//! Verdicts: how a row's test, interval and margin become regression, improvement, no change or
//! "cannot tell yet", and the run-level significance split across the gated families.

use serde::{Deserialize, Serialize};

use crate::config::{Metric, StatsConfig};
use crate::suite::{TaskKind, TaskSet};

/// What a row says about the candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significant after correction and worse than the margin.
    Regression,
    /// Significant after correction and better than the margin.
    Improvement,
    /// The interval rules out a change as large as the margin in the bad direction.
    NoChange,
    /// None of these: more trials are needed to tell (or the row has no test).
    Inconclusive,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::NoChange => "no_change",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which test produced a row's p-value (the `test` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestName {
    FisherExact,
    MannWhitneyU,
    /// Cochran–Mantel–Haenszel over the tasks' 2×2 tables (suite rows of rates).
    Cmh,
    /// The exact conditional test of the same hypothesis, where the counts are too small for
    /// CMH's chi-square approximation.
    CmhExact,
    /// van Elteren's stratified Wilcoxon–Mann–Whitney test (suite rows of counts).
    VanElteren,
    /// No test: a `kind: call` task's outcome compared trial for trial (its checks are exact).
    Exact,
    /// No test: a `kind: call` task that uses a tool only the candidate lists, judged on the
    /// candidate's trials alone.
    CandidateOnly,
    None,
}

impl TestName {
    pub fn as_str(self) -> &'static str {
        match self {
            TestName::FisherExact => "fisher_exact",
            TestName::MannWhitneyU => "mann_whitney_u",
            TestName::Cmh => "cmh",
            TestName::CmhExact => "cmh_exact",
            TestName::VanElteren => "van_elteren",
            TestName::Exact => "exact",
            TestName::CandidateOnly => "candidate_only",
            TestName::None => "none",
        }
    }
}

/// Which episodes a row pools: one task, or the tasks of the suite (or of a part of it) as
/// strata (the `scope` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// A task row (`task`).
    Task,
    /// Every task of the host (`suite`).
    Suite,
    /// The tasks of one set (`set:regression`, `set:capability`).
    Set(TaskSet),
    /// The tasks of one kind (`kind:tool`, `kind:no-tool`).
    Kind(TaskKind),
    /// One user turn of a conversation task (`turn`; the row's `turn` says which).
    Turn,
}

impl Scope {
    /// The suite scopes, in report order.
    pub const SUITE_SCOPES: [Scope; 5] = [
        Scope::Suite,
        Scope::Set(TaskSet::Regression),
        Scope::Set(TaskSet::Capability),
        Scope::Kind(TaskKind::Tool),
        Scope::Kind(TaskKind::NoTool),
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Task => "task",
            Scope::Suite => "suite",
            Scope::Set(TaskSet::Regression) => "set:regression",
            Scope::Set(TaskSet::Capability) => "set:capability",
            Scope::Kind(TaskKind::Tool) => "kind:tool",
            Scope::Kind(TaskKind::NoTool) => "kind:no-tool",
            Scope::Kind(TaskKind::Call) => "kind:call",
            Scope::Turn => "turn",
        }
    }

    /// Whether a task of this kind and set belongs to the scope (every task is in `Task`'s own).
    pub fn holds(self, kind: TaskKind, set: TaskSet) -> bool {
        match self {
            Scope::Task | Scope::Suite | Scope::Turn => true,
            Scope::Set(s) => s == set,
            Scope::Kind(k) => k == kind,
        }
    }

    pub fn is_suite(self) -> bool {
        !matches!(self, Scope::Task | Scope::Turn)
    }
}

impl Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The margin of a metric in its own units: absolute for rates, relative to the baseline mean
/// for counts (so 0 when the baseline mean is 0: then any increase is beyond it). Suite rows
/// have margins of their own (`suite_success_margin`, `suite_relative_margin`).
pub fn margin(metric: Metric, baseline_mean: f64, scope: Scope, stats: &StatsConfig) -> f64 {
    match (metric.is_rate(), scope.is_suite()) {
        (true, false) => stats.success_margin,
        (true, true) => stats.suite_success_margin,
        (false, false) => stats.relative_margin * baseline_mean.abs(),
        (false, true) => stats.suite_relative_margin * baseline_mean.abs(),
    }
}

/// The verdict of one row.
///
/// `worse` turns a change into "how much worse" (positive = bad direction) so one rule serves
/// both directions: regression when `p_adjusted <= level` and the delta is worse than the
/// margin; improvement in the mirror case; no change when the interval's worst end stays short
/// of the margin (or, with a zero margin, shows no worsening at all); otherwise inconclusive.
pub fn decide(
    metric: Metric,
    delta: f64,
    interval: (f64, f64),
    p_adjusted: Option<f64>,
    margin: f64,
    level: f64,
) -> Verdict {
    let worse = |x: f64| if metric.higher_is_better() { -x } else { x };
    let significant = significant(p_adjusted, level);
    if significant && worse(delta) > margin {
        return Verdict::Regression;
    }
    if significant && -worse(delta) > margin {
        return Verdict::Improvement;
    }
    let worst_end = worse(interval.0).max(worse(interval.1));
    if worst_end < margin || worst_end <= 0.0 {
        return Verdict::NoChange;
    }
    Verdict::Inconclusive
}

/// Whether an adjusted p-value reaches the level: the row changed, by however much. With the
/// margin this splits "inconclusive" in two (see `report::format::verdict_words`): changed but
/// by no more than the margin while the interval still reaches past it, or not significant
/// at all (too few trials to tell).
pub fn significant(p_adjusted: Option<f64>, level: f64) -> bool {
    p_adjusted.is_some_and(|p| p <= level)
}

/// The run's significance level split over the gated families so that an A/A run's chance of
/// any gated regression stays at or below `alpha`.
///
/// A family is the task rows of one metric and host (adjusted together by Holm or BH), or the
/// gated suite rows of one host. Holm keeps each family's chance of a false regression at or below
/// the level it is given, BH does the same when every hypothesis is true (as in an A/A run),
/// so Bonferroni over the `F` gated families (`alpha / F` each) bounds the union by `alpha`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Level {
    /// The number of gated families.
    pub families: usize,
    /// The level each family's adjusted p-values are compared with.
    pub family_alpha: f64,
}

impl Level {
    pub fn new(stats: &StatsConfig, hosts: usize) -> Self {
        Self::with_found_at_k(stats, hosts, false)
    }

    /// The level of a run whose episodes searched for tools (`tool_search`) when `found_at_k`:
    /// its found@k task rows are one more gated family per host where they are gated.
    pub fn with_found_at_k(stats: &StatsConfig, hosts: usize, found_at_k: bool) -> Self {
        let task_families = stats
            .gated
            .iter()
            .filter(|m| Metric::TESTED.contains(m))
            .count()
            + usize::from(found_at_k && found_at_k_gated(stats));
        let suite_family = usize::from(
            stats
                .gated
                .iter()
                .any(|m| Metric::TESTED.contains(m) || is_suite_only(*m)),
        );
        let families = (hosts.max(1) * (task_families + suite_family)).max(1);
        Self {
            families,
            family_alpha: stats.alpha / families as f64,
        }
    }
}

/// Whether the found@k rows of a run with tool search fail it: gated like success (when `gated`
/// lists `success`, or `found_at_k` itself), since a tool a search no longer finds is a task
/// the model can no longer do.
pub fn found_at_k_gated(stats: &StatsConfig) -> bool {
    (stats.gated.iter()).any(|m| matches!(m, Metric::Success | Metric::FoundAtK))
}

/// Metrics that exist only as suite rows.
pub fn is_suite_only(metric: Metric) -> bool {
    matches!(metric, Metric::FalseCallRate | Metric::MissedCallRate)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEVEL: f64 = 0.01;

    #[test]
    fn success_drop_beyond_the_margin_that_is_significant_is_a_regression() {
        let v = decide(Metric::Success, -0.5, (-0.8, -0.2), Some(0.001), 0.1, LEVEL);
        assert_eq!(v, Verdict::Regression);
        // The same drop without significance cannot be told apart from noise.
        let v = decide(Metric::Success, -0.5, (-0.8, 0.1), Some(0.2), 0.1, LEVEL);
        assert_eq!(v, Verdict::Inconclusive);
        let v = decide(Metric::Success, 0.5, (0.2, 0.8), Some(0.001), 0.1, LEVEL);
        assert_eq!(v, Verdict::Improvement);
    }

    #[test]
    fn counts_go_bad_upwards() {
        let v = decide(Metric::ToolCalls, 1.0, (0.5, 1.5), Some(0.001), 0.25, LEVEL);
        assert_eq!(v, Verdict::Regression);
        let v = decide(
            Metric::ToolCalls,
            -1.0,
            (-1.5, -0.5),
            Some(0.001),
            0.25,
            LEVEL,
        );
        assert_eq!(v, Verdict::Improvement);
        // Significant but inside the margin, with the interval inside too: no change that counts.
        let v = decide(
            Metric::TotalTokens,
            10.0,
            (8.0, 12.0),
            Some(0.001),
            50.0,
            LEVEL,
        );
        assert_eq!(v, Verdict::NoChange);
    }

    #[test]
    fn no_change_needs_the_interval_inside_the_margin() {
        assert_eq!(
            decide(Metric::Success, 0.0, (-0.05, 0.05), Some(1.0), 0.1, LEVEL),
            Verdict::NoChange
        );
        assert_eq!(
            decide(Metric::Success, 0.0, (-0.3, 0.3), Some(1.0), 0.1, LEVEL),
            Verdict::Inconclusive
        );
        // A zero margin (baseline mean 0): only an interval with no increase shows no change.
        assert_eq!(
            decide(Metric::ToolErrors, 0.0, (0.0, 0.0), Some(1.0), 0.0, LEVEL),
            Verdict::NoChange
        );
        assert_eq!(
            decide(Metric::ToolErrors, 0.2, (0.0, 0.6), Some(0.4), 0.0, LEVEL),
            Verdict::Inconclusive
        );
        // No test: never significant.
        assert_eq!(
            decide(Metric::ToolErrors, 0.6, (0.2, 0.8), None, 0.0, LEVEL),
            Verdict::Inconclusive
        );
    }

    #[test]
    fn level_splits_alpha_over_gated_families() {
        let stats = StatsConfig::default();
        let level = Level::new(&stats, 1);
        assert_eq!(level.families, 5, "four gated metrics + the suite family");
        assert!((level.family_alpha - 0.01).abs() < 1e-15);
        assert_eq!(Level::new(&stats, 2).families, 10);
        let only_rates = StatsConfig {
            gated: vec![Metric::FalseCallRate],
            ..StatsConfig::default()
        };
        assert_eq!(Level::new(&only_rates, 1).families, 1);
        // A run with tool search: its found@k rows are one more gated family per host.
        assert_eq!(Level::with_found_at_k(&stats, 2, true).families, 12);
        let ungated = StatsConfig {
            gated: vec![Metric::ToolCalls],
            ..StatsConfig::default()
        };
        assert_eq!(Level::with_found_at_k(&ungated, 1, true).families, 2);
    }
}
