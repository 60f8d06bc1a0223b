//! The run-level false-alarm rate, checked by simulation as DESIGN.md asks: synthetic A/A data
//! sets (both sides drawn independently from one distribution) fail the run (exit 1) at most α of
//! the time under Holm and under BH, a planted regression is seen, and the binary agrees.

use crate::common;
use crate::synthetic;

use std::time::Instant;

use mcpeval::analysis::{compare, Comparison, Outcome};
use mcpeval::config::{Metric, StatsConfig};
use mcpeval::episode::{Episode, Side};
use mcpeval::stats::Adjustment;
use mcpeval::suite::{TaskKind, TaskSet};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use synthetic::draw::{draw_episode, draw_models};
use synthetic::{fail, TaskDef, SEED};

const ALPHA: f64 = 0.05;
/// A/A data sets per correction; every fourth has 5 trials per side, the rest 10.
const AA_DATASETS: u64 = 320;
/// Data sets with one planted regression (10 trials per side).
const POWER_DATASETS: u64 = 100;
const TASKS: usize = 18;

/// The default `[stats]` with one change that leaves every regression verdict as it is: intervals
/// do not enter a regression verdict (only the adjusted p-value and the delta do), so 200
/// bootstrap resamples do instead of 2000.
fn stats(correction: Adjustment) -> StatsConfig {
    StatsConfig {
        correction,
        bootstrap_resamples: 200,
        ..StatsConfig::default()
    }
}

/// A data set: both sides drawn independently from the same task models, so any difference
/// between them is chance.
fn aa_dataset(seed: u64) -> (Vec<Episode>, u32) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let trials = if seed % 4 == 3 { 5 } else { 10 };
    let models = draw_models(&mut rng, TASKS);
    let run_id = format!("20261130T000000Z-aa{seed:04}");
    let mut eps = Vec::with_capacity(TASKS * 2 * trials as usize);
    for m in &models {
        for side in Side::BOTH {
            for trial in 0..trials {
                eps.push(draw_episode(&mut rng, m, &run_id, side, trial));
            }
        }
    }
    (eps, trials)
}

fn compare_dataset(eps: &[Episode], stats: &StatsConfig) -> Comparison {
    let side = |s: Side| eps.iter().filter(move |e| e.side == s);
    compare(side(Side::Baseline), side(Side::Candidate), stats, SEED).expect("compare runs")
}

/// Runs the A/A simulation under `stats`; returns the share of data sets that fail the run.
fn aa_false_alarm_rate(stats: &StatsConfig, label: &str) -> f64 {
    let start = Instant::now();
    let (mut alarms, mut by_row) = (0u64, std::collections::BTreeMap::<String, u64>::new());
    for seed in 0..AA_DATASETS {
        let (eps, _) = aa_dataset(seed);
        let c = compare_dataset(&eps, stats);
        assert_ne!(c.outcome(), Outcome::InfraFailure, "data set {seed}");
        if c.outcome() == Outcome::Regression {
            alarms += 1;
            for r in c.gated_regressions() {
                let level = if r.task_id == mcpeval::analysis::SUITE {
                    "suite"
                } else {
                    "task"
                };
                *by_row.entry(format!("{level} {}", r.metric)).or_default() += 1;
            }
        }
    }
    let rate = alarms as f64 / AA_DATASETS as f64;
    eprintln!(
        "A/A, {label}: {alarms} of {AA_DATASETS} data sets failed the run (rate {rate:.4}); \
         false regressions by row: {by_row:?}; {:.1} s",
        start.elapsed().as_secs_f64()
    );
    rate
}

/// Margins next to zero: a significant change in the bad direction is a regression however
/// small, so only the correction across tasks, metrics and the suite keeps the rate down.
fn without_margins(stats: StatsConfig) -> StatsConfig {
    StatsConfig {
        success_margin: 1e-9,
        relative_margin: 1e-9,
        ..stats
    }
}

#[test]
fn aa_false_alarm_rate_holm_stays_below_alpha() {
    let rate = aa_false_alarm_rate(&stats(Adjustment::Holm), "holm, default margins");
    assert!(
        rate <= ALPHA,
        "Holm: run-level false-alarm rate {rate} > {ALPHA}"
    );
}

#[test]
fn aa_false_alarm_rate_bh_stays_below_alpha() {
    let rate = aa_false_alarm_rate(&stats(Adjustment::BenjaminiHochberg), "bh, default margins");
    assert!(
        rate <= ALPHA,
        "BH: run-level false-alarm rate {rate} > {ALPHA}"
    );
}

#[test]
fn aa_false_alarm_rate_without_margins_holm_stays_below_alpha() {
    let rate = aa_false_alarm_rate(
        &without_margins(stats(Adjustment::Holm)),
        "holm, no margins",
    );
    assert!(
        rate <= ALPHA,
        "Holm without margins: run-level false-alarm rate {rate} > {ALPHA}"
    );
}

