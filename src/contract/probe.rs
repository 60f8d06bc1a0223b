//! Error probes: how the server answers an unknown tool, a missing or mistyped argument, an unknown
//! resource and an unsupported protocol version (that one in `eras.rs`), in each era it speaks.
//! No probe calls a tool with valid arguments.

use serde_json::{json, Map, Value};

use super::eras::{shorten, version_probe, PROBE_TIMEOUT};
use super::model::{AcceptedVersions, ProbeOutcome};
use crate::config::{ProtocolEra, ServerSpec};
use crate::mcp::{CallOutcome, McpConnection, McpError};

/// A tool name no server has.
pub const NO_SUCH_TOOL: &str = "mcpeval_probe_no_such_tool";
/// A resource URI no server has.
pub const NO_SUCH_RESOURCE: &str = "mcpeval-probe://no-such-resource";

/// Runs every probe; `tools` is the snapshot's normalized tool list, `accepted` what the server
/// accepts in each era. Each probe is made in each era the server speaks, the session's first
/// (over its connection; the other era's over a connection of their own), so a diff compares
/// answers in the same era on both sides, and `check` reads the session's first.
pub async fn probe_errors(
    conn: &McpConnection,
    spec: &ServerSpec,
    tools: &[Value],
    accepted: &AcceptedVersions,
) -> Result<Vec<ProbeOutcome>, McpError> {
    let session = conn.server_info().era.clone();
    let mut out = in_era(session_probes(conn, tools).await?, &session);
    out.push(version_probe(spec, session == "modern").await);
    let (other, other_spoken) = match session.as_str() {
        "modern" => ("legacy", !accepted.legacy.is_empty()),
        _ => ("modern", !accepted.modern.is_empty()),
    };
    if other_spoken {
        out.extend(other_era_probes(spec, other, tools).await);
        out.push(version_probe(spec, other == "modern").await);
    }
    Ok(out)
}

fn in_era(mut probes: Vec<ProbeOutcome>, era: &str) -> Vec<ProbeOutcome> {
    for probe in &mut probes {
        probe.era = Some(era.to_owned());
    }
    probes
}

/// The probes over a connection of their own in `era`; none when it cannot be made (the
/// session's probes are the snapshot's, these only let a diff compare like with like).
async fn other_era_probes(spec: &ServerSpec, era: &str, tools: &[Value]) -> Vec<ProbeOutcome> {
    let mut spec = spec.clone();
    spec.protocol_era = match era {
        "modern" => ProtocolEra::Modern,
        _ => ProtocolEra::Legacy,
    };
    let Ok(conn) = McpConnection::connect(&spec).await else {
        return Vec::new();
    };
    let probes = session_probes(&conn, tools).await;
    conn.close().await;
    probes.map(|p| in_era(p, era)).unwrap_or_default()
}

/// The probes over the session's own connection.
async fn session_probes(
    conn: &McpConnection,
    tools: &[Value],
) -> Result<Vec<ProbeOutcome>, McpError> {
    let mut out = Vec::new();
    let outcome = conn
        .call_tool(NO_SUCH_TOOL, Some(Map::new()), PROBE_TIMEOUT)
        .await?;
    out.push(recorded(
        "unknown_tool",
        format!("tools/call of `{NO_SUCH_TOOL}`"),
        outcome,
    ));
    out.push(match tool_with_required(tools) {
        Some((tool, arg)) => {
            let outcome = conn
                .call_tool(tool, Some(Map::new()), PROBE_TIMEOUT)
                .await?;
            recorded(
                "missing_argument",
                format!("tools/call of `{tool}` without `{arg}`"),
                outcome,
            )
        }
        None => skipped("missing_argument", "no tool has a required argument"),
    });
    out.push(match mistyped_call(tools) {
        Some((tool, arg, arguments)) => {
            let outcome = conn.call_tool(tool, Some(arguments), PROBE_TIMEOUT).await?;
            recorded(
                "wrong_type",
                format!("tools/call of `{tool}` with `{arg}` of the wrong type"),
                outcome,
            )
        }
        None => skipped(
            "wrong_type",
            "no tool has a required argument of a declared type",
        ),
    });
    let outcome = conn.read_resource(NO_SUCH_RESOURCE).await?;
    out.push(recorded(
        "unknown_resource",
        format!("resources/read of `{NO_SUCH_RESOURCE}`"),
        outcome,
    ));
    Ok(out)
}

