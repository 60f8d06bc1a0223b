//! Runs the demo server over stdio or Streamable HTTP (`/mcp`), both protocol eras.

use std::net::SocketAddr;

use anyhow::Context as _;
use rmcp::ServiceExt as _;

use super::catalogue::Release;
use super::handler::DemoServer;
use crate::mcp::http::HttpServer;

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
    let server = spawn_http(release, addr).await?;
    super::quirks::print_deprecation_warnings();
    Ok(server.until_ctrl_c().await?)
}

/// A demo HTTP server running in the background, e.g. for tests. Dropping it stops the server.
pub type DemoHttpServer = HttpServer;

/// Binds `addr` (use `127.0.0.1:0` for an ephemeral port) and serves `release` in the background.
pub async fn spawn_http(release: &str, addr: SocketAddr) -> anyhow::Result<DemoHttpServer> {
    let release: Release = release.parse()?;
    let server = DemoServer::new(release);
    Ok(HttpServer::spawn(move || server.clone(), addr).await?)
}
