//! Connects to one MCP server (stdio child or Streamable HTTP), lists its tools, calls them.
//!
//! A thin layer over rmcp: rmcp does the transports, both lifecycles (`initialize` and
//! `server/discover`), pagination and cancellation; this file adds what an evaluator needs on
//! top: bounded start-up, the server's stderr kept for error messages, no response cache, and
//! tool results turned into text for the model.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{IntoTransport, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceError};
use serde::{Deserialize, Serialize};

use super::handshake::{declared, handshake, probed_handshake};
use super::sandbox::SandboxCopies;
use super::stderr::{settled, StderrTail};
use crate::cassette::{Request, SessionRecorder};
use crate::config::{ClientProfile, ProtocolEra, ServerSpec, Transport};
use crate::error::chain;

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

/// The handshake's facts as JSON, for a contract snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HandshakeFacts {
    pub capabilities: serde_json::Value,
    pub server_info: serde_json::Value,
    pub client_capabilities: serde_json::Value,
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
        /// A tool's `structuredContent`; a resource's or a prompt's whole result.
        structured: Option<serde_json::Value>,
        /// A replay server's answer to a call its cassette did not hold
        /// ([`super::proxy::UNMATCHED_META`] in the result's `_meta`).
        replay_unmatched: bool,
    },
    /// The server answered with a JSON-RPC error.
    ProtocolError {
        code: i64,
        message: String,
        data: Option<serde_json::Value>,
    },
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

/// How long `close` waits for a graceful shutdown before leaving the rest to the kill-on-drop.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(8);
/// How long a `resources/read` may take.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

pub(super) type Service = RunningService<RoleClient, super::asks::AskHandler>;

/// An open connection to one server.
///
/// Dropping it cancels the session; a stdio child is then shut down and killed (rmcp's child
/// process guard, plus `kill_on_drop` on the command).
pub struct McpConnection {
    server: String,
    info: ServerInfo,
    service: Service,
    stderr: Option<StderrTail>,
    pid: Option<u32>,
    client: ClientProfile,
    /// Where this connection's answers are recorded (`run --record`), as one session: set by
    /// `record_into` (src/mcp/recording.rs), used by `record` at each call, read and get.
    pub(super) recorder: Option<SessionRecorder>,
    /// The sandbox copies this process runs on (`--sandbox`), removed when it is dropped: last,
    /// after the session and its process.
    sandbox: Option<SandboxCopies>,
    /// How the server's own requests are answered, and the record of them (src/mcp/asks.rs).
    pub(super) asks: super::asks::SharedSlot,
    /// Held by the trial whose answers are installed (src/mcp/asks.rs).
    pub(super) ask_turn: tokio::sync::Mutex<()>,
    /// The capabilities declared on top of the profile's.
    declared_asks: crate::suite::AskCapabilities,
}

impl McpConnection {
    /// Starts (stdio) or reaches (HTTP) the server and completes the handshake of its era.
    ///
    /// A server given in `auto` is reached in the era learned at its first connection in this
    /// process, if there was one (src/mcp/era.rs); a stdio server is probed by mcpeval itself
    /// before that (src/mcp/discover.rs), an HTTP server by rmcp.
    pub async fn connect(spec: &ServerSpec) -> Result<Self, McpError> {
        let era = super::era::effective(spec);
        let (connection, used) = match &spec.transport {
            Transport::Stdio { program, args } => {
                Self::connect_stdio(spec, program, args, era).await?
            }
            Transport::Http { url } => Self::connect_http(spec, url, era).await?,
        };
        super::era::learn(spec, used);
        Ok(connection)
    }

    /// Starts the server on fresh sandbox copies, if it has sandboxes, and completes the
    /// handshake of `era`; returns the era it completed in.
    async fn connect_stdio(
        spec: &ServerSpec,
        program: &str,
        args: &[String],
        era: ProtocolEra,
    ) -> Result<(Self, ProtocolEra), McpError> {
        let sandbox = SandboxCopies::make(spec).map_err(|e| start_error(spec, chain(&e)))?;
        let Some(copies) = sandbox else {
            if let Some(placeholder) = super::sandbox::placeholders_of(spec).into_keys().next() {
                let why = format!(
                    "`{placeholder}` in its command names no sandbox (--sandbox PATH or \
                     [servers.NAME] sandbox = \"PATH\")"
                );
                return Err(start_error(spec, why));
            }
            return Self::spawn_stdio(spec, program, args, era).await;
        };
        let spec = copies.apply(spec);
        let Transport::Stdio { program, args } = &spec.transport else {
            unreachable!("a sandbox keeps the transport")
        };
        let (mut connection, era) = Self::spawn_stdio(&spec, program, args, era).await?;
        connection.sandbox = Some(copies);
        Ok((connection, era))
    }

