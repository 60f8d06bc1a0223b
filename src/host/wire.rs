//! Pieces of the vendors' wire formats that both the app hosts' stream readers and
//! `mcpeval sim-server` read.

use serde_json::Value;

/// The text blocks of the server's result inside Gemini CLI's "MCP tool 'x' reported tool error
/// for function call: {…} with response: [{functionResponse: {response: {content: […]}}}]"
/// (what the model and the stream get for a result with `isError`).
pub fn gemini_tool_error_text(message: &str) -> Option<String> {
    let (_, response) = message.split_once(" with response: ")?;
    let parts: Value = serde_json::from_str(response).ok()?;
    let texts: Vec<&str> = parts
        .as_array()?
        .iter()
        .filter_map(|p| p.pointer("/functionResponse/response/content")?.as_array())
        .flatten()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}
