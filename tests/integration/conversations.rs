//! Conversations (`turns:`) through the real binary against the demo server, over stdio and
//! over HTTP: the report names the turn that regressed, both sides get the same user messages,
//! and the records keep each turn.

use crate::common;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;
use std::process::{Command, Output};

use common::*;
use mcpeval::episode::{Episode, Side, Transcript};
use mcpeval::host::Message;
use polars_io::prelude::*;

fn run_conversations(baseline: &str, candidate: &str, suite: &Path, out: &Path) -> Output {
    Command::new(bin())
        .args(["run", "--baseline", baseline, "--candidate", candidate])
        .args(["--suite", suite.to_str().unwrap(), "--host", "sim"])
        .args(["--trials", "10", "--out", out.to_str().unwrap()])
        // Over HTTP the demo server is not the embedded one the write gate exempts.
        .arg("--allow-writes")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("mcpeval runs")
}

/// (task, turn) → verdict of the `scope = turn` rows of a run's comparison.csv.
fn turn_verdicts(dir: &Path) -> BTreeMap<(String, u32), String> {
    let text = std::fs::read_to_string(dir.join("comparison.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (task, scope, turn, verdict) = (col("task_id"), col("scope"), col("turn"), col("verdict"));
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[scope] == "turn")
        .map(|f| {
            (
                (f[task].to_owned(), f[turn].parse().unwrap()),
                f[verdict].to_owned(),
            )
        })
        .collect()
}

fn user_messages(t: &Transcript) -> Vec<String> {
    (t.messages.iter())
        .filter_map(|m| match m {
            Message::User { content } => Some(content.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_report_says_which_turn_of_a_conversation_regressed() {
    let dir = temp_dir();
    let out = run_conversations(
        "demo:1.4.0",
        "demo:1.5.0",
        &repo_path("tasks/conversations/tracker.yaml"),
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let verdicts = turn_verdicts(dir.path());
    let v = |task: &str, turn: u32| verdicts[&(task.to_owned(), turn)].as_str();
    // 1.5.0's find_issues takes the search turns; the turns around them keep passing.
    assert_eq!(v("find-then-close-first", 1), "regression");
    assert_ne!(v("find-then-close-first", 2), "regression");
    assert_eq!(v("show-then-search-crashes", 2), "regression");
    assert_ne!(v("show-then-search-crashes", 1), "regression");
    assert!(!v("projects-then-create", 1).contains("regression"));
    let console = text(&out);
    assert!(
        console.contains("turns of find-then-close-first (sim): turn 1 10/10 → 0/10 regression"),
        "{console}"
    );
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(summary.contains("## Conversation turns"), "{summary}");
    assert!(summary.contains("turn 1: expected_calls"), "{summary}");

    // Every episode keeps its two user turns; each call its turn.
    let episodes: Vec<Episode> = episodes(dir.path());
    assert_eq!(episodes.len(), 60);
    for e in &episodes {
        assert_eq!(e.user_turns.len(), 2, "{}", e.task_id);
        for t in &e.user_turns {
            assert!(t.calls(&e.calls).iter().all(|c| c.user_turn == t.turn));
        }
        let turn_calls: u32 = e.user_turns.iter().map(|t| t.tool_calls).sum();
        assert_eq!(turn_calls, e.tool_calls);
    }
    // The after check of the whole conversation ran around it: issue 13 was created.
    let created = episodes
        .iter()
        .filter(|e| e.task_id == "projects-then-create");
    for e in created {
        assert!(
            e.grade
                .checks
                .iter()
                .any(|c| c.grader == "after" && c.passed),
            "{:?}",
            e.grade
        );
    }
    let calls = ParquetReader::new(File::open(dir.path().join("tool_calls.parquet")).unwrap())
        .finish()
        .unwrap();
    let turns = calls.column("user_turn").unwrap().u32().unwrap().clone();
    let second = turns.iter().filter(|t| *t == Some(2)).count();
    let expected = (episodes.iter().flat_map(|e| &e.calls))
        .filter(|c| c.user_turn == 2)
        .count();
    assert!(second > 0 && second == expected, "{second} vs {expected}");

    // Both sides of every pair were sent the same user messages.
    let text = std::fs::read_to_string(dir.path().join("transcripts.jsonl")).unwrap();
    let mut sent: BTreeMap<(String, u32), [Vec<String>; 2]> = BTreeMap::new();
    for line in text.lines() {
        let t: Transcript = serde_json::from_str(line).unwrap();
        let side = usize::from(t.side == Side::Candidate);
        sent.entry((t.task_id.clone(), t.trial)).or_default()[side] = user_messages(&t);
    }
    assert_eq!(sent.len(), 30);
    for (pair, [b, c]) in &sent {
        assert_eq!(b.len(), 2, "{pair:?}");
        assert_eq!(b, c, "{pair:?}");
    }

    // `compare` reads the turns back from the tables and gives the same turn rows.
    let again = mcpeval(&["compare", dir.path().to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(1), "{}", common::text(&again));
    assert_eq!(turn_verdicts(dir.path()), verdicts);
}

#[test]
fn a_conversation_over_http_names_its_regressed_turn() {
    let baseline = spawn_listening(
        &["demo-server", "--release", "1.4.0", "--http", "127.0.0.1:0"],
        true,
    );
    let candidate = spawn_listening(
        &["demo-server", "--release", "1.5.0", "--http", "127.0.0.1:0"],
        true,
    );
    // One read-only conversation: over HTTP both sides' trials share their server.
    let dir = temp_dir();
    let suite = dir.path().join("suite");
    std::fs::create_dir(&suite).unwrap();
    let tasks = std::fs::read_to_string(repo_path("tasks/conversations/tracker.yaml")).unwrap();
    let start = tasks.find("- id: show-then-search-crashes").unwrap();
    let end = tasks.find("- id: projects-then-create").unwrap();
    std::fs::write(suite.join("t.yaml"), &tasks[start..end]).unwrap();
    let run = dir.path().join("run");
    let out = run_conversations(
        &format!("http://{}/mcp", baseline.addr),
        &format!("http://{}/mcp", candidate.addr),
        &suite,
        &run,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let verdicts = turn_verdicts(&run);
    assert_eq!(verdicts.len(), 2, "{verdicts:?}");
    assert_eq!(
        verdicts[&("show-then-search-crashes".into(), 2)],
        "regression"
    );
    assert_ne!(
        verdicts[&("show-then-search-crashes".into(), 1)],
        "regression"
    );
}

#[test]
fn a_simulated_user_carries_a_vague_request_to_its_goal_and_differing_turns_are_counted() {
    let dir = temp_dir();
    let suite = repo_path("tasks/conversations/simulated_user.yaml");
    let out = run_conversations("demo:1.4.0", "demo:1.5.0", &suite, dir.path());
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let episodes = episodes(dir.path());
    let show = episodes
        .iter()
        .filter(|e| e.task_id == "vague-then-show-issue");
    for e in show {
        // Completed on both releases, in two user turns: the vague one and the goal.
        assert!(e.success, "{:?}", e.grade);
        assert_eq!(e.user_turns.len(), 2);
        assert_eq!(e.user_turns[1].message, "Show me issue 3");
    }
    // find_issues takes most of 1.5.0's searches, so its user asks again, up to max_turns.
    let login = |side: Side| -> Vec<usize> {
        (episodes.iter())
            .filter(|e| e.task_id == "vague-then-find-login" && e.side == side)
            .map(|e| e.user_turns.len())
            .collect()
    };
    assert!(login(Side::Baseline).iter().all(|n| *n == 2));
    assert!(login(Side::Candidate).iter().all(|n| (2..=3).contains(n)));
    assert!(login(Side::Candidate).contains(&3));
    // The user turns that differ between the two conversations of each pair, counted here.
    let (mut differing, mut compared) = (0, 0);
    for b in episodes.iter().filter(|e| e.side == Side::Baseline) {
        let c = (episodes.iter())
            .find(|c| c.side == Side::Candidate && c.task_id == b.task_id && c.trial == b.trial)
            .unwrap();
        let longer = b.user_turns.len().max(c.user_turns.len());
        let same = (b.user_turns.iter().zip(&c.user_turns))
            .filter(|(x, y)| x.message == y.message)
            .count();
        (differing, compared) = (differing + longer - same, compared + longer);
    }
    assert!(differing > 0);
    let console = text(&out);
    let line = format!(
        "Simulated users: {differing} of {compared} user turn(s) differed between the sides"
    );
    assert!(console.contains(&line), "{line}\n{console}");

    // Replayed: the candidate's user sends the baseline's messages first, then its own.
    let replayed = dir.path().join("replayed");
    let out = Command::new(bin())
        .args([
            "run",
            "--baseline",
            "demo:1.4.0",
            "--candidate",
            "demo:1.5.0",
        ])
        .args([
            "--suite",
            suite.to_str().unwrap(),
            "--host",
            "sim",
            "--trials",
            "4",
        ])
        .args(["--replay-user-turns", "--out", replayed.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let episodes = common::episodes(&replayed);
    let of = |side: Side, trial: u32| {
        (episodes.iter())
            .find(|e| e.task_id == "vague-then-find-login" && e.side == side && e.trial == trial)
            .unwrap()
    };
    let mut written = 0;
    for trial in 0..4 {
        let (b, c) = (of(Side::Baseline, trial), of(Side::Candidate, trial));
        let by: Vec<String> = (c.user_turns.iter())
            .map(|t| {
                serde_json::to_value(t.by)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        let expected = ["script", "replay", "user"];
        assert_eq!(by, expected[..c.user_turns.len()], "trial {trial}");
        assert_eq!(c.user_turns[1].message, b.user_turns[1].message);
        written += usize::from(c.user_turns.len() == 3);
    }
    let said = format!("{written} were written by the user host beyond the baseline's recorded");
    assert!(text(&out).contains(&said), "{said}\n{}", text(&out));
}

#[test]
fn a_malformed_simulated_user_is_refused_before_any_trial() {
    let dir = temp_dir();
    let suite = dir.path().join("suite");
    std::fs::create_dir(&suite).unwrap();
    std::fs::write(
        suite.join("t.yaml"),
        "- id: vague\n  prompt: Hi\n  user: {goal: Show me issue 3}\n  \
         expect: {calls: [{tool: get_issue}]}\n",
    )
    .unwrap();
    let run = dir.path().join("run");
    let out = run_conversations("demo:1.4.0", "demo:1.5.0", &suite, &run);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("t.yaml:3:9: `user` has no `host`"), "{said}");
    assert!(
        said.contains("`host`, `persona`, `goal`, `max_turns`, `done_when`"),
        "{said}"
    );
    assert!(!run.join("episodes.jsonl").exists(), "no trial ran");
}
