//! Tests of sim-server's Responses API route: what Codex CLI really sends (the fixture), the
//! stream's events, and answers that are the chat route's for the same request.

use serde_json::{json, Value};

use super::messages_tests::events;
use super::responses::parse_request;
use super::spawn;
use crate::host::Message;
use crate::sim::{SimConfig, SimModel};

const FIRST: &str = include_str!("../../../tests/fixtures/apps/codex/request-first.json");
const TOOL_OUTPUT: &str =
    include_str!("../../../tests/fixtures/apps/codex/request-tool-output.json");

fn body_of(fixture: &str) -> Value {
    serde_json::from_str::<Value>(fixture).unwrap()["body"].clone()
}

#[test]
fn codexs_request_reads_as_the_user_request_with_its_namespace_tools_flattened() {
    let parsed = parse_request(&body_of(FIRST), 7).unwrap();
    let request = &parsed.request;
    // Codex's own developer prompt and its <environment_context> block are left out; the
    // server's instructions (the namespace's description) are the system text.
    assert_eq!(
        request.messages,
        [
            Message::System {
                content: "Issue tracker for the apollo, zephyr and hermes projects. Issues are \
                          identified by number. Issues can never be deleted: close them \
                          instead. Search before creating an issue to avoid duplicates."
                    .into()
            },
            Message::User {
                content: "Search for crash issues in the zephyr project".into()
            }
        ]
    );
    let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"mcp__tracker__search_issues"), "{names:?}");
    assert!(names.contains(&"exec_command"), "{names:?}");
    assert_eq!(request.seed, 7);
    // What the sim is not shown is still counted: Codex sent it.
    assert_eq!(parsed.left_out.len(), 3);
    let answer = SimModel::new(SimConfig::default()).respond(request);
    assert!(parsed.input_tokens() > answer.usage.input_tokens + 4000);
    assert_eq!(answer.tool_calls[0].name, "mcp__tracker__search_issues");
    // It goes back in Codex's naming: the namespace plus the bare name.
    let body = super::responses::response_body(&answer, &parsed, Some("sim"));
    let call = &body["output"][0];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["name"], "search_issues");
    assert_eq!(call["namespace"], "mcp__tracker");
}

