//! A model that writes its tool calls as text (`mcpeval sim-server --tool-calls-as-text`) is
//! recorded as such on its episodes, `--recover-text-calls` makes those calls and gives the
//! verdict the same model's structured calls give, and `[host.NAME] tool_choice` / `extra_body` reach the
//! endpoint's request body in each provider's form and run.json.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;
use polars_core::prelude::*;
use polars_io::prelude::*;
use serde_json::Value;

/// The demo pair with tools shown prefixed (`mcp__tracker__…`) and no titles (function tools
/// carry none), plus `extra` (host tables).
fn write_config(dir: &Path, extra: &str) -> std::path::PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(
        &path,
        format!(
            "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.5.0\"\nsuites = [\"tasks/demo\"]\n\
             [profile]\npass_title = false\nserver_label = \"tracker\"\n\
             tool_naming = \"prefixed\"\n{extra}"
        ),
    )
    .unwrap();
    path
}

/// `mcpeval run --config CONFIG --host HOST --trials N` with both providers' endpoints at
/// `server`.
fn run(server: &Background, config: &Path, host: &str, trials: &str, out: &Path) -> Output {
    run_with(server, config, host, trials, out, &[])
}

/// The same, with more arguments.
fn run_with(
    server: &Background,
    config: &Path,
    host: &str,
    trials: &str,
    out: &Path,
    more: &[&str],
) -> Output {
    Command::new(bin())
        .args(["run", "--config", config.to_str().unwrap(), "--host", host])
        .args(more)
        .args(["--trials", trials, "--out", out.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OPENAI_BASE_URL", format!("http://{}/v1", server.addr))
        .env("OPENAI_API_KEY", "sk-test-secret-value-123")
        .env("ANTHROPIC_BASE_URL", format!("http://{}", server.addr))
        .env("ANTHROPIC_API_KEY", "sk-ant-test-secret-456")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap()
}

#[test]
fn tool_calls_written_as_text_are_counted_with_an_excerpt() {
    let server = spawn_listening(
        &[
            "sim-server",
            "--addr",
            "127.0.0.1:0",
            "--tool-calls-as-text",
        ],
        false,
    );
    let dir = temp_dir();
    let config = write_config(dir.path(), "");
    let out = dir.path().join("run");
    let output = run(&server, &config, "openai:sim", "2", &out);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        text(&output)
    );
    let eps = episodes(&out);
    assert!(!eps.is_empty(), "{}", text(&output));
    assert!(
        eps.iter().all(|e| e.infra_error.is_none()),
        "{}",
        text(&output)
    );
    // Not one structured call: every call the sim would have made went into the text.
    assert!(
        eps.iter().all(|e| e.tool_calls == 0),
        "structured calls made"
    );
    let tool_eps: Vec<_> = eps
        .iter()
        .filter(|e| e.kind == mcpeval::suite::TaskKind::Tool)
        .collect();
    assert!(!tool_eps.is_empty());
    let written: Vec<_> = tool_eps.iter().filter(|e| e.text_calls.count > 0).collect();
    assert!(
        written.len() * 2 > tool_eps.len(),
        "most tool trials wrote their call as text: {} of {}",
        written.len(),
        tool_eps.len()
    );
    for e in &written {
        // One answer (the sim stops after it), its excerpt the call the sim wrote.
        assert_eq!(e.text_calls.count, 1, "{}", e.task_id);
        let excerpt = e.text_calls.first.as_deref().unwrap();
        assert!(
            excerpt.starts_with("{\"name\": \"mcp__tracker__") && excerpt.contains("\"arguments\""),
            "{excerpt}"
        );
        assert!(excerpt.chars().count() <= 200, "{excerpt}");
        assert!(
            !e.success,
            "a call written as text does nothing: {}",
            e.task_id
        );
    }
    // Before its verdict the run says why it measured nothing (issue 36: it used to read `0/2 →
    // 0/2 inconclusive`, NO REGRESSION, with no word of why): on the console, in summary.md's
    // first block and in junit.xml, with the count and an excerpt.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let note = format!(
        "note: host `openai:sim` made no structured tool call in {} trial(s) of tool tasks; {} \
         trial(s) wrote a tool call as text",
        tool_eps.len(),
        eps.iter().filter(|e| e.text_calls.count > 0).count()
    );
    let at = stdout.find(&note);
    assert!(at.is_some(), "{note}\n{stdout}");
    assert!(at < stdout.find("verdict (gated metrics)"), "{stdout}");
    assert!(
        stdout.contains("\n    {\"name\": \"mcp__tracker__"),
        "{stdout}"
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let first_block = summary.split("\n## ").next().unwrap();
    assert!(
        first_block.contains("**Host `openai:sim` made no structured tool call")
            && first_block.contains("docs/hosts.md"),
        "{summary}"
    );
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains("made no structured tool call"), "{junit}");
    // The episode lines carry the two fields by these names.
    let lines = std::fs::read_to_string(out.join("episodes.jsonl")).unwrap();
    let first: Value = lines
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v.get("text_tool_calls").is_some())
        .expect("an episode line with text_tool_calls");
    assert_eq!(first["text_tool_calls"], 1);
    assert!(first["text_tool_call"]
        .as_str()
        .unwrap()
        .contains("mcp__tracker__"));

    // The same suite through the plain sim-server: real calls, nothing written as text.
    let plain = spawn_listening(&["sim-server", "--addr", "127.0.0.1:0"], false);
    let out = dir.path().join("plain");
    let output = run(&plain, &config, "openai:sim", "1", &out);
    let eps = episodes(&out);
    assert!(eps.iter().any(|e| e.tool_calls > 0), "{}", text(&output));
    assert!(eps.iter().all(|e| e.text_calls.is_empty()));
}

