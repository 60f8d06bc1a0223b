//! Tests of the anthropic host: the request mapping, lenient parsing, names, and HTTP errors.

use std::net::SocketAddr;

use serde_json::{json, Value};

use super::wire::{parse_response, request_body, Settings, ToolNames};
use super::AnthropicModel;
use crate::host::http::OverEndpoint;
use crate::host::{CompletionRequest, HostError, Message, Model, ToolCallRequest, ToolSpec};

const LONG: &str = "mcp__a_server_label_that_goes_on_and_on_and_on_for_testing_purposes__\
                    get_the_current_weather_forecast_for_a_city_by_its_name_please_now";

fn tool(name: &str, description: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        title: Some("A title".into()),
        description: Some(description.into()),
        input_schema: json!({"type": "object", "properties": {"query": {"type": "string"}}}),
        deferred: false,
    }
}

fn tools() -> Vec<ToolSpec> {
    vec![
        tool("notes.search", "Search notes by keywords."),
        tool(LONG, "Get the weather forecast for a city."),
        tool("notes_search", "Search archived notes by keywords."),
    ]
}

fn settings() -> Settings<'static> {
    Settings {
        thinking_budget: None,
        stream: false,
        model: "claude-test",
        max_tokens: 1024,
        temperature: None,
        tool_choice: None,
        tool_search: crate::config::SearchVariant::Bm25,
    }
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCallRequest {
    ToolCallRequest {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

fn tool_result(id: &str, content: &str) -> Message {
    Message::Tool {
        tool_call_id: id.into(),
        content: content.into(),
    }
}

/// System prompt, task, two tool calls in one turn (one with arguments that are not JSON), their
/// results, a call whose result is empty, then a user nudge.
fn conversation() -> CompletionRequest {
    CompletionRequest {
        messages: vec![
            Message::System {
                content: "You are helpful.".into(),
            },
            Message::User {
                content: "Find notes about rust".into(),
            },
            Message::Assistant {
                reasoning: None,
                content: Some("Let me look.".into()),
                tool_calls: vec![
                    call("toolu_01", "notes.search", r#"{"query":"rust"}"#),
                    call("call.2", "notes_search", "{query: rust"),
                ],
                server_blocks: Vec::new(),
            },
            tool_result("toolu_01", "3 notes"),
            tool_result("call.2", "Error: the arguments are not valid JSON"),
            Message::Assistant {
                reasoning: None,
                content: None,
                tool_calls: vec![call("toolu_03", LONG, "[1]")],
                server_blocks: Vec::new(),
            },
            tool_result("toolu_03", ""),
            Message::User {
                content: "Go on.".into(),
            },
        ],
        tools: tools().into(),
        seed: 7,
        ..Default::default()
    }
}

#[test]
fn names_are_sanitized_unique_and_map_back() {
    let names = ToolNames::new(tools().iter().map(|t| t.name.as_str()));
    let wire: Vec<String> = tools().iter().map(|t| names.wire(&t.name)).collect();
    let ok = regex::Regex::new("^[a-zA-Z0-9_-]{1,128}$").unwrap();
    assert!(wire.iter().all(|w| ok.is_match(w)), "{wire:?}");
    assert_eq!(wire[0], "notes_search");
    assert_ne!(wire[2], wire[0]);
    assert!(LONG.len() > 128);
    assert_eq!(wire[1].len(), 128);
    for (t, w) in tools().iter().zip(&wire) {
        assert_eq!(names.original(w), t.name);
    }
    assert_eq!(names.original("unknown_tool"), "unknown_tool");
    // Up to 128 characters go through unchanged (OpenAI would have to cut at 64).
    let hundred = "t".repeat(100);
    assert_eq!(ToolNames::new([hundred.as_str()]).wire(&hundred), hundred);
}

#[test]
fn the_request_maps_system_tool_calls_and_results() {
    let req = conversation();
    let names = ToolNames::new(req.tools.iter().map(|t| t.name.as_str()));
    let body = serde_json::to_value(request_body(settings(), &req, &names)).unwrap();
    let second = names.wire("notes_search");
    let long = names.wire(LONG);
    let expected = json!({
        "model": "claude-test",
        "max_tokens": 1024,
        "system": "You are helpful.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Find notes about rust"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_01", "name": "notes_search",
                 "input": {"query": "rust"}},
                // Not JSON: sent as `{}` (the model's error is already in the record).
                {"type": "tool_use", "id": "call_2", "name": second, "input": {}},
            ]},
            // Consecutive tool results share one user message.
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "3 notes"},
                {"type": "tool_result", "tool_use_id": "call_2",
                 "content": "Error: the arguments are not valid JSON"},
            ]},
            // JSON that is not an object is no valid `input` either.
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_03", "name": long, "input": {}},
            ]},
            // A tool result and the user's next words merge too, the result first.
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_03"},
                {"type": "text", "text": "Go on."},
            ]},
        ],
        "tools": [
            {"name": "notes_search", "description": "Search notes by keywords.",
             "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}}},
            {"name": long, "description": "Get the weather forecast for a city.",
             "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}}},
            {"name": second, "description": "Search archived notes by keywords.",
             "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}}},
        ],
    });
    assert_eq!(body, expected, "{body:#}");
}

