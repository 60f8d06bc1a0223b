//! The response cache through the real binary: a rerun against a dead model endpoint is answered
//! from `<out_dir>/.cache` and reproduces the first run, `--resume` reads it too, and
//! `--no-cache` bypasses it.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;
use mcpeval::episode::{Episode, Side};

const KEY: &str = "sk-cache-test-secret-4711";

/// What a replayed episode must reproduce: grading, tool calls and tokens (not times).
type Replayed = (bool, u32, u32, String, Vec<String>, u64, u64, u64, u32);

fn replayed(eps: &[Episode]) -> BTreeMap<(String, Side, u32), Replayed> {
    eps.iter()
        .map(|e| {
            let calls = e
                .calls
                .iter()
                .map(|c| format!("{} {}", c.tool, c.arguments))
                .collect();
            let value = (
                e.success,
                e.turns,
                e.tool_calls,
                e.tools_called.clone(),
                calls,
                e.input_tokens,
                e.output_tokens,
                e.total_tokens,
                e.tool_errors,
            );
            ((e.task_id.clone(), e.side, e.trial), value)
        })
        .collect()
}

/// A config over two demo files, host `openai:sim`, with the results (and so the cache) in `dir`;
/// no trial retries, so that the run against the dead endpoint fails fast.
fn write_config(dir: &Path) -> PathBuf {
    let results = dir.join("results");
    let text = format!(
        "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.5.0\"\n\
         suites = [\"tasks/demo/lookup.yaml\", \"tasks/demo/no_tool.yaml\"]\n\
         hosts = [\"openai:sim\"]\nseed = 42\nretries = 0\nout_dir = \"{}\"\n",
        results.display()
    );
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `mcpeval run --config CONFIG --trials 2 ARGS…` with the model endpoint at `addr`.
fn run(config: &Path, addr: &str, args: &[&str]) -> Output {
    Command::new(bin())
        .args(["run", "--config", config.to_str().unwrap(), "--trials", "2"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OPENAI_BASE_URL", format!("http://{addr}/v1"))
        .env("OPENAI_API_KEY", KEY)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap()
}

fn finished(out: &Output) {
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(out));
}

/// `(hits, requests)` from the line `response cache: H of N model requests answered from …`.
fn cache_line(out: &Output) -> (u64, u64) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("response cache: "))
        .unwrap_or_else(|| panic!("no cache line: {}", text(out)));
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words[1], "of", "{line}");
    (words[0].parse().unwrap(), words[2].parse().unwrap())
}

