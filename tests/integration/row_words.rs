//! Words for every way a row ends, through the binary: `mcpeval check` on the demo (adaptive)
//! says "futile" where the rule stopped a task as futile, never "too few trials", and its
//! verdict table fits 120 columns; a task that never passed on either side says so and is
//! advised no trials; an incomplete run counts the trials it planned per kind of task.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;

/// The widest line the console's verdict table may have, in characters.
const WIDTH: usize = 120;

/// `s` without ANSI escape sequences (`ESC [ … letter`).
fn plain(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// The console's verdict table: from its header (`task  host …`) to the outcome line.
fn verdict_table(stdout: &str) -> Vec<String> {
    let lines: Vec<String> = plain(stdout).lines().map(str::to_owned).collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("task ") && l.contains("verdict"))
        .unwrap_or_else(|| panic!("no verdict table in\n{stdout}"));
    let end = (lines.iter().skip(start))
        .position(|l| l.contains("REGRESSION") || l.starts_with("INFRASTRUCTURE FAILURE"))
        .map(|n| start + n)
        .unwrap_or_else(|| panic!("no outcome line in\n{stdout}"));
    lines[start..=end].to_vec()
}

/// The success rows of `comparison.csv`: task → (verdict, stopped, trials_needed).
fn success_rows(dir: &Path) -> BTreeMap<String, (String, String, String)> {
    let text = std::fs::read_to_string(dir.join("comparison.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (task, metric, scope) = (at("task_id"), at("metric"), at("scope"));
    let (verdict, stopped, needed) = (at("verdict"), at("stopped"), at("trials_needed"));
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[scope] == "task" && f[metric] == "success")
        .map(|f| {
            let field = |i: usize| f[i].to_owned();
            (field(task), (field(verdict), field(stopped), field(needed)))
        })
        .collect()
}

fn line_of<'a>(table: &'a [String], task: &str) -> &'a str {
    table
        .iter()
        .find(|l| l.starts_with(&format!("{task} ")))
        .unwrap_or_else(|| panic!("no line of {task} in\n{}", table.join("\n")))
}

