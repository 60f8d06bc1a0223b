//! Loader tests: the fixture suites under `tests/fixtures/tasks/` and validation of inline YAML.

use std::path::{Path, PathBuf};

use super::load::check_bytes;
use super::{load_suite, ArgMatcher, Diagnostic, SuiteError, Task, TaskKind, TaskSet, ToolName};

fn fixture(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tasks")
        .join(relative)
}

fn diagnostics(result: Result<super::Suite, SuiteError>) -> Vec<Diagnostic> {
    match result {
        Err(SuiteError::Invalid(diagnostics)) => diagnostics,
        Err(other) => panic!("unexpected error: {other}"),
        Ok(suite) => panic!("loaded {} task(s), expected problems", suite.tasks.len()),
    }
}

/// The problems in an inline task file (named `t.yaml`).
fn problems(yaml: &str) -> Vec<String> {
    let (_, found) = check_bytes(Path::new("t.yaml"), yaml.as_bytes());
    found.iter().map(ToString::to_string).collect()
}

fn tasks(yaml: &str) -> Vec<Task> {
    let (checked, found) = check_bytes(Path::new("t.yaml"), yaml.as_bytes());
    assert!(found.is_empty(), "{found:?}");
    checked.into_iter().map(|c| c.task.unwrap()).collect()
}

#[test]
fn good_suite_loads_three_tasks_from_two_files() {
    let suite = load_suite(&[fixture("good")]).unwrap();
    let ids: Vec<&str> = suite.tasks.iter().map(|t| t.id.as_str()).collect();
    // Files in sorted order: greeting.yml, then issues.yaml.
    assert_eq!(ids, ["greeting", "search-open-login", "close-then-comment"]);
    let greeting = &suite.tasks[0];
    assert_eq!(greeting.kind, TaskKind::NoTool);
    assert!(greeting.expect.no_tool, "no-tool implies no_tool");
    assert!(
        greeting.source.ends_with("good/greeting.yml:2"),
        "{}",
        greeting.source
    );
    let search = &suite.tasks[1];
    assert_eq!(search.max_turns, 6);
    assert_eq!(search.tools, ["search_issues"]);
    assert_eq!(
        search.expect.calls[0].args["query"],
        ArgMatcher::Regex {
            regex: "(?i)login".into()
        }
    );
    assert_eq!(
        search.expect.calls[0].args["status"],
        ArgMatcher::Any { any: true }
    );
    let close = &suite.tasks[2];
    assert_eq!(close.set, TaskSet::Capability);
    assert_eq!(close.max_turns, 8);
    assert_eq!(
        close.tools,
        ["update_issue", "add_comment"],
        "default: the called tools"
    );
    assert!(close.expect.ordered);
    assert!(
        close.source.ends_with("good/issues.yaml:16"),
        "{}",
        close.source
    );
}

#[test]
fn single_task_file_and_defaults() {
    let t =
        tasks("id: a\nprompt: hi\nexpect:\n  calls:\n    - tool: get_issue\n      args: {id: 3}\n");
    assert_eq!(t.len(), 1);
    assert_eq!(
        (t[0].kind, t[0].set, t[0].max_turns),
        (TaskKind::Tool, TaskSet::Regression, 8)
    );
    assert_eq!(t[0].source, "t.yaml:1");
    assert_eq!(
        t[0].expect.calls[0].args["id"],
        ArgMatcher::Literal(serde_json::json!(3))
    );
}

#[test]
fn multi_task_file() {
    let t = tasks(
        "- id: a\n  prompt: one\n  kind: no-tool\n\
         - id: b\n  prompt: two\n  expect: {max_tool_calls: 0, answer_contains: [x]}\n",
    );
    let ids: Vec<&str> = t.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["a", "b"]);
    assert_eq!(t[1].source, "t.yaml:4");
    assert_eq!(t[1].expect.max_tool_calls, Some(0));
}

