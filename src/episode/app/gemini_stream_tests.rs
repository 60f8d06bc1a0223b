//! Tests of reading Gemini CLI's stream-json events: real transcripts (the fixtures, recorded
//! from Gemini CLI 0.61 against the demo server and the sim-server) and what it prints when a
//! trial ends badly.

use std::time::Duration;

use serde_json::Value;

use super::*;

const SEARCH: &str = include_str!("../../../tests/fixtures/apps/gemini-cli/stream-search.jsonl");
const DENIED: &str = include_str!("../../../tests/fixtures/apps/gemini-cli/stream-denied.jsonl");
const TOOL_ERROR: &str =
    include_str!("../../../tests/fixtures/apps/gemini-cli/stream-tool-error.jsonl");

fn finished(stream: &str) -> Finished {
    Finished {
        lines: stream
            .lines()
            .enumerate()
            .map(|(i, l)| (Duration::from_millis(10 * i as u64), l.to_owned()))
            .collect(),
        stderr_tail: "some stderr".into(),
        status: None,
        timed_out: false,
        elapsed: Duration::from_millis(500),
    }
}

fn parse(stream: &str) -> TrialOutput {
    parse_stream(
        &finished(stream),
        "tracker",
        "Search issues",
        Some("0.61.0"),
    )
}

#[test]
fn a_real_transcript_reads_into_bare_tool_calls_tokens_and_an_answer() {
    let out = parse(SEARCH);
    assert_eq!(out.infra_error, None);
    assert_eq!(out.calls.len(), 1);
    let call = &out.calls[0];
    assert_eq!(call.tool, "search_issues");
    assert_eq!(
        serde_json::from_str::<Value>(&call.arguments).unwrap(),
        serde_json::json!({"project": "zephyr", "query": "crash"})
    );
    assert!(!call.is_error);
    assert!(
        call.result.contains("App crashes when uploading"),
        "{}",
        call.result
    );
    assert_eq!(call.latency_ms, 10.0);
    assert_eq!(out.turns, 2);
    assert_eq!(out.usage.input_tokens, 20957);
    assert_eq!(out.usage.output_tokens, 99);
    assert_eq!(out.usage.cache_read_tokens, 0);
    assert!(out
        .final_answer
        .as_deref()
        .unwrap()
        .starts_with("Here is what I found"));
    assert!(!out.hit_max_turns);
    assert_eq!(out.model.as_deref(), Some("gemini-cli:sim"));
    let app = out.app.unwrap();
    assert_eq!(app.app, "gemini-cli");
    assert_eq!(app.version.as_deref(), Some("0.61.0"));
    assert!(app.builtin_calls.is_empty() && app.permission_denials.is_empty());
    // The prompt, the call, its result, the answer.
    assert_eq!(out.messages.len(), 4);
    // Cached tokens are kept apart (`input` is without them).
    let cached = SEARCH.replace(
        r#""input_tokens":20957,"output_tokens":99,"cached":0,"input":20957"#,
        r#""input_tokens":20957,"output_tokens":99,"cached":20000,"input":957"#,
    );
    let out = parse(&cached);
    assert_eq!(out.usage.input_tokens, 957);
    assert_eq!(out.usage.cache_read_tokens, 20000);
}

#[test]
fn calls_the_policy_asks_about_are_permission_denials() {
    let out = parse(DENIED);
    assert_eq!(out.infra_error, None);
    assert_eq!(out.calls.len(), 2);
    for call in &out.calls {
        assert_eq!(call.tool, "fetch_issue");
        assert!(call.is_error);
        assert_eq!(call.error_kind.as_deref(), Some("permission"));
        assert!(call.result.contains("requires user confirmation"));
    }
    assert_eq!(out.turns, 3);
    let app = out.app.unwrap();
    assert_eq!(app.permission_denials, ["fetch_issue", "fetch_issue"]);
    assert!(out.final_answer.unwrap().contains("could not complete"));
}

