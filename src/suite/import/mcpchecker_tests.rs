//! The mcpchecker converter on an eval and task files written for the demo server.

use std::path::Path;

use super::mcpchecker::convert;
use super::source::parse;
use super::tests::Files;
use super::Converted;

const TASK: &str = r#"
kind: Task
apiVersion: mcpchecker/v1alpha2
metadata:
  name: find-login-issues
  difficulty: easy
spec:
  setup:
    - script: {inline: "echo reset"}
  verify:
    - llmJudge:
        contains: "issue 1 is about login"
    - http: {url: "http://127.0.0.1:9/x"}
  prompt:
    file: prompt.txt
"#;

fn convert_eval(eval: &str) -> Converted {
    let sources = Files::new(&[
        ("../tasks/login/task.yaml", TASK),
        (
            "../tasks/login/prompt.txt",
            "Which open issues mention login in apollo?\n",
        ),
        ("../tasks/other/notes.yaml", "kind: Agent\n"),
    ]);
    convert(&parse(eval).unwrap(), Path::new("eval.yaml"), &sources).unwrap()
}

#[test]
fn an_eval_gives_each_task_its_sets_assertions() {
    let converted = convert_eval(
        r#"
kind: Eval
metadata: {name: demo}
config:
  mcpConfigFile: mcp-config.yaml
  taskSets:
    - glob: ../tasks/*/*.yaml
      assertions:
        toolsUsed:
          - {server: tracker, tool: search_issues}
          - {server: tracker, toolPattern: "get_"}
        requireAny:
          - {server: tracker, tool: get_issue}
          - {server: tracker, tool: fetch_issue}
        toolsNotUsed:
          - {server: tracker, tool: create_issue}
          - {server: tracker, toolPattern: "delete.*"}
        minToolCalls: 1
        maxToolCalls: 6
        resourcesRead:
          - {server: tracker, uri: "tracker://x"}
          - {server: tracker, uriPattern: "issues/.*"}
        resourcesNotRead:
          - {server: tracker, uriPattern: "(a|b)"}
        promptsUsed:
          - {server: tracker, prompt: triage_issue}
        promptsNotUsed:
          - {server: tracker}
        noDuplicateCalls: true
"#,
    );
    let [case] = converted.cases.as_slice() else {
        panic!("one case: {converted:?}")
    };
    assert_eq!(case.name, "find-login-issues");
    assert_eq!(
        case.prompt.as_deref(),
        Some("Which open issues mention login in apollo?")
    );
    let tools: Vec<String> = case.calls.iter().map(|c| c.tool.to_string()).collect();
    assert_eq!(
        tools,
        [
            "`search_issues`",
            "a tool matching /.*get_.*/",
            "one of `get_issue`, `fetch_issue`"
        ]
    );
    assert_eq!(case.forbidden_tools, ["create_issue"]);
    assert_eq!(
        (case.min_tool_calls, case.max_tool_calls),
        (Some(1), Some(6))
    );
    assert_eq!(
        case.rubrics,
        ["The final answer contains this information, in any wording: issue 1 is about login"]
    );
    assert_eq!(case.resources_read, ["tracker://x", "*issues/*"]);
    assert!(case.resources_not_read.is_empty());
    assert_eq!(
        (&case.prompts_used[..], &case.prompts_not_used[..]),
        (&["triage_issue".to_owned()][..], &["*".to_owned()][..])
    );
    let missed = case.not_converted.join("\n");
    for what in [
        "`setup`",
        "verify step `http`",
        "`toolsNotUsed` pattern",
        "`resourcesNotRead` pattern /(a|b)/",
        "`noDuplicateCalls`",
    ] {
        assert!(missed.contains(what), "{what}: {missed}");
    }
    assert!(converted
        .notes
        .iter()
        .any(|n| n.contains("mcp-config.yaml")));
    assert!(converted
        .notes
        .iter()
        .any(|n| n.contains("notes.yaml") && n.contains("skipped")));
}