#[test]
fn exact_matchers_keep_objects() {
    let t = tasks(
        "id: a\nprompt: p\nexpect:\n  calls:\n    - tool: t\n      args:\n        \
         filter: {exact: {a: 1, b: [x]}}\n        tags: [x, 2]\n",
    );
    let args = &t[0].expect.calls[0].args;
    let exact = serde_json::json!({"a": 1, "b": ["x"]});
    assert_eq!(args["filter"], ArgMatcher::Exact { exact });
    assert_eq!(
        args["tags"],
        ArgMatcher::Literal(serde_json::json!(["x", 2]))
    );
}

/// Each bad fixture holds one problem: (file, line, column, message fragment).
const BAD: &[(&str, usize, usize, &str)] = &[
    (
        "unknown-key-task.yaml",
        4,
        1,
        "unknown key `max_turn` in task (did you mean `max_turns`?)",
    ),
    (
        "unknown-key-expect.yaml",
        7,
        3,
        "unknown key `answer_contain` in `expect` (did you mean `answer_contains`?)",
    ),
    (
        "unknown-key-call.yaml",
        7,
        7,
        "unknown key `arg` in expected call (did you mean `args`?)",
    ),
    (
        "unknown-matcher.yaml",
        8,
        17,
        "unknown matcher `regx` for argument `query` (did you mean `regex`?)",
    ),
    (
        "bad-regex.yaml",
        5,
        17,
        "invalid regex in `answer_regex`: unclosed group",
    ),
    (
        "bad-arg-regex.yaml",
        8,
        24,
        "invalid regex in `args.query.regex`: unclosed character class",
    ),
    (
        "wrong-type.yaml",
        4,
        12,
        "`max_turns` must be an integer, got a string",
    ),
    (
        "bad-kind.yaml",
        4,
        7,
        "invalid kind `chat` (expected one of `tool`, `no-tool`, `call`)",
    ),
    (
        "missing-prompt.yaml",
        2,
        1,
        "missing required key `prompt` in task",
    ),
    ("empty-prompt.yaml", 3, 9, "`prompt` is empty"),
    ("bad-id.yaml", 2, 5, "invalid id `Search Login`"),
    (
        "syntax-error.yaml",
        3,
        20,
        "invalid YAML: mapping values are not allowed",
    ),
    (
        "no-tool-with-calls.yaml",
        6,
        3,
        "a `kind: no-tool` task cannot expect calls",
    ),
    ("no-grader.yaml", 4, 1, "`expect` sets no grader"),
    (
        "duplicate-key.yaml",
        4,
        1,
        "duplicate key `prompt` in task (first at line 3)",
    ),
    (
        "max-turns-range.yaml",
        4,
        12,
        "`max_turns` must be between 1 and 100, got 0",
    ),
    (
        "not-a-task.yaml",
        6,
        3,
        "task must be a mapping, got a string",
    ),
    ("empty.yaml", 1, 1, "empty task file"),
];

#[test]
fn each_bad_fixture_reports_its_one_problem_where_it_is() {
    for (file, line, column, fragment) in BAD {
        let path = fixture("bad").join(file);
        let found = diagnostics(load_suite(std::slice::from_ref(&path)));
        assert_eq!(found.len(), 1, "{file}: {found:#?}");
        let d = &found[0];
        assert_eq!(d.file, path, "{file}");
        assert_eq!((d.line, d.column), (*line, *column), "{file}: {d}");
        assert!(d.message.contains(fragment), "{file}: {d}");
        let shown = d.to_string();
        let prefix = format!("{}:{line}:{column}: ", path.display());
        assert!(shown.starts_with(&prefix), "{shown}");
    }
}

#[test]
fn a_bad_directory_reports_every_file() {
    let found = diagnostics(load_suite(&[fixture("bad")]));
    assert_eq!(found.len(), BAD.len(), "{found:#?}");
    let dir = std::fs::read_dir(fixture("bad")).unwrap().count();
    assert_eq!(dir, BAD.len(), "every bad fixture is listed in BAD");
}

#[test]
fn duplicate_ids_across_files_point_at_the_second() {
    let found = diagnostics(load_suite(&[fixture("dup")]));
    assert_eq!(found.len(), 1, "{found:#?}");
    let d = &found[0];
    assert_eq!(d.file, fixture("dup/b.yaml"));
    assert_eq!((d.line, d.column), (2, 5));
    let first = format!("{}:1", fixture("dup/a.yaml").display());
    assert_eq!(
        d.message,
        format!("duplicate id `search-login` (first defined at {first})")
    );
}

