//! What a server accepts in each protocol era, asked over fresh connections (a new process for a
//! stdio server): the versions `initialize` and `server/discover` accept, and the answer to a
//! protocol version no server supports.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::model::{AcceptedVersions, ProbeOutcome};
use crate::config::{ServerSpec, Transport};

/// How long one probe may take.
pub(super) const PROBE_TIMEOUT: Duration = Duration::from_secs(15);
/// A protocol version no server supports.
pub const NO_SUCH_VERSION: &str = "1900-01-01";
/// The first protocol version without `initialize`: the one `server/discover` is offered in.
pub const FIRST_MODERN_VERSION: &str = "2026-07-28";
/// The JSON-RPC code of an unsupported protocol version (2026-07-28).
const UNSUPPORTED_VERSION: i64 = -32022;
/// The protocol versions that have `initialize`, oldest first.
pub const LEGACY_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// What `spec` accepts in each era, probed over fresh connections whichever era the snapshot's
/// session is in. `session` is that session's era and agreed version (accepted, whatever the
/// probes say); `discovered` what its own `server/discover` listed, when it is modern.
pub async fn accepted_versions(
    spec: &ServerSpec,
    session: (&str, &str),
    discovered: Option<&[String]>,
) -> AcceptedVersions {
    let legacy = legacy_supported_versions(spec).await;
    let modern = match discovered {
        Some(versions) => versions.to_vec(),
        None => modern_supported_versions(spec).await,
    };
    // A legacy version `server/discover` lists is spoken through `initialize`: `legacy` says.
    let modern = modern
        .into_iter()
        .filter(|v| v.as_str() >= FIRST_MODERN_VERSION)
        .collect();
    let mut accepted = AcceptedVersions { legacy, modern };
    let (era, version) = session;
    let own = match era {
        "modern" => &mut accepted.modern,
        _ => &mut accepted.legacy,
    };
    if !version.is_empty() && !own.iter().any(|v| v == version) {
        own.push(version.to_owned());
        own.sort();
    }
    accepted
}

/// The versions a legacy server supports: `initialize` cannot list them, so each known legacy
/// version is offered over a fresh connection and kept when the server answers with it.
pub async fn legacy_supported_versions(spec: &ServerSpec) -> Vec<String> {
    let mut supported = Vec::new();
    for version in LEGACY_VERSIONS {
        let request = initialize(version);
        let answer = raw_request(spec, &request, version).await;
        if let Ok(Answer {
            outcome: "result",
            message: Some(message),
            ..
        }) = answer
        {
            if message.ends_with(version) {
                supported.push(version.to_owned());
            }
        }
    }
    supported
}

/// The versions a server supports in the modern era, from a `server/discover` offering
/// [`FIRST_MODERN_VERSION`] over a fresh connection: its `supportedVersions`, or the
/// `data.supported` of a `-32022` refusal; none when it answers otherwise (a legacy server's
/// "method not found") or not at all.
pub async fn modern_supported_versions(spec: &ServerSpec) -> Vec<String> {
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {
        "_meta": modern_meta(FIRST_MODERN_VERSION)}});
    match raw_request(spec, &request, FIRST_MODERN_VERSION).await {
        Ok(answer) => answer.versions,
        Err(_) => Vec::new(),
    }
}

/// The client context a modern request carries in `_meta`.
fn modern_meta(version: &str) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "mcpeval-probe",
            "version": env!("CARGO_PKG_VERSION")}})
}

fn initialize(version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "mcpeval-probe", "version": env!("CARGO_PKG_VERSION")}}})
}

