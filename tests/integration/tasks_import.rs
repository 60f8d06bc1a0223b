//! `mcpeval tasks import` through the binary: an mcpchecker eval (with its task files) and a
//! promptfoo config, both written for the demo server, become task files that `tasks check`
//! passes, with the keys that map and a list of what did not convert; bad input writes nothing.

use std::path::Path;

use crate::common;

use common::*;

const MCPCHECKER_EVAL: &str = "tests/fixtures/import/mcpchecker/eval.yaml";
const MCPCHECKER_TASK: &str =
    "tests/fixtures/import/mcpchecker/tasks/login-issues/login-issues.yaml";
const PROMPTFOO: &str = "tests/fixtures/import/promptfoo/promptfooconfig.yaml";
/// Shaped like containers/kubernetes-mcp-server's evals: a glob over `tasks/*/*/*.yaml` that
/// also matches a multi-document Kubernetes manifest.
const KUBERNETES_EVAL: &str =
    "tests/fixtures/import/kubernetes/evals/core-eval-testing/builtin-openai/eval-core.yaml";

/// `mcpeval tasks import --from FORMAT FILE --out OUT EXTRA…`, asserting exit 0; its stdout.
fn import(format: &str, file: &str, out: &Path, extra: &[&str]) -> String {
    let out_dir = out.to_str().unwrap();
    let mut args = vec!["tasks", "import", "--from", format, file, "--out", out_dir];
    args.extend(extra);
    let run = mcpeval(&args);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    String::from_utf8_lossy(&run.stdout).into_owned()
}

