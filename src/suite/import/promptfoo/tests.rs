//! The promptfoo converter on configs written for the demo server, and its pieces.

use serde_json::{Map, Value};

use super::config::convert;
use super::prompts::fill;
use crate::suite::import::case::Converted;
use crate::suite::import::source::parse;
use crate::suite::import::tests::Files;

fn run(yaml: &str, files: &[(&str, &str)]) -> Converted {
    convert(&parse(yaml).unwrap(), &Files::new(files)).unwrap()
}

const CONFIG: &str = r#"
description: Tracker MCP
prompts:
  - "You help with the issue tracker. {{request}}"
providers:
  - id: openai:chat:gpt-4.1-mini
    config:
      mcp:
        enabled: true
        server:
          command: mcpeval
          args: [demo-server, --release, 1.4.0]
          name: tracker
defaultTest:
  assert:
    - type: not-icontains
      value: "as an AI"
tests:
  - description: Login issues in apollo
    vars:
      request: Which open issues in apollo are about login?
      project: apollo
    assert:
      - type: trajectory:tool-args-match
        value:
          name: search_issues
          args: {project: "{{project}}"}
      - type: icontains
        value: login
      - type: llm-rubric
        value: Lists the open login issues of apollo
        provider: openai:gpt-4.1
      - type: javascript
        value: output.length < 500
      - type: not-trajectory:tool-used
        value: [create_issue, update_issue]
  - description: Show issue 3 then comment
    vars: {request: "Show issue 3, then add the comment 'seen'"}
    assert:
      - type: trajectory:tool-sequence
        value: {steps: [get_issue, add_comment], mode: exact}
      - type: tool-call-f1
        value: get_issue, add_comment
      - type: is-json
      - type: regex
        value: "(?i)comment(ed)? added"
      - type: contains-any
        value: [done, added]
"#;

#[test]
fn a_config_for_the_demo_server_converts_test_by_test() {
    let converted = run(CONFIG, &[]);
    let [login, show] = converted.cases.as_slice() else {
        panic!("two cases: {converted:#?}")
    };
    assert_eq!(login.name, "Login issues in apollo");
    assert_eq!(
        login.prompt.as_deref(),
        Some("You help with the issue tracker. Which open issues in apollo are about login?")
    );
    assert_eq!(login.calls.len(), 1);
    assert_eq!(login.calls[0].args["project"], "apollo");
    assert_eq!(login.answer_contains, ["login"]);
    assert_eq!(login.answer_not_contains, ["as an AI"]);
    assert_eq!(login.forbidden_tools, ["create_issue", "update_issue"]);
    assert_eq!(login.rubrics, ["Lists the open login issues of apollo"]);
    assert!(login
        .not_converted
        .iter()
        .any(|n| n.contains("`javascript`")));
    assert!(login.notes.iter().any(|n| n.contains("openai:gpt-4.1")));

    assert!(show.ordered());
    let tools: Vec<String> = show.calls.iter().map(|c| c.tool.to_string()).collect();
    assert_eq!(tools, ["`get_issue`", "`add_comment`"]);
    assert_eq!(show.max_tool_calls, Some(2), "mode exact: no other call");
    assert_eq!(show.answer_regex.as_deref(), Some("(?i)comment(ed)? added"));
    let missed = show.not_converted.join("\n");
    for what in [
        "`is-json`",
        "precision",
        "`contains-any`: a task has one `answer_regex`",
    ] {
        assert!(missed.contains(what), "{what}: {missed}");
    }
    let notes = converted.notes.join("\n");
    assert!(
        notes.contains("`mcpeval run --host openai:gpt-4.1-mini`"),
        "{notes}"
    );
    assert!(
        notes.contains("--baseline \"mcpeval demo-server --release 1.4.0\""),
        "{notes}"
    );
}

#[test]
fn templates_are_filled_and_what_cannot_be_is_said() {
    let mut vars = Map::new();
    vars.insert("q".into(), Value::from("login"));
    vars.insert("n".into(), Value::from(3));
    assert_eq!(
        fill("Find {{q}} ({{ n }})", &vars).unwrap(),
        "Find login (3)"
    );
    assert_eq!(
        fill("{{ q | upper }} {% if x %}", &vars).unwrap_err().0,
        ["`{{ q | upper }}`", "`{% if x %}`"]
    );
    let converted = run(
        "prompts: ['{{missing}}']\ntests:\n  - vars: {q: a}\n    assert: [{type: contains, value: a}]\n",
        &[],
    );
    let case = &converted.cases[0];
    assert_eq!(case.prompt, None);
    assert!(case.not_converted[0].contains("`{{missing}}`"));
    // A var whose value is a template: filled from the other vars, or said.
    vars.insert("r".into(), Value::from("about {{q}}"));
    vars.insert("s".into(), Value::from("titled {{title}}"));
    assert_eq!(fill("Issues {{r}}", &vars).unwrap(), "Issues about login");
    assert_eq!(
        fill("The note {{s}}", &vars).unwrap_err().0,
        ["`{{title}}`"]
    );
}