#[test]
fn every_problem_in_a_file_is_reported() {
    let found = problems(
        "id: Bad\nprompt: 3\nkind: tools\nset: smoke\nmax_turns: 101\ntools: x\n\
         expect:\n  calls:\n    - tool: t\n      args: {q: {regex: '('}}\n      extra: 1\n  nope: 1\n",
    );
    let expected = [
        "t.yaml:1:5: invalid id `Bad`",
        "t.yaml:2:9: `prompt` must be a string, got an integer (quote it)",
        "t.yaml:3:7: invalid kind `tools` (expected one of `tool`, `no-tool`, `call`)",
        "t.yaml:4:6: invalid set `smoke` (expected one of `regression`, `capability`)",
        "t.yaml:5:12: `max_turns` must be between 1 and 100, got 101",
        "t.yaml:6:8: `tools` must be a list of strings, got a string",
        "t.yaml:10:25: invalid regex in `args.q.regex`",
        "t.yaml:11:7: unknown key `extra` in expected call",
        "t.yaml:12:3: unknown key `nope` in `expect`",
    ];
    assert_eq!(found.len(), expected.len(), "{found:#?}");
    for (found, want) in found.iter().zip(expected) {
        assert!(
            found.starts_with(want),
            "{found:?} does not start with {want:?}"
        );
    }
}

#[test]
fn top_level_shapes() {
    assert_eq!(problems("[]\n"), ["t.yaml:1:1: empty list of tasks"]);
    assert_eq!(
        problems("just text\n"),
        ["t.yaml:1:1: a task file holds a task or a list of tasks, got a string"]
    );
    assert!(problems("a: 1\n---\nb: 2\n")[0].contains("more than one YAML document"));
    assert_eq!(
        problems("- 3\n"),
        ["t.yaml:1:3: task must be a mapping, got an integer"]
    );
}

#[test]
fn non_utf8_files_are_reported_at_the_bad_byte() {
    let (_, found) = check_bytes(Path::new("t.yaml"), b"id: a\nprompt: \xff\n");
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].line, found[0].column), (2, 9));
}

#[test]
fn matcher_mappings_are_checked() {
    let base = "id: a\nprompt: p\nexpect:\n  calls:\n    - tool: t\n      args:\n        x: ";
    let cases = [
        ("{any: false}", "`args.x.any` must be `true`"),
        (
            "{a: 1, b: 2}",
            "argument `x` must be a plain value or one matcher",
        ),
        ("{}", "argument `x` must be a plain value or one matcher"),
        (
            "{regex: 3}",
            "`args.x.regex` must be a string, got an integer",
        ),
        (".nan", "invalid YAML"),
    ];
    for (value, fragment) in cases {
        let found = problems(&format!("{base}{value}\n"));
        assert_eq!(found.len(), 1, "{value}: {found:?}");
        assert!(found[0].contains(fragment), "{value}: {found:?}");
    }
}

#[test]
fn no_tool_contradicting_calls_is_an_error() {
    let found = problems("id: a\nprompt: p\nexpect:\n  calls: [{tool: t}]\n  no_tool: true\n");
    assert_eq!(
        found,
        ["t.yaml:5:3: `no_tool: true` contradicts the expected `calls`"]
    );
}

#[test]
fn missing_expect_on_a_tool_task() {
    assert_eq!(
        problems("id: a\nprompt: p\n"),
        ["t.yaml:1:1: missing required key `expect` in task"]
    );
}

#[test]
fn empty_directory_and_missing_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a task").unwrap();
    let found = diagnostics(load_suite(&[dir.path().to_path_buf()]));
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].to_string(),
        format!(
            "{}: no task files (*.yaml, *.yml) in this directory",
            dir.path().display()
        )
    );
    let missing = dir.path().join("nope");
    assert!(matches!(load_suite(&[missing]), Err(SuiteError::Io { .. })));
    assert!(matches!(load_suite(&[]), Err(SuiteError::Invalid(_))));
}

