//! Replay through the binary: a demo run recorded with `--record` and replayed with
//! `replay:CASSETTE+SPEC` gives the same per-trial grades; 1.5.0's tool list over 1.4.0's
//! cassette reproduces the demo's four regressed tasks (its `find_issues` calls unmatched); a
//! server that refuses every call is evaluated through the cassette; a corrupted cassette is
//! refused with file:line.

use std::collections::BTreeMap;
use std::path::Path;

use polars_core::prelude::*;
use polars_io::prelude::*;

use crate::common::*;

/// Each (task, side, trial)'s grade and tools called.
fn grades(run: &Path) -> BTreeMap<(String, String, u32), (bool, String)> {
    (episodes(run).into_iter())
        .map(|e| {
            let key = (e.task_id, e.side.as_str().to_owned(), e.trial);
            (key, (e.success, e.tools_called))
        })
        .collect()
}

/// A demo run of 1.4.0 → 1.5.0 recorded into `dir/cassettes`; the baseline's cassette.
fn record(dir: &Path) -> String {
    let out = run_pair(
        "demo:1.4.0",
        "demo:1.5.0",
        &dir.join("recorded"),
        &[
            "--trials",
            "2",
            "--record",
            dir.join("cassettes").to_str().unwrap(),
        ],
    );
    assert_verdict(&out);
    let cassette = dir.join("cassettes/baseline.cassette.jsonl");
    assert!(cassette.is_file(), "{}", text(&out));
    cassette.display().to_string()
}

#[test]
fn a_replayed_run_grades_as_recorded_and_1_5_0_over_1_4_0_s_answers_regresses_the_same() {
    let dir = temp_dir();
    let cassette = record(dir.path());
    let replayed = dir.path().join("replayed");
    let out = run_pair(
        &format!("replay:{cassette}+demo:1.4.0"),
        &format!("replay:{cassette}+demo:1.5.0"),
        &replayed,
        &["--trials", "2"],
    );
    assert_verdict(&out);
    let said = text(&out);
    let (recorded, again) = (grades(&dir.path().join("recorded")), grades(&replayed));
    // The baseline side: the same list, every call answered from the cassette, the same seeds.
    let baseline: Vec<_> = (recorded.iter())
        .filter(|(k, _)| k.1 == "baseline")
        .collect();
    assert!(!baseline.is_empty());
    for (key, grade) in baseline {
        assert_eq!(again.get(key), Some(grade), "{key:?}");
    }
    // The candidate: 1.5.0's list over 1.4.0's answers. The demo's four regressed tasks fail
    // again; `find_issues`, which 1.4.0 never had, is unmatched: a tool error saying so.
    for task in [
        "delete-issue-4",
        "find-open-login-apollo",
        "search-crash-zephyr",
        "search-then-open-invoice",
    ] {
        let line = (said.lines())
            .find(|l| l.starts_with(&format!("{task} ")))
            .unwrap_or_else(|| panic!("{task}: {said}"));
        assert!(line.contains("2/2 → 0/2"), "{line}");
    }
    let transcripts = std::fs::read_to_string(replayed.join("transcripts.jsonl")).unwrap();
    assert!(
        transcripts.contains("mcpeval replay: no recorded answer for tools/call `find_issues`"),
        "an unmatched call says so"
    );
    assert_unmatched_counted(&replayed, "find_issues");
}

/// Each episode counts its unmatched calls: every call of `tool` (which the cassette never
/// held) on the candidate, none on the baseline (whose calls were all recorded), and, under the
/// `error` policy, exactly the calls answered "no recorded answer". The episodes table carries
/// the counts, and summary.md says how much of the run was not replayed.
#[track_caller]
fn assert_unmatched_counted(run: &Path, tool: &str) {
    let eps = episodes(run);
    for e in &eps {
        let flagged: Vec<_> = e.calls.iter().filter(|c| c.replay_unmatched).collect();
        assert_eq!(e.replay_unmatched() as usize, flagged.len());
        if e.side.as_str() == "baseline" {
            assert_eq!(flagged.len(), 0, "{} {:?}", e.task_id, e.calls);
        }
        for c in &e.calls {
            assert!(c.tool != tool || c.replay_unmatched, "{} {c:?}", e.task_id);
            if c.result.contains("no recorded answer") {
                assert!(c.replay_unmatched, "{} {c:?}", e.task_id);
            }
        }
    }
    let candidate: Vec<_> = eps
        .iter()
        .filter(|e| e.side.as_str() == "candidate")
        .collect();
    let unmatched: u32 = candidate.iter().map(|e| e.replay_unmatched()).sum();
    let of_tool = (candidate.iter().flat_map(|e| &e.calls))
        .filter(|c| c.tool == tool)
        .count();
    assert!(of_tool > 0, "the candidate called {tool}");
    let table = std::fs::File::open(run.join("episodes.parquet")).unwrap();
    let table = ParquetReader::new(table).finish().unwrap();
    let column = table.column("replay_unmatched").expect("the column");
    let in_table = column.u32().unwrap().sum().unwrap_or(0);
    assert_eq!(in_table, unmatched, "the episodes table's column");
    let calls: usize = candidate.iter().map(|e| e.calls.len()).sum();
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    let said = format!("{unmatched} of {calls} tool call(s) had no recorded answer");
    assert!(summary.contains(&said), "{said}: {summary}");
}

