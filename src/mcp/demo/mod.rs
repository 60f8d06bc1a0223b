//! The demo MCP server pair (releases 1.4.0 and 1.5.0 of a small issue tracker).

use std::net::SocketAddr;

/// The releases the demo server can play.
pub const RELEASES: [&str; 2] = ["1.4.0", "1.5.0"];

/// Serves the demo server over stdio until stdin closes.
pub async fn serve_stdio(release: &str) -> anyhow::Result<()> {
    let _ = release;
    todo!("demo server")
}

/// Serves the demo server over Streamable HTTP at `addr` (path `/mcp`) until Ctrl-C.
pub async fn serve_http(release: &str, addr: SocketAddr) -> anyhow::Result<()> {
    let _ = (release, addr);
    todo!("demo server")
}