#[test]
fn prompts_from_files_and_chat_messages() {
    let converted = run(
        r#"
prompts:
  - file://prompts.txt
  - id: file://chat.json
    label: chat
  - file://build.py
tests:
  - description: one
    vars: {q: login}
    assert: [{type: icontains, value: login}]
"#,
        &[
            ("prompts.txt", "Find {{q}}\n---\nSearch for {{q}}\n"),
            (
                "chat.json",
                r#"[{"role": "system", "content": "Be brief"}, {"role": "user", "content": "Look up {{q}}"}]"#,
            ),
        ],
    );
    let prompts: Vec<Option<&str>> = converted
        .cases
        .iter()
        .map(|c| c.prompt.as_deref())
        .collect();
    assert_eq!(
        prompts,
        [
            Some("Find login"),
            Some("Search for login"),
            Some("Look up login"),
            None
        ]
    );
    let names: Vec<&str> = converted.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["one prompt 1", "one prompt 2", "one chat", "one prompt 4"]
    );
    assert!(converted.cases[2].notes[0].contains("(system) were dropped"));
    assert!(converted.cases[3].notes[0].contains("is code"));
}

#[test]
fn counts_and_lists_of_values() {
    let converted = run(
        r#"
prompts: ["{{q}}"]
tests:
  - vars: {q: [a, b]}
    assert: [{type: contains, value: a}]
  - vars: {q: "List the projects"}
    assert:
      - {type: trajectory:step-count, value: {type: tool, min: 1, max: 3}}
      - {type: trajectory:tool-used, value: {pattern: "list_*", min: 2}}
      - {type: latency, threshold: 5000}
      - {type: similar, value: "x", threshold: 0.8}
"#,
        &[],
    );
    let [listed, counted] = converted.cases.as_slice() else {
        panic!("{converted:#?}")
    };
    assert!(listed.not_converted[0].contains("is a list"));
    assert_eq!(
        (counted.min_tool_calls, counted.max_tool_calls),
        (Some(1), Some(3))
    );
    assert_eq!(
        counted.calls[0].tool.to_string(),
        "a tool matching /list_.*/"
    );
    assert_eq!(counted.max_latency_ms, Some(5000));
    let missed = counted.not_converted.join("\n");
    assert!(missed.contains("counts for a tool matching"), "{missed}");
    assert!(missed.contains("`similar` assertion"), "{missed}");
}

#[test]
fn not_a_promptfoo_config() {
    let err = |yaml: &str| {
        convert(&parse(yaml).unwrap(), &Files::new(&[]))
            .unwrap_err()
            .message
    };
    assert!(err("kind: Task\nmetadata: {name: a}\n").contains("--from mcpchecker"));
    assert!(err("- id: a\n").contains("expected a mapping"));
    assert!(err("description: x\n").contains("no `tests`"));
}

const TURNS: &str =
    include_str!("../../../../tests/fixtures/import/promptfoo-turns/promptfooconfig.yaml");
const TURNS_PROMPT: &str =
    include_str!("../../../../tests/fixtures/import/promptfoo-turns/prompt.json");

#[test]
fn tests_of_a_conversation_prompt_become_the_turns_of_one_task_per_conversation_id() {
    let converted = run(TURNS, &[("prompt.json", TURNS_PROMPT)]);
    let [login, projects] = converted.cases.as_slice() else {
        panic!("one case per conversation id: {converted:#?}")
    };
    assert_eq!(login.name, "login_thread");
    let prompts: Vec<Option<&str>> = login.turns.iter().map(|t| t.prompt.as_deref()).collect();
    assert_eq!(
        prompts,
        [
            Some("Find open issues about login in project apollo"),
            Some("Close the first issue you found")
        ],
        "the `_conversation` loop is history mcpeval's turns carry; the last user message is each turn"
    );
    assert_eq!(login.prompt, login.turns[0].prompt);
    // Each test's checks grade its own turn.
    let (first, second) = (&login.turns[0], &login.turns[1]);
    assert_eq!(first.calls[0].tool.to_string(), "`search_issues`");
    assert_eq!(first.calls[0].args["status"], "open");
    assert_eq!(first.answer_contains, ["login"]);
    assert_eq!(second.calls[0].tool.to_string(), "`update_issue`");
    assert_eq!(second.calls[0].args["id"], 1);
    assert!(
        second.rubrics.is_empty(),
        "a judge reads the whole conversation"
    );
    // The rubric grades the whole conversation, said of its turn.
    assert_eq!(
        login.rubrics,
        ["About the answer to the user's message 2 (\"Close the first issue you found\"): Says the issue is now closed"]
    );
    assert!(login.grades_whole() && login.has_check());
    let missed = login.not_converted.join("\n");
    assert!(
        missed.contains("turn 2: `javascript` assertion"),
        "{missed}"
    );
    assert!(login
        .notes
        .iter()
        .any(|n| n.contains("(system) were dropped")));

    // A turn none of whose checks converts is sent and not graded; promptfoo's
    // `disableConversationVar` is said.
    assert_eq!(projects.turns.len(), 2);
    assert!(!projects.turns[1].grades_whole());
    let notes = projects.notes.join("\n");
    assert!(notes.contains("turn 2 is sent and not graded"), "{notes}");
    assert!(
        notes.contains("turn 2: `options.disableConversationVar`"),
        "{notes}"
    );
}