/// Why a probe got no answer to read.
#[derive(Debug, thiserror::Error)]
enum ProbeFailure {
    #[error("no answer within the probe timeout")]
    Timeout,
    #[error("cannot start: {0}")]
    Start(std::io::Error),
    #[error("no {0}")]
    Pipe(&'static str),
    #[error("cannot write: {0}")]
    Write(std::io::Error),
    #[error("cannot read: {0}")]
    Read(std::io::Error),
    #[error("request failed: {0}")]
    Request(reqwest::Error),
}

/// One raw request over a fresh connection, bounded by the probe timeout; over HTTP its
/// `MCP-Protocol-Version` header names `version`.
async fn raw_request(
    spec: &ServerSpec,
    request: &Value,
    version: &str,
) -> Result<Answer, ProbeFailure> {
    // A probe process runs on sandbox copies of its own, like any other start of the server.
    let copies = crate::mcp::sandbox::SandboxCopies::make(spec)
        .map_err(|e| ProbeFailure::Start(std::io::Error::other(e)))?;
    let sandboxed = copies.as_ref().map(|c| c.apply(spec));
    let spec = sandboxed.as_ref().unwrap_or(spec);
    let answer = match &spec.transport {
        Transport::Stdio { program, args } => {
            tokio::time::timeout(PROBE_TIMEOUT, over_stdio(spec, program, args, request)).await
        }
        Transport::Http { url } => {
            let post = over_http(spec, url, request, version);
            tokio::time::timeout(PROBE_TIMEOUT, post).await
        }
    };
    answer.unwrap_or(Err(ProbeFailure::Timeout))
}

/// Sends one request naming protocol version `1900-01-01` over a fresh connection: `initialize`
/// in the legacy era, `tools/list` with the version in `_meta` in the modern one.
pub(super) async fn version_probe(spec: &ServerSpec, modern: bool) -> ProbeOutcome {
    let request = if modern {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": NO_SUCH_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {}}}})
    } else {
        initialize(NO_SUCH_VERSION)
    };
    let words = if modern {
        format!("tools/list with protocol version {NO_SUCH_VERSION} in _meta")
    } else {
        format!("initialize with protocol version {NO_SUCH_VERSION}")
    };
    let mut outcome = match raw_request(spec, &request, NO_SUCH_VERSION).await {
        Ok(answer) => answer,
        Err(reason) => Answer::none(reason.to_string()),
    }
    .into_outcome();
    outcome.probe = "unsupported_protocol_version".into();
    outcome.era = Some(if modern { "modern" } else { "legacy" }.into());
    outcome.request = words;
    outcome
}

/// A raw answer to one request.
struct Answer {
    outcome: &'static str,
    code: Option<i64>,
    message: Option<String>,
    data: Option<Value>,
    /// The versions the answer lists: a `server/discover` result's `supportedVersions`, or a
    /// `-32022` error's `data.supported`.
    versions: Vec<String>,
}

/// The strings of the array at `pointer`.
fn strings_at(value: &Value, pointer: &str) -> Vec<String> {
    let items = value.pointer(pointer).and_then(Value::as_array);
    let strings = items.into_iter().flatten().filter_map(Value::as_str);
    strings.map(str::to_owned).collect()
}

impl Answer {
    fn none(reason: String) -> Self {
        Self {
            outcome: "no_answer",
            code: None,
            message: Some(reason),
            data: None,
            versions: Vec::new(),
        }
    }

    /// A JSON-RPC response: its error, or the version a result answered with.
    fn from_response(response: &Value) -> Self {
        if let Some(error) = response.get("error") {
            let code = error.get("code").and_then(Value::as_i64);
            let versions = match code {
                Some(UNSUPPORTED_VERSION) => strings_at(error, "/data/supported"),
                _ => Vec::new(),
            };
            return Self {
                outcome: "jsonrpc_error",
                code,
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                data: error.get("data").cloned(),
                versions,
            };
        }
        let version = response
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str)
            .map(|v| format!("answered with protocol version {v}"));
        Self {
            outcome: "result",
            code: None,
            message: version,
            data: None,
            versions: strings_at(response, "/result/supportedVersions"),
        }
    }

    fn into_outcome(self) -> ProbeOutcome {
        ProbeOutcome {
            probe: String::new(),
            era: None,
            request: String::new(),
            outcome: self.outcome.to_owned(),
            code: self.code,
            message: self.message.map(|m| shorten(&m)),
            data: self.data,
        }
    }
}

/// Starts the server again (never through a shell), writes the request, reads the response.
async fn over_stdio(
    spec: &ServerSpec,
    program: &str,
    args: &[String],
    request: &Value,
) -> Result<Answer, ProbeFailure> {
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .envs(&spec.env)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    let mut child = command.spawn().map_err(ProbeFailure::Start)?;
    let mut stdin = child.stdin.take().ok_or(ProbeFailure::Pipe("stdin"))?;
    let stdout = child.stdout.take().ok_or(ProbeFailure::Pipe("stdout"))?;
    let line = format!("{request}\n");
    stdin
        .write_all(line.as_bytes())
        .await
        .map_err(ProbeFailure::Write)?;
    let mut lines = BufReader::new(stdout).lines();
    let answer = loop {
        match lines.next_line().await {
            Ok(Some(line)) => {
                let Ok(value) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if value.get("id") == Some(&json!(1)) {
                    break Ok(Answer::from_response(&value));
                }
            }
            Ok(None) => {
                break Ok(Answer::none(
                    "the server closed stdout without answering".into(),
                ))
            }
            Err(e) => break Err(ProbeFailure::Read(e)),
        }
    };
    drop(stdin);
    let _ = child.kill().await;
    answer
}

