//! Issue 37's diagnostics through the binary against the demo server: fixture and `after` call
//! arguments checked like expected calls', one warning format counted everywhere, one
//! suggestion rule, and the warning for an expected call that passes on an error result.

use crate::common::*;

/// A task whose fixtures misspell arguments: `tasks check --server` and `run` used to pass it
/// (the typo surfaced at run time as an infrastructure error or a failed `after` check).
const FIXTURE_TYPOS: &str = "\
- id: fixture-typos
  prompt: Close the printer issue
  setup:
    - {tool: create_issue, args: {project: apollo, title: Printer catches fire, priorty: high}}
  expect:
    calls: [{tool: update_issue, args: {id: 13, status: closed}, result: {is_error: false}}]
    after:
      - call: {tool: get_issue, args: {issue_id: 13}}
        expect: {structured: [{path: \"$.status\", equals: closed}]}
";

#[test]
fn fixture_and_after_arguments_are_refused_at_their_key_before_the_run() {
    let dir = temp_dir();
    let file = dir.path().join("fixtures.yaml");
    std::fs::write(&file, FIXTURE_TYPOS).unwrap();
    let f = file.to_str().unwrap();
    // The file alone is valid: arguments need the tool's schema.
    let out = mcpeval(&["tasks", "check", "--suite", f]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    let out = mcpeval(&["tasks", "check", "--suite", f, "--server", "demo:1.4.0"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = [
        "4:81: task `fixture-typos`: setup calls `create_issue` with argument `priorty`, which \
         its input schema does not know (did you mean `priority`?); `create_issue` takes \
         `project`, `title`, `description`, `priority`",
        "8:22: task `fixture-typos`: an `after` check calls `get_issue` without argument `id`, which its \
         input schema requires: the call is sent as written and would fail",
        "8:40: task `fixture-typos`: an `after` check calls `get_issue` with argument `issue_id`, which its \
         input schema does not know (did you mean `id`?); `get_issue` takes `id`",
    ];
    let problems: Vec<&str> = stderr.lines().filter(|l| l.starts_with(f)).collect();
    assert_eq!(problems.len(), expected.len(), "{stderr}");
    for (line, want) in problems.iter().zip(expected) {
        assert_eq!(*line, format!("{f}:{want}"));
    }
    assert!(stderr.ends_with("3 problem(s) found\n"), "{stderr}");

    // A run refuses it before its first trial: no directory, no trial.
    let run = dir.path().join("run");
    let out = mcpeval(&[
        "run",
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        "demo:1.5.0",
        "--suite",
        f,
        "--out",
        run.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{f}:{}", expected[0])),
        "{}",
        text(&out)
    );
    assert!(!run.exists());

    // Spelled right, it passes both.
    let fixed = FIXTURE_TYPOS
        .replace("priorty", "priority")
        .replace("issue_id", "id");
    std::fs::write(&file, fixed).unwrap();
    let out = mcpeval(&["tasks", "check", "--suite", f, "--server", "demo:1.4.0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// Call tasks that call an unknown tool, pass an unknown argument or leave out a required one:
/// each is a fair test of error semantics, so a warning.
const CALLS: &str = "\
- id: unknown-tool
  kind: call
  call: {tool: close_all_issues}
  expect: {error_code: -32602}
- id: unknown-argument
  kind: call
  call: {tool: get_issue, args: {id: 5, filename: x}}
  expect: {is_error: false}
- id: missing-argument
  kind: call
  call: {tool: get_issue}
  expect: {is_error: true}
";

#[test]
fn every_warning_has_one_format_and_is_counted() {
    let dir = temp_dir();
    let file = dir.path().join("calls.yaml");
    // A model task's lint warning beside the call tasks' server warnings.
    let lint = "- id: args-only\n  prompt: Which project is issue 3 in?\n  expect:\n    \
                calls: [{tool: get_issue, args: {id: 3}}]\n";
    std::fs::write(&file, format!("{CALLS}{lint}")).unwrap();
    let f = file.to_str().unwrap();
    let out = mcpeval(&["tasks", "check", "--suite", f, "--server", "demo:1.4.0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = [
        "3:16: warning: task `unknown-tool` calls tool `close_all_issues`, which neither server \
         lists: it checks how both answer an unknown tool",
        "7:41: warning: task `unknown-argument` calls `get_issue` with argument `filename`, \
         which its input schema does not know; `get_issue` takes `id`: it checks how both \
         answer an unknown argument",
        "11:16: warning: task `missing-argument` calls `get_issue` without argument `id`, which \
         its input schema requires: it checks how both answer a missing argument",
        "16:20: warning: the expected call of `get_issue` checks its `args` but not its result",
    ];
    let warnings: Vec<&str> = stderr.lines().collect();
    assert_eq!(warnings.len(), expected.len(), "{stderr}");
    for (line, want) in warnings.iter().zip(expected) {
        assert!(
            line.starts_with(&format!("{f}:{want}")),
            "{line}\nwanted {want}"
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(", 4 warnings; checked against"), "{stdout}");

    // A run (call tasks only: no model) prints the servers' warnings the same way.
    std::fs::write(&file, CALLS).unwrap();
    let run = dir.path().join("run");
    let out = mcpeval(&[
        "run",
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        "demo:1.4.0",
        "--suite",
        f,
        "--out",
        run.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for want in &expected[..3] {
        assert!(
            stderr.lines().any(|l| l == format!("{f}:{want}")),
            "{want}\n{stderr}"
        );
    }
}

#[test]
fn unknown_names_get_the_nearest_by_words_and_the_arguments_known() {
    let dir = temp_dir();
    let file = dir.path().join("names.yaml");
    std::fs::write(
        &file,
        "- id: reordered\n  prompt: Find crash issues\n  expect:\n    calls: [{tool: issues_search}]\n\
         - id: abbreviated\n  prompt: File a bug\n  expect:\n    calls: [{tool: create_issue, args: {desc: x}, result: {is_error: false}}]\n\
         - id: unlike\n  prompt: Show me issue 3\n  expect:\n    calls: [{tool: get_issue, args: {filename: x}, result: {is_error: false}}]\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let out = mcpeval(&["tasks", "check", "--suite", f, "--server", "demo:1.4.0"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for want in [
        ":4:20: task `reordered` expects tool `issues_search`, which neither server lists (did \
         you mean `search_issues`?)",
        ":8:41: task `abbreviated` expects argument `desc` of `create_issue`, which its input \
         schema does not know (did you mean `description`?); `create_issue` takes `project`, \
         `title`, `description`, `priority`",
        ":12:38: task `unlike` expects argument `filename` of `get_issue`, which its input \
         schema does not know; `get_issue` takes `id`",
    ] {
        assert!(stderr.contains(&format!("{f}{want}\n")), "{want}\n{stderr}");
    }
}

/// The newcomer's case: an expected call with `args` and no `result` passes on a call that
/// returned an error (here every call is denied, as on a server started on the wrong
/// directory); `tasks check` says so, and `result: {is_error: false}` makes the task fail.
#[test]
fn an_expected_call_without_a_result_check_is_warned_and_passes_on_an_error() {
    let dir = temp_dir();
    let file = dir.path().join("newcomer.yaml");
    std::fs::write(
        &file,
        "- id: args-only\n  prompt: Show me issue 3\n  expect:\n    calls: [{tool: get_issue, args: {id: 3}}]\n\
         - id: args-and-result\n  prompt: Show me issue 3\n  expect:\n    calls: [{tool: get_issue, args: {id: 3}, result: {is_error: false}}]\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let out = mcpeval(&["tasks", "check", "--suite", f]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim_end(),
        format!(
            "{f}:4:20: warning: the expected call of `get_issue` checks its `args` but not its \
             result: it passes on a call that returned an error (a wrong path's ENOENT, a denied \
             access); add `result: {{is_error: false}}`, or `result: {{contains: [...]}}` for \
             what the result must hold"
        )
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(", 1 warning"));

    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "baseline = \"denied\"\ncandidate = \"demo:1.4.0\"\n[servers.denied]\n\
             command = \"{} demo-server --release 1.4.0\"\n\
             env = {{ MCPEVAL_DEMO_DENY_ALL = \"1\" }}\n",
            bin()
        ),
    )
    .unwrap();
    let run = dir.path().join("run");
    let out = mcpeval(&[
        "run",
        "--config",
        config.to_str().unwrap(),
        "--suite",
        f,
        "--host",
        "sim",
        "--trials",
        "2",
        "--out",
        run.to_str().unwrap(),
    ]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let baseline: Vec<(String, bool)> = episodes(&run)
        .into_iter()
        .filter(|e| e.side == mcpeval::episode::Side::Baseline)
        .map(|e| (e.task_id, e.success))
        .collect();
    assert_eq!(baseline.len(), 4, "{baseline:?}");
    for (task, success) in baseline {
        // Denied calls: only the task that checks the result sees them.
        assert_eq!(success, task == "args-only", "{task}");
    }
}

#[test]
fn the_demo_suite_and_the_examples_say_no_warning() {
    for suite in ["tasks/demo", "examples/tasks"] {
        let out = mcpeval(&["tasks", "check", "--suite", suite]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(", 0 warnings"),
            "{suite}: {}",
            text(&out)
        );
    }
}
