//! Tests of sim-server's Gemini API route: what Gemini CLI 0.61 really sends (the fixtures), the
//! SSE chunks, `countTokens`, and answers that are the chat route's for the same request.

use serde_json::{json, Value};

use super::gemini::{json_schema, parse_request, response_body, schema_instance};
use super::spawn;
use crate::host::Message;
use crate::sim::{SimConfig, SimModel};

const FIRST: &str = include_str!("../../../tests/fixtures/apps/gemini-cli/request-first.json");
const TOOL_ERROR: &str =
    include_str!("../../../tests/fixtures/apps/gemini-cli/request-tool-error.json");

fn body_of(fixture: &str) -> Value {
    serde_json::from_str::<Value>(fixture).unwrap()["body"].clone()
}

#[test]
fn gemini_clis_request_reads_as_the_user_request_and_the_servers_instructions() {
    let parsed = parse_request(&body_of(FIRST), 7).unwrap();
    let request = &parsed.request;
    // Gemini CLI's system prompt and its <session_context> block are left out; the server's
    // instructions quoted inside that block are the system text.
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
    assert_eq!(
        names,
        [
            "mcp__tracker__list_projects",
            "mcp__tracker__search_issues",
            "mcp__tracker__get_issue",
            "mcp__tracker__create_issue",
            "mcp__tracker__update_issue",
            "mcp__tracker__add_comment"
        ]
    );
    // `parametersJsonSchema` is the schema.
    assert!(request.tools[1].input_schema["properties"]["project"].is_object());
    assert_eq!(request.seed, 7);
    assert_eq!(parsed.left_out.len(), 2);
    let answer = SimModel::new(SimConfig::default()).respond(request);
    assert!(parsed.input_tokens() > answer.usage.input_tokens + 4000);
    assert_eq!(answer.tool_calls[0].name, "mcp__tracker__search_issues");
    // It goes back under the name Gemini CLI offered, with its arguments as an object.
    let body = response_body(&answer, &parsed, "sim");
    let call = &body["candidates"][0]["content"]["parts"][0]["functionCall"];
    assert_eq!(call["name"], "mcp_tracker_search_issues");
    assert_eq!(call["args"]["project"], "zephyr");
    assert_eq!(body["candidates"][0]["finishReason"], "STOP");
    assert_eq!(body["modelVersion"], "sim");
}

