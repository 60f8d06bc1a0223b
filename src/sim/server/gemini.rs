//! The Gemini API on the server side: reading what clients such as Gemini CLI send to
//! `POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent` (`contents` of
//! `user` / `model` parts, `functionDeclarations`, `systemInstruction`), and writing the answer
//! as one `GenerateContentResponse` or as its SSE chunks; `:countTokens` counts.
//!
//! Gemini CLI names an MCP server's tools `mcp_<server>_<tool>`; the sim sees them as
//! `mcp__<server>__<tool>` (the naming it reads the bare name from, split as Gemini CLI itself
//! splits: the server name runs to the first `_`), and its call goes back under the name
//! offered.
//!
//! The sim reads every system text as the server's rules, so Gemini CLI's own ~30 KB
//! `systemInstruction` and the `<session_context>` block it puts before the user's request are
//! left out of what it decides from (still counted in the usage: they were sent), except the
//! server instructions inside that block (`---[start of server instructions]---`), which become
//! the system text. Tool results lose Gemini CLI's `<untrusted_context>` wrapper, and an MCP
//! tool error is read as the server's own error text.

use super::BadRequest;
use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::host::{Completion, CompletionRequest, Message, ToolCallRequest, ToolSpec};

const INSTRUCTIONS_START: &str = "---[start of server instructions]---";
const INSTRUCTIONS_END: &str = "---[end of server instructions]---";

/// A request read for the sim, with what it takes to answer in the client's naming.
pub(super) struct Parsed {
    pub request: CompletionRequest,
    /// The sim's name for each renamed tool, and the name the client offered.
    pub renamed: Vec<(String, String)>,
    /// What the sim is not shown (the app's system prompt and context), still counted.
    pub left_out: Vec<Message>,
}

impl Parsed {
    /// The input tokens of everything the client sent, what the sim read and what it did not.
    pub fn input_tokens(&self) -> u64 {
        let mut all = self.request.messages.clone();
        all.extend(self.left_out.iter().cloned());
        crate::sim::count_input_tokens(&all, &self.request.tools)
    }

    /// The name a call to the sim's tool `flat` goes back as.
    fn client_name<'a>(&'a self, flat: &'a str) -> &'a str {
        self.renamed
            .iter()
            .find(|(f, _)| f == flat)
            .map_or(flat, |(_, offered)| offered.as_str())
    }
}

/// The sim's name for a client's function name: `mcp_tracker_get_issue` →
/// `mcp__tracker__get_issue`; other names as they are.
fn sim_name(name: &str) -> String {
    match name
        .strip_prefix("mcp_")
        .and_then(|rest| rest.split_once('_'))
    {
        Some((server, tool)) if !server.is_empty() && !tool.is_empty() => {
            format!("mcp__{server}__{tool}")
        }
        _ => name.to_owned(),
    }
}

/// Reads a `generateContent` request (or a `countTokens` one, whose contents may sit under
/// `generateContentRequest`). Unknown fields (`generationConfig`, `toolConfig`,
/// `safetySettings`, …) and parts (`thought`, `inlineData`, …) are ignored. `Err` says what is
/// wrong.
pub(super) fn parse_request(body: &Value, seed: u64) -> Result<Parsed, BadRequest> {
    let body = body.get("generateContentRequest").unwrap_or(body);
    let mut messages = Vec::new();
    let mut left_out = Vec::new();
    match body.get("systemInstruction") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => left_out.push(Message::System { content: s.clone() }),
        Some(content) => left_out.push(Message::System {
            content: part_texts(content.get("parts")).join("\n\n"),
        }),
    }
    let contents = match body.get("contents") {
        Some(Value::Array(c)) => c.as_slice(),
        None | Some(Value::Null) => &[],
        Some(_) => return Err(BadRequest::from("`contents` must be an array")),
    };
    for (i, content) in contents.iter().enumerate() {
        read_content(content, &mut messages, &mut left_out)
            .map_err(|e| format!("contents[{i}]: {e}"))?;
    }
    let mut tools = Vec::new();
    let mut renamed = Vec::new();
    match body.get("tools") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            let declarations = list
                .iter()
                .filter_map(|t| t.get("functionDeclarations")?.as_array())
                .flatten();
            for d in declarations {
                let Some(name) = d.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let flat = sim_name(name);
                if flat != name {
                    renamed.push((flat.clone(), name.to_owned()));
                }
                let schema = d
                    .get("parametersJsonSchema")
                    .or_else(|| d.get("parameters"))
                    .filter(|s| !s.is_null())
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object"}));
                tools.push(ToolSpec {
                    name: flat,
                    title: None,
                    description: d
                        .get("description")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    input_schema: schema,
                    deferred: false,
                });
            }
        }
        Some(_) => return Err(BadRequest::from("`tools` must be an array")),
    }
    Ok(Parsed {
        request: CompletionRequest {
            messages,
            tools: tools.into(),
            seed,
            ..Default::default()
        },
        renamed,
        left_out,
    })
}