/// `mcpeval tasks check --suite DIR` passes; its summary line.
#[track_caller]
fn check_passes(dir: &Path) -> String {
    let out = mcpeval(&["tasks", "check", "--suite", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[track_caller]
fn has_all(haystack: &str, needles: &[&str]) {
    for needle in needles {
        assert!(haystack.contains(needle), "lacks {needle:?}:\n{haystack}");
    }
}

#[test]
fn an_mcpchecker_eval_imports_into_tasks_that_pass_check() {
    let dir = temp_dir();
    let out = dir.path().join("imported");
    let stdout = import("mcpchecker", MCPCHECKER_EVAL, &out, &[]);
    let yaml = std::fs::read_to_string(out.join("eval.yaml")).unwrap();
    has_all(
        &yaml,
        &[
            "- id: login-issues\n",
            "prompt: \"Which open issues in project apollo are about login?\"",
            "      - tool: search_issues\n",
            "forbidden_tools: [create_issue]",
            "max_tool_calls: 4",
            "min_tool_calls: 1",
            "rubric: \"The final answer contains this information, in any wording: the open apollo issues about login, each with its number\"",
            "host: sim",
            "- id: comment-on-issue-7\n",
            "      - tool: get_issue\n      - tool: add_comment\n    ordered: true\n",
            // mcpchecker's resource assertion, as a glob (its regex matched anywhere).
            "resources_read: [\"*tracker://*\"]",
            "# note: `resourcesRead` pattern /tracker://.*/",
        ],
    );
    // Per case, what did not convert; per file, where the servers are and who judges.
    has_all(
        &stdout,
        &[
            "-> ",
            "eval.yaml: 2 task(s), 0 case(s) left out",
            "login-issues: not converted: verify step `script`",
            "`resourcesRead` pattern /tracker://.*/ (a regex matched anywhere) is the glob `*tracker://*`",
            // Issue 37: the legacy setup script is named with why it does not convert
            // (mcpeval's `setup` makes MCP tool calls only), no longer "`setup` steps".
            "comment-on-issue-7: not converted: the `setup` script (mcpeval's `setup` makes MCP tool calls",
            "comment-on-issue-7: not converted: the verify script",
            "comment-on-issue-7: not converted: `noDuplicateCalls`",
            "note: the servers are in `mcp-config.yaml`",
            "`sim` cannot judge",
        ],
    );
    assert!(check_passes(&out).starts_with("ok: 2 tasks"));

    // A task file alone: its prompt and judge, and where its tool assertions are.
    let alone = dir.path().join("alone");
    let stdout = import(
        "mcpchecker",
        MCPCHECKER_TASK,
        &alone,
        &["--judge-host", "openai:gpt-4.1-mini"],
    );
    has_all(&stdout, &["1 task(s)", "import the eval file"]);
    let yaml = std::fs::read_to_string(alone.join("login-issues.yaml")).unwrap();
    has_all(&yaml, &["judge:", "host: \"openai:gpt-4.1-mini\""]);
    assert!(!yaml.contains("calls:"), "{yaml}");
    check_passes(&alone);
}

#[test]
fn a_promptfoo_config_imports_into_tasks_that_pass_check() {
    let dir = temp_dir();
    let out = dir.path().join("imported");
    let stdout = import("promptfoo", PROMPTFOO, &out, &[]);
    let yaml = std::fs::read_to_string(out.join("promptfooconfig.yaml")).unwrap();
    has_all(
        &yaml,
        &[
            "- id: open-login-issues-in-apollo\n",
            "prompt: \"You answer questions about the team's issue tracker. Which open issues in project apollo are about login?\"",
            "      - tool: search_issues\n        args: {project: apollo}\n",
            "forbidden_tools: [create_issue, update_issue]",
            "answer_contains: [login]",
            "answer_not_contains: [\"as an AI\"]",
            "rubric: \"Lists every open apollo issue about login, with its number\"",
            "- id: issue-3-then-a-comment\n",
            "      - tool: get_issue\n      - tool: add_comment\n    ordered: true\n    max_tool_calls: 4\n",
            "answer_regex: \"(?i)(comment|note)\"",
            "- id: projects-answer-as-json\n",
            "      - tool: list_projects\n",
            "answer_contains: [apollo, zephyr, hermes]",
            "# left out \"Only code checks\": none of its checks converts",
        ],
    );
    has_all(
        &stdout,
        &[
            "promptfooconfig.yaml: 3 task(s), 1 case(s) left out",
            "issue-3-then-a-comment: not converted: `javascript` assertion",
            "projects-answer-as-json: not converted: `is-json` assertion",
            "projects-answer-as-json: not converted: `tool-call-f1`'s precision",
            "\"Only code checks\": not converted: `python` with its value in a file",
            "\"Only code checks\": not converted: the whole case: none of its checks converts",
            "note: provider `openai:chat:gpt-4.1-mini`: `mcpeval run --host openai:gpt-4.1-mini`",
            "--baseline \"mcpeval demo-server --release 1.4.0\"",
        ],
    );
    assert!(check_passes(&out).starts_with("ok: 3 tasks"));
}

/// Issue 52: promptfoo's conversations (a prompt that loops over `_conversation`, tests grouped
/// by `metadata.conversationId`, and a multishot chat history) import as `turns:`, each test's
/// checks on its own turn and a rubric on the whole conversation; the files pass `tasks check`,
/// against the demo server too.
#[test]
fn promptfoo_conversations_import_as_turns_that_pass_check() {
    let dir = temp_dir();
    let out = dir.path().join("imported");
    let stdout = import(
        "promptfoo",
        "tests/fixtures/import/promptfoo-turns/promptfooconfig.yaml",
        &out,
        &[],
    );
    let yaml = std::fs::read_to_string(out.join("promptfooconfig.yaml")).unwrap();
    has_all(
        &yaml,
        &[
            "- id: login-thread\n  turns:\n    - prompt: \"Find open issues about login in project apollo\"\n      expect:\n        calls:\n          - tool: search_issues\n            args: {project: apollo, status: open}\n",
            "    - prompt: \"Close the first issue you found\"\n      expect:\n        calls:\n          - tool: update_issue\n            args: {id: 1, status: closed}\n",
            "  expect:\n    judge:\n      rubric: \"About the answer to the user's message 2 (\\\"Close the first issue you found\\\"): Says the issue is now closed\"",
            "- id: projects-thread\n",
            "    - prompt: \"Any crash issues in the first one?\"\n",
        ],
    );
    has_all(
        &stdout,
        &[
            "promptfooconfig.yaml: 2 task(s), 0 case(s) left out",
            "login-thread: not converted: turn 2: `javascript` assertion",
            "projects-thread: note: turn 2 is sent and not graded",
        ],
    );
    let checked = check_passes(&out);
    assert!(checked.starts_with("ok: 2 tasks"), "{checked}");
    let against = mcpeval(&[
        "tasks",
        "check",
        "--suite",
        out.to_str().unwrap(),
        "--server",
        "demo:1.4.0",
    ]);
    assert_eq!(against.status.code(), Some(0), "{}", text(&against));

    let multishot = dir.path().join("multishot");
    import(
        "promptfoo",
        "tests/fixtures/import/promptfoo-turns/multishot.yaml",
        &multishot,
        &[],
    );
    let yaml = std::fs::read_to_string(multishot.join("multishot.yaml")).unwrap();
    has_all(
        &yaml,
        &["  turns:\n    - prompt: \"Show me issue 3\"\n    - prompt: \"Which other issues are open in that project?\"\n      expect:\n"],
    );
    check_passes(&multishot);
}

#[test]
fn bad_input_exits_2_and_writes_nothing_and_outputs_are_kept_without_force() {
    let dir = temp_dir();
    let out = dir.path().join("out");
    let out_dir = out.to_str().unwrap();
    let not_yaml = dir.path().join("broken.yaml");
    std::fs::write(&not_yaml, "tests: [\n  - {vars: \n").unwrap();
    let broken = not_yaml.to_str().unwrap();
    for (format, file, says) in [
        ("promptfoo", broken, "invalid YAML"),
        (
            "mcpchecker",
            PROMPTFOO,
            "looks like a promptfoo config: use --from promptfoo",
        ),
        (
            "promptfoo",
            MCPCHECKER_EVAL,
            "an mcpchecker file? use --from mcpchecker",
        ),
        (
            "promptfoo",
            "tests/fixtures/tasks/good/issues.yaml",
            "not a promptfoo config",
        ),
    ] {
        let mut args = vec!["tasks", "import", "--from", format];
        if format == "promptfoo" {
            // A good file first: a bad one after it still writes nothing.
            args.push(PROMPTFOO);
        }
        args.extend([file, "--out", out_dir]);
        let run = mcpeval(&args);
        assert_eq!(run.status.code(), Some(2), "{}", text(&run));
        let stderr = String::from_utf8_lossy(&run.stderr);
        has_all(&stderr, &[file, says]);
        assert!(!out.exists(), "nothing is written: {}", text(&run));
    }

    import("promptfoo", PROMPTFOO, &out, &[]);
    let written = out.join("promptfooconfig.yaml");
    std::fs::write(&written, "# edited by hand\n").unwrap();
    let again = mcpeval(&[
        "tasks",
        "import",
        "--from",
        "promptfoo",
        PROMPTFOO,
        "--out",
        out_dir,
    ]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    has_all(
        &String::from_utf8_lossy(&again.stderr),
        &["exists", "--force"],
    );
    assert_eq!(
        std::fs::read_to_string(&written).unwrap(),
        "# edited by hand\n"
    );
    import("promptfoo", PROMPTFOO, &out, &["--force"]);
    assert!(std::fs::read_to_string(&written)
        .unwrap()
        .contains("- id: "));
}

#[test]
fn an_eval_whose_glob_matches_a_kubernetes_manifest_skips_it_and_converts_the_tasks() {
    let dir = temp_dir();
    let out = dir.path().join("imported");
    let stdout = import("mcpchecker", KUBERNETES_EVAL, &out, &[]);
    // The manifest is skipped with one note (two task sets' globs match it).
    let skipped: Vec<&str> = stdout.lines().filter(|l| l.contains("skipped")).collect();
    assert_eq!(skipped.len(), 1, "{stdout}");
    has_all(
        skipped[0],
        &[
            "mock-plugin.yaml",
            "not an mcpchecker task (2 YAML documents: `kind: ConfigMap`, `kind: Deployment`",
        ],
    );
    has_all(
        &stdout,
        &[
            "eval-core.yaml: 3 task(s), 0 case(s) left out",
            // Tool-call steps of a required MCP server convert; the others say why not.
            "pods-run: not converted: setup step `script` (a shell script; mcpeval's `setup` makes MCP tool calls on the trial's server only)",
            "pods-run: not converted: cleanup step `http` (an HTTP request;",
            "pods-run: not converted: verify step `kube.wait` (an operation of the mcpchecker extension `kubernetes` (as `kube`), run outside the MCP server; mcpeval's `expect.after` makes MCP tool calls",
            "list-contexts: not converted: verify step `kubernetes.listContexts` (an operation of the mcpchecker extension `kubernetes`",
            // A placeholder is reported and kept out of the rubric.
            "list-contexts: not converted: `llmJudge`: it names `{steps.kubernetes.listContexts.count}`",
            "it names `{steps.kubernetes.listContexts.count}`, filled by mcpchecker at run time",
        ],
    );
    for stale in ["runs no steps", "`setup` steps", "`cleanup` steps"] {
        assert!(!stdout.contains(stale), "{stale}: {stdout}");
    }
    // Empty `setup:`/`cleanup:` (namespaces-list, list-contexts) say nothing.
    assert!(
        !stdout.contains("namespaces-list: not converted"),
        "{stdout}"
    );
    let yaml = std::fs::read_to_string(out.join("eval-core.yaml")).unwrap();
    has_all(
        &yaml,
        &[
            "- id: pods-run\n",
            "  setup:\n    - {tool: namespaces_create, args: {name: eval-pods}}\n",
            "  teardown:\n    - {tool: pods_delete, args: {name: web, namespace: eval-pods}}\n",
            "    after:\n      - call: {tool: pods_get, args: {name: web, namespace: eval-pods}}\n        expect: {is_error: false}\n",
            "- id: list-contexts\n",
            "- id: namespaces-list\n",
        ],
    );
    assert!(
        !yaml.contains(
            "rubric: \"The final answer contains this information, in any wording: {steps"
        ),
        "{yaml}"
    );
    // The netobserv task is not selected by either label selector.
    assert!(!yaml.contains("flows-top"), "{yaml}");
    assert!(check_passes(&out).starts_with("ok: 3 tasks"));
}

#[test]
fn an_a_b_promptfoo_config_becomes_one_baseline_candidate_note_with_its_trials() {
    let dir = temp_dir();
    let out = dir.path().join("imported");
    let stdout = import(
        "promptfoo",
        "tests/fixtures/import/promptfoo-ab/promptfooconfig.yaml",
        &out,
        &[],
    );
    // One note for the pair: the Agent SDK's `config.model` as the host, the first server as
    // the baseline, the second as the candidate, `repeat: 10` as `--trials 10`.
    has_all(
        &stdout,
        &[
            "note: providers `v2.10.0` (`anthropic:claude-agent-sdk`) and `release-candidate` (`anthropic:claude-agent-sdk`) differ only in their MCP server: `mcpeval run --host anthropic:claude-sonnet-4-6 --baseline \"node evals/released/dist/main.js\" --candidate \"node dist/main.js\" --trials 10`",
            "runs the Claude Agent SDK's own agent loop (Claude Code's, with its built-in tools unless an allowlist leaves them out); `--host anthropic:claude-sonnet-4-6` runs mcpeval's loop with the server's tools only",
            // Placeholders no var fills: reported per case and left out.
            "find-notes-by-tag: not converted: `llm-rubric`: its value names `{{tag}}`, which no var fills",
            "\"Open a note\": not converted: the prompt: `{{title}}` not filled in",
        ],
    );
    assert_eq!(stdout.matches("--baseline").count(), 1, "{stdout}");
    assert!(
        !stdout.contains("--host anthropic:claude-agent-sdk"),
        "{stdout}"
    );
    let yaml = std::fs::read_to_string(out.join("promptfooconfig.yaml")).unwrap();
    let tasks: Vec<&str> = yaml.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(
        tasks.iter().all(|l| !l.contains("{{")),
        "no placeholder reaches a task (only the comments name them):\n{yaml}"
    );
    assert!(!yaml.contains("judge:"), "{yaml}");
    // `defaultTest: file://…` is read: its checks join every test.
    has_all(&yaml, &["answer_not_contains: [\"I cannot access\"]"]);
    assert!(check_passes(&out).starts_with("ok: 1 task"));
}

#[test]
fn an_input_where_nothing_converts_exits_2_with_one_line_and_writes_nothing() {
    let dir = temp_dir();
    let out = dir.path().join("out");
    let run = mcpeval(&[
        "tasks",
        "import",
        "--from",
        "promptfoo",
        "tests/fixtures/import/promptfoo-code/promptfooconfig.yaml",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(2), "{}", text(&run));
    assert!(run.stdout.is_empty(), "{}", text(&run));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    has_all(
        &stderr,
        &[
            "nothing to import, so nothing is written: none of the 2 case(s) of `tests/fixtures/import/promptfoo-code/promptfooconfig.yaml` converts: `is-json` assertion; `javascript` assertion",
        ],
    );
    assert!(!out.exists());
}