#[test]
fn over_http_a_cassette_alone_serves_its_lists_and_live_answers_are_counted_as_unmatched() {
    let dir = temp_dir();
    let cassette = record(dir.path());
    // The cassette alone over HTTP: its recorded tool list.
    let alone = spawn_listening(
        &["serve", "--replay", &cassette, "--http", "127.0.0.1:0"],
        true,
    );
    let snapshot = dir.path().join("snap");
    let out = mcpeval(&[
        "snapshot",
        "--server",
        &format!("http://{}/mcp", alone.addr),
        "--out",
        snapshot.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let tools = std::fs::read_to_string(snapshot.join("tools.json")).unwrap();
    assert!(
        tools.contains("\"search_issues\"") && !tools.contains("\"find_issues\""),
        "{tools}"
    );
    // 1.5.0's list over 1.4.0's answers, what the cassette lacks answered live by 1.5.0: each
    // live answer is marked unmatched in its result's `_meta` and counted.
    let live = spawn_listening(
        &[
            "serve",
            "--replay",
            &cassette,
            "--base",
            "demo:1.5.0",
            "--unmatched",
            "live",
            "--http",
            "127.0.0.1:0",
        ],
        true,
    );
    let run = dir.path().join("live");
    let out = run_pair(
        &format!("replay:{cassette}+demo:1.4.0"),
        &format!("http://{}/mcp", live.addr),
        &run,
        // An HTTP server is never exempt from the write gate; its state is this test's.
        &["--trials", "2", "--allow-writes"],
    );
    assert_verdict(&out);
    let transcripts = std::fs::read_to_string(run.join("transcripts.jsonl")).unwrap();
    assert!(!transcripts.contains("no recorded answer"), "answered live");
    assert_unmatched_counted(&run, "find_issues");
}

#[test]
fn a_server_that_refuses_every_call_is_evaluated_through_its_cassette() {
    let dir = temp_dir();
    let cassette = record(dir.path());
    // Without its backend the server lists its tools and refuses every call; the cassette
    // answers for it.
    let refusing = format!("{} demo-server --release 1.4.0 --deny-all", bin());
    let direct = dir.path().join("direct");
    let out = run_pair(&refusing, &refusing, &direct, &["--trials", "2"]);
    assert_verdict(&out);
    let replayed = dir.path().join("replayed");
    let spec = format!("replay:{cassette}+{refusing}");
    let out = run_pair(&spec, &spec, &replayed, &["--trials", "2"]);
    assert_verdict(&out);
    let (recorded, direct, again) = (
        grades(&dir.path().join("recorded")),
        grades(&direct),
        grades(&replayed),
    );
    let successes = |g: &BTreeMap<_, (bool, String)>| g.values().filter(|v| v.0).count();
    assert!(
        successes(&direct) < successes(&again),
        "refused: {} of {}, replayed: {}",
        successes(&direct),
        direct.len(),
        successes(&again)
    );
    for (key, grade) in recorded.iter().filter(|(k, _)| k.1 == "baseline") {
        assert_eq!(again.get(key), Some(grade), "{key:?}");
    }
}

#[test]
fn a_corrupted_cassette_is_refused_with_its_line() {
    let dir = temp_dir();
    let cassette = record(dir.path());
    let text_of = std::fs::read_to_string(&cassette).unwrap();
    let mut lines: Vec<&str> = text_of.lines().collect();
    lines.insert(3, "{not json");
    let bad = dir.path().join("bad.cassette.jsonl");
    std::fs::write(&bad, lines.join("\n")).unwrap();
    let out = mcpeval(&[
        "serve",
        "--replay",
        bad.to_str().unwrap(),
        "--base",
        "demo:1.4.0",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{}:4", bad.display())),
        "{}",
        text(&out)
    );
    let missing = mcpeval(&[
        "snapshot",
        "--server",
        "replay:/nonexistent.jsonl+demo:1.4.0",
        "--out",
        dir.path().join("s").to_str().unwrap(),
    ]);
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    assert!(text(&missing).contains("cassette `/nonexistent.jsonl` not found"));
}

#[test]
fn a_config_s_replay_servers_answer_from_their_cassette_and_bad_keys_are_refused() {
    let dir = temp_dir();
    record(dir.path());
    let suite = repo_path("tasks/demo");
    // The cassette's path is the config's folder's; `unmatched` goes with `replay`.
    let config = format!(
        r#"baseline = "old"
candidate = "new"
suites = ["{}"]
hosts = ["sim"]

[servers.old]
replay = "cassettes/baseline.cassette.jsonl"
base = "demo:1.4.0"

[servers.new]
replay = "cassettes/baseline.cassette.jsonl"
base = "demo:1.5.0"
unmatched = "error"
"#,
        suite.display()
    );
    let run = run_config(dir.path(), &config, "2");
    let table = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(table.contains("find-open-login-apollo"), "{table}");
    let again = grades(&run);
    for (key, grade) in grades(&dir.path().join("recorded")) {
        if key.1 == "baseline" {
            assert_eq!(again.get(&key), Some(&grade), "{key:?}");
        }
    }
    let bad = config.replace("unmatched = \"error\"", "unmatched = \"guess\"");
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, bad).unwrap();
    let out = mcpeval(&["run", "--config", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("[servers.new]: `unmatched = \"guess\"`: one of"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_cassette_alone_serves_its_recorded_lists_and_answers() {
    let dir = temp_dir();
    let cassette = record(dir.path());
    // No live server at all: the handshake, the lists and the answers are the cassette's.
    let alone = format!("replay:{cassette}");
    let snapshot = dir.path().join("snap");
    let out = mcpeval(&[
        "snapshot",
        "--server",
        &alone,
        "--out",
        snapshot.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let direct = dir.path().join("direct");
    let out = mcpeval(&[
        "snapshot",
        "--server",
        "demo:1.4.0",
        "--out",
        direct.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let tools = |d: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(d.join("tools.json")).unwrap()).unwrap()
    };
    assert_eq!(
        tools(&snapshot),
        tools(&direct),
        "the recorded tool list, as listed"
    );
    let replayed = dir.path().join("replayed");
    let out = run_pair(&alone, &alone, &replayed, &["--trials", "2"]);
    assert_verdict(&out);
    for (key, grade) in grades(&dir.path().join("recorded")) {
        if key.1 == "baseline" {
            assert_eq!(grades(&replayed).get(&key), Some(&grade), "{key:?}");
        }
    }
    let no_base = mcpeval(&["serve"]);
    assert_eq!(no_base.status.code(), Some(2), "{}", text(&no_base));
    assert!(
        text(&no_base).contains("--base SPEC is needed"),
        "{}",
        text(&no_base)
    );
}

#[test]
fn the_embedded_demo_records_and_replays_offline_from_any_folder() {
    // The walk-through of docs/replay-overlay.md, from a folder with no checkout: the embedded
    // demo recorded, then replayed under 1.5.0's list with the compiled-in demo suite.
    let dir = temp_dir();
    let in_dir = |args: &[&str]| {
        std::process::Command::new(bin())
            .args(args)
            .current_dir(dir.path())
            .env_remove("OPENAI_API_KEY")
            .env_remove("GITHUB_STEP_SUMMARY")
            .output()
            .expect("mcpeval runs")
    };
    let out = in_dir(&[
        "run", "--record", "cas", "--trials", "1", "--out", "recorded",
    ]);
    assert_verdict(&out);
    assert!(
        text(&out).contains("recorded: cas/baseline.cassette.jsonl ("),
        "{}",
        text(&out)
    );
    let out = in_dir(&[
        "run",
        "--baseline",
        "replay:cas/baseline.cassette.jsonl+demo:1.4.0",
        "--candidate",
        "replay:cas/baseline.cassette.jsonl+demo:1.5.0",
        "--suite",
        "tasks/demo",
        "--host",
        "sim",
        "--trials",
        "1",
        "--out",
        "replayed",
    ]);
    assert_verdict(&out);
    let said = text(&out);
    assert!(
        said.contains("no tasks/demo folder here: the demo suite compiled into mcpeval is used"),
        "{said}"
    );
    assert!(said.contains("18 task(s) × 1 trial(s) per side"), "{said}");
    assert_unmatched_counted(&dir.path().join("replayed"), "find_issues");
}
