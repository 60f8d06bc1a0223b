//! The Messages API wire format on the client side: tool names, the mapping of our
//! OpenAI-shaped conversation onto Anthropic's alternating content-block messages, and a lenient
//! reading of the response.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{json, Value};

use crate::config::SearchVariant;
use crate::host::choice::TurnChoice;
use crate::host::lenient::estimated_tokens;
use crate::host::lenient::excerpt_text;
use crate::host::lenient::{as_count, excerpt, model_name};
use crate::host::names::clean;
use crate::host::tool_search::{
    Search, NATIVE_BM25_NAME, NATIVE_BM25_TYPE, NATIVE_REGEX_NAME, NATIVE_REGEX_TYPE,
};
use crate::host::{
    Completion, CompletionRequest, HostError, Message, Reasoning, ToolCallRequest, Usage,
};

/// MCP tool names ↔ tool names the API accepts (at most 128 characters).
pub(crate) type ToolNames = crate::host::names::WireNames<128>;

/// A `tool_use` id as the API accepts it (`^[a-zA-Z0-9_-]+$`); the same id maps to the same text
/// in the `tool_use` block and in its `tool_result`, so the pair stays matched.
fn wire_id(id: &str) -> String {
    match clean(id) {
        c if c.is_empty() => "call".to_owned(),
        c => c,
    }
}

/// What the request carries besides the conversation and the tools.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Settings<'a> {
    pub model: &'a str,
    pub max_tokens: u32,
    pub temperature: Option<f64>,
    /// Extended thinking's `budget_tokens` (off when `None`).
    pub thinking_budget: Option<u32>,
    pub stream: bool,
    /// This request's tool choice (see [`crate::host::choice`]).
    pub tool_choice: Option<TurnChoice<'a>>,
    /// Anthropic's tool-search tool sent with deferred tools (`tool_search = "native"`).
    pub tool_search: SearchVariant,
}

/// The Messages API request body. The system messages become `system`; the rest become
/// alternating `user` / `assistant` messages of content blocks. Titles are not sent (Anthropic
/// tools have no such field) and neither is the seed (the API takes none). The tools are
/// borrowed, so a turn copies no description or schema.
#[derive(Debug, Serialize)]
pub(crate) struct RequestBody<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    messages: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum WireTool<'a> {
    Client {
        name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<&'a str>,
        input_schema: Cow<'a, Value>,
        /// Found by the tool search before it is loaded.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        defer_loading: bool,
    },
    /// Anthropic's own tool-search tool: a type and a name, no schema.
    Search {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'static str,
    },
}

/// The tool-search tool of a variant, as the API takes it.
pub(crate) fn search_tool(variant: SearchVariant) -> (&'static str, &'static str) {
    match variant {
        SearchVariant::Bm25 => (NATIVE_BM25_TYPE, NATIVE_BM25_NAME),
        SearchVariant::Regex => (NATIVE_REGEX_TYPE, NATIVE_REGEX_NAME),
    }
}

/// Whether a request defers tools to the API's tool search (and so carries its tool and beta).
pub(crate) fn searches(req: &CompletionRequest) -> bool {
    req.tools.iter().any(|t| t.deferred)
}

pub(crate) fn request_body<'a>(
    settings: Settings<'a>,
    req: &'a CompletionRequest,
    names: &ToolNames,
) -> RequestBody<'a> {
    let mut tools: Vec<WireTool> = req
        .tools
        .iter()
        .map(|t| WireTool::Client {
            name: names.wire(&t.name),
            description: t.description.as_deref().filter(|d| !d.is_empty()),
            input_schema: input_schema(&t.input_schema),
            defer_loading: t.deferred,
        })
        .collect();
    if searches(req) {
        let (kind, name) = search_tool(settings.tool_search);
        tools.insert(0, WireTool::Search { kind, name });
    }
    RequestBody {
        model: settings.model,
        max_tokens: settings.max_tokens,
        system: Message::system_text(&req.messages),
        messages: messages(&req.messages, names),
        tools,
        temperature: settings.temperature,
        thinking: settings
            .thinking_budget
            .map(|budget| json!({"type": "enabled", "budget_tokens": budget})),
        tool_choice: settings.tool_choice.map(|c| tool_choice(c, names)),
        stream: settings.stream,
    }
}

/// `tool_choice` as the Messages API takes it: `{"type": "auto" | "any" | "none"}` or
/// `{"type": "tool", "name": …}`.
fn tool_choice(choice: TurnChoice<'_>, names: &ToolNames) -> Value {
    match choice {
        TurnChoice::Auto => json!({"type": "auto"}),
        TurnChoice::Required => json!({"type": "any"}),
        TurnChoice::None => json!({"type": "none"}),
        TurnChoice::Tool(name) => json!({"type": "tool", "name": names.wire(name)}),
    }
}

