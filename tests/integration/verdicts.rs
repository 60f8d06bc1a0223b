//! Verdicts end to end through the real binary: the demo's 1.5.0 changes regress (exit 1), an A/A
//! run of one server against itself does not (exit 0), and `compare` recomputes the same table.

use crate::common;

use std::path::Path;

use common::*;
use polars_core::prelude::*;
use polars_io::prelude::*;

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
        Some("fisher_exact" | "mann_whitney_u" | "cmh" | "cmh_exact" | "van_elteren" | "none")
    )));
    // The whole suite's success row pools every trial of the 18 tasks (CMH over their tables):
    // the four collapsed tasks make it a regression on its own.
    let scope = df.column("scope").unwrap().str().unwrap();
    let test = df.column("test").unwrap().str().unwrap();
    let suite_success = (0..df.height())
        .find(|&i| {
            df.column("task_id").unwrap().str().unwrap().get(i) == Some("*")
                && scope.get(i) == Some("suite")
                && df.column("metric").unwrap().str().unwrap().get(i) == Some("success")
        })
        .expect("a whole-suite success row");
    assert_eq!(test.get(suite_success), Some("cmh"));
    assert!(
        regressions.contains(&("*".into(), "success".into())),
        "{regressions:?}"
    );
    let mde = df.column("mde").unwrap().f64().unwrap();
    assert!(
        mde.get(suite_success).is_some_and(|d| d > 0.0 && d < 0.2),
        "the suite row detects a drop of a few points: {:?}",
        mde.get(suite_success)
    );
    let scopes: Vec<&str> = scope.iter().flatten().collect();
    for s in [
        "task",
        "suite",
        "set:regression",
        "set:capability",
        "kind:tool",
        "kind:no-tool",
    ] {
        assert!(scopes.contains(&s), "no rows of scope {s}");
    }

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
        19,
        "one per task × host, and the host's suite"
    );
    assert!(junit.contains("name=\"suite\">\n      <failure"), "{junit}");
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
    let missing = mcpeval(&["plan", "--drop", "0.10"]);
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    assert!(
        text(&missing).contains("--baseline-rate"),
        "{}",
        text(&missing)
    );
}

/// `plan --suite` knows the suite's tasks and families: the demo suite's 18 tasks and 5 gated
/// families put a task at 0.01 / 18; at 5 trials no task can be flagged, at the recommended
/// trials one can, and the suite row sees far smaller drops than a task row.
#[test]
fn plan_for_a_suite_uses_its_levels_and_says_what_the_suite_rows_see() {
    let out = mcpeval(&["plan", "--suite", "tasks/demo", "--drop", "0.3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Suite: 18 tasks"), "{stdout}");
    assert!(stdout.contains("per-task level 5.56e-4"), "{stdout}");
    // Exact Fisher at 0.01/18: 1.0 → 0.7 needs more trials than at α = 0.05 (21, STATISTICS.md).
    let needed: u64 = stdout
        .split("from ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no trials figure in {stdout}"));
    assert!((22..=60).contains(&needed), "{needed}: {stdout}");
    // At 10 trials a task at 100 % must fall by 92 points (the demo's summary.md says so too).
    assert!(
        stdout.contains(
            "At the config's 10 trials per side: a single task at 100 % is flagged when it falls \
             by 92 points"
        ),
        "{stdout}"
    );

    // A run at 5 trials warns before it starts that no single task can be flagged.
    let dir = temp_dir();
    let run = mcpeval(&[
        "run",
        "--trials",
        "5",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: with 5 trials"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("suite rows can still flag"),
        "{stderr}"
    );

    // From that run: its baseline's rates and tokens per trial, priced by the config.
    let config = dir.path().join("priced.toml");
    std::fs::write(
        &config,
        "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.5.0\"\nsuites = [\"tasks/demo\"]\n\
         hosts = [\"sim\"]\n[prices.sim]\ninput = 1.0\noutput = 4.0\n",
    )
    .unwrap();
    let planned = mcpeval(&[
        "plan",
        "--suite",
        "tasks/demo",
        "--drop",
        "0.3",
        "--from",
        dir.path().to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(planned.status.code(), Some(0), "{}", text(&planned));
    let stdout = String::from_utf8_lossy(&planned.stdout);
    assert!(
        stdout.contains("the median task's baseline rate in the earlier run"),
        "{stdout}"
    );
    assert!(stdout.contains("Recommended run ("), "{stdout}");
    assert!(stdout.contains("estimated cost $"), "{stdout}");

    // At 10 trials there is no such warning.
    let dir = temp_dir();
    let run = mcpeval(&[
        "run",
        "--trials",
        "10",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(!String::from_utf8_lossy(&run.stderr).contains("no single task can be flagged"));
}
