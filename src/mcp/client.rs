//! Connects to one MCP server (stdio child or Streamable HTTP), lists its tools, calls them.
//!
//! A thin layer over rmcp: rmcp does the transports, both lifecycles (`initialize` and
//! `server/discover`), pagination and cancellation; this file adds what an evaluator needs on
//! top: bounded start-up, the server's stderr kept for error messages, no response cache, and
//! tool results turned into text for the model.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    Implementation, ProtocolVersion,
};
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{IntoTransport, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientCacheConfig, ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceError};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::{ProtocolEra, ServerSpec, Transport};

/// What the server said about itself at connection time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
    /// The protocol version agreed on.
    pub protocol_version: String,
    /// `legacy` (initialize) or `modern` (server/discover), whichever was used.
    pub era: String,
    pub instructions: Option<String>,
}

/// The outcome of one `tools/call`.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// The server answered with a result (which may have `isError: true`).
    Result {
        is_error: bool,
        /// The content as text for the model: text blocks joined, other blocks as JSON,
        /// or the structured content when there is no text.
        text: String,
    },
    /// The server answered with a JSON-RPC error.
    ProtocolError { code: i64, message: String },
    /// No answer within the call timeout.
    Timeout,
}

/// A failure that is not the model's: the server could not be reached, died, or broke protocol.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("failed to start server `{server}`: {reason}{}", stderr_tail(.stderr))]
    Start {
        server: String,
        reason: String,
        stderr: String,
    },
    #[error("server `{server}` connection failed: {reason}{}", stderr_tail(.stderr))]
    Connection {
        server: String,
        reason: String,
        stderr: String,
    },
}

fn stderr_tail(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!("\n--- last lines of its stderr ---\n{}", stderr.trim_end())
    }
}

/// How many of the last stderr lines, and bytes, are kept.
const STDERR_LINES: usize = 40;
const STDERR_BYTES: usize = 8 * 1024;
/// How long to let a dying server's last stderr lines arrive before reporting its failure.
const STDERR_GRACE: Duration = Duration::from_millis(100);
/// How long `close` waits for a graceful shutdown before leaving the rest to the kill-on-drop.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(8);

/// The last lines a stdio server wrote to stderr, filled by a background task.
#[derive(Clone)]
struct StderrTail {
    ring: Arc<Mutex<Ring>>,
    eof: watch::Receiver<bool>,
}

#[derive(Default)]
struct Ring {
    lines: VecDeque<String>,
    bytes: usize,
    partial: Vec<u8>,
}

impl Ring {
    fn push_bytes(&mut self, chunk: &[u8]) {
        let mut pieces = chunk.split(|&b| b == b'\n').peekable();
        while let Some(piece) = pieces.next() {
            let room = STDERR_BYTES.saturating_sub(self.partial.len());
            self.partial
                .extend_from_slice(&piece[..piece.len().min(room)]);
            if pieces.peek().is_some() {
                self.end_line();
            }
        }
    }

    fn end_line(&mut self) {
        let line = String::from_utf8_lossy(&self.partial).trim_end().to_owned();
        self.partial.clear();
        self.bytes += line.len() + 1;
        self.lines.push_back(line);
        while self.lines.len() > STDERR_LINES || (self.bytes > STDERR_BYTES && self.lines.len() > 1)
        {
            let dropped = self.lines.pop_front().unwrap_or_default();
            self.bytes -= dropped.len() + 1;
        }
    }

    fn text(&self) -> String {
        let mut text: Vec<&str> = self.lines.iter().map(String::as_str).collect();
        let partial = String::from_utf8_lossy(&self.partial);
        if !partial.trim().is_empty() {
            text.push(partial.trim_end());
        }
        text.join("\n")
    }
}

