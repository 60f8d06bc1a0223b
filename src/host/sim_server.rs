//! `mcpeval sim-server`: the sim model behind an OpenAI-compatible `/v1/chat/completions` endpoint.
//!
//! With [`FaultConfig`] it also fails, hangs or garbles a share of its answers, to test how hosts
//! and the runner cope; the answers it does give are exactly those of a fault-free server.

mod faults;
#[cfg(test)]
mod tests;
mod wire;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::sim::{SimConfig, SimModel};
pub use faults::{Fault, FaultConfig, Faults, FAULT_STATUSES};

/// Request bodies up to this size are accepted (long transcripts).
const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// How a sim-server answers, besides the model's own knobs.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Delay before each answer (not before an injected error status: those come at once).
    pub latency: Duration,
    pub faults: FaultConfig,
}

struct AppState {
    sim: SimModel,
    latency: Duration,
    faults: Faults,
}

/// Serves until Ctrl-C. Prints the bound address on stdout first (`listening on http://…`).
pub async fn serve(
    addr: SocketAddr,
    config: SimConfig,
    options: ServeOptions,
) -> anyhow::Result<()> {
    options.faults.validate().map_err(anyhow::Error::msg)?;
    let listener = bind(addr).await?;
    announce(listener.local_addr()?)?;
    axum::serve(listener, router(config, options))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
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
    let task = tokio::spawn(async move {
        axum::serve(listener, router(config, options))
            .with_graceful_shutdown(async {
                let _ = rx.await;
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

/// The routes, with and without the `/v1` prefix (clients differ in where they put it).
pub fn router(config: SimConfig, options: ServeOptions) -> Router {
    let state = Arc::new(AppState {
        sim: SimModel::new(config),
        latency: options.latency,
        faults: Faults::new(options.faults),
    });
    Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/chat/completions", post(chat_completions))
        .route("/v1/models", get(models))
        .route("/models", get(models))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state)
}

async fn chat_completions(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    // Over the concurrency limit: refused at once, before any other fault is drawn.
    let Some(_in_flight) = state.faults.enter() else {
        return failure(&state.faults, 429);
    };
    // Decided apart from the model, whose randomness comes from the request alone.
    let fault = state.faults.decide(&body);
    match fault {
        Some(Fault::Status(status)) => return failure(&state.faults, status),
        Some(Fault::Hang) => {
            if let Some(hang) = state.faults.config().hang {
                tokio::time::sleep(hang).await;
            }
            return failure(&state.faults, 503);
        }
        _ => {}
    }
    if !state.latency.is_zero() {
        tokio::time::sleep(state.latency).await;
    }
    let request = match serde_json::from_slice::<Value>(&body)
        .map_err(|e| format!("the body is not JSON: {e}"))
        .and_then(|v| wire::parse_request(&v))
    {
        Ok(r) => r,
        Err(message) => return bad_request(&message),
    };
    let mut completion = state.sim.respond(&request);
    match fault {
        Some(Fault::BadArguments) if !completion.tool_calls.is_empty() => {
            for call in &mut completion.tool_calls {
                call.arguments = faults::break_arguments(&call.arguments);
            }
            Json(wire::response_body(&completion)).into_response()
        }
        Some(Fault::BadArguments | Fault::InvalidJson) => {
            let text = wire::response_body(&completion).to_string();
            let mut response = faults::cut_body(&text).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        _ => Json(wire::response_body(&completion)).into_response(),
    }
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
