//! Sampling and elicitation answered during trials (issue 52, item 3), on the real
//! `@modelcontextprotocol/server-everything` 2026.8.31 over stdio: its `trigger-sampling-request`
//! and `trigger-elicitation-request` tools, listed only to a client that declares the capability,
//! called by call tasks and by the simulated model; recorded and replayed; answers that do not
//! fit the request's schema; malformed task keys.

use std::path::Path;
use std::process::Command;

use crate::common::{bin, episodes, everything_server, mcpeval, spawn_listening, temp_dir, text};
use mcpeval::episode::Episode;

/// Runs `suite` against server-everything on both sides (its tools are not marked read-only:
/// `--allow-writes`), into `out`; more arguments after.
fn run(suite: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let server = everything_server();
    let mut args = vec![
        "run",
        "--baseline",
        &server,
        "--candidate",
        &server,
        "--suite",
        suite.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--allow-writes",
        "--seed",
        "7",
    ];
    args.extend_from_slice(extra);
    mcpeval(&args)
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

fn of<'a>(episodes: &'a [Episode], task: &str) -> Vec<&'a Episode> {
    episodes.iter().filter(|e| e.task_id == task).collect()
}

const CALL_TASKS: &str = r#"
- id: sample-reply
  kind: call
  call: {tool: trigger-sampling-request, args: {prompt: "say hi", maxTokens: 20}}
  sampling: {reply: "hello from the test"}
  expect:
    result_contains: ["hello from the test"]
    sampled: {min: 1, max: 1}
- id: elicit-answers
  kind: call
  call: {tool: trigger-elicitation-request, args: {}}
  elicitation: {answers: {name: Ada Lovelace, check: true}}
  expect:
    result_contains: ["Name: Ada Lovelace"]
    elicited: [{field: name, equals: Ada Lovelace}]
"#;