impl StderrTail {
    /// Starts draining `stderr` in the background.
    fn drain(
        mut stderr: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    ) -> (Self, AbortOnDrop) {
        let ring = Arc::new(Mutex::new(Ring::default()));
        let (done, eof) = watch::channel(false);
        let sink = ring.clone();
        let task = tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = stderr.read(&mut buf).await {
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push_bytes(&buf[..n]);
            }
            let _ = done.send(true);
        });
        (Self { ring, eof }, AbortOnDrop(task))
    }

    fn text(&self) -> String {
        self.ring.lock().unwrap_or_else(|e| e.into_inner()).text()
    }

    /// The tail once the server closed stderr, or after a short grace period if it has not.
    async fn settled(&self) -> String {
        let mut eof = self.eof.clone();
        let _ = tokio::time::timeout(STDERR_GRACE, eof.wait_for(|done| *done)).await;
        self.text()
    }
}

/// Aborts a background task when dropped.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

type Service = RunningService<RoleClient, ClientConfig>;

/// An open connection to one server.
///
/// Dropping it cancels the session; a stdio child is then shut down and killed (rmcp's child
/// process guard, plus `kill_on_drop` on the command).
pub struct McpConnection {
    server: String,
    info: ServerInfo,
    service: Service,
    stderr: Option<StderrTail>,
    _drain: Option<AbortOnDrop>,
    pid: Option<u32>,
}

impl McpConnection {
    /// Starts (stdio) or reaches (HTTP) the server and completes the handshake of its era.
    pub async fn connect(spec: &ServerSpec) -> Result<Self, McpError> {
        match &spec.transport {
            Transport::Stdio { program, args } => Self::connect_stdio(spec, program, args).await,
            Transport::Http { url } => Self::connect_http(spec, url).await,
        }
    }

    async fn connect_stdio(
        spec: &ServerSpec,
        program: &str,
        args: &[String],
    ) -> Result<Self, McpError> {
        let start_error = |reason: String| McpError::Start {
            server: spec.name.clone(),
            reason,
            stderr: String::new(),
        };
        if let Some(cwd) = spec.cwd.as_ref().filter(|cwd| !cwd.is_dir()) {
            return Err(start_error(format!(
                "working directory `{}` does not exist",
                cwd.display()
            )));
        }
        let mut command = tokio::process::Command::new(program);
        command.args(args).envs(&spec.env).kill_on_drop(true);
        if let Some(cwd) = &spec.cwd {
            command.current_dir(cwd);
        }
        let (transport, stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| start_error(spawn_failure(program, &e)))?;
        let pid = transport.id();
        let (tail, drain) = match stderr {
            Some(stderr) => {
                let (tail, drain) = StderrTail::drain(stderr);
                (Some(tail), Some(drain))
            }
            None => (None, None),
        };
        match handshake(spec, transport).await {
            Ok(service) => Ok(Self {
                pid,
                ..Self::new(spec, service, tail, drain)
            }),
            Err(reason) => Err(McpError::Start {
                server: spec.name.clone(),
                reason,
                stderr: match &tail {
                    Some(tail) => tail.settled().await,
                    None => String::new(),
                },
            }),
        }
    }

