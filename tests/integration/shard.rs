//! Sharding through the real binary: the shards of a run (`--shard I/N`), joined by `mcpeval
//! merge`, give exactly the episodes and verdicts of the same run unsharded, and shards that do not
//! fit together are refused (exit 2) with a message naming what is wrong.

use crate::common;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use mcpeval::episode::{Episode, Side};
use polars_core::prelude::*;
use polars_io::prelude::*;

/// `mcpeval ARGS` from the repository root (so `tasks/demo` is found), no API key, no CI summary.
fn mcpeval(args: &[&str]) -> std::process::Output {
    Command::cargo_bin("mcpeval")
        .expect("the mcpeval binary is built")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("mcpeval runs")
}

/// The embedded demo with `--seed`, `--trials` and `extra`, into `out`; returns the exit code.
fn run_demo(out: &Path, seed: &str, trials: &str, extra: &[&str]) -> i32 {
    let mut args = vec!["run", "--seed", seed, "--trials", trials];
    args.extend(["--out", out.to_str().unwrap()]);
    args.extend_from_slice(extra);
    let output = mcpeval(&args);
    let code = output.status.code().expect("exited");
    assert!(code == 0 || code == 1, "{}", common::text(&output));
    code
}

/// The shards 1/n … n/n of the demo run, each in `root/shard-I`.
fn run_shards(root: &Path, seed: &str, trials: &str, n: u32) -> Vec<PathBuf> {
    (1..=n)
        .map(|i| {
            let dir = root.join(format!("shard-{i}"));
            let shard = format!("{i}/{n}");
            let code = run_demo(&dir, seed, trials, &["--shard", &shard]);
            assert_eq!(code, 0, "a shard leaves the verdict to the merge");
            dir
        })
        .collect()
}

fn merge(shards: &[&Path], out: &Path) -> std::process::Output {
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(|d| d.to_str().unwrap()));
    args.extend(["--out", out.to_str().unwrap()]);
    mcpeval(&args)
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

type Key = (String, String, u32, Side);

/// Per (task, host, trial, side): what must reproduce — not timestamps, latency or the run id.
fn fingerprint(eps: &[Episode]) -> BTreeMap<Key, String> {
    eps.iter()
        .map(|e| {
            let key = (e.task_id.clone(), e.host.clone(), e.trial, e.side);
            let args: Vec<&str> = e.calls.iter().map(|c| c.arguments.as_str()).collect();
            let value = format!(
                "success={} calls={} tools={} tokens={}+{}={} seed={} turns={} args={}",
                e.success,
                e.tool_calls,
                e.tools_called,
                e.input_tokens,
                e.output_tokens,
                e.total_tokens,
                e.seed,
                e.turns,
                args.join("|")
            );
            (key, value)
        })
        .collect()
}

/// (task, host, metric) → verdict of comparison.csv, latency left out (it is timing).
fn verdicts(dir: &Path) -> BTreeMap<(String, String, String), String> {
    let df = CsvReadOptions::default()
        .with_has_header(true)
        .try_into_reader_with_file_path(Some(dir.join("comparison.csv")))
        .unwrap()
        .finish()
        .unwrap();
    let col = |name: &str| df.column(name).unwrap().str().unwrap().clone();
    let (task, host, metric, verdict) =
        (col("task_id"), col("host"), col("metric"), col("verdict"));
    (0..df.height())
        .filter(|&i| metric.get(i) != Some("latency_ms"))
        .map(|i| {
            let get = |c: &StringChunked| c.get(i).unwrap_or_default().to_owned();
            ((get(&task), get(&host), get(&metric)), get(&verdict))
        })
        .collect()
}

fn run_json(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap()
}