#[test]
fn sampling_and_elicitation_are_answered_in_call_tasks_and_replay_from_the_recording() {
    let dir = temp_dir();
    let suite = dir.path().join("suite");
    write(&suite, "calls.yaml", CALL_TASKS);
    let (out, cassettes) = (dir.path().join("live"), dir.path().join("cas"));
    let live = run(&suite, &out, &["--record", cassettes.to_str().unwrap()]);
    assert_eq!(live.status.code(), Some(0), "{}", text(&live));
    let live = episodes(&out);
    assert_eq!(live.len(), 4);
    for e in &live {
        assert!(e.success, "{}: {:?}", e.task_id, e.grade);
        assert_eq!(e.unprepared_requests, 0);
    }
    let sampled = &of(&live, "sample-reply")[0];
    assert_eq!(
        (sampled.sampling_requests, sampled.elicitation_requests),
        (1, 0)
    );
    let ask = &sampled.asks[0];
    assert_eq!(ask.method, "sampling/createMessage");
    // The request as the server sent it: its prompt, system prompt and maxTokens.
    assert_eq!(ask.request["maxTokens"], 20);
    assert_eq!(
        ask.request["systemPrompt"],
        "You are a helpful test server."
    );
    assert_eq!(ask.answer["content"]["text"], "hello from the test");
    let elicited = &of(&live, "elicit-answers")[0];
    assert_eq!(elicited.asks[0].answer["action"], "accept");
    assert_eq!(
        elicited.asks[0].request["requestedSchema"]["required"][0],
        "name"
    );

    // Replayed from the cassettes: the same requests reach the client again, and the same
    // answers give the recorded results.
    let baseline = format!(
        "replay:{}",
        cassettes.join("baseline.cassette.jsonl").display()
    );
    let candidate = format!(
        "replay:{}",
        cassettes.join("candidate.cassette.jsonl").display()
    );
    let replayed_dir = dir.path().join("replayed");
    let replayed = mcpeval(&[
        "run",
        "--baseline",
        &baseline,
        "--candidate",
        &candidate,
        "--suite",
        suite.to_str().unwrap(),
        "--out",
        replayed_dir.to_str().unwrap(),
    ]);
    assert_eq!(replayed.status.code(), Some(0), "{}", text(&replayed));
    let replayed = episodes(&replayed_dir);
    assert_eq!(replayed.len(), 4);
    for e in &replayed {
        assert!(e.success, "{}: {:?}", e.task_id, e.grade);
        let live = of(&live, &e.task_id)[0];
        assert_eq!(e.calls[0].result, live.calls[0].result);
        assert!(!e.calls[0].replay_unmatched);
        let pairs = |e: &Episode| -> Vec<(String, String, String)> {
            (e.asks.iter())
                .map(|a| {
                    (
                        a.method.clone(),
                        a.request.to_string(),
                        a.answer.to_string(),
                    )
                })
                .collect()
        };
        assert_eq!(pairs(e), pairs(live), "{}", e.task_id);
    }

    // A replayed trial that is not prepared for the recorded request answers it as a client
    // without the capability: the call is unmatched, and the report counts the request.
    let bare = dir.path().join("bare");
    write(
        &bare,
        "t.yaml",
        "- id: sample-reply\n  kind: call\n  call: {tool: trigger-sampling-request, args: \
         {prompt: \"say hi\", maxTokens: 20}}\n  malformed: true\n  expect: {is_error: false}\n",
    );
    let unprepared_dir = dir.path().join("unprepared");
    let unprepared = mcpeval(&[
        "run",
        "--baseline",
        &baseline,
        "--candidate",
        &candidate,
        "--suite",
        bare.to_str().unwrap(),
        "--out",
        unprepared_dir.to_str().unwrap(),
    ]);
    let said = text(&unprepared);
    assert!(
        said.contains("2 sampling or elicitation request(s)"),
        "{said}"
    );
    let summary = std::fs::read_to_string(unprepared_dir.join("summary.md")).unwrap();
    assert!(
        summary.contains("were not prepared for by their task"),
        "{summary}"
    );
    for e in episodes(&unprepared_dir) {
        assert_eq!((e.sampling_requests, e.unprepared_requests), (1, 1));
        assert_eq!(e.asks[0].answer["error"]["code"], -32601);
        assert!(e.calls[0].replay_unmatched, "{:?}", e.calls);
    }
    let csv = std::fs::read_to_string(unprepared_dir.join("episodes.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    for column in [
        "sampling_requests",
        "elicitation_requests",
        "unprepared_requests",
        "sampling_input_tokens",
        "sampling_output_tokens",
    ] {
        assert!(header.contains(column), "{header}");
    }
}

#[test]
fn without_sampling_or_elicitation_the_tools_are_not_listed_and_calls_get_the_unknown_tool_error() {
    let dir = temp_dir();
    let suite = dir.path().join("suite");
    write(
        &suite,
        "t.yaml",
        r#"
- id: sample-bare
  kind: call
  malformed: true
  call: {tool: trigger-sampling-request, args: {prompt: "say hi"}}
  expect: {is_error: false}
- id: elicit-bare
  kind: call
  malformed: true
  call: {tool: trigger-elicitation-request, args: {}}
  expect: {is_error: false}
- id: model-bare
  prompt: "Trigger a request from the server for LLM sampling"
  expect: {calls: [{tool: echo}]}
"#,
    );
    let out = dir.path().join("out");
    let ran = run(&suite, &out, &["--host", "sim", "--trials", "1"]);
    assert_ne!(ran.status.code(), Some(2), "{}", text(&ran));
    let all = episodes(&out);
    for task in ["sample-bare", "elicit-bare"] {
        for e in of(&all, task) {
            assert!(!e.success);
            let result = &e.calls[0].result;
            assert!(result.contains("not found"), "{task}: {result}");
            assert!(result.contains("Tool trigger-"), "{task}: {result}");
            assert_eq!(e.sampling_requests + e.elicitation_requests, 0);
        }
    }
    // The model was offered neither tool.
    for e in of(&all, "model-bare") {
        assert!(e.tools_offered.contains("echo"), "{}", e.tools_offered);
        assert!(!e.tools_offered.contains("trigger-sampling-request"));
        assert!(!e.tools_offered.contains("trigger-elicitation-request"));
    }
}

#[test]
fn the_simulated_model_calls_the_tools_and_each_trial_declares_only_what_its_task_answers() {
    let dir = temp_dir();
    let suite = dir.path().join("suite");
    write(
        &suite,
        "t.yaml",
        r#"
- id: model-samples
  prompt: "Trigger a request from the server for LLM sampling"
  sampling: {host: sim}
  expect:
    calls: [{tool: trigger-sampling-request, result: {contains: ["simulated model"]}}]
    sampled: {min: 1}
- id: model-elicits
  prompt: "Trigger a request from the server for user elicitation"
  elicitation: {answers: {name: Ada Lovelace}}
  expect:
    calls: [{tool: trigger-elicitation-request, result: {contains: ["Ada Lovelace"]}}]
    elicited: [{field: name}]
"#,
    );
    let out = dir.path().join("out");
    let ran = run(&suite, &out, &["--host", "sim", "--trials", "2"]);
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran));
    let all = episodes(&out);
    assert_eq!(all.len(), 8);
    for e in of(&all, "model-samples") {
        assert!(e.success, "{:?}", e.grade);
        assert_eq!(e.sampling_requests, 1);
        assert_eq!(e.asks[0].model.as_deref(), Some("sim"));
        assert!(e.tools_offered.contains("trigger-sampling-request"));
        assert!(!e.tools_offered.contains("trigger-elicitation-request"));
    }
    for e in of(&all, "model-elicits") {
        assert!(e.success, "{:?}", e.grade);
        assert_eq!(e.elicitation_requests, 1);
        assert!(!e.tools_offered.contains("trigger-sampling-request"));
        assert!(e.tools_offered.contains("trigger-elicitation-request"));
    }
}

