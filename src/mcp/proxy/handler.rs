//! The proxy's MCP handler: serves the base server's lists with the overlay applied and passes
//! every `tools/call`, `resources/read` and `prompts/get` to whatever answers calls (today the
//! live base server), results and JSON-RPC errors unchanged.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceError};
use tokio::sync::{watch, OnceCell};

use super::overlay::Overlay;
use super::replay::{mark_unmatched, Replay, ReplaySession, Replayed};
use crate::config::{ProtocolEra, ServerSpec};
use crate::mcp::{McpConnection, McpError};

/// What answers the calls a proxy passes on: the live base server, or a recorded cassette (the
/// base still gives the lists, and answers what the cassette leaves to it).
#[derive(Clone)]
pub enum Calls {
    /// The base server, one connection.
    Upstream(Arc<McpConnection>),
    /// A cassette, with this session's counts; the base behind it.
    Replay {
        live: Arc<McpConnection>,
        session: Arc<ReplaySession>,
    },
}

impl Calls {
    /// What answers a session's calls over `connection`: the base, or the cassette.
    fn over(connection: Arc<McpConnection>, replay: Option<Replay>) -> Self {
        match replay {
            None => Self::Upstream(connection),
            Some(replay) => Self::Replay {
                live: connection,
                session: Arc::new(replay.session()),
            },
        }
    }

    fn connection(&self) -> &McpConnection {
        match self {
            Self::Upstream(connection)
            | Self::Replay {
                live: connection, ..
            } => connection,
        }
    }

    fn replay(&self) -> Option<&ReplaySession> {
        match self {
            Self::Upstream(_) => None,
            Self::Replay { session, .. } => Some(session),
        }
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        loss: &BaseLoss,
        client: &rmcp::Peer<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(replay) = self.replay() else {
            let answer = self.connection().peer().call_tool_once(params).await;
            return self.passed(answer, loss).await;
        };
        let (asks, replayed, unmatched) = replay.call_tool_asking(&params);
        if let Err(why) = super::asked::ask_again(client, &asks).await {
            let what = format!("tools/call `{}`", params.name);
            let text = super::asked::differently(&what, &why);
            let result =
                rmcp::model::CallToolResult::error(vec![rmcp::model::ContentBlock::text(text)]);
            return Ok(mark_unmatched(CallToolResponse::Complete(result)));
        }
        let answer = match replayed {
            Replayed::Answer(answer) => answer,
            Replayed::Live => {
                let answer = self.connection().peer().call_tool_once(params).await;
                self.passed(answer, loss).await
            }
        };
        match unmatched {
            true => answer.map(mark_unmatched),
            false => answer,
        }
    }

    async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        loss: &BaseLoss,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if let Some(Replayed::Answer(answer)) = self.replay().map(|r| r.read_resource(&params)) {
            return answer;
        }
        let answer = self.connection().peer().read_resource_once(params).await;
        self.passed(answer, loss).await
    }

    async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        loss: &BaseLoss,
    ) -> Result<GetPromptResponse, ErrorData> {
        if let Some(Replayed::Answer(answer)) = self.replay().map(|r| r.get_prompt(&params)) {
            return answer;
        }
        let answer = self.connection().peer().get_prompt_once(params).await;
        self.passed(answer, loss).await
    }

    /// The base's answer as the proxy's: a JSON-RPC error passes unchanged; a broken connection
    /// is an internal error that says so, or, for a proxy served over stdio, the end of the
    /// proxy (the request is never answered: `serve_stdio` returns the base's failure), so its
    /// client sees the server die as it would without the proxy.
    async fn passed<T>(
        &self,
        answer: Result<T, ServiceError>,
        loss: &BaseLoss,
    ) -> Result<T, ErrorData> {
        let other = match answer {
            Ok(result) => return Ok(result),
            Err(ServiceError::McpError(error)) => return Err(error),
            Err(other) => other,
        };
        let why = format!(
            "the base server did not answer: {}",
            crate::error::chain(&other)
        );
        if loss.ends_serving.load(Ordering::Relaxed) {
            let tail = self.connection().settled_stderr_tail().await;
            let text = match tail.trim().is_empty() {
                true => why.clone(),
                false => format!(
                    "{why}\n--- last lines of its stderr ---\n{}",
                    tail.trim_end()
                ),
            };
            loss.said.send_replace(Some(text));
            std::future::pending::<()>().await;
        }
        Err(ErrorData::internal_error(why, None))
    }
}