#[test]
fn aa_false_alarm_rate_without_margins_bh_stays_below_alpha() {
    let rate = aa_false_alarm_rate(
        &without_margins(stats(Adjustment::BenjaminiHochberg)),
        "bh, no margins",
    );
    assert!(
        rate <= ALPHA,
        "BH without margins: run-level false-alarm rate {rate} > {ALPHA}"
    );
}

/// Data sets from the same generator with one task (a regression-set tool task, 10 trials per
/// side) collapsing from 1.0 to 0.0 on the candidate; returns the share in which the run fails
/// on that task's success row.
fn planted_detection_rate(stats: &StatsConfig) -> f64 {
    let mut detected = 0u64;
    for seed in 0..POWER_DATASETS {
        let mut rng = ChaCha8Rng::seed_from_u64(1_000_000 + seed);
        let mut models = draw_models(&mut rng, TASKS);
        let planted = 1 + (seed as usize % (TASKS - 1));
        let m = &mut models[planted];
        m.def = TaskDef::new(m.def.id.clone(), TaskKind::Tool, TaskSet::Regression);
        m.calls = m.calls.max(1);
        (m.success_rate, m.infra) = (1.0, 0.0);
        let planted_id = m.def.id.clone();
        let run_id = format!("20261130T000000Z-pw{seed:04}");
        let mut eps = Vec::new();
        for m in &models {
            for side in Side::BOTH {
                for trial in 0..10 {
                    let mut e = draw_episode(&mut rng, m, &run_id, side, trial);
                    if m.def.id == planted_id && side == Side::Candidate {
                        fail(
                            &mut e,
                            "expected_calls",
                            "expected `search_issues` with project=apollo, got `find_issues`",
                        );
                    }
                    eps.push(e);
                }
            }
        }
        let c = compare_dataset(&eps, stats);
        let seen = c
            .gated_regressions()
            .any(|r| r.task_id == planted_id && r.metric == Metric::Success);
        if seen && c.outcome() == Outcome::Regression {
            detected += 1;
        }
    }
    detected as f64 / POWER_DATASETS as f64
}

/// The harness can see a regression when there is one, under either correction.
#[test]
fn a_planted_collapse_is_detected() {
    for correction in [Adjustment::Holm, Adjustment::BenjaminiHochberg] {
        let start = Instant::now();
        let rate = planted_detection_rate(&stats(correction));
        eprintln!(
            "planted 1.0 → 0.0 collapse, {}: detected in {rate:.3} of {POWER_DATASETS} data sets; \
             {:.1} s",
            correction.as_str(),
            start.elapsed().as_secs_f64()
        );
        assert!(
            rate >= 0.95,
            "{}: detection rate {rate} < 0.95",
            correction.as_str()
        );
    }
}

/// A handful of A/A data sets through the real binary: its exit code, adjusted p-values and
/// verdicts are the library's for the same episodes and seed (and every one of them passes).
#[test]
fn aa_runs_through_the_binary_agree_with_the_library() {
    let start = Instant::now();
    let tmp = common::temp_dir();
    let stats = stats(Adjustment::Holm);
    let mut exits = Vec::new();
    for seed in [0u64, 1, 2, 3, 4] {
        let (eps, trials) = aa_dataset(seed);
        let expected = compare_dataset(&eps, &stats);
        let run = tmp.path().join(format!("aa{seed}"));
        let info = synthetic::run_info(&eps[0].run_id, trials, &stats, &eps);
        synthetic::write_run(&run, &info, &eps);
        let out = std::process::Command::new(common::bin())
            .args(["compare", run.to_str().unwrap()])
            .env_remove("GITHUB_STEP_SUMMARY")
            .output()
            .expect("mcpeval runs");
        let want = match expected.outcome() {
            Outcome::Pass => 0,
            Outcome::Regression => 1,
            Outcome::InfraFailure => 3,
        };
        assert_eq!(
            out.status.code(),
            Some(want),
            "data set {seed}: {}",
            common::text(&out)
        );
        let rows = synthetic::read_csv(&run.join("comparison.csv"));
        assert_eq!(rows.len(), expected.rows.len());
        for (csv, row) in rows.iter().zip(&expected.rows) {
            assert_eq!(
                (csv["task_id"].as_str(), csv["metric"].as_str()),
                (row.task_id.as_str(), row.metric.as_str())
            );
            assert_eq!(
                csv["verdict"],
                row.verdict.as_str(),
                "{} {}",
                row.task_id,
                row.metric
            );
            match row.p_adjusted {
                None => assert_eq!(csv["p_adjusted"], ""),
                Some(p) => {
                    let got: f64 = csv["p_adjusted"].parse().unwrap();
                    assert!(
                        (got - p).abs() <= 1e-12,
                        "{} {}: {got} vs {p}",
                        row.task_id,
                        row.metric
                    );
                }
            }
        }
        exits.push(want);
    }
    eprintln!(
        "binary A/A exit codes {exits:?}; {:.1} s",
        start.elapsed().as_secs_f64()
    );
    assert_eq!(exits, [0; 5], "an A/A run failed through the binary");
}
