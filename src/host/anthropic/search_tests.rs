//! Tests of Anthropic's tool search on the client side: the request's search tool, deferred tools
//! and beta, and the round trip of the search's blocks (read from an answer, streamed or not,
//! counted, and sent back unchanged).

use serde_json::{json, Value};

use super::stream::EventReader;
use super::wire::{parse_response, request_body, Settings, ToolNames};
use crate::config::SearchVariant;
use crate::host::http::StreamReader;
use crate::host::{CompletionRequest, Message, ToolSpec};

fn tool(name: &str, deferred: bool) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        title: None,
        description: Some(format!("The {name} tool.")),
        input_schema: json!({"type": "object"}),
        deferred,
    }
}

fn settings(variant: SearchVariant) -> Settings<'static> {
    Settings {
        model: "claude-test",
        max_tokens: 1024,
        temperature: None,
        thinking_budget: None,
        stream: false,
        tool_choice: None,
        tool_search: variant,
    }
}

/// An answer that searched, found `get_issue` (by its wire name) and called it.
fn searched() -> Value {
    json!({"type": "message", "model": "claude-test", "stop_reason": "tool_use", "content": [
        {"type": "text", "text": "Let me find a tool."},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25",
         "input": {"query": "show an issue"}},
        {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content": {
            "type": "tool_search_tool_search_result", "tool_references": [
                {"type": "tool_reference", "tool_name": "mcp__tracker__get_issue"},
                {"type": "tool_reference", "tool_name": "list_projects"}]}},
        {"type": "tool_use", "id": "toolu_2", "name": "mcp__tracker__get_issue",
         "input": {"id": 3}}],
        "usage": {"input_tokens": 50, "output_tokens": 9,
                  "server_tool_use": {"tool_search_requests": 1}}})
}

#[test]
fn deferred_tools_bring_the_search_tool_of_the_hosts_variant() {
    let request = CompletionRequest {
        messages: vec![Message::User {
            content: "Show issue 3".into(),
        }],
        tools: vec![tool("get_issue", true), tool("list_resources", false)].into(),
        ..Default::default()
    };
    let names = ToolNames::new(request.tools.iter().map(|t| t.name.as_str()));
    let body =
        |variant| serde_json::to_value(request_body(settings(variant), &request, &names)).unwrap();
    let bm25 = body(SearchVariant::Bm25);
    assert_eq!(
        bm25["tools"][0],
        json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})
    );
    assert_eq!(bm25["tools"][1]["defer_loading"], true);
    assert!(
        bm25["tools"][2].get("defer_loading").is_none(),
        "a host tool stays loaded"
    );
    let regex = body(SearchVariant::Regex);
    assert_eq!(regex["tools"][0]["type"], "tool_search_tool_regex_20251119");
    assert_eq!(regex["tools"][0]["name"], "tool_search_tool_regex");
    assert!(super::wire::searches(&request));
    // Without a deferred tool there is no search tool (and no beta).
    let plain = CompletionRequest {
        tools: vec![tool("get_issue", false)].into(),
        ..request.clone()
    };
    assert!(!super::wire::searches(&plain));
    let wire = serde_json::to_value(request_body(settings(SearchVariant::Bm25), &plain, &names));
    assert_eq!(wire.unwrap()["tools"].as_array().unwrap().len(), 1);
}

#[test]
fn the_searchs_blocks_are_read_counted_and_sent_back_unchanged() {
    let names = ToolNames::new(["mcp__tracker__get_issue", "list_projects"]);
    let answer = searched();
    let completion = parse_response(&answer, &names, "m").unwrap();
    assert_eq!(completion.tool_calls[0].name, "mcp__tracker__get_issue");
    assert_eq!(completion.server_blocks.len(), 2);
    assert_eq!(completion.searches.len(), 1);
    let search = &completion.searches[0];
    assert_eq!(search.query, "show an issue");
    assert_eq!(search.ranked, ["mcp__tracker__get_issue", "list_projects"]);
    assert_eq!(search.returned, 2);
    // The next request carries them back as they came, between the text and the call.
    let request = CompletionRequest {
        messages: vec![
            Message::User {
                content: "Show issue 3".into(),
            },
            Message::Assistant {
                content: completion.content.clone(),
                tool_calls: completion.tool_calls.clone(),
                reasoning: None,
                server_blocks: completion.server_blocks.clone(),
            },
            Message::Tool {
                tool_call_id: "toolu_2".into(),
                content: "{\"id\": 3}".into(),
            },
        ],
        tools: vec![tool("mcp__tracker__get_issue", true)].into(),
        ..Default::default()
    };
    let wire = request_body(settings(SearchVariant::Bm25), &request, &names);
    let wire = serde_json::to_value(wire).unwrap();
    let sent = wire["messages"][1]["content"].as_array().unwrap();
    let kinds: Vec<&str> = sent.iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "text",
            "server_tool_use",
            "tool_search_tool_result",
            "tool_use"
        ]
    );
    assert_eq!(sent[1], answer["content"][1]);
    assert_eq!(sent[2], answer["content"][2]);
    // An error result is a search that returned nothing.
    let failed = json!({"type": "message", "content": [
        {"type": "server_tool_use", "id": "s", "name": "tool_search_tool_regex",
         "input": {"pattern": "(("}},
        {"type": "tool_search_tool_result", "tool_use_id": "s", "content": {
            "type": "tool_search_tool_result_error", "error_code": "invalid_tool_input"}},
        {"type": "text", "text": "No tool fits."}]});
    let completion = parse_response(&failed, &names, "m").unwrap();
    assert_eq!(completion.searches[0].query, "((");
    assert!(completion.searches[0].ranked.is_empty());
}

#[test]
fn a_streamed_search_is_read_as_the_unstreamed_one() {
    let answer = searched();
    let mut reader = EventReader::default();
    let mut events = vec![json!({"type": "message_start",
        "message": {"type": "message", "model": "claude-test", "usage": answer["usage"]}})];
    for (i, block) in answer["content"].as_array().unwrap().iter().enumerate() {
        let mut start = block.clone();
        let input = start.get("input").cloned();
        if let Some(input) = &input {
            start["input"] = json!({});
            events.push(json!({"type": "content_block_start", "index": i, "content_block": start}));
            events.push(json!({"type": "content_block_delta", "index": i,
                "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}));
        } else {
            events.push(json!({"type": "content_block_start", "index": i, "content_block": block}));
        }
    }
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}));
    for e in &events {
        reader.event("", &e.to_string()).unwrap();
    }
    let joined = reader.finish();
    assert_eq!(joined["content"], answer["content"]);
    let names = ToolNames::new(["mcp__tracker__get_issue", "list_projects"]);
    let completion = parse_response(&joined, &names, "m").unwrap();
    assert_eq!(completion.searches.len(), 1);
    assert_eq!(
        completion.server_blocks[0]["input"]["query"],
        "show an issue"
    );
}