/// How a proxy learns that its base is gone: over stdio that ends the proxy.
pub(super) struct BaseLoss {
    /// Set by `serve_stdio`: the process serves one client, which must see the base's death.
    pub ends_serving: AtomicBool,
    /// What failed, once something did.
    pub said: watch::Sender<Option<String>>,
}

/// What every session of one proxy shares.
struct Shared {
    base: ServerSpec,
    overlay: Overlay,
    /// The base's handshake, with the overlay's instructions.
    info: ServerConfig,
    /// The connection made at start: it answers stateless (2026-07-28) requests, which belong to
    /// no session, and every request over stdio.
    first: Calls,
    /// The cassette that answers the calls, if replaying.
    replay: Option<Replay>,
    loss: BaseLoss,
}

/// One proxy session. Clones made by [`ProxyServer::session`] (an HTTP session each) get their
/// own base connection, made at the session's first request, so a stateful base behaves as it
/// would without the proxy; other clones share the session's.
#[derive(Clone)]
pub struct ProxyServer {
    shared: Arc<Shared>,
    session: Arc<OnceCell<Calls>>,
    /// Whether a session may use the first connection (the one session of a stdio proxy).
    reuse_first: bool,
}

impl ProxyServer {
    /// A proxy over the base reached by `connection` (already checked against `overlay`).
    pub fn new(
        base: ServerSpec,
        overlay: Overlay,
        connection: McpConnection,
        replay: Option<Replay>,
    ) -> Self {
        let connection = Arc::new(connection);
        let info = server_config(&connection, &overlay);
        let first = Calls::over(connection, replay);
        Self {
            session: Arc::new(OnceCell::new()),
            reuse_first: true,
            shared: Arc::new(Shared {
                base,
                overlay,
                info,
                first,
                replay,
                loss: BaseLoss {
                    ends_serving: AtomicBool::new(false),
                    said: watch::channel(None).0,
                },
            }),
        }
    }

    /// Makes a lost base end the serving (stdio) and returns where its failure is said.
    pub(super) fn end_on_base_loss(&self) -> watch::Receiver<Option<String>> {
        self.shared.loss.ends_serving.store(true, Ordering::Relaxed);
        self.shared.loss.said.subscribe()
    }

    /// A handler for a new HTTP session: its own base connection, made on first use.
    pub fn session(&self) -> Self {
        Self {
            shared: self.shared.clone(),
            session: Arc::new(OnceCell::new()),
            reuse_first: false,
        }
    }

    /// What answers this request: for a stateless (2026-07-28) client, the first connection;
    /// for a client that opened a session (`initialize`), a connection of the session in the
    /// same era (so the base answers as it would answer that client), which is the first one
    /// over stdio when its era already fits.
    async fn calls(&self, context: &RequestContext<RoleServer>) -> Result<&Calls, ErrorData> {
        let in_session =
            (context.peer.peer_info()).is_some_and(|info| info.protocol_version.has_initialize());
        let first_is_legacy = self.shared.first.connection().server_info().era == "legacy";
        if !in_session || (self.reuse_first && first_is_legacy) {
            return Ok(&self.shared.first);
        }
        self.session
            .get_or_try_init(|| async {
                let given = &self.shared.base;
                let mut legacy = given.clone();
                legacy.protocol_era = ProtocolEra::Legacy;
                let connected = match given.protocol_era {
                    // A base with no `initialize` any more is reached as it was given.
                    ProtocolEra::Auto => match McpConnection::connect(&legacy).await {
                        Ok(connection) => Ok(connection),
                        Err(_) => McpConnection::connect(given).await,
                    },
                    _ => McpConnection::connect(given).await,
                };
                connected
                    .map(|c| Calls::over(Arc::new(c), self.shared.replay))
                    .map_err(|e| unreachable_base(&e))
            })
            .await
    }

