//! The run-level false-alarm rate of adaptive runs, by simulation: synthetic A/A suites (both
//! sides drawn independently from one task model, every gated metric of the defaults) are run
//! look by look under the real stopping rule, written as run directories and judged by
//! `mcpeval compare` (suite rows included): they fail at most α of the time, and the binary's
//! rows agree with the library's.

use crate::common;
use crate::synthetic;

use std::time::Instant;

use mcpeval::analysis::adaptive::{Design, Looks};
use mcpeval::analysis::{Collector, Comparison, Outcome};
use mcpeval::config::StatsConfig;
use mcpeval::episode::{Episode, EpisodeFacts, Side};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use synthetic::draw::{draw_episode, draw_models};
use synthetic::{read_csv, run_info, write_run, SEED};

const ALPHA: f64 = 0.05;
const DATASETS: u64 = 320;
const TASKS: usize = 18;

fn stats() -> StatsConfig {
    StatsConfig {
        adaptive: true,
        // Intervals do not enter a regression verdict: fewer resamples keep the test quick.
        bootstrap_resamples: 200,
        ..StatsConfig::default()
    }
}

/// An A/A suite run adaptively: each task's trials drawn look by look until the stopping rule
/// settles it; returns the episodes the run would have recorded and the trials it spent.
fn adaptive_aa_run(seed: u64, stats: &StatsConfig) -> (Vec<Episode>, usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let models = draw_models(&mut rng, TASKS);
    let run_id = format!("20261201T000000Z-ad{seed:04}");
    let design = Design::new(stats, 1).expect("a design");
    let mut looks = Looks::default();
    let mut eps = Vec::new();
    for m in &models {
        let mut from = 0;
        for &n in design.looks() {
            for trial in from..n {
                for side in Side::BOTH {
                    let e = draw_episode(&mut rng, m, &run_id, side, trial);
                    looks.add(side, &EpisodeFacts::of(&e));
                    eps.push(e);
                }
            }
            from = n;
            let outcome = looks
                .outcome(&design, "sim", &m.def.id, TASKS)
                .expect("the rule runs");
            if outcome.stopped.is_some() {
                break;
            }
        }
    }
    let spent = eps.len();
    (eps, spent)
}

fn compare(eps: &[Episode], stats: &StatsConfig) -> Comparison {
    let mut collector = Collector::for_stats(stats);
    for e in eps {
        collector.add(e.side, e);
    }
    collector.comparison(stats, SEED).expect("compare runs")
}

/// Each A/A run written as a run directory and judged by `mcpeval compare` (exit 1: a
/// regression), on two threads.
#[test]
fn adaptive_aa_suites_fail_at_most_alpha_of_the_time_and_save_trials() {
    let start = Instant::now();
    let stats = stats();
    let fixed = (TASKS * 2 * stats.max_trials as usize) as f64;
    let dir = common::temp_dir();
    let half = |part: u64| {
        let (stats, root) = (&stats, dir.path());
        move || {
            let (mut alarms, mut spent) = (0u64, 0usize);
            for seed in (0..DATASETS).filter(|s| s % 2 == part) {
                let (eps, n) = adaptive_aa_run(seed, stats);
                spent += n;
                let id = format!("20261201T000000Z-aa{seed:04}");
                let run = root.join(&id);
                write_run(&run, &run_info(&id, stats.max_trials, stats, &eps), &eps);
                let out = root.join(format!("{id}-compared"));
                let output = common::mcpeval(&[
                    "compare",
                    run.to_str().unwrap(),
                    "--out",
                    out.to_str().unwrap(),
                ]);
                let code = output.status.code();
                assert!(
                    matches!(code, Some(0 | 1)),
                    "data set {seed}: {}",
                    common::text(&output)
                );
                alarms += u64::from(code == Some(1));
                std::fs::remove_dir_all(&run).ok();
                std::fs::remove_dir_all(&out).ok();
            }
            (alarms, spent)
        }
    };
    let (alarms, spent) = std::thread::scope(|scope| {
        let parts = [scope.spawn(half(0)), scope.spawn(half(1))];
        parts
            .map(|p| p.join().expect("a half ran"))
            .into_iter()
            .fold((0, 0), |(a, s), (a2, s2)| (a + a2, s + s2))
    });
    let rate = alarms as f64 / DATASETS as f64;
    let share = spent as f64 / (fixed * DATASETS as f64);
    eprintln!(
        "adaptive A/A through `mcpeval compare`: {alarms} of {DATASETS} runs failed (rate \
         {rate:.4}); trials {:.1} % of the fixed design's; {:.1} s",
        100.0 * share,
        start.elapsed().as_secs_f64()
    );
    assert!(rate <= ALPHA, "run-level false-alarm rate {rate} > {ALPHA}");
    assert!(share < 0.8, "the rule saved too little: {share}");
}

#[test]
fn the_binary_compares_an_adaptive_run_as_the_library_does() {
    let stats = stats();
    let dir = common::temp_dir();
    for seed in 0..3 {
        let (eps, _) = adaptive_aa_run(1_000 + seed, &stats);
        let info = run_info(
            &format!("20261201T000000Z-bin{seed}"),
            stats.max_trials,
            &stats,
            &eps,
        );
        let run = dir.path().join(format!("run-{seed}"));
        write_run(&run, &info, &eps);
        let out = common::mcpeval(&["compare", run.to_str().unwrap()]);
        let c = compare(&eps, &stats);
        let code = match c.outcome() {
            Outcome::Regression => 1,
            _ => 0,
        };
        assert_eq!(out.status.code(), Some(code), "{}", common::text(&out));
        let rows = read_csv(&run.join("comparison.csv"));
        for row in c.rows.iter().filter(|r| !r.is_suite()) {
            let written = rows
                .iter()
                .find(|w| {
                    w["task_id"] == row.task_id
                        && w["metric"] == row.metric.as_str()
                        && w["scope"] == "task"
                })
                .expect("the row is written");
            let stopped = row.stopped.map(|s| s.as_str()).unwrap_or_default();
            assert_eq!(written["stopped"], stopped, "{}", row.task_id);
            assert_eq!(
                written["trials_run"],
                row.trials_run.map(|n| n.to_string()).unwrap_or_default()
            );
        }
    }
}
