//! The OpenAI Responses API on the server side: reading what clients such as Codex CLI send to
//! `POST /v1/responses` (`instructions`, `input` items, function and namespace tools), and
//! writing the answer as one JSON body or as its SSE event stream.
//!
//! Codex offers an MCP server's tools as a `namespace` tool named `mcp__<server>` holding the
//! bare tools; the sim sees them as `mcp__<server>__<tool>` (the naming it already reads, as
//! from Claude Code), and its call goes back as `name` plus `namespace`.
//!
//! The sim reads every system text as the server's instructions (its rules: "never delete",
//! "prefer X"). So `instructions` and `system` messages (a plain client's system prompt) and a
//! namespace's description (where Codex puts the server's instructions) become
//! `Message::System`, while `developer` messages (Codex's own ~20 KB coding-agent prompt) and
//! user messages that are wholly an app's `<tag>…</tag>` block (`<environment_context>`) are
//! left out: the sim decides from the user's request, the server and its tools, whatever the
//! app adds around them. The
//! `Wall time: … seconds\nOutput:` line Codex puts before every tool result is dropped, so it
//! reads the tool's own output.

use super::BadRequest;
use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::host::{Completion, CompletionRequest, Message, ToolCallRequest, ToolSpec};

/// A request read for the sim, with what it takes to answer in the client's naming.
pub(super) struct Parsed {
    pub request: CompletionRequest,
    /// The sim's name for each namespaced tool, with its namespace and its own name.
    pub namespaced: Vec<(String, String, String)>,
    /// What the sim is not shown (the app's developer prompt and context blocks), still
    /// counted in the usage: it was sent.
    pub left_out: Vec<Message>,
}

impl Parsed {
    /// The input tokens of everything the client sent, what the sim read and what it did not.
    pub fn input_tokens(&self) -> u64 {
        let mut all = self.request.messages.clone();
        all.extend(self.left_out.iter().cloned());
        crate::sim::count_input_tokens(&all, &self.request.tools)
    }
}

impl Parsed {
    /// The `name` and `namespace` a call to the sim's tool `flat` goes back as.
    fn call_name<'a>(&'a self, flat: &'a str) -> (&'a str, Option<&'a str>) {
        self.namespaced
            .iter()
            .find(|(f, _, _)| f == flat)
            .map_or((flat, None), |(_, ns, name)| {
                (name.as_str(), Some(ns.as_str()))
            })
    }
}

/// Reads a Responses API request; unknown fields (`reasoning`, `include`, `store`,
/// `client_metadata`, …) and unknown input items (`reasoning`, …) are ignored. `Err` says what
/// is wrong.
pub(super) fn parse_request(body: &Value, seed: u64) -> Result<Parsed, BadRequest> {
    let mut messages = Vec::new();
    let mut left_out = Vec::new();
    match body.get("instructions") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s.trim().is_empty() => {}
        Some(Value::String(s)) => messages.push(Message::System { content: s.clone() }),
        Some(_) => return Err(BadRequest::from("`instructions` must be a string")),
    }
    match body.get("input") {
        Some(Value::String(s)) => messages.push(Message::User { content: s.clone() }),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                read_item(item, &mut messages, &mut left_out)
                    .map_err(|e| format!("input[{i}]: {e}"))?;
            }
        }
        _ => {
            return Err(BadRequest::from(
                "`input` must be a string or an array of items",
            ))
        }
    }
    let mut tools = Vec::new();
    let mut namespaced = Vec::new();
    let mut notes = Vec::new();
    match body.get("tools") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for t in list {
                match t.get("type").and_then(Value::as_str) {
                    Some("function") => tools.extend(function_tool(t, None)),
                    Some("namespace") => {
                        let ns = t.get("name").and_then(Value::as_str).unwrap_or("");
                        let about = t.get("description").and_then(Value::as_str);
                        // The server's instructions, for MCP namespaces only (Codex's own
                        // namespaces describe its own tools).
                        if let Some(about) =
                            about.filter(|a| ns.starts_with("mcp__") && !a.trim().is_empty())
                        {
                            notes.push(Message::System {
                                content: about.to_owned(),
                            });
                        }
                        let inner = t.get("tools").and_then(Value::as_array);
                        for f in inner.into_iter().flatten() {
                            if let Some(spec) = function_tool(f, Some(ns)) {
                                let own = f["name"].as_str().unwrap_or("").to_owned();
                                namespaced.push((spec.name.clone(), ns.to_owned(), own));
                                tools.push(spec);
                            }
                        }
                    }
                    // web_search, local_shell, custom tools: not the sim's to call.
                    _ => {}
                }
            }
        }
        Some(_) => return Err(BadRequest::from("`tools` must be an array")),
    }
    // The server's instructions after the system prompt, before the conversation.
    let at = usize::from(
        body.get("instructions")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.trim().is_empty()),
    );
    messages.splice(at..at, notes);
    Ok(Parsed {
        request: CompletionRequest {
            messages,
            tools: tools.into(),
            seed,
            ..Default::default()
        },
        namespaced,
        left_out,
    })
}