    /// The connection this request's lists come from.
    async fn base(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<&McpConnection, ErrorData> {
        Ok(self.calls(context).await?.connection())
    }
}

fn unreachable_base(error: &McpError) -> ErrorData {
    ErrorData::internal_error(
        format!("the base server: {}", crate::error::chain(error)),
        None,
    )
}

/// The base's handshake as the proxy says it: its server info and capabilities (tools,
/// resources, prompts: what the proxy passes on), the overlay's instructions if it has some.
fn server_config(connection: &McpConnection, overlay: &Overlay) -> ServerConfig {
    let peer = connection.peer().peer_info();
    let base = peer.as_deref();
    let given = base.map(|i| i.capabilities.clone()).unwrap_or_default();
    let mut capabilities = ServerCapabilities::default();
    capabilities.tools = given.tools;
    capabilities.resources = given.resources;
    capabilities.prompts = given.prompts;
    let mut config = ServerConfig::new(capabilities);
    if let Some(info) = base.and_then(|i| i.server_info.clone()) {
        config = config.with_server_info(info);
    }
    let instructions = match &overlay.instructions {
        Some(set) => set.clone(),
        None => base.and_then(|i| i.instructions.clone()),
    };
    if let Some(instructions) = instructions {
        config = config.with_instructions(instructions);
    }
    config
}

impl ServerHandler for ProxyServer {
    fn get_info(&self) -> ServerConfig {
        self.shared.info.clone()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .base(&context)
            .await?
            .list_tools()
            .await
            .map_err(|e| unreachable_base(&e))?;
        Ok(ListToolsResult::with_all_items(
            self.shared.overlay.tools(tools),
        ))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let items = self
            .base(&context)
            .await?
            .list_resources()
            .await
            .map_err(|e| unreachable_base(&e))?;
        Ok(ListResourcesResult::with_all_items(
            self.shared.overlay.resources(items),
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let items = self
            .base(&context)
            .await?
            .list_resource_templates()
            .await
            .map_err(|e| unreachable_base(&e))?;
        Ok(ListResourceTemplatesResult::with_all_items(
            self.shared.overlay.resource_templates(items),
        ))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let items = self
            .base(&context)
            .await?
            .list_prompts()
            .await
            .map_err(|e| unreachable_base(&e))?;
        Ok(ListPromptsResult::with_all_items(
            self.shared.overlay.prompts(items),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if self.hides_resource(&request.uri, &context).await? {
            // To the client the overlay's hidden resource does not exist.
            let message = format!("resource `{}` not found", request.uri);
            let data = Some(serde_json::json!({ "uri": request.uri }));
            return Err(ErrorData::resource_not_found(message, data));
        }
        let calls = self.calls(&context).await?;
        tokio::select! {
            answer = calls.read_resource(request, &self.shared.loss) => answer,
            () = context.ct.cancelled() => Err(cancelled()),
        }
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if self.shared.overlay.hides_prompt(&request.name) {
            let message = format!("unknown prompt `{}`", request.name);
            return Err(ErrorData::invalid_params(message, None));
        }
        let calls = self.calls(&context).await?;
        tokio::select! {
            answer = calls.get_prompt(request, &self.shared.loss) => answer,
            () = context.ct.cancelled() => Err(cancelled()),
        }
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(base_name) = self.shared.overlay.base_name(&request.name) else {
            // The overlay hid the tool or renamed it away: to the client it does not exist.
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", request.name),
                None,
            ));
        };
        if base_name != request.name {
            request.name = base_name.to_owned().into();
        }
        let calls = self.calls(&context).await?;
        tokio::select! {
            answer = calls.call_tool(request, &self.shared.loss, &context.peer) => answer,
            () = context.ct.cancelled() => Err(cancelled()),
        }
    }
}

impl ProxyServer {
    /// Whether the overlay hides the resource `uri` (the shown templates are asked of the base
    /// only when a hidden template could serve it).
    async fn hides_resource(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<bool, ErrorData> {
        let overlay = &self.shared.overlay;
        if overlay.resources.is_empty() && overlay.resource_templates.is_empty() {
            return Ok(false);
        }
        let templates = match overlay.resource_templates.values().any(|(c, _)| c.hide) {
            true => {
                let base = self.base(context).await?;
                let listed = base.list_resource_templates().await;
                overlay.resource_templates(listed.map_err(|e| unreachable_base(&e))?)
            }
            false => Vec::new(),
        };
        Ok(overlay.hides_uri(uri, &templates))
    }
}

fn cancelled() -> ErrorData {
    ErrorData::internal_error("the request was cancelled", None)
}
