//! Verdicts end to end through the real binary: the demo's 1.5.0 changes regress (exit 1), an A/A
//! run of one server against itself does not (exit 0), and `compare` recomputes the same table.

mod common;

use std::path::Path;

use common::*;
use polars::prelude::*;

fn comparison(dir: &Path) -> DataFrame {
    CsvReadOptions::default()
        .with_has_header(true)
        .try_into_reader_with_file_path(Some(dir.join("comparison.csv")))
        .unwrap()
        .finish()
        .unwrap()
}

/// (task, metric) of every gated row with a regression verdict.
fn gated_regressions(df: &DataFrame) -> Vec<(String, String)> {
    let task = df.column("task_id").unwrap().str().unwrap();
    let metric = df.column("metric").unwrap().str().unwrap();
    let verdict = df.column("verdict").unwrap().str().unwrap();
    let gated = df.column("gated").unwrap().bool().unwrap();
    (0..df.height())
        .filter(|&i| verdict.get(i) == Some("regression") && gated.get(i) == Some(true))
        .map(|i| {
            (
                task.get(i).unwrap().to_owned(),
                metric.get(i).unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_demo_changes_regress_and_compare_recomputes_the_same_verdicts() {
    let dir = temp_dir();
    let out = mcpeval(&["run", "--out", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("REGRESSION"), "{stdout}");
    assert!(
        !stdout.contains("\u{1b}["),
        "no colour codes when stdout is a pipe"
    );

    let df = comparison(dir.path());
    let expected = [
        "task_id",
        "host",
        "metric",
        "n_baseline",
        "n_candidate",
        "baseline_mean",
        "candidate_mean",
        "delta",
        "ci_low",
        "ci_high",
        "test",
        "p_value",
        "p_adjusted",
        "verdict",
    ];
    let names: Vec<&str> = df.get_column_names().iter().map(|n| n.as_str()).collect();
    assert_eq!(&names[..expected.len()], expected);
    let regressions = gated_regressions(&df);
    // 1.5.0's overlapping `find_issues` steals the searches: 10/10 → 0/10 on the demo.
    assert!(
        regressions.contains(&("find-open-login-apollo".into(), "success".into())),
        "{regressions:?}"
    );
    assert!(
        regressions.contains(&("delete-issue-4".into(), "success".into())),
        "{regressions:?}"
    );
    let verdicts = df.column("verdict").unwrap().str().unwrap();
    assert!(verdicts.iter().all(|v| matches!(
        v,
        Some("regression" | "improvement" | "no_change" | "inconclusive")
    )));
    let tests = df.column("test").unwrap().str().unwrap();
    assert!(tests.iter().all(|t| matches!(
        t,
        Some("fisher_exact" | "mann_whitney_u" | "wilcoxon_signed_rank" | "none")
    )));

    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(summary.starts_with("# mcpeval: regression"), "{summary}");
    assert!(summary.contains("## Regressed tasks"));
    assert!(
        summary.contains("got `find_issues`"),
        "grade explanations are shown"
    );
    assert!(summary.contains("## What this run could detect"));
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert_eq!(
        junit.matches("<testcase ").count(),
        18,
        "one per task × host"
    );
    assert!(junit.matches("<failure ").count() >= 2);

    // The same episodes, compared again, give the same file and the same exit code.
    let before = std::fs::read_to_string(dir.path().join("comparison.csv")).unwrap();
    let again = mcpeval(&["compare", dir.path().to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    let after = std::fs::read_to_string(dir.path().join("comparison.csv")).unwrap();
    assert_eq!(before, after);

    // BH instead of Holm changes p_adjusted but keeps p_value.
    let bh = mcpeval(&[
        "compare",
        dir.path().to_str().unwrap(),
        "--correction",
        "bh",
    ]);
    assert!(matches!(bh.status.code(), Some(0 | 1)), "{}", text(&bh));
    let df_bh = comparison(dir.path());
    assert_eq!(
        df.column("p_value").unwrap(),
        df_bh.column("p_value").unwrap()
    );
    assert_ne!(
        df.column("p_adjusted").unwrap(),
        df_bh.column("p_adjusted").unwrap()
    );
}

#[test]
fn an_a_a_run_finds_no_regression() {
    let dir = temp_dir();
    let out = run_pair(
        "demo:1.5.0",
        "demo:1.5.0",
        dir.path(),
        &["--trials", "10", "--seed", "7", "--isolation", "run"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let df = comparison(dir.path());
    assert!(gated_regressions(&df).is_empty());
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(summary.starts_with("# mcpeval: no regression"), "{summary}");
}

#[test]
fn plan_prints_the_exact_trials_needed() {
    let out = mcpeval(&["plan", "--baseline-rate", "0.95", "--drop", "0.10"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("trials per side: 151"), "{stdout}");
    let bad = mcpeval(&["plan", "--baseline-rate", "1.5", "--drop", "0.10"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
}