/// What a trial did, by (task, side, trial): success, the tools it called and how many calls.
fn outcomes(
    eps: &[mcpeval::episode::Episode],
) -> std::collections::BTreeMap<(String, String, u32), (bool, String, u32)> {
    eps.iter()
        .map(|e| {
            (
                (e.task_id.clone(), e.side.to_string(), e.trial),
                (e.success, e.tools_called.clone(), e.tool_calls),
            )
        })
        .collect()
}

#[test]
fn recovered_text_calls_give_the_verdict_of_structured_ones_and_are_counted_apart() {
    let dir = temp_dir();
    let config = write_config(dir.path(), "");
    let as_text = spawn_listening(
        &[
            "sim-server",
            "--addr",
            "127.0.0.1:0",
            "--tool-calls-as-text",
        ],
        false,
    );
    let recovered_dir = dir.path().join("recovered");
    let output = run_with(
        &as_text,
        &config,
        "openai:sim",
        "2",
        &recovered_dir,
        &["--recover-text-calls"],
    );
    let said = text(&output);
    assert!(matches!(output.status.code(), Some(0 | 1)), "{said}");
    let plain = spawn_listening(&["sim-server", "--addr", "127.0.0.1:0"], false);
    let plain_dir = dir.path().join("plain");
    let plain_output = run(&plain, &config, "openai:sim", "2", &plain_dir);
    assert!(matches!(plain_output.status.code(), Some(0 | 1)));

    // Trial for trial, the model that wrote its calls as text, its calls made for it, did
    // what the model that made them did: the same calls, the same successes, the same exit.
    let (recovered, structured) = (episodes(&recovered_dir), episodes(&plain_dir));
    assert_eq!(outcomes(&recovered), outcomes(&structured), "{said}");
    assert_eq!(output.status.code(), plain_output.status.code());
    let calls: u32 = recovered.iter().map(|e| e.tool_calls).sum();
    assert!(calls > 0);
    for e in &recovered {
        // Every call was written as text: each one made is marked, and counted apart.
        assert_eq!(e.text_calls.recovered, e.tool_calls, "{}", e.task_id);
        assert!(e.calls.iter().all(|c| c.recovered), "{}", e.task_id);
        assert_eq!(e.text_calls.unparsed, 0);
    }
    assert!(structured.iter().all(|e| e.text_calls.is_empty()));

    // The verdict says how many calls were recovered, the finding that they were written as
    // text, and where they are counted.
    let line = format!("{calls} of {calls} tool call(s) were recovered from text");
    assert!(said.contains(&line), "{line}\n{said}");
    let summary = std::fs::read_to_string(recovered_dir.join("summary.md")).unwrap();
    assert!(summary.contains(&line), "{summary}");
    assert!(
        said.contains(&format!(
            "({calls} of {calls} call(s) were recovered from text and made"
        )),
        "{said}"
    );
    assert!(
        said.contains("recovered b → c"),
        "the task table shows the recovered calls: {said}"
    );
    assert!(!text(&plain_output).contains("recovered"));

    // The tables: per episode, and per call.
    let read = |name: &str| {
        let file = std::fs::File::open(recovered_dir.join(name)).unwrap();
        ParquetReader::new(file).finish().unwrap()
    };
    let table = read("episodes.parquet");
    let column: u32 = table
        .column("recovered_calls")
        .unwrap()
        .u32()
        .unwrap()
        .sum()
        .unwrap();
    assert_eq!(column, calls);
    let flags = read("tool_calls.parquet");
    let flags = flags.column("recovered").unwrap().bool().unwrap().clone();
    assert_eq!(flags.len(), calls as usize);
    assert_eq!(flags.sum(), Some(calls), "every call was recovered");
    let csv = std::fs::read_to_string(recovered_dir.join("episodes.csv")).unwrap();
    assert!(csv.lines().next().unwrap().contains("recovered_calls"));
}

