//! `mcpeval tasks check` warnings and hints through the binary: each lint warning with its
//! position (exit 0), another tool's file named with the import command that converts it, and
//! "did you mean" that never offers the opposite key.

use crate::common;

use common::*;

#[test]
fn each_warning_has_its_position_and_leaves_exit_0() {
    let path = "tests/fixtures/tasks/lint/warnings.yaml";
    let out = mcpeval(&["tasks", "check", "--suite", path]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(": warning: "))
        .collect();
    let expected = [
        "6:15: warning: the prompt names the expected tool `search_issues` (as \"search_issues\")",
        "11:15: warning: the prompt names the expected tool `get_issue` (as \"get issue\")",
        "17:15: warning: tool name `get_.*` looks like a regex",
        "18:23: warning: `forbidden_tools` entry `delete_.*` looks like a regex",
    ];
    assert_eq!(warnings.len(), expected.len(), "{stderr}");
    for (line, want) in warnings.iter().zip(expected) {
        assert!(
            line.starts_with(&format!("{path}:{want}")),
            "{line}\nwanted {want}"
        );
    }
    assert!(
        stderr.contains("regression in its description goes unseen"),
        "{stderr}"
    );
    assert!(
        stderr.contains(r#"`tool: {pattern: "get_.*"}`"#),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("ok: 3 tasks") && stdout.contains(", 4 warnings"),
        "{stdout}"
    );
}

#[test]
fn other_tools_files_are_named_with_the_import_command() {
    for (path, says) in [
        (
            "tests/fixtures/import/promptfoo/promptfooconfig.yaml",
            "this is a promptfoo config (`prompts`, `providers`, `tests`), not an mcpeval task file: convert it with `mcpeval tasks import --from promptfoo tests/fixtures/import/promptfoo/promptfooconfig.yaml --out DIR`",
        ),
        (
            "tests/fixtures/import/mcpchecker/eval.yaml",
            "this is an mcpchecker eval file (`kind: Eval`)",
        ),
        (
            "tests/fixtures/import/mcpchecker/tasks/login-issues/login-issues.yaml",
            "this is an mcpchecker task file (`apiVersion: mcpchecker/v1alpha2`)",
        ),
    ] {
        let out = mcpeval(&["tasks", "check", "--suite", path]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{stderr}");
        // One diagnostic for the file, not one per unknown key.
        assert!(stderr.contains("\n1 problem(s) found"), "{stderr}");
    }
}

#[test]
fn did_you_mean_never_offers_the_opposite_key() {
    let dir = temp_dir();
    let file = dir.path().join("typos.yaml");
    std::fs::write(
        &file,
        "- id: a\n  prompt: Show me issue 3\n  expect:\n    answer_not_contain: [secret]\n\
         - id: b\n  prompt: Show me issue 3\n  expect:\n    not_answer_contains: [secret]\n\
         - id: c\n  prompt: Show me issue 3\n  expect:\n    mix_tool_calls: 2\n",
    )
    .unwrap();
    let out = mcpeval(&["tasks", "check", "--suite", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(":4:5: unknown key `answer_not_contain` in `expect` (did you mean `answer_not_contains`?)"),
        "{stderr}"
    );
    let line = |key: &str| {
        stderr
            .lines()
            .find(|l| l.contains(key))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        line("`not_answer_contains`").ends_with("unknown key `not_answer_contains` in `expect`"),
        "{stderr}"
    );
    assert!(
        line("`mix_tool_calls`").ends_with("unknown key `mix_tool_calls` in `expect`"),
        "{stderr}"
    );
}