#[test]
fn roles_alternate_and_nothing_empty_is_sent() {
    let req = CompletionRequest {
        messages: vec![
            Message::User {
                content: "first".into(),
            },
            Message::User {
                content: "  ".into(),
            },
            Message::System {
                content: "late rule".into(),
            },
            Message::User {
                content: "second".into(),
            },
            Message::Assistant {
                reasoning: None,
                content: Some(String::new()),
                tool_calls: Vec::new(),
                server_blocks: Vec::new(),
            },
        ],
        tools: vec![ToolSpec {
            name: "bare".into(),
            title: None,
            description: None,
            input_schema: json!({"properties": {}}),
            deferred: false,
        }]
        .into(),
        seed: 1,
        ..Default::default()
    };
    let names = ToolNames::new(["bare"]);
    let body = serde_json::to_value(request_body(
        Settings {
            temperature: Some(0.0),
            max_tokens: 50,
            ..settings()
        },
        &req,
        &names,
    ))
    .unwrap();
    assert_eq!(body["system"], "late rule");
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "first"},
                                            {"type": "text", "text": "second"}]}])
    );
    assert_eq!(
        body["tools"],
        json!([{"name": "bare", "input_schema": {"type": "object", "properties": {}}}])
    );
    assert_eq!(
        (body["temperature"].clone(), body["max_tokens"].clone()),
        (json!(0.0), json!(50))
    );
    assert!(body.get("seed").is_none());

    let bare = CompletionRequest {
        messages: vec![Message::User {
            content: "hi".into(),
        }],
        tools: Vec::new().into(),
        seed: 1,
        ..Default::default()
    };
    let body =
        serde_json::to_value(request_body(settings(), &bare, &ToolNames::default())).unwrap();
    assert!(body.get("system").is_none() && body.get("tools").is_none());
    assert!(body.get("temperature").is_none());
}