#[test]
fn merged_shards_equal_the_unsharded_run() {
    let root = common::temp_dir();
    let full = root.path().join("full");
    let full_code = run_demo(&full, "7", "10", &[]);
    assert_eq!(full_code, 1, "the demo's 1.5.0 regresses at 10 trials");
    let shards = run_shards(root.path(), "7", "10", 3);

    // Each shard holds whole pairs, and the shards are balanced.
    let mut pairs = Vec::new();
    for dir in &shards {
        let eps = common::episodes(dir);
        let units: HashSet<(&str, u32)> =
            eps.iter().map(|e| (e.task_id.as_str(), e.trial)).collect();
        assert_eq!(
            eps.len(),
            units.len() * 2,
            "both sides of each unit in {dir:?}"
        );
        pairs.push(units.len());
        let info = run_json(dir);
        assert_eq!(info["shard"]["count"], 3);
        assert_eq!(info["config_hash"], run_json(&full)["config_hash"]);
    }
    let (min, max) = (pairs.iter().min().unwrap(), pairs.iter().max().unwrap());
    assert!(max - min <= 1, "shard sizes {pairs:?}");
    assert_eq!(
        pairs.iter().sum::<usize>() * 2,
        common::episodes(&full).len()
    );

    let merged = root.path().join("merged");
    let refs: Vec<&Path> = [2, 0, 1].map(|i| shards[i].as_path()).to_vec();
    let out = merge(&refs, &merged);
    assert_eq!(out.status.code(), Some(full_code), "{}", common::text(&out));

    let (want, got) = (common::episodes(&full), common::episodes(&merged));
    assert_eq!(fingerprint(&got), fingerprint(&want));
    assert_eq!(verdicts(&merged), verdicts(&full));
    assert!(!verdicts(&full).is_empty());

    let info = run_json(&merged);
    assert_eq!(info["status"], "completed");
    assert!(info.get("shard").is_none(), "{info}");
    let from: Vec<u64> = info["merged_from"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["shard"]["index"].as_u64().unwrap())
        .collect();
    assert_eq!(from, [1, 2, 3]);
    let earliest = shards
        .iter()
        .map(|d| run_json(d)["started_at"].as_str().unwrap().to_owned())
        .min();
    assert_eq!(info["started_at"].as_str().map(str::to_owned), earliest);
    let run_id = info["run_id"].as_str().unwrap();
    assert!(got.iter().all(|e| e.run_id == run_id));
    // In run order: run.json's task order, then trial and side (one host), whatever order the
    // shards were given and finished their trials in.
    let tasks: Vec<&str> = info["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let place = |e: &Episode| {
        let task = tasks.iter().position(|t| *t == e.task_id).unwrap();
        (task, e.trial, e.side)
    };
    assert!(
        got.windows(2).all(|w| place(&w[0]) < place(&w[1])),
        "merged episodes out of run order"
    );
    let table = ParquetReader::new(std::fs::File::open(merged.join("episodes.parquet")).unwrap());
    assert_eq!(table.finish().unwrap().height(), got.len());
    let transcripts = std::fs::read_to_string(merged.join("transcripts.jsonl")).unwrap();
    assert_eq!(transcripts.lines().count(), got.len());
    for file in [
        "episodes.parquet",
        "tool_calls.parquet",
        "comparison.parquet",
        "summary.md",
        "junit.xml",
        "tool_shift.csv",
    ] {
        assert!(merged.join(file).is_file(), "missing {file}");
    }
}

