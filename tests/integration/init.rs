//! `mcpeval init` through the binary: call tasks drafted from the demo server over stdio and over
//! HTTP pass `tasks check --server` with no warning and `mcpeval run` of the server against
//! itself with no change, and find the regression of 2.0.0; the tools that write are left out
//! (and drafted with --include-writes); a server that refuses every call is pinned and reported;
//! a call that kills the server is left out; existing files need --force; an unreachable server
//! is exit 3. Model tasks: every demo tool gets a verified one, and `check` with the suite
//! catches 1.5.0; 1.5.0's overlapping search tools get a confusion pair; npm's server-filesystem
//! keeps a verified task for most of its read-only tools, verified on sandbox copies (it can
//! write); an HTTP server's model tasks are verified with --allow-writes.

use std::path::Path;
use std::process::Output;

use crate::common;

use common::*;

/// The demo's tools, and those of them that write (by annotation or name).
const READ_TOOLS: [&str; 3] = ["get_issue", "list_projects", "search_issues"];
const WRITE_TOOLS: [&str; 3] = ["add_comment", "create_issue", "update_issue"];

/// `mcpeval init` of call tasks only (`--no-models`): these tests are about call tasks, and a
/// run of model tasks needs a host.
fn init(server: &str, out: &Path, extra: &[&str]) -> Output {
    let mut all = vec!["--no-models"];
    all.extend(extra);
    init_models(server, out, &all)
}

