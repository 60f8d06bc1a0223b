//! Tests of the openai host: lenient parsing, names, and a round trip through `sim-server`.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};

use super::wire::{parse_response, request_body, ToolNames};
use super::{OpenAiModel, RequestCounts};
use crate::host::http::OverEndpoint;
use crate::host::retry::RetryPolicy;
use crate::host::{CompletionRequest, HostError, Message, Model, ToolSpec};
use crate::sim::server as sim_server;
use crate::sim::server::{FaultConfig, ServeOptions};
use crate::sim::{SimConfig, SimModel};

fn local() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn tool(name: &str, description: &str, schema: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        title: None,
        description: Some(description.into()),
        input_schema: schema,
        deferred: false,
    }
}

const LONG: &str =
    "mcp__a_very_long_server_label_for_testing__get_the_current_weather_forecast_for_city";

fn tools() -> Vec<ToolSpec> {
    let city = json!({"type": "object", "required": ["city"], "properties": {
        "city": {"type": "string", "description": "City name, e.g. Paris"}}});
    vec![
        tool(
            "notes.search",
            "Search notes by keywords.",
            json!({"type": "object",
            "required": ["query"], "properties": {"query": {"type": "string"}}}),
        ),
        tool(LONG, "Get the weather forecast for a city.", city),
        tool(
            "notes_search",
            "Search archived notes by keywords.",
            json!({"type": "object",
            "required": ["query"], "properties": {"query": {"type": "string"}}}),
        ),
    ]
}

fn request(prompt: &str, seed: u64) -> CompletionRequest {
    CompletionRequest {
        messages: vec![
            Message::System {
                content: "You are helpful.".into(),
            },
            Message::User {
                content: prompt.into(),
            },
        ],
        tools: tools().into(),
        seed,
        ..Default::default()
    }
}

#[test]
fn names_are_sanitized_unique_and_map_back() {
    let names = ToolNames::new(tools().iter().map(|t| t.name.as_str()));
    let wire: Vec<String> = tools().iter().map(|t| names.wire(&t.name)).collect();
    let ok = regex::Regex::new("^[a-zA-Z0-9_-]{1,64}$").unwrap();
    assert!(wire.iter().all(|w| ok.is_match(w)), "{wire:?}");
    assert_eq!(wire[0], "notes_search");
    assert_ne!(wire[2], wire[0]);
    assert_eq!(wire[1].len(), 64);
    for (t, w) in tools().iter().zip(&wire) {
        assert_eq!(names.original(w), t.name);
    }
    let request = request("hi", u64::MAX);
    let body = serde_json::to_value(request_body("m", &request, &names)).unwrap();
    assert_eq!(body["seed"], json!(-1));
    assert_eq!(body["tools"][1]["function"]["name"], json!(wire[1]));
    assert!(body["tools"][0]["function"].get("title").is_none());
}

