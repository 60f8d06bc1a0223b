//! Serving an MCP server handler over Streamable HTTP (`/mcp`, both protocol eras) in the
//! background: the one place the demo server, proxies and recorded cassettes are served from.

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServerHandler;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Why an HTTP server did not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum HttpServeError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the http server stopped: {0}")]
    Stopped(String),
    #[error("cannot listen for Ctrl-C: {0}")]
    Signal(#[source] std::io::Error),
}

/// A server running over HTTP in the background. Dropping it stops the server.
#[derive(Debug)]
pub struct HttpServer {
    /// The address it is bound to (with the real port).
    pub addr: SocketAddr,
    cancel: CancellationToken,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl HttpServer {
    /// Binds `addr` (`127.0.0.1:0` for an ephemeral port) and serves in the background; each
    /// HTTP session gets the handler `session` makes.
    pub async fn spawn<S>(
        session: impl Fn() -> S + Send + Sync + 'static,
        addr: SocketAddr,
    ) -> Result<Self, HttpServeError>
    where
        S: ServerHandler + Send + 'static,
    {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| HttpServeError::Listen { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| HttpServeError::Listen { addr, source })?;
        let cancel = CancellationToken::new();
        let mut config = StreamableHttpServerConfig::default()
            .with_json_response(true)
            .with_cancellation_token(cancel.child_token());
        if !addr.ip().is_loopback() {
            // Host checks guard loopback servers against DNS rebinding; a server bound to
            // another interface was exposed on purpose and is reached under names we cannot know.
            config = config.disable_allowed_hosts();
        }
        let service: StreamableHttpService<S, LocalSessionManager> = StreamableHttpService::new(
            move || Ok(session()),
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
        Ok(Self {
            addr,
            cancel,
            task: Some(task),
        })
    }

    /// The MCP endpoint, `http://ADDR/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Prints `listening on URL` to stderr, then serves until Ctrl-C or an error.
    pub async fn until_ctrl_c(mut self) -> Result<(), HttpServeError> {
        eprintln!("listening on {}", self.url());
        tokio::select! {
            signal = tokio::signal::ctrl_c() => signal.map_err(HttpServeError::Signal)?,
            finished = self.wait() => return finished,
        }
        self.shutdown().await
    }

    /// Stops the server and waits for it to finish.
    pub async fn shutdown(mut self) -> Result<(), HttpServeError> {
        self.cancel.cancel();
        self.wait().await
    }

    /// Waits until the server task ends (on shutdown, or on an error).
    async fn wait(&mut self) -> Result<(), HttpServeError> {
        let Some(task) = self.task.as_mut() else {
            return Ok(());
        };
        let finished = task.await;
        self.task = None;
        match finished {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(HttpServeError::Stopped(e.to_string())),
            Err(e) => Err(HttpServeError::Stopped(e.to_string())),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}