/// The flat name the sim sees: `mcp__tracker` + `get_issue` → `mcp__tracker__get_issue`.
fn flat_name(namespace: Option<&str>, name: &str) -> String {
    match namespace.filter(|ns| !ns.is_empty()) {
        Some(ns) => format!("{ns}__{name}"),
        None => name.to_owned(),
    }
}

fn function_tool(t: &Value, namespace: Option<&str>) -> Option<ToolSpec> {
    if t.get("type").and_then(Value::as_str) != Some("function") {
        return None;
    }
    let name = t.get("name").and_then(Value::as_str)?;
    Some(ToolSpec {
        name: flat_name(namespace, name),
        title: None,
        description: t
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned),
        input_schema: t
            .get("parameters")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"})),
        deferred: false,
    })
}

/// The text of a message's content: a string, or its `input_text`/`output_text`/`text` parts.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| {
                matches!(
                    p.get("type").and_then(Value::as_str),
                    Some("input_text" | "output_text" | "text") | None
                )
            })
            .filter_map(|p| p.as_str().or_else(|| p.get("text")?.as_str()))
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => String::new(),
    }
}

/// Whether a user text is wholly one `<tag>…</tag>` block an app adds (`<environment_context>`,
/// `<user_instructions>`), not the user's own words.
fn is_context_block(text: &str) -> bool {
    let t = text.trim();
    let Some(rest) = t.strip_prefix('<') else {
        return false;
    };
    let tag: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect();
    !tag.is_empty() && t.ends_with(&format!("</{tag}>"))
}

fn read_item(
    item: &Value,
    out: &mut Vec<Message>,
    left_out: &mut Vec<Message>,
) -> Result<(), BadRequest> {
    let kind = item.get("type").and_then(Value::as_str);
    match kind {
        Some("message") | None => {
            let role = item
                .get("role")
                .and_then(Value::as_str)
                .ok_or("a message without a `role`")?;
            let text = content_text(item.get("content"));
            match role {
                "system" => out.push(Message::System { content: text }),
                "developer" | "user" if role == "developer" || is_context_block(&text) => {
                    left_out.push(Message::System { content: text })
                }
                "user" => out.push(Message::User { content: text }),
                "assistant" => out.push(Message::Assistant {
                    content: Some(text).filter(|t| !t.is_empty()),
                    tool_calls: Vec::new(),
                    reasoning: None,
                    server_blocks: Vec::new(),
                }),
                other => return Err(BadRequest(format!("unknown role `{other}`"))),
            }
        }
        Some("function_call") => {
            let name = item
                .get("name")
                .and_then(Value::as_str)
                .ok_or("a function_call without a name")?;
            let namespace = item.get("namespace").and_then(Value::as_str);
            let call = ToolCallRequest {
                id: item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                name: flat_name(namespace, name),
                arguments: match item.get("arguments") {
                    Some(Value::String(s)) => s.clone(),
                    None | Some(Value::Null) => "{}".to_owned(),
                    Some(v) => v.to_string(),
                },
            };
            // Parallel calls of one turn come as consecutive items: one assistant message.
            match out.last_mut() {
                Some(Message::Assistant { tool_calls, .. }) if !tool_calls.is_empty() => {
                    tool_calls.push(call)
                }
                _ => out.push(Message::Assistant {
                    content: None,
                    tool_calls: vec![call],
                    reasoning: None,
                    server_blocks: Vec::new(),
                }),
            }
        }
        Some("function_call_output") => {
            let content = match item.get("output") {
                Some(Value::String(s)) => s.clone(),
                Some(v @ Value::Array(_)) => content_text(Some(v)),
                Some(Value::Null) | None => String::new(),
                Some(v) => v.to_string(),
            };
            let content = strip_wall_time(&content).to_owned();
            out.push(Message::Tool {
                tool_call_id: item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                content,
            });
        }
        // reasoning, web_search_call, compaction, …: nothing the sim reads.
        Some(_) => {}
    }
    Ok(())
}

/// A tool result without Codex's `Wall time: 0.0025 seconds\nOutput:` header.
fn strip_wall_time(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("Wall time: ") else {
        return text;
    };
    let Some((seconds, rest)) = rest.split_once(" seconds\nOutput:") else {
        return text;
    };
    if seconds.parse::<f64>().is_err() {
        return text;
    }
    rest.trim_start_matches(['\n', '\r'])
}

