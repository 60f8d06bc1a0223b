//! The tool-choice shift (issue 50, item 2): on the demo 1.4.0 → 1.5.0 at 10 trials, seed 3,
//! `tool_shift.csv` shows `find_issues` taking `search_issues`' first calls on the three lookup
//! tasks and `list_projects` taking them on `closed-refunds-hermes`, and no shift where the first
//! call did not move; `compare` (with `--against` too) writes the same file; summary.md and
//! report.html say each shift in words, with each side's calls beside.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::*;

/// task → (shifted, [(from, to, trials)]).
type Shifts = BTreeMap<String, (bool, Vec<(String, String, u32)>)>;

fn shifts(dir: &Path) -> Shifts {
    let text = std::fs::read_to_string(dir.join("tool_shift.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        header,
        [
            "task_id",
            "host",
            "from_tool",
            "to_tool",
            "trials",
            "p",
            "p_holm",
            "shifted"
        ]
    );
    let mut out = Shifts::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let entry = out.entry(f[0].to_owned()).or_default();
        entry.0 = f[7] == "true";
        entry
            .1
            .push((f[2].to_owned(), f[3].to_owned(), f[4].parse().unwrap()));
    }
    out
}

#[test]
fn the_demo_s_first_calls_move_to_find_issues_and_the_steady_tasks_do_not() {
    let dir = temp_dir();
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
        &repo_path("tasks/demo").display().to_string(),
        "--trials",
        "10",
        "--seed",
        "3",
        "--out",
        run.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let found = shifts(&run);
    for task in [
        "find-open-login-apollo",
        "search-crash-zephyr",
        "search-then-open-invoice",
    ] {
        assert_eq!(
            found[task],
            (
                true,
                vec![("search_issues".into(), "find_issues".into(), 10)]
            ),
            "{task}"
        );
    }
    let refunds = &found["closed-refunds-hermes"];
    assert!(refunds.0, "{refunds:?}");
    assert!(refunds
        .1
        .contains(&("search_issues".into(), "list_projects".into(), 9)));
    assert_eq!(
        found["show-issue-3"],
        (false, vec![("get_issue".into(), "get_issue".into(), 10)])
    );
    assert_eq!(
        found["greeting"],
        (false, vec![("(none)".into(), "(none)".into(), 10)])
    );
    said_in_words(&run);
    // `compare` recomputes the same file from the stored episodes, and says the same.
    std::fs::remove_file(run.join("tool_shift.csv")).unwrap();
    std::fs::remove_file(run.join("summary.md")).unwrap();
    let compared = mcpeval(&["compare", run.to_str().unwrap()]);
    assert_eq!(compared.status.code(), Some(1), "{}", text(&compared));
    assert_eq!(shifts(&run), found);
    said_in_words(&run);
    // The candidate against a baseline read from another directory (a copy of the run's files):
    // each side's episodes from its own directory.
    let copy = dir.path().join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    for entry in std::fs::read_dir(&run).unwrap().map(Result::unwrap) {
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
        }
    }
    let against = dir.path().join("against");
    let compared = mcpeval(&[
        "compare",
        run.to_str().unwrap(),
        "--against",
        copy.to_str().unwrap(),
        "--out",
        against.to_str().unwrap(),
    ]);
    assert_eq!(compared.status.code(), Some(1), "{}", text(&compared));
    assert_eq!(shifts(&against), found);
    said_in_words(&against);
}

/// summary.md's "Tool choice" section and report.html say the demo's shifts in words: the
/// lookup tasks' and `closed-refunds-hermes`' (whose success verdict is only inconclusive), each
/// with both sides' calls, and nothing of the tasks whose first call held.
fn said_in_words(dir: &Path) {
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    let html = std::fs::read_to_string(dir.join("report.html"))
        .unwrap()
        .replace("&#39;", "'");
    let section = summary
        .split("\n## Tool choice\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap_or_else(|| panic!("no Tool choice section: {summary}"));
    let line = |task: &str| -> &str {
        let head = format!("- `{task}` · `sim`: ");
        (section.lines())
            .find(|l| l.starts_with(&head))
            .unwrap_or_else(|| panic!("no line for {task}: {section}"))
    };
    for task in [
        "find-open-login-apollo",
        "search-crash-zephyr",
        "search-then-open-invoice",
    ] {
        let words = line(task);
        assert!(
            words.contains("find_issues took 10 of search_issues' 10 first calls (p_holm "),
            "{words}"
        );
        assert!(
            words.contains("success 10/10 → 0/10, regression"),
            "{words}"
        );
    }
    assert!(
        line("search-then-open-invoice").ends_with(
            "; all calls: baseline search_issues 10, get_issue 10 · candidate find_issues 10, \
             get_issue 10"
        ),
        "{section}"
    );
    let refunds = line("closed-refunds-hermes");
    assert!(
        refunds.contains("list_projects took 9 of search_issues' ")
            && refunds.contains("success 9/10 → 1/10, inconclusive"),
        "{refunds}"
    );
    for steady in ["show-issue-3", "greeting", "list-projects"] {
        assert!(!section.contains(&format!("`{steady}`")), "{section}");
    }
    // report.html shows the same section under the verdict.
    let page = html
        .split("<h3>Tool choice</h3>")
        .nth(1)
        .and_then(|s| s.split("<h3>").next())
        .unwrap_or_else(|| panic!("no Tool choice in report.html"));
    for task in [
        "find-open-login-apollo",
        "search-crash-zephyr",
        "search-then-open-invoice",
    ] {
        let item = format!(
            "<li><code>{task}</code> · <code>sim</code>: find_issues took 10 of search_issues' \
             10 first calls"
        );
        assert!(page.contains(&item), "{page}");
    }
    assert!(
        page.contains(
            "<li><code>closed-refunds-hermes</code> · <code>sim</code>: list_projects took 9"
        ),
        "{page}"
    );
    assert!(!page.contains("show-issue-3"), "{page}");
}