/// `mcpeval init` with the model tasks (verified by `sim`, the default host).
fn init_models(server: &str, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["init", "--server", server, "--out", out.to_str().unwrap()];
    args.extend(extra);
    mcpeval(&args)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `tasks check --suite DIR/tasks --server SPEC` passes with no warning at all.
fn assert_checks_clean(out: &Path, server: &str) {
    assert_checks_clean_with(out, &["--server", server]);
}

/// `tasks check --suite DIR/tasks EXTRA…` passes with no warning at all.
fn assert_checks_clean_with(out: &Path, extra: &[&str]) {
    let suite = out.join("tasks");
    let mut args = vec!["tasks", "check", "--suite", suite.to_str().unwrap()];
    args.extend(extra);
    let checked = mcpeval(&args);
    let said = text(&checked);
    assert_eq!(checked.status.code(), Some(0), "{said}");
    assert!(said.contains(", 0 warnings;"), "{said}");
    assert!(!said.contains("warning:"), "{said}");
}

/// `mcpeval run` of the drafted suite; the exit code and the task → verdict lines.
fn run_suite(out: &Path, baseline: &str, candidate: &str, run: &Path) -> (Option<i32>, String) {
    let suite = out.join("tasks");
    let ran = mcpeval(&[
        "run",
        "--suite",
        suite.to_str().unwrap(),
        "--baseline",
        baseline,
        "--candidate",
        candidate,
        "--out",
        run.to_str().unwrap(),
    ]);
    (ran.status.code(), text(&ran))
}

/// The ids of a task file's tasks.
fn ids(yaml: &str) -> Vec<String> {
    yaml.lines()
        .filter_map(|l| l.strip_prefix("- id: "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_demo_over_stdio_gets_call_tasks_for_its_read_only_tools_that_pass_and_catch_2_0_0() {
    let dir = temp_dir();
    let out = dir.path().join("suite");
    let made = init("demo:1.4.0", &out, &[]);
    assert_eq!(made.status.code(), Some(0), "{}", text(&made));
    let calls = read(&out.join("tasks/calls.yaml"));
    let ids = ids(&calls);
    for tool in READ_TOOLS {
        let id = format!("call-{}", tool.replace('_', "-"));
        assert!(ids.contains(&id), "{id} in {ids:?}");
    }
    for tool in WRITE_TOOLS {
        assert!(
            !ids.iter().any(|i| i.contains(&tool.replace('_', "-"))),
            "{tool} is left out: {ids:?}"
        );
        // The file and the report both say which were left out and why.
        assert!(
            calls.contains(&format!("#   tool `{tool}`: writes (")),
            "{calls}"
        );
        assert!(text(&made).contains(&format!("left out: tool `{tool}`: writes")));
    }
    assert!(
        ids.contains(&"resource-tracker-projects".to_owned()),
        "{ids:?}"
    );
    assert!(ids.contains(&"prompt-triage-issue".to_owned()), "{ids:?}");
    assert!(calls.contains("output_schema: true"), "{calls}");
    let report = read(&out.join("init-report.md"));
    assert!(report.contains("- tool `create_issue`: writes (annotated readOnlyHint: false)"));
    // The error semantics: requests malformed on purpose, marked so (tasks check stays quiet).
    for id in ["unknown-tool", "call-get-issue-without-id"] {
        let task = calls.split("\n- id: ").find(|t| t.starts_with(id)).unwrap();
        assert!(task.contains("  malformed: true\n"), "{task}");
    }
    assert!(calls.contains("error_code: -32602"), "{calls}");

    assert_checks_clean(&out, "demo:1.4.0");
    let (code, said) = run_suite(&out, "demo:1.4.0", "demo:1.4.0", &dir.path().join("same"));
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("NO REGRESSION"), "{said}");
    assert!(!said.contains("regression ("), "{said}");
    // 2.0.0 renames get_issue: the pinned call fails there.
    let (code, said) = run_suite(&out, "demo:1.4.0", "demo:2.0.0", &dir.path().join("new"));
    assert_eq!(code, Some(1), "{said}");
    let line = said
        .lines()
        .find(|l| l.starts_with("call-get-issue "))
        .unwrap();
    assert!(line.ends_with("regression (success)"), "{line}");
}

#[test]
fn include_writes_drafts_all_six_tools_and_they_pass_on_fresh_servers() {
    let dir = temp_dir();
    let out = dir.path().join("suite");
    let made = init("demo:1.4.0", &out, &["--include-writes"]);
    assert_eq!(made.status.code(), Some(0), "{}", text(&made));
    let calls = read(&out.join("tasks/calls.yaml"));
    let ids = ids(&calls);
    for tool in READ_TOOLS.iter().chain(&WRITE_TOOLS) {
        let id = format!("call-{}", tool.replace('_', "-"));
        assert!(ids.contains(&id), "{id} in {ids:?}");
    }
    assert!(!calls.contains("Left out"), "{calls}");
    assert_checks_clean(&out, "demo:1.4.0");
    let (code, said) = run_suite(&out, "demo:1.4.0", "demo:1.4.0", &dir.path().join("same"));
    assert_eq!(code, Some(0), "{said}");
}

#[test]
fn the_demo_over_http_gets_the_same_kind_of_suite() {
    let server = spawn_listening(
        &["demo-server", "--release", "1.4.0", "--http", "127.0.0.1:0"],
        true,
    );
    let url = format!("http://{}/mcp", server.addr);
    let dir = temp_dir();
    let out = dir.path().join("suite");
    let made = init(&url, &out, &[]);
    assert_eq!(made.status.code(), Some(0), "{}", text(&made));
    let ids = ids(&read(&out.join("tasks/calls.yaml")));
    assert!(ids.contains(&"call-get-issue".to_owned()), "{ids:?}");
    assert!(read(&out.join("init-report.md")).contains(&format!("`{url}`")));
    assert_checks_clean(&out, &url);
    let (code, said) = run_suite(&out, &url, &url, &dir.path().join("same"));
    assert_eq!(code, Some(0), "{said}");
}

#[test]
fn a_server_that_refuses_every_call_is_pinned_and_reported() {
    let server = format!("{} demo-server --release 1.4.0 --deny-all", bin());
    let dir = temp_dir();
    let out = dir.path().join("suite");
    let made = init(&server, &out, &[]);
    let said = text(&made);
    assert_eq!(made.status.code(), Some(0), "{said}");
    assert!(said.contains("every tool call was refused"), "{said}");
    let report = read(&out.join("init-report.md"));
    assert!(
        report.contains("**Every tool call was refused**"),
        "{report}"
    );
    let calls = read(&out.join("tasks/calls.yaml"));
    let task = calls
        .split("\n- id: ")
        .find(|t| t.starts_with("call-list-projects"))
        .unwrap();
    assert!(task.contains("is_error: true"), "{task}");
    assert_checks_clean(&out, &server);
    let (code, said) = run_suite(&out, &server, &server, &dir.path().join("same"));
    assert_eq!(code, Some(0), "{said}");
    // Against a server that answers, the pinned refusals fail: the suite holds today's
    // behaviour, refusals and all, which is why the report tells to fix the server first.
    let (code, said) = run_suite(&out, &server, "demo:1.4.0", &dir.path().join("fixed"));
    assert_eq!(code, Some(1), "{said}");
    let line = said
        .lines()
        .find(|l| l.starts_with("call-list-projects "))
        .unwrap();
    assert!(line.ends_with("regression (success)"), "{line}");
}

#[test]
fn a_call_that_kills_the_server_is_left_out_and_the_rest_is_drafted() {
    // The demo exits on its fourth tool call: init starts it again and goes on.
    let server = format!("{} demo-server --release 1.4.0 --crash-after 3", bin());
    let dir = temp_dir();
    let out = dir.path().join("suite");
    let made = init(&server, &out, &[]);
    let said = text(&made);
    assert_eq!(made.status.code(), Some(0), "{said}");
    let left = said
        .lines()
        .find(|l| l.contains(": the server failed on it: "))
        .unwrap();
    assert!(
        left.contains("crashing on purpose"),
        "the server's stderr is kept: {left}"
    );
    let ids = ids(&read(&out.join("tasks/calls.yaml")));
    assert!(ids.len() >= 3, "{ids:?}");
    assert_checks_clean(&out, "demo:1.4.0");
    let (code, said) = run_suite(&out, "demo:1.4.0", "demo:1.4.0", &dir.path().join("same"));
    assert_eq!(code, Some(0), "{said}");
}

#[test]
fn existing_files_need_force_and_an_unreachable_server_is_exit_3() {
    let dir = temp_dir();
    let out = dir.path().join("suite");
    assert_eq!(init("demo:1.4.0", &out, &[]).status.code(), Some(0));
    let calls = out.join("tasks/calls.yaml");
    std::fs::write(&calls, "# mine\n").unwrap();
    let again = init("demo:1.4.0", &out, &[]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(
        text(&again).contains(&format!("`{}` exists: pass --force", calls.display())),
        "{}",
        text(&again)
    );
    assert_eq!(read(&calls), "# mine\n", "nothing was written");
    let forced = init("demo:1.4.0", &out, &["--force"]);
    assert_eq!(forced.status.code(), Some(0), "{}", text(&forced));
    assert!(read(&calls).contains("- id: call-get-issue"));

    let gone = init("http://127.0.0.1:1/mcp", &dir.path().join("other"), &[]);
    assert_eq!(gone.status.code(), Some(3), "{}", text(&gone));
    assert!(
        text(&gone).contains("could not be reached"),
        "{}",
        text(&gone)
    );
    assert!(!dir.path().join("other").exists(), "nothing written");
}

/// The tasks of a task file, each as its text from `- id:` on.
fn tasks(yaml: &str) -> Vec<String> {
    yaml.split("\n- id: ").skip(1).map(str::to_owned).collect()
}

fn check(suite: &Path, baseline: &str, candidate: &str, out: &Path) -> (Option<i32>, String) {
    let checked = mcpeval(&[
        "check",
        "--baseline",
        baseline,
        "--candidate",
        candidate,
        "--suite",
        suite.to_str().unwrap(),
        "--host",
        "sim",
        "--out",
        out.to_str().unwrap(),
    ]);
    (checked.status.code(), text(&checked))
}

#[test]
fn every_demo_tool_gets_a_verified_model_task_and_check_with_the_suite_catches_1_5_0() {
    let dir = temp_dir();
    let out = dir.path().join("suite");
    let made = init_models("demo:1.4.0", &out, &[]);
    let said = text(&made);
    assert_eq!(made.status.code(), Some(0), "{said}");
    assert!(
        said.contains("verified by sim, the simulated model"),
        "{said}"
    );
    let models = read(&out.join("tasks/models.yaml"));
    // The simulator is named as such in the suite's own file.
    assert!(
        models.contains("mcpeval's simulated model, not a real one"),
        "{models}"
    );
    let kept = tasks(&models);
    for tool in READ_TOOLS.iter().chain(&WRITE_TOOLS) {
        let serving: Vec<&String> = (kept.iter())
            .filter(|t| t.contains(&format!("      - tool: {tool}\n")))
            .collect();
        assert!(
            !serving.is_empty(),
            "no kept model task for {tool}: {models}"
        );
        for task in serving {
            // Kept after passing every verification trial, and without the tool's name.
            let comment_end = models.find(&format!("- id: {}", task.lines().next().unwrap()));
            assert!(comment_end.is_some());
            // A conversation's (issue 52) prompts are its turns'.
            let prompts: Vec<&str> = (task.lines())
                .filter(|l| l.starts_with("  prompt: ") || l.starts_with("    - prompt: "))
                .collect();
            assert!(!prompts.is_empty(), "{task}");
            for prompt in prompts {
                assert!(
                    !prompt.to_lowercase().contains(&tool.replace('_', " ")),
                    "{prompt}"
                );
                assert!(!prompt.contains(tool), "{prompt}");
            }
        }
    }
    assert!(models.contains("passed 3/3 trials"), "{models}");
    let no_tool = kept
        .iter()
        .filter(|t| t.contains("  kind: no-tool\n"))
        .count();
    assert!(no_tool >= 3, "{models}");
    let report = read(&out.join("init-report.md"));
    assert!(
        report.contains("Every tool has a kept model task."),
        "{report}"
    );
    assert!(report.contains("Verification cost: "), "{report}");
    assert!(report.contains("- tool `create_issue`: writes (annotated readOnlyHint: false)"));
    assert_checks_clean(&out, "demo:1.4.0");

    let suite = out.join("tasks");
    let (code, said) = check(&suite, "demo:1.4.0", "demo:1.5.0", &dir.path().join("c15"));
    assert_eq!(code, Some(1), "{said}");
    let line = (said.lines())
        .find(|l| l.starts_with("evaluation: failed"))
        .unwrap_or_else(|| panic!("{said}"));
    assert!(line.contains("model-search-issues-1"), "{line}");
    let (code, said) = check(&suite, "demo:1.4.0", "demo:1.4.0", &dir.path().join("c14"));
    assert_eq!(code, Some(0), "{said}");
}

#[test]
fn overlapping_tools_of_1_5_0_get_a_confusion_pair_and_rejections_say_why() {
    let dir = temp_dir();
    let out = dir.path().join("suite");
    let made = init_models("demo:1.5.0", &out, &["--verify-trials", "2"]);
    let said = text(&made);
    assert_eq!(made.status.code(), Some(0), "{said}");
    let models = read(&out.join("tasks/models.yaml"));
    let rejected = read(&out.join("rejected.yaml"));
    let all: Vec<String> = tasks(&models).into_iter().chain(tasks(&rejected)).collect();
    for (this, other) in [("search", "find"), ("find", "search")] {
        let id = format!("pair-{this}-issues-not-{other}-issues");
        let task = (all.iter())
            .find(|t| t.starts_with(&id))
            .unwrap_or_else(|| panic!("{id}: {models}\n{rejected}"));
        assert!(
            task.contains(&format!("forbidden_tools: [\"{other}_issues\"]")),
            "{task}"
        );
        assert!(
            task.contains(&format!("      - tool: {this}_issues\n")),
            "{task}"
        );
    }
    // 1.5.0's vague search_issues loses its requests to find_issues: rejected, with the reason
    // and the model's call.
    assert!(
        rejected.contains("# rejected by verification: passed 0/2 trials (needs 2): another tool chosen: `find_issues`"),
        "{rejected}"
    );
    assert!(
        rejected.contains("# the model called: find_issues {"),
        "{rejected}"
    );
    assert!(
        said.contains("no kept model task for: search_issues"),
        "{said}"
    );
    // 1.5.0 marks update_issue destructive: no model task, and the report says why.
    assert!(
        said.contains(
            "note: no model task for `update_issue`: it is annotated destructiveHint: true"
        ),
        "{said}"
    );
    assert!(models.contains("passed 2/2 trials"), "{models}");
}

#[test]
fn the_filesystem_server_keeps_a_verified_model_task_for_most_read_only_tools() {
    let entry = crate::sim_real_args::filesystem_server();
    let tmp = temp_dir();
    let root = tmp.path().canonicalize().unwrap();
    let fixture = root.join("fixture");
    crate::sim_real_args::write_fixture(&fixture);
    // The server can write to the fixture (write_file, edit_file, move_file…): verification
    // runs on copies of it, and the tasks name the copy as {sandbox}.
    let server = format!("node {entry} {{sandbox}}");
    let out = root.join("suite");
    let made = init_models(&server, &out, &["--sandbox", fixture.to_str().unwrap()]);
    let said = text(&made);
    assert_eq!(made.status.code(), Some(0), "{said}");
    let read_only = [
        "directory_tree",
        "get_file_info",
        "list_allowed_directories",
        "list_directory",
        "list_directory_with_sizes",
        "read_file",
        "read_media_file",
        "read_multiple_files",
        "read_text_file",
        "search_files",
    ];
    let models = read(&out.join("tasks/models.yaml"));
    let covered: Vec<&str> = (read_only.iter().copied())
        .filter(|t| models.contains(&format!("      - tool: {t}\n")))
        .collect();
    assert!(
        covered.len() * 3 >= read_only.len() * 2,
        "{} of {}: {covered:?}\n{said}",
        covered.len(),
        read_only.len()
    );
    // The paths reach the arguments verbatim: a file the listing named, under the fixture's
    // copy, written as {sandbox}.
    assert!(models.contains("\"{sandbox}/"), "{models}");
    assert!(!models.contains(root.to_str().unwrap()), "{models}");
    // The destructive tools get no model task (verification would run them).
    for tool in ["write_file", "edit_file", "move_file"] {
        assert!(!models.contains(&format!("- tool: {tool}\n")), "{tool}");
        assert!(
            said.contains(&format!("note: no model task for `{tool}`")),
            "{said}"
        );
    }
    // Against the server on copies, as the drafted config starts it.
    let config = out.join("mcpeval.toml");
    assert_checks_clean_with(
        &out,
        &["--config", config.to_str().unwrap(), "--server", "server"],
    );
}

#[test]
fn model_tasks_are_verified_over_http_and_a_refusing_server_keeps_none() {
    let server = spawn_listening(
        &["demo-server", "--release", "1.4.0", "--http", "127.0.0.1:0"],
        true,
    );
    let url = format!("http://{}/mcp", server.addr);
    let dir = temp_dir();
    let out = dir.path().join("http");
    // An HTTP server's state lives in its process, which outlives init: its model tasks are
    // verified (a model may call create_issue) only with consent. The demo here is this test's.
    let made = init_models(&url, &out, &["--verify-trials", "1", "--allow-writes"]);
    assert_eq!(made.status.code(), Some(0), "{}", text(&made));
    let models = read(&out.join("tasks/models.yaml"));
    assert!(models.contains("      - tool: get_issue\n"), "{models}");
    assert!(models.contains("passed 1/1 trials"), "{models}");
    assert_checks_clean(&out, &url);

    let refusing = format!("{} demo-server --release 1.4.0 --deny-all", bin());
    // A folder of its own: the first init wrote the workflow of this one's repository root.
    let dir = temp_dir();
    let out = dir.path().join("deny");
    let made = init_models(&refusing, &out, &["--verify-trials", "1"]);
    let said = text(&made);
    assert_eq!(made.status.code(), Some(0), "{said}");
    assert!(said.contains("every tool call was refused"), "{said}");
    let models = read(&out.join("tasks/models.yaml"));
    assert!(
        !models.contains("      - tool: "),
        "no tool task is kept: {models}"
    );
    let rejected = read(&out.join("rejected.yaml"));
    assert!(
        rejected.contains("the expected tool answered with an error"),
        "{rejected}"
    );
    assert_checks_clean(&out, &refusing);
}

#[test]
fn the_simulated_model_as_writer_leaves_the_writing_to_templates_and_says_so() {
    let dir = temp_dir();
    let out = dir.path().join("suite");
    let made = init_models(
        "demo:1.4.0",
        &out,
        &["--writer-host", "sim", "--verify-trials", "1"],
    );
    let said = text(&made);
    assert_eq!(made.status.code(), Some(0), "{said}");
    assert!(
        said.contains("note: the writer host `sim` is mcpeval's simulated model, which cannot write tasks: templates drafted them instead"),
        "{said}"
    );
    let models = read(&out.join("tasks/models.yaml"));
    assert!(
        models.contains("templated from each tool's description"),
        "{models}"
    );
    assert!(!models.contains("written by"), "{models}");
}