#[test]
fn mangled_files_never_panic() {
    let good = std::fs::read_to_string(fixture("good/issues.yaml")).unwrap();
    let chars: Vec<char> = good.chars().collect();
    let inserts = [
        "", ":", "- ", "{", "]", "\"", "'", "\t", "\n", "&a ", "*a", "!!int ", "? ", "#",
    ];
    for i in 0..chars.len() {
        for insert in inserts {
            let mut text: String = chars[..i].iter().collect();
            text.push_str(insert);
            // An empty insert deletes the character at `i` instead.
            let skip = usize::from(insert.is_empty());
            text.extend(&chars[(i + skip).min(chars.len())..]);
            let _ = check_bytes(Path::new("m.yaml"), text.as_bytes());
        }
    }
}

proptest::proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in "[-a-z:{}\\[\\], \"'\n#&*!?|>0-9.]{0,80}") {
        let _ = check_bytes(Path::new("p.yaml"), text.as_bytes());
    }
}

#[test]
fn deep_nesting_is_refused_without_overflowing_the_stack() {
    for depth in [20, 23, 24, 25, 64, 1000] {
        let value = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let yaml = format!(
            "id: a\nprompt: p\nexpect:\n  calls:\n    - tool: t\n      args: {{x: {value}}}\n"
        );
        let _ = check_bytes(Path::new("deep.yaml"), yaml.as_bytes());
        let blocks: String = (0..depth)
            .map(|i| format!("{}k:\n", "  ".repeat(i)))
            .collect();
        let _ = check_bytes(Path::new("deep.yaml"), blocks.as_bytes());
    }
    // The deepest file the limit lets through fits in half of a default 2 MiB thread stack.
    let deepest: String = (0..24).map(|i| format!("{}k:\n", "  ".repeat(i))).collect();
    let small_stack = std::thread::Builder::new().stack_size(1 << 20);
    let handle = small_stack
        .spawn(move || check_bytes(Path::new("deep.yaml"), deepest.as_bytes()).1)
        .unwrap();
    let found = handle.join().unwrap();
    assert!(
        found.iter().all(|d| !d.message.contains("invalid YAML")),
        "{found:?}"
    );
    let found = problems(&format!("{}{}\n", "[".repeat(30), "]".repeat(30)));
    assert_eq!(
        found,
        ["t.yaml:1:25: invalid YAML: nested more than 24 levels deep"]
    );
}

#[test]
fn anchors_and_merge_keys_work() {
    let t = tasks(
        "- &base\n  id: a\n  prompt: p\n  expect: {max_tool_calls: 1}\n\
         - <<: *base\n  id: b\n",
    );
    assert_eq!(t[1].id, "b");
    assert_eq!(t[1].prompt, "p");
}

#[test]
fn a_tool_cannot_be_both_expected_and_forbidden() {
    let found =
        problems("id: a\nprompt: p\nexpect:\n  calls: [{tool: t}]\n  forbidden_tools: [u, t]\n");
    assert_eq!(found, ["t.yaml:5:20: `t` is both expected and forbidden"]);
}

#[test]
fn a_judge_is_read_and_counts_as_a_grader() {
    let t = tasks(
        "id: a\nprompt: p\nexpect:\n  judge:\n    rubric: names issue 12\n    \
         host: openai:gpt-4.1-mini\n",
    );
    let judge = t[0].expect.judge.as_ref().unwrap();
    assert_eq!(judge.rubric, "names issue 12");
    assert_eq!(judge.host, "openai:gpt-4.1-mini");
    let t = tasks("id: a\nprompt: p\nexpect: {judge: {rubric: r, host: my-judge}}\n");
    assert_eq!(t[0].expect.judge.as_ref().unwrap().host, "my-judge");
    let t = tasks("id: a\nprompt: p\nexpect: {max_tool_calls: 1}\n");
    assert_eq!(t[0].expect.judge, None);
}

