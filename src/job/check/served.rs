//! A server of the check over HTTP for the conformance suite: its own URL, the user's
//! `[check] http_command` (checked to be the candidate: same handshake, same tools), or a
//! stdio server bridged to HTTP in-process by the proxy (`mcpeval serve`'s machinery).

use std::process::Stdio;

use super::conformance::{reachable, LISTEN_TIMEOUT};
use super::{step, Ctx, StepError};
use crate::config::{ServerSpec, Transport};
use crate::mcp::proxy::{self, Overlay, ProxyHttpServer};
use crate::mcp::McpConnection;

/// A server reachable over HTTP for as long as this lives.
pub(super) enum Served {
    /// The server is an HTTP server of its own.
    Url(String),
    /// `[check] http_command`, started by the check, at `[check] http_url`.
    Command(tokio::process::Child, String),
    /// A stdio server behind the in-process bridge.
    Bridge(ProxyHttpServer),
}

impl Served {
    pub fn url(&self) -> String {
        match self {
            Self::Url(url) | Self::Command(_, url) => url.clone(),
            Self::Bridge(server) => server.url(),
        }
    }

    /// How the server came to be over HTTP, for the stage's lines.
    pub fn how(&self) -> &'static str {
        match self {
            Self::Url(_) => "its own HTTP endpoint",
            Self::Command(..) => "served by [check] http_command, the same server as over stdio",
            Self::Bridge(_) => "a stdio server bridged to HTTP by mcpeval",
        }
    }

    /// Stops what the check started, so its port is closed before the next stage.
    pub async fn stop(self) {
        match self {
            Self::Url(_) => {}
            Self::Command(mut child, _) => {
                let _ = child.kill().await;
            }
            Self::Bridge(server) => {
                let _ = server.shutdown().await;
            }
        }
    }
}

/// The candidate over HTTP: its URL; `[check] http_command` + `http_url` once they are seen to
/// serve the candidate; else the candidate bridged.
pub(super) async fn candidate(ctx: &Ctx) -> Result<Served, StepError> {
    let settings = &ctx.settings;
    match (
        &ctx.candidate.transport,
        &settings.http_command,
        &settings.http_url,
    ) {
        (Transport::Http { url }, _, _) => Ok(Served::Url(url.clone())),
        (_, Some(command), Some(url)) => {
            let child = serve(command, url).await?;
            let served = Served::Command(child, url.clone());
            if let Err(why) = same_server(&ctx.candidate, url).await {
                served.stop().await;
                return Err(why);
            }
            Ok(served)
        }
        (_, Some(_), None) | (_, None, Some(_)) => Err(step!(
            "[check] http_command and http_url go together (a command that serves the \
             candidate, and the URL it serves it at)"
        )),
        (_, None, None) => bridge(&ctx.candidate, "the candidate").await,
    }
}

/// `spec` over HTTP: its URL, or the stdio server bridged in-process on 127.0.0.1.
pub(super) async fn bridge(spec: &ServerSpec, side: &str) -> Result<Served, StepError> {
    if let Transport::Http { url } = &spec.transport {
        return Ok(Served::Url(url.clone()));
    }
    let proxy = proxy::start(spec.clone(), Overlay::default(), None)
        .await
        .map_err(|e| {
            format!(
                "{side} could not be bridged to HTTP: {}",
                crate::error::chain(&e)
            )
        })?;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let server = proxy::spawn_http(proxy, addr).await.map_err(|e| {
        format!(
            "{side} could not be bridged to HTTP: {}",
            crate::error::chain(&e)
        )
    })?;
    Ok(Served::Bridge(server))
}

/// The server at `url` is the candidate: the same serverInfo name and version, the same tool
/// names; or what differs.
async fn same_server(candidate: &ServerSpec, url: &str) -> Result<(), StepError> {
    let mut http = candidate.clone();
    http.name = "http_url".to_owned();
    http.transport = Transport::Http {
        url: url.to_owned(),
    };
    let facts = |spec: ServerSpec| async move {
        let connection = McpConnection::connect(&spec).await?;
        let info = connection.server_info().clone();
        let tools = connection.list_tools().await;
        connection.close().await;
        let mut names: Vec<String> = tools?.into_iter().map(|t| t.name.into_owned()).collect();
        names.sort();
        Ok::<_, crate::mcp::McpError>((info.name, info.version, names))
    };
    let over_http = facts(http)
        .await
        .map_err(|e| format!("[check] http_url {url}: {}", crate::error::chain(&e)))?;
    let over_stdio = facts(candidate.clone())
        .await
        .map_err(|e| format!("the candidate: {}", crate::error::chain(&e)))?;
    let mut differs = Vec::new();
    if over_http.0 != over_stdio.0 {
        differs.push(format!(
            "serverInfo name `{}` over HTTP, `{}` over stdio",
            over_http.0, over_stdio.0
        ));
    }
    if over_http.1 != over_stdio.1 {
        differs.push(format!(
            "serverInfo version `{}` over HTTP, `{}` over stdio",
            over_http.1, over_stdio.1
        ));
    }
    let only = |a: &[String], b: &[String]| -> Vec<String> {
        a.iter().filter(|n| !b.contains(n)).cloned().collect()
    };
    let (http_only, stdio_only) = (
        only(&over_http.2, &over_stdio.2),
        only(&over_stdio.2, &over_http.2),
    );
    if !http_only.is_empty() {
        differs.push(format!("tools only over HTTP: {}", http_only.join(", ")));
    }
    if !stdio_only.is_empty() {
        differs.push(format!("tools only over stdio: {}", stdio_only.join(", ")));
    }
    match differs.is_empty() {
        true => Ok(()),
        false => Err(step!(
            "[check] http_command serves another server than the candidate at {url} ({}); \
             the conformance suite would judge the wrong server",
            differs.join("; ")
        )),
    }
}

/// Starts `command` (never through a shell) and waits until `url` accepts connections; the
/// child is killed when dropped.
async fn serve(command: &str, url: &str) -> Result<tokio::process::Child, StepError> {
    let words = shlex::split(command)
        .filter(|w| !w.is_empty())
        .ok_or_else(|| format!("[check] http_command `{command}` cannot be split into words"))?;
    let child = tokio::process::Command::new(&words[0])
        .args(&words[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start [check] http_command `{command}`: {e}"))?;
    reachable(url, LISTEN_TIMEOUT)
        .await
        .map_err(|why| format!("[check] http_command `{command}` started, but {why}"))?;
    Ok(child)
}