    async fn connect_http(spec: &ServerSpec, url: &str) -> Result<Self, McpError> {
        let start_error = |reason: String| McpError::Start {
            server: spec.name.clone(),
            reason,
            stderr: String::new(),
        };
        let mut headers = HashMap::new();
        for (name, value) in &spec.headers {
            let header = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| start_error(format!("invalid http header name `{name}`")))?;
            // The value may be a secret: never put it in a message.
            let value = reqwest::header::HeaderValue::from_str(value)
                .map_err(|_| start_error(format!("invalid value for http header `{name}`")))?;
            headers.insert(header, value);
        }
        let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
        let transport = StreamableHttpClientTransport::from_config(config);
        let service = handshake(spec, transport)
            .await
            .map_err(|reason| start_error(format!("cannot connect to {url}: {reason}")))?;
        Ok(Self::new(spec, service, None, None))
    }

    /// Completes the handshake of `spec`'s era over any rmcp client transport (an in-process
    /// pipe, a socket…). `spec.transport` is not used; its name, era and start-up timeout are.
    pub async fn connect_with<T, E, A>(spec: &ServerSpec, transport: T) -> Result<Self, McpError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let service = handshake(spec, transport)
            .await
            .map_err(|reason| McpError::Start {
                server: spec.name.clone(),
                reason,
                stderr: String::new(),
            })?;
        Ok(Self::new(spec, service, None, None))
    }

    fn new(
        spec: &ServerSpec,
        service: Service,
        stderr: Option<StderrTail>,
        drain: Option<AbortOnDrop>,
    ) -> Self {
        Self {
            server: spec.name.clone(),
            info: server_info(&service),
            service,
            stderr,
            _drain: drain,
            pid: None,
        }
    }

    pub fn server_info(&self) -> &ServerInfo {
        &self.info
    }

    /// All tools, following every page of `tools/list`, never from a cache.
    pub async fn list_tools(&self) -> Result<Vec<rmcp::model::Tool>, McpError> {
        match self.service.list_all_tools().await {
            Ok(tools) => Ok(tools),
            Err(e) => Err(self
                .failure(format!("tools/list failed: {}", chain(&e)))
                .await),
        }
    }

    /// Calls a tool; a JSON-RPC error or timeout is an outcome, a dead connection an error.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
        timeout: Duration,
    ) -> Result<CallOutcome, McpError> {
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        // On timeout the request future is dropped, and rmcp sends `notifications/cancelled`.
        let answer = tokio::time::timeout(timeout, self.service.call_tool(params)).await;
        match answer {
            Err(_) | Ok(Err(ServiceError::Timeout { .. })) => Ok(CallOutcome::Timeout),
            Ok(Ok(result)) => Ok(CallOutcome::Result {
                is_error: result.is_error.unwrap_or(false),
                text: result_text(&result),
            }),
            Ok(Err(ServiceError::McpError(error))) => Ok(CallOutcome::ProtocolError {
                code: i64::from(error.code.0),
                message: error.message.into_owned(),
            }),
            Ok(Err(ServiceError::UnexpectedResponse)) => Err(self
                .failure(format!(
                    "tools/call `{name}` got an answer that is not a tool result \
                     (input_required and task results are not supported)"
                ))
                .await),
            Ok(Err(e)) => Err(self
                .failure(format!("tools/call `{name}` failed: {}", chain(&e)))
                .await),
        }
    }

    /// A connection error, with the stderr tail once the server has had a moment to write it.
    async fn failure(&self, reason: String) -> McpError {
        McpError::Connection {
            server: self.server.clone(),
            reason,
            stderr: match &self.stderr {
                Some(tail) => tail.settled().await,
                None => String::new(),
            },
        }
    }

    /// The last lines the server wrote to stderr (stdio servers).
    pub fn stderr_tail(&self) -> String {
        self.stderr
            .as_ref()
            .map(StderrTail::text)
            .unwrap_or_default()
    }

    /// The process id of a stdio server.
    pub fn process_id(&self) -> Option<u32> {
        self.pid
    }

    /// True once the connection is over: closed by us, or the server went away.
    pub fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.is_transport_closed()
    }

    /// Closes the connection and, for stdio, ends the process: stdin is closed, then SIGTERM,
    /// then SIGKILL (rmcp's shutdown sequence), bounded in time.
    pub async fn close(mut self) {
        let _ = self.service.close_with_timeout(CLOSE_TIMEOUT).await;
    }
}

/// Says why a program could not be started, in the user's terms.
fn spawn_failure(program: &str, error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => {
            format!("program `{program}` not found (is it installed and on PATH?)")
        }
        std::io::ErrorKind::PermissionDenied => {
            format!("program `{program}` cannot be run: permission denied")
        }
        _ => format!("cannot run `{program}`: {error}"),
    }
}

/// The rmcp lifecycle for an era. `legacy` offers the newest version that still has
/// `initialize`; `auto` probes 2026-07-28 with `server/discover` and falls back to it.
fn lifecycle(era: ProtocolEra) -> ClientLifecycleMode {
    match era {
        ProtocolEra::Legacy => ClientLifecycleMode::Initialize,
        ProtocolEra::Modern => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
        ProtocolEra::Auto => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
        },
    }
}