    /// The sandbox copies this server's process runs on, if it has any.
    pub fn sandbox(&self) -> Option<&SandboxCopies> {
        self.sandbox.as_ref()
    }

    /// Starts the server and completes the handshake of `era`; returns the era it completed in.
    async fn spawn_stdio(
        spec: &ServerSpec,
        program: &str,
        args: &[String],
        era: ProtocolEra,
    ) -> Result<(Self, ProtocolEra), McpError> {
        if let Some(cwd) = spec.cwd.as_ref().filter(|cwd| !cwd.is_dir()) {
            return Err(start_error(
                spec,
                format!("working directory `{}` does not exist", cwd.display()),
            ));
        }
        let mut command = tokio::process::Command::new(program);
        command.args(args).envs(&spec.env).kill_on_drop(true);
        if let Some(cwd) = &spec.cwd {
            command.current_dir(cwd);
        }
        let (transport, stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| start_error(spec, spawn_failure(program, &e)))?;
        let pid = transport.id();
        let tail = stderr.map(StderrTail::drain);
        let slot = super::asks::SharedSlot::default();
        let handshake = match era {
            ProtocolEra::Auto => probed_handshake(spec, &slot, transport).await,
            era => (handshake(spec, &slot, transport, era, spec.startup_timeout).await)
                .map(|service| (service, era)),
        };
        match handshake {
            Ok((service, era)) => Ok((Self::new(spec, service, slot, tail, pid), era)),
            Err(reason) => Err(McpError::Start {
                server: spec.name.clone(),
                reason: reason.to_string(),
                stderr: settled(tail.as_ref()).await,
            }),
        }
    }