#[test]
fn bad_judges_are_reported_where_they_are() {
    let base = "id: a\nprompt: p\nexpect:\n  judge: ";
    let cases = [
        (
            "{rubric: r}",
            "t.yaml:4:10: missing required key `host` in `judge`",
        ),
        (
            "{host: sim}",
            "t.yaml:4:10: missing required key `rubric` in `judge`",
        ),
        (
            "{rubric: '  ', host: sim}",
            "t.yaml:4:19: `judge.rubric` is empty",
        ),
        (
            "{rubric: r, host: 3}",
            "t.yaml:4:28: `judge.host` must be a string, got an integer (quote it)",
        ),
        (
            "{rubric: r, host: 'gpt:4o'}",
            "t.yaml:4:28: invalid `judge.host` `gpt:4o`: unknown provider `gpt`",
        ),
        (
            "{rubric: r, host: 'openai:'}",
            "t.yaml:4:28: invalid `judge.host` `openai:`: no model after `openai:`",
        ),
        (
            "{rubric: r, host: 'open ai'}",
            "t.yaml:4:28: invalid `judge.host` `open ai`: a host spec has no spaces",
        ),
        (
            "{rubric: r, host: 'opnai:x'}",
            "unknown provider `opnai` (did you mean `openai`?)",
        ),
        (
            "{rubric: r, host: sim, model: x}",
            "t.yaml:4:33: unknown key `model` in `judge`",
        ),
        (
            "yes please",
            "t.yaml:4:10: `judge` must be a mapping, got a string",
        ),
    ];
    for (value, want) in cases {
        let found = problems(&format!("{base}{value}\n"));
        assert_eq!(found.len(), 1, "{value}: {found:?}");
        assert!(found[0].contains(want), "{value}: {found:?}");
    }
}

#[test]
fn new_graders_load_and_their_mistakes_are_named_where_they_are() {
    let loaded = tasks(
        "id: a\nprompt: p\nexpect:\n  calls:\n    - tool: {any_of: [read_file, read_text_file]}\n      result: {contains: [hello], is_error: false}\n    - tool: {pattern: \"get_.*\"}\n  min_tool_calls: 2\n  answer_not_contains: [sorry]\n  max_latency_ms: 30000\n",
    );
    let expect = &loaded[0].expect;
    assert_eq!(
        expect.calls[0].tool,
        ToolName::AnyOf {
            any_of: vec!["read_file".into(), "read_text_file".into()]
        }
    );
    assert_eq!(
        expect.calls[0].result.as_ref().unwrap().is_error,
        Some(false)
    );
    assert!(expect.calls[1].tool.matches("get_issue"));
    assert!(!expect.calls[1].tool.matches("forget_issue"));
    assert_eq!(expect.min_tool_calls, Some(2));
    assert_eq!(expect.answer_not_contains, ["sorry"]);
    assert_eq!(expect.max_latency_ms, Some(30_000));
    // The task's tools default to the names its calls list (a pattern lists none).
    assert_eq!(loaded[0].tools, ["read_file", "read_text_file"]);

    let base = "id: a\nprompt: p\nexpect:\n";
    let cases = [
        (
            "  calls: [{tool: {any_of: [a]}}]\n",
            "t.yaml:4:18: `tool.any_of` needs two names or more (one is a plain `tool`)",
        ),
        (
            "  calls: [{tool: {pattern: \"(\"}}]\n",
            "t.yaml:4:28: invalid regex in `tool.pattern`: unclosed group",
        ),
        (
            "  calls: [{tool: {name: a}}]\n",
            "t.yaml:4:19: unknown key `name` in `tool`",
        ),
        // Issue 37 by design: `result` takes `equals` and `max_chars` too, and the message
        // names them.
        (
            "  calls: [{tool: a, result: {}}]\n",
            "t.yaml:4:29: `result` checks nothing: set `contains`, `is_error`, `equals` or `max_chars`",
        ),
        (
            "  calls: [{tool: a, result: {contain: [x]}}]\n",
            "t.yaml:4:30: unknown key `contain` in `result` (did you mean `contains`?)",
        ),
        (
            "  min_tool_calls: 3\n  max_tool_calls: 2\n",
            "t.yaml:4:19: `min_tool_calls` (3) is above `max_tool_calls` (2)",
        ),
        (
            "  answer_contains: [Ok]\n  answer_not_contains: [ok]\n",
            "t.yaml:5:24: `ok` is both required and forbidden in the answer",
        ),
        (
            "  max_latency_ms: 0\n",
            "t.yaml:4:19: `max_latency_ms` must be at least 1, got 0",
        ),
        // A near miss is the key it misses, never its opposite.
        (
            "  min_tool_call: 1\n",
            "t.yaml:4:3: unknown key `min_tool_call` in `expect` (did you mean `min_tool_calls`?)",
        ),
        (
            "  answer_not_contain: [x]\n",
            "t.yaml:4:3: unknown key `answer_not_contain` in `expect` (did you mean \
             `answer_not_contains`?)",
        ),
    ];
    for (yaml, fragment) in cases {
        let found = problems(&format!("{base}{yaml}"));
        assert_eq!(found, [fragment], "{yaml}");
    }
}

