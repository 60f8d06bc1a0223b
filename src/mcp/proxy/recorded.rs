//! A cassette served alone (`replay:CASSETTE`, `mcpeval serve --replay CASSETTE` with no
//! --base): the handshake and lists as recorded, every call answered from the cassette. No
//! live server is started; an unmatched request is answered as the policy says (`live` has no
//! server to ask: it is answered as `error`).

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams,
    GetPromptResponse, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt as _};
use serde::de::DeserializeOwned;

use super::replay::{mark_unmatched, Replay, ReplaySession, Replayed};
use super::serve::{no_handshake, ProxyError};
use crate::cassette::{Cassette, ListKind};

/// The recorded server: one process, one client session (stdio).
pub struct RecordedServer {
    cassette: &'static Cassette,
    session: ReplaySession,
}

impl RecordedServer {
    pub fn new(replay: Replay) -> Self {
        Self {
            cassette: replay.cassette(),
            session: replay.session(),
        }
    }

    /// A recorded list's items as rmcp's type; an item that does not read is left out.
    fn items<T: DeserializeOwned>(&self, kind: ListKind) -> Vec<T> {
        (self.cassette.lists.get(&kind).into_iter().flatten())
            .filter_map(|v| serde_json::from_value(v.clone()).ok())
            .collect()
    }
}

/// Serves the cassette over stdio until stdin closes.
pub async fn serve_recorded_stdio(replay: Replay) -> Result<(), ProxyError> {
    let running = RecordedServer::new(replay)
        .serve(rmcp::transport::stdio_pipes())
        .await
        .map_err(no_handshake)?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| ProxyError::Serve(crate::error::chain(&e)))
}

/// The answer, or the cassette's "no recorded answer" where the policy would ask a live server.
fn answered<T>(replayed: Replayed<T>, what: &str) -> Result<T, ErrorData> {
    match replayed {
        Replayed::Answer(answer) => answer,
        Replayed::Live => Err(ErrorData::internal_error(
            format!("mcpeval replay: no recorded answer for {what}, and no live server to ask"),
            None,
        )),
    }
}

impl ServerHandler for RecordedServer {
    /// A cassette whose server asked its client something (sampling, elicitation) is served in
    /// the sessions of `initialize` only: 2026-07-28 forbids server-to-client requests, so its
    /// client reaches it as the recorded server was reached, and is asked again.
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        let asks = (self.cassette.entries.iter())
            .flat_map(|e| &e.answers)
            .any(|a| matches!(a, crate::cassette::Answer::Asked(_)));
        match asks {
            true => std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(
                &ProtocolVersion::LATEST_WITH_INITIALIZE,
            )),
            false => std::borrow::Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS),
        }
    }

    fn get_info(&self) -> ServerConfig {
        let recorded = &self.cassette.handshake;
        let capabilities: ServerCapabilities =
            serde_json::from_value(recorded.capabilities.clone()).unwrap_or_else(|_| {
                ServerCapabilities::builder()
                    .enable_tools()
                    .enable_resources()
                    .enable_prompts()
                    .build()
            });
        let server = &self.cassette.header.server;
        let mut config = ServerConfig::new(capabilities).with_server_info(Implementation::new(
            server.name.clone(),
            server.version.clone(),
        ));
        if let Some(instructions) = &recorded.instructions {
            config = config.with_instructions(instructions.clone());
        }
        config
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.items(ListKind::Tools)))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(
            self.items(ListKind::Resources),
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(
            self.items(ListKind::ResourceTemplates),
        ))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(
            self.items(ListKind::Prompts),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let what = format!("tools/call `{}`", request.name);
        let (asks, replayed, mut unmatched) = self.session.call_tool_asking(&request);
        let mut answer = answered(replayed, &what);
        if let Err(why) = super::asked::ask_again(&context.peer, &asks).await {
            let text = super::asked::differently(&what, &why);
            answer = Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                rmcp::model::ContentBlock::text(text),
            ])));
            unmatched = true;
        }
        match unmatched {
            true => answer.map(mark_unmatched),
            false => answer,
        }
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let what = format!("resources/read `{}`", request.uri);
        answered(self.session.read_resource(&request), &what)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let what = format!("prompts/get `{}`", request.name);
        answered(self.session.get_prompt(&request), &what)
    }
}