    /// Reaches the server and completes the handshake of `era` (rmcp's probe for `auto`);
    /// returns the era it completed in.
    async fn connect_http(
        spec: &ServerSpec,
        url: &str,
        era: ProtocolEra,
    ) -> Result<(Self, ProtocolEra), McpError> {
        let mut headers = HashMap::new();
        for (name, value) in &spec.headers {
            let header = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| start_error(spec, format!("invalid http header name `{name}`")))?;
            // The value may be a secret: never put it in a message.
            let value = reqwest::header::HeaderValue::from_str(value).map_err(|_| {
                start_error(spec, format!("invalid value for http header `{name}`"))
            })?;
            headers.insert(header, value);
        }
        let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
        // rmcp builds its reqwest client here: the crypto provider must be in place.
        crate::net::install_crypto_provider();
        let transport = StreamableHttpClientTransport::from_config(config);
        let slot = super::asks::SharedSlot::default();
        let service = match handshake(spec, &slot, transport, era, spec.startup_timeout).await {
            Ok(service) => service,
            Err(reason) => {
                let reason = match unreachable(url).await {
                    Some(network) => network,
                    None => reason.to_string(),
                };
                return Err(start_error(
                    spec,
                    format!("cannot connect to {url}: {reason}"),
                ));
            }
        };
        let connection = Self::new(spec, service, slot, None, None);
        let used = match connection.info.era.as_str() {
            _ if era != ProtocolEra::Auto => era,
            "legacy" => ProtocolEra::Legacy,
            _ => ProtocolEra::Modern,
        };
        Ok((connection, used))
    }

    /// Completes the handshake of `spec`'s era over any rmcp client transport (an in-process
    /// pipe, a socket…). `spec.transport` is not used; its name, era and start-up timeout are.
    pub async fn connect_with<T, E, A>(spec: &ServerSpec, transport: T) -> Result<Self, McpError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let slot = super::asks::SharedSlot::default();
        let service = handshake(
            spec,
            &slot,
            transport,
            spec.protocol_era,
            spec.startup_timeout,
        )
        .await
        .map_err(|reason| start_error(spec, reason.to_string()))?;
        Ok(Self::new(spec, service, slot, None, None))
    }

    fn new(
        spec: &ServerSpec,
        service: Service,
        asks: super::asks::SharedSlot,
        stderr: Option<StderrTail>,
        pid: Option<u32>,
    ) -> Self {
        Self {
            server: spec.name.clone(),
            info: server_info(&service),
            service,
            stderr,
            pid,
            client: spec.client,
            recorder: None,
            sandbox: None,
            asks,
            ask_turn: tokio::sync::Mutex::new(()),
            declared_asks: spec.asks,
        }
    }

    /// The capabilities this connection declared on top of its profile's.
    pub fn declared_asks(&self) -> crate::suite::AskCapabilities {
        self.declared_asks
    }

    pub fn server_info(&self) -> &ServerInfo {
        &self.info
    }

    /// The rmcp peer, for a proxy that passes whole results through (`mcpeval serve`).
    pub fn peer(&self) -> &rmcp::Peer<RoleClient> {
        self.service.peer()
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

    /// All resources, every page; a server without the capability has none.
    pub async fn list_resources(&self) -> Result<Vec<rmcp::model::Resource>, McpError> {
        if !self.has_capability(|c| c.resources.is_some()) {
            return Ok(Vec::new());
        }
        let answer = self.service.list_all_resources().await;
        self.listed("resources/list", answer).await
    }

    /// All resource templates, every page; a server without resources has none.
    pub async fn list_resource_templates(
        &self,
    ) -> Result<Vec<rmcp::model::ResourceTemplate>, McpError> {
        if !self.has_capability(|c| c.resources.is_some()) {
            return Ok(Vec::new());
        }
        let answer = self.service.list_all_resource_templates().await;
        self.listed("resources/templates/list", answer).await
    }

    /// All prompts, every page; a server without the capability has none.
    pub async fn list_prompts(&self) -> Result<Vec<rmcp::model::Prompt>, McpError> {
        if !self.has_capability(|c| c.prompts.is_some()) {
            return Ok(Vec::new());
        }
        let answer = self.service.list_all_prompts().await;
        self.listed("prompts/list", answer).await
    }

    /// A list request's answer: "method not found" means an empty list (a server may declare a
    /// capability without every list of it); any other failure is a connection error.
    async fn listed<T>(
        &self,
        method: &str,
        answer: Result<Vec<T>, ServiceError>,
    ) -> Result<Vec<T>, McpError> {
        match answer {
            Ok(items) => Ok(items),
            Err(ServiceError::McpError(e))
                if e.code == rmcp::model::ErrorCode::METHOD_NOT_FOUND =>
            {
                Ok(Vec::new())
            }
            Err(e) => Err(self
                .failure(format!("{method} failed: {}", chain(&e)))
                .await),
        }
    }

    fn has_capability(&self, test: impl Fn(&rmcp::model::ServerCapabilities) -> bool) -> bool {
        self.service
            .peer_info()
            .is_some_and(|info| test(&info.capabilities))
    }

    /// What the handshake said, as JSON: capabilities, server info, and the capabilities this
    /// client declared.
    pub fn handshake_facts(&self) -> HandshakeFacts {
        let info = self.service.peer_info();
        let to_json = |v: Option<serde_json::Value>| v.unwrap_or(serde_json::Value::Null);
        HandshakeFacts {
            capabilities: to_json(
                info.as_ref()
                    .and_then(|i| serde_json::to_value(&i.capabilities).ok()),
            ),
            server_info: to_json(
                info.as_ref()
                    .and_then(|i| i.server_info.as_ref())
                    .and_then(|s| serde_json::to_value(s).ok()),
            ),
            client_capabilities: serde_json::to_value(declared(self.client, self.declared_asks))
                .unwrap_or_default(),
        }
    }

    /// The versions a modern server supports, from `server/discover` (asked again now); `None`
    /// for a legacy session or when the server does not answer it.
    pub async fn supported_versions(&self) -> Option<Vec<String>> {
        if self.info.era != "modern" {
            return None;
        }
        let result = self
            .service
            .discover(rmcp::model::RequestMetaObject::default())
            .await
            .ok()?;
        Some(
            result
                .supported_versions
                .iter()
                .map(|v| v.to_string())
                .collect(),
        )
    }

    /// Reads a resource: the JSON-RPC error, if any, is an outcome (the error probes need it).
    pub async fn read_resource(&self, uri: &str) -> Result<CallOutcome, McpError> {
        let params = rmcp::model::ReadResourceRequestParams::new(uri.to_owned());
        let answer = tokio::time::timeout(READ_TIMEOUT, self.service.read_resource(params)).await;
        self.record(|| Some(Request::resource(uri)), &answer);
        self.whole_result(answer, || format!("resources/read `{uri}`"))
            .await
    }

    /// Gets a prompt: the JSON-RPC error, if any, is an outcome (a call task checks it).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: &std::collections::BTreeMap<String, String>,
        timeout: Duration,
    ) -> Result<CallOutcome, McpError> {
        let mut params = rmcp::model::GetPromptRequestParams::new(name.to_owned());
        if !arguments.is_empty() {
            let args: serde_json::Map<String, serde_json::Value> = arguments
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                .collect();
            params = params.with_arguments(args);
        }
        let answer = tokio::time::timeout(timeout, self.service.get_prompt(params)).await;
        self.record(|| Some(Request::prompt(name, arguments)), &answer);
        self.whole_result(answer, || format!("prompts/get `{name}`"))
            .await
    }

    /// The outcome of a request whose whole result is the answer (`resources/read`,
    /// `prompts/get`): the result as text and as structured content; a JSON-RPC error or no answer
    /// in time is an outcome too, a dead connection an error naming `request`.
    async fn whole_result<T: Serialize>(
        &self,
        answer: Result<Result<T, ServiceError>, tokio::time::error::Elapsed>,
        request: impl FnOnce() -> String,
    ) -> Result<CallOutcome, McpError> {
        match answer {
            Err(_) | Ok(Err(ServiceError::Timeout { .. })) => Ok(CallOutcome::Timeout),
            Ok(Ok(result)) => {
                let value = serde_json::to_value(&result).unwrap_or_default();
                Ok(CallOutcome::Result {
                    is_error: false,
                    text: value.to_string(),
                    structured: Some(value),
                    replay_unmatched: false,
                })
            }
            Ok(Err(ServiceError::McpError(error))) => Ok(protocol_error(error)),
            Ok(Err(e)) => Err(self
                .failure(format!("{} failed: {}", request(), chain(&e)))
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
        let request = (self.recorder.as_ref()).map(|_| Request::tool(name, arguments.clone()));
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        // On timeout the request future is dropped, and rmcp sends `notifications/cancelled`.
        let answer = tokio::time::timeout(timeout, self.service.call_tool(params)).await;
        self.record(|| request, &answer);
        match answer {
            Err(_) | Ok(Err(ServiceError::Timeout { .. })) => Ok(CallOutcome::Timeout),
            Ok(Ok(result)) => Ok(CallOutcome::Result {
                is_error: result.is_error.unwrap_or(false),
                text: result_text(&result),
                replay_unmatched: (result.meta.as_ref())
                    .is_some_and(|m| m.contains_key(super::proxy::UNMATCHED_META)),
                structured: result.structured_content,
            }),
            Ok(Err(ServiceError::McpError(error))) => Ok(protocol_error(error)),
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
    pub(super) async fn failure(&self, reason: String) -> McpError {
        McpError::Connection {
            server: self.server.clone(),
            reason,
            stderr: settled(self.stderr.as_ref()).await,
        }
    }

    /// The last lines the server wrote to stderr (stdio servers).
    pub fn stderr_tail(&self) -> String {
        self.stderr
            .as_ref()
            .map(StderrTail::text)
            .unwrap_or_default()
    }

    /// The stderr tail once the server has closed stderr (or after a short grace): for a
    /// server that just died, whose last lines may still be in the pipe.
    pub async fn settled_stderr_tail(&self) -> String {
        settled(self.stderr.as_ref()).await
    }

    /// The process id of a stdio server.
    pub fn process_id(&self) -> Option<u32> {
        self.pid
    }

    /// Closes the connection as [`close`](Self::close) does, then returns the last lines the
    /// server wrote to stderr (stdio servers; once it has closed stderr, or after a short grace).
    pub async fn close_reading_stderr(mut self) -> String {
        let _ = self.service.close_with_timeout(CLOSE_TIMEOUT).await;
        settled(self.stderr.as_ref()).await
    }

    /// Closes the connection and, for stdio, ends the process: stdin is closed, then SIGTERM,
    /// then SIGKILL (rmcp's shutdown sequence), bounded in time.
    pub async fn close(mut self) {
        let _ = self.service.close_with_timeout(CLOSE_TIMEOUT).await;
    }
}

/// A JSON-RPC error answer as an outcome.
fn protocol_error(error: rmcp::ErrorData) -> CallOutcome {
    CallOutcome::ProtocolError {
        code: i64::from(error.code.0),
        message: error.message.into_owned(),
        data: error.data,
    }
}

fn start_error(spec: &ServerSpec, reason: String) -> McpError {
    McpError::Start {
        server: spec.name.clone(),
        reason,
        stderr: String::new(),
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

/// Why nothing answers at `url`'s host and port, in the system's words (`Connection refused`,
/// a name that does not resolve, no answer within a few seconds, a TLS handshake that fails);
/// `None` when a connection opens (the failure was then the server's, not the network's).
async fn unreachable(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let host = parsed.host_str()?.to_owned();
    let port = parsed.port_or_known_default()?;
    let connect = tokio::net::TcpStream::connect((host.as_str(), port));
    match tokio::time::timeout(Duration::from_secs(5), connect).await {
        Ok(Ok(_)) if parsed.scheme() == "https" => tls_failure(url).await,
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(format!("{e} ({host}:{port})")),
        Err(_) => Some(format!("no TCP connection within 5 s ({host}:{port})")),
    }
}

/// The TLS handshake's failure at `url`, if it fails (a certificate not trusted, a port that
/// speaks plain HTTP).
async fn tls_failure(url: &str) -> Option<String> {
    let client = crate::net::client_builder()
        .timeout(Duration::from_secs(5))
        .build()
        .ok()?;
    let error = client.head(url).send().await.err()?;
    // The TCP connection opened: a failure to connect now is the handshake's.
    error.is_connect().then(|| {
        format!(
            "TLS handshake failed: {}",
            crate::error::chain(&error.without_url())
        )
    })
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
    use rmcp::model::{CallToolResult, ContentBlock};

    use super::*;
    use crate::mcp::handshake::CLOSED_IN_HANDSHAKE;

    #[tokio::test]
    async fn a_tls_handshake_with_a_plain_http_port_is_said_as_such() {
        // A port that answers plain HTTP, asked over https.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            while let Ok((mut socket, _)) = listener.accept().await {
                let _ = socket.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
            }
        });
        let said = unreachable(&format!("https://{addr}/mcp")).await;
        let said = said.expect("the handshake fails");
        assert!(said.starts_with("TLS handshake failed"), "{said}");
        // Plain HTTP there is no network failure.
        assert_eq!(unreachable(&format!("http://{addr}/mcp")).await, None);
    }

    /// Connects to `command` and returns the start error's reason and stderr.
    async fn start_error(command: &str, tweak: impl FnOnce(&mut ServerSpec)) -> (String, String) {
        let mut spec = ServerSpec::parse("flaky", command).unwrap();
        tweak(&mut spec);
        match McpConnection::connect(&spec).await {
            Err(McpError::Start {
                server,
                reason,
                stderr,
            }) if server == "flaky" => (reason, stderr),
            other => panic!("expected a start error of `flaky`, got {:?}", other.err()),
        }
    }

    #[tokio::test]
    async fn servers_that_cannot_start_are_start_errors_that_say_why() {
        let not_found = "program `/nonexistent/x` not found (is it installed and on PATH?)";
        for (command, expected) in [
            ("/nonexistent/x -v", not_found),
            ("false", CLOSED_IN_HANDSHAKE),
        ] {
            assert_eq!(
                start_error(command, |_| {}).await,
                (expected.to_owned(), String::new())
            );
        }
        let (reason, stderr) = start_error("ls /definitely/not/here", |_| {}).await;
        assert_eq!(reason, CLOSED_IN_HANDSHAKE);
        assert!(
            stderr.starts_with("ls: ") && stderr.contains("/definitely/not/here"),
            "{stderr}"
        );
        let (reason, _) = start_error("ls", |s| s.cwd = Some("/nonexistent/dir".into())).await;
        assert_eq!(
            reason,
            "working directory `/nonexistent/dir` does not exist"
        );
        // `sleep` reads and writes nothing: the handshake never completes.
        let (reason, _) = start_error("sleep 30", |s| {
            s.protocol_era = ProtocolEra::Legacy;
            s.startup_timeout = Duration::from_millis(300);
        })
        .await;
        assert_eq!(reason, "no answer to the legacy handshake within 300ms");
        let secret = |s: &mut ServerSpec| drop(s.headers.insert("x-token".into(), "a\nb".into()));
        let (reason, _) = start_error("http://127.0.0.1:9/mcp", secret).await;
        assert_eq!(reason, "invalid value for http header `x-token`");
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
        assert_eq!((lines[0], lines[2]), ("first", "second"));
        assert!(lines[1].starts_with('{') && lines[1].contains(r#""type":"image""#));
        result.content.clear();
        result.structured_content = Some(serde_json::json!({ "a": 1 }));
        assert_eq!(result_text(&result), r#"{"a":1}"#);
    }
}
