//! Starts a proxy (its base reached, its overlay checked) and serves it over stdio or
//! Streamable HTTP (`/mcp`), both protocol eras.

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServiceExt as _;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::handler::ProxyServer;
use super::overlay::{Overlay, OverlayError};
use super::replay::Replay;
use crate::config::ServerSpec;
use crate::error::{Coded, Exit};
use crate::mcp::{McpConnection, McpError};

/// Why a proxy did not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error(transparent)]
    Overlay(#[from] OverlayError),
    #[error("the base server: {0}")]
    Base(#[source] McpError),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("serving failed: {0}")]
    Serve(String),
    #[error("{0}")]
    BaseLost(String),
}

impl Coded for ProxyError {
    fn exit(&self) -> Exit {
        match self {
            Self::Overlay(_) => Exit::Usage,
            Self::Base(_) | Self::Listen { .. } | Self::Serve(_) | Self::BaseLost(_) => Exit::Infra,
        }
    }
}

/// Connects to `base`, checks `overlay` against its lists, and returns the proxy, ready to be
/// served. Nothing is served when the overlay names what the base does not list.
pub async fn start(
    base: ServerSpec,
    overlay: Overlay,
    replay: Option<Replay>,
) -> Result<ProxyServer, ProxyError> {
    let connection = McpConnection::connect(&base)
        .await
        .map_err(ProxyError::Base)?;
    if !overlay.is_empty() {
        let tools = connection.list_tools().await.map_err(ProxyError::Base)?;
        let prompts = connection.list_prompts().await.map_err(ProxyError::Base)?;
        overlay.check(&tools, &prompts)?;
    }
    Ok(ProxyServer::new(base, overlay, connection, replay))
}

/// Serves `proxy` over stdio until stdin closes; a base that dies ends it with that error.
pub async fn serve_stdio(proxy: ProxyServer) -> Result<(), ProxyError> {
    let mut lost = proxy.end_on_base_loss();
    let running = proxy
        .serve(rmcp::transport::stdio_pipes())
        .await
        .map_err(|e| {
            ProxyError::Serve(format!(
                "the client did not complete a handshake: {}",
                crate::error::chain(&e)
            ))
        })?;
    tokio::select! {
        stopped = running.waiting() => {
            stopped.map_err(|e| ProxyError::Serve(crate::error::chain(&e)))?;
            Ok(())
        }
        said = lost.wait_for(Option::is_some) => {
            let why = said.map(|s| s.clone().unwrap_or_default()).unwrap_or_default();
            Err(ProxyError::BaseLost(why))
        }
    }
}

/// Serves `proxy` over Streamable HTTP at `addr` until Ctrl-C, saying `listening on URL` on
/// stderr once bound (with the real port when `addr` asks for port 0).
pub async fn serve_http(proxy: ProxyServer, addr: SocketAddr) -> Result<(), ProxyError> {
    let mut server = spawn_http(proxy, addr).await?;
    eprintln!("listening on {}", server.url());
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        finished = server.wait() => return finished,
    }
    server.shutdown().await
}

/// A proxy served over HTTP in the background. Dropping it stops the server.
#[derive(Debug)]
pub struct ProxyHttpServer {
    /// The address it is bound to (with the real port).
    pub addr: SocketAddr,
    cancel: CancellationToken,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl ProxyHttpServer {
    /// The MCP endpoint, `http://ADDR/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Stops the server and waits for it to finish.
    pub async fn shutdown(mut self) -> Result<(), ProxyError> {
        self.cancel.cancel();
        self.wait().await
    }

    async fn wait(&mut self) -> Result<(), ProxyError> {
        let Some(task) = self.task.as_mut() else {
            return Ok(());
        };
        let finished = task.await;
        self.task = None;
        match finished {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(ProxyError::Serve(e.to_string())),
            Err(e) => Err(ProxyError::Serve(format!("the http server stopped: {e}"))),
        }
    }
}

impl Drop for ProxyHttpServer {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Binds `addr` (`127.0.0.1:0` for an ephemeral port) and serves `proxy` in the background;
/// each HTTP session gets its own connection to the base.
pub async fn spawn_http(
    proxy: ProxyServer,
    addr: SocketAddr,
) -> Result<ProxyHttpServer, ProxyError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ProxyError::Listen { addr, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| ProxyError::Listen { addr, source })?;
    let cancel = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_cancellation_token(cancel.child_token());
    if !addr.ip().is_loopback() {
        // As the demo server: a server bound to another interface was exposed on purpose and is
        // reached under names we cannot know.
        config = config.disable_allowed_hosts();
    }
    let service: StreamableHttpService<ProxyServer, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(proxy.session()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
    let router = axum::Router::new().nest_service("/mcp", service);
    let stop = cancel.clone();
    let task = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await
    });
    Ok(ProxyHttpServer {
        addr,
        cancel,
        task: Some(task),
    })
}