#[test]
fn merges_of_shards_that_do_not_fit_together_are_refused() {
    let root = common::temp_dir();
    let shards = run_shards(root.path(), "7", "2", 3);
    let [s1, s2, s3] = [&shards[0], &shards[1], &shards[2]].map(PathBuf::as_path);
    let out = |name: &str| root.path().join(name);

    let missing = merge(&[s1, s3], &out("m1"));
    assert_eq!(missing.status.code(), Some(2), "{}", common::text(&missing));
    assert!(
        stderr(&missing).contains("shard 2/3 is missing"),
        "{}",
        stderr(&missing)
    );

    let twice = merge(&[s1, s2, s2, s3], &out("m2"));
    assert_eq!(twice.status.code(), Some(2), "{}", common::text(&twice));
    let message = stderr(&twice);
    assert!(message.contains("shard 2/3 is given 2 times"), "{message}");
    assert!(message.contains(s2.to_str().unwrap()), "{message}");

    let other_seed = out("seed-8");
    run_demo(&other_seed, "8", "2", &["--shard", "3/3"]);
    let configs = merge(&[s1, s2, &other_seed], &out("m3"));
    assert_eq!(configs.status.code(), Some(2), "{}", common::text(&configs));
    let message = stderr(&configs);
    assert!(message.contains("different run configs"), "{message}");
    assert!(message.contains("seed: 7 ≠ 8"), "{message}");
    assert!(message.contains(other_seed.to_str().unwrap()), "{message}");

    // A shard that lost two episodes, and another that holds one of shard 1's too.
    let cut = copy_dir(s2, &out("cut"));
    let lines = episode_lines(&cut);
    let dropped: Episode = serde_json::from_str(lines.last().unwrap()).unwrap();
    write_lines(&cut, &lines[..lines.len() - 2]);
    let units = merge(&[s1, &cut, s3], &out("m4"));
    assert_eq!(units.status.code(), Some(2), "{}", common::text(&units));
    let message = stderr(&units);
    assert!(message.contains("2 units missing"), "{message}");
    let named = format!(
        "task `{}`, host `sim`, trial {}",
        dropped.task_id, dropped.trial
    );
    assert!(message.contains(&named), "{named} in: {message}");
    assert!(message.contains("shard 2/3"), "{message}");

    let extra = copy_dir(s3, &out("extra"));
    let mut lines = episode_lines(&extra);
    let borrowed = episode_lines(s1)[0].clone();
    lines.push(borrowed.clone());
    write_lines(&extra, &lines);
    let doubled = merge(&[s1, s2, &extra], &out("m5"));
    assert_eq!(doubled.status.code(), Some(2), "{}", common::text(&doubled));
    let message = stderr(&doubled);
    let e: Episode = serde_json::from_str(&borrowed).unwrap();
    assert!(message.contains("1 unit recorded twice"), "{message}");
    assert!(
        message.contains(&format!("task `{}`", e.task_id)),
        "{message}"
    );
    assert!(!out("m5").join("run.json").exists(), "nothing merged");

    let whole = out("whole");
    run_demo(&whole, "7", "1", &[]);
    let not_shard = merge(&[s1, &whole], &out("m6"));
    assert_eq!(not_shard.status.code(), Some(2));
    assert!(
        stderr(&not_shard).contains("is not a shard"),
        "{}",
        stderr(&not_shard)
    );
}

#[test]
fn bad_shard_values_are_usage_errors_and_resume_keeps_the_shard() {
    for bad in ["0/3", "4/3", "3", "a/b", "1/0"] {
        let out = mcpeval(&["run", "--shard", bad, "--out", "/nonexistent/never"]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", common::text(&out));
        assert!(stderr(&out).contains("--shard"), "{bad}: {}", stderr(&out));
    }
    let root = common::temp_dir();
    let dir = root.path().join("s");
    run_demo(&dir, "7", "1", &["--shard", "2/3"]);
    let before = fingerprint(&common::episodes(&dir));
    let hash = run_json(&dir)["config_hash"].clone();
    assert!(hash.is_string(), "{hash}");
    let path = dir.to_str().unwrap();
    let wrong = mcpeval(&["run", "--resume", path, "--shard", "1/3"]);
    assert_eq!(wrong.status.code(), Some(2), "{}", common::text(&wrong));
    assert!(
        stderr(&wrong).contains("keeps the run's shard"),
        "{}",
        stderr(&wrong)
    );
    let again = mcpeval(&["run", "--resume", path]);
    assert_eq!(again.status.code(), Some(0), "{}", common::text(&again));
    assert_eq!(
        run_json(&dir)["shard"],
        serde_json::json!({"index": 2, "count": 3})
    );
    assert_eq!(fingerprint(&common::episodes(&dir)), before);
    assert_eq!(
        run_json(&dir)["config_hash"],
        hash,
        "a resumed shard still merges"
    );
}

fn copy_dir(from: &Path, to: &Path) -> PathBuf {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
    to.to_path_buf()
}

fn episode_lines(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("episodes.jsonl")).unwrap();
    text.lines().map(str::to_owned).collect()
}

fn write_lines(dir: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(dir.join("episodes.jsonl"), text).unwrap();
}
