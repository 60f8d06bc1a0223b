//! `mcpeval sim-server`: the sim model behind an OpenAI-compatible `/v1/chat/completions` endpoint,
//! Anthropic's Messages API (`/v1/messages`, streaming or not, and `count_tokens`), OpenAI's
//! Responses API (`/v1/responses`, streaming or not) and the Gemini API
//! (`/v1beta/models/{model}:generateContent`, `:streamGenerateContent`, `:countTokens`).
//!
//! With [`FaultConfig`] it also fails, hangs or garbles a share of its answers, to test how hosts
//! and the runner cope; the answers it does give are exactly those of a fault-free server.

mod faults;
mod gemini;
#[cfg(test)]
mod gemini_tests;
mod messages;
#[cfg(test)]
mod messages_tests;
mod ramble;
mod responses;
#[cfg(test)]
mod responses_tests;
mod scripted;
#[cfg(test)]
mod tests;
mod tool_search;
mod wire;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{SimConfig, SimModel};
use crate::host::Completion;
pub use faults::{Fault, FaultConfig, Faults, FAULT_STATUSES};

/// A request the sim-server cannot read, in words: answered with 400 in the API's own error
/// shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadRequest(pub String);

impl From<String> for BadRequest {
    fn from(message: String) -> Self {
        Self(message)
    }
}

impl From<&str> for BadRequest {
    fn from(message: &str) -> Self {
        Self(message.to_owned())
    }
}
pub use messages::SEED_HEADER;

/// Request bodies up to this size are accepted (long transcripts).
const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// How a sim-server answers, besides the model's own knobs.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Delay before each answer (not before an injected error status: those come at once).
    pub latency: Duration,
    pub faults: FaultConfig,
    /// Cancelled when the server shuts down: stalled and endless answers end then.
    pub stop: CancellationToken,
    /// Streamed answers go out labelled `application/json` (a buffering gateway's relabel).
    pub relabel_stream: bool,
    /// `stream: true` on the chat route gets a 400 (a gateway that does not stream).
    pub refuse_stream: bool,
    /// The model writes its tool calls into its text instead of making them (chat, Messages
    /// and Responses routes).
    pub tool_calls_as_text: bool,
    /// Each request body received goes into this file, one JSON line each.
    pub record_requests: Option<std::path::PathBuf>,
}

struct AppState {
    sim: SimModel,
    latency: Duration,
    faults: Faults,
    stop: CancellationToken,
    refuse_stream: bool,
    tool_calls_as_text: bool,
    requests: Option<scripted::RequestLog>,
}

/// Serves until Ctrl-C. Prints the bound address on stdout first (`listening on http://…`).
pub async fn serve(
    addr: SocketAddr,
    config: SimConfig,
    options: ServeOptions,
) -> anyhow::Result<()> {
    options.faults.validate().map_err(anyhow::Error::msg)?;
    let listener = bind(addr).await?;
    let stop = options.stop.clone();
    let app = router(config, options)?;
    announce(listener.local_addr()?)?;
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = tokio::signal::ctrl_c().await;
            stop.cancel();
        })
        .await
        .context("sim-server failed")
}