#[test]
fn a_call_and_its_output_read_back_without_codexs_wall_time_line() {
    let parsed = parse_request(&body_of(TOOL_OUTPUT), 0).unwrap();
    let tail = &parsed.request.messages[parsed.request.messages.len() - 2..];
    let Message::Assistant { tool_calls, .. } = &tail[0] else {
        panic!("{tail:?}")
    };
    assert_eq!(tool_calls[0].name, "mcp__tracker__get_issue");
    assert_eq!(tool_calls[0].arguments, r#"{"id":99}"#);
    let Message::Tool {
        tool_call_id,
        content,
    } = &tail[1]
    else {
        panic!("{tail:?}")
    };
    assert_eq!(tool_call_id, &tool_calls[0].id);
    assert!(content.starts_with("unknown issue id 99"), "{content:?}");
    let body = json!({"instructions": "be brief", "input": [
        {"type": "message", "role": "user", "content": "Show issue 3"},
        {"type": "reasoning", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "get_issue", "arguments": "{\"id\":3}"},
        {"type": "function_call", "call_id": "c2", "name": "get_issue", "arguments": "{\"id\":4}"},
        {"type": "function_call_output", "call_id": "c1",
         "output": "Wall time: 0.5 seconds\nOutput:\n{\"id\":3}"},
        {"type": "function_call_output", "call_id": "c2", "output": "plain"}]});
    let request = parse_request(&body, 0).unwrap().request;
    assert_eq!(request.messages.len(), 5, "{:?}", request.messages);
    let with_developer = json!({"input": [
        {"type": "message", "role": "developer", "content": "Do not add comments."},
        {"type": "message", "role": "system", "content": "Be brief."},
        {"type": "message", "role": "user", "content": "<environment_context>x</environment_context>"},
        {"type": "message", "role": "user", "content": "Add a comment to issue 7"}]});
    assert_eq!(
        parse_request(&with_developer, 0).unwrap().request.messages,
        [
            Message::System {
                content: "Be brief.".into()
            },
            Message::User {
                content: "Add a comment to issue 7".into()
            }
        ]
    );
    assert_eq!(
        request.messages[0],
        Message::System {
            content: "be brief".into()
        }
    );
    assert!(
        matches!(&request.messages[2], Message::Assistant { tool_calls, .. } if tool_calls.len() == 2)
    );
    assert_eq!(
        request.messages[3],
        Message::Tool {
            tool_call_id: "c1".into(),
            content: "{\"id\":3}".into()
        }
    );
    assert!(parse_request(&json!({"input": 3}), 0).is_err());
    assert!(parse_request(&json!({"input": [{"type": "message"}]}), 0).is_err());
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
    let schema = json!({"type": "object", "properties": {"query": {"type": "string"}}});
    let tools = json!([{"type": "namespace", "name": "mcp__notes", "description": "Notes.",
        "tools": [{"type": "function", "name": "notes_search",
                   "description": "Search notes by keywords.", "parameters": schema}]}]);
    let input = json!([{"type": "message", "role": "user",
        "content": [{"type": "input_text", "text": "Search notes about rust"}]}]);
    let body = json!({"model": "gpt-x", "tools": tools, "input": input});
    let whole: Value = http
        .post(format!("http://{addr}/v1/responses"))
        .header("x-mcpeval-seed", "3")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(whole["status"], "completed");
    assert_eq!(whole["model"], "gpt-x");
    let call = &whole["output"][0];
    assert_eq!(call["name"], "notes_search");
    assert_eq!(call["namespace"], "mcp__notes");
    assert_eq!(
        whole["usage"]["output_tokens_details"]["reasoning_tokens"],
        0
    );
    // The chat route, same request and seed (the tool as the sim saw it, the namespace's
    // description as the system prompt): the same call and count.
    let chat: Value = http
        .post(format!("http://{addr}/v1/chat/completions"))
        .json(&json!({"model": "sim", "seed": 3,
            "messages": [{"role": "system", "content": "Notes."},
                         {"role": "user", "content": "Search notes about rust"}],
            "tools": [{"type": "function", "function": {"name": "mcp__notes__notes_search",
                "description": "Search notes by keywords.", "parameters": schema}}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let chat_call = &chat["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(chat_call["function"]["arguments"], call["arguments"]);
    assert_eq!(chat_call["id"], call["call_id"]);
    assert_eq!(
        chat["usage"]["prompt_tokens"],
        whole["usage"]["input_tokens"]
    );

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let response = http
        .post(format!("http://{addr}/responses"))
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
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed"
        ]
    );
    assert_eq!(events[2].1["item"]["arguments"], "");
    assert_eq!(events[3].1["delta"], call["arguments"]);
    assert_eq!(events[5].1["item"], *call);
    assert_eq!(events[6].1["response"], whole);
    for (i, (_, data)) in events.iter().enumerate() {
        assert_eq!(data["sequence_number"], i);
    }

    // An answer in text: a message item with its text streamed as output_text deltas.
    let text_body = json!({"model": "gpt-x", "stream": true,
        "input": "What is the capital of France?"});
    let text = http
        .post(format!("http://{addr}/v1/responses"))
        .json(&text_body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let events = super::messages_tests::events(&text);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed"
        ]
    );
    let done = &events[7].1["item"];
    assert_eq!(done["type"], "message");
    assert_eq!(done["content"][0]["text"], events[4].1["delta"]);

    let bad = http
        .post(format!("http://{addr}/v1/responses"))
        .body("{")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let bad: Value = bad.json().await.unwrap();
    assert_eq!(bad["error"]["type"], "invalid_request_error");
    server.stop().await.unwrap();
}