/// Every request body sim-server received, one JSON value each.
fn requests(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Whether a chat-completions or Messages request carries a tool's result already.
fn after_a_tool_result(body: &Value) -> bool {
    body["messages"].as_array().unwrap().iter().any(|m| {
        m["role"] == "tool"
            || m["content"]
                .as_array()
                .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
    })
}

#[test]
fn tool_choice_and_extra_body_reach_the_request_body_and_run_json() {
    let dir = temp_dir();
    let log = dir.path().join("requests.jsonl");
    let server = spawn_listening(
        &[
            "sim-server",
            "--addr",
            "127.0.0.1:0",
            "--record-requests",
            log.to_str().unwrap(),
        ],
        false,
    );
    let config = write_config(
        dir.path(),
        "[host.local]\nprovider = \"openai\"\nmodel = \"sim\"\ntool_choice = \"required\"\n\
         extra_body = { chat_template_kwargs = { enable_thinking = false }, top_k = 20 }\n\
         [host.claude]\nprovider = \"anthropic\"\nmodel = \"sim\"\ntool_choice = \"list_projects\"\n\
         [host.claude.extra_body]\ntop_k = 5\n\
         [host.resp]\nprovider = \"openai-responses\"\nmodel = \"sim\"\ntool_choice = \"get_issue\"\n",
    );
    let out = dir.path().join("local");
    let output = run(&server, &config, "local", "1", &out);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        text(&output)
    );
    let bodies = requests(&log);
    assert!(!bodies.is_empty());
    for body in &bodies {
        // extra_body merged at the top level; mcpeval's own fields are its own.
        assert_eq!(
            body["chat_template_kwargs"]["enable_thinking"], false,
            "{body}"
        );
        assert_eq!(body["top_k"], 20);
        assert_eq!(body["model"], "sim");
        let expected = if after_a_tool_result(body) {
            "auto"
        } else {
            "required"
        };
        assert_eq!(body["tool_choice"], expected, "{body}");
    }
    assert!(
        bodies.iter().any(after_a_tool_result),
        "no second turn seen"
    );
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    let settings = &info["config"]["hosts"][0]["settings"];
    assert_eq!(settings["tool_choice"], "required", "{settings}");
    assert_eq!(
        settings["extra_body"],
        serde_json::json!({"chat_template_kwargs": {"enable_thinking": false}, "top_k": 20})
    );

    // Anthropic's form: a named tool, by the name the model is shown, on the first turn.
    std::fs::write(&log, "").unwrap();
    let out = dir.path().join("claude");
    let output = run(&server, &config, "claude", "1", &out);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        text(&output)
    );
    let bodies = requests(&log);
    let first_turns: Vec<&Value> = bodies.iter().filter(|b| !after_a_tool_result(b)).collect();
    assert!(!first_turns.is_empty());
    for body in first_turns {
        assert_eq!(
            body["tool_choice"],
            serde_json::json!({"type": "tool", "name": "mcp__tracker__list_projects"}),
            "{body}"
        );
        assert_eq!(body["top_k"], 5);
    }
    for body in bodies.iter().filter(|b| after_a_tool_result(b)) {
        assert_eq!(body["tool_choice"], serde_json::json!({"type": "auto"}));
    }

    // The Responses API's form of a named tool.
    std::fs::write(&log, "").unwrap();
    let out = dir.path().join("resp");
    let output = run(&server, &config, "resp", "1", &out);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        text(&output)
    );
    let bodies = requests(&log);
    let first = bodies
        .iter()
        .find(|b| b["input"].as_array().is_some_and(|i| i.len() == 1))
        .expect("a first turn");
    assert_eq!(
        first["tool_choice"],
        serde_json::json!({"type": "function", "name": "mcp__tracker__get_issue"})
    );
}

#[test]
fn credentials_in_extra_body_are_refused() {
    let dir = temp_dir();
    let config = write_config(
        dir.path(),
        "[host.local]\nprovider = \"openai\"\nmodel = \"m\"\n\
         extra_body = { api_key = \"sk-do-not-store-789\" }\n",
    );
    let output = mcpeval(&[
        "run",
        "--config",
        config.to_str().unwrap(),
        "--host",
        "local",
        "--out",
        dir.path().join("run").to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let said = text(&output);
    assert!(
        said.contains("extra_body.api_key looks like a credential"),
        "{said}"
    );
    assert!(said.contains("headers"), "{said}");
    assert!(!dir.path().join("run").join("run.json").exists());
}