/// The API wants an object schema with `"type": "object"`; MCP tools have one, but a server
/// that leaves `type` out should not make every request fail.
fn input_schema(schema: &Value) -> Cow<'_, Value> {
    match schema {
        Value::Object(o) if o.contains_key("type") => Cow::Borrowed(schema),
        Value::Object(o) => {
            let mut o = o.clone();
            o.insert("type".into(), "object".into());
            Cow::Owned(Value::Object(o))
        }
        _ => Cow::Owned(json!({"type": "object", "properties": {}})),
    }
}

/// Our messages as Anthropic's: content blocks, tool results inside `user` messages, roles
/// alternating (consecutive messages of one role merged), no empty text blocks, no empty
/// messages.
fn messages(conversation: &[Message], names: &ToolNames) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in conversation {
        let (role, blocks) = match m {
            Message::System { .. } => continue,
            Message::User { content } => ("user", text_block(content).into_iter().collect()),
            Message::Assistant {
                content,
                tool_calls,
                reasoning,
                server_blocks,
            } => {
                let thinking = reasoning.iter().flat_map(thinking_blocks);
                let text = content.as_deref().and_then(text_block);
                // The tool search ran before the calls it made possible: its blocks go back,
                // unchanged, between the text and the calls.
                let server = server_blocks.iter().cloned();
                let calls = tool_calls.iter().map(|c| tool_use(c, names));
                let blocks = thinking.chain(text).chain(server).chain(calls).collect();
                ("assistant", blocks)
            }
            Message::Tool {
                tool_call_id,
                content,
            } => {
                let mut block =
                    json!({"type": "tool_result", "tool_use_id": wire_id(tool_call_id)});
                if !content.is_empty() {
                    block["content"] = content.clone().into();
                }
                ("user", vec![block])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, mut blocks)| {
            // The results of a turn's tool calls must open the user message that follows it.
            blocks.sort_by_key(|b| b["type"] != "tool_result");
            json!({"role": role, "content": blocks})
        })
        .collect()
}

/// A turn's reasoning as the API wants it back: a signed `thinking` block (an unsigned one, from
/// another provider, would be rejected, so it is not sent) and the `redacted_thinking` blocks.
fn thinking_blocks(reasoning: &Reasoning) -> Vec<Value> {
    let signed = reasoning.signature.as_ref().map(
        |signature| json!({"type": "thinking", "thinking": reasoning.text, "signature": signature}),
    );
    let redacted = reasoning
        .redacted
        .iter()
        .map(|data| json!({"type": "redacted_thinking", "data": data}));
    signed.into_iter().chain(redacted).collect()
}

/// A text block, or none for text the API would reject as empty.
fn text_block(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| json!({"type": "text", "text": text}))
}

/// A tool call as a `tool_use` block: `input` must be an object, so arguments that are not a
/// JSON object (the model's mistake, already recorded as such) are sent as `{}`.
fn tool_use(call: &ToolCallRequest, names: &ToolNames) -> Value {
    let input = match serde_json::from_str::<Value>(&call.arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    };
    json!({"type": "tool_use", "id": wire_id(&call.id), "name": names.wire(&call.name), "input": input})
}

