//! The `anthropic` host through the real binary, against a scripted mock of the Messages API on
//! 127.0.0.1 that checks what a real endpoint would: headers, alternating roles, tool results
//! that answer the tool uses before them.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use common::*;
use serde_json::{json, Value};

const KEY: &str = "sk-ant-planted-test-key-4c1d";
/// What every mock answer reports, so that each episode's sums are known.
const INPUT: u64 = 180;
const OUTPUT: u64 = 25;
const CACHE_READ: u64 = 1200;
const CACHE_WRITE: u64 = 64;

#[derive(Default)]
struct Mock {
    requests: AtomicUsize,
    /// Why requests were refused (a real endpoint would have answered 4xx).
    refused: Mutex<Vec<String>>,
}

fn refuse(mock: &Mock, status: StatusCode, kind: &str, why: String) -> Response {
    mock.refused.lock().unwrap().push(why.clone());
    let body = json!({"type": "error", "error": {"type": kind, "message": why}});
    (status, Json(body)).into_response()
}

/// What a real endpoint would reject in a request body: roles that do not alternate, a first
/// message that is not the user's, empty content, tool results that answer no tool use of the
/// message before them or do not open their message.
fn invalid(body: &Value) -> Option<String> {
    let messages = body["messages"].as_array()?;
    if body["max_tokens"].as_u64().is_none() || !body["system"].is_string() {
        return Some("max_tokens and system are expected".into());
    }
    let mut previous_uses: Vec<&str> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or("");
        let expected = if i % 2 == 0 { "user" } else { "assistant" };
        if role != expected {
            return Some(format!(
                "message {i} has role `{role}`, expected `{expected}`"
            ));
        }
        let blocks = m["content"].as_array().filter(|b| !b.is_empty())?;
        let mut results_done = false;
        for b in blocks {
            match b["type"].as_str() {
                Some("tool_result") => {
                    let id = b["tool_use_id"].as_str().unwrap_or("");
                    if results_done || !previous_uses.contains(&id) {
                        return Some(format!("message {i}: stray tool_result `{id}`"));
                    }
                }
                Some("text") if b["text"].as_str().unwrap_or("").trim().is_empty() => {
                    return Some(format!("message {i}: empty text block"));
                }
                Some("tool_use") if !b["input"].is_object() => {
                    return Some(format!("message {i}: tool_use input is not an object"));
                }
                _ => results_done = true,
            }
        }
        previous_uses = blocks
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .filter_map(|b| b["id"].as_str())
            .collect();
    }
    None
}

/// First turn: a `tool_use` of `list_projects` (or the first tool offered) with `{}`. A turn
/// that carries a `tool_result`: the final answer.
async fn messages(
    axum::extract::State(mock): axum::extract::State<Arc<Mock>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let n = mock.requests.fetch_add(1, Ordering::SeqCst);
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if header("x-api-key") != Some(KEY) {
        let why = "invalid x-api-key".to_owned();
        return refuse(&mock, StatusCode::UNAUTHORIZED, "authentication_error", why);
    }
    if header("anthropic-version") != Some("2023-06-01") {
        let why = format!("anthropic-version {:?}", header("anthropic-version"));
        return refuse(&mock, StatusCode::BAD_REQUEST, "invalid_request_error", why);
    }
    if let Some(why) = invalid(&body) {
        return refuse(&mock, StatusCode::BAD_REQUEST, "invalid_request_error", why);
    }
    let last = body["messages"].as_array().and_then(|m| m.last());
    let answered = last
        .and_then(|m| m["content"].as_array())
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"));
    let usage = json!({"input_tokens": INPUT, "output_tokens": OUTPUT,
        "cache_read_input_tokens": CACHE_READ, "cache_creation_input_tokens": CACHE_WRITE});
    let (content, stop) = if answered {
        (
            json!([{"type": "text", "text": "Here is what I found."}]),
            "end_turn",
        )
    } else {
        let names: Vec<&str> = body["tools"]
            .as_array()
            .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        let Some(name) = names
            .iter()
            .find(|n| n.ends_with("list_projects"))
            .or(names.first())
        else {
            let why = "no tools offered".to_owned();
            return refuse(&mock, StatusCode::BAD_REQUEST, "invalid_request_error", why);
        };
        let tool_use = json!({"type": "tool_use", "id": format!("toolu_{n:04}"),
            "name": name, "input": {}});
        (
            json!([{"type": "text", "text": "Let me check."}, tool_use]),
            "tool_use",
        )
    };
    Json(
        json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
        "model": "claude-test-20990101", "content": content, "stop_reason": stop,
        "stop_sequence": null, "usage": usage}),
    )
    .into_response()
}

