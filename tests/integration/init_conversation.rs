//! `mcpeval init` drafts a conversation (issue 52): on the demo, whose `search_issues` lists
//! issues that `get_issue` gets by id, a two-turn task (find, then "the first one") is kept
//! after verification, passes `tasks check` against the server with no warning, and a `run`
//! of it passes every turn on both sides.

use std::path::Path;

use crate::common;

use common::*;

const ID: &str = "conversation-search-issues-then-get-issue";

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_demo_gets_a_verified_two_turn_task_that_checks_and_runs() {
    let dir = temp_dir();
    let out = dir.path().join("suite");
    let made = mcpeval(&[
        "init",
        "--server",
        "demo:1.4.0",
        "--no-ci",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(made.status.code(), Some(0), "{}", text(&made));
    let models = read(&out.join("tasks/models.yaml"));
    let at = models
        .find(&format!("- id: {ID}\n"))
        .unwrap_or_else(|| panic!("no {ID} kept: {models}"));
    let task = models[at..].split("\n\n").next().unwrap();
    let comment = models[..at].lines().last().unwrap();
    assert!(
        comment.contains("a conversation: `search_issues` finds")
            && comment.ends_with("passed 3/3 trials"),
        "{comment}"
    );
    // Turn 1 finds with the search, turn 2 asks for the first one found: the id the search's
    // first item carries (issue 1 is apollo's login issue).
    let turns: Vec<&str> = task.split("    - prompt: ").skip(1).collect();
    let [find, first] = turns.as_slice() else {
        panic!("two turns: {task}")
    };
    assert!(find.contains("          - tool: search_issues\n"), "{task}");
    assert!(find.contains("(?i)login"), "{task}");
    assert!(
        first.starts_with("\"Show me the full details of the first issue, please.\""),
        "{task}"
    );
    assert!(
        first.contains("          - tool: get_issue\n            args: {\"id\":1}\n            result: {is_error: false}"),
        "{task}"
    );
    let report = read(&out.join("init-report.md"));
    assert!(report.contains(&format!("`{ID}`")), "{report}");

    let checked = mcpeval(&[
        "tasks",
        "check",
        "--suite",
        out.join("tasks").to_str().unwrap(),
        "--server",
        "demo:1.4.0",
    ]);
    let said = text(&checked);
    assert_eq!(checked.status.code(), Some(0), "{said}");
    assert!(said.contains(", 0 warnings;"), "{said}");

    // The task alone, run on both sides: every trial passes both turns.
    let alone = dir.path().join("alone.yaml");
    std::fs::write(&alone, format!("{task}\n")).unwrap();
    let run = dir.path().join("run");
    let ran = mcpeval(&[
        "run",
        "--suite",
        alone.to_str().unwrap(),
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        "demo:1.4.0",
        "--trials",
        "4",
        "--out",
        run.to_str().unwrap(),
    ]);
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran));
    let episodes = episodes(&run);
    assert_eq!(episodes.len(), 8, "4 trials on each side");
    for episode in &episodes {
        assert!(episode.success, "{episode:?}");
        let turns: Vec<Option<bool>> = episode.user_turns.iter().map(|t| t.success).collect();
        assert_eq!(turns, [Some(true), Some(true)], "{episode:?}");
    }
}