/// Reads a Messages API response leniently: unknown block types are skipped, `usage` may be
/// partial or missing, `content` may be a plain string. An error body is a `BadResponse`
/// carrying the provider's message, and so is a `stop_reason` of `tool_use` without a
/// `tool_use` block: read as a plain answer, it would count as the model declining every tool.
pub(crate) fn parse_response(
    body: &Value,
    names: &ToolNames,
    fallback_model: &str,
) -> Result<Completion, HostError> {
    if let Some(message) = error_message(body) {
        return Err(HostError::BadResponse(format!("error body: {message}")));
    }
    let blocks: Vec<Value> = match body.get("content") {
        Some(Value::Array(blocks)) => blocks.clone(),
        Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
        Some(Value::Null) | None if body.get("type").and_then(Value::as_str) == Some("message") => {
            Vec::new()
        }
        _ => {
            return Err(HostError::BadResponse(format!(
                "no `content` in {}",
                excerpt(body)
            )))
        }
    };
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    let mut reasoning = Reasoning::default();
    let mut server_blocks = Vec::new();
    let mut searches = Vec::new();
    let field = |block: &Value, key: &str| {
        block
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    for (i, block) in blocks.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(&field(block, "text")),
            Some("tool_use") => tool_calls.push(tool_call(i, block, names)?),
            Some("thinking") => {
                reasoning.text.push_str(&field(block, "thinking"));
                reasoning.signature = block
                    .get("signature")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            Some("redacted_thinking") => reasoning.redacted.push(field(block, "data")),
            Some("server_tool_use") => server_blocks.push(block.clone()),
            Some("tool_search_tool_result") => {
                searches.push(search_of(block, &blocks, names));
                server_blocks.push(block.clone());
            }
            _ => {}
        }
    }
    let reasoning = (reasoning != Reasoning::default()).then_some(reasoning);
    let stop_reason = body.get("stop_reason").and_then(Value::as_str);
    if stop_reason == Some("tool_use") && tool_calls.is_empty() {
        return Err(HostError::BadResponse(format!(
            "`stop_reason` is `tool_use` but no `tool_use` block was read: {}",
            excerpt(body)
        )));
    }
    let usage = body.get("usage").unwrap_or(&Value::Null);
    let count = |key: &str| as_count(usage.get(key)).unwrap_or(0);
    Ok(Completion {
        content: Some(text).filter(|t| !t.is_empty()),
        tool_calls,
        usage: Usage {
            input_tokens: count("input_tokens"),
            output_tokens: count("output_tokens"),
            cache_read_tokens: count("cache_read_input_tokens"),
            cache_write_tokens: count("cache_creation_input_tokens"),
            // The API counts thinking in `output_tokens` without a count of its own.
            reasoning_tokens: reasoning.as_ref().map_or(0, |r| estimated_tokens(&r.text)),
        },
        model: model_name(body, fallback_model),
        reasoning,
        server_blocks,
        searches,
        truncated: stop_reason == Some("max_tokens"),
        ..Default::default()
    })
}

/// A `tool_search_tool_result` block as the search it reports: the query (or pattern) of its
/// `server_tool_use` block, and the tools its `tool_reference`s name, in order (an error result
/// returned none).
fn search_of(result: &Value, blocks: &[Value], names: &ToolNames) -> Search {
    let id = result.get("tool_use_id").and_then(Value::as_str);
    let input = (blocks.iter())
        .find(|b| b["type"] == "server_tool_use" && b.get("id").and_then(Value::as_str) == id)
        .map(|b| &b["input"]);
    let query = input
        .and_then(|i| i.get("query").or_else(|| i.get("pattern")))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let references = result
        .pointer("/content/tool_references")
        .and_then(Value::as_array);
    let ranked: Vec<String> = (references.into_iter().flatten())
        .filter_map(|r| r.get("tool_name").and_then(Value::as_str))
        .map(|name| names.original(name))
        .collect();
    Search {
        query: query.to_owned(),
        returned: ranked.len(),
        ranked,
    }
}

fn tool_call(i: usize, block: &Value, names: &ToolNames) -> Result<ToolCallRequest, HostError> {
    let name = block.get("name").and_then(Value::as_str).ok_or_else(|| {
        HostError::BadResponse(format!("tool_use block without a name: {}", excerpt(block)))
    })?;
    let arguments = match block.get("input") {
        None | Some(Value::Null) => "{}".to_owned(),
        // Some compatible servers send the input as JSON text: pass it on as the model wrote it.
        Some(Value::String(s)) => s.clone(),
        Some(input) => input.to_string(),
    };
    let id = block
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map_or_else(|| format!("toolu_{i}"), str::to_owned);
    Ok(ToolCallRequest {
        id,
        name: names.original(name),
        arguments,
    })
}

/// `TYPE: MESSAGE` of an error body (`{"type": "error", "error": {"type", "message"}}`), also
/// when only the `error` field is there, or it is a bare string; `None` for any other body.
pub(crate) fn error_message(body: &Value) -> Option<String> {
    let error = body.get("error").filter(|e| !e.is_null());
    if error.is_none() && body.get("type").and_then(Value::as_str) != Some("error") {
        return None;
    }
    let error = error.unwrap_or(&Value::Null);
    if let Some(text) = error.as_str() {
        return Some(excerpt_text(text));
    }
    let field = |key: &str| error.get(key).and_then(Value::as_str);
    Some(match (field("type"), field("message")) {
        (Some(kind), Some(message)) => excerpt_text(&format!("{kind}: {message}")),
        (None, Some(message)) => excerpt_text(message),
        (Some(kind), None) => kind.to_owned(),
        (None, None) => excerpt(body),
    })
}
