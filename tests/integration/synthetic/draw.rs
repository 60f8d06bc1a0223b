//! Synthetic task models and trials drawn from them, for the simulations through `compare`: a
//! task's success rate, tool calls, tool errors, tokens and latency, with the noise and ties real
//! runs have. The two sides of a data set are drawn independently.

use mcpeval::episode::{Episode, Side};
use mcpeval::suite::{TaskKind, TaskSet};
use rand::seq::IndexedRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{episode, fail, infra, set_calls, set_tokens, TaskDef};

/// The success rates tasks are drawn with.
pub const RATES: [f64; 5] = [1.0, 0.97, 0.9, 0.7, 0.5];

/// How one task behaves, the same on both sides of an A/A data set.
#[derive(Debug, Clone)]
pub struct TaskModel {
    pub def: TaskDef,
    pub success_rate: f64,
    /// The usual number of tool calls (0 for a no-tool task).
    pub calls: u32,
    /// No-tool tasks: the chance that the model calls a tool anyway.
    pub false_call: f64,
    /// The chance that one call ends in a tool error.
    pub tool_error: f64,
    pub input_base: f64,
    pub output_base: f64,
    /// The chance of a trial being lost to an infrastructure error.
    pub infra: f64,
}

/// `tasks` task models: every fourth a no-tool task, rates from [`RATES`].
pub fn draw_models(rng: &mut ChaCha8Rng, tasks: usize) -> Vec<TaskModel> {
    (0..tasks)
        .map(|i| {
            let no_tool = i % 4 == 0;
            let success_rate = *RATES.choose(rng).unwrap();
            let set = if success_rate >= 0.9 {
                TaskSet::Regression
            } else {
                TaskSet::Capability
            };
            let kind = if no_tool {
                TaskKind::NoTool
            } else {
                TaskKind::Tool
            };
            TaskModel {
                def: TaskDef::new(format!("task-{i:02}"), kind, set),
                success_rate,
                calls: if no_tool {
                    0
                } else {
                    *[1, 1, 2, 3].choose(rng).unwrap()
                },
                false_call: *[0.0, 0.03, 0.1].choose(rng).unwrap(),
                tool_error: *[0.0, 0.0, 0.02, 0.1].choose(rng).unwrap(),
                input_base: rng.random_range(900.0..2500.0),
                output_base: rng.random_range(100.0..600.0),
                infra: *[0.0, 0.0, 0.01].choose(rng).unwrap(),
            }
        })
        .collect()
}

/// A standard normal draw (Box–Muller).
pub fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// One trial of `m`: calls near the task's usual count (ties are common), tool errors mostly 0,
/// tokens growing with the calls plus noise, a turn per call, latency with a long right tail.
pub fn draw_episode(
    rng: &mut ChaCha8Rng,
    m: &TaskModel,
    run_id: &str,
    side: Side,
    trial: u32,
) -> Episode {
    let mut e = episode(run_id, &m.def, side, trial);
    let calls = match m.def.kind {
        TaskKind::NoTool | TaskKind::Call => u32::from(rng.random_bool(m.false_call)),
        TaskKind::Tool => {
            let r: f64 = rng.random();
            let c = if r < 0.15 {
                m.calls.saturating_sub(1)
            } else if r < 0.30 {
                m.calls + 1
            } else {
                m.calls
            };
            c.min(3)
        }
    };
    let tools: Vec<&str> = (0..calls).map(|_| "search_issues").collect();
    set_calls(&mut e, &tools);
    e.tool_errors = (0..calls).filter(|_| rng.random_bool(m.tool_error)).count() as u32;
    if rng.random_bool(0.1) {
        e.turns += 1;
    }
    let input = m.input_base + 600.0 * f64::from(calls) + 0.08 * m.input_base * normal(rng);
    let output = m.output_base * (1.0 + 0.15 * normal(rng));
    set_tokens(
        &mut e,
        input.round().max(100.0) as u64,
        output.round().max(10.0) as u64,
    );
    e.latency_ms = ((400.0 + 700.0 * f64::from(calls)) * (0.3 * normal(rng)).exp()).round();
    let wrong_call = m.def.kind == TaskKind::NoTool && calls > 0;
    if wrong_call {
        fail(
            &mut e,
            "no_tool",
            "expected no tool call, got `search_issues`",
        );
    } else if !rng.random_bool(m.success_rate) {
        fail(
            &mut e,
            "answer_contains",
            "expected the answer to mention `APL-12`, it did not",
        );
    }
    if rng.random_bool(m.infra) {
        infra(&mut e, "provider returned HTTP 503");
    }
    e
}