#[test]
fn call_order_makes_the_calls_ordered() {
    let converted = convert_eval(
        r#"
kind: Eval
config:
  taskSets:
    - path: ../tasks/login/task.yaml
      assertions:
        toolsUsed: [{tool: get_issue}]
        requireAny: [{tool: add_comment}, {tool: update_issue}]
        callOrder:
          - {type: tool, name: search_issues}
          - {type: tool, name: get_issue}
          - {type: tool, name: add_comment}
"#,
    );
    let case = &converted.cases[0];
    assert!(case.ordered());
    // `get_issue` is a step of the order; "any of" is met by the `add_comment` step.
    let tools: Vec<String> = case.calls.iter().map(|c| c.tool.to_string()).collect();
    assert_eq!(tools, ["`search_issues`", "`get_issue`", "`add_comment`"]);
    assert!(
        !case.not_converted.iter().any(|n| n.contains("besides")),
        "{:?}",
        case.not_converted
    );
}

#[test]
fn label_selectors_pick_tasks() {
    let converted = convert_eval(
        r#"
kind: Eval
config:
  taskSets:
    - glob: ../tasks/*/*.yaml
      labelSelector: {suite: smoke}
"#,
    );
    assert!(converted.cases.is_empty());
}

#[test]
fn a_lone_task_file_and_the_legacy_form() {
    let legacy = r#"
kind: Task
metadata: {name: legacy one}
steps:
  setup: {file: setup.sh}
  verify: {exact: "There are 3 open issues."}
  prompt: {inline: "How many open issues are there in zephyr?"}
"#;
    let converted = convert(
        &parse(legacy).unwrap(),
        Path::new("l.yaml"),
        &Files::new(&[]),
    )
    .unwrap();
    let case = &converted.cases[0];
    assert_eq!(
        case.prompt.as_deref(),
        Some("How many open issues are there in zephyr?")
    );
    assert_eq!(
        case.rubrics,
        ["The final answer means the same as this, in any wording: There are 3 open issues."]
    );
    assert!(case.not_converted[0].contains("`setup`"));
    assert!(converted.notes[0].contains("eval file"));
}

#[test]
fn other_files_are_refused_with_the_reason() {
    let err = |yaml: &str| {
        convert(&parse(yaml).unwrap(), Path::new("x.yaml"), &Files::new(&[]))
            .unwrap_err()
            .message
    };
    assert!(err("kind: Agent\n").contains("`kind: Agent`"));
    assert!(err("prompts: [a]\ntests: []\n").contains("promptfoo"));
    assert!(err("- id: a\n").contains("expected a mapping"));
    assert!(err("kind: Eval\n").contains("taskSets"));
}

#[test]
fn files_a_glob_matches_that_are_not_tasks_are_skipped_and_broken_tasks_refused() {
    let eval = parse("kind: Eval\nconfig:\n  taskSets:\n    - glob: t/*.yaml\n").unwrap();
    let run = |files: &[(&str, &str)]| convert(&eval, Path::new("eval.yaml"), &Files::new(files));
    let manifest = "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: apps/v1\nkind: Deployment\n";
    let helm = "image: {{ .Values.image }}\n  bad: [\n";
    let converted = run(&[
        ("t/a.yaml", TASK),
        ("t/manifest.yaml", manifest),
        ("t/chart.yaml", helm),
        ("t/plain.yaml", "name: x\n"),
    ])
    .unwrap();
    assert_eq!(converted.cases.len(), 1);
    let skipped: Vec<&String> = converted
        .notes
        .iter()
        .filter(|n| n.starts_with("skipped"))
        .collect();
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    assert!(skipped[0].contains("t/chart.yaml") && skipped[0].contains("invalid YAML"));
    assert!(skipped[1].contains("2 YAML documents: `kind: ConfigMap`, `kind: Deployment`"));
    assert!(skipped[2].contains("t/plain.yaml") && skipped[2].contains("no `kind`"));

    let broken = "kind: Task\nspec: [\n";
    let err = run(&[("t/a.yaml", broken)]).unwrap_err().message;
    assert!(
        err.starts_with("taskSets[0]: task file `t/a.yaml`:"),
        "{err}"
    );
    let two = format!("{TASK}---\nkind: ConfigMap\n");
    let err = run(&[("t/a.yaml", &two)]).unwrap_err().message;
    assert!(
        err.contains("an mcpchecker task among 2 YAML documents"),
        "{err}"
    );
    let err = run(&[("t/a.yaml", "kind: Task\napiVersion: v1\n")])
        .unwrap_err()
        .message;
    assert!(err.contains("unknown `apiVersion: v1`"), "{err}");
}

#[test]
fn a_task_two_sets_select_is_one_task_with_both_sets_assertions() {
    let converted = convert_eval(
        r#"
kind: Eval
config:
  taskSets:
    - glob: ../tasks/*/*.yaml
      assertions: {toolsUsed: [{tool: search_issues}], maxToolCalls: 6}
    - path: ../tasks/login/task.yaml
      assertions: {toolsNotUsed: [{tool: create_issue}], maxToolCalls: 4}
"#,
    );
    let [case] = converted.cases.as_slice() else {
        panic!("one case: {converted:?}")
    };
    assert_eq!(case.calls.len(), 1);
    assert_eq!(case.forbidden_tools, ["create_issue"]);
    assert_eq!(case.max_tool_calls, Some(4));
    // The file that is no task is skipped once, with the set whose glob matched it.
    let skipped: Vec<&String> = converted
        .notes
        .iter()
        .filter(|n| n.contains("notes.yaml"))
        .collect();
    assert_eq!(skipped.len(), 1, "{:?}", converted.notes);
    assert!(
        skipped[0].contains("the glob of taskSets[0] matches"),
        "{skipped:?}"
    );
}

