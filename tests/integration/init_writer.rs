//! `mcpeval init --writer-host` through the binary: a scripted OpenAI-compatible writer on
//! 127.0.0.1 answers per tool with garbage, a request that names its tool, arguments the schema
//! refuses, an HTTP 500, or good requests; each bad one is rejected at stage `writer` with its
//! reason, the good ones reach models.yaml, the writer's tokens are in the report and its key
//! in no file.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::common::{bin, temp_dir, text};

const KEY: &str = "sk-writer-planted-key-41c9";
/// What every answer of the writer reports as its usage.
const INPUT: u64 = 700;
const OUTPUT: u64 = 80;

/// The writer's answer for the prompt about `tool` (`""`: the server-wide prompt); `None`: an
/// HTTP 500.
fn script(tool: &str) -> Option<String> {
    let answer = match tool {
        "add_comment" => "Sorry, I can't help with writing tests.".to_owned(),
        "search_issues" => json!({"requests": [
            {"prompt": "Use search_issues to find login bugs in apollo",
             "args": {"query": "login", "project": "apollo"}},
            {"prompt": "Find open issues about login in project apollo",
             "args": {"query": "login", "project": "apollo", "status": "open"}}]})
        .to_string(),
        "get_issue" => format!(
            "Here you go:\n```json\n{}\n```\nThese cover the tool well.",
            json!({"requests": [
                {"prompt": "Open the issue called abc", "args": {"id": "abc"}},
                {"prompt": "Show me issue 3", "args": {"id": 3}}]})
        ),
        "create_issue" => json!({"requests": [
            {"prompt": "File a bug in apollo: the login page is blank",
             "args": {"project": "apollo", "title": "Login page is blank",
                      "severity": "high"}}]})
        .to_string(),
        "update_issue" => return None,
        "list_projects" => json!({"requests": [
            {"prompt": "Which projects are in the tracker?", "args": {}}]})
        .to_string(),
        _ => json!({
            "near_misses": [{"prompt": "How should our team triage new bug reports?"},
                            {"prompt": "What makes a good bug report title?"}],
            "general": [{"prompt": "What is the capital of France?"}]})
        .to_string(),
    };
    Some(answer)
}

/// The tool a writer prompt is about: the line after `<tool>\nname: `.
fn tool_of(prompt: &str) -> String {
    (prompt.split("<tool>\nname: ").nth(1))
        .and_then(|rest| rest.lines().next())
        .unwrap_or_default()
        .to_owned()
}

async fn complete(
    axum::extract::State(prompts): axum::extract::State<Arc<Mutex<Vec<String>>>>,
    Json(body): Json<Value>,
) -> Response {
    let prompt = body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let tool = tool_of(&prompt);
    prompts.lock().unwrap().push(prompt);
    let Some(content) = script(&tool) else {
        let error =
            json!({"error": {"message": "the writer is overloaded", "type": "server_error"}});
        return (StatusCode::INTERNAL_SERVER_ERROR, Json(error)).into_response();
    };
    Json(json!({
        "id": "chatcmpl-writer", "object": "chat.completion", "created": 0,
        "model": "scripted-2026",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": INPUT, "completion_tokens": OUTPUT,
                  "total_tokens": INPUT + OUTPUT}
    }))
    .into_response()
}

/// Starts the scripted writer on a runtime of its own; it serves until the runtime is dropped.
fn start_writer() -> (tokio::runtime::Runtime, String, Arc<Mutex<Vec<String>>>) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let prompts = Arc::new(Mutex::new(Vec::new()));
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(complete))
        .with_state(prompts.clone());
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move { axum::serve(listener, app).await });
    (runtime, format!("http://{addr}/v1"), prompts)
}

fn init(out: &Path, url: &str) -> Output {
    Command::new(bin())
        .args(["init", "--server", "demo:1.4.0", "--host", "sim"])
        .args(["--writer-host", "openai:scripted", "--out"])
        .arg(out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OPENAI_BASE_URL", url)
        .env("OPENAI_API_KEY", KEY)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every file under `dir`, with its text.
fn files(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            let bytes = std::fs::read(&path).unwrap();
            out.push((
                path.display().to_string(),
                String::from_utf8_lossy(&bytes).into(),
            ));
        }
    }
    out
}