#[test]
fn tests_without_a_conversation_id_share_one_conversation_and_a_prompt_without_the_var_has_none() {
    let yaml = r#"
prompts: ["{% for c in _conversation %}{{ c.input }} {% endfor %}{{ q }}"]
tests:
  - vars: {q: Show me issue 3}
    assert: [{type: trajectory:tool-used, value: get_issue}]
  - vars: {q: "Now the {{missing}}"}
    assert: [{type: icontains, value: zephyr}]
"#;
    let converted = run(yaml, &[]);
    let [case] = converted.cases.as_slice() else {
        panic!("{converted:#?}")
    };
    assert_eq!(case.name, "conversation");
    assert_eq!(
        case.prompt, None,
        "turn 2 cannot be made, and it answers turn 1"
    );
    let missed = case.not_converted.join("\n");
    assert!(
        missed.contains("turn 2: the prompt: `{{missing}}`"),
        "{missed}"
    );
    assert!(missed.contains("turn 2 has no prompt"), "{missed}");

    // Without `_conversation` in the prompt promptfoo sends each test alone.
    let alone = run(
        &yaml.replace("{% for c in _conversation %}{{ c.input }} {% endfor %}", ""),
        &[],
    );
    assert_eq!(alone.cases.len(), 2);
    assert!(alone.cases.iter().all(|c| c.turns.is_empty()));
}

#[test]
fn a_chat_history_of_several_user_messages_becomes_turns_graded_on_the_last() {
    let converted = run(
        include_str!("../../../../tests/fixtures/import/promptfoo-turns/multishot.yaml"),
        &[],
    );
    let [case] = converted.cases.as_slice() else {
        panic!("{converted:#?}")
    };
    let prompts: Vec<&str> = case
        .turns
        .iter()
        .filter_map(|t| t.prompt.as_deref())
        .collect();
    assert_eq!(
        prompts,
        [
            "Show me issue 3",
            "Which other issues are open in that project?"
        ]
    );
    assert!(!case.turns[0].grades_whole(), "history: sent, not graded");
    let last = &case.turns[1];
    assert_eq!(last.calls[0].args["project"], "zephyr");
    assert_eq!(last.forbidden_tools, ["update_issue"]);
    assert!(case
        .notes
        .iter()
        .any(|n| n.contains("other than the user's were dropped")));
}

#[test]
fn a_simulated_user_s_conversation_is_left_out_with_how_to_write_it() {
    // promptfoo's site/docs/providers/simulated-user.md: the provider on `defaultTest`, the
    // user's `instructions` per test; the prompt is the agent's system prompt.
    let converted = run(
        r#"
prompts:
  - You are a helpful agent for the issue tracker.
providers: [openai:gpt-4.1-mini]
defaultTest:
  provider:
    id: 'promptfoo:simulated-user'
    config: {maxTurns: 5}
tests:
  - vars: {instructions: You want the open login issues of apollo closed.}
    assert: [{type: llm-rubric, value: The login issues are closed}]
  - provider: openai:gpt-4.1-mini
    vars: {instructions: unused}
    assert: [{type: icontains, value: hello}]
"#,
        &[],
    );
    let [user, plain] = converted.cases.as_slice() else {
        panic!("{converted:#?}")
    };
    assert_eq!(user.prompt, None, "the prompt is no user's request");
    assert!(
        user.not_converted[0].contains("`promptfoo:simulated-user`")
            && user.not_converted[0].contains("`user: {host, goal}`"),
        "{:?}",
        user.not_converted
    );
    assert_eq!(
        plain.prompt.as_deref(),
        Some("You are a helpful agent for the issue tracker."),
        "a test's own provider wins over defaultTest's"
    );
}
