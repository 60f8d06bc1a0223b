//! Starts a proxy (its base reached, its overlay checked) and serves it over stdio or
//! Streamable HTTP (`/mcp`), both protocol eras.

use std::net::SocketAddr;

use rmcp::ServiceExt as _;

use super::handler::ProxyServer;
use super::overlay::{Overlay, OverlayError};
use super::replay::Replay;
use crate::config::ServerSpec;
use crate::error::{Coded, Exit};
use crate::mcp::http::{HttpServeError, HttpServer};
use crate::mcp::{McpConnection, McpError};

/// Why a proxy did not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error(transparent)]
    Overlay(#[from] OverlayError),
    #[error("the base server: {0}")]
    Base(#[source] McpError),
    #[error(transparent)]
    Http(#[from] HttpServeError),
    #[error("serving failed: {0}")]
    Serve(String),
    #[error("{0}")]
    BaseLost(String),
}

impl Coded for ProxyError {
    fn exit(&self) -> Exit {
        match self {
            Self::Overlay(_) => Exit::Usage,
            Self::Base(_) | Self::Http(_) | Self::Serve(_) | Self::BaseLost(_) => Exit::Infra,
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
        if !(overlay.resources.is_empty() && overlay.resource_templates.is_empty()) {
            let resources = connection
                .list_resources()
                .await
                .map_err(ProxyError::Base)?;
            let templates =
                (connection.list_resource_templates().await).map_err(ProxyError::Base)?;
            overlay.check_resources(&resources, &templates)?;
        }
    }
    Ok(ProxyServer::new(base, overlay, connection, replay))
}

/// A stdio client that did not complete the handshake.
pub(super) fn no_handshake(e: impl std::error::Error) -> ProxyError {
    ProxyError::Serve(format!(
        "the client did not complete a handshake: {}",
        crate::error::chain(&e)
    ))
}

/// Serves `proxy` over stdio until stdin closes; a base that dies ends it with that error.
pub async fn serve_stdio(proxy: ProxyServer) -> Result<(), ProxyError> {
    let mut lost = proxy.end_on_base_loss();
    let running = proxy
        .serve(rmcp::transport::stdio_pipes())
        .await
        .map_err(no_handshake)?;
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
    Ok(spawn_http(proxy, addr).await?.until_ctrl_c().await?)
}

/// A proxy served over HTTP in the background. Dropping it stops the server.
pub type ProxyHttpServer = HttpServer;

/// Binds `addr` (`127.0.0.1:0` for an ephemeral port) and serves `proxy` in the background;
/// each HTTP session gets its own connection to the base.
pub async fn spawn_http(
    proxy: ProxyServer,
    addr: SocketAddr,
) -> Result<ProxyHttpServer, ProxyError> {
    Ok(HttpServer::spawn(move || proxy.session(), addr).await?)
}