/// POSTs the request with `MCP-Protocol-Version: {version}`; a JSON or event-stream body with
/// a JSON-RPC response is read as such, any other refusal is recorded as its HTTP status.
async fn over_http(
    spec: &ServerSpec,
    url: &str,
    request: &Value,
    version: &str,
) -> Result<Answer, ProbeFailure> {
    let client = crate::net::client_builder()
        .build()
        .map_err(ProbeFailure::Request)?;
    let mut call = client
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", version)
        .body(request.to_string());
    for (name, value) in &spec.headers {
        call = call.header(name, value);
    }
    let response = call.send().await.map_err(ProbeFailure::Request)?;
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    let json = serde_json::from_str::<Value>(&body).ok().or_else(|| {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .find_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
    });
    Ok(match json {
        Some(value) if value.get("error").is_some() || value.get("result").is_some() => {
            Answer::from_response(&value)
        }
        _ if !status.is_success() => Answer {
            outcome: "http_error",
            code: Some(i64::from(status.as_u16())),
            message: Some(shorten(body.trim())),
            data: None,
            versions: Vec::new(),
        },
        _ => Answer::none(format!("HTTP {status} without a JSON-RPC response")),
    })
}

/// Messages can be long (a stack trace); the first 300 characters say what kind of error it is.
pub(super) fn shorten(text: &str) -> String {
    match text.char_indices().nth(300) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_becomes_an_outcome() {
        let err = json!({"id": 1, "error": {"code": -32022, "message": "unsupported",
            "data": {"supported": ["2026-07-28"]}}});
        let a = Answer::from_response(&err).into_outcome();
        assert_eq!(
            (a.outcome.as_str(), a.code),
            ("jsonrpc_error", Some(-32022))
        );
        assert!(a.data.is_some());
        let ok = json!({"id": 1, "result": {"protocolVersion": "2025-06-18"}});
        let b = Answer::from_response(&ok).into_outcome();
        assert_eq!(b.outcome, "result");
        assert!(b.message.unwrap().contains("2025-06-18"));
        // The versions an answer lists: a refusal's `data.supported`, a discover result's list.
        assert_eq!(Answer::from_response(&err).versions, ["2026-07-28"]);
        let listed = json!({"id": 1, "result": {"supportedVersions": ["2026-07-28"]}});
        assert_eq!(Answer::from_response(&listed).versions, ["2026-07-28"]);
        let other = json!({"id": 1, "error": {"code": -32601, "message": "no such method",
            "data": {"supported": ["x"]}}});
        assert!(Answer::from_response(&other).versions.is_empty());
    }

    /// A stdio server played by `sh`: it reads one request and runs `answer` on it (`$line`).
    fn scripted(answer: &str) -> ServerSpec {
        let mut spec = ServerSpec::parse("scripted", "sh").unwrap();
        let script = format!("read -r line; {answer}");
        spec.transport = Transport::Stdio {
            program: "sh".into(),
            args: vec!["-c".into(), script],
        };
        spec
    }

    #[tokio::test]
    async fn a_legacy_server_accepts_only_the_versions_it_answers_with() {
        // It answers every `initialize` with 2025-06-18, and everything else "method not found".
        let spec = scripted(
            r#"case "$line" in
              *'"initialize"'*) echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}';;
              *) echo '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}';;
            esac"#,
        );
        assert_eq!(legacy_supported_versions(&spec).await, ["2025-06-18"]);
        assert!(modern_supported_versions(&spec).await.is_empty());
        let accepted = accepted_versions(&spec, ("legacy", "2025-06-18"), None).await;
        let expected = AcceptedVersions {
            legacy: vec!["2025-06-18".into()],
            modern: vec![],
        };
        assert_eq!(accepted, expected);
    }

    #[tokio::test]
    async fn a_server_of_both_eras_is_recorded_in_both() {
        // It accepts whatever legacy version is offered, and `server/discover` lists a legacy
        // version beside the modern one (spoken through `initialize`, so kept to `legacy`).
        let spec = scripted(
            r#"case "$line" in
              *server/discover*) echo '{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2025-11-25","2026-07-28"]}}';;
              *) v=$(echo "$line" | sed 's/.*"protocolVersion":"\([^"]*\)".*/\1/')
                 echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"$v\"}}";;
            esac"#,
        );
        let accepted = accepted_versions(&spec, ("legacy", "2025-11-25"), None).await;
        assert_eq!(accepted.legacy, LEGACY_VERSIONS);
        assert_eq!(accepted.modern, ["2026-07-28"]);
        // A modern session's own discover list is used as it is, without a probe.
        let discovered = ["2026-07-28".to_owned(), "2027-01-01".to_owned()];
        let accepted = accepted_versions(&spec, ("modern", "2026-07-28"), Some(&discovered)).await;
        assert_eq!(accepted.modern, discovered);
    }
}