#[test]
fn odd_responses_are_read_leniently() {
    let names = ToolNames::new(["notes.search"]);
    let odd = json!({"choices": [{"message": {"content": "", "tool_calls": [
        {"id": "a", "function": {"name": "notes_search", "arguments": {"query": "x"}}},
        {"function": {"name": "other", "arguments": "{\"k\":1}"}}]},
        "finish_reason": "eos"}]});
    let c = parse_response(&odd, &names, "m").unwrap();
    assert_eq!(c.content, None);
    assert_eq!(c.tool_calls[0].name, "notes.search");
    assert_eq!(c.tool_calls[0].arguments, r#"{"query":"x"}"#);
    assert_eq!(
        (c.tool_calls[1].id.as_str(), c.tool_calls[1].name.as_str()),
        ("call_1", "other")
    );
    assert_eq!(
        (
            c.usage.input_tokens,
            c.usage.output_tokens,
            c.model.as_str()
        ),
        (0, 0, "m")
    );
    let partial = json!({"model": "x", "choices": [{"message": {"role": "assistant",
        "content": [{"type": "text", "text": "hi"}]}, "finish_reason": ""}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3}});
    let c = parse_response(&partial, &names, "m").unwrap();
    assert_eq!(
        (
            c.content.as_deref(),
            c.usage.input_tokens,
            c.usage.output_tokens
        ),
        (Some("hi"), 12, 3)
    );
    assert_eq!(c.model, "x");
    assert!(matches!(
        parse_response(&json!({"error": "x"}), &names, "m"),
        Err(HostError::BadResponse(_))
    ));
}

#[test]
fn a_key_is_needed_only_for_the_default_endpoint() {
    let missing = OpenAiModel::from_settings("gpt", None, None);
    assert!(matches!(missing, Err(HostError::MissingEnv(v)) if v == "OPENAI_API_KEY"));
    let local =
        OpenAiModel::from_settings("m", Some("http://127.0.0.1:1/v1/".into()), None).unwrap();
    assert_eq!(
        (local.id(), local.base_url()),
        ("openai:m", "http://127.0.0.1:1/v1")
    );
    let bad = OpenAiModel::with_base_url("m", "http://127.0.0.1:1", Some("k\ney".into()));
    assert!(matches!(bad, Err(HostError::Other(m)) if !m.contains("k\ney")));
}

#[tokio::test]
async fn through_sim_server_equals_the_sim() {
    let (addr, server) = sim_server::spawn(local(), Duration::ZERO, SimConfig::default())
        .await
        .unwrap();
    let model =
        OpenAiModel::with_base_url("sim", &format!("http://{addr}/v1"), Some("sk-test".into()))
            .unwrap()
            .with_timeout(Duration::from_secs(10))
            .unwrap();
    let sim = SimModel::new(SimConfig::default());
    let prompts = [
        "Search notes about rust macros",
        "What is the weather forecast for city Paris?",
        "Hello there",
    ];
    for (k, prompt) in prompts.iter().enumerate() {
        for seed in [1, 2, u64::MAX - k as u64] {
            let mut req = request(prompt, seed);
            let direct = sim.respond(&req);
            let remote = model.complete(&req).await.unwrap();
            assert_eq!(remote.content, direct.content, "{prompt}");
            assert_eq!(remote.tool_calls, direct.tool_calls, "{prompt}");
            assert_eq!(remote.model, "sim");
            assert!(remote.usage.input_tokens > 0);
            // A second turn with the tool result goes through the same way.
            if let Some(call) = direct.tool_calls.first() {
                req.messages.push(Message::Assistant {
                    reasoning: None,
                    content: None,
                    tool_calls: direct.tool_calls.clone(),
                    server_blocks: Vec::new(),
                });
                req.messages.push(Message::Tool {
                    tool_call_id: call.id.clone(),
                    content: "sunny, 21 C".into(),
                });
                let (d, r) = (sim.respond(&req), model.complete(&req).await.unwrap());
                assert_eq!((r.content, r.tool_calls), (d.content, d.tool_calls));
            }
        }
    }
    let weather = model.complete(&request(prompts[1], 1)).await.unwrap();
    assert_eq!(weather.tool_calls[0].name, LONG);
    assert_eq!(weather.tool_calls[0].arguments, r#"{"city":"Paris"}"#);
    let search = model.complete(&request(prompts[0], 1)).await.unwrap();
    assert!(search.tool_calls[0].name.starts_with("notes"), "{search:?}");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn sim_server_speaks_openai_and_rejects_garbage() {
    let (addr, server) = sim_server::spawn(local(), Duration::ZERO, SimConfig::default())
        .await
        .unwrap();
    let http = crate::net::client_builder().build().unwrap();
    let models: Value = http
        .get(format!("http://{addr}/v1/models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["id"], "sim");
    let url = format!("http://{addr}/v1/chat/completions");
    let bad = http.post(&url).body("{not json").send().await.unwrap();
    assert_eq!(bad.status(), 400);
    let err: Value = bad.json().await.unwrap();
    assert_eq!(err["error"]["type"], "invalid_request_error");
    let body = json!({"model": "sim", "seed": 3, "temperature": 0, "messages": [
        {"role": "user", "content": "Search notes about rust"}],
        "tools": [{"type": "function", "function": {"name": "notes_search", "description": "Search notes.",
                   "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}]});
    let ok: Value = http
        .post(&url)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ok["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(
        ok["choices"][0]["message"]["tool_calls"][0]["type"],
        "function"
    );
    let usage = &ok["usage"];
    assert_eq!(
        usage["total_tokens"],
        json!(
            usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
        )
    );
    server.stop().await.unwrap();
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

#[tokio::test]
async fn http_errors_become_host_errors_without_the_key() {
    use axum::http::StatusCode;
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "upstream exploded") }),
    );
    let listener = tokio::net::TcpListener::bind(local()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move { axum::serve(listener, app).await });
    let model = OpenAiModel::with_base_url(
        "m",
        &format!("http://{addr}/v1"),
        Some("sk-secret-key".into()),
    )
    .unwrap()
    .with_retry(fast(3));
    let err = model.complete(&request("hi", 1)).await.unwrap_err();
    let text = chain(&err);
    assert!(matches!(err, HostError::Request { .. }), "{text}");
    assert!(
        text.contains("HTTP 500") && text.contains("upstream exploded"),
        "{text}"
    );
    // Every attempt is in the error, which the episode keeps.
    assert!(text.contains("3 attempts failed"), "{text}");
    assert!(
        text.contains("(earlier: HTTP 500: upstream exploded (×2)): HTTP 500"),
        "{text}"
    );
    assert!(!text.contains("sk-secret-key"));
    assert_eq!(
        model.request_counts(),
        RequestCounts {
            attempts: 3,
            retries: 2
        }
    );
    task.abort();
}

/// Retries that do not wait long, for tests.
fn fast(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_secs(5),
        request_timeout: Duration::from_secs(10),
        ..RetryPolicy::default()
    }
}

/// A server answering every request with `status` and `body` (and `Retry-After` when given).
async fn fixed(status: u16, body: &'static str, retry_after: Option<&'static str>) -> String {
    use axum::http::{header, StatusCode};
    use axum::response::IntoResponse;
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move || async move {
            let mut response =
                (StatusCode::from_u16(status).unwrap(), body.to_owned()).into_response();
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
            if let Some(wait) = retry_after {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, wait.parse().unwrap());
            }
            response
        }),
    );
    let listener = tokio::net::TcpListener::bind(local()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/v1")
}

async fn attempts_for(status: u16, body: &'static str) -> (u64, HostError) {
    let url = fixed(status, body, None).await;
    let model = OpenAiModel::with_base_url("m", &url, None)
        .unwrap()
        .with_retry(fast(4));
    let err = model.complete(&request("hi", 1)).await.unwrap_err();
    (model.request_counts().attempts, err)
}

#[tokio::test]
async fn only_transient_failures_are_retried() {
    for status in [429, 500, 502, 503, 504] {
        let (attempts, _) = attempts_for(status, r#"{"error":{"message":"busy"}}"#).await;
        assert_eq!(attempts, 4, "{status}");
    }
    for status in [400, 401, 403, 404, 422, 501] {
        let (attempts, err) = attempts_for(status, r#"{"error":{"message":"no"}}"#).await;
        // A 400 to a streamed request is asked once more, whole (the endpoint may refuse
        // streaming); a 400 to that too is the request's fault, and the first one is reported.
        let expected = if status == 400 { 2 } else { 1 };
        assert_eq!(attempts, expected, "{status}");
        assert!(chain(&err).contains(&format!("HTTP {status}: no")));
    }
    // A 429 for an exhausted quota will not pass by waiting.
    let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
    assert_eq!(attempts_for(429, quota).await.0, 1);
    // An answer that arrived but is not JSON is the runner's to retry (with the whole trial).
    let (attempts, err) = attempts_for(200, r#"{"id": "x", "choi"#).await;
    assert_eq!(attempts, 1);
    assert!(matches!(err, HostError::BadResponse(_)), "{err}");
    // So is a refused connection, after the request-level attempts.
    let refused = OpenAiModel::with_base_url("m", "http://127.0.0.1:9/v1", None)
        .unwrap()
        .with_retry(fast(2));
    let err = refused.complete(&request("hi", 1)).await.unwrap_err();
    assert!(matches!(err, HostError::Request { .. }), "{err}");
    assert_eq!(refused.request_counts().attempts, 2);
}

#[tokio::test]
async fn retry_after_is_honoured_and_capped() {
    let url = fixed(503, r#"{"error":{"message":"later"}}"#, Some("1")).await;
    let model = OpenAiModel::with_base_url("m", &url, None)
        .unwrap()
        .with_retry(fast(2));
    let started = std::time::Instant::now();
    model.complete(&request("hi", 1)).await.unwrap_err();
    assert!(started.elapsed() >= Duration::from_secs(1));

    let url = fixed(429, r#"{"error":{"message":"later"}}"#, Some("3600")).await;
    let capped = RetryPolicy {
        max_delay: Duration::from_millis(50),
        ..fast(3)
    };
    let model = OpenAiModel::with_base_url("m", &url, None)
        .unwrap()
        .with_retry(capped);
    let started = std::time::Instant::now();
    model.complete(&request("hi", 1)).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(model.request_counts().attempts, 3);
}

#[tokio::test]
async fn a_request_that_hangs_past_the_timeout_is_retried() {
    let options = ServeOptions {
        stop: Default::default(),
        relabel_stream: false,
        refuse_stream: false,
        tool_calls_as_text: false,
        record_requests: None,
        latency: Duration::ZERO,
        faults: FaultConfig {
            fail_rate: 1.0,
            statuses: vec![503],
            hang: Some(Duration::from_secs(5)),
            seed: 1,
            ..FaultConfig::default()
        },
    };
    let (addr, server) = sim_server::spawn_with(local(), SimConfig::default(), options)
        .await
        .unwrap();
    let policy = RetryPolicy {
        request_timeout: Duration::from_millis(200),
        ..fast(6)
    };
    // Unstreamed: a streamed request would meet first_byte_timeout instead (tested apart).
    let model = OpenAiModel::with_base_url("sim", &format!("http://{addr}/v1"), None)
        .unwrap()
        .with_retry(policy)
        .with_options(crate::host::RequestOptions {
            stream: false,
            ..Default::default()
        });
    let started = std::time::Instant::now();
    let text = chain(&model.complete(&request("hi", 1)).await.unwrap_err());
    assert!(started.elapsed() < Duration::from_secs(4), "{text}");
    assert!(text.contains("6 attempts failed"), "{text}");
    assert!(
        text.contains("HTTP 503") && text.contains("timed out"),
        "{text}"
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn through_a_faulty_sim_server_answers_equal_the_sim() {
    let options = ServeOptions {
        stop: Default::default(),
        relabel_stream: false,
        refuse_stream: false,
        tool_calls_as_text: false,
        record_requests: None,
        latency: Duration::ZERO,
        faults: FaultConfig {
            fail_rate: 0.4,
            statuses: vec![429, 500, 502, 503, 504],
            retry_after: Some(0),
            garbage_rate: 0.1,
            seed: 3,
            ..FaultConfig::default()
        },
    };
    let (addr, server) = sim_server::spawn_with(local(), SimConfig::default(), options)
        .await
        .unwrap();
    let model = OpenAiModel::with_base_url("sim", &format!("http://{addr}/v1"), None)
        .unwrap()
        .with_retry(fast(12));
    let sim = SimModel::new(SimConfig::default());
    let (mut unparsable, mut bad_arguments, mut equal) = (0, 0, 0);
    for seed in 0..60 {
        let req = request("What is the weather forecast for city Paris?", seed);
        let direct = sim.respond(&req);
        match model.complete(&req).await {
            Ok(remote) if remote.tool_calls == direct.tool_calls => equal += 1,
            Ok(remote) => {
                // The model's error, for the agent loop to record and send back.
                let args = &remote.tool_calls[0].arguments;
                assert!(serde_json::from_str::<Value>(args).is_err(), "{args}");
                assert!(direct.tool_calls[0].arguments.starts_with(args.as_str()));
                bad_arguments += 1;
            }
            Err(HostError::BadResponse(_)) => unparsable += 1,
            Err(other) => panic!("retries should have hidden {}", chain(&other)),
        }
    }
    assert!(equal >= 45 && unparsable > 0 && bad_arguments > 0);
    assert!(
        model.request_counts().retries > 20,
        "{:?}",
        model.request_counts()
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn concurrent_requests_overlap_their_latency() {
    let latency = Duration::from_millis(200);
    let (addr, server) = sim_server::spawn(local(), latency, SimConfig::default())
        .await
        .unwrap();
    let model = std::sync::Arc::new(
        OpenAiModel::with_base_url("sim", &format!("http://{addr}/v1"), None).unwrap(),
    );
    let started = std::time::Instant::now();
    let tasks: Vec<_> = (0..200)
        .map(|seed| {
            let model = model.clone();
            tokio::spawn(async move {
                model
                    .complete(&request("Search notes about rust", seed))
                    .await
            })
        })
        .collect();
    for t in tasks {
        assert!(t.await.unwrap().is_ok());
    }
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    server.stop().await.unwrap();
}

/// A server that records each request's headers and body and answers with a fixed completion,
/// after `fail_first` answers of 429.
async fn recording(
    fail_first: usize,
) -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<(axum::http::HeaderMap, Value)>>>,
) {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    use std::sync::{Arc, Mutex};
    let seen: Arc<Mutex<Vec<(axum::http::HeaderMap, Value)>>> = Arc::default();
    let log = seen.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let log = log.clone();
                async move {
                    let value: Value = serde_json::from_slice(&body).unwrap();
                    let n = {
                        let mut log = log.lock().unwrap();
                        log.push((headers, value));
                        log.len()
                    };
                    if n <= fail_first {
                        let body = json!({"error": {"message": "slow down", "type": "requests"}});
                        return (StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response();
                    }
                    axum::Json(json!({
                        "model": "m",
                        "choices": [{"message": {"role": "assistant", "content": "done"}}],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 1}
                    }))
                    .into_response()
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind(local()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/v1"), seen)
}

#[tokio::test]
async fn host_settings_and_extra_headers_reach_the_endpoint() {
    let (url, seen) = recording(0).await;
    let model = OpenAiModel::with_base_url("m", &url, Some("sk-test-key-123".into()))
        .unwrap()
        .with_options(crate::host::RequestOptions {
            stream: false,
            temperature: Some(0.2),
            max_tokens: Some(64),
            send_seed: false,
            parallel_tool_calls: Some(false),
        })
        .with_headers([("x-gateway-key", "gw-secret-value"), ("x-team", "evals")])
        .unwrap();
    model.complete(&request("hi", 9)).await.unwrap();
    let bare = CompletionRequest {
        tools: Vec::new().into(),
        ..request("hi", 9)
    };
    model.complete(&bare).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    let (headers, body) = &seen[0];
    assert_eq!(body["temperature"], json!(0.2));
    assert_eq!(body["max_tokens"], json!(64));
    assert_eq!(body["parallel_tool_calls"], json!(false));
    assert!(body.get("seed").is_none(), "seed = false: no seed sent");
    assert_eq!(headers["x-gateway-key"], "gw-secret-value");
    assert_eq!(headers["x-team"], "evals");
    assert_eq!(headers["authorization"], "Bearer sk-test-key-123");
    // Without tools, parallel_tool_calls is not sent (OpenAI rejects it then).
    assert!(seen[1].1.get("parallel_tool_calls").is_none());
    // By default the trial's seed, the default output cap and a stream request are sent, and
    // nothing else is added.
    let (url, seen) = recording(0).await;
    let plain = OpenAiModel::with_base_url("m", &url, None).unwrap();
    plain.complete(&request("hi", 9)).await.unwrap();
    let body = seen.lock().unwrap()[0].1.clone();
    assert_eq!(body["seed"], json!(9));
    assert_eq!(body["max_tokens"], json!(crate::host::DEFAULT_MAX_TOKENS));
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    for absent in [
        "temperature",
        "parallel_tool_calls",
        "max_completion_tokens",
    ] {
        assert!(body.get(absent).is_none(), "{absent}");
    }
}

#[tokio::test]
async fn retried_attempts_are_kept_with_the_answer() {
    let (url, seen) = recording(2).await;
    let model = OpenAiModel::with_base_url("m", &url, None)
        .unwrap()
        .with_retry(fast(4));
    let completion = model.complete(&request("hi", 1)).await.unwrap();
    assert_eq!(seen.lock().unwrap().len(), 3);
    assert_eq!(
        completion.retried,
        ["HTTP 429: slow down", "HTTP 429: slow down"]
    );
    assert_eq!(completion.content.as_deref(), Some("done"));
}

#[tokio::test]
async fn throttled_answers_shrink_the_hosts_concurrency() {
    let (url, _seen) = recording(3).await;
    let congestion = std::sync::Arc::new(crate::host::aimd::Congestion::new(8));
    let model = OpenAiModel::with_base_url("m", &url, None)
        .unwrap()
        .with_retry(fast(5))
        .with_congestion(congestion.clone());
    model.complete(&request("hi", 1)).await.unwrap();
    let report = congestion.report();
    assert_eq!(report.throttled, 3);
    // Each 429 came to a request sent after the previous decrease: 8 → 4 → 2 → 1, then one
    // success adds 1/1.
    assert_eq!(report.lowest, 1.0);
    assert_eq!(report.limit, 2.0);
}

#[test]
fn a_capped_answer_is_truncated_and_reasoning_is_read() {
    let names = ToolNames::new(std::iter::empty());
    let capped = json!({"choices": [{"message": {"content": "On and on",
        "reasoning_content": "I should think about lighthouses first"},
        "finish_reason": "length"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 64}});
    let c = parse_response(&capped, &names, "m").unwrap();
    assert!(c.truncated);
    assert_eq!(c.content.as_deref(), Some("On and on"));
    let reasoning = c.reasoning.unwrap();
    assert_eq!(reasoning.text, "I should think about lighthouses first");
    // No count reported: estimated from the text (words of up to 4 characters count one).
    assert_eq!(
        c.usage.reasoning_tokens,
        crate::host::lenient::estimated_tokens(&reasoning.text)
    );
    assert!(c.usage.reasoning_tokens > 0);
    let reported = json!({"choices": [{"message": {"content": "4"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 300,
                  "completion_tokens_details": {"reasoning_tokens": 256}}});
    let c = parse_response(&reported, &names, "m").unwrap();
    assert!(!c.truncated && c.reasoning.is_none());
    assert_eq!(c.usage.reasoning_tokens, 256);
}

#[tokio::test]
async fn streamed_answers_equal_whole_ones_and_record_their_first_token() {
    let (addr, server) = sim_server::spawn(local(), Duration::ZERO, SimConfig::default())
        .await
        .unwrap();
    let url = format!("http://{addr}/v1");
    let streamed = OpenAiModel::with_base_url("sim", &url, None).unwrap();
    let whole = OpenAiModel::with_base_url("sim", &url, None)
        .unwrap()
        .with_options(crate::host::RequestOptions {
            stream: false,
            ..Default::default()
        });
    for seed in 0..10 {
        let req = request("What is the weather forecast for city Paris?", seed);
        let (a, b) = (
            streamed.complete(&req).await.unwrap(),
            whole.complete(&req).await.unwrap(),
        );
        assert_eq!(
            (&a.content, &a.tool_calls, a.usage),
            (&b.content, &b.tool_calls, b.usage)
        );
        let ttft = a
            .timing
            .ttft_ms
            .expect("a streamed answer has a first token");
        assert!(ttft <= a.timing.total_ms);
        assert!(b.timing.ttft_ms.is_none() && b.timing.total_ms > 0.0);
    }
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_rambling_stream_is_cut_at_the_cap_or_the_timeout_and_a_stall_is_retried() {
    let faults = |ramble: f64, stall: f64| ServeOptions {
        faults: FaultConfig {
            ramble_rate: ramble,
            stall_rate: stall,
            token_interval: Duration::from_millis(2),
            ..FaultConfig::default()
        },
        ..ServeOptions::default()
    };
    let (addr, server) = sim_server::spawn_with(local(), SimConfig::default(), faults(1.0, 0.0))
        .await
        .unwrap();
    let url = format!("http://{addr}/v1");
    let capped = OpenAiModel::with_base_url("sim", &url, None)
        .unwrap()
        .with_options(crate::host::RequestOptions {
            max_tokens: Some(30),
            ..Default::default()
        });
    let c = capped.complete(&request("hi", 1)).await.unwrap();
    assert!(c.truncated && !c.timed_out);
    assert_eq!(c.content.as_deref(), Some("more ".repeat(30).as_str()));
    assert_eq!(c.usage.output_tokens, 30);
    let endless = OpenAiModel::with_base_url("sim", &url, None)
        .unwrap()
        .with_options(crate::host::RequestOptions {
            max_tokens: None,
            ..Default::default()
        })
        .with_retry(RetryPolicy {
            request_timeout: Duration::from_millis(300),
            ..fast(3)
        });
    let c = endless.complete(&request("hi", 1)).await.unwrap();
    assert!(c.timed_out && !c.truncated);
    assert!(c.content.unwrap().starts_with("more more"));
    assert_eq!(endless.request_counts().attempts, 1, "not retried");
    server.stop().await.unwrap();

    let (addr, server) = sim_server::spawn_with(local(), SimConfig::default(), faults(0.0, 1.0))
        .await
        .unwrap();
    let stalled = OpenAiModel::with_base_url("sim", &format!("http://{addr}/v1"), None)
        .unwrap()
        .with_retry(RetryPolicy {
            first_byte_timeout: Duration::from_millis(150),
            ..fast(3)
        });
    let e = chain(&stalled.complete(&request("hi", 1)).await.unwrap_err());
    assert!(
        e.contains("3 attempts failed") && e.contains("first_byte_timeout"),
        "{e}"
    );
    // The server stops although three requests are still waiting for an answer.
    server.stop().await.unwrap();
}

#[tokio::test]
async fn keep_alives_and_comments_in_a_stream_are_skipped_and_a_cut_stream_is_unreadable() {
    use axum::response::IntoResponse;
    let streams = |body: &'static str| {
        axum::routing::post(move || async move {
            (
                [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
                body,
            )
                .into_response()
        })
    };
    let app = axum::Router::new()
        .route(
            "/whole/chat/completions",
            streams(
                ": keep-alive\n\ndata: \n\n\
                 data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n\
                 data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
                 data: [DONE]\n\n",
            ),
        )
        .route(
            "/cut/chat/completions",
            streams("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"),
        );
    let listener = tokio::net::TcpListener::bind(local()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let model = |path: &str| {
        OpenAiModel::with_base_url("m", &format!("http://{addr}/{path}"), None)
            .unwrap()
            .with_retry(fast(2))
    };
    let whole = model("whole").complete(&request("hi", 1)).await.unwrap();
    assert_eq!(whole.content.as_deref(), Some("hi"));
    assert!(!whole.truncated && !whole.timed_out);
    // Closed before its finish reason: read as a cut body is, and not retried here.
    let cut = model("cut");
    let e = cut.complete(&request("hi", 1)).await.unwrap_err();
    assert!(
        matches!(e, HostError::BadResponse(ref m) if m.contains("unparsable body")),
        "{e}"
    );
    assert_eq!(cut.request_counts().attempts, 1);
}