#[test]
fn a_rerun_against_a_dead_endpoint_is_answered_from_the_cache() {
    let dir = temp_dir();
    let config = write_config(dir.path());
    let out_dir = |name: &str| dir.path().join(name);
    let server = spawn_listening(&["sim-server", "--addr", "127.0.0.1:0"], false);
    let addr = server.addr.clone();

    let first = run(
        &config,
        &addr,
        &["--out", out_dir("first").to_str().unwrap()],
    );
    finished(&first);
    let first_eps = episodes(&out_dir("first"));
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir("first").join("run.json")).unwrap()).unwrap();
    let tasks = info["tasks"].as_array().unwrap().len();
    assert!(tasks >= 5, "{info}");
    assert_eq!(first_eps.len(), tasks * 2 * 2, "{}", text(&first));
    assert!(first_eps.iter().all(|e| e.infra_error.is_none()));
    let requests: u64 = first_eps.iter().map(|e| u64::from(e.turns)).sum();
    assert_eq!(cache_line(&first), (0, requests));

    // One entry per model request: no two trials or sides share an answer.
    // Beside the run directories: `.cache` of the folder `--out` points into.
    let cache = dir.path().join(".cache");
    let entries = files_under(&cache);
    assert_eq!(entries.len() as u64, requests, "{entries:?}");
    for path in &entries {
        let name = path.file_name().unwrap().to_str().unwrap();
        let folder = path
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap();
        assert!(name.len() == 32 + 5 && name.ends_with(".json"), "{name}");
        assert!(
            name.starts_with(folder) && folder.len() == 2,
            "{name} in {folder}"
        );
        let text = std::fs::read_to_string(path).unwrap();
        assert!(!text.contains(KEY), "the API key is in {}", path.display());
        let entry: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(entry["model"], "openai:sim", "{text}");
        assert_eq!(entry["format"], 1, "{text}");
    }

    drop(server); // kills the sim-server: from now on the endpoint refuses connections

    let second = run(
        &config,
        &addr,
        &["--out", out_dir("second").to_str().unwrap()],
    );
    finished(&second);
    let second_eps = episodes(&out_dir("second"));
    let errors: Vec<_> = second_eps
        .iter()
        .filter_map(|e| e.infra_error.as_ref())
        .collect();
    assert!(errors.is_empty(), "not answered from the cache: {errors:?}");
    assert_eq!(cache_line(&second), (requests, requests));
    assert_eq!(replayed(&second_eps), replayed(&first_eps));
    assert_eq!(first.status.code(), second.status.code(), "another verdict");

    // A cut-short run (the first run's record up to its tenth episode, as a kill leaves it)
    // is finished by --resume from the cache alone.
    let cut = out_dir("cut");
    std::fs::create_dir_all(&cut).unwrap();
    let mut info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir("first").join("run.json")).unwrap()).unwrap();
    info["status"] = "running".into();
    std::fs::write(cut.join("run.json"), info.to_string()).unwrap();
    for file in ["episodes.jsonl", "transcripts.jsonl"] {
        let text = std::fs::read_to_string(out_dir("first").join(file)).unwrap();
        let head: Vec<&str> = text.lines().take(10).collect();
        std::fs::write(cut.join(file), head.join("\n") + "\n").unwrap();
    }
    let resumed = Command::new(bin())
        .args(["run", "--resume", cut.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OPENAI_BASE_URL", format!("http://{addr}/v1"))
        .env("OPENAI_API_KEY", KEY)
        .output()
        .unwrap();
    finished(&resumed);
    let resumed_eps = episodes(&cut);
    assert!(resumed_eps.iter().all(|e| e.infra_error.is_none()));
    assert_eq!(replayed(&resumed_eps), replayed(&first_eps));
    let ten: u64 = first_eps[..10].iter().map(|e| u64::from(e.turns)).sum();
    assert_eq!(cache_line(&resumed), (requests - ten, requests - ten));

    // --no-cache asks the dead endpoint: every episode is an infrastructure error, and the
    // host's breaker stops it after requests refused in a row (the rest are not run).
    let bypass = run(
        &config,
        &addr,
        &["--no-cache", "--out", out_dir("bypass").to_str().unwrap()],
    );
    let bypass_eps = episodes(&out_dir("bypass"));
    let bypass_info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir("bypass").join("run.json")).unwrap())
            .unwrap();
    assert_eq!(bypass_info["status"], "incomplete", "{}", text(&bypass));
    let not_run = bypass_info["stopped_hosts"][0]["not_run"].as_u64().unwrap() as usize;
    assert_eq!(
        bypass_eps.len() + not_run,
        first_eps.len(),
        "{}",
        text(&bypass)
    );
    assert!(
        bypass_eps.iter().all(|e| e.infra_error.is_some()),
        "{}",
        text(&bypass)
    );
    assert!(!String::from_utf8_lossy(&bypass.stdout).contains("response cache:"));
    assert_eq!(
        files_under(&cache).len() as u64,
        requests,
        "the cache changed"
    );
}

#[test]
fn the_sim_host_is_never_cached() {
    let dir = temp_dir();
    let results = dir.path().join("results");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.5.0\"\n\
             suites = [\"tasks/demo/no_tool.yaml\"]\nhosts = [\"sim\"]\nout_dir = \"{}\"\n",
            results.display()
        ),
    )
    .unwrap();
    let out = mcpeval(&[
        "run",
        "--config",
        config.to_str().unwrap(),
        "--trials",
        "1",
        "--out",
        dir.path().join("run").to_str().unwrap(),
    ]);
    finished(&out);
    assert!(!results.join(".cache").exists(), "the sim host was cached");
    assert!(
        !dir.path().join(".cache").exists(),
        "the sim host was cached"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("response cache:"));
}
