//! `mcpeval compare` on synthetic run directories: summary.md and junit.xml snapshots, exit codes,
//! `--against`, the corrections' adjusted p-values, GITHUB_STEP_SUMMARY, and `mcpeval plan`.

use crate::common;
use crate::synthetic;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};

use common::{bin, temp_dir, text};
use mcpeval::config::StatsConfig;
use mcpeval::episode::{Episode, Side};
use mcpeval::suite::{TaskKind, TaskSet};
use synthetic::{fail, infra, run_info, set_calls, set_tokens, trials, write_run, TaskDef};

const RUN_ID: &str = "20261130T000000Z-fixed0";
const TRIALS: u32 = 10;

/// `mcpeval ARGS` from the repository root, with no GITHUB_STEP_SUMMARY from the environment.
fn mcpeval(args: &[&str]) -> Output {
    command(args).output().expect("mcpeval runs")
}

fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("OPENAI_API_KEY");
    cmd
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

fn task(id: &str, kind: TaskKind, set: TaskSet) -> TaskDef {
    TaskDef::new(id, kind, set)
}

/// Six tasks, every kind and set; their candidates' fates are set by [`regression_episodes`].
fn tasks() -> Vec<TaskDef> {
    use TaskKind::{NoTool, Tool};
    use TaskSet::{Capability, Regression};
    vec![
        task("search_by_project", Tool, Regression),
        task("create_issue", Tool, Regression),
        task("explain_priorities", NoTool, Regression),
        task("summarize_backlog", Tool, Capability),
        task("list_open", Tool, Regression),
        task("say_hello", NoTool, Capability),
    ]
}

/// Both sides with the same fixed values: every task unchanged.
fn unchanged_episodes(run_id: &str) -> Vec<Episode> {
    let mut all = Vec::new();
    for t in tasks() {
        for side in Side::BOTH {
            all.extend(trials(run_id, &t, side, TRIALS));
        }
    }
    all
}

fn side_of<'a>(
    eps: &'a mut [Episode],
    task: &'a str,
    side: Side,
) -> impl Iterator<Item = &'a mut Episode> {
    eps.iter_mut()
        .filter(move |e| e.task_id == task && e.side == side)
}

/// The run under test:
/// - `search_by_project` (regression set) goes 10/10 → 0/10: the candidate calls `find_issues`;
/// - `create_issue` goes 10/10 → 8/10: it broke, too few trials to call it a regression;
/// - `explain_priorities` (no tool) calls a tool in 3 candidate trials;
/// - `summarize_backlog` doubles its tokens (a count regression), 7/10 on both sides;
/// - `list_open` loses one trial per side to infrastructure errors (2 of 120, under 10 %);
/// - `say_hello` is unchanged.
///
/// Candidate latencies shift by a different amount per task so that the p-values of one family
/// differ (what the correction checks need).
fn regression_episodes(run_id: &str) -> Vec<Episode> {
    let mut eps = unchanged_episodes(run_id);
    for e in side_of(&mut eps, "search_by_project", Side::Candidate) {
        set_calls(e, &["find_issues"]);
        fail(
            e,
            "expected_calls",
            "expected `search_issues` with project=apollo, got `find_issues`",
        );
    }
    for side in Side::BOTH {
        for e in side_of(&mut eps, "create_issue", side) {
            set_calls(e, &["create_issue"]);
        }
    }
    for e in
        side_of(&mut eps, "create_issue", Side::Candidate).filter(|e| [3, 7].contains(&e.trial))
    {
        fail(
            e,
            "expected_calls",
            "expected `create_issue` with project=apollo, got `create_issue` with project=Apollo",
        );
    }
    for e in side_of(&mut eps, "explain_priorities", Side::Candidate)
        .filter(|e| [1, 4, 8].contains(&e.trial))
    {
        set_calls(e, &["search_issues"]);
        set_tokens(e, e.input_tokens + 900, e.output_tokens);
        fail(e, "no_tool", "expected no tool call, got `search_issues`");
    }
    for side in Side::BOTH {
        for e in side_of(&mut eps, "summarize_backlog", side) {
            set_calls(e, &["search_issues", "search_issues"]);
            if side == Side::Candidate {
                set_tokens(e, 2 * e.input_tokens, 2 * e.output_tokens);
            }
            if [2, 5, 9].contains(&e.trial) {
                fail(
                    e,
                    "answer_contains",
                    "expected the answer to mention `APL-12`, it did not",
                );
            }
        }
    }
    for (side, trial) in [(Side::Baseline, 6), (Side::Candidate, 3)] {
        for e in side_of(&mut eps, "list_open", side).filter(|e| e.trial == trial) {
            infra(
                e,
                "server `demo:1.5.0` exited before answering `initialize` (exit status 1)",
            );
        }
    }
    let shifts = [
        ("search_by_project", 0.0),
        ("create_issue", 40.0),
        ("explain_priorities", 90.0),
        ("summarize_backlog", 700.0),
        ("list_open", 160.0),
        ("say_hello", 250.0),
    ];
    for (task, shift) in shifts {
        for e in side_of(&mut eps, task, Side::Candidate) {
            e.latency_ms += shift;
        }
    }
    eps
}

