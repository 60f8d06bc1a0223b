//! `mcpeval explain` (issue 50, item 1): on the demo 1.4.0 → 1.5.0 at 10 trials, seed 3, each
//! change of the diff undone alone gives what overlays over 1.5.0 give by hand (the instructions
//! explain `delete-issue-4`, `find_issues`' addition the three lookup tasks), a kept overlay rerun
//! by hand recovers its task, and a run with nothing to explain or no run at all says so.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::*;

/// (task, change label, tried) → (reverted successes of trials, verdict, together_with, reason).
type Rows = BTreeMap<(String, String, String), (String, String, String, String)>;

/// The success rows of `attribution.csv`, by task, change and how it was tried.
fn attribution(run: &Path) -> Rows {
    let text = std::fs::read_to_string(run.join("explain").join("attribution.csv")).unwrap();
    let mut lines = text.lines();
    let header = fields(lines.next().unwrap());
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    let mut rows = Rows::new();
    for line in lines {
        let r = fields(line);
        if r[at("metric")] != "success" {
            continue;
        }
        let change = match (&r[at("name")], r[at("path")].as_str()) {
            (name, "") => format!("{} {name}", &r[at("kind")]),
            (name, path) => format!("{} {name} {path}", &r[at("kind")]),
        };
        let reverted = match r[at("reverted")].as_str() {
            "" => "–".to_owned(),
            rate => {
                let n: f64 = r[at("reverted_trials")].parse().unwrap();
                format!("{}/{n}", (rate.parse::<f64>().unwrap() * n).round())
            }
        };
        let key = (
            r[at("task_id")].to_owned(),
            change,
            r[at("tried")].to_owned(),
        );
        let value = (
            reverted,
            r[at("verdict")].to_owned(),
            r[at("together_with")].to_owned(),
            r[at("reason")].to_owned(),
        );
        rows.insert(key, value);
    }
    rows
}

