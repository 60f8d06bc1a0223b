//! The Anthropic Messages wire format on the server side: reading what clients such as Claude
//! Code send to `POST /v1/messages`, and writing the answer as one JSON body or as an SSE stream.
//!
//! Host applications wrap the user's request in their own text: `<system-reminder>` blocks in
//! user messages, `role: "system"` messages mid-conversation, a system prompt of tens of KB.
//! Reminders and system messages become `Message::System`, so the sim reads the user's request
//! (the last user text) as a model would, and the app's additions as context.

use super::BadRequest;
use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::host::{Completion, CompletionRequest, Message, ToolCallRequest, ToolSpec};

pub use crate::host::SEED_HEADER;

/// Reads a Messages API request; unknown fields (`metadata`, `thinking`, `tool_choice`,
/// `cache_control`, …) are ignored. `Err` says what is wrong.
pub(super) fn parse_request(body: &Value, seed: u64) -> Result<CompletionRequest, BadRequest> {
    let mut messages = Vec::new();
    if let Some(system) = body.get("system") {
        let text = match system {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => texts(blocks).join("\n\n"),
            Value::Null => String::new(),
            _ => {
                return Err(BadRequest::from(
                    "`system` must be a string or an array of blocks",
                ))
            }
        };
        if !text.trim().is_empty() {
            messages.push(Message::System { content: text });
        }
    }
    let conversation = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("`messages` must be an array")?;
    for (i, m) in conversation.iter().enumerate() {
        read_message(m, &mut messages).map_err(|e| format!("messages[{i}]: {e}"))?;
    }
    let tools = match body.get("tools") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(tools)) => tools.iter().filter_map(tool).collect(),
        Some(_) => return Err(BadRequest::from("`tools` must be an array")),
    };
    Ok(CompletionRequest {
        messages,
        tools: tools.into(),
        seed,
        ..Default::default()
    })
}

/// The text of each `text` block (other block types are skipped).
fn texts(blocks: &[Value]) -> Vec<String> {
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str).unwrap_or("text") == "text")
        .filter_map(|b| b.as_str().or_else(|| b.get("text")?.as_str()))
        .map(str::to_owned)
        .collect()
}

fn read_message(m: &Value, out: &mut Vec<Message>) -> Result<(), BadRequest> {
    let role = m
        .get("role")
        .and_then(Value::as_str)
        .ok_or("missing `role`")?;
    let blocks: Vec<Value> = match m.get("content") {
        Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
        Some(Value::Array(blocks)) => blocks.clone(),
        None | Some(Value::Null) => Vec::new(),
        Some(_) => {
            return Err(BadRequest::from(
                "`content` must be a string or an array of blocks",
            ))
        }
    };
    match role {
        "system" => out.push(Message::System {
            content: texts(&blocks).join("\n\n"),
        }),
        "user" => read_user(&blocks, out),
        "assistant" => out.push(read_assistant(&blocks)?),
        other => return Err(BadRequest(format!("unknown role `{other}`"))),
    }
    Ok(())
}

/// A user message: tool results first (as `Message::Tool`), then the request's own text; the
/// app's `<system-reminder>` spans become system context.
fn read_user(blocks: &[Value], out: &mut Vec<Message>) {
    let mut user = Vec::new();
    let mut reminders = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("tool_result") => out.push(tool_result(block)),
            Some("text") | None => {
                let text = block
                    .as_str()
                    .or_else(|| block.get("text")?.as_str())
                    .unwrap_or("");
                let (own, reminder) = split_reminders(text);
                if !own.trim().is_empty() {
                    user.push(own);
                }
                reminders.extend(reminder);
            }
            _ => {}
        }
    }
    if !reminders.is_empty() {
        out.push(Message::System {
            content: reminders.join("\n\n"),
        });
    }
    if !user.is_empty() {
        out.push(Message::User {
            content: user.join("\n\n"),
        });
    }
}

/// The text outside `<system-reminder>…</system-reminder>` spans, and the spans' insides.
fn split_reminders(text: &str) -> (String, Vec<String>) {
    const OPEN: &str = "<system-reminder>";
    const CLOSE: &str = "</system-reminder>";
    let mut own = String::new();
    let mut reminders = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        own.push_str(&rest[..start]);
        let inner = &rest[start + OPEN.len()..];
        let (reminder, after) = match inner.find(CLOSE) {
            Some(end) => (&inner[..end], &inner[end + CLOSE.len()..]),
            None => (inner, ""),
        };
        reminders.push(reminder.trim().to_owned());
        rest = after;
    }
    own.push_str(rest);
    (own.trim().to_owned(), reminders)
}

/// A `tool_result` block: its text, marked as an error when `is_error` says so and the text
/// does not already read as one (the chat format has no such flag, the sim reads the text).
fn tool_result(block: &Value) -> Message {
    let content = match block.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => texts(parts).join("\n"),
        _ => String::new(),
    };
    let is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
    let content = if is_error && !crate::sim::looks_like_error(&content) {
        format!("Error: {content}")
    } else {
        content
    };
    Message::Tool {
        tool_call_id: block
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        content,
    }
}