/// The model name the answer carries: the one asked for, else `sim`.
fn model_name(requested: Option<&str>) -> &str {
    requested.filter(|m| !m.is_empty()).unwrap_or("sim")
}

fn short_id(c: &Completion) -> String {
    c.tool_calls.first().map_or_else(
        || format!("{:016x}", c.usage.input_tokens),
        |t| t.id.strip_prefix("call_").unwrap_or(&t.id).to_owned(),
    )
}

/// The output items of a completion: a `message` with its text, then one `function_call` per
/// call (in the client's naming: `name` plus `namespace` for namespaced tools).
fn output_items(c: &Completion, parsed: &Parsed) -> Vec<Value> {
    let id = short_id(c);
    let mut items = Vec::new();
    if let Some(text) = c.content.as_deref().filter(|t| !t.is_empty()) {
        items.push(json!({"type": "message", "id": format!("msg_sim_{id}"),
            "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}));
    }
    for (i, call) in c.tool_calls.iter().enumerate() {
        let (name, namespace) = parsed.call_name(&call.name);
        let mut item = json!({"type": "function_call", "id": format!("fc_sim_{id}_{i}"),
            "call_id": call.id, "name": name, "arguments": call.arguments,
            "status": "completed"});
        if let Some(ns) = namespace {
            item["namespace"] = json!(ns);
        }
        items.push(item);
    }
    items
}

fn usage(c: &Completion) -> Value {
    json!({
        "input_tokens": c.usage.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": c.usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": c.usage.input_tokens + c.usage.output_tokens,
    })
}

/// A Responses API response body for a sim completion.
pub(super) fn response_body(c: &Completion, parsed: &Parsed, model: Option<&str>) -> Value {
    json!({
        "id": format!("resp_sim_{}", short_id(c)),
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": model_name(model),
        "output": output_items(c, parsed),
        "parallel_tool_calls": true,
        "usage": usage(c),
    })
}

/// The same answer as a Responses API event stream: `response.created`, `response.in_progress`,
/// per output item `response.output_item.added`, its deltas (`response.output_text.delta` and
/// `.done` inside a content part, or `response.function_call_arguments.delta` and `.done`) and
/// `response.output_item.done`, then `response.completed` with the usage.
pub(super) fn stream_body(c: &Completion, parsed: &Parsed, model: Option<&str>) -> String {
    let mut out = String::new();
    let mut seq = 0u64;
    let mut emit = |out: &mut String, mut data: Value| {
        data["sequence_number"] = json!(seq);
        seq += 1;
        let name = data["type"].as_str().unwrap_or("").to_owned();
        let _ = write!(out, "event: {name}\ndata: {data}\n\n");
    };
    let done = response_body(c, parsed, model);
    let mut start = done.clone();
    start["status"] = json!("in_progress");
    start["output"] = json!([]);
    start["usage"] = Value::Null;
    emit(
        &mut out,
        json!({"type": "response.created", "response": start}),
    );
    emit(
        &mut out,
        json!({"type": "response.in_progress", "response": start}),
    );
    for (index, item) in output_items(c, parsed).into_iter().enumerate() {
        let id = item["id"].clone();
        let mut added = item.clone();
        added["status"] = json!("in_progress");
        if item["type"] == "message" {
            added["content"] = json!([]);
            emit(
                &mut out,
                json!({"type": "response.output_item.added", "output_index": index, "item": added}),
            );
            let text = item["content"][0]["text"].clone();
            let part = json!({"type": "output_text", "text": "", "annotations": []});
            emit(
                &mut out,
                json!({"type": "response.content_part.added", "item_id": id,
                       "output_index": index, "content_index": 0, "part": part}),
            );
            emit(
                &mut out,
                json!({"type": "response.output_text.delta", "item_id": id,
                       "output_index": index, "content_index": 0, "delta": text}),
            );
            emit(
                &mut out,
                json!({"type": "response.output_text.done", "item_id": id,
                       "output_index": index, "content_index": 0, "text": text}),
            );
            emit(
                &mut out,
                json!({"type": "response.content_part.done", "item_id": id,
                       "output_index": index, "content_index": 0,
                       "part": item["content"][0]}),
            );
        } else {
            added["arguments"] = json!("");
            emit(
                &mut out,
                json!({"type": "response.output_item.added", "output_index": index, "item": added}),
            );
            let arguments = item["arguments"].clone();
            emit(
                &mut out,
                json!({"type": "response.function_call_arguments.delta", "item_id": id,
                       "output_index": index, "delta": arguments}),
            );
            emit(
                &mut out,
                json!({"type": "response.function_call_arguments.done", "item_id": id,
                       "output_index": index, "arguments": arguments}),
            );
        }
        emit(
            &mut out,
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        );
    }
    emit(
        &mut out,
        json!({"type": "response.completed", "response": done}),
    );
    out
}
