//! The tool-choice shift (issue 50, item 2): on the demo 1.4.0 → 1.5.0 at 10 trials, seed 3,
//! `tool_shift.csv` shows `find_issues` taking `search_issues`' first calls on the three lookup
//! tasks and `list_projects` taking them on `closed-refunds-hermes`, and no shift where the first
//! call did not move; `compare` writes the same file.

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
    // `compare` recomputes the same file from the stored episodes.
    std::fs::remove_file(run.join("tool_shift.csv")).unwrap();
    let compared = mcpeval(&["compare", run.to_str().unwrap()]);
    assert_eq!(compared.status.code(), Some(1), "{}", text(&compared));
    assert_eq!(shifts(&run), found);
}