#[test]
fn placeholders_leave_a_prompt_or_a_rubric_out() {
    let task = r#"
kind: Task
apiVersion: mcpchecker/v1alpha2
metadata: {name: p}
spec:
  setup:
  verify:
    - llmJudge: {contains: "{steps.kubernetes.listContexts.count} contexts"}
    - llmJudge: {exact: "three contexts"}
  cleanup:
  prompt: {inline: "Delete the pod {steps.setup_0.name}"}
"#;
    let converted = convert(&parse(task).unwrap(), Path::new("p.yaml"), &Files::new(&[])).unwrap();
    let case = &converted.cases[0];
    assert_eq!(case.prompt, None);
    assert_eq!(
        case.rubrics,
        ["The final answer means the same as this, in any wording: three contexts"]
    );
    let missed = case.not_converted.join("\n");
    assert!(
        missed
            .contains("the prompt names `{steps.setup_0.name}`, filled by mcpchecker at run time"),
        "{missed}"
    );
    assert!(
        missed.contains("`{steps.kubernetes.listContexts.count}`")
            && missed.contains("left out of the rubric"),
        "{missed}"
    );
    assert_eq!(
        case.not_converted.len(),
        2,
        "empty setup/cleanup say nothing: {missed}"
    );
}

#[test]
fn a_list_of_prompts_is_no_mcpchecker_conversation_and_is_said_so() {
    // mcpchecker's `prompt` is one step object (`inline` or `file`): it has no multi-prompt
    // task, so a list is said as not converted rather than guessed into turns.
    let task = r#"
kind: Task
apiVersion: mcpchecker/v1alpha2
metadata: {name: two-prompts}
spec:
  prompt:
    - inline: Find login issues
    - inline: Close the first one
"#;
    let converted = convert(
        &parse(task).unwrap(),
        Path::new("two-prompts.yaml"),
        &Files::new(&[]),
    )
    .unwrap();
    let case = &converted.cases[0];
    assert_eq!(case.prompt, None);
    assert!(case.turns.is_empty());
    assert!(
        case.not_converted[0].contains("`prompt` is a list")
            && case.not_converted[0].contains("`turns:`"),
        "{:?}",
        case.not_converted
    );
}
