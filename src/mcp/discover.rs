//! mcpeval's own `server/discover` probe of a stdio server given in `auto`: sent on the child's
//! pipes before rmcp takes them, waited for with a share of the start-up budget, and its answer
//! (even a late one) kept from rmcp, which would take it for a broken handshake.
//!
//! rmcp's own `auto` lifecycle waits a fixed, private 10 s for its probe, then falls back to
//! `initialize` and fails when the late answer to the abandoned probe arrives. A server that
//! starts slowly (a Python server on a busy machine) hits that on any start.

use std::time::Duration;

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, DiscoverRequest, DiscoverRequestParams, ErrorCode,
    RequestId, RequestMetaObject, ServerJsonRpcMessage,
};
use rmcp::transport::Transport;
use rmcp::RoleClient;

use crate::config::ProtocolEra;

/// The id of the probe: a string, which rmcp (numbering its requests from 0) never uses.
const PROBE_ID: &str = "mcpeval-era-probe";

/// The share of the start-up budget the probe may take (the rest is the fallback's).
pub(super) fn probe_share(startup: Duration) -> Duration {
    startup * 2 / 3
}

/// What the probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Probed {
    /// The server answered the probe: a result, or an error only a modern server sends (a
    /// version or capability it does not accept; rmcp's `discover` negotiates or says so).
    Modern,
    /// An error of any other kind (a legacy server's "method not found"), or no answer in time.
    Legacy { answered: bool },
    /// The server closed its side before answering.
    Closed,
}

impl Probed {
    pub(super) fn era(self) -> ProtocolEra {
        match self {
            Self::Modern => ProtocolEra::Modern,
            Self::Legacy { .. } | Self::Closed => ProtocolEra::Legacy,
        }
    }
}

/// A client transport whose answers to the probe are dropped, however late they come.
pub(super) struct ProbeFiltered<T> {
    inner: T,
}

impl<T: Transport<RoleClient>> ProbeFiltered<T> {
    pub(super) fn new(inner: T) -> Self {
        Self { inner }
    }

    /// Sends `server/discover` (offering `version`, with the client's context in `_meta` as
    /// rmcp sends it) and waits up to `wait` for its answer; messages before it (logging,
    /// pings) are left unanswered, as rmcp leaves them during its own probe.
    pub(super) async fn probe(
        &mut self,
        meta: RequestMetaObject,
        wait: Duration,
    ) -> Result<Probed, T::Error> {
        let mut discover = DiscoverRequest::new(DiscoverRequestParams {});
        discover.extensions.insert(meta);
        let request = ClientJsonRpcMessage::request(
            ClientRequest::DiscoverRequest(discover),
            RequestId::String(PROBE_ID.into()),
        );
        self.inner.send(request).await?;
        let answer = async {
            loop {
                let Some(message) = self.inner.receive().await else {
                    return Probed::Closed;
                };
                if let Some(found) = classify(&message) {
                    return found;
                }
            }
        };
        Ok(tokio::time::timeout(wait, answer)
            .await
            .unwrap_or(Probed::Legacy { answered: false }))
    }
}

/// The probe's answer as an era; `None` for any other message.
fn classify(message: &ServerJsonRpcMessage) -> Option<Probed> {
    if !is_probe_answer(message) {
        return None;
    }
    Some(match message {
        ServerJsonRpcMessage::Error(error)
            if ![
                ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
                ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                ErrorCode::HEADER_MISMATCH,
            ]
            .contains(&error.error.code) =>
        {
            Probed::Legacy { answered: true }
        }
        _ => Probed::Modern,
    })
}

fn is_probe_answer(message: &ServerJsonRpcMessage) -> bool {
    let id = match message {
        ServerJsonRpcMessage::Response(response) => Some(&response.id),
        ServerJsonRpcMessage::Error(error) => error.id.as_ref(),
        _ => None,
    };
    matches!(id, Some(RequestId::String(id)) if &**id == PROBE_ID)
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for ProbeFiltered<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            let message = self.inner.receive().await?;
            if !is_probe_answer(&message) {
                return Some(message);
            }
        }
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(value: serde_json::Value) -> ServerJsonRpcMessage {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn only_answers_to_the_probe_are_classified_and_filtered() {
        let result = message(serde_json::json!({"jsonrpc": "2.0", "id": PROBE_ID,
            "result": {"supportedVersions": ["2026-07-28"], "capabilities": {}}}));
        assert_eq!(classify(&result), Some(Probed::Modern));
        let legacy = message(serde_json::json!({"jsonrpc": "2.0", "id": PROBE_ID,
            "error": {"code": -32601, "message": "Method not found"}}));
        assert_eq!(classify(&legacy), Some(Probed::Legacy { answered: true }));
        let version = message(serde_json::json!({"jsonrpc": "2.0", "id": PROBE_ID,
            "error": {"code": -32022, "message": "unsupported", "data": {"supported": []}}}));
        assert_eq!(classify(&version), Some(Probed::Modern));
        // rmcp's own requests are numbered: an answer to its id 0 is not the probe's.
        let rmcp = message(serde_json::json!({"jsonrpc": "2.0", "id": 0,
            "error": {"code": -32601, "message": "Method not found"}}));
        assert_eq!(classify(&rmcp), None);
        let log = message(serde_json::json!({"jsonrpc": "2.0",
            "method": "notifications/message", "params": {"level": "info", "data": "up"}}));
        assert_eq!(classify(&log), None);
        assert_eq!(
            probe_share(Duration::from_secs(30)),
            Duration::from_secs(20)
        );
    }
}