#[test]
fn defaults_files_set_what_the_tasks_at_and_below_them_do_not_say() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("hard/deeper")).unwrap();
    std::fs::write(
        root.join("defaults.yaml"),
        "max_turns: 3\njudge: {host: openai:gpt-judge}\nsetup: [{tool: reset, args: {all: true}}]\n",
    )
    .unwrap();
    std::fs::write(
        root.join("hard/defaults.yml"),
        "defaults:\n  set: capability\n  max_turns: 12\n",
    )
    .unwrap();
    let task = |id: &str, extra: &str| {
        format!(
            "id: {id}\nprompt: p\n{extra}expect:\n  answer_contains: [x]\n  judge: {{rubric: \"is it right?\"}}\n"
        )
    };
    std::fs::write(root.join("top.yaml"), task("top", "")).unwrap();
    std::fs::write(root.join("hard/mid.yaml"), task("mid", "")).unwrap();
    std::fs::write(
        root.join("hard/deeper/own.yaml"),
        task("own", "max_turns: 5\nset: regression\n"),
    )
    .unwrap();
    let suite = load_suite(&[root.to_path_buf()]).unwrap();
    let by_id = |id: &str| suite.tasks.iter().find(|t| t.id == id).unwrap();
    assert_eq!(suite.tasks.len(), 3, "defaults files hold no tasks");
    assert_eq!(
        (by_id("top").max_turns, by_id("top").set),
        (3, TaskSet::Regression)
    );
    assert_eq!(
        (by_id("mid").max_turns, by_id("mid").set),
        (12, TaskSet::Capability),
        "the nearest directory's defaults win"
    );
    assert_eq!(
        (by_id("own").max_turns, by_id("own").set),
        (5, TaskSet::Regression),
        "a task's own keys win"
    );
    for id in ["top", "mid", "own"] {
        let setup: Vec<&str> = by_id(id).setup.iter().map(|c| c.tool.as_str()).collect();
        assert_eq!(setup, ["reset"], "{id}");
        assert_eq!(
            by_id(id).expect.judge.as_ref().unwrap().host,
            "openai:gpt-judge"
        );
    }
    // Without a default host, a judge must name one; a defaults file's unknown key is named.
    std::fs::write(root.join("defaults.yaml"), "max_turn: 3\n").unwrap();
    let Err(SuiteError::Invalid(found)) = load_suite(&[root.to_path_buf()]) else {
        panic!("an unknown key in defaults.yaml is a problem");
    };
    let text: Vec<String> = found.iter().map(|d| d.to_string()).collect();
    assert!(
        text.iter().any(|d| d.contains(
            "defaults.yaml:1:1: unknown key `max_turn` in defaults (did you mean `max_turns`?)"
        )),
        "{text:?}"
    );
    assert!(
        text.iter()
            .any(|d| d.contains("top.yaml") && d.contains("missing required key `host` in `judge`")),
        "{text:?}"
    );
}

