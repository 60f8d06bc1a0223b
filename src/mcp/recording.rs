//! The recording hook of an MCP connection (`run --record`): the server's handshake and lists
//! given once to the side's recorder, then every answer to `tools/call`, `resources/read` and
//! `prompts/get` recorded as the connection's session (src/cassette/).

use std::sync::Arc;

use rmcp::ServiceError;
use serde::Serialize;

use super::client::{McpConnection, McpError};
use crate::cassette::{Answer, ErrorAnswer, ListKind, Recorder, Request};

impl McpConnection {
    /// Records this connection's answers into `recorder` from now on, as a session of its own
    /// (`run --record`). The first connection to record gives the recorder the server's
    /// handshake and its four lists.
    pub async fn record_into(&mut self, recorder: &Arc<Recorder>) -> Result<(), McpError> {
        if recorder.needs_lists() {
            let lists = [
                (ListKind::Tools, values(self.list_tools().await?)),
                (ListKind::Resources, values(self.list_resources().await?)),
                (
                    ListKind::ResourceTemplates,
                    values(self.list_resource_templates().await?),
                ),
                (ListKind::Prompts, values(self.list_prompts().await?)),
            ];
            let server = crate::cassette::ServerFacts {
                name: self.server_info().name.clone(),
                version: self.server_info().version.clone(),
                protocol: self.server_info().protocol_version.clone(),
            };
            let handshake = crate::cassette::Handshake {
                instructions: self.server_info().instructions.clone(),
                capabilities: self.handshake_facts().capabilities,
            };
            recorder.set_lists(server, handshake, lists.into_iter().collect());
        }
        self.recorder = Some(recorder.session());
        Ok(())
    }

    /// Records a request's answer when this connection records: a result or a JSON-RPC error
    /// (no answer in time, or a dead connection, is no answer to record).
    pub(super) fn record<T: Serialize>(
        &self,
        request: impl FnOnce() -> Option<Request>,
        answer: &Result<Result<T, ServiceError>, tokio::time::error::Elapsed>,
    ) {
        let asks = self.take_pending_asks();
        let Some(session) = &self.recorder else {
            return;
        };
        let answer = match answer {
            Ok(Ok(result)) => Answer::Result(serde_json::to_value(result).unwrap_or_default()),
            Ok(Err(ServiceError::McpError(error))) => Answer::Error(ErrorAnswer {
                code: i64::from(error.code.0),
                message: error.message.to_string(),
                data: error.data.clone(),
            }),
            _ => return,
        };
        let answer = match asks.is_empty() {
            true => answer,
            false => Answer::Asked(crate::cassette::Asked {
                asks,
                then: Box::new(answer),
            }),
        };
        if let Some(request) = request() {
            session.record(request, answer);
        }
    }
}

/// A list's items as JSON, for a cassette.
fn values<T: Serialize>(items: Vec<T>) -> Vec<serde_json::Value> {
    (items.iter())
        .filter_map(|item| serde_json::to_value(item).ok())
        .collect()
}