/// Writes a run of `episodes` under `dir/name` and returns its directory.
fn write(dir: &Path, name: &str, run_id: &str, episodes: &[Episode]) -> std::path::PathBuf {
    let run = dir.join(name);
    let info = run_info(run_id, TRIALS, &StatsConfig::default(), episodes);
    write_run(&run, &info, episodes);
    run
}

/// The `<testcase …>…</testcase>` elements of a JUnit report, by task name.
fn testcases(junit: &str) -> HashMap<String, String> {
    junit
        .split("<testcase ")
        .skip(1)
        .map(|case| {
            let name = case
                .split(" name=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .expect("testcase has a name");
            let body = case.split("</testcase>").next().unwrap();
            (name.to_owned(), body.to_owned())
        })
        .collect()
}

#[test]
fn regression_run_reports_are_stable_and_exit_1() {
    let tmp = temp_dir();
    let run = write(tmp.path(), "run", RUN_ID, &regression_episodes(RUN_ID));
    let out = mcpeval(&["compare", path(&run)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));

    let summary = read(&run.join("summary.md"));
    let junit = read(&run.join("junit.xml"));
    // The run's host is the simulated model: said in the title (issue 36).
    assert!(
        summary.starts_with("# mcpeval: regression (simulated model)\n"),
        "{summary}"
    );
    assert!(
        summary.contains(
            "expected_calls: expected `search_issues` with project=apollo, got `find_issues`"
        ),
        "{summary}"
    );
    let broke = summary
        .split("## Regression-set tasks that broke")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("a section for the regression-set tasks that broke");
    assert!(
        broke.contains("- `create_issue` · `sim`: 10/10 → 8/10 (success verdict: inconclusive)"),
        "{broke}"
    );
    assert!(
        broke.contains("`search_by_project` · `sim`: 10/10 → 0/10 (success verdict: regression)"),
        "{broke}"
    );
    assert!(
        !summary.contains("### `create_issue`"),
        "8/10 is not a regression verdict"
    );
    assert!(
        summary.contains("### `summarize_backlog` · `sim`"),
        "the token regression: {summary}"
    );

    // One testcase per task × host and one for the host's suite rows; the regressed tasks, and
    // only they, fail, and the suite fails when a gated suite row regressed.
    assert_eq!(junit.matches("<testcase ").count(), tasks().len() + 1);
    let cases = testcases(&junit);
    for t in tasks() {
        let failed = cases[&t.id].contains("<failure");
        let expected = matches!(t.id.as_str(), "search_by_project" | "summarize_backlog");
        assert_eq!(failed, expected, "{}: {}", t.id, cases[&t.id]);
    }
    let rows = synthetic::read_csv(&run.join("comparison.csv"));
    let suite_regressed = rows
        .iter()
        .any(|r| r["task_id"] == "*" && r["gated"] == "true" && r["verdict"] == "regression");
    assert_eq!(
        cases["suite"].contains("<failure"),
        suite_regressed,
        "{}",
        cases["suite"]
    );
    assert!(cases["search_by_project"].contains("find_issues"));

    // Recomputing from the same files gives the same bytes.
    let again = tmp.path().join("again");
    let out = mcpeval(&["compare", path(&run), "--out", path(&again)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(
        read(&again.join("summary.md")),
        summary,
        "summary.md is not deterministic"
    );
    assert_eq!(
        read(&again.join("junit.xml")),
        junit,
        "junit.xml is not deterministic"
    );

    insta::assert_snapshot!("regression_summary_md", summary);
    insta::assert_snapshot!("regression_junit_xml", junit);
}

#[test]
fn summary_is_appended_to_the_github_step_summary() {
    let tmp = temp_dir();
    let run = write(tmp.path(), "run", RUN_ID, &regression_episodes(RUN_ID));
    let step_summary = tmp.path().join("step_summary.md");
    std::fs::write(&step_summary, "## an earlier step\n").unwrap();
    let out = command(&["compare", path(&run)])
        .env("GITHUB_STEP_SUMMARY", &step_summary)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let summary = read(&run.join("summary.md"));
    let appended = read(&step_summary);
    let rest = appended
        .strip_prefix("## an earlier step\n")
        .expect("the earlier content stays first");
    assert_eq!(rest.trim_end(), summary.trim_end());
}

#[test]
fn unchanged_run_passes() {
    let tmp = temp_dir();
    let run = write(tmp.path(), "run", RUN_ID, &unchanged_episodes(RUN_ID));
    let out = mcpeval(&["compare", path(&run)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let summary = read(&run.join("summary.md"));
    assert!(summary.starts_with("# mcpeval: no regression"), "{summary}");
    let junit = read(&run.join("junit.xml"));
    assert!(!junit.contains("<failure"), "{junit}");
}

#[test]
fn too_many_infra_errors_exit_3() {
    let tmp = temp_dir();
    let mut eps = unchanged_episodes(RUN_ID);
    // 13 of 120 episodes (10.8 %), above the default limit of 10 %.
    for (task, lost) in [("list_open", 0..7), ("say_hello", 0..6)] {
        for e in side_of(&mut eps, task, Side::Candidate).filter(|e| lost.contains(&e.trial)) {
            infra(e, "provider returned HTTP 503");
        }
    }
    let run = write(tmp.path(), "run", RUN_ID, &eps);
    let out = mcpeval(&["compare", path(&run)]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let summary = read(&run.join("summary.md"));
    assert!(
        summary.starts_with("# mcpeval: infrastructure failure"),
        "{summary}"
    );
    assert!(summary.contains("13 of 120 episodes (10.8 %)"), "{summary}");
}

/// The rows of `comparison.csv` for one task × metric.
fn csv_row(rows: &[HashMap<String, String>], task: &str, metric: &str) -> HashMap<String, String> {
    rows.iter()
        .find(|r| r["task_id"] == task && r["metric"] == metric && r["host"] == synthetic::HOST)
        .unwrap_or_else(|| panic!("no row {task} {metric}"))
        .clone()
}

fn number(row: &HashMap<String, String>, column: &str) -> f64 {
    row[column]
        .parse()
        .unwrap_or_else(|_| panic!("{column} = `{}` is not a number", row[column]))
}

#[test]
fn against_takes_the_baseline_of_the_other_run() {
    const A: &str = "20261129T000000Z-runa0";
    const B: &str = "20261130T000000Z-runb0";
    let tmp = temp_dir();
    let list_open = task("list_open", TaskKind::Tool, TaskSet::Regression);
    // A: a good baseline, 10 trials, 10/10, about 1 900 tokens.
    let mut a = trials(A, &list_open, Side::Baseline, 10);
    a.extend(trials(A, &list_open, Side::Candidate, 10));
    // B: 8 trials; its own baseline is bad (4/8, three times the tokens), its candidate good.
    let mut b = trials(B, &list_open, Side::Baseline, 8);
    for e in &mut b {
        set_tokens(e, 3 * e.input_tokens, 3 * e.output_tokens);
        if e.trial % 2 == 0 {
            fail(e, "expected_calls", "expected `search_issues`, got no call");
        }
    }
    b.extend(trials(B, &list_open, Side::Candidate, 8));
    let (run_a, run_b) = (tmp.path().join("a"), tmp.path().join("b"));
    write_run(&run_a, &run_info(A, 10, &StatsConfig::default(), &a), &a);
    write_run(&run_b, &run_info(B, 8, &StatsConfig::default(), &b), &b);

    let out = mcpeval(&["compare", path(&run_b), "--against", path(&run_a)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_b.join(format!("against-{A}"));
    assert!(
        !run_b.join("summary.md").exists(),
        "reports go to the against- folder"
    );
    let summary = read(&dir.join("summary.md"));
    assert!(
        summary.contains(&format!("| baseline run | `{A}` (compare --against) |")),
        "{summary}"
    );

    let rows = synthetic::read_csv(&dir.join("comparison.csv"));
    let success = csv_row(&rows, "list_open", "success");
    assert_eq!(
        number(&success, "n_baseline"),
        10.0,
        "A's baseline has 10 trials"
    );
    assert_eq!(number(&success, "n_candidate"), 8.0, "B's candidate has 8");
    assert_eq!(
        number(&success, "baseline_mean"),
        1.0,
        "A's baseline passed every trial"
    );
    let a_tokens = a[..10].iter().map(|e| e.total_tokens as f64).sum::<f64>() / 10.0;
    let tokens = csv_row(&rows, "list_open", "total_tokens");
    assert!(
        (number(&tokens, "baseline_mean") - a_tokens).abs() < 1e-9,
        "{tokens:?}"
    );

    // Without --against, B's own baseline is used.
    let out = mcpeval(&["compare", path(&run_b)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let own = synthetic::read_csv(&run_b.join("comparison.csv"));
    let success = csv_row(&own, "list_open", "success");
    assert_eq!(number(&success, "n_baseline"), 8.0);
    assert_eq!(number(&success, "baseline_mean"), 0.5);
}

/// Holm's step-down adjustment, from its definition: the i-th smallest of m p-values (1-based)
/// becomes max over j ≤ i of (m − j + 1) p_(j), capped at 1.
fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut out = vec![0.0; m];
    let mut running = 0.0f64;
    for (j, &i) in order.iter().enumerate() {
        running = running.max((m - j) as f64 * p[i]);
        out[i] = running.min(1.0);
    }
    out
}

/// Benjamini–Hochberg's step-up adjustment, from its definition: the i-th smallest of m
/// p-values becomes min over j ≥ i of m p_(j) / j, capped at 1.
fn bh(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut out = vec![0.0; m];
    for (rank, &i) in order.iter().enumerate() {
        let best = order[rank..]
            .iter()
            .enumerate()
            .map(|(k, &j)| m as f64 * p[j] / (rank + k + 1) as f64)
            .fold(f64::INFINITY, f64::min);
        out[i] = best.min(1.0);
    }
    out
}

/// Checks that every family's `p_adjusted` is `adjust` of its `p_value`s: the task rows of one
/// metric, and the gated and the other suite rows (the families `verdict.rs` documents).
/// Returns how many families had p-values that differ among themselves.
fn check_families(
    rows: &[HashMap<String, String>],
    adjust: fn(&[f64]) -> Vec<f64>,
    name: &str,
) -> usize {
    let mut families: HashMap<(String, String), Vec<&HashMap<String, String>>> = HashMap::new();
    for r in rows.iter().filter(|r| !r["p_value"].is_empty()) {
        let key = if r["task_id"] == "*" {
            ("suite".to_owned(), r["gated"].clone())
        } else {
            ("tasks".to_owned(), r["metric"].clone())
        };
        families.entry(key).or_default().push(r);
    }
    let mut varied = 0;
    for (key, members) in &families {
        let p: Vec<f64> = members.iter().map(|r| number(r, "p_value")).collect();
        let expected = adjust(&p);
        for (r, e) in members.iter().zip(&expected) {
            let got = number(r, "p_adjusted");
            assert!(
                (got - e).abs() <= 1e-12 * e.max(1e-300),
                "{name} {key:?} {} {}: p_adjusted {got}, expected {e} from p {p:?}",
                r["task_id"],
                r["metric"]
            );
        }
        if p.iter().any(|v| *v != p[0]) {
            varied += 1;
        }
    }
    varied
}

#[test]
fn adjusted_p_values_follow_holm_and_bh() {
    let tmp = temp_dir();
    let run = write(tmp.path(), "run", RUN_ID, &regression_episodes(RUN_ID));
    let (holm_dir, bh_dir) = (tmp.path().join("holm"), tmp.path().join("bh"));
    let out = mcpeval(&["compare", path(&run), "--out", path(&holm_dir)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let out = mcpeval(&[
        "compare",
        path(&run),
        "--correction",
        "bh",
        "--out",
        path(&bh_dir),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));

    let holm_rows = synthetic::read_csv(&holm_dir.join("comparison.csv"));
    let bh_rows = synthetic::read_csv(&bh_dir.join("comparison.csv"));
    assert!(check_families(&holm_rows, holm, "holm") >= 3);
    assert!(check_families(&bh_rows, bh, "bh") >= 3);

    // The latency family: six different p-values, where the two corrections part.
    let latency = |rows: &[HashMap<String, String>]| -> Vec<f64> {
        rows.iter()
            .filter(|r| r["metric"] == "latency_ms" && r["task_id"] != "*")
            .map(|r| number(r, "p_adjusted"))
            .collect()
    };
    let (h, b) = (latency(&holm_rows), latency(&bh_rows));
    assert_eq!(h.len(), 6);
    assert!(
        h.iter().zip(&b).any(|(h, b)| b < h),
        "BH is never stricter than Holm: {h:?} {b:?}"
    );
    let summary = read(&bh_dir.join("summary.md"));
    assert!(summary.contains("bh within each"), "{summary}");
}

#[test]
fn an_empty_directory_is_unreadable_input() {
    let tmp = temp_dir();
    let out = mcpeval(&["compare", path(tmp.path())]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("run.json"),
        "{}",
        text(&out)
    );
}

#[test]
fn plan_prints_the_exact_fisher_trials() {
    let out = mcpeval(&["plan", "--baseline-rate", "0.95", "--drop", "0.10"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.lines().any(|l| l == "trials per side: 151"),
        "{stdout}"
    );

    let out = mcpeval(&["plan", "--baseline-rate", "0.95", "--drop", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--drop"),
        "{}",
        text(&out)
    );
}