#[test]
fn a_tool_error_keeps_the_servers_own_text() {
    let out = parse(TOOL_ERROR);
    assert_eq!(out.infra_error, None);
    assert_eq!(out.calls.len(), 2);
    for call in &out.calls {
        assert_eq!(call.tool, "get_issue");
        assert!(call.is_error);
        assert_eq!(call.error_kind.as_deref(), Some("tool"));
        assert!(
            call.result.starts_with("unknown issue id 99"),
            "{}",
            call.result
        );
    }
    assert!(out.app.unwrap().permission_denials.is_empty());
    // Arguments Gemini CLI rejects against the schema itself: the model's error.
    let invalid = TOOL_ERROR.replace("\"mcp_tool_error\"", "\"invalid_tool_params\"");
    assert_eq!(
        parse(&invalid).calls[0].error_kind.as_deref(),
        Some("model")
    );
    // Built-in tools keep their names and are listed apart.
    let builtin = SEARCH.replace(
        "\"tool_name\":\"mcp_tracker_search_issues\"",
        "\"tool_name\":\"grep_search\"",
    );
    let out = parse(&builtin);
    assert_eq!(out.calls[0].tool, "grep_search");
    assert_eq!(out.app.unwrap().builtin_calls, ["grep_search"]);
}

#[test]
fn the_turn_limit_is_hit_max_turns_and_other_ends_are_infrastructure_errors() {
    let cut: Vec<&str> = SEARCH.lines().take(4).collect();
    let limited = format!(
        "{}\n{}",
        cut.join("\n"),
        r#"{"type":"result","status":"error","error":{"type":"FatalTurnLimitedError","message":"Reached max session turns for this session."},"stats":{"input_tokens":10,"output_tokens":2,"cached":0,"input":10}}"#
    );
    let out = parse(&limited);
    assert_eq!(out.infra_error, None);
    assert!(out.hit_max_turns);
    assert_eq!(out.final_answer, None);
    assert_eq!(out.usage.input_tokens, 10);

    let api = limited.replace("FatalTurnLimitedError", "unknown");
    let error = parse(&api).infra_error.unwrap();
    assert!(
        error.starts_with("gemini-cli ended with error `unknown`"),
        "{error}"
    );
    assert!(
        error.ends_with("--- app stderr ---\nsome stderr"),
        "{error}"
    );

    let error = parse(&cut.join("\n")).infra_error.unwrap();
    assert!(error.contains("no `result` event"), "{error}");
    let mut hung = finished(&cut.join("\n"));
    hung.timed_out = true;
    let error = parse_stream(&hung, "tracker", "p", None)
        .infra_error
        .unwrap();
    assert!(error.contains("timeout"), "{error}");
    assert!(parse("not json\n{]")
        .infra_error
        .unwrap()
        .contains("no `result` event"));

    // A server that did not start: Gemini CLI goes on without it and says so only on stderr.
    let mut lost = finished(SEARCH);
    lost.stderr_tail = "MCP issues detected. Run /mcp list for status.".into();
    let error = parse_stream(&lost, "tracker", "p", None)
        .infra_error
        .unwrap();
    assert!(error.contains("could not use the server"), "{error}");
}

#[test]
fn server_error_text_reads_the_servers_content_out_of_gemini_clis_message() {
    let message = "MCP tool 'get_issue' reported tool error for function call: \
        {\"name\":\"get_issue\",\"args\":{\"id\":99}} with response: \
        [{\"functionResponse\":{\"name\":\"get_issue\",\"response\":{\"content\":\
        [{\"type\":\"text\",\"text\":\"no such issue\"}],\"isError\":true}}}]";
    assert_eq!(
        crate::host::wire::gemini_tool_error_text(message).as_deref(),
        Some("no such issue")
    );
    assert_eq!(
        crate::host::wire::gemini_tool_error_text("Tool execution denied by policy."),
        None
    );
    assert_eq!(
        crate::host::wire::gemini_tool_error_text("x with response: [not json"),
        None
    );
}