/// The `text` of each part that has one (thoughts excluded).
fn part_texts(parts: Option<&Value>) -> Vec<String> {
    parts
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

fn read_content(
    content: &Value,
    out: &mut Vec<Message>,
    left_out: &mut Vec<Message>,
) -> Result<(), BadRequest> {
    let parts = match content.get("parts") {
        Some(Value::Array(parts)) => parts.as_slice(),
        None | Some(Value::Null) => &[],
        Some(_) => return Err(BadRequest::from("`parts` must be an array")),
    };
    match content
        .get("role")
        .and_then(Value::as_str)
        .unwrap_or("user")
    {
        "model" => {
            let mut text = String::new();
            let mut tool_calls = Vec::new();
            for part in parts {
                if part.get("thought").and_then(Value::as_bool) == Some(true) {
                    continue;
                }
                if let Some(t) = part.get("text").and_then(Value::as_str) {
                    text.push_str(t);
                }
                if let Some(call) = part.get("functionCall") {
                    let name = call
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or("a functionCall without a name")?;
                    tool_calls.push(ToolCallRequest {
                        id: call
                            .get("id")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        name: sim_name(name),
                        arguments: match call.get("args") {
                            None | Some(Value::Null) => "{}".to_owned(),
                            Some(args) => args.to_string(),
                        },
                    });
                }
            }
            out.push(Message::Assistant {
                content: Some(text).filter(|t| !t.is_empty()),
                tool_calls,
                reasoning: None,
                server_blocks: Vec::new(),
            });
        }
        "user" => {
            let mut user = Vec::new();
            for part in parts {
                if let Some(response) = part.get("functionResponse") {
                    out.push(function_response(response));
                } else if let Some(text) = part.get("text").and_then(Value::as_str) {
                    if is_context_block(text) {
                        out.extend(server_instructions(text));
                        left_out.push(Message::System {
                            content: text.to_owned(),
                        });
                    } else if !text.trim().is_empty() {
                        user.push(text.to_owned());
                    }
                }
            }
            if !user.is_empty() {
                out.push(Message::User {
                    content: user.join("\n\n"),
                });
            }
        }
        other => return Err(BadRequest(format!("unknown role `{other}`"))),
    }
    Ok(())
}

/// Whether a user text is wholly one `<tag>…</tag>` block an app adds (`<session_context>`),
/// not the user's own words.
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

/// The server instructions Gemini CLI quotes inside its context block, as system text.
fn server_instructions(text: &str) -> Vec<Message> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(INSTRUCTIONS_START) {
        let inner = &rest[start + INSTRUCTIONS_START.len()..];
        let (instructions, after) = match inner.find(INSTRUCTIONS_END) {
            Some(end) => (&inner[..end], &inner[end + INSTRUCTIONS_END.len()..]),
            None => (inner, ""),
        };
        if !instructions.trim().is_empty() {
            found.push(Message::System {
                content: instructions.trim().to_owned(),
            });
        }
        rest = after;
    }
    found
}

/// A `functionResponse` as the tool's result: its `output` without the `<untrusted_context>`
/// wrapper, or its `error` (for an MCP tool error, the server's own text), marked as an error
/// when it does not already read as one (the sim reads the text, as the chat format has no
/// error flag).
fn function_response(response: &Value) -> Message {
    let id = response
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let body = response.get("response").unwrap_or(&Value::Null);
    let content = if let Some(error) = body.get("error") {
        let text = match error {
            Value::String(s) => {
                crate::host::wire::gemini_tool_error_text(s).unwrap_or_else(|| s.clone())
            }
            other => other.to_string(),
        };
        if crate::sim::looks_like_error(&text) {
            text
        } else {
            format!("Error: {text}")
        }
    } else {
        match body.get("output").or_else(|| body.get("content")) {
            Some(Value::String(s)) => unwrap_untrusted(s).to_owned(),
            None | Some(Value::Null) => body.to_string(),
            Some(v) => v.to_string(),
        }
    };
    Message::Tool {
        tool_call_id: id,
        content,
    }
}

/// The text inside Gemini CLI's `<untrusted_context>…</untrusted_context>` wrapper(s).
fn unwrap_untrusted(text: &str) -> &str {
    const OPEN: &str = "<untrusted_context>";
    const CLOSE: &str = "</untrusted_context>";
    let t = text.trim();
    match t.strip_prefix(OPEN).and_then(|r| r.strip_suffix(CLOSE)) {
        Some(inner) if !inner.contains(OPEN) => inner.trim_matches('\n'),
        _ => text,
    }
}

