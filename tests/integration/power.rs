//! Power of the stratified suite rows, through the real binary's `compare` on synthetic runs
//! whose two sides are drawn independently: (a) 30 tasks at 100 %, 4 of them falling to 50 %,
//! 10 trials: the whole-suite success row is a regression in ≥ 80 % of data sets; (b) tokens
//! +30 % on every task, 5 trials: the whole-suite `total_tokens` row is in ≥ 90 %.

use crate::common;
use crate::synthetic;

use std::path::Path;
use std::time::Instant;

use mcpeval::config::StatsConfig;
use mcpeval::episode::{Episode, Side};
use mcpeval::suite::TaskKind;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use synthetic::draw::{draw_episode, draw_models, TaskModel};

/// Data sets per scenario.
const DATASETS: u64 = 100;

/// The default `[stats]`; 200 bootstrap resamples instead of 2000 leave every regression
/// verdict as it is (intervals do not enter it) and save time.
fn stats() -> StatsConfig {
    StatsConfig {
        bootstrap_resamples: 200,
        ..StatsConfig::default()
    }
}

/// Both sides of every model, `trials` each; `candidate` turns a model into the candidate's.
fn draw(
    rng: &mut ChaCha8Rng,
    models: &[TaskModel],
    run_id: &str,
    trials: u32,
    mut candidate: impl FnMut(&TaskModel, &mut Episode),
) -> Vec<Episode> {
    let mut eps = Vec::new();
    for m in models {
        for side in Side::BOTH {
            for trial in 0..trials {
                let mut e = draw_episode(rng, m, run_id, side, trial);
                if side == Side::Candidate {
                    candidate(m, &mut e);
                }
                eps.push(e);
            }
        }
    }
    eps
}

/// (a): 30 tasks that always pass on the baseline; 4 tool tasks pass half their trials on the
/// candidate.
fn broken_tasks(seed: u64) -> (Vec<Episode>, u32) {
    let mut rng = ChaCha8Rng::seed_from_u64(2_000_000 + seed);
    let mut models = draw_models(&mut rng, 30);
    for m in &mut models {
        (m.success_rate, m.false_call, m.infra) = (1.0, 0.0, 0.0);
    }
    let mut tool: Vec<usize> = (0..models.len())
        .filter(|&i| models[i].def.kind == TaskKind::Tool)
        .collect();
    tool.shuffle(&mut rng);
    let broken: Vec<String> = tool[..4]
        .iter()
        .map(|&i| models[i].def.id.clone())
        .collect();
    let run_id = format!("20261201T000000Z-pa{seed:04}");
    let mut halves = ChaCha8Rng::seed_from_u64(3_000_000 + seed);
    let eps = draw(&mut rng, &models, &run_id, 10, |m, e| {
        if broken.contains(&m.def.id) && rand::Rng::random_bool(&mut halves, 0.5) {
            synthetic::fail(
                e,
                "expected_calls",
                "expected `search_issues` with project=apollo, got `find_issues`",
            );
        }
    });
    (eps, 10)
}

/// (b): 20 tasks drawn as in the A/A simulation; the candidate spends 30 % more tokens on each.
fn costlier_tokens(seed: u64) -> (Vec<Episode>, u32) {
    let mut rng = ChaCha8Rng::seed_from_u64(4_000_000 + seed);
    let models = draw_models(&mut rng, 20);
    let run_id = format!("20261201T000000Z-pb{seed:04}");
    let eps = draw(&mut rng, &models, &run_id, 5, |_, e| {
        let scale = |v: u64| (v as f64 * 1.3).round() as u64;
        let (input, output) = (scale(e.input_tokens), scale(e.output_tokens));
        synthetic::set_tokens(e, input, output);
    });
    (eps, 5)
}

/// Writes the data set as a run, compares it with the binary and returns the whole-suite row
/// of `metric` (its verdict) and the exit code.
fn suite_verdict(dir: &Path, eps: &[Episode], trials: u32, metric: &str) -> (String, i32) {
    let info = synthetic::run_info(&eps[0].run_id, trials, &stats(), eps);
    synthetic::write_run(dir, &info, eps);
    let out = std::process::Command::new(common::bin())
        .args(["compare", dir.to_str().unwrap()])
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("mcpeval runs");
    let code = out.status.code().expect("exit code");
    assert!(matches!(code, 0 | 1), "{}", common::text(&out));
    let rows = synthetic::read_csv(&dir.join("comparison.csv"));
    let row = rows
        .iter()
        .find(|r| r["task_id"] == "*" && r["scope"] == "suite" && r["metric"] == metric)
        .unwrap_or_else(|| panic!("no whole-suite {metric} row"));
    (row["verdict"].clone(), code)
}

/// The share of `DATASETS` data sets whose whole-suite `metric` row is a regression that fails
/// the run; the data sets are compared two at a time.
fn detection_rate(label: &str, metric: &str, dataset: fn(u64) -> (Vec<Episode>, u32)) -> f64 {
    let start = Instant::now();
    let tmp = common::temp_dir();
    let hits: u64 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2u64)
            .map(|w| {
                let tmp = tmp.path();
                s.spawn(move || {
                    (0..DATASETS)
                        .filter(|seed| seed % 2 == w)
                        .filter(|&seed| {
                            let (eps, trials) = dataset(seed);
                            let dir = tmp.join(format!("{label}-{seed}"));
                            let (verdict, code) = suite_verdict(&dir, &eps, trials, metric);
                            verdict == "regression" && code == 1
                        })
                        .count() as u64
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    let rate = hits as f64 / DATASETS as f64;
    eprintln!(
        "{label}: the whole-suite {metric} row regressed in {hits} of {DATASETS} data sets; {:.1} s",
        start.elapsed().as_secs_f64()
    );
    rate
}

#[test]
fn four_of_thirty_tasks_falling_to_half_fail_the_suite_success_row() {
    let rate = detection_rate("broken", "success", broken_tasks);
    assert!(
        rate >= 0.8,
        "detected in {rate} of the data sets, want ≥ 0.8"
    );
}

#[test]
fn thirty_percent_more_tokens_everywhere_fail_the_suite_token_row() {
    let rate = detection_rate("tokens", "total_tokens", costlier_tokens);
    assert!(
        rate >= 0.9,
        "detected in {rate} of the data sets, want ≥ 0.9"
    );
}
