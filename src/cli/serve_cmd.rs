//! `mcpeval serve`: any server (--base) served with an overlay file over its lists or a
//! cassette's answers to its calls, or a cassette alone, over stdio or Streamable HTTP.

use super::args::ServeArgs;
use crate::config::{resolve_server, BASE_HEADERS_ENV};
use crate::error::{Exit, Failure};
use crate::mcp::http::HttpServer;
use crate::mcp::proxy::{self, Overlay, ProxyError, RecordedServer};

/// Reaches the base, checks the overlay against it, then serves until stdin closes (stdio) or
/// Ctrl-C (HTTP).
pub async fn serve(args: &ServeArgs) -> Result<Exit, Failure> {
    let overlay = match &args.overlay {
        Some(path) => Overlay::read(path).map_err(Failure::usage)?,
        None => Overlay::default(),
    };
    let replay = match &args.replay {
        Some(path) => Some(proxy::Replay::read(path, args.unmatched).map_err(Failure::usage)?),
        None => None,
    };
    let Some(given) = &args.base else {
        let Some(alone) = replay.filter(|_| args.overlay.is_none()) else {
            return Err(Failure::usage(anyhow::anyhow!(
                "--base SPEC is needed (only a cassette is served alone: --replay CASSETTE)"
            )));
        };
        match args.http {
            Some(addr) => {
                let server = HttpServer::spawn(move || RecordedServer::new(alone), addr)
                    .await
                    .map_err(ProxyError::from)?;
                server.until_ctrl_c().await.map_err(ProxyError::from)?;
            }
            None => proxy::serve_recorded_stdio(alone).await?,
        }
        return Ok(Exit::Ok);
    };
    let mut base = resolve_server(args.config.as_deref(), given, &[])?;
    base.name = "base".to_owned();
    if let Some(era) = args.protocol_era {
        base.protocol_era = era;
    }
    // An `overlay:` spec of a config hands the base's HTTP headers over in the environment,
    // never on the command line (they may carry tokens).
    if let Ok(json) = std::env::var(BASE_HEADERS_ENV) {
        let headers: std::collections::BTreeMap<String, String> = serde_json::from_str(&json)
            .map_err(|e| {
                Failure::usage(anyhow::anyhow!(
                    "{BASE_HEADERS_ENV}: not a JSON object of strings: {e}"
                ))
            })?;
        base.headers.extend(headers);
    }
    let proxy = proxy::start(base, overlay, replay).await?;
    match args.http {
        Some(addr) => proxy::serve_http(proxy, addr).await?,
        None => proxy::serve_stdio(proxy).await?,
    }
    Ok(Exit::Ok)
}