#[test]
fn a_scripted_writer_s_bad_answers_are_rejected_with_their_reasons_and_good_ones_kept() {
    let (_runtime, url, prompts) = start_writer();
    let dir = temp_dir();
    let out = dir.path().join("suite");
    let made = init(&out, &url);
    let said = text(&made);
    assert_eq!(made.status.code(), Some(0), "{said}");

    // The writer was asked once per tool (the 500 retried by the host) and once for the server.
    let asked: Vec<String> = prompts.lock().unwrap().iter().map(|p| tool_of(p)).collect();
    for tool in [
        "list_projects",
        "search_issues",
        "get_issue",
        "create_issue",
        "add_comment",
    ] {
        assert_eq!(
            asked.iter().filter(|t| *t == tool).count(),
            1,
            "{tool}: {asked:?}"
        );
    }
    assert!(
        asked.iter().filter(|t| *t == "update_issue").count() >= 2,
        "{asked:?}"
    );
    assert_eq!(
        asked.iter().filter(|t| t.is_empty()).count(),
        1,
        "{asked:?}"
    );

    // Each bad one is in rejected.yaml at stage writer, with its reason.
    let rejected = read(&out.join("rejected.yaml"));
    for reason in [
        "# rejected by writer: the writer's answer is not the JSON asked for: Sorry, I can't help",
        "# rejected by writer: the request names the tool `search_issues` (as \"search_issues\")",
        "# rejected by writer: argument `id` = \"abc\" is refused by the input schema of `get_issue`",
        "# rejected by writer: argument `severity` is not in the input schema of `create_issue`",
        "# rejected by writer: the writer host failed: ",
    ] {
        assert!(rejected.contains(reason), "{reason}\nnot in:\n{rejected}");
    }
    // A rejected draft is kept as a task a user may fix: its request and its origin.
    assert!(rejected.contains("- id: model-get-issue-w1\n  prompt: \"Open the issue called abc\""));
    assert!(
        rejected.contains("written by openai:scripted"),
        "{rejected}"
    );
    assert!(!rejected.contains("rejected by writer: the request names the tool `get_issue`"));

    // The good ones are drafts: at least one is kept in models.yaml, written by the writer.
    let models = read(&out.join("tasks/models.yaml"));
    let good = [
        ("model-get-issue-w2", "Show me issue 3"),
        (
            "model-list-projects-w1",
            "Which projects are in the tracker?",
        ),
        (
            "model-search-issues-w2",
            "Find open issues about login in project apollo",
        ),
    ];
    let kept: Vec<&str> = (good.iter())
        .filter(|(id, prompt)| {
            models.contains(&format!("- id: {id}\n  prompt: \"{prompt}\""))
                && !rejected.contains(&format!("- id: {id}\n"))
        })
        .map(|(id, _)| *id)
        .collect();
    assert!(!kept.is_empty(), "{models}\n{rejected}");
    assert!(
        models.contains("written by the writer host `openai:scripted`"),
        "{models}"
    );
    // Words become case-blind regexes; numbers stay literal.
    if kept.contains(&"model-search-issues-w2") {
        assert!(
            models.contains(r#""query":{"regex":"(?i)login"}"#),
            "{models}"
        );
    }
    if kept.contains(&"model-get-issue-w2") {
        assert!(models.contains(r#"args: {"id":3}"#), "{models}");
    }

    // The report: the writer's tokens (six answers came), the failed tool as a note.
    let report = read(&out.join("init-report.md"));
    let tokens = format!(
        "the writer host: {} input and {} output tokens",
        6 * INPUT,
        6 * OUTPUT
    );
    assert!(report.contains(&tokens), "{tokens} not in:\n{report}");
    assert!(
        report.contains("Note: the writer host `openai:scripted` failed for `update_issue`"),
        "{report}"
    );

    // The key is in no file written.
    for (path, body) in files(&out) {
        assert!(!body.contains(KEY), "the API key is in {path}");
    }
}