/// One line of a CSV file written by polars: fields split at commas outside double quotes.
fn fields(line: &str) -> Vec<String> {
    let (mut out, mut field, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    out.push(field);
    out
}

fn demo_run(dir: &Path, baseline: &str, candidate: &str, trials: &str) -> std::path::PathBuf {
    let run = dir.join("run");
    let out = run_pair(
        baseline,
        candidate,
        &run,
        &["--trials", trials, "--seed", "3"],
    );
    assert_verdict(&out);
    run
}

#[test]
fn the_demo_s_regressions_are_explained_by_the_changes_that_caused_them() {
    let dir = temp_dir();
    let run = demo_run(dir.path(), "demo:1.4.0", "demo:1.5.0", "10");
    let out = mcpeval(&["explain", run.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(
            "delete-issue-4: explained by instructions_changed (reverted 10/10 vs candidate 0/10"
        ),
        "{said}"
    );
    // The gated metrics only (latency and input tokens are not what the verdict stands on).
    assert!(
        said.contains("[also regressed: tool_calls, total_tokens: attribution.csv]"),
        "{said}"
    );
    let rows = attribution(&run);
    let row = |task: &str, change: &str| {
        let key = (task.to_owned(), change.to_owned(), "revert".to_owned());
        rows.get(&key)
            .unwrap_or_else(|| panic!("no row {key:?} in {rows:#?}"))
            .clone()
    };
    let lookups = [
        "find-open-login-apollo",
        "search-crash-zephyr",
        "search-then-open-invoice",
    ];
    // The old instructions: 10 / 10 / 6 / 7 of 10, each significant after Holm.
    let instructions = "instructions_changed instructions";
    for (task, recovered) in [("delete-issue-4", "10/10")]
        .into_iter()
        .chain(lookups.into_iter().zip(["10/10", "6/10", "7/10"]))
    {
        let (reverted, verdict, _, _) = row(task, instructions);
        assert_eq!(
            (reverted.as_str(), verdict.as_str()),
            (recovered, "explains")
        );
    }
    // find_issues hidden: 0 / 10 / 10 / 10; it explains the lookups, together with the
    // instructions (and, on apollo, search_issues' old description).
    let added = "tool_added find_issues";
    assert_eq!(row("delete-issue-4", added).1, "no_effect");
    for task in lookups {
        let (reverted, verdict, together, _) = row(task, added);
        assert_eq!((reverted.as_str(), verdict.as_str()), ("10/10", "explains"));
        assert!(together.contains("instructions_changed"), "{together}");
    }
    assert!(row("find-open-login-apollo", added)
        .2
        .contains("description_changed search_issues description"));
    // search_issues' old description: 7 of 10 on apollo; it does not explain the other two.
    let described = "description_changed search_issues description";
    assert_eq!(row("find-open-login-apollo", described).0, "7/10");
    assert_eq!(row("find-open-login-apollo", described).1, "explains");
    for task in ["search-crash-zephyr", "search-then-open-invoice"] {
        assert_eq!(row(task, described).1, "no_effect", "{task}");
    }
    // The old `query` description and the old destructiveHint recover nothing.
    let query = "description_changed search_issues inputSchema.properties.query.description";
    for task in lookups.into_iter().chain(["delete-issue-4"]) {
        assert_eq!(row(task, query).0, "0/10", "{task}");
        assert_eq!(row(task, query).1, "no_effect", "{task}");
    }
    let hint = "annotations_changed update_issue annotations.destructiveHint";
    assert_eq!(row("delete-issue-4", hint).1, "no_effect");
    for task in lookups {
        let key = (task.to_owned(), hint.to_owned(), "none".to_owned());
        let (_, verdict, _, reason) = &rows[&key];
        assert_eq!(verdict, "not_tried");
        assert_eq!(reason, "does not touch this task's tools");
    }
    let summary = std::fs::read_to_string(run.join("explain").join("summary.md")).unwrap();
    assert!(summary.contains("| search-crash-zephyr | sim | success | tool_added find_issues | revert | 10/10 | 0/10 | 10/10 |"), "{summary}");
    // The run's own reports say it too, and keep saying it when written again.
    let _ = mcpeval(&["compare", run.to_str().unwrap()]);
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert_eq!(summary.matches("## Why").count(), 1, "{summary}");
    assert!(
        summary.contains("- delete-issue-4: explained by instructions_changed"),
        "{summary}"
    );
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.contains("<section id=\"why\">") && html.contains("delete-issue-4: explained by"));
    rerun_a_kept_overlay(dir.path(), &run);
    // The tools' positions: 1.5.0's list reversed recovers none of the four (the default sim
    // follows the text); the units tried already are kept, only the reversed list runs.
    let out = mcpeval(&["explain", "--order", run.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(
            "Tool order: the candidate's list reversed recovered none of 4 task(s): their \
             regressions follow the tools' text, not their positions."
        ),
        "{said}"
    );
}

/// The overlay that hides `find_issues`, rerun by hand over 1.5.0: `search-crash-zephyr`
/// recovers on the candidate side.
fn rerun_a_kept_overlay(dir: &Path, run: &Path) {
    let overlays = run.join("explain").join("overlays");
    let file = std::fs::read_dir(&overlays)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("find_issues-tool_added"))
        .expect("the overlay of find_issues' addition");
    let again = dir.join("again");
    let candidate = format!("overlay:{}+demo:1.5.0", file.display());
    let suite = repo_path("tasks/demo/lookup.yaml").display().to_string();
    let out = mcpeval(&[
        "run",
        "--baseline",
        "demo:1.5.0",
        "--candidate",
        &candidate,
        "--host",
        "sim",
        "--suite",
        &suite,
        "--trials",
        "10",
        "--seed",
        "3",
        "--out",
        again.to_str().unwrap(),
    ]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let zephyr: Vec<bool> = episodes(&again)
        .iter()
        .filter(|e| e.task_id == "search-crash-zephyr")
        .filter(|e| e.side.as_str() == "candidate")
        .map(|e| e.success)
        .collect();
    assert_eq!(zephyr, vec![true; 10]);
}

#[test]
fn a_run_with_nothing_to_explain_says_so_and_no_run_is_a_usage_error() {
    let dir = temp_dir();
    let run = demo_run(dir.path(), "demo:1.4.0", "demo:1.4.0", "3");
    let out = mcpeval(&["explain", run.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("no regression in {}: nothing to explain", run.display())
    );
    assert!(!run.join("explain").exists());
    let nowhere = dir.path().join("not-a-run");
    std::fs::create_dir_all(&nowhere).unwrap();
    let out = mcpeval(&["explain", nowhere.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&nowhere.display().to_string()),
        "{}",
        text(&out)
    );
}

#[test]
fn a_regression_between_servers_with_no_model_affecting_change_is_not_the_release() {
    let dir = temp_dir();
    // The same release, its candidate denying every call: every tool task fails, and the two
    // servers list the same tools with the same words.
    let candidate = format!("{} demo-server --release 1.4.0 --deny-all", bin());
    let run = demo_run(dir.path(), "demo:1.4.0", &candidate, "10");
    let out = mcpeval(&["explain", run.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("has no change that affects models"), "{said}");
    assert!(run.join("explain/contract/diff.json").is_file());
}

#[test]
fn a_budget_tries_the_instructions_first_and_says_what_it_skipped() {
    let dir = temp_dir();
    let run = dir.path().join("run");
    let suite = repo_path("tasks/demo/lookup.yaml").display().to_string();
    let out = mcpeval(&[
        "run",
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        "demo:1.5.0",
        "--host",
        "sim",
        "--suite",
        &suite,
        "--trials",
        "10",
        "--seed",
        "3",
        "--out",
        run.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // Four regressed lookup tasks × 10 trials: the instructions fit, nothing after them does.
    let out = mcpeval(&["explain", run.to_str().unwrap(), "--budget", "50"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("40 trial(s) spent of a budget of 50"),
        "{said}"
    );
    let json: serde_json::Value = serde_json::from_slice(
        &std::fs::read(run.join("explain").join("attribution.json")).unwrap(),
    )
    .unwrap();
    let tried = json["tried"].as_array().unwrap();
    assert_eq!(tried.len(), 1, "{json:#}");
    assert!(tried[0]
        .as_str()
        .unwrap()
        .starts_with("01-instructions: 4 task(s)"));
    let skipped: Vec<&str> = (json["skipped"].as_array().unwrap().iter())
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(
        skipped
            .iter()
            .any(|s| s.starts_with("02-find_issues-tool_added")),
        "{skipped:?}"
    );
    assert!(
        skipped
            .iter()
            .all(|s| s.ends_with("(the budget was spent)")),
        "{skipped:?}"
    );
    let rows = attribution(&run);
    let key = |task: &str| {
        (
            task.to_owned(),
            "tool_added find_issues".to_owned(),
            "none".to_owned(),
        )
    };
    let (_, verdict, _, reason) = &rows[&key("search-crash-zephyr")];
    assert_eq!(verdict, "not_tried");
    assert!(reason.starts_with("skipped"), "{reason}");
    let summary = std::fs::read_to_string(run.join("explain").join("summary.md")).unwrap();
    assert!(
        summary.contains("- skipped 02-find_issues-tool_added"),
        "{summary}"
    );
}