/// The schema of the JSON a request asks for instead of free text (`generationConfig`
/// `responseMimeType: "application/json"` with `responseJsonSchema` or `responseSchema`), as
/// Gemini CLI's model router does.
pub(super) fn json_schema(body: &Value) -> Option<&Value> {
    let config = body.get("generationConfig")?;
    if config.get("responseMimeType").and_then(Value::as_str) != Some("application/json") {
        return None;
    }
    config
        .get("responseJsonSchema")
        .or_else(|| config.get("responseSchema"))
}

/// The plainest value a schema admits: an object with every property, the first of an enum,
/// the minimum of a number (else 1), an empty string or list, `false`. The sim has no
/// opinion on such questions; it only has to answer in the shape asked.
pub(super) fn schema_instance(schema: &Value) -> Value {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    let kind = schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("object")
        .to_ascii_lowercase();
    match kind.as_str() {
        "object" => {
            let props = schema.get("properties").and_then(Value::as_object);
            Value::Object(
                props
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), schema_instance(v)))
                    .collect(),
            )
        }
        "integer" | "number" => schema.get("minimum").cloned().unwrap_or_else(|| json!(1)),
        "boolean" => json!(false),
        "array" => json!([]),
        _ => json!(""),
    }
}

/// The model name the answer carries: the one asked for, else `sim`.
fn model_name(requested: &str) -> &str {
    if requested.is_empty() {
        "sim"
    } else {
        requested
    }
}

/// The parts of a completion: its text, then one `functionCall` per call (in the client's
/// naming; `args` must be an object: arguments that are not one go as a string, which the
/// client rejects as it would a real model's).
fn parts(c: &Completion, parsed: &Parsed) -> Vec<Value> {
    let mut parts = Vec::new();
    if let Some(text) = c.content.as_deref().filter(|t| !t.is_empty()) {
        parts.push(json!({"text": text}));
    }
    for call in &c.tool_calls {
        let args = match serde_json::from_str::<Value>(&call.arguments) {
            Ok(v @ Value::Object(_)) => v,
            _ => Value::String(call.arguments.clone()),
        };
        parts.push(json!({"functionCall": {
            "name": parsed.client_name(&call.name), "args": args}}));
    }
    parts
}

fn usage(c: &Completion) -> Value {
    json!({
        "promptTokenCount": c.usage.input_tokens,
        "candidatesTokenCount": c.usage.output_tokens,
        "totalTokenCount": c.usage.input_tokens + c.usage.output_tokens,
    })
}

fn response_id(c: &Completion) -> String {
    c.tool_calls.first().map_or_else(
        || format!("sim{:016x}", c.usage.input_tokens),
        |t| format!("sim{}", t.id.strip_prefix("call_").unwrap_or(&t.id)),
    )
}

/// A `GenerateContentResponse` for a sim completion.
pub(super) fn response_body(c: &Completion, parsed: &Parsed, model: &str) -> Value {
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": parts(c, parsed)},
            "finishReason": "STOP",
            "index": 0,
        }],
        "usageMetadata": usage(c),
        "modelVersion": model_name(model),
        "responseId": response_id(c),
    })
}

/// The same answer as `:streamGenerateContent?alt=sse` chunks: the text first (when there is
/// text and a call), then a last chunk with the calls (or the text), the finish reason and the
/// usage.
pub(super) fn stream_body(c: &Completion, parsed: &Parsed, model: &str) -> String {
    let mut out = String::new();
    let whole = response_body(c, parsed, model);
    let all = parts(c, parsed);
    let split = all.len() > 1 && all[0].get("text").is_some();
    if split {
        let mut first = whole.clone();
        first["candidates"][0]["content"]["parts"] = json!([all[0]]);
        if let Some(candidate) = first["candidates"][0].as_object_mut() {
            candidate.remove("finishReason");
        }
        first["usageMetadata"] = json!({"promptTokenCount": c.usage.input_tokens,
            "totalTokenCount": c.usage.input_tokens});
        let _ = write!(out, "data: {first}\r\n\r\n");
        let mut last = whole;
        last["candidates"][0]["content"]["parts"] = json!(all[1..]);
        let _ = write!(out, "data: {last}\r\n\r\n");
    } else {
        let _ = write!(out, "data: {whole}\r\n\r\n");
    }
    out
}

/// A Gemini API error body (`{"error": {"code", "message", "status"}}`).
pub(super) fn error_body(code: u16, message: &str) -> Value {
    let status = match code {
        400 => "INVALID_ARGUMENT",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        _ => "INTERNAL",
    };
    json!({"error": {"code": code, "message": message, "status": status}})
}
