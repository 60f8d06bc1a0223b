//! Takes a contract snapshot of a live server: every page of the four lists, fetched from the start
//! until two fetches agree, normalized and sorted; the handshake's facts and the protocol versions
//! accepted in each era; the error probes.

use std::future::Future;

use serde::Serialize;
use serde_json::Value;

use super::eras::accepted_versions;
use super::model::{ErrorProbes, ServerFacts, Snapshot};
use super::probe::probe_errors;
use crate::config::ServerSpec;
use crate::mcp::{McpConnection, McpError};

/// Fetches of one list before giving up on two consecutive ones agreeing.
const MAX_FETCHES: usize = 4;
/// Result fields about delivery, not content: never part of a snapshot.
const DELIVERY_FIELDS: [&str; 3] = ["nextCursor", "ttlMs", "cacheScope"];

/// Why a snapshot could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error(transparent)]
    Server(#[from] McpError),
    #[error(
        "{list} kept changing: {MAX_FETCHES} fetches from the start never agreed twice in a row"
    )]
    Unstable { list: &'static str },
}

impl crate::error::Coded for SnapshotError {
    fn exit(&self) -> crate::error::Exit {
        match self {
            Self::Server(_) | Self::Unstable { .. } => crate::error::Exit::Infra,
        }
    }
}

/// Connects to `spec` (its protocol era as configured), snapshots it, and closes the connection.
pub async fn take(spec: &ServerSpec) -> Result<Snapshot, SnapshotError> {
    let connection = McpConnection::connect(spec).await?;
    let snapshot = snapshot_of(&connection, spec).await;
    connection.close().await;
    snapshot
}

async fn snapshot_of(conn: &McpConnection, spec: &ServerSpec) -> Result<Snapshot, SnapshotError> {
    let tools = consistent("tools/list", || conn.list_tools(), "name").await?;
    let resources = consistent("resources/list", || conn.list_resources(), "uri").await?;
    let resource_templates = consistent(
        "resources/templates/list",
        || conn.list_resource_templates(),
        "uriTemplate",
    )
    .await?;
    let prompts = consistent("prompts/list", || conn.list_prompts(), "name").await?;
    let info = conn.server_info();
    let facts = conn.handshake_facts();
    let discovered = conn.supported_versions().await;
    let session = (info.era.as_str(), info.protocol_version.as_str());
    let accepted = accepted_versions(spec, session, discovered.as_deref()).await;
    // `supportedVersions` keeps its meaning: the session era's versions.
    let supported_versions = match discovered {
        Some(versions) => versions,
        None if !accepted.legacy.is_empty() => accepted.legacy.clone(),
        None => vec![info.protocol_version.clone()],
    };
    let server = ServerFacts {
        protocol_era: info.era.clone(),
        protocol_version: info.protocol_version.clone(),
        supported_versions,
        accepted_versions: Some(accepted.clone()),
        capabilities: normalize(&facts.capabilities),
        instructions: info.instructions.clone(),
        server_info: normalize(&facts.server_info),
        client_capabilities: normalize(&facts.client_capabilities),
        client_profile: Some(spec.client.to_string()),
        requested_era: Some(format!("{:?}", spec.protocol_era).to_lowercase()),
        spec: Some(super::versions::identity(&spec.display())),
    };
    let probes = probe_errors(conn, spec, &tools, &accepted).await?;
    Ok(Snapshot {
        tools,
        resources,
        resource_templates,
        prompts,
        server: normalize(&serde_json::to_value(&server).unwrap_or_default()),
        errors: Some(serde_json::to_value(ErrorProbes { probes }).unwrap_or_default()),
    })
}

/// Lists from the start until two consecutive fetches agree, as a client that needs a consistent
/// full list must (the list may change while it is paged through); normalized and sorted by `key`.
async fn consistent<T, F, Fut>(
    list: &'static str,
    fetch: F,
    key: &str,
) -> Result<Vec<Value>, SnapshotError>
where
    T: Serialize,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<Vec<T>, McpError>>,
{
    let mut previous: Option<Vec<Value>> = None;
    for _ in 0..MAX_FETCHES {
        let items = normalize_list(&fetch().await?, key);
        if previous.as_ref() == Some(&items) {
            return Ok(items);
        }
        previous = Some(items);
    }
    Err(SnapshotError::Unstable { list })
}

/// Each item as JSON with sorted keys and no delivery fields, the list sorted by `key`.
fn normalize_list<T: Serialize>(items: &[T], key: &str) -> Vec<Value> {
    let mut values: Vec<Value> = items
        .iter()
        .map(|item| {
            let mut value = normalize(&serde_json::to_value(item).unwrap_or_default());
            if let Value::Object(map) = &mut value {
                for field in DELIVERY_FIELDS {
                    map.remove(field);
                }
            }
            value
        })
        .collect();
    values.sort_by(|a, b| sort_key(a, key).cmp(&sort_key(b, key)));
    values
}

fn sort_key<'a>(value: &'a Value, key: &str) -> (&'a str, String) {
    let primary = value.get(key).and_then(Value::as_str).unwrap_or_default();
    // A tie (two items with one name: a broken server) still sorts the same way every time.
    (primary, value.to_string())
}

/// The value with every object's keys in sorted order (`jq -S`), whatever map type serde_json
/// was built with.
pub fn normalize(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), normalize(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_are_sorted_with_sorted_keys_and_no_delivery_fields() {
        let items = vec![
            json!({"name": "b", "inputSchema": {"type": "object"}, "ttlMs": 5}),
            json!({"name": "a", "description": "x", "cacheScope": "public"}),
        ];
        let out = normalize_list(&items, "name");
        assert_eq!(out[0]["name"], "a");
        assert!(out[0].get("cacheScope").is_none() && out[1].get("ttlMs").is_none());
        let text = serde_json::to_string(&out[0]).unwrap();
        assert_eq!(text, r#"{"description":"x","name":"a"}"#);
    }

    #[tokio::test]
    async fn a_list_that_keeps_changing_is_refused() {
        let counter = std::sync::atomic::AtomicU32::new(0);
        let fetch = || {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move { Ok::<_, McpError>(vec![json!({"name": format!("t{n}")})]) }
        };
        let err = consistent("tools/list", fetch, "name").await.unwrap_err();
        assert!(err.to_string().contains("kept changing"), "{err}");
        let steady = || async { Ok::<_, McpError>(vec![json!({"name": "t"})]) };
        assert_eq!(
            consistent("tools/list", steady, "name")
                .await
                .unwrap()
                .len(),
            1
        );
    }
}
