//! Unit tests of the comparison: verdicts, families, infrastructure errors, pass rows, scopes.

use super::*;
use crate::analysis::verdict::{Scope, TestName, Verdict};
use crate::config::{Metric, StatsConfig};
use crate::episode::{Episode, Side};
use crate::stats::{compare_success, p_adjusted, pass_at_k, Adjustment, Proportion};
use crate::suite::{TaskKind, TaskSet};
use crate::test_support::episode as ep;

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

/// The row of a task, or of the whole suite for `SUITE`.
fn row<'a>(c: &'a Comparison, task: &str, metric: Metric) -> &'a Row {
    c.rows
        .iter()
        .find(|r| {
            r.task_id == task && r.metric == metric && matches!(r.scope, Scope::Task | Scope::Suite)
        })
        .unwrap_or_else(|| panic!("no row {task} {metric}"))
}

#[test]
fn a_collapse_is_a_gated_regression_and_the_rest_is_not() {
    let (b, c) = run(10, 0, 10);
    let cmp = compare(&b, &c, &StatsConfig::default(), 1).unwrap();
    // 12 rows for the whole suite, 10 each for its tool and its no-tool tasks (the regression
    // set holds every task: no rows of its own), then 10 per task.
    assert_eq!(cmp.rows.len(), 12 + 2 * 10 + 3 * 10);
    let scopes: Vec<Scope> = cmp.rows.iter().map(|r| r.scope).collect();
    assert_eq!(scopes.iter().filter(|s| **s == Scope::Suite).count(), 12);
    assert_eq!(
        scopes
            .iter()
            .filter(|s| **s == Scope::Kind(TaskKind::Tool))
            .count(),
        10
    );
    assert_eq!(scopes.iter().filter(|s| **s == Scope::Task).count(), 30);
    let moving = row(&cmp, "moving", Metric::Success);
    assert_eq!(moving.test, TestName::FisherExact);
    assert_eq!(moving.verdict, Verdict::Regression);
    assert_eq!(moving.delta, Some(-1.0));
    let expected = compare_success(Proportion::new(10, 10), Proportion::new(0, 10), 0.05).unwrap();
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
    // One no-tool task, 0/2 → 2/2 calls: too few for CMH's chi-square, so the exact conditional
    // test, which for one stratum is Fisher's exact test.
    assert_eq!(false_calls.test, TestName::CmhExact);
    let fisher = crate::stats::fisher_exact(Proportion::new(0, 2), Proportion::new(2, 2)).unwrap();
    assert_eq!(false_calls.p_value, Some(fisher.p_value));
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
    // One informative task (9/10 → 4/10): the Mantel–Fleiss criterion is 3.5 < 5, so the
    // exact conditional test; with equal trials the MH risk difference is the mean delta.
    assert_eq!(suite.test, TestName::CmhExact);
    assert!((suite.delta.unwrap() - (-0.5 / 3.0)).abs() < 1e-12);
}

/// The rows of one scope of the suite.
fn scope_row(c: &Comparison, scope: Scope, metric: Metric) -> &Row {
    c.rows
        .iter()
        .find(|r| r.task_id == SUITE && r.scope == scope && r.metric == metric)
        .unwrap_or_else(|| panic!("no suite row {scope} {metric}"))
}

#[test]
fn suite_rows_pool_the_trials_of_the_tasks_as_strata() {
    use crate::stats::{compare_stratified_rates, van_elteren, Table2x2};
    // 30 trials per side: one task falls 30/30 → 24/30, the others stay at 30/30.
    let (b, c) = run(30, 24, 30);
    let cmp = compare(&b, &c, &StatsConfig::default(), 3).unwrap();
    let success = scope_row(&cmp, Scope::Suite, Metric::Success);
    let tables: Vec<Table2x2> = [(30, 24), (30, 30), (30, 30)]
        .iter()
        .map(|&(s0, s1)| Table2x2 {
            baseline: Proportion::new(s0, 30),
            candidate: Proportion::new(s1, 30),
        })
        .collect();
    let expected = compare_stratified_rates(&tables, 0.05).unwrap();
    assert_eq!(success.p_value, Some(expected.comparison.test.p_value));
    assert_eq!(success.delta, Some(expected.comparison.delta));
    assert!((success.delta.unwrap() + 6.0 / 90.0).abs() < 1e-12);
    assert_eq!(
        success.test,
        if expected.exact {
            TestName::CmhExact
        } else {
            TestName::Cmh
        }
    );
    // Counts: van Elteren over the three tasks' values.
    let tokens = scope_row(&cmp, Scope::Suite, Metric::TotalTokens);
    assert_eq!(tokens.test, TestName::VanElteren);
    let values = |task: &str, side: Side, list: &[Episode]| -> Vec<f64> {
        list.iter()
            .filter(|e| e.task_id == task && e.side == side)
            .map(|e| e.total_tokens as f64)
            .collect()
    };
    let sides: Vec<(Vec<f64>, Vec<f64>)> = ["chat", "moving", "steady"]
        .iter()
        .map(|t| {
            (
                values(t, Side::Baseline, &b),
                values(t, Side::Candidate, &c),
            )
        })
        .collect();
    let strata: Vec<(&[f64], &[f64])> = sides
        .iter()
        .map(|(x, y)| (x.as_slice(), y.as_slice()))
        .collect();
    assert_eq!(tokens.p_value, Some(van_elteren(&strata).unwrap().p_value));
    assert_eq!(tokens.relative_change, Some(0.0));
    // The suite margins: 2 points and 10 % of the pooled baseline mean.
    assert_eq!(success.margin, Some(0.02));
    let base = tokens.baseline_mean.unwrap();
    assert!((tokens.margin.unwrap() - 0.1 * base).abs() < 1e-9);
    // The regression set holds every task: no rows of its own; the kinds have theirs.
    assert!(!cmp
        .rows
        .iter()
        .any(|r| r.scope == Scope::Set(TaskSet::Regression)));
    let no_tool = scope_row(&cmp, Scope::Kind(TaskKind::NoTool), Metric::Success);
    assert_eq!((no_tool.n_baseline, no_tool.n_candidate), (30, 30));
}

