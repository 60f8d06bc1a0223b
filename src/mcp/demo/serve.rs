//! Runs the demo server over stdio or Streamable HTTP (`/mcp`), both protocol eras.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServiceExt as _;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::catalogue::Release;
use super::handler::DemoServer;

/// Serves the demo server over stdio until stdin closes. State is fresh for each process.
pub async fn serve_stdio(release: &str) -> anyhow::Result<()> {
    let release: Release = release.parse()?;
    super::quirks::print_deprecation_warnings();
    let running = DemoServer::new(release)
        .serve(rmcp::transport::stdio_pipes())
        .await
        .context("demo server: the client did not complete a handshake")?;
    running.waiting().await.context("demo server stopped")?;
    Ok(())
}

/// Serves the demo server over Streamable HTTP at `addr` (path `/mcp`) until Ctrl-C.
///
/// Prints `listening on http://ADDR/mcp` to stderr once bound (with the real port when `addr`
/// asks for port 0). All sessions of this process share one tracker state.
pub async fn serve_http(release: &str, addr: SocketAddr) -> anyhow::Result<()> {
    let mut server = spawn_http(release, addr).await?;
    super::quirks::print_deprecation_warnings();
    eprintln!("listening on {}", server.url());
    tokio::select! {
        signal = tokio::signal::ctrl_c() => signal.context("cannot listen for Ctrl-C")?,
        finished = server.wait() => return finished,
    }
    server.shutdown().await
}

/// A demo HTTP server running in the background, e.g. for tests. Dropping it stops the server.
#[derive(Debug)]
pub struct DemoHttpServer {
    /// The address it is bound to (with the real port).
    pub addr: SocketAddr,
    cancel: CancellationToken,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl DemoHttpServer {
    /// The MCP endpoint, `http://ADDR/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Stops the server and waits for it to finish.
    pub async fn shutdown(mut self) -> anyhow::Result<()> {
        self.cancel.cancel();
        self.wait().await
    }

    /// Waits until the server task ends (on shutdown, or on an error).
    async fn wait(&mut self) -> anyhow::Result<()> {
        let Some(task) = self.task.as_mut() else {
            return Ok(());
        };
        let finished = task.await;
        self.task = None;
        Ok(finished.context("demo http server panicked")??)
    }
}

impl Drop for DemoHttpServer {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Binds `addr` (use `127.0.0.1:0` for an ephemeral port) and serves `release` in the background.
pub async fn spawn_http(release: &str, addr: SocketAddr) -> anyhow::Result<DemoHttpServer> {
    let release: Release = release.parse()?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let addr = listener
        .local_addr()
        .context("cannot read the bound address")?;
    let cancel = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_cancellation_token(cancel.child_token());
    if !addr.ip().is_loopback() {
        // Host checks guard loopback servers against DNS rebinding; a server bound to another
        // interface was exposed on purpose and is reached under names we cannot know.
        config = config.disable_allowed_hosts();
    }
    let server = DemoServer::new(release);
    let service: StreamableHttpService<DemoServer, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(server.clone()),
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
    Ok(DemoHttpServer {
        addr,
        cancel,
        task: Some(task),
    })
}
