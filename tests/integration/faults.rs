//! Runs against a faulty model endpoint and a crashing server: retries absorb the faults, every
//! trial is recorded exactly once, and the results are those of a fault-free run.

use crate::common;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::*;
use mcpeval::episode::{Episode, Side};

type Key = (String, Side, u32);

fn key(e: &Episode) -> Key {
    (e.task_id.clone(), e.side, e.trial)
}

/// A sim-server on 127.0.0.1 with these extra arguments.
fn sim_server(extra: &[&str]) -> Background {
    let mut args = vec!["sim-server", "--addr", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    spawn_listening(&args, false)
}

/// `mcpeval run --config CONFIG --out OUT ARGS…` with the model endpoint at `server`.
fn run_command(server: &Background, config: &Path, out: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(["run", "--config", config.to_str().unwrap()])
        .args(["--out", out.to_str().unwrap()])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OPENAI_BASE_URL", format!("http://{}/v1", server.addr))
        .env_remove("OPENAI_API_KEY")
        .env_remove("GITHUB_STEP_SUMMARY");
    cmd
}

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
    path
}

const OPENAI_CONFIG: &str = "\
baseline = \"demo:1.4.0\"
candidate = \"demo:1.5.0\"
suites = [\"tasks/demo\"]
hosts = [\"openai:sim\"]
seed = 42
concurrency = 16
retries = 4
";

/// `verdict` of comparison.csv by (task, metric), for the gated metrics `success` and `tool_calls`.
fn verdicts(run: &Path) -> BTreeMap<(String, String), String> {
    let text = std::fs::read_to_string(run.join("comparison.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (task, metric, verdict) = (col("task_id"), col("metric"), col("verdict"));
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[metric] == "success" || f[metric] == "tool_calls")
        .map(|f| {
            (
                (f[task].to_owned(), f[metric].to_owned()),
                f[verdict].to_owned(),
            )
        })
        .collect()
}

/// Every (task, side, trial) of the run exactly once: `trials` per task and side.
fn assert_each_trial_once(run: &Path, trials: usize) -> Vec<Episode> {
    let eps = episodes(run);
    let tasks: HashSet<&str> = eps.iter().map(|e| e.task_id.as_str()).collect();
    let keys: HashSet<Key> = eps.iter().map(key).collect();
    assert_eq!(keys.len(), eps.len(), "a trial was recorded twice");
    assert_eq!(keys.len(), tasks.len() * 2 * trials, "a trial is missing");
    eps
}

fn exit_code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

/// True when the sim-server garbled one of the episode's tool-call arguments: the call is the
/// model's error (not JSON) and the model went on from there.
fn garbled(e: &Episode) -> bool {
    e.calls.iter().any(|c| {
        c.error_kind.as_deref() == Some("model")
            && serde_json::from_str::<serde_json::Value>(&c.arguments).is_err()
    })
}

#[test]
fn a_run_through_a_faulty_endpoint_reproduces_the_fault_free_run() {
    let dir = temp_dir();
    let config = write_config(dir.path(), OPENAI_CONFIG);
    let clean_server = sim_server(&[]);
    let faulty_server = sim_server(&[
        "--fail-rate",
        "0.25",
        "--garbage-rate",
        "0.05",
        "--status",
        "429",
        "--status",
        "500",
        "--status",
        "503",
        "--retry-after",
        "1",
        "--fault-seed",
        "7",
    ]);
    let trials = 10;
    let run = |server: &Background, name: &str| {
        let out_dir = dir.path().join(name);
        let out = run_command(server, &config, &out_dir, &["--trials", "10"])
            .output()
            .unwrap();
        assert!(matches!(exit_code(&out), 0 | 1), "{}", text(&out));
        out_dir
    };
    let clean_dir = run(&clean_server, "clean");
    let faulty_dir = run(&faulty_server, "faulty");

    let clean: BTreeMap<Key, Episode> = assert_each_trial_once(&clean_dir, trials)
        .into_iter()
        .map(|e| (key(&e), e))
        .collect();
    let faulty = assert_each_trial_once(&faulty_dir, trials);
    assert!(clean.values().all(|e| e.infra_error.is_none()));

    // Every episode is graded or marked as an infrastructure error.
    for e in &faulty {
        match &e.infra_error {
            Some(_) => assert!(!e.success && e.grade.checks.is_empty(), "{e:?}"),
            None => assert!(!e.grade.checks.is_empty(), "ungraded: {e:?}"),
        }
    }
    // Unreadable bodies were infrastructure errors, and the runner retried those trials.
    let retried: Vec<&Episode> = faulty.iter().filter(|e| !e.attempts.is_empty()).collect();
    assert!(
        retried
            .iter()
            .any(|e| e.attempts.iter().any(|a| a.contains("unparsable body"))),
        "no trial retried after an unreadable body"
    );
    // Garbled arguments were the model's errors: recorded, sent back, and the model went on.
    let garbled: HashSet<Key> = faulty.iter().filter(|e| garbled(e)).map(key).collect();
    assert!(
        !garbled.is_empty(),
        "no garbled arguments reached the agent loop"
    );

    // Same success and the same tool calls per episode, except where arguments were garbled:
    // those carry the injected model error, and the model went on from it (it called again),
    // but a model whose every call was garbled may fail the task (as it would against a real
    // provider that garbled its arguments).
    for e in faulty.iter().filter(|e| e.infra_error.is_none()) {
        let before = &clean[&key(e)];
        if garbled.contains(&key(e)) {
            assert!(e.calls.len() >= 2, "the model did not go on: {:?}", e.calls);
            continue;
        }
        assert_eq!(e.success, before.success, "{:?}", key(e));
        assert_eq!(e.tools_called, before.tools_called, "{:?}", key(e));
    }

    // The same verdicts once the garbled episodes, which carry the injected model errors, are
    // set aside like infrastructure errors.
    let set_aside = dir.path().join("faulty-set-aside");
    std::fs::create_dir_all(&set_aside).unwrap();
    for file in ["run.json", "transcripts.jsonl"] {
        std::fs::copy(faulty_dir.join(file), set_aside.join(file)).unwrap();
    }
    let lines: Vec<String> = faulty
        .iter()
        .map(|e| {
            let mut e = e.clone();
            if garbled.contains(&key(&e)) {
                e.infra_error = Some("garbled arguments injected by sim-server".into());
                e.success = false;
            }
            serde_json::to_string(&e).unwrap()
        })
        .collect();
    std::fs::write(set_aside.join("episodes.jsonl"), lines.join("\n") + "\n").unwrap();
    let out = mcpeval(&["compare", set_aside.to_str().unwrap()]);
    assert!(matches!(exit_code(&out), 0 | 1), "{}", text(&out));
    let (want, got) = (verdicts(&clean_dir), verdicts(&set_aside));
    assert!(want.len() >= 2 * 18, "{want:?}");
    assert_eq!(want, got);
    // Success verdicts need no setting aside: garbled arguments do not change success here.
    let success = |v: &BTreeMap<(String, String), String>| {
        v.iter()
            .filter(|((_, m), _)| m == "success")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(success(&want), success(&verdicts(&faulty_dir)));
}

#[test]
fn trials_on_a_crashed_server_are_retried_in_a_fresh_one() {
    let dir = temp_dir();
    // Trials of a task share a server: the fourth tool call on it kills it mid-run.
    let config = write_config(
        dir.path(),
        &format!(
            "baseline = \"demo:1.4.0\"\ncandidate = \"crashy\"\nsuites = [\"tasks/demo\"]\n\
             hosts = [\"sim\"]\nisolation = \"task\"\nretries = 3\nseed = 42\n\n\
             [servers.crashy]\ncommand = \"{} demo-server --release 1.5.0 --crash-after 3\"\n",
            bin()
        ),
    );
    let out_dir = dir.path().join("run");
    let out = mcpeval(&[
        "run",
        "--config",
        config.to_str().unwrap(),
        "--trials",
        "4",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(matches!(exit_code(&out), 0 | 1), "{}", text(&out));
    let eps = assert_each_trial_once(&out_dir, 4);
    let retried: Vec<&Episode> = eps.iter().filter(|e| !e.attempts.is_empty()).collect();
    assert!(!retried.is_empty(), "no trial met the crash");
    for e in &retried {
        assert_eq!(e.side, Side::Candidate);
        assert!(
            e.attempts[0].contains("crashing on purpose after 3 tool calls"),
            "{:?}",
            e.attempts
        );
        // The retry ran in a fresh server, which had calls to spare.
        assert!(e.infra_error.is_none(), "{e:?}");
    }
    assert!(eps.iter().all(|e| e.infra_error.is_none()));
}

#[test]
fn a_killed_run_through_a_faulty_endpoint_is_finished_by_resume() {
    // tests/integration/resume.rs kills a run against a healthy endpoint; here requests are being retried
    // when the kill comes.
    let server = sim_server(&[
        "--latency-ms",
        "30",
        "--fail-rate",
        "0.2",
        "--status",
        "429",
        "--status",
        "503",
        "--retry-after",
        "0",
        "--garbage-rate",
        "0.04",
        "--fault-seed",
        "3",
    ]);
    let dir = temp_dir();
    let config = write_config(dir.path(), OPENAI_CONFIG);
    let out_dir = dir.path().join("run");
    let mut child = run_command(
        &server,
        &config,
        &out_dir,
        &["--trials", "4", "--concurrency", "2"],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let episodes_file = out_dir.join("episodes.jsonl");
    let recorded = || {
        std::fs::read_to_string(&episodes_file)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };
    assert!(wait_for(|| recorded() >= 10, Duration::from_secs(60)));
    child.kill().unwrap(); // SIGKILL: nothing gets to clean up
    child.wait().unwrap();
    assert!(
        recorded() < 18 * 2 * 4,
        "the run finished before it was killed"
    );

    let out = Command::new(bin())
        .args(["run", "--resume", out_dir.to_str().unwrap()])
        .args(["--concurrency", "8"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OPENAI_BASE_URL", format!("http://{}/v1", server.addr))
        .output()
        .unwrap();
    assert!(matches!(exit_code(&out), 0 | 1), "{}", text(&out));
    let eps = assert_each_trial_once(&out_dir, 4);
    let transcripts = std::fs::read_to_string(out_dir.join("transcripts.jsonl")).unwrap();
    assert_eq!(transcripts.lines().count(), eps.len());
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["status"], "completed");
}

/// CPU time of this process (user + system) so far.
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes into the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Request rate and mcpeval's CPU per request through the openai host against
/// `sim-server --latency-ms 200` (its own process, so its CPU is not counted), with and without
/// the retry machinery, and with 20 % of requests failing. Run it with
/// `cargo test --release --test integration -- --ignored --nocapture faults::bench`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark"]
async fn bench_retry_overhead() {
    use futures::StreamExt;
    use mcpeval::host::http::OverEndpoint;
    use mcpeval::host::openai::OpenAiModel;
    use mcpeval::host::retry::RetryPolicy;
    use mcpeval::host::{CompletionRequest, Message, Model, ToolSpec};
    use std::sync::Arc;
    use std::time::Instant;

    const N: usize = 3000;
    const CONCURRENCY: usize = 64;
    let tools: Vec<ToolSpec> = mcpeval::mcp::demo::tools(mcpeval::mcp::demo::Release::V1_4_0)
        .iter()
        .map(|t| ToolSpec {
            name: t.name.to_string(),
            title: None,
            description: t.description.as_ref().map(|d| d.to_string()),
            input_schema: serde_json::Value::Object((*t.input_schema).clone()),
            deferred: false,
        })
        .collect();
    let request = |seed: u64| CompletionRequest {
        messages: vec![
            Message::System {
                content: "You are a helpful assistant with tools.".into(),
            },
            Message::User {
                content: "Search for crash issues in the zephyr project".into(),
            },
        ],
        tools: tools.clone().into(),
        seed,
        ..Default::default()
    };
    async fn measure(
        label: &str,
        model: Arc<OpenAiModel>,
        requests: Vec<CompletionRequest>,
        latency: Duration,
    ) {
        let n = requests.len();
        let (cpu0, wall0) = (cpu_time(), Instant::now());
        let failed = futures::stream::iter(requests)
            .map(|r| {
                let model = model.clone();
                async move { model.complete(&r).await.is_err() }
            })
            .buffer_unordered(CONCURRENCY)
            .filter(|failed| std::future::ready(*failed))
            .count()
            .await;
        let (cpu, wall) = (cpu_time() - cpu0, wall0.elapsed());
        let counts = model.request_counts();
        // What a fault-free run needs: every completion waits out the latency once (injected
        // errors are answered at once).
        let ideal = latency.as_secs_f64() * n as f64 / CONCURRENCY as f64;
        println!(
            "{label}: {n} completions ({} HTTP requests, {} retries, {failed} failed for good) \
             in {:.2} s = {:.0} completions/s, wall/ideal {:.3}; mcpeval CPU {:.0} ms = {:.3} ms \
             per completion, {:.3} ms per HTTP request",
            counts.attempts,
            counts.retries,
            wall.as_secs_f64(),
            n as f64 / wall.as_secs_f64(),
            wall.as_secs_f64() / ideal,
            cpu.as_secs_f64() * 1e3,
            cpu.as_secs_f64() * 1e3 / n as f64,
            cpu.as_secs_f64() * 1e3 / counts.attempts as f64,
        );
    }
    let latency = Duration::from_millis(200);
    let clean = sim_server(&["--latency-ms", "200"]);
    let faulty = sim_server(&[
        "--latency-ms",
        "200",
        "--fail-rate",
        "0.2",
        "--status",
        "503",
        "--retry-after",
        "0",
    ]);
    let model = |server: &Background, policy: RetryPolicy| {
        let url = format!("http://{}/v1", server.addr);
        Arc::new(
            OpenAiModel::with_base_url("sim", &url, None)
                .unwrap()
                .with_retry(policy),
        )
    };
    let batch = |offset: u64| {
        (0..N as u64)
            .map(|s| request(s + offset))
            .collect::<Vec<_>>()
    };
    // Warm up connections and allocations.
    let warm = model(&clean, RetryPolicy::default());
    measure("warm-up", warm, batch(0)[..500].to_vec(), latency).await;
    let once = RetryPolicy::once(Duration::from_secs(120));
    for round in 1..=2u64 {
        println!("round {round}");
        let offset = round * 10 * N as u64;
        measure(
            "no retries (1 attempt)",
            model(&clean, once),
            batch(offset),
            latency,
        )
        .await;
        let policy = RetryPolicy::default();
        measure(
            "retry policy, no faults",
            model(&clean, policy),
            batch(offset + N as u64),
            latency,
        )
        .await;
        let offset = offset + 2 * N as u64;
        measure(
            "retry policy, 20 % 503 Retry-After: 0",
            model(&faulty, policy),
            batch(offset),
            latency,
        )
        .await;
    }
}