/// A running in-process sim-server; stops when `stop` is awaited or when dropped.
pub struct SimServerHandle {
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl SimServerHandle {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL for OpenAI clients: `http://ADDR/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Stops accepting requests, lets in-flight ones finish, and waits for the server to end.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.context("sim-server task panicked")??;
        }
        Ok(())
    }
}

impl Drop for SimServerHandle {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// Starts a fault-free sim-server in this process (for tests and benchmarks); port 0 picks a
/// free port.
pub async fn spawn(
    addr: SocketAddr,
    latency: Duration,
    config: SimConfig,
) -> anyhow::Result<(SocketAddr, SimServerHandle)> {
    let options = ServeOptions {
        latency,
        ..ServeOptions::default()
    };
    spawn_with(addr, config, options).await
}

/// Starts a sim-server in this process with the given latency and faults.
pub async fn spawn_with(
    addr: SocketAddr,
    config: SimConfig,
    options: ServeOptions,
) -> anyhow::Result<(SocketAddr, SimServerHandle)> {
    options.faults.validate().map_err(anyhow::Error::msg)?;
    let listener = bind(addr).await?;
    let bound = listener.local_addr()?;
    let (tx, rx) = oneshot::channel::<()>();
    let stop = options.stop.clone();
    let app = router(config, options)?;
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = rx.await;
                stop.cancel();
            })
            .await
    });
    let handle = SimServerHandle {
        addr: bound,
        shutdown: Some(tx),
        task: Some(task),
    };
    Ok((bound, handle))
}

async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))
}

fn announce(addr: SocketAddr) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on http://{addr}")?;
    out.flush()?;
    Ok(())
}

/// The routes, with and without the `/v1` prefix (clients differ in where they put it). `Err`
/// when the request log cannot be created.
pub fn router(config: SimConfig, options: ServeOptions) -> anyhow::Result<Router> {
    let requests = scripted::RequestLog::at(options.record_requests.as_deref())?;
    let state = Arc::new(AppState {
        sim: SimModel::new(config),
        latency: options.latency,
        faults: Faults::new(options.faults),
        stop: options.stop,
        refuse_stream: options.refuse_stream,
        tool_calls_as_text: options.tool_calls_as_text,
        requests,
    });
    let relabel = options.relabel_stream;
    let router = Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/chat/completions", post(chat_completions))
        .route("/v1/messages", post(messages_route))
        .route("/messages", post(messages_route))
        .route("/v1/messages/count_tokens", post(count_tokens))
        .route("/messages/count_tokens", post(count_tokens))
        .route("/v1/responses", post(responses_route))
        .route("/responses", post(responses_route))
        .route("/v1beta/models/{call}", post(gemini_route))
        .route("/v1/models/{call}", post(gemini_route))
        .route("/v1/models", get(models))
        .route("/models", get(models))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::map_response(
            move |mut response: Response| async move {
                let streamed = response
                    .headers()
                    .get(header::CONTENT_TYPE)
                    .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
                if relabel && streamed {
                    response.headers_mut().insert(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    );
                }
                response
            },
        ))
        .with_state(state);
    Ok(router)
}

async fn chat_completions(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    let (_in_flight, fault) = match before_answer(&state, &body, failure).await {
        Ok(go) => go,
        Err(refused) => return refused,
    };
    let value = match serde_json::from_slice::<Value>(&body) {
        Ok(v) => v,
        Err(e) => return bad_request(&format!("the body is not JSON: {e}")),
    };
    if state.refuse_stream && wants_stream(&value) {
        return bad_request("streaming is not supported by this endpoint: `stream` must be false");
    }
    let request = match wire::parse_request(&value) {
        Ok(r) => r,
        Err(BadRequest(message)) => return bad_request(&message),
    };
    let mut completion = state.respond(&request);
    if fault == Some(Fault::Ramble) {
        return rambling(&state, ramble::Api::Chat, &value, &completion).await;
    }
    answer(
        wants_stream(&value),
        fault,
        &mut completion,
        |c, stream| match stream {
            true => wire::stream_body(c),
            false => wire::response_body(c).to_string(),
        },
    )
}

/// The answer of a rambling model (`--ramble-rate`) instead of the sim's.
async fn rambling(
    state: &AppState,
    api: ramble::Api,
    request: &Value,
    sim: &Completion,
) -> Response {
    let interval = state.faults.config().token_interval;
    let input = sim.usage.input_tokens;
    let stop = state.stop.clone();
    ramble::ramble(api, request, wants_stream(request), input, interval, stop).await
}

/// `POST /v1/messages` (any query, e.g. `?beta=true`): the same model, faults and latency as the
/// chat route, answered as a Messages API body or, with `stream: true`, as its SSE events. The
/// trial's seed comes from the [`SEED_HEADER`] header (0 without it).
async fn messages_route(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (_in_flight, fault) = match before_answer(&state, &body, anthropic_failure).await {
        Ok(go) => go,
        Err(refused) => return refused,
    };
    let (mut request, value) = match anthropic_request(&headers, &body) {
        Ok(parsed) => parsed,
        Err(BadRequest(message)) => return anthropic_bad_request(&message),
    };
    // Anthropic's tool search, run as the API runs it, before the model answers.
    let search = match tool_search::read(&value, &headers, &request.tools) {
        Ok(search) => search,
        Err(BadRequest(message)) => return anthropic_bad_request(&message),
    };
    let seed = request.seed;
    let searched = search.map(|s| s.run(&mut request, seed));
    let mut completion = state.respond(&request);
    completion.server_blocks = searched.unwrap_or_default();
    if fault == Some(Fault::Ramble) {
        return rambling(&state, ramble::Api::Messages, &value, &completion).await;
    }
    let model = value.get("model").and_then(Value::as_str);
    answer(
        wants_stream(&value),
        fault,
        &mut completion,
        |c, stream| match stream {
            true => messages::stream_body(c, model),
            false => messages::response_body(c, model).to_string(),
        },
    )
}

/// `POST /v1/responses`: the same model, faults and latency as the chat route, answered as a
/// Responses API body or, with `stream: true`, as its SSE events. The trial's seed comes from
/// the [`SEED_HEADER`] header (0 without it).
async fn responses_route(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (_in_flight, fault) = match before_answer(&state, &body, failure).await {
        Ok(go) => go,
        Err(refused) => return refused,
    };
    let parsed = seed_of(&headers).and_then(|seed| {
        let value = serde_json::from_slice::<Value>(&body)
            .map_err(|e| format!("the body is not JSON: {e}"))?;
        Ok((responses::parse_request(&value, seed)?, value))
    });
    let (parsed, value) = match parsed {
        Ok(p) => p,
        Err(BadRequest(message)) => return bad_request(&message),
    };
    let mut completion = state.respond(&parsed.request);
    if !parsed.left_out.is_empty() {
        completion.usage.input_tokens = parsed.input_tokens();
    }
    if fault == Some(Fault::Ramble) {
        return rambling(&state, ramble::Api::Responses, &value, &completion).await;
    }
    let model = value.get("model").and_then(Value::as_str);
    answer(
        wants_stream(&value),
        fault,
        &mut completion,
        |c, stream| match stream {
            true => responses::stream_body(c, &parsed, model),
            false => responses::response_body(c, &parsed, model).to_string(),
        },
    )
}

/// `POST /v1beta/models/{model}:{method}`: `generateContent` (one JSON body),
/// `streamGenerateContent` (SSE chunks; Gemini CLI asks `?alt=sse`) and `countTokens`, with the
/// same model, faults and latency as the chat route. The trial's seed comes from the
/// [`SEED_HEADER`] header (0 without it).
async fn gemini_route(
    State(state): State<Arc<AppState>>,
    Path(call): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some((model, method)) = call.rsplit_once(':') else {
        return gemini_error(
            404,
            &format!("no method in `{call}`: expected MODEL:generateContent"),
        );
    };
    let stream = match method {
        "generateContent" => false,
        "streamGenerateContent" => true,
        "countTokens" => {
            return match gemini_request(&headers, &body) {
                Ok(parsed) => Json(json!({"totalTokens": parsed.input_tokens()})).into_response(),
                Err(BadRequest(message)) => gemini_error(400, &message),
            };
        }
        other => return gemini_error(404, &format!("unknown method `{other}`")),
    };
    let (_in_flight, fault) = match before_answer(&state, &body, gemini_failure).await {
        Ok(go) => go,
        Err(refused) => return refused,
    };
    let parsed = match gemini_request(&headers, &body) {
        Ok(p) => p,
        Err(BadRequest(message)) => return gemini_error(400, &message),
    };
    let mut completion = state.sim.respond(&parsed.request);
    if !parsed.left_out.is_empty() {
        completion.usage.input_tokens = parsed.input_tokens();
    }
    // A request for JSON of a given shape (Gemini CLI's model router) gets that shape.
    let wanted = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| gemini::json_schema(&v).map(gemini::schema_instance));
    if let Some(instance) = wanted {
        completion.content = Some(instance.to_string());
        completion.tool_calls.clear();
    }
    answer(stream, fault, &mut completion, |c, stream| match stream {
        true => gemini::stream_body(c, &parsed, model),
        false => gemini::response_body(c, &parsed, model).to_string(),
    })
}

fn gemini_request(headers: &HeaderMap, body: &[u8]) -> Result<gemini::Parsed, BadRequest> {
    let seed = seed_of(headers)?;
    let value =
        serde_json::from_slice::<Value>(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    gemini::parse_request(&value, seed)
}

fn gemini_error(status: u16, message: &str) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    (code, Json(gemini::error_body(status, message))).into_response()
}

fn gemini_failure(faults: &Faults, status: u16) -> Response {
    let message = if status == 429 {
        "sim-server: injected rate limit"
    } else {
        "sim-server: injected server error"
    };
    let mut response = gemini_error(status, message);
    if let Some(seconds) = faults.config().retry_after_for(status) {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// Whether a request asks for SSE (`stream: true`).
fn wants_stream(request: &Value) -> bool {
    request.get("stream").and_then(Value::as_bool) == Some(true)
}

/// The answer of a route that can stream: `render` writes the completion as SSE events (when
/// `stream`) or as a JSON body. A bad-arguments fault breaks the tool calls' arguments (or,
/// without any, cuts the body, as an invalid-JSON fault does).
fn answer(
    stream: bool,
    fault: Option<Fault>,
    completion: &mut Completion,
    render: impl FnOnce(&Completion, bool) -> String,
) -> Response {
    if matches!(fault, Some(Fault::BadArguments)) {
        for call in &mut completion.tool_calls {
            call.arguments = faults::break_arguments(&call.arguments);
        }
    }
    let text = render(completion, stream);
    let content_type = if stream {
        "text/event-stream"
    } else {
        "application/json"
    };
    let cut = match fault {
        Some(Fault::InvalidJson) => true,
        Some(Fault::BadArguments) => completion.tool_calls.is_empty(),
        _ => false,
    };
    let text = if cut { faults::cut_body(&text) } else { text };
    let mut response = text.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// The trial's seed from the [`SEED_HEADER`] header (0 without it).
fn seed_of(headers: &HeaderMap) -> Result<u64, BadRequest> {
    match headers.get(SEED_HEADER) {
        None => Ok(0),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .ok_or_else(|| BadRequest(format!("`{SEED_HEADER}` must be an unsigned integer"))),
    }
}

/// `POST /v1/messages/count_tokens`: the sim's count of what the request would send.
async fn count_tokens(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match anthropic_request(&headers, &body) {
        Ok((request, _)) => {
            let usage = state.sim.respond(&request).usage;
            Json(json!({"input_tokens": usage.input_tokens})).into_response()
        }
        Err(BadRequest(message)) => anthropic_bad_request(&message),
    }
}

fn anthropic_request(
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(crate::host::CompletionRequest, Value), BadRequest> {
    let seed = seed_of(headers)?;
    let value =
        serde_json::from_slice::<Value>(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    let request = messages::parse_request(&value, seed)?;
    Ok((request, value))
}

fn anthropic_failure(faults: &Faults, status: u16) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let body = if status == 429 {
        messages::error_body("rate_limit_error", "sim-server: injected rate limit")
    } else {
        messages::error_body("api_error", "sim-server: injected server error")
    };
    let mut response = (code, Json(body)).into_response();
    if let Some(seconds) = faults.config().retry_after_for(status) {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

fn anthropic_bad_request(message: &str) -> Response {
    let body = messages::error_body("invalid_request_error", message);
    (StatusCode::BAD_REQUEST, Json(body)).into_response()
}

/// What every route does before the model answers: over the concurrency limit, a 429 at once,
/// before any other fault is drawn; an injected status or hang, answered with `fail` (the
/// route's error format); then the latency. The fault is decided apart from the model, whose
/// randomness comes from the request alone. `Ok` holds the request's place among those in flight
/// and the fault left for the answer itself (bad arguments, invalid JSON).
async fn before_answer<'a>(
    state: &'a AppState,
    body: &[u8],
    fail: fn(&Faults, u16) -> Response,
) -> Result<(faults::InFlight<'a>, Option<Fault>), Response> {
    if let Some(log) = &state.requests {
        log.record(body);
    }
    let Some(in_flight) = state.faults.enter() else {
        return Err(fail(&state.faults, 429));
    };
    let fault = state.faults.decide(body);
    match fault {
        Some(Fault::Status(status)) => return Err(fail(&state.faults, status)),
        Some(Fault::Hang) => {
            if let Some(hang) = state.faults.config().hang {
                tokio::time::sleep(hang).await;
            }
            return Err(fail(&state.faults, 503));
        }
        Some(Fault::Stall) => {
            // Not a byte until the server stops (the client gives up long before).
            state.stop.cancelled().await;
            return Err(fail(&state.faults, 503));
        }
        _ => {}
    }
    if !state.latency.is_zero() {
        tokio::time::sleep(state.latency).await;
    }
    Ok((in_flight, fault))
}

/// An injected failure: the status, an OpenAI-style error body, and `Retry-After` on 429 and
/// 503 when configured.
fn failure(faults: &Faults, status: u16) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let (kind, message) = if status == 429 {
        ("rate_limit_error", "sim-server: injected rate limit")
    } else {
        ("server_error", "sim-server: injected server error")
    };
    let body = json!({"error": {"message": message, "type": kind, "param": null, "code": null}});
    let mut response = (code, Json(body)).into_response();
    if let Some(seconds) = faults.config().retry_after_for(status) {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

async fn models() -> Json<Value> {
    Json(json!({
        "object": "list",
        "data": [{"id": "sim", "object": "model", "created": 0, "owned_by": "mcpeval"}],
    }))
}

fn bad_request(message: &str) -> Response {
    let body = json!({"error": {
        "message": message, "type": "invalid_request_error", "param": null, "code": null}});
    (StatusCode::BAD_REQUEST, Json(body)).into_response()
}