#[test]
fn text_and_tool_use_are_read_with_cache_tokens() {
    let names = ToolNames::new(["notes.search"]);
    let body = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x-20990101",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "text", "text": "Looking "},
            {"type": "text", "text": "it up."},
            {"type": "tool_use", "id": "toolu_9", "name": "notes_search",
             "input": {"query": "rust", "limit": 3}},
            {"type": "tool_use", "name": "other", "input": "{\"k\":1}"},
            {"type": "tool_use", "id": "toolu_b", "name": "notes_search"},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 120, "output_tokens": 35,
                  "cache_read_input_tokens": 2048, "cache_creation_input_tokens": 512,
                  "cache_creation": {"ephemeral_5m_input_tokens": 512}},
    });
    let c = parse_response(&body, &names, "fallback").unwrap();
    assert_eq!(c.content.as_deref(), Some("Looking it up."));
    assert_eq!(c.model, "claude-x-20990101");
    assert_eq!(c.tool_calls.len(), 3);
    // serde_json keeps keys sorted: the same object, not the same bytes.
    assert_eq!(
        c.tool_calls[0],
        call("toolu_9", "notes.search", r#"{"limit":3,"query":"rust"}"#)
    );
    assert_eq!(c.tool_calls[1], call("toolu_4", "other", r#"{"k":1}"#));
    assert_eq!(c.tool_calls[2].arguments, "{}");
    let u = c.usage;
    assert_eq!(
        (
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens
        ),
        (120, 35, 2048, 512)
    );
}

#[test]
fn missing_usage_and_odd_shapes_are_tolerated() {
    let names = ToolNames::default();
    let bare = json!({"type": "message", "content": [{"type": "text", "text": "Hi."}]});
    let c = parse_response(&bare, &names, "claude-test").unwrap();
    assert_eq!(c.content.as_deref(), Some("Hi."));
    assert_eq!(c.usage, crate::host::Usage::default());
    assert_eq!(c.model, "claude-test");
    assert!(c.tool_calls.is_empty());

    let partial = json!({"content": "plain", "model": "",
        "usage": {"input_tokens": "7", "cache_read_input_tokens": null}});
    let c = parse_response(&partial, &names, "m").unwrap();
    assert_eq!(
        (c.content.as_deref(), c.model.as_str()),
        (Some("plain"), "m")
    );
    assert_eq!(
        (
            c.usage.input_tokens,
            c.usage.output_tokens,
            c.usage.cache_read_tokens
        ),
        (7, 0, 0)
    );

    // An empty answer (a refusal, say) is a final answer without text.
    let empty = json!({"type": "message", "content": [], "stop_reason": "refusal"});
    assert_eq!(parse_response(&empty, &names, "m").unwrap().content, None);
    let unknown_only = json!({"type": "message", "stop_reason": "end_turn",
        "content": [{"type": "server_tool_use", "id": "x", "name": "web_search"}]});
    let c = parse_response(&unknown_only, &names, "m").unwrap();
    assert!(c.content.is_none() && c.tool_calls.is_empty());
}

#[test]
fn error_bodies_and_broken_answers_are_bad_responses() {
    let names = ToolNames::default();
    let bad = |body: Value| match parse_response(&body, &names, "m") {
        Err(HostError::BadResponse(m)) => m,
        other => panic!("{other:?}"),
    };
    let m = bad(json!({"type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"}}));
    assert!(m.contains("overloaded_error: Overloaded"), "{m}");
    assert!(bad(json!({"error": {"message": "no such model"}})).contains("no such model"));
    assert!(bad(json!({"error": "plain text"})).contains("plain text"));
    assert!(bad(json!({"type": "error"})).contains("error"));
    assert!(bad(json!({"choices": []})).contains("no `content`"));
    let m = bad(json!({"type": "message", "stop_reason": "tool_use",
        "content": [{"type": "function_call", "name": "x"}]}));
    assert!(m.contains("tool_use"), "{m}");
    assert!(
        bad(json!({"content": [{"type": "tool_use", "id": "t", "input": {}}]}))
            .contains("without a name")
    );
}

#[test]
fn a_key_is_required_and_never_shown() {
    let missing = AnthropicModel::from_settings("claude", None, None);
    assert!(matches!(missing, Err(HostError::MissingEnv(v)) if v == "ANTHROPIC_API_KEY"));
    let m = AnthropicModel::from_settings("claude-x", None, Some("sk-ant-secret".into())).unwrap();
    assert_eq!(
        (m.id(), m.model(), m.base_url()),
        (
            "anthropic:claude-x",
            "claude-x",
            "https://api.anthropic.com"
        )
    );
    assert!(!format!("{m:?}").contains("sk-ant-secret"));
    let local = AnthropicModel::with_base_url("m", "http://127.0.0.1:1/v1/", "k").unwrap();
    assert_eq!(local.base_url(), "http://127.0.0.1:1");
    let bad = AnthropicModel::with_base_url("m", "http://127.0.0.1:1", "sk-a\nb");
    assert!(matches!(bad, Err(HostError::Other(m)) if !m.contains("sk-a")));
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text
}

/// Serves `/v1/messages` with a fixed status and body on 127.0.0.1; returns the base URL.
async fn serve(status: u16, body: &'static str) -> (String, tokio::task::JoinHandle<()>) {
    use axum::http::StatusCode;
    let app = axum::Router::new().route(
        "/v1/messages",
        axum::routing::post(move || async move { (StatusCode::from_u16(status).unwrap(), body) }),
    );
    let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let listener = tokio::net::TcpListener::bind(local).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (format!("http://{addr}"), task)
}

#[tokio::test]
async fn http_errors_become_request_errors_without_the_key() {
    const KEY: &str = "sk-ant-planted-secret";
    let cases = [
        (
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            "HTTP 529: overloaded_error: Overloaded",
        ),
        (
            500,
            "upstream exploded with sk-ant-planted-secret",
            "HTTP 500: upstream exploded",
        ),
    ];
    for (status, body, expected) in cases {
        let (url, task) = serve(status, body).await;
        let model = AnthropicModel::with_base_url("m", &url, KEY).unwrap();
        let err = model.complete(&conversation()).await.unwrap_err();
        let text = chain(&err);
        assert!(matches!(err, HostError::Request { .. }), "{text}");
        assert!(text.contains(expected), "{text}");
        assert!(!text.contains(KEY), "{text}");
        task.abort();
    }
    // A 200 that is not JSON, and one that is an error body.
    let (url, task) = serve(200, "<html>proxy login</html>").await;
    let model = AnthropicModel::with_base_url("m", &url, KEY).unwrap();
    let err = model.complete(&conversation()).await.unwrap_err();
    assert!(
        matches!(&err, HostError::BadResponse(m) if m.contains("proxy login")),
        "{err}"
    );
    task.abort();
    let (url, task) = serve(
        200,
        r#"{"type":"error","error":{"type":"api_error","message":"x"}}"#,
    )
    .await;
    let model = AnthropicModel::with_base_url("m", &url, KEY).unwrap();
    let err = model.complete(&conversation()).await.unwrap_err();
    assert!(
        matches!(&err, HostError::BadResponse(m) if m.contains("api_error: x")),
        "{err}"
    );
    task.abort();
    // Nobody listening: a request error naming the endpoint.
    let model = AnthropicModel::with_base_url("m", "http://127.0.0.1:9", KEY).unwrap();
    let err = model.complete(&conversation()).await.unwrap_err();
    assert!(
        chain(&err).contains("http://127.0.0.1:9/v1/messages"),
        "{}",
        chain(&err)
    );
}

#[tokio::test]
async fn headers_and_body_reach_the_server() {
    use axum::http::HeaderMap;
    use std::sync::{Arc, Mutex};
    let seen: Arc<Mutex<Option<(HeaderMap, Value)>>> = Arc::default();
    let store = seen.clone();
    let app = axum::Router::new().route(
        "/v1/messages",
        axum::routing::post(
            move |headers: HeaderMap, body: axum::Json<Value>| async move {
                *store.lock().unwrap() = Some((headers, body.0));
                axum::Json(json!({"type": "message", "model": "claude-test-1",
                "content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 10, "output_tokens": 2}}))
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let model = AnthropicModel::with_base_url("claude-test", &format!("http://{addr}"), "sk-k")
        .unwrap()
        .with_max_tokens(77)
        .with_temperature(0.5);
    let c = model.complete(&conversation()).await.unwrap();
    assert_eq!(
        (c.content.as_deref(), c.model.as_str()),
        (Some("done"), "claude-test-1")
    );
    let (headers, body) = seen.lock().unwrap().take().unwrap();
    assert_eq!(headers["x-api-key"], "sk-k");
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(
        (body["max_tokens"].clone(), body["temperature"].clone()),
        (json!(77), json!(0.5))
    );
    assert_eq!(body["model"], "claude-test");
    task.abort();
}

#[tokio::test]
async fn overloaded_answers_are_retried_kept_and_slow_the_host_down() {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let app = axum::Router::new().route(
        "/v1/messages",
        axum::routing::post(move || {
            let counter = counter.clone();
            async move {
                if counter.fetch_add(1, Ordering::SeqCst) < 2 {
                    let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
                    return (StatusCode::from_u16(529).unwrap(), body).into_response();
                }
                axum::Json(json!({
                    "type": "message", "role": "assistant", "model": "m",
                    "content": [{"type": "text", "text": "done"}],
                    "stop_reason": "end_turn",
                    "usage": {"input_tokens": 10, "output_tokens": 2}
                }))
                .into_response()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let congestion = Arc::new(crate::host::aimd::Congestion::new(4));
    let model = AnthropicModel::with_base_url("m", &url, "sk-ant-k")
        .unwrap()
        .with_retry(crate::host::retry::RetryPolicy {
            base_delay: std::time::Duration::from_millis(1),
            ..Default::default()
        })
        .with_congestion(congestion.clone());
    let completion = model.complete(&conversation()).await.unwrap();
    assert_eq!(completion.content.as_deref(), Some("done"));
    assert_eq!(
        completion.retried,
        [
            "HTTP 529: overloaded_error: Overloaded",
            "HTTP 529: overloaded_error: Overloaded"
        ]
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(model.request_counts().retries, 2);
    assert_eq!(congestion.report().throttled, 2);
    assert!(congestion.report().lowest < 4.0);
    task.abort();
}

#[test]
fn thinking_is_read_and_sent_back_signed_before_the_answer() {
    let names = ToolNames::new(std::iter::empty());
    let body = json!({"type": "message", "stop_reason": "max_tokens", "content": [
        {"type": "thinking", "thinking": "Check the tracker first", "signature": "c2ln"},
        {"type": "redacted_thinking", "data": "ZW5j"},
        {"type": "text", "text": "Let me"}]});
    let c = parse_response(&body, &names, "m").unwrap();
    assert!(c.truncated, "stop_reason max_tokens is the output cap");
    let reasoning = c.reasoning.clone().unwrap();
    assert_eq!(reasoning.text, "Check the tracker first");
    assert_eq!(reasoning.signature.as_deref(), Some("c2ln"));
    assert_eq!(reasoning.redacted, ["ZW5j"]);
    assert!(c.usage.reasoning_tokens > 0);
    // The next turn sends the thinking back first, signed, as the API requires.
    let req = CompletionRequest {
        messages: vec![
            Message::User {
                content: "go".into(),
            },
            Message::Assistant {
                content: c.content.clone(),
                tool_calls: vec![call("toolu_1", "notes.search", "{}")],
                reasoning: c.reasoning.clone(),
                server_blocks: Vec::new(),
            },
            tool_result("toolu_1", "none"),
        ],
        ..Default::default()
    };
    let thinking = Settings {
        thinking_budget: Some(2048),
        ..settings()
    };
    let wire = serde_json::to_value(request_body(thinking, &req, &names)).unwrap();
    let blocks = &wire["messages"][1]["content"];
    assert_eq!(blocks[0]["type"], "thinking");
    assert_eq!(blocks[0]["signature"], "c2ln");
    assert_eq!(
        blocks[1],
        json!({"type": "redacted_thinking", "data": "ZW5j"})
    );
    assert_eq!(blocks[2]["type"], "text");
    assert_eq!(
        wire["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    // Reasoning another provider returned carries no signature: it is not sent.
    let mut unsigned = req.clone();
    if let Message::Assistant { reasoning, .. } = &mut unsigned.messages[1] {
        *reasoning = Some(crate::host::Reasoning {
            text: "from elsewhere".into(),
            ..Default::default()
        });
    }
    let wire = serde_json::to_value(request_body(settings(), &unsigned, &names)).unwrap();
    assert_eq!(wire["messages"][1]["content"][0]["type"], "text");
    assert!(wire.get("thinking").is_none());
}