/// Runs the handshake within the start-up timeout and turns the response cache off.
async fn handshake<T, E, A>(spec: &ServerSpec, transport: T) -> Result<Service, String>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let client = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("mcpeval", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
    let serve = client.serve_with_lifecycle(transport, lifecycle(spec.protocol_era));
    let service = match tokio::time::timeout(spec.startup_timeout, serve).await {
        Err(_) => {
            return Err(format!(
                "no answer to the {} handshake within {:?}",
                era_name(spec.protocol_era),
                spec.startup_timeout
            ))
        }
        Ok(Err(error)) => return Err(handshake_failure(&error)),
        Ok(Ok(service)) => service,
    };
    // An evaluator must see what the server says now, never a cached list.
    service
        .peer()
        .set_response_cache_config(ClientCacheConfig::disabled())
        .await;
    Ok(service)
}

fn era_name(era: ProtocolEra) -> &'static str {
    match era {
        ProtocolEra::Legacy => "legacy (initialize)",
        ProtocolEra::Modern => "modern (server/discover)",
        ProtocolEra::Auto => "auto (server/discover, then initialize)",
    }
}

const CLOSED_IN_HANDSHAKE: &str =
    "the server closed the connection during the handshake (did it exit?)";

fn handshake_failure(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::ConnectionClosed(_) => CLOSED_IN_HANDSHAKE.to_owned(),
        ClientInitializeError::TransportError { error, .. }
            if error
                .error
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            CLOSED_IN_HANDSHAKE.to_owned()
        }
        ClientInitializeError::LegacyFallbackFailed { discover, fallback } => format!(
            "server/discover failed ({}) and the initialize fallback failed too ({})",
            handshake_failure(discover),
            handshake_failure(fallback)
        ),
        ClientInitializeError::JsonRpcError(data) => format!(
            "the server rejected the handshake: {} (code {})",
            data.message, data.code.0
        ),
        other => format!("handshake failed: {}", chain(other)),
    }
}

/// An error and its sources, as one line.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text = format!("{text}: {cause_text}");
        }
        source = cause.source();
    }
    text
}

/// What the server said about itself; the era follows from the version agreed on.
fn server_info(service: &Service) -> ServerInfo {
    let Some(peer) = service.peer_info() else {
        return ServerInfo::default();
    };
    let (name, version) = peer
        .server_info
        .as_ref()
        .map(|i| (i.name.clone(), i.version.clone()))
        .unwrap_or_default();
    let era = if peer.protocol_version.has_initialize() {
        "legacy"
    } else {
        "modern"
    };
    ServerInfo {
        name,
        version,
        protocol_version: peer.protocol_version.to_string(),
        era: era.to_owned(),
        instructions: peer.instructions.clone(),
    }
}