#[test]
fn a_few_broken_tasks_fail_the_suite_row_that_no_task_row_can_flag() {
    // Twelve tasks at 5 trials per side: no task row can reach its level (the smallest Fisher
    // p at 5 is 0.0079, the level 0.01 / 12), but four tasks going 5/5 → 0/5 are 20 failures
    // the suite row sees.
    let tasks: Vec<String> = (0..12).map(|i| format!("t{i:02}")).collect();
    let side = |s: Side| -> Vec<Episode> {
        tasks
            .iter()
            .enumerate()
            .flat_map(|(i, task)| {
                (0..5).map(move |t| {
                    let broken = s == Side::Candidate && i < 4;
                    ep(task, TaskKind::Tool, s, t, !broken, 1)
                })
            })
            .collect()
    };
    let cmp = compare(
        &side(Side::Baseline),
        &side(Side::Candidate),
        &StatsConfig::default(),
        1,
    )
    .unwrap();
    assert!(cmp
        .rows
        .iter()
        .filter(|r| r.scope == Scope::Task && r.metric == Metric::Success)
        .all(|r| r.verdict != Verdict::Regression && r.mde.is_none()));
    let suite = scope_row(&cmp, Scope::Suite, Metric::Success);
    assert_eq!(suite.verdict, Verdict::Regression, "{suite:?}");
    assert_eq!(cmp.outcome(), Outcome::Regression);
    let d = cmp.detectable[0].1;
    assert_eq!(d.drop, None, "no task can be flagged at 5 trials");
    assert!(d.suite_drop.is_some_and(|x| x > 0.0 && x < 1.0), "{d:?}");
}

#[test]
fn every_tested_row_says_what_it_could_detect() {
    let (b, c) = run(10, 10, 10);
    let cmp = compare(&b, &c, &StatsConfig::default(), 1).unwrap();
    let success = row(&cmp, "steady", Metric::Success);
    // Exact Fisher at the task level 0.01 / 3 from a baseline at 100 %, as the planner says.
    let expected = crate::stats::fisher_mde(1.0, 10, 10, 0.01 / 3.0, 0.8, 0.10).unwrap();
    assert_eq!(success.mde, expected);
    assert!(success.mde.is_some());
    let calls = row(&cmp, "steady", Metric::ToolCalls);
    assert!(calls.mde.is_some_and(|m| m > 0.0), "{calls:?}");
    // The suite row sees smaller drops than a task row.
    let suite = scope_row(&cmp, Scope::Suite, Metric::Success);
    assert!(suite.mde.unwrap() < success.mde.unwrap(), "{suite:?}");
    // No tool errors on the baseline: nothing to scale, so an absolute rise.
    let errors = scope_row(&cmp, Scope::Suite, Metric::ToolErrors);
    assert!(errors.mde.is_some_and(|m| m > 0.0 && m < 1.0), "{errors:?}");
    // Untested rows (pass@k) have none.
    assert_eq!(row(&cmp, "steady", Metric::PassAtK).mde, None);
}

#[test]
fn the_collector_fed_one_episode_at_a_time_is_compare() {
    let (b, c) = run(9, 4, 10);
    let whole = compare(&b, &c, &StatsConfig::default(), 5).unwrap();
    let mut collector = Collector::default();
    // Interleaved, as they sit in episodes.jsonl.
    for (x, y) in b.iter().zip(&c) {
        collector.add(Side::Baseline, x);
        collector.add(Side::Candidate, y);
    }
    assert_eq!(collector.count(Side::Candidate), c.len());
    assert!(collector.unmatched().is_empty());
    assert_eq!(
        collector.comparison(&StatsConfig::default(), 5).unwrap(),
        whole
    );
}

#[test]
fn a_call_task_with_no_baseline_episode_is_judged_on_the_candidate_alone() {
    let judged = |wins: &[bool]| {
        let c: Vec<Episode> = (wins.iter().enumerate())
            .map(|(t, w)| ep("new-tool", TaskKind::Call, Side::Candidate, t as u32, *w, 1))
            .collect();
        let cmp = compare(&[], &c, &StatsConfig::default(), 1).unwrap();
        let r = row(&cmp, "new-tool", Metric::Success).clone();
        assert_eq!(
            (r.test, r.n_baseline, r.baseline_mean),
            (TestName::CandidateOnly, 0, None)
        );
        assert!(r.tested());
        r.verdict
    };
    assert_eq!(judged(&[true, true]), Verdict::NoChange);
    assert_eq!(judged(&[false, false]), Verdict::Regression);
    assert_eq!(judged(&[true, false]), Verdict::Inconclusive);
    // With baseline episodes, the comparison stays exact.
    let b = vec![ep("t", TaskKind::Call, Side::Baseline, 0, false, 1)];
    let c = vec![ep("t", TaskKind::Call, Side::Candidate, 0, true, 1)];
    let cmp = compare(&b, &c, &StatsConfig::default(), 1).unwrap();
    let r = row(&cmp, "t", Metric::Success);
    assert_eq!((r.test, r.verdict), (TestName::Exact, Verdict::Improvement));
}