fn recorded(probe: &str, request: String, outcome: CallOutcome) -> ProbeOutcome {
    let (kind, code, message, data) = match outcome {
        CallOutcome::Result {
            is_error: true,
            text,
            ..
        } => ("is_error", None, Some(text), None),
        CallOutcome::Result {
            is_error: false,
            text,
            ..
        } => ("result", None, Some(text), None),
        CallOutcome::ProtocolError {
            code,
            message,
            data,
        } => ("jsonrpc_error", Some(code), Some(message), data),
        CallOutcome::Timeout => ("no_answer", None, None, None),
    };
    ProbeOutcome {
        probe: probe.to_owned(),
        era: None,
        request,
        outcome: kind.to_owned(),
        code,
        message: message.map(|m| shorten(&m)),
        data,
    }
}

fn skipped(probe: &str, why: &str) -> ProbeOutcome {
    ProbeOutcome {
        probe: probe.to_owned(),
        era: None,
        request: why.to_owned(),
        outcome: "skipped".to_owned(),
        code: None,
        message: None,
        data: None,
    }
}

/// The first tool (by name) with a required argument, and that argument.
fn tool_with_required(tools: &[Value]) -> Option<(&str, &str)> {
    tools.iter().find_map(|tool| {
        let required = tool.pointer("/inputSchema/required")?.as_array()?;
        let first = required.first()?.as_str()?;
        Some((tool.get("name")?.as_str()?, first))
    })
}

/// A call of the first tool with a required argument of a declared simple type: that argument
/// gets a value of another type, the other required ones a placeholder of their own type (the
/// call stays invalid, so a correct server acts on nothing).
fn mistyped_call(tools: &[Value]) -> Option<(&str, String, Map<String, Value>)> {
    tools.iter().find_map(|tool| {
        let name = tool.get("name")?.as_str()?;
        let schema = tool.get("inputSchema")?;
        let props = schema.get("properties")?.as_object()?;
        let required: Vec<&str> = schema
            .get("required")?
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let target = required.iter().find(|r| {
            props
                .get(**r)
                .and_then(|p| p.get("type"))
                .and_then(Value::as_str)
                .is_some()
        })?;
        let mut arguments = Map::new();
        for r in &required {
            let declared = props.get(*r).cloned().unwrap_or(Value::Null);
            let value = if r == target {
                wrong_value(declared.get("type").and_then(Value::as_str).unwrap_or(""))
            } else {
                placeholder(&declared)
            };
            arguments.insert((*r).to_owned(), value);
        }
        Some((name, (*target).to_owned(), arguments))
    })
}

fn wrong_value(declared: &str) -> Value {
    match declared {
        "string" => json!(12345),
        "object" | "array" | "boolean" => json!("mcpeval-probe"),
        _ => json!("not-a-number"),
    }
}

fn placeholder(schema: &Value) -> Value {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("integer" | "number") => json!(0),
        Some("boolean") => json!(false),
        Some("array") => json!([]),
        Some("object") => json!({}),
        _ => json!("mcpeval-probe"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mistyped_call_breaks_one_argument_and_fills_the_rest() {
        let tools = vec![json!({"name": "update", "inputSchema": {"type": "object",
            "properties": {"id": {"type": "integer"}, "status": {"type": "string",
            "enum": ["open", "closed"]}}, "required": ["id", "status"]}})];
        let (tool, arg, args) = mistyped_call(&tools).unwrap();
        assert_eq!((tool, arg.as_str()), ("update", "id"));
        assert_eq!(args["id"], json!("not-a-number"));
        assert_eq!(args["status"], json!("open"));
        assert_eq!(tool_with_required(&tools).unwrap().1, "id");
        assert!(mistyped_call(&[json!({"name": "x", "inputSchema": {}})]).is_none());
    }
}
