//! The chat-completions wire format on the client side: function names, the request body, and a
//! lenient reading of the response (real OpenAI-compatible servers bend the format).

use serde_json::{json, Map, Value};

use crate::host::lenient::{as_count, excerpt, model_name};
use crate::host::{Completion, CompletionRequest, HostError, Message, ToolCallRequest, Usage};

/// MCP tool names ↔ function names the API accepts (at most 64 characters).
pub(crate) type ToolNames = crate::host::names::WireNames<64>;

/// The chat-completions request body. Titles are not sent: function tools have no such field.
pub(crate) fn request_body(model: &str, req: &CompletionRequest, names: &ToolNames) -> Value {
    let messages: Vec<Value> = req.messages.iter().map(|m| message(m, names)).collect();
    let mut body = json!({
        "model": model,
        "messages": messages,
        // Bits reinterpreted: int64 on the wire, the same u64 back at a server that reads it so.
        "seed": req.seed as i64,
    });
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                let mut function = Map::new();
                function.insert("name".into(), names.wire(&t.name).into());
                if let Some(d) = &t.description {
                    function.insert("description".into(), d.clone().into());
                }
                function.insert("parameters".into(), t.input_schema.clone());
                json!({"type": "function", "function": function})
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    body
}

fn message(m: &Message, names: &ToolNames) -> Value {
    match m {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let mut msg = json!({"role": "assistant", "content": content});
            if !tool_calls.is_empty() {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function", "function": {
                            "name": names.wire(&c.name), "arguments": c.arguments}})
                    })
                    .collect();
                msg["tool_calls"] = Value::Array(calls);
            }
            msg
        }
        Message::Tool {
            tool_call_id,
            content,
        } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
    }
}

/// Reads a chat-completions response leniently: tool calls without `type`, `arguments` as an
/// object, any `finish_reason`, `usage` partial or missing.
pub(crate) fn parse_response(
    body: &Value,
    names: &ToolNames,
    fallback_model: &str,
) -> Result<Completion, HostError> {
    let choice = body
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| HostError::BadResponse(format!("no `choices` in {}", excerpt(body))))?;
    let message = choice.get("message").unwrap_or(&Value::Null);
    let content = text_content(message.get("content"))
        .or_else(|| text_content(choice.get("text")))
        .filter(|t| !t.is_empty());
    let mut calls: Vec<&Value> = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let legacy = message.get("function_call").filter(|f| f.is_object());
    let tool_calls = calls
        .drain(..)
        .chain(legacy)
        .enumerate()
        .map(|(i, call)| tool_call(i, call, names))
        .collect::<Result<Vec<_>, _>>()?;
    let usage = body.get("usage").unwrap_or(&Value::Null);
    let count = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| as_count(usage.get(*k)))
            .unwrap_or(0)
    };
    Ok(Completion {
        content,
        tool_calls,
        usage: Usage {
            input_tokens: count(&["prompt_tokens", "input_tokens"]),
            output_tokens: count(&["completion_tokens", "output_tokens"]),
            ..Usage::default()
        },
        model: model_name(body, fallback_model),
        ..Default::default()
    })
}

fn tool_call(i: usize, call: &Value, names: &ToolNames) -> Result<ToolCallRequest, HostError> {
    // Either {id, type, function: {name, arguments}} or a bare {name, arguments}.
    let function = call.get("function").unwrap_or(call);
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            HostError::BadResponse(format!("tool call without a name: {}", excerpt(call)))
        })?;
    let arguments = match function.get("arguments") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => "{}".to_owned(),
        Some(other) => other.to_string(),
    };
    let id = call
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map_or_else(|| format!("call_{i}"), str::to_owned);
    Ok(ToolCallRequest {
        id,
        name: names.original(name),
        arguments,
    })
}

/// A content string, or the text parts of a content array.
pub(crate) fn text_content(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.as_str().or_else(|| p.get("text")?.as_str()))
                .collect::<Vec<_>>()
                .join(""),
        ),
        _ => None,
    }
}