#[test]
fn a_call_and_its_mcp_error_read_back_as_the_servers_text() {
    let parsed = parse_request(&body_of(TOOL_ERROR), 0).unwrap();
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
    // An output loses its <untrusted_context> wrapper; thoughts are not text; other errors
    // read as errors.
    let body = json!({"systemInstruction": {"parts": [{"text": "be brief"}]}, "contents": [
        {"role": "user", "parts": [{"text": "Show issue 3"}]},
        {"role": "model", "parts": [{"text": "hm", "thought": true},
            {"functionCall": {"id": "c1", "name": "get_issue", "args": {"id": 3}}},
            {"functionCall": {"id": "c2", "name": "mcp_t_get_issue", "args": {"id": 4}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"id": "c1", "name": "get_issue",
                "response": {"output": "<untrusted_context>\n{\"id\":3}\n</untrusted_context>"}}},
            {"functionResponse": {"id": "c2", "name": "mcp_t_get_issue",
                "response": {"error": "Tool execution denied by policy."}}}]}]});
    let parsed = parse_request(&body, 0).unwrap();
    let messages = &parsed.request.messages;
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert_eq!(
        messages[1],
        Message::Assistant {
            reasoning: None,
            content: None,
            tool_calls: vec![
                crate::host::ToolCallRequest {
                    id: "c1".into(),
                    name: "get_issue".into(),
                    arguments: r#"{"id":3}"#.into()
                },
                crate::host::ToolCallRequest {
                    id: "c2".into(),
                    name: "mcp__t__get_issue".into(),
                    arguments: r#"{"id":4}"#.into()
                }
            ],
            server_blocks: Vec::new(),
        }
    );
    assert_eq!(
        messages[2],
        Message::Tool {
            tool_call_id: "c1".into(),
            content: "{\"id\":3}".into()
        }
    );
    assert_eq!(
        messages[3],
        Message::Tool {
            tool_call_id: "c2".into(),
            content: "Error: Tool execution denied by policy.".into()
        }
    );
    assert!(parse_request(&json!({"contents": 3}), 0).is_err());
    assert!(parse_request(&json!({"contents": [{"role": "tool", "parts": []}]}), 0).is_err());
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
    let body = json!({
        "contents": [{"role": "user", "parts": [{"text": "Search notes about rust"}]}],
        "tools": [{"functionDeclarations": [{"name": "mcp_notes_notes_search",
            "description": "Search notes by keywords.", "parametersJsonSchema": schema}]}],
        "generationConfig": {"temperature": 1}});
    let whole: Value = http
        .post(format!("http://{addr}/v1beta/models/gem-x:generateContent"))
        .header("x-mcpeval-seed", "3")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(whole["modelVersion"], "gem-x");
    let call = &whole["candidates"][0]["content"]["parts"][0]["functionCall"];
    assert_eq!(call["name"], "mcp_notes_notes_search");
    // The chat route, same request and seed (the tool as the sim saw it): the same call and
    // count.
    let chat: Value = http
        .post(format!("http://{addr}/v1/chat/completions"))
        .json(&json!({"model": "sim", "seed": 3,
            "messages": [{"role": "user", "content": "Search notes about rust"}],
            "tools": [{"type": "function", "function": {"name": "mcp__notes__notes_search",
                "description": "Search notes by keywords.", "parameters": schema}}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let chat_call = &chat["choices"][0]["message"]["tool_calls"][0];
    let chat_args: Value =
        serde_json::from_str(chat_call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(chat_args, call["args"]);
    assert_eq!(
        chat["usage"]["prompt_tokens"],
        whole["usageMetadata"]["promptTokenCount"]
    );

    let response = http
        .post(format!(
            "http://{addr}/v1beta/models/gem-x:streamGenerateContent?alt=sse"
        ))
        .header("x-mcpeval-seed", "3")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let text = response.text().await.unwrap();
    let chunks: Vec<Value> = text
        .split("\r\n\r\n")
        .filter(|c| !c.trim().is_empty())
        .map(|c| serde_json::from_str(c.strip_prefix("data: ").unwrap()).unwrap())
        .collect();
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0], whole);

    // An answer in text and no tools: one chunk with the text.
    let text_body = json!({"contents": [{"role": "user",
        "parts": [{"text": "What is the capital of France?"}]}]});
    let chunk: Value = {
        let text = http
            .post(format!(
                "http://{addr}/v1beta/models/sim:streamGenerateContent?alt=sse"
            ))
            .json(&text_body)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        serde_json::from_str(text.trim().strip_prefix("data: ").unwrap()).unwrap()
    };
    let part = &chunk["candidates"][0]["content"]["parts"][0];
    assert!(
        part["text"].as_str().is_some_and(|t| !t.is_empty()),
        "{chunk}"
    );
    assert!(chunk["usageMetadata"]["candidatesTokenCount"].as_u64() > Some(0));

    // countTokens counts what generateContent would be sent.
    let counted: Value = http
        .post(format!("http://{addr}/v1beta/models/sim:countTokens"))
        .json(&json!({"generateContentRequest": body}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        counted["totalTokens"],
        whole["usageMetadata"]["promptTokenCount"]
    );

    for (path, status) in [
        ("sim:generateContent", 400),
        ("sim:embedContent", 404),
        ("sim", 404),
    ] {
        let bad = http
            .post(format!("http://{addr}/v1beta/models/{path}"))
            .body("{")
            .send()
            .await
            .unwrap();
        assert_eq!(bad.status(), status, "{path}");
        let bad: Value = bad.json().await.unwrap();
        assert_eq!(bad["error"]["code"], status);
    }
    server.stop().await.unwrap();
}

#[test]
fn a_request_for_json_of_a_shape_gets_that_shape() {
    // Gemini CLI's model router asks so when no model is given.
    let body = json!({"contents": [], "generationConfig": {
        "responseMimeType": "application/json",
        "responseJsonSchema": {"type": "OBJECT", "properties": {
            "complexity_reasoning": {"type": "STRING"},
            "complexity_score": {"type": "INTEGER", "minimum": 1},
            "model": {"type": "STRING", "enum": ["flash", "pro"]},
            "steps": {"type": "ARRAY", "items": {"type": "STRING"}}},
            "required": ["complexity_reasoning", "complexity_score"]}}});
    let schema = json_schema(&body).unwrap();
    assert_eq!(
        schema_instance(schema),
        json!({"complexity_reasoning": "", "complexity_score": 1, "model": "flash", "steps": []})
    );
    assert!(json_schema(&json!({"generationConfig": {"temperature": 1}})).is_none());
}