/// The result as the model reads it: text blocks joined by newlines, other blocks as JSON, or the
/// structured content when there is no text block.
pub fn result_text(result: &CallToolResult) -> String {
    let has_text = result.content.iter().any(|c| c.as_text().is_some());
    if !has_text {
        if let Some(structured) = &result.structured_content {
            return structured.to_string();
        }
    }
    let blocks: Vec<String> = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.clone(),
            other => serde_json::to_string(other).unwrap_or_default(),
        })
        .collect();
    blocks.join("\n")
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use rmcp::model::{CallToolResult, ContentBlock};
    use serde_json::json;

    use super::*;

    fn spec(command: &str) -> ServerSpec {
        let mut spec = ServerSpec::parse("flaky", command).unwrap();
        spec.startup_timeout = Duration::from_secs(10);
        spec
    }

    async fn start_error(spec: &ServerSpec) -> (String, String) {
        match McpConnection::connect(spec).await {
            Err(McpError::Start {
                server,
                reason,
                stderr,
            }) => {
                assert_eq!(server, "flaky");
                (reason, stderr)
            }
            Err(other) => panic!("expected a start error, got {other}"),
            Ok(_) => panic!("expected a start error, got a connection"),
        }
    }

    #[tokio::test]
    async fn a_missing_program_is_a_start_error_saying_so() {
        let (reason, _) = start_error(&spec("/nonexistent/x --flag")).await;
        assert_eq!(
            reason,
            "program `/nonexistent/x` not found (is it installed and on PATH?)"
        );
        let mut in_missing_dir = spec("ls");
        in_missing_dir.cwd = Some(PathBuf::from("/nonexistent/dir"));
        let (reason, _) = start_error(&in_missing_dir).await;
        assert_eq!(
            reason,
            "working directory `/nonexistent/dir` does not exist"
        );
    }

    #[tokio::test]
    async fn a_server_that_exits_is_a_start_error_with_its_stderr() {
        let spec = spec("ls /definitely/not/here");
        let err = McpConnection::connect(&spec).await.err().unwrap();
        let message = err.to_string();
        assert!(
            message.starts_with("failed to start server `flaky`: "),
            "{message}"
        );
        assert!(
            message.contains("closed the connection during the handshake"),
            "{message}"
        );
        assert!(
            message.contains("--- last lines of its stderr ---"),
            "{message}"
        );
        let McpError::Start { stderr, .. } = err else {
            unreachable!()
        };
        assert!(stderr.contains("/definitely/not/here"), "{stderr}");

        let (reason, stderr) = start_error(&self::spec("false")).await;
        assert!(reason.contains("closed the connection"), "{reason}");
        assert_eq!(stderr, "");
    }

    #[tokio::test]
    async fn a_silent_server_is_a_start_error_after_the_startup_timeout() {
        // `sleep` reads nothing and writes nothing: the handshake never completes.
        let mut silent = spec("sleep 30");
        silent.protocol_era = ProtocolEra::Legacy;
        silent.startup_timeout = Duration::from_millis(300);
        let started = std::time::Instant::now();
        let (reason, _) = start_error(&silent).await;
        assert_eq!(
            reason,
            "no answer to the legacy (initialize) handshake within 300ms"
        );
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[tokio::test]
    async fn bad_http_headers_are_start_errors_that_hide_the_value() {
        let mut http = spec("http://127.0.0.1:9/mcp");
        http.headers
            .insert("x-token".into(), "secret\nvalue".into());
        let (reason, _) = start_error(&http).await;
        assert_eq!(reason, "invalid value for http header `x-token`");
        http.headers.clear();
        http.headers.insert("bad header".into(), "v".into());
        let (reason, _) = start_error(&http).await;
        assert_eq!(reason, "invalid http header name `bad header`");
    }

    #[test]
    fn stderr_ring_keeps_the_last_lines_and_bytes() {
        let mut ring = Ring::default();
        for i in 0..100 {
            ring.push_bytes(format!("line {i}\n").as_bytes());
        }
        let text = ring.text();
        assert_eq!(text.lines().count(), STDERR_LINES);
        assert!(
            text.starts_with("line 60\n") && text.ends_with("line 99"),
            "{text}"
        );

        let mut ring = Ring::default();
        ring.push_bytes(&vec![b'x'; 3 * STDERR_BYTES]);
        ring.push_bytes(b"\nsplit ");
        ring.push_bytes(b"line\nunfinished");
        let text = ring.text();
        assert!(text.len() <= 2 * STDERR_BYTES, "{}", text.len());
        assert!(text.ends_with("split line\nunfinished"), "{text}");
    }

    #[test]
    fn result_text_joins_text_and_falls_back_to_structured_content() {
        let mut result = CallToolResult::success(vec![
            ContentBlock::text("first"),
            ContentBlock::image("aGk=", "image/png"),
            ContentBlock::text("second"),
        ]);
        let text = result_text(&result);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "first");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(lines[1]).unwrap()["type"],
            "image"
        );
        assert_eq!(lines[2], "second");

        result.content.clear();
        result.structured_content = Some(json!({ "a": 1 }));
        assert_eq!(result_text(&result), r#"{"a":1}"#);
    }
}