#[test]
fn expected_to_fail_is_a_boolean_of_call_tasks_only() {
    let call = "- id: c\n  kind: call\n  call: {tool: t}\n  expected_to_fail: true\n  expect: {is_error: false}\n";
    assert!(tasks(call)[0].expected_to_fail);
    let unset = "- id: c\n  kind: call\n  call: {tool: t}\n  expect: {is_error: false}\n";
    assert!(!tasks(unset)[0].expected_to_fail);
    let wrong = problems(&call.replace("true", "yes"));
    assert!(
        wrong.iter().any(|p| p.contains("`expected_to_fail`")),
        "{wrong:?}"
    );
    let model = "- id: m\n  prompt: p\n  expected_to_fail: true\n  expect: {no_tool: true}\n";
    let found = problems(model);
    assert!(
        found
            .iter()
            .any(|p| p.contains("`expected_to_fail` belongs to `kind: call` tasks")),
        "{found:?}"
    );
}

#[test]
fn a_conversation_keeps_its_turns_and_grades_each_on_its_own() {
    let task = &tasks(
        "id: find-then-close\nmax_turns: 5\nstop_on_failure: true\nturns:\n  \
         - prompt: Find open login issues in apollo\n    expect:\n      \
         calls: [{tool: search_issues}]\n  \
         - prompt: Close the first one\n    max_turns: 2\n    expect:\n      \
         calls: [{tool: update_issue, args: {status: closed}}]\n",
    )[0];
    assert!(task.is_conversation());
    assert!(task.stop_on_failure);
    assert_eq!(
        task.prompt, "Find open login issues in apollo",
        "the first turn's"
    );
    assert_eq!(task.turns.len(), 2);
    assert_eq!(
        (task.turns[0].max_turns, task.turns[1].max_turns),
        (5, 2),
        "the task's max_turns unless a turn sets its own"
    );
    // The tools exercised are those the turns expect; the task-level expect sets nothing.
    assert_eq!(task.tools, ["search_issues", "update_issue"]);
    assert!(!task.grades_whole());
    let renamed = task.renamed(&[("update_issue".to_owned(), "edit_issue".to_owned())].into());
    let second = renamed.turns[1].expect.as_ref().unwrap();
    assert_eq!(second.calls[0].tool, ToolName::Literal("edit_issue".into()));
}

#[test]
fn malformed_turns_are_refused_where_they_are_with_the_valid_keys() {
    let found = problems("id: a\nturns: {prompt: hi}\n");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("t.yaml:2:8: `turns` must be a list"),
        "{found:?}"
    );
    assert!(
        found[0].contains("{`prompt`, `expect`, `max_turns`}"),
        "{found:?}"
    );
    let found = problems("id: a\nturns: []\n");
    assert!(found[0].contains("`turns` is empty"), "{found:?}");
    let found = problems("id: a\nturns:\n  - expect: {no_tool: true}\n  - promt: hi\n");
    assert!(
        found[0].starts_with("t.yaml:3:5: turn 1 of `turns` has no `prompt`"),
        "{found:?}"
    );
    assert!(
        found.iter().any(|p| p.contains("did you mean `prompt`")),
        "{found:?}"
    );
    let found = problems("id: a\nprompt: hi\nturns: [{prompt: x, expect: {no_tool: true}}]\n");
    assert!(
        found[0].contains("`prompt` and `turns` cannot both be set"),
        "{found:?}"
    );
    let found = problems(
        "id: a\nkind: call\ncall: {tool: t}\nexpect: {is_error: false}\nturns: [{prompt: x}]\n",
    );
    assert!(
        found[0].contains("`turns` does not apply to a `kind: call` task"),
        "{found:?}"
    );
    let found = problems("id: a\nturns: [{prompt: x}]\n");
    assert!(found[0].contains("needs an `expect` on the task or on one of its turns"));
    let found = problems("id: a\nprompt: x\nstop_on_failure: true\nexpect: {no_tool: true}\n");
    assert!(
        found[0].contains("`stop_on_failure` applies to a conversation"),
        "{found:?}"
    );
    let found = problems("id: a\nturns: [{prompt: x, expect: {judge: {rubric: r, host: sim}}}]\n");
    assert!(found
        .iter()
        .any(|p| p.contains("a judge reads the whole conversation")));
}

