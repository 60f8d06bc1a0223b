//! Deprecated features a server uses: read from its contract (capabilities), found over HTTP
//! (the old HTTP+SSE transport, Dynamic Client Registration), and counted in the deprecation
//! warnings an SDK prints on the server's stderr. `mcpeval check`'s deprecations stage reports
//! the candidate's, and which of them the baseline did not have.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

/// How long one HTTP look may take.
const LOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// One deprecated feature the server uses.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Deprecation {
    /// What is deprecated (`logging`, `http+sse transport`, `dynamic client registration`).
    pub feature: String,
    /// How it was seen.
    pub evidence: String,
    /// The spec revision that deprecates it.
    pub deprecated_in: &'static str,
    /// The earliest date it may be removed, as the spec says.
    pub removable_from: &'static str,
    pub reference: &'static str,
}

/// The deprecations of the 2026-07-28 revision (SEP-2577): removable from 2027-07-28.
const REVISION: &str = "2026-07-28";
const REMOVABLE: &str = "2027-07-28";
const SEP: &str = "SEP-2577";

/// What the contract shows: the server capabilities of `server.json` that are deprecated.
pub fn in_contract(server: &Value) -> Vec<Deprecation> {
    let mut out = Vec::new();
    let capabilities = server.get("capabilities");
    if capabilities.and_then(|c| c.get("logging")).is_some() {
        out.push(Deprecation {
            feature: "logging".into(),
            evidence: "the server declares the `logging` capability".into(),
            deprecated_in: REVISION,
            removable_from: REMOVABLE,
            reference: SEP,
        });
    }
    out
}

/// What an HTTP server shows: whether it still serves the HTTP+SSE transport (a GET answered
/// with an `endpoint` event) and whether its authorization server offers Dynamic Client
/// Registration (a `registration_endpoint` in its metadata). A look that gets no answer finds
/// nothing.
pub async fn over_http(url: &str, headers: &BTreeMap<String, String>) -> Vec<Deprecation> {
    let client = match crate::net::client_builder().timeout(LOOK_TIMEOUT).build() {
        Ok(client) => client,
        Err(_) => return Vec::new(),
    };
    let mut out = Vec::new();
    if serves_sse(&client, url, headers).await {
        out.push(Deprecation {
            feature: "http+sse transport".into(),
            evidence: format!("GET {url} answers with an `endpoint` event"),
            deprecated_in: "2025-03-26",
            removable_from: "no date set",
            reference: "Streamable HTTP replaced it",
        });
    }
    if let Some(endpoint) = registration_endpoint(&client, url).await {
        out.push(Deprecation {
            feature: "dynamic client registration".into(),
            evidence: format!("the authorization server offers `registration_endpoint` {endpoint}"),
            deprecated_in: REVISION,
            removable_from: REMOVABLE,
            reference: SEP,
        });
    }
    out
}

async fn serves_sse(
    client: &reqwest::Client,
    url: &str,
    headers: &BTreeMap<String, String>,
) -> bool {
    let mut get = client.get(url).header("Accept", "text/event-stream");
    for (name, value) in headers {
        get = get.header(name, value);
    }
    let Ok(mut response) = get.send().await else {
        return false;
    };
    if !response.status().is_success() {
        return false;
    }
    // An event stream never ends: read what arrives within a moment.
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    while seen.len() < 4096 {
        match tokio::time::timeout_at(deadline, response.chunk()).await {
            Ok(Ok(Some(chunk))) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            _ => break,
        }
        if seen.contains("event: endpoint") || seen.contains("event:endpoint") {
            return true;
        }
    }
    false
}