/// Starts the mock on a runtime of its own; it serves until the runtime is dropped.
fn start_mock() -> (tokio::runtime::Runtime, String, Arc<Mock>) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mock = Arc::new(Mock::default());
    let app = axum::Router::new()
        .route("/v1/messages", axum::routing::post(messages))
        .with_state(mock.clone());
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move { axum::serve(listener, app).await });
    (runtime, format!("http://{addr}"), mock)
}

fn anthropic_run(out: &Path) -> Command {
    let mut cmd = pair_command("demo:1.4.0", "demo:1.5.0", out);
    cmd.args(["--host", "anthropic:claude-test", "--trials", "1"])
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL");
    cmd
}

#[test]
fn anthropic_host_runs_the_demo_against_a_mock_messages_api() {
    let (_runtime, url, mock) = start_mock();
    let dir = temp_dir();
    let output = anthropic_run(dir.path())
        .env("ANTHROPIC_BASE_URL", &url)
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .unwrap();
    let log = text(&output);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "a verdict, not an error: {log}"
    );
    assert!(!log.contains(KEY), "the key reached the console: {log}");
    let refused = mock.refused.lock().unwrap().clone();
    assert!(refused.is_empty(), "the mock refused requests: {refused:?}");

    let eps = episodes(dir.path());
    let pairs: std::collections::BTreeSet<(String, String)> = eps
        .iter()
        .map(|e| (e.task_id.clone(), e.side.to_string()))
        .collect();
    assert!(eps.len() >= 10 && pairs.len() == eps.len(), "{log}");
    for e in &eps {
        let at = format!("{} {} {:?}", e.task_id, e.side, e.infra_error);
        assert!(e.infra_error.is_none(), "{at}");
        assert_eq!(e.host, "anthropic:claude-test", "{at}");
        assert_eq!(e.model, "claude-test-20990101", "{at}");
        assert_eq!((e.turns, e.tool_calls), (2, 1), "{at}");
        assert_eq!(e.calls[0].tool, "list_projects", "{at}");
        assert_eq!(e.calls[0].arguments, "{}", "{at}");
        assert!(!e.calls[0].is_error, "{at}: {}", e.calls[0].result);
        assert_eq!(e.final_answer.as_deref(), Some("Here is what I found."));
        let tokens = (
            e.input_tokens,
            e.output_tokens,
            e.total_tokens,
            e.cache_read_tokens,
            e.cache_write_tokens,
        );
        let expected = (
            2 * INPUT,
            2 * OUTPUT,
            2 * (INPUT + OUTPUT),
            2 * CACHE_READ,
            2 * CACHE_WRITE,
        );
        assert_eq!(tokens, expected, "{at}");
    }
    assert_eq!(mock.requests.load(Ordering::SeqCst), 2 * eps.len());

    let csv = std::fs::read_to_string(dir.path().join("episodes.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(
        header.contains("total_tokens,cache_read_tokens,cache_write_tokens"),
        "{header}"
    );
    assert!(dir.path().join("tool_calls.parquet").exists());

    // The key reaches no file of the run directory.
    let all = files_under(dir.path());
    assert!(all.len() > 5, "{all:?}");
    for path in all {
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "the key is in {}",
            path.display()
        );
    }
}

#[test]
fn a_missing_anthropic_key_is_a_usage_error() {
    let dir = temp_dir();
    for base_url in [None, Some("http://127.0.0.1:9")] {
        let mut cmd = anthropic_run(dir.path());
        if let Some(url) = base_url {
            cmd.env("ANTHROPIC_BASE_URL", url);
        }
        let output = cmd.output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{}", text(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("ANTHROPIC_API_KEY"), "{}", text(&output));
    }
}
