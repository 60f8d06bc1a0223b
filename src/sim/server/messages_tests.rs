//! Tests of sim-server's Messages API route: what Claude Code really sends (the fixture), the
//! stream's events, `count_tokens`, and answers that are the chat route's for the same request.

use serde_json::{json, Value};

use super::messages::parse_request;
use super::spawn;
use crate::host::Message;
use crate::sim::{SimConfig, SimModel};

const FIRST: &str = include_str!("../../../tests/fixtures/apps/claude-code/request-first.json");

fn fixture_body() -> Value {
    serde_json::from_str::<Value>(FIRST).unwrap()["body"].clone()
}

#[test]
fn claude_codes_request_reads_as_the_user_request_with_the_apps_text_as_context() {
    let request = parse_request(&fixture_body(), 7).unwrap();
    let users: Vec<&str> = request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(users, ["Search issues about crash in project zephyr"]);
    // The system prompt, the reminder and the mid-conversation system message are context.
    let systems = request
        .messages
        .iter()
        .filter(|m| matches!(m, Message::System { .. }))
        .count();
    assert!(systems >= 2, "{systems}");
    let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"mcp__tracker__search_issues"), "{names:?}");
    assert_eq!(request.seed, 7);
    let answer = SimModel::new(SimConfig::default()).respond(&request);
    assert_eq!(answer.tool_calls[0].name, "mcp__tracker__search_issues");
}

#[test]
fn tool_results_errors_and_reminders_after_them() {
    let body = json!({"model": "m", "max_tokens": 5, "system": "be brief",
        "messages": [
            {"role": "user", "content": "Show issue 3"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"},
                {"type": "tool_use", "id": "toolu_1", "name": "get_issue", "input": {"id": 3}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
                 "content": [{"type": "text", "text": "you haven't granted it"}]},
                {"type": "text", "text": "<system-reminder>todo list empty</system-reminder>"}]}],
        "tool_choice": {"type": "auto"}, "metadata": {"user_id": "u"}});
    let request = parse_request(&body, 0).unwrap();
    assert_eq!(
        request.messages,
        [
            Message::System {
                content: "be brief".into()
            },
            Message::User {
                content: "Show issue 3".into()
            },
            Message::Assistant {
                reasoning: None,
                content: None,
                tool_calls: vec![crate::host::ToolCallRequest {
                    id: "toolu_1".into(),
                    name: "get_issue".into(),
                    arguments: r#"{"id":3}"#.into(),
                }],
                server_blocks: Vec::new(),
            },
            Message::Tool {
                tool_call_id: "toolu_1".into(),
                content: "Error: you haven't granted it".into(),
            },
            Message::System {
                content: "todo list empty".into()
            },
        ]
    );
    assert!(parse_request(&json!({"messages": 3}), 0).is_err());
}

/// The events of an SSE body, as (event name, data) (the Responses route's tests read theirs
/// with it too).
pub(super) fn events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let mut lines = e.lines();
            let name = lines.next().unwrap().strip_prefix("event: ").unwrap();
            let data = lines.next().unwrap().strip_prefix("data: ").unwrap();
            (name.to_owned(), serde_json::from_str(data).unwrap())
        })
        .collect()
}

#[tokio::test]
async fn streamed_and_whole_answers_agree_with_the_chat_route() {
    let (addr, server) = spawn(
        "127.0.0.1:0".parse().unwrap(),
        Default::default(),
        SimConfig::default(),
    )
    .await
    .unwrap();
    let http = crate::net::client_builder().build().unwrap();
    let tools = json!([{"name": "notes_search", "description": "Search notes by keywords.",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}}}]);
    let body = json!({"model": "claude-x", "max_tokens": 100, "tools": tools,
        "messages": [{"role": "user", "content": "Search notes about rust"}]});
    let whole: Value = http
        .post(format!("http://{addr}/v1/messages?beta=true"))
        .header("x-mcpeval-seed", "3")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(whole["stop_reason"], "tool_use");
    assert_eq!(whole["model"], "claude-x");
    let call = &whole["content"][0];
    assert_eq!(call["name"], "notes_search");
    // The chat route, same request and seed: the same call.
    let chat: Value = http
        .post(format!("http://{addr}/v1/chat/completions"))
        .json(
            &json!({"model": "sim", "seed": 3, "messages": body["messages"],
            "tools": [{"type": "function", "function": {"name": "notes_search",
                "description": "Search notes by keywords.",
                "parameters": tools[0]["input_schema"]}}]}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let chat_args = chat["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(chat_args).unwrap(),
        call["input"]
    );

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let response = http
        .post(format!("http://{addr}/messages"))
        .header("x-mcpeval-seed", "3")
        .json(&streamed)
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let events = events(&response.text().await.unwrap());
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(events[1].1["content_block"]["name"], "notes_search");
    let partial = events[2].1["delta"]["partial_json"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(partial).unwrap(),
        call["input"]
    );
    assert_eq!(events[4].1["delta"]["stop_reason"], "tool_use");
    assert_eq!(events[4].1["usage"], whole["usage"]);

    let counted: Value = http
        .post(format!("http://{addr}/v1/messages/count_tokens"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(counted["input_tokens"], whole["usage"]["input_tokens"]);
    let bad = http
        .post(format!("http://{addr}/v1/messages"))
        .body("{")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let bad: Value = bad.json().await.unwrap();
    assert_eq!(bad["error"]["type"], "invalid_request_error");
    server.stop().await.unwrap();
}
