//! `mcpeval sim-server`: the sim model behind an OpenAI-compatible `/v1/chat/completions` endpoint.

use std::net::SocketAddr;
use std::time::Duration;

use super::sim::SimConfig;

/// Serves until Ctrl-C. Prints the bound address on stdout first (`listening on http://…`).
pub async fn serve(addr: SocketAddr, latency: Duration, config: SimConfig) -> anyhow::Result<()> {
    let _ = (addr, latency, config);
    todo!("sim server")
}