/// The `registration_endpoint` of the server's first authorization server, found through its
/// protected resource metadata (RFC 9728) and the authorization server's metadata (RFC 8414).
async fn registration_endpoint(client: &reqwest::Client, url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let origin = parsed.origin().ascii_serialization();
    let path = parsed.path().trim_end_matches('/');
    let mut resource = None;
    for candidate in [
        format!("{origin}/.well-known/oauth-protected-resource{path}"),
        format!("{origin}/.well-known/oauth-protected-resource"),
    ] {
        if let Some(value) = json_at(client, &candidate).await {
            resource = Some(value);
            break;
        }
    }
    let issuer = resource?
        .get("authorization_servers")?
        .as_array()?
        .first()?
        .as_str()?
        .trim_end_matches('/')
        .to_owned();
    let issuer_url = reqwest::Url::parse(&issuer).ok()?;
    let issuer_origin = issuer_url.origin().ascii_serialization();
    let issuer_path = issuer_url.path().trim_end_matches('/');
    for candidate in [
        format!("{issuer_origin}/.well-known/oauth-authorization-server{issuer_path}"),
        format!("{issuer_origin}/.well-known/openid-configuration{issuer_path}"),
        format!("{issuer}/.well-known/openid-configuration"),
    ] {
        if let Some(meta) = json_at(client, &candidate).await {
            return meta
                .get("registration_endpoint")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
    }
    None
}

async fn json_at(client: &reqwest::Client, url: &str) -> Option<Value> {
    let response = client.get(url).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    response.json().await.ok()
}

/// The deprecation warnings in a server's stderr, counted per kind. A warning is a line with
/// `…DeprecationWarning: message` (Python's `warnings` format, which the Python SDK's
/// `MCPDeprecationWarning` uses) or `DeprecationWarning:`/`[DEP…]` from Node. Its kind is the
/// category, the SEP it names (`SEP-2577`) and the message (the file and line before the
/// category are left out, so one warning printed from two lines of code counts as one kind).
pub fn stderr_warnings(stderr: &str) -> BTreeMap<String, usize> {
    let mut kinds = BTreeMap::new();
    for line in stderr.lines() {
        let Some(at) = line.find("DeprecationWarning") else {
            continue;
        };
        let start = line[..at]
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let category = &line[start..at + "DeprecationWarning".len()];
        let message = line[at + "DeprecationWarning".len()..]
            .trim_start_matches(':')
            .trim();
        *kinds.entry(kind(category, message)).or_insert(0) += 1;
    }
    kinds
}

fn kind(category: &str, message: &str) -> String {
    let sep = message.find("SEP-").map(|at| {
        let tail = &message[at + 4..];
        let id: String = tail
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        format!("SEP-{}", id.trim_end_matches('-'))
    });
    let words: String = message.chars().take(100).collect();
    let what = words.split_whitespace().collect::<Vec<_>>().join(" ");
    match sep {
        Some(sep) => format!("{category} ({sep}): {what}"),
        None => format!("{category}: {what}"),
    }
}

/// The kinds of warning the candidate printed more often than the baseline did, with the
/// candidate's count.
pub fn new_warnings(
    baseline: &BTreeMap<String, usize>,
    candidate: &BTreeMap<String, usize>,
) -> Vec<(String, usize)> {
    (candidate.iter())
        .filter(|(kind, n)| baseline.get(*kind).copied().unwrap_or(0) < **n)
        .map(|(kind, n)| (kind.clone(), *n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_logging_capability_is_deprecated() {
        let found = in_contract(&json!({"capabilities": {"logging": {}, "tools": {}}}));
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].feature.as_str(), found[0].removable_from),
            ("logging", "2027-07-28")
        );
        assert!(in_contract(&json!({"capabilities": {"tools": {}}})).is_empty());
    }

    #[test]
    fn warnings_are_counted_per_kind() {
        let stderr = "\
/venv/lib/python3.12/site-packages/mcp/server/lowlevel/server.py:412: MCPDeprecationWarning: Roots are deprecated (SEP-2577); use tools
  roots = await ctx.session.list_roots()
/app/server.py:17: MCPDeprecationWarning: Roots are deprecated (SEP-2577); use tools
(node:4242) [DEP0040] DeprecationWarning: The `punycode` module is deprecated.
INFO started
";
        let kinds = stderr_warnings(stderr);
        assert_eq!(
            kinds.get(
                "MCPDeprecationWarning (SEP-2577): Roots are deprecated (SEP-2577); use tools"
            ),
            Some(&2),
            "{kinds:?}"
        );
        assert_eq!(
            kinds.get("DeprecationWarning: The `punycode` module is deprecated."),
            Some(&1),
            "{kinds:?}"
        );
        assert_eq!(kinds.len(), 2);
        let base: BTreeMap<String, usize> = kinds
            .iter()
            .filter(|(k, _)| k.starts_with("Deprecation"))
            .map(|(k, n)| (k.clone(), *n))
            .collect();
        let new = new_warnings(&base, &kinds);
        assert_eq!(new.len(), 1);
        assert!(new[0].0.starts_with("MCPDeprecationWarning"));
    }

    /// A server on 127.0.0.1 that still serves the HTTP+SSE transport (GET `/sse` opens a
    /// stream whose first event is `endpoint`) and whose authorization server offers dynamic
    /// client registration; `/mcp` answers GET with 405, as a Streamable HTTP server may.
    async fn old_style_server() -> String {
        use axum::routing::get;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let issuer = format!("{origin}/auth");
        let resource = json!({"resource": format!("{origin}/mcp"),
            "authorization_servers": [issuer]});
        let metadata = json!({"issuer": issuer, "token_endpoint": format!("{issuer}/token"),
            "registration_endpoint": format!("{issuer}/register")});
        let app = axum::Router::new()
            .route(
                "/sse",
                get(|| async {
                    (
                        [("content-type", "text/event-stream")],
                        "event: endpoint\ndata: /messages?sessionId=1\n\n",
                    )
                }),
            )
            .route(
                "/mcp",
                get(|| async { axum::http::StatusCode::METHOD_NOT_ALLOWED }),
            )
            .route(
                "/.well-known/oauth-protected-resource/mcp",
                get(move || async move { axum::Json(resource) }),
            )
            .route(
                "/.well-known/oauth-authorization-server/auth",
                get(move || async move { axum::Json(metadata) }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await });
        origin
    }

    #[tokio::test]
    async fn the_old_transport_and_client_registration_are_found_over_http() {
        let origin = old_style_server().await;
        let found = over_http(&format!("{origin}/sse"), &BTreeMap::new()).await;
        let features: Vec<&str> = found.iter().map(|d| d.feature.as_str()).collect();
        assert_eq!(features, ["http+sse transport"], "{found:?}");
        let found = over_http(&format!("{origin}/mcp"), &BTreeMap::new()).await;
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].feature, "dynamic client registration");
        assert!(found[0].evidence.ends_with("/auth/register"), "{found:?}");
        assert_eq!(found[0].removable_from, "2027-07-28");
    }

    #[tokio::test]
    async fn nothing_is_found_where_nothing_answers() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        drop(listener);
        assert!(over_http(&url, &BTreeMap::new()).await.is_empty());
    }
}
