//! Models that ramble, answer slowly or not at all, through the real binary against
//! `mcpeval sim-server --ramble-rate / --stall-rate`: a rambling answer is the model's outcome
//! (cut at the output cap, or at the timeout with what it said), recorded and graded, never an
//! infrastructure error and never retried; a provider that sends nothing is retried and then
//! recorded as infrastructure.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::*;
use mcpeval::contract::tokens::Encoding;
use mcpeval::episode::Episode;

/// A sim-server on 127.0.0.1 with these extra arguments.
fn sim_server(extra: &[&str]) -> Background {
    let mut args = vec!["sim-server", "--addr", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    spawn_listening(&args, false)
}

/// Runs the demo suite once per task and side through `[host.slow]` (`host` is its body) with
/// the model endpoint at `server`; returns the run directory.
fn run(dir: &Path, server: &Background, host: &str) -> PathBuf {
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.5.0\"\nsuites = [\"tasks/demo\"]\n\
             hosts = [\"slow\"]\nseed = 7\nconcurrency = 16\nretries = 1\n\n[host.slow]\n{host}"
        ),
    )
    .unwrap();
    let out = dir.join("run");
    let url = format!("http://{}", server.addr);
    let done = Command::new(bin())
        .args(["run", "--config", config.to_str().unwrap(), "--trials", "1"])
        .args(["--out", out.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OPENAI_BASE_URL", format!("{url}/v1"))
        .env("ANTHROPIC_BASE_URL", &url)
        .env("ANTHROPIC_API_KEY", "sk-ant-test-key-0000")
        .env_remove("OPENAI_API_KEY")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    // 0 or 1 (a verdict), or 3 when infrastructure errors left tasks without episodes.
    assert!(
        matches!(done.status.code(), Some(0 | 1 | 3)),
        "{}",
        text(&done)
    );
    out
}

/// Every episode is the model's: graded, not retried, no infrastructure error.
fn assert_models_outcome(eps: &[Episode]) {
    assert_eq!(eps.len(), 2 * 18, "one trial per task and side");
    for e in eps {
        assert!(e.infra_error.is_none(), "{e:?}");
        assert!(
            e.attempts.is_empty() && e.request_retries.is_empty(),
            "{e:?}"
        );
        assert!(!e.grade.checks.is_empty(), "ungraded: {e:?}");
        assert_eq!(e.turns, 1, "the answer held no tool call: {e:?}");
    }
}

#[test]
fn a_rambling_model_stops_at_the_output_cap_as_its_own_outcome() {
    for host in [
        "provider = \"openai\"\nmodel = \"sim\"\nmax_tokens = 40\n",
        "provider = \"openai\"\nmodel = \"sim\"\nmax_tokens = 40\nstream = false\n",
        "provider = \"anthropic\"\nmodel = \"claude-sim\"\nmax_tokens = 40\n",
        "provider = \"openai-responses\"\nmodel = \"sim\"\nmax_tokens = 40\n",
        "provider = \"openai-responses\"\nmodel = \"sim\"\nmax_tokens = 40\nstream = false\n",
    ] {
        let dir = temp_dir();
        let server = sim_server(&["--ramble-rate", "1", "--token-ms", "2"]);
        let out = run(dir.path(), &server, host);
        let eps = episodes(&out);
        assert_models_outcome(&eps);
        // summary.md counts them per side.
        let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
        for side in ["baseline", "candidate"] {
            let row = format!("| `slow` | {side} | 18 | 18 | 0 | 0 |");
            assert!(summary.contains(&row), "{row} not in:\n{summary}");
        }
        let streamed = !host.contains("stream = false");
        for e in &eps {
            assert!(e.truncated && e.truncated_turn == Some(1), "{host}: {e:?}");
            assert!(!e.timed_out, "{e:?}");
            assert_eq!(e.output_tokens, 40, "{host}");
            let answer = e.final_answer.as_deref().unwrap_or_default();
            assert_eq!(answer, "more ".repeat(40), "{host}");
            // The model said no tool's name: tool tasks fail, as a rambling model's would.
            if e.kind == mcpeval::suite::TaskKind::Tool {
                assert!(!e.success, "{e:?}");
            }
            // Time to first token only where the answer streamed; it comes before the end.
            assert_eq!(e.ttft_ms.is_some(), streamed, "{host}: {e:?}");
            if let Some(ttft) = e.ttft_ms {
                assert!(ttft < e.model_turns[0].latency_ms, "{e:?}");
                let rate = e.model_turns[0].tokens_per_s.unwrap();
                assert!(
                    rate > 10.0 && rate < 1000.0,
                    "{rate} tokens/s at 2 ms a token"
                );
            }
        }
    }
}

#[test]
fn a_generation_still_going_at_the_timeout_ends_with_what_it_said() {
    for host in [
        "provider = \"openai\"\nmodel = \"sim\"\nmax_tokens = \"none\"\ntimeout_s = 0.6\n",
        "provider = \"anthropic\"\nmodel = \"claude-sim\"\nmax_tokens = 100000\ntimeout_s = 0.6\n",
        "provider = \"openai-responses\"\nmodel = \"sim\"\nmax_tokens = 0\ntimeout_s = 0.6\n",
    ] {
        let dir = temp_dir();
        let server = sim_server(&["--ramble-rate", "1", "--token-ms", "20"]);
        let started = Instant::now();
        let out = run(dir.path(), &server, host);
        let eps = episodes(&out);
        assert_models_outcome(&eps);
        let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
        assert!(
            summary.contains("| `slow` | candidate | 18 | 0 | 18 | 0 |"),
            "{summary}"
        );
        for e in &eps {
            assert!(e.timed_out && !e.truncated, "{host}: {e:?}");
            let answer = e.final_answer.as_deref().unwrap_or_default();
            assert!(answer.starts_with("more more"), "{answer}");
            // Cut once, at 0.6 s: one turn, not retried, not waited for again (the rambling
            // answer would take 2 s a hundred tokens, without end). No tighter time bound: a
            // loaded two-core machine fires timers seconds late.
            let turn = &e.model_turns;
            assert_eq!(turn.len(), 1, "{e:?}");
            assert!(
                turn[0].latency_ms >= 550.0 && turn[0].latency_ms < 10_000.0,
                "{e:?}"
            );
            assert!(
                e.request_retries.is_empty() && e.attempts.is_empty(),
                "{e:?}"
            );
            // The usage never came: the tokens are what streamed, marked as estimated, not a
            // free trial. Changed by issue 40: a real provider's (these hosts are real providers
            // to mcpeval, though sim-server answers) cut turn is counted with the real
            // tokenizer, o200k_base, no longer with the sim's (one token per `more`).
            assert!(e.tokens_estimated, "{host}: {e:?}");
            let streamed = Encoding::O200k.count(answer);
            assert!(streamed >= answer.split_whitespace().count() as u64);
            assert_eq!(e.output_tokens, streamed, "{host}");
            assert_eq!(e.total_tokens, e.input_tokens + e.output_tokens);
        }
        // The prompt's estimate against the provider's own count of the same first request, on
        // a run whose model answers whole. Anthropic sends the prompt's count first: within
        // 5 %. Changed by issue 40: the OpenAI hosts' prompt is estimated with o200k_base
        // while sim-server counts with the sim's tokenizer (every JSON quote and brace one
        // token), which counts this prompt ~1.8 times as long (measured: 667 against 1189), so
        // the estimate is held to that band, not to 5 %; its exact count is unit-tested
        // (episode::tokens).
        let provider_counts_input = host.contains("anthropic");
        let counted_dir = temp_dir();
        let counted = episodes(&run(counted_dir.path(), &sim_server(&[]), host));
        let mut compared = 0;
        for e in &eps {
            let Some(c) = counted
                .iter()
                .find(|c| (&c.task_id, c.side, c.trial) == (&e.task_id, e.side, e.trial))
                .filter(|c| c.turns == 1 && !c.tokens_estimated)
            else {
                continue;
            };
            let ratio = e.input_tokens as f64 / c.input_tokens as f64;
            let band = match provider_counts_input {
                true => 0.95..=1.05,
                false => 0.45..=0.7,
            };
            assert!(
                band.contains(&ratio),
                "{host}: {} vs {}",
                e.input_tokens,
                c.input_tokens
            );
            compared += 1;
        }
        assert!(
            compared >= 4,
            "{host}: {compared} one-turn episodes to compare"
        );
        // 36 trials, 16 at a time, 0.6 s each: a retry storm would take minutes.
        assert!(started.elapsed().as_secs() < 60);
    }
}

#[test]
fn a_provider_that_sends_nothing_is_retried_then_recorded_as_infrastructure() {
    for (host, name) in [
        ("provider = \"openai\"\nmodel = \"sim\"\n", "openai"),
        (
            "provider = \"anthropic\"\nmodel = \"claude-sim\"\n",
            "anthropic",
        ),
        (
            "provider = \"openai-responses\"\nmodel = \"sim\"\n",
            "responses",
        ),
    ] {
        let dir = temp_dir();
        let server = sim_server(&["--stall-rate", "1"]);
        let host = format!("{host}first_byte_timeout_s = 0.3\nmax_attempts = 2\n");
        let eps = episodes(&run(dir.path(), &server, &host));
        assert_eq!(eps.len(), 2 * 18);
        for e in &eps {
            let error = e.infra_error.as_deref().unwrap_or_default();
            assert!(
                error.contains("2 attempts failed") && error.contains("first_byte_timeout"),
                "{name}: {error}"
            );
            // The trial was retried once (retries = 1) before it was recorded.
            assert_eq!(e.attempts.len(), 1, "{e:?}");
            assert!(!e.success && !e.timed_out && !e.truncated);
        }
    }
}