#[test]
fn a_simulated_user_is_read_and_its_mistakes_refused_with_the_valid_keys() {
    let task = &tasks(
        "id: vague\nprompt: Hi\nuser:\n  host: openai:gpt-4.1\n  goal: Show me issue 3\n  \
         done_when: {calls: [{tool: get_issue}]}\nexpect: {calls: [{tool: get_issue}]}\n",
    )[0];
    let user = task.user.as_ref().unwrap();
    assert_eq!((user.host.as_str(), user.max_turns), ("openai:gpt-4.1", 5));
    assert!(task.is_conversation() && task.turns.is_empty());
    assert_eq!(
        task.all_expectations().count(),
        2,
        "the task's and done_when"
    );
    let found = problems("id: a\nprompt: Hi\nuser: {goal: g}\nexpect: {no_tool: true}\n");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("t.yaml:3:7: `user` has no `host`"),
        "{found:?}"
    );
    assert!(found[0].contains("{`host`, `persona`, `goal`, `max_turns`, `done_when`}"));
    let found = problems(
        "id: a\nprompt: Hi\nuser: {host: sim, goal: g, persna: p}\nexpect: {no_tool: true}\n",
    );
    assert!(found[0].contains("did you mean `persona`"), "{found:?}");
    let found =
        problems("id: a\nprompt: Hi\nuser: {host: 'bad host', goal: g}\nexpect: {no_tool: true}\n");
    assert!(found[0].contains("invalid `user.host`"), "{found:?}");
    let found = problems(
        "id: a\nturns: [{prompt: x}]\nuser: {host: sim, goal: g}\nexpect: {no_tool: true}\n",
    );
    assert!(
        found[0].contains("`user` and `turns` cannot both be set"),
        "{found:?}"
    );
    let found = problems(
        "id: a\nprompt: Hi\nuser: {host: sim, goal: g, max_turns: 0}\nexpect: {no_tool: true}\n",
    );
    assert!(
        found[0].contains("`user.max_turns` must be between 1 and 20"),
        "{found:?}"
    );
}

#[test]
fn a_task_may_start_from_a_server_prompt_attach_resources_and_grade_them() {
    let [task] = &tasks(
        "- id: t\n  prompt: {server_prompt: triage_issue, args: {id: \"5\"}}\n  \
         attach: [\"tracker://issues/5\"]\n  expect:\n    resources_read: [\"tracker://issues/*\"]\n    \
         prompts_used: [triage_issue]\n",
    )[..] else {
        panic!("one task")
    };
    let prompt = task.server_prompt.as_ref().unwrap();
    assert_eq!(
        (prompt.name.as_str(), prompt.args["id"].as_str()),
        ("triage_issue", "5")
    );
    assert_eq!(task.prompt, "/triage_issue id=5");
    assert_eq!(task.attach, ["tracker://issues/5"]);
    assert_eq!(task.expect.resources_read, ["tracker://issues/*"]);
    assert_eq!(task.expect.prompts_used, ["triage_issue"]);
    assert!(task.needs_resources() && task.needs_prompts());
}

#[test]
fn exposure_keys_are_refused_where_they_mean_nothing() {
    let cases = [
        (
            "- id: t\n  prompt: {server_prompt: 5}\n  expect: {prompts_used: [x]}\n",
            "2:",
        ),
        (
            "- id: t\n  prompt: {name: x}\n  expect: {prompts_used: [x]}\n",
            "unknown key `name`",
        ),
        (
            "- id: t\n  prompt: {server_prompt: x, args: {id: 5}}\n  expect: {prompts_used: [x]}\n",
            "prompt.args.id",
        ),
        (
            "- id: t\n  prompt: p\n  attach: [a, a]\n  expect: {no_tool: true}\n",
            "`a` is attached twice",
        ),
        (
            "- id: t\n  kind: call\n  call: {resource: u}\n  attach: [u]\n  expect: {is_error: false}\n",
            "attach",
        ),
        (
            "- id: t\n  turns:\n    - prompt: p\n      expect: {resources_read: [u]}\n",
            "whole conversation",
        ),
        (
            "- id: t\n  prompt: p\n  expect: {resources_read: [\"\"]}\n",
            "empty string in `resources_read`",
        ),
    ];
    for (yaml, wanted) in cases {
        let found = problems(yaml);
        assert!(
            found.iter().any(|p| p.contains(wanted)),
            "{yaml}: wanted `{wanted}` in {found:?}"
        );
    }
}
