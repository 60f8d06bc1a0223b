//! `mcpeval tasks check|list` through the binary: the demo suite is valid; each bad task file
//! gives its message with file, line and column.

use crate::common;

use common::*;

#[test]
fn the_demo_suite_is_valid_and_large_enough() {
    let out = mcpeval(&["tasks", "check", "--suite", "tasks/demo"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("ok: "), "{stdout}");
    let list = mcpeval(&["tasks", "list", "--suite", "tasks/demo"]);
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(listed.lines().count() > 15, "{listed}");
    assert!(listed.matches("no-tool").count() >= 4, "{listed}");
    assert!(listed.contains("capability") && listed.contains("regression"));
}

#[test]
fn the_embedded_demo_suite_is_the_one_on_disk() {
    let mut on_disk: Vec<String> = std::fs::read_dir(repo_path("tasks/demo"))
        .unwrap()
        .map(|e| format!("tasks/demo/{}", e.unwrap().file_name().to_string_lossy()))
        .filter(|p| p.ends_with(".yaml"))
        .collect();
    on_disk.sort();
    let mut embedded: Vec<String> = mcpeval::cli::DEMO_SUITE
        .iter()
        .map(|(p, _)| p.to_string())
        .collect();
    embedded.sort();
    assert_eq!(on_disk, embedded);
    for (path, text) in mcpeval::cli::DEMO_SUITE {
        assert_eq!(std::fs::read_to_string(repo_path(path)).unwrap(), *text);
    }
}

#[test]
fn each_bad_task_file_gives_its_message_with_file_line_and_column() {
    let cases = [
        (
            "unknown-key-task.yaml",
            "4:1: unknown key `max_turn` in task (did you mean `max_turns`?)",
        ),
        (
            "unknown-key-call.yaml",
            "7:7: unknown key `arg` in expected call",
        ),
        ("bad-regex.yaml", "5:17: invalid regex in `answer_regex`"),
        ("wrong-type.yaml", "4:12: `max_turns` must be an integer"),
        ("bad-kind.yaml", "4:7: invalid kind `chat`"),
        ("missing-prompt.yaml", "2:1: missing required key `prompt`"),
        ("syntax-error.yaml", "3:20: invalid YAML"),
        (
            "no-tool-with-calls.yaml",
            "6:3: a `kind: no-tool` task cannot expect calls",
        ),
    ];
    for (file, expected) in cases {
        let path = format!("tests/fixtures/tasks/bad/{file}");
        let out = mcpeval(&["tasks", "check", "--suite", &path]);
        assert_eq!(out.status.code(), Some(2), "{file}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("{path}:{expected}")),
            "{file}: {stderr}"
        );
    }
    let out = mcpeval(&["tasks", "check", "--suite", "tests/fixtures/tasks/dup"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("tests/fixtures/tasks/dup/b.yaml:"),
        "{stderr}"
    );
    assert!(
        stderr.contains("first defined at tests/fixtures/tasks/dup/a.yaml:"),
        "{stderr}"
    );
}

#[test]
fn a_run_with_a_bad_suite_is_a_usage_error_naming_the_file() {
    let dir = temp_dir();
    let out = mcpeval(&[
        "run",
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        "demo:1.5.0",
        "--suite",
        "tests/fixtures/tasks/bad/bad-kind.yaml",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad-kind.yaml:4:7"));
}

#[test]
fn tasks_check_against_servers_finds_what_a_run_would_refuse() {
    let dir = temp_dir();
    let suite = dir.path().join("t.yaml");
    std::fs::write(
        &suite,
        "- id: x\n  prompt: Show me issue 3\n  expect:\n    calls: [{tool: get_isue, args: {id: 3}}]\n- id: y\n  prompt: Show me issue 3\n  expect:\n    calls: [{tool: get_issue, args: {id: 3}}]\n",
    )
    .unwrap();
    let s = suite.to_str().unwrap();
    let out = mcpeval(&["tasks", "check", "--suite", s, "--server", "demo:1.4.0"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("t.yaml:4:20: task `x` expects tool `get_isue`, which neither server lists (did you mean `get_issue`?)"),
        "{stderr}"
    );
    // Without servers the files alone are valid.
    let out = mcpeval(&["tasks", "check", "--suite", s]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    std::fs::write(
        &suite,
        "- id: y\n  prompt: Show me issue 3\n  expect:\n    calls: [{tool: get_issue, args: {id: 3}}]\n",
    )
    .unwrap();
    let pair = [
        "tasks",
        "check",
        "--suite",
        s,
        "--server",
        "demo:1.5.0",
        "--server",
        "demo:2.0.0",
    ];
    let out = mcpeval(&pair);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("which only the baseline lists"));
    let config = dir.path().join("c.toml");
    std::fs::write(&config, "[renames]\nget_issue = \"fetch_issue\"\n").unwrap();
    let out = mcpeval(&[&pair[..], &["--config", config.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("only the baseline"),
        "the rename is followed: {}",
        text(&out)
    );
}