fn read_assistant(blocks: &[Value]) -> Result<Message, BadRequest> {
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => {
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or("tool_use block without a name")?;
                let arguments = match block.get("input") {
                    None | Some(Value::Null) => "{}".to_owned(),
                    Some(Value::String(s)) => s.clone(),
                    Some(input) => input.to_string(),
                };
                tool_calls.push(ToolCallRequest {
                    id: block
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    name: name.to_owned(),
                    arguments,
                });
            }
            // thinking, redacted_thinking, server tool blocks: nothing the sim reads.
            _ => {}
        }
    }
    Ok(Message::Assistant {
        content: Some(text).filter(|t| !t.is_empty()),
        tool_calls,
        reasoning: None,
        server_blocks: Vec::new(),
    })
}

/// A client tool (`name`, `description`, `input_schema`, `defer_loading`); server tools
/// (`web_search_…`, the tool search tool, which have a `type` and no schema) are not the sim's
/// to call.
fn tool(t: &Value) -> Option<ToolSpec> {
    let name = t.get("name").and_then(Value::as_str)?;
    let schema = t.get("input_schema")?;
    Some(ToolSpec {
        name: name.to_owned(),
        title: None,
        description: t
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned),
        input_schema: schema.clone(),
        deferred: t.get("defer_loading").and_then(Value::as_bool) == Some(true),
    })
}

/// The content blocks of a completion: the tool search's blocks, text, then one `tool_use` per
/// call (`input` must be a JSON object; arguments that are not one go as `{}`).
fn content_blocks(c: &Completion) -> Vec<Value> {
    let mut blocks = c.server_blocks.clone();
    if let Some(text) = c.content.as_deref().filter(|t| !t.is_empty()) {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for call in &c.tool_calls {
        let input = match serde_json::from_str::<Value>(&call.arguments) {
            Ok(v @ Value::Object(_)) => v,
            _ => json!({}),
        };
        blocks.push(json!({"type": "tool_use", "id": tool_use_id(&call.id),
                           "name": call.name, "input": input}));
    }
    blocks
}

/// The sim's call ids as Anthropic-style ids (`toolu_…`).
fn tool_use_id(id: &str) -> String {
    format!("toolu_{}", id.strip_prefix("call_").unwrap_or(id))
}

fn stop_reason(c: &Completion) -> &'static str {
    if c.tool_calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

fn message_id(c: &Completion) -> String {
    c.tool_calls.first().map_or_else(
        || format!("msg_sim_{:016x}", c.usage.input_tokens),
        |t| format!("msg_sim_{}", t.id.strip_prefix("call_").unwrap_or(&t.id)),
    )
}

fn usage(c: &Completion) -> Value {
    json!({
        "input_tokens": c.usage.input_tokens,
        "output_tokens": c.usage.output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    })
}

/// The model name the answer carries: the one asked for (apps check it), else `sim`.
fn model_name(requested: Option<&str>) -> &str {
    requested.filter(|m| !m.is_empty()).unwrap_or("sim")
}

/// A Messages API response body for a sim completion.
pub(super) fn response_body(c: &Completion, model: Option<&str>) -> Value {
    json!({
        "id": message_id(c),
        "type": "message",
        "role": "assistant",
        "model": model_name(model),
        "content": content_blocks(c),
        "stop_reason": stop_reason(c),
        "stop_sequence": null,
        "usage": usage(c),
    })
}

/// The same answer as a Messages API event stream (`text/event-stream`): `message_start`, a
/// start/delta/stop triple per content block (`text_delta`, `input_json_delta`),
/// `message_delta` with the stop reason and usage, `message_stop`.
pub(super) fn stream_body(c: &Completion, model: Option<&str>) -> String {
    let mut out = String::new();
    let mut start = response_body(c, model);
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"]["output_tokens"] = json!(0);
    event(
        &mut out,
        "message_start",
        &json!({"type": "message_start", "message": start}),
    );
    for (index, block) in content_blocks(c).into_iter().enumerate() {
        let (empty, delta) = match block["type"].as_str() {
            // A search's result arrives whole, in its start event.
            Some("tool_search_tool_result") => (block, Value::Null),
            Some("tool_use" | "server_tool_use") => {
                let mut empty = block.clone();
                empty["input"] = json!({});
                let partial = block["input"].to_string();
                (
                    empty,
                    json!({"type": "input_json_delta", "partial_json": partial}),
                )
            }
            _ => (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            ),
        };
        event(
            &mut out,
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": empty}),
        );
        if !delta.is_null() {
            event(
                &mut out,
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            );
        }
        event(
            &mut out,
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        );
    }
    event(
        &mut out,
        "message_delta",
        &json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason(c), "stop_sequence": null},
                "usage": usage(c)}),
    );
    event(&mut out, "message_stop", &json!({"type": "message_stop"}));
    out
}

fn event(out: &mut String, name: &str, data: &Value) {
    let _ = write!(out, "event: {name}\ndata: {data}\n\n");
}

/// An Anthropic-style error body.
pub(super) fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}