#[test]
fn check_on_the_demo_says_futile_where_the_rule_stopped_and_fits_120_columns() {
    let dir = temp_dir();
    let out_dir = dir.path().join("check");
    let out = mcpeval(&["check", "--out", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // check's own console shows no nested verdict table (issue 36, item 5): the evaluation's
    // table is the one `mcpeval compare` prints from its directory.
    let evaluation = out_dir.join("evaluation");
    let compared = mcpeval(&["compare", evaluation.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&compared.stdout);
    let table = verdict_table(&stdout);
    for l in &table {
        let n = l.chars().count();
        assert!(n <= WIDTH, "{n} characters: {l}\n{}", table.join("\n"));
    }
    let rows = success_rows(&evaluation);
    let futile: Vec<&String> = (rows.iter())
        .filter(|(_, (_, stopped, _))| stopped == "futility")
        .map(|(task, _)| task)
        .collect();
    assert!(!futile.is_empty(), "no task stopped as futile: {rows:?}");
    let summary = std::fs::read_to_string(evaluation.join("summary.md")).unwrap();
    let junit = std::fs::read_to_string(evaluation.join("junit.xml")).unwrap();
    for task in &futile {
        let line = line_of(&table, task);
        assert!(line.ends_with("inconclusive: futile at 10"), "{line}");
        assert!(!line.contains("too few trials"), "{line}");
        // summary.md's row of the task: the full words, and no trials advised.
        let row = (summary.lines())
            .find(|l| l.starts_with(&format!("| `{task}` ")))
            .unwrap_or_else(|| panic!("no row of {task} in summary.md"));
        assert!(
            row.contains(
                "no sign of a regression; stopped at 10 trials, where more would very \
                 unlikely show one"
            ),
            "{row}"
        );
        assert!(!row.contains("too few trials"), "{row}");
        assert!(row.ends_with("| – |"), "{row}");
    }
    // junit.xml carries the same words as summary.md.
    assert!(
        junit.contains(
            "verdict: inconclusive (success): no sign of a regression; stopped at 10 trials"
        ),
        "{junit}"
    );
    // The count of inconclusive rows names the futile ones, and advises no trials for them.
    assert!(
        summary.contains(&format!("({} stopped as futile", futile.len())),
        "{summary}"
    );
}

const NEVER: &str = "\
- id: never-passes
  prompt: Which projects are in the tracker?
  set: regression
  expect:
    calls:
      - tool: list_projects
    answer_contains: ['an answer no model gives 8c1f']
- id: lists-projects
  prompt: Which projects are in the tracker?
  set: regression
  expect:
    calls:
      - tool: list_projects
- id: call-never-passes
  kind: call
  call: {tool: list_projects}
  expect: {is_error: true}
";

#[test]
fn a_task_that_never_passed_on_either_side_says_so_and_is_advised_no_trials() {
    let dir = temp_dir();
    let suite = dir.path().join("never.yaml");
    std::fs::write(&suite, NEVER).unwrap();
    let run = dir.path().join("run");
    let out = mcpeval(&[
        "run",
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        "demo:1.5.0",
        "--host",
        "sim",
        "--suite",
        suite.to_str().unwrap(),
        "--trials",
        "10",
        "--out",
        run.to_str().unwrap(),
    ]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let table = verdict_table(&stdout);
    assert!(
        line_of(&table, "never-passes").contains("0/10 → 0/10"),
        "{stdout}"
    );
    assert!(
        line_of(&table, "never-passes").ends_with(": never passed on either side"),
        "{stdout}"
    );
    assert!(
        line_of(&table, "call-never-passes").ends_with(": never passed on either side"),
        "{stdout}"
    );
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    let row = (summary.lines())
        .find(|l| l.starts_with("| `never-passes` "))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(
        row.contains("never passed on either side: check the task or the host"),
        "{row}"
    );
    assert!(!row.contains("too few trials"), "{row}");
    assert!(row.ends_with("| – |"), "no trials to advise: {row}");
    let call = (summary.lines())
        .find(|l| l.starts_with("| `call-never-passes` "))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(
        call.contains("never passed on either side: check the task or the servers"),
        "{call}"
    );
    // The task that passed everywhere in this fixed run: more trials can tell, and are
    // advised (as many as its row's `trials_needed`), for it alone.
    let rows = success_rows(&run);
    let (_, _, needed) = &rows["lists-projects"];
    let passing = (summary.lines())
        .find(|l| l.starts_with("| `lists-projects` "))
        .unwrap();
    assert!(passing.contains("too few trials to tell"), "{passing}");
    assert!(passing.ends_with(&format!("| {needed} |")), "{passing}");
    assert!(
        summary.contains("1 where a side never passed, 1 with too few trials to tell"),
        "{summary}"
    );
    assert!(
        summary.contains("Telling the 1 with too few trials apart needs up to"),
        "{summary}"
    );
    let junit = std::fs::read_to_string(run.join("junit.xml")).unwrap();
    assert!(
        junit.contains("never passed on either side: check the task or the host"),
        "{junit}"
    );
}

/// A port on 127.0.0.1 with nothing listening (bound, then released).
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

#[test]
fn an_incomplete_run_counts_the_trials_it_planned_per_kind_of_task() {
    let dir = temp_dir();
    let calls = dir.path().join("calls.yaml");
    std::fs::write(
        &calls,
        "- id: list\n  kind: call\n  call: {tool: list_projects}\n  expect: {is_error: false}\n\
         - id: list-thrice\n  kind: call\n  trials: 3\n  call: {tool: list_projects}\n  \
         expect: {is_error: false}\n",
    )
    .unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.5.0\"\nsuites = [\"tasks/demo\", \
             \"{}\"]\nhosts = [\"openai:sim\"]\nseed = 42\n",
            calls.display()
        ),
    )
    .unwrap();
    let run = dir.path().join("run");
    // The model host's endpoint refuses connections: its host is stopped, the call tasks run.
    let out = std::process::Command::new(bin())
        .args(["run", "--config", config.to_str().unwrap()])
        .args(["--out", run.to_str().unwrap(), "--trials", "3"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OPENAI_BASE_URL", format!("http://{}/v1", closed_port()))
        .env_remove("OPENAI_API_KEY")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(summary.starts_with("# mcpeval: incomplete"), "{summary}");
    // 18 model tasks × 1 host × 3 trials, plus 1 + 3 call-task trials: 58 per side.
    assert!(
        summary.contains(
            "of the 58 per side planned (18 model task(s) × 1 host(s) × 3 trials + 2 call \
             task(s), 4 trials in all)"
        ),
        "{summary}"
    );
}
