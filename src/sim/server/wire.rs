//! The chat-completions wire format on the server side: reading requests, writing responses.

use super::BadRequest;
use crate::host::openai::wire::text_content;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::host::{Completion, CompletionRequest, Message, ToolCallRequest, ToolSpec};

/// Reads an OpenAI chat-completions request; unknown fields are ignored. `Err` says what is wrong.
pub(super) fn parse_request(body: &Value) -> Result<CompletionRequest, BadRequest> {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("`messages` must be an array")?
        .iter()
        .enumerate()
        .map(|(i, m)| message(m).map_err(|e| format!("messages[{i}]: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let tools = match body.get("tools") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(tools)) => tools
            .iter()
            .enumerate()
            .map(|(i, t)| tool(t).map_err(|e| format!("tools[{i}]: {e}")))
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(BadRequest::from("`tools` must be an array")),
    };
    let seed = match body.get("seed") {
        None | Some(Value::Null) => 0,
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_i64().map(|s| s as u64))
            .ok_or("`seed` must be an integer")?,
    };
    Ok(CompletionRequest {
        messages,
        tools: tools.into(),
        seed,
        ..Default::default()
    })
}

fn message(m: &Value) -> Result<Message, BadRequest> {
    let role = m
        .get("role")
        .and_then(Value::as_str)
        .ok_or("missing `role`")?;
    let content = text_content(m.get("content"));
    Ok(match role {
        "system" | "developer" => Message::System {
            content: content.unwrap_or_default(),
        },
        "user" => Message::User {
            content: content.unwrap_or_default(),
        },
        "assistant" => {
            let calls = m.get("tool_calls").and_then(Value::as_array);
            let tool_calls = calls
                .into_iter()
                .flatten()
                .map(tool_call)
                .collect::<Result<Vec<_>, _>>()?;
            Message::Assistant {
                content: content.filter(|c| !c.is_empty()),
                tool_calls,
                reasoning: None,
                server_blocks: Vec::new(),
            }
        }
        "tool" => Message::Tool {
            tool_call_id: m
                .get("tool_call_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            content: content.unwrap_or_default(),
        },
        other => return Err(BadRequest(format!("unknown role `{other}`"))),
    })
}

fn tool_call(c: &Value) -> Result<ToolCallRequest, BadRequest> {
    let function = c.get("function").unwrap_or(c);
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .ok_or("tool call without a function name")?;
    let arguments = match function.get("arguments") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => "{}".to_owned(),
        Some(other) => other.to_string(),
    };
    Ok(ToolCallRequest {
        id: c
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        name: name.to_owned(),
        arguments,
    })
}

fn tool(t: &Value) -> Result<ToolSpec, BadRequest> {
    let function = t.get("function").unwrap_or(t);
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .ok_or("tool without a function name")?;
    Ok(ToolSpec {
        name: name.to_owned(),
        title: None,
        description: function
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned),
        input_schema: function
            .get("parameters")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        deferred: false,
    })
}

/// An OpenAI chat-completion object for a sim completion.
pub(super) fn response_body(c: &Completion) -> Value {
    let mut message = json!({"role": "assistant", "content": c.content});
    if !c.tool_calls.is_empty() {
        let calls: Vec<Value> = c
            .tool_calls
            .iter()
            .map(|t| {
                json!({"id": t.id, "type": "function",
                       "function": {"name": t.name, "arguments": t.arguments}})
            })
            .collect();
        message["tool_calls"] = Value::Array(calls);
    }
    let finish = if c.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let id = c.tool_calls.first().map_or_else(
        || format!("chatcmpl-sim-{created:x}"),
        |t| format!("chatcmpl-sim-{}", t.id),
    );
    json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": c.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": null}],
        "usage": {
            "prompt_tokens": c.usage.input_tokens,
            "completion_tokens": c.usage.output_tokens,
            "total_tokens": c.usage.input_tokens + c.usage.output_tokens,
        },
    })
}

/// The same answer as chat-completion chunks (`stream: true`): the role, the content, each tool
/// call (name and id, then its arguments), the finish reason, a usage chunk (as
/// `stream_options.include_usage` asks; sent always) and `[DONE]`.
pub(super) fn stream_body(c: &Completion) -> String {
    let whole = response_body(c);
    let chunk = |delta: Value, finish: Value| {
        json!({"id": whole["id"], "object": "chat.completion.chunk", "created": whole["created"],
               "model": whole["model"],
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    if let Some(text) = c.content.as_deref().filter(|t| !t.is_empty()) {
        chunks.push(chunk(json!({"content": text}), Value::Null));
    }
    for (index, call) in c.tool_calls.iter().enumerate() {
        let head = json!({"index": index, "id": call.id, "type": "function",
                          "function": {"name": call.name, "arguments": ""}});
        let arguments = json!({"index": index, "function": {"arguments": call.arguments}});
        chunks.push(chunk(json!({"tool_calls": [head]}), Value::Null));
        chunks.push(chunk(json!({"tool_calls": [arguments]}), Value::Null));
    }
    chunks.push(chunk(
        json!({}),
        whole["choices"][0]["finish_reason"].clone(),
    ));
    let mut usage = chunk(Value::Null, Value::Null);
    usage["choices"] = json!([]);
    usage["usage"] = whole["usage"].clone();
    chunks.push(usage);
    let mut out = String::new();
    for chunk in chunks {
        out.push_str(&format!("data: {chunk}\n\n"));
    }
    out.push_str("data: [DONE]\n\n");
    out
}
