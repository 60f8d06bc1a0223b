//! The stopping policy's CPU per look (`scripts/bench` section 9): 200 tasks with trial values
//! like a real suite's (success, counts, tokens), the rule asked for every task after each look,
//! with and without a trial budget's priorities.

use std::time::Instant;

use mcpeval::analysis::adaptive::{Design, Looks};
use mcpeval::config::StatsConfig;
use mcpeval::episode::{EpisodeFacts, Side};
use mcpeval::suite::{TaskKind, TaskSet};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const TASKS: usize = 200;

fn main() {
    let stats = StatsConfig {
        adaptive: true,
        ..StatsConfig::default()
    };
    let design = Design::new(&stats, 1).expect("the default design");
    let ids: Vec<String> = (0..TASKS).map(|i| format!("task-{i:03}")).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let rates: Vec<f64> = (0..TASKS)
        .map(|_| [1.0, 0.95, 0.9, 0.8, 0.6][rng.random_range(0..5)])
        .collect();
    let mut looks = Looks::default();
    let mut from = 0;
    println!(
        "policy CPU per look, {TASKS} tasks (every task asked; no task stopped, the worst case):"
    );
    for &n in design.looks() {
        for (i, id) in ids.iter().enumerate() {
            for trial in from..n {
                for side in Side::BOTH {
                    let calls = rng.random_range(1..4);
                    let input = 1_000 + 600 * u64::from(calls) + rng.random_range(0..200);
                    let facts = EpisodeFacts {
                        host: "sim",
                        task_id: id,
                        trial,
                        model: "m",
                        kind: TaskKind::Tool,
                        set: TaskSet::Regression,
                        infra_error: false,
                        error_text: None,
                        server_error: false,
                        text_tool_calls: 0,
                        replay_unmatched: 0,
                        recovered_calls: 0,
                        text_tool_call: None,
                        turns_of_user: Default::default(),
                        success: rng.random_bool(rates[i]),
                        tool_calls: calls,
                        tool_errors: u32::from(rng.random_bool(0.05)),
                        turns: calls + 1,
                        input_tokens: input,
                        output_tokens: 200,
                        total_tokens: input + 200,
                        reasoning_tokens: 0,
                        judge_input_tokens: 0,
                        judge_output_tokens: 0,
                        latency_ms: 900.0,
                        truncated: false,
                        timed_out: false,
                        ttft_ms: None,
                        failure: "".into(),
                        unprepared_requests: 0,
                        found_at_k: None,
                    };
                    looks.add(side, &facts);
                }
            }
        }
        from = n;
        let start = Instant::now();
        let mut settled = 0;
        for id in &ids {
            let outcome = looks.outcome(&design, "sim", id, TASKS).expect("the rule");
            settled += usize::from(outcome.stopped.is_some());
        }
        let rule = start.elapsed();
        let start = Instant::now();
        let total: f64 = ids
            .iter()
            .map(|id| looks.priority(&design, "sim", id, TASKS))
            .sum();
        let priority = start.elapsed();
        println!(
            "  look at {n:>2} trials: rule {:.1} ms ({settled} would settle), budget priorities {:.1} ms (sum {total:.2})",
            rule.as_secs_f64() * 1e3,
            priority.as_secs_f64() * 1e3
        );
    }
}