#[test]
fn answers_that_do_not_fit_the_schema_fail_the_trial_with_its_complaint_and_are_not_sent() {
    let dir = temp_dir();
    let suite = dir.path().join("suite");
    write(
        &suite,
        "t.yaml",
        r#"
- id: elicit-misfit
  kind: call
  call: {tool: trigger-elicitation-request, args: {}}
  elicitation: {answers: {check: "yes", integer: 500}}
  expect:
    is_error: false
"#,
    );
    let out = dir.path().join("out");
    let ran = run(&suite, &out, &[]);
    assert_ne!(ran.status.code(), Some(2), "{}", text(&ran));
    let all = episodes(&out);
    for e in of(&all, "elicit-misfit") {
        assert!(!e.success);
        let check = (e.grade.checks.iter())
            .find(|c| c.grader == "elicitation")
            .expect("an elicitation check");
        assert!(!check.passed);
        let said = &check.explanation;
        assert!(said.contains("\"name\" is a required property"), "{said}");
        assert!(
            said.contains("/check: \"yes\" is not of type \"boolean\""),
            "{said}"
        );
        assert!(
            said.contains("/integer: 500 is greater than the maximum of 100"),
            "{said}"
        );
        // Not sent: the server heard a decline.
        assert_eq!(e.asks[0].answer["action"], "decline");
        assert!(
            e.calls[0].result.contains("declined"),
            "{}",
            e.calls[0].result
        );
    }
}

/// `elicitation: {user: true}`: the task's simulated user fills out the form (the sim user: its
/// required fields by their schema); without a `user:` the key is refused before any trial.
#[test]
fn the_simulated_user_answers_an_elicitation_and_without_one_the_key_is_refused() {
    let dir = temp_dir();
    let suite = dir.path().join("suite");
    write(
        &suite,
        "t.yaml",
        r#"
- id: user-elicited
  prompt: "Trigger a request from the server for user elicitation"
  user: {host: sim, goal: "Trigger a request from the server for user elicitation"}
  elicitation: {user: true}
  expect:
    calls: [{tool: trigger-elicitation-request, result: {contains: ["sim user"]}}]
    elicited: [{field: name, equals: "sim user"}]
"#,
    );
    let out = dir.path().join("out");
    let ran = run(&suite, &out, &["--host", "sim", "--trials", "1"]);
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran));
    for e in episodes(&out) {
        assert!(e.success, "{:?} {:?}", e.grade, e.asks);
        assert_eq!(e.asks[0].answer["action"], "accept", "{:?}", e.asks);
    }
    let bad = dir.path().join("bad");
    write(
        &bad,
        "t.yaml",
        "- id: no-user
  prompt: hi
  elicitation: {user: true}
  expect: {no_tool: true}
",
    );
    let ran = mcpeval(&["tasks", "check", "--suite", bad.to_str().unwrap()]);
    assert_eq!(ran.status.code(), Some(2), "{}", text(&ran));
    assert!(
        text(&ran).contains(
            "t.yaml:3:3: `elicitation: {user: true}` is answered by the task's simulated user"
        ),
        "{}",
        text(&ran)
    );
}

