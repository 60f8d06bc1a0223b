//! The handshake of each protocol era over rmcp: the lifecycle asked for, the client's side of
//! it, mcpeval's own era probe for a stdio server given in `auto` (src/mcp/discover.rs), and
//! its failures in words.

use std::time::{Duration, Instant};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::ClientInitializeError;
use rmcp::transport::{IntoTransport, TokioChildProcess};
use rmcp::{ClientCacheConfig, ClientLifecycleMode, ClientServiceExt, RoleClient};

use super::asks::{AskHandler, SharedSlot};
use super::client::Service;
use super::discover::{probe_share, ProbeFiltered, Probed};
use crate::config::{ClientProfile, ProtocolEra, ServerSpec};
use crate::error::chain;
use crate::suite::AskCapabilities;

/// The rmcp lifecycle for an era. `legacy` offers the newest version that still has
/// `initialize`; `auto` (left to rmcp for HTTP servers and in-process transports only) probes
/// 2026-07-28 with `server/discover` for rmcp's fixed 10 s and falls back to it.
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

/// The capabilities a client declares: its profile's, plus the requests (`sampling`,
/// `elicitation`) the tasks using the connection say how to answer.
pub(super) fn declared(profile: ClientProfile, asks: AskCapabilities) -> ClientCapabilities {
    let mut declared = match profile {
        ClientProfile::Bare => serde_json::json!({}),
        ClientProfile::Roots => serde_json::json!({"roots": {"listChanged": true}}),
        ClientProfile::Full => serde_json::json!({"roots": {"listChanged": true},
            "sampling": {}, "elicitation": {}}),
    };
    if asks.sampling {
        declared["sampling"] = serde_json::json!({});
    }
    if asks.elicitation {
        declared["elicitation"] = serde_json::json!({});
    }
    serde_json::from_value(declared).unwrap_or_default()
}

/// Why a handshake did not complete.
#[derive(Debug, thiserror::Error)]
pub(super) enum HandshakeError {
    #[error("no answer to the {era} handshake within {timeout:?}")]
    Timeout { era: String, timeout: Duration },
    #[error(
        "no answer to server/discover within {probe:?}, nor to the legacy handshake that \
         followed within the start-up timeout ({startup:?})"
    )]
    Unanswered { probe: Duration, startup: Duration },
    /// What the server or the transport did, in words (see `handshake_failure`).
    #[error("{0}")]
    Failed(String),
}

/// The client's side of the handshake: the declared capabilities, mcpeval's name, and the
/// handler that answers the server's requests from `slot`.
fn client_config(spec: &ServerSpec, slot: &SharedSlot) -> AskHandler {
    let config = ClientConfig::new(
        declared(spec.client, spec.asks),
        Implementation::new("mcpeval", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
    AskHandler {
        config,
        slot: slot.clone(),
    }
}

/// Runs the handshake of `era` within `budget` and turns the response cache off.
pub(super) async fn handshake<T, E, A>(
    spec: &ServerSpec,
    slot: &SharedSlot,
    transport: T,
    era: ProtocolEra,
    budget: Duration,
) -> Result<Service, HandshakeError>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let serve = client_config(spec, slot).serve_with_lifecycle(transport, lifecycle(era));
    let service = match tokio::time::timeout(budget, serve).await {
        Err(_) => {
            return Err(HandshakeError::Timeout {
                era: format!("{era:?}").to_lowercase(),
                timeout: budget,
            })
        }
        Ok(Err(error)) => return Err(HandshakeError::Failed(handshake_failure(&error))),
        Ok(Ok(service)) => service,
    };
    // An evaluator must see what the server says now, never a cached list.
    service
        .peer()
        .set_response_cache_config(ClientCacheConfig::disabled())
        .await;
    Ok(service)
}

/// `auto` over a stdio child: mcpeval's own `server/discover` probe within its share of the
/// start-up timeout (src/mcp/discover.rs), then the handshake of the era it found in what is
/// left of the timeout. Returns that era.
pub(super) async fn probed_handshake(
    spec: &ServerSpec,
    slot: &SharedSlot,
    transport: TokioChildProcess,
) -> Result<(Service, ProtocolEra), HandshakeError> {
    let started = Instant::now();
    let client = client_config(spec, slot).config;
    let meta = rmcp::model::RequestMetaObject::with_client_context(
        ProtocolVersion::V_2026_07_28,
        client.client_info,
        client.capabilities,
    );
    let mut transport = ProbeFiltered::new(transport);
    let share = probe_share(spec.startup_timeout);
    let probed = match transport.probe(meta, share).await {
        Ok(Probed::Closed) => return Err(HandshakeError::Failed(CLOSED_IN_HANDSHAKE.into())),
        Ok(probed) => probed,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            return Err(HandshakeError::Failed(CLOSED_IN_HANDSHAKE.into()))
        }
        Err(e) => {
            return Err(HandshakeError::Failed(format!(
                "cannot send server/discover: {e}"
            )))
        }
    };
    let rest = spec.startup_timeout.saturating_sub(started.elapsed());
    match handshake(spec, slot, transport, probed.era(), rest).await {
        Err(HandshakeError::Timeout { .. }) if probed == (Probed::Legacy { answered: false }) => {
            Err(HandshakeError::Unanswered {
                probe: share,
                startup: spec.startup_timeout,
            })
        }
        answer => answer.map(|service| (service, probed.era())),
    }
}

pub(super) const CLOSED_IN_HANDSHAKE: &str =
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::{McpConnection, McpError};

    /// The test fake that starts slowly (tests/fixtures/servers/slow_start.py), in `era`,
    /// answering nothing for `delay` seconds.
    fn slow_fake(era: &str, delay: f64, startup: Duration) -> ServerSpec {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/servers/slow_start.py"
        );
        let command = format!("python3 {script} --era {era} --delay {delay}");
        let mut spec = ServerSpec::parse("slow", &command).unwrap();
        spec.startup_timeout = startup;
        spec
    }

    #[tokio::test]
    async fn an_answer_to_the_probe_after_its_share_is_dropped_and_initialize_connects() {
        // The probe may take 2.4 s of 3.6; the server answers from 2.8 s on: the probe's answer
        // then comes while `initialize` waits, and must not be taken for its answer.
        let spec = slow_fake("modern", 2.8, Duration::from_millis(3600));
        let started = Instant::now();
        let conn = McpConnection::connect(&spec).await.unwrap();
        assert!(started.elapsed() >= Duration::from_millis(2800));
        assert_eq!(conn.server_info().era, "legacy");
        conn.close().await;
        // No answer at all: both shares of the budget are said.
        let mut spec = ServerSpec::parse("silent", "sleep 30").unwrap();
        spec.startup_timeout = Duration::from_millis(600);
        let Err(McpError::Start { reason, .. }) = McpConnection::connect(&spec).await else {
            panic!("`sleep` answered a handshake");
        };
        assert_eq!(
            reason,
            "no answer to server/discover within 400ms, nor to the legacy handshake that \
             followed within the start-up timeout (600ms)"
        );
    }

    #[tokio::test]
    async fn the_probe_waits_its_share_and_finds_each_era() {
        for era in ["legacy", "modern"] {
            let spec = slow_fake(era, 1.0, Duration::from_secs(6));
            let conn = McpConnection::connect(&spec).await.unwrap();
            assert_eq!(conn.server_info().era, era);
            assert_eq!(conn.list_tools().await.unwrap()[0].name, "echo");
            conn.close().await;
        }
    }
}