#[test]
fn malformed_keys_and_unknown_sampling_hosts_are_refused_before_any_trial() {
    let dir = temp_dir();
    let suite = dir.path().join("suite");
    write(
        &suite,
        "t.yaml",
        r#"- id: bad-keys
  kind: call
  call: {tool: trigger-sampling-request, args: {prompt: "x"}}
  sampling: {rply: hi}
  elicitation: {answer: {name: x}}
  expect: {sampled: {min: 1}}
"#,
    );
    write(&suite, "defaults.yaml", "elicitation: {action: accept}\n");
    let out = mcpeval(&["tasks", "check", "--suite", suite.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stderr);
    let file = suite.join("t.yaml");
    let file = file.display();
    assert!(
        said.contains(&format!(
            "{file}:4:14: unknown key `rply` in `sampling` (did you mean `reply`?); it takes \
             `host`, `reply`"
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "{file}:5:17: unknown key `answer` in `elicitation` (did you mean `answers`?); it \
             takes `answers`, `action`, `user`"
        )),
        "{said}"
    );
    assert!(
        said.contains("defaults.yaml:1:23: invalid elicitation.action `accept`"),
        "{said}"
    );

    let hosts = dir.path().join("hosts");
    write(
        &hosts,
        "t.yaml",
        r#"- id: bad-host
  kind: call
  call: {tool: trigger-sampling-request, args: {prompt: "x"}}
  sampling: {host: nosuch}
  expect: {sampled: {min: 1}}
"#,
    );
    let out_dir = dir.path().join("out");
    let ran = run(&hosts, &out_dir, &[]);
    assert_eq!(ran.status.code(), Some(2), "{}", text(&ran));
    let said = String::from_utf8_lossy(&ran.stderr);
    let file = hosts.join("t.yaml");
    assert!(
        said.contains(&format!(
            "{}:4:20: sampling host `nosuch` of task `bad-host`",
            file.display()
        )),
        "{said}"
    );
    assert!(!out_dir.join("episodes.jsonl").exists());
}

#[test]
fn a_sampling_host_answers_with_its_model_and_its_tokens_are_counted_apart() {
    let dir = temp_dir();
    let suite = dir.path().join("suite");
    write(
        &suite,
        "t.yaml",
        r#"- id: sample-host
  kind: call
  call: {tool: trigger-sampling-request, args: {prompt: "say hi", maxTokens: 20}}
  sampling: {host: "openai:sim-model"}
  expect:
    is_error: false
    sampled: {min: 1}
"#,
    );
    let endpoint = spawn_listening(&["sim-server", "--addr", "127.0.0.1:0"], false);
    let ran = |base: String, out: &Path| {
        let server = everything_server();
        Command::new(bin())
            .args(["run", "--baseline", &server, "--candidate", &server])
            .args(["--suite", suite.to_str().unwrap(), "--allow-writes"])
            .args(["--out", out.to_str().unwrap()])
            .env("OPENAI_BASE_URL", base)
            .env("OPENAI_API_KEY", "sk-test-secret-value-123")
            .output()
            .unwrap()
    };
    let out = dir.path().join("out");
    let done = ran(format!("http://{}/v1", endpoint.addr), &out);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done));
    for e in episodes(&out) {
        assert!(e.success, "{:?}", e.grade);
        assert_eq!(e.sampling_requests, 1);
        assert!(e.sampling_input_tokens > 0 && e.sampling_output_tokens > 0);
        // The task's own tokens: a call task has no model.
        assert_eq!(e.total_tokens, 0);
        let answer = &e.asks[0].answer;
        assert_eq!(answer["model"], "sim", "{answer}");
        assert!(answer["content"]["text"]
            .as_str()
            .is_some_and(|t| !t.is_empty()));
    }
    // A sampling host that cannot answer makes the trial an infrastructure error.
    let dead = dir.path().join("dead");
    let failed = ran("http://127.0.0.1:9/v1".into(), &dead);
    assert_ne!(failed.status.code(), Some(2), "{}", text(&failed));
    for e in episodes(&dead) {
        let error = e.infra_error.as_deref().unwrap_or_default();
        assert!(
            error.starts_with("sampling: model `openai:sim-model`"),
            "{error}"
        );
    }
}
