//! The chat-completions wire format on the client side: function names, the request body, and a
//! lenient reading of the response (real OpenAI-compatible servers bend the format).

use serde::Serialize;
use serde_json::Value;

use crate::host::choice::TurnChoice;
use crate::host::lenient::{as_count, estimated_tokens, excerpt, model_name};
use crate::host::{Completion, CompletionRequest, HostError, Message, ToolCallRequest, Usage};

/// MCP tool names ↔ function names the API accepts (at most 64 characters).
pub(crate) type ToolNames = crate::host::names::WireNames<64>;

/// The chat-completions request body, borrowing the conversation and the tools: it is
/// serialized straight to bytes, so a turn copies no message, description or schema. Titles are
/// not sent: function tools have no such field.
#[derive(Debug, Serialize)]
pub(crate) struct RequestBody<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    /// Bits reinterpreted: int64 on the wire, the same u64 back at a server that reads it so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// The same cap under the name OpenAI's own endpoint takes (its reasoning models reject
    /// `max_tokens`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    /// `{"include_usage": true}` with `stream`: the last chunk then carries the usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<Value>,
}

impl RequestBody<'_> {
    pub(crate) fn has_tools(&self) -> bool {
        !self.tools.is_empty()
    }
}

#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Debug, Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Debug, Serialize)]
struct WireFunctionCall<'a> {
    name: String,
    arguments: &'a str,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Debug, Serialize)]
struct WireFunction<'a> {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    parameters: &'a Value,
}

/// The body of one turn's request (the host's settings are set on it afterwards).
pub(crate) fn request_body<'a>(
    model: &'a str,
    req: &'a CompletionRequest,
    names: &ToolNames,
) -> RequestBody<'a> {
    let tools = req
        .tools
        .iter()
        .map(|t| WireTool {
            kind: "function",
            function: WireFunction {
                name: names.wire(&t.name),
                description: t.description.as_deref(),
                parameters: &t.input_schema,
            },
        })
        .collect();
    RequestBody {
        model,
        messages: req.messages.iter().map(|m| message(m, names)).collect(),
        seed: Some(req.seed as i64),
        tools,
        temperature: None,
        max_tokens: None,
        max_completion_tokens: None,
        parallel_tool_calls: None,
        tool_choice: None,
        stream: false,
        stream_options: None,
    }
}

/// `tool_choice` as chat completions take it: a word, or `{"type": "function", "function":
/// {"name": …}}`.
pub(crate) fn tool_choice(choice: TurnChoice<'_>, names: &ToolNames) -> Value {
    match choice {
        TurnChoice::Auto => "auto".into(),
        TurnChoice::Required => "required".into(),
        TurnChoice::None => "none".into(),
        TurnChoice::Tool(name) => {
            serde_json::json!({"type": "function", "function": {"name": names.wire(name)}})
        }
    }
}

fn message<'a>(m: &'a Message, names: &ToolNames) -> WireMessage<'a> {
    match m {
        Message::System { content } => WireMessage::System { content },
        Message::User { content } => WireMessage::User { content },
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => WireMessage::Assistant {
            content: content.as_deref(),
            tool_calls: tool_calls
                .iter()
                .map(|c| WireCall {
                    id: &c.id,
                    kind: "function",
                    function: WireFunctionCall {
                        name: names.wire(&c.name),
                        arguments: &c.arguments,
                    },
                })
                .collect(),
        },
        Message::Tool {
            tool_call_id,
            content,
        } => WireMessage::Tool {
            tool_call_id,
            content,
        },
    }
}

/// Reads a chat-completions response leniently: tool calls without `type`, `arguments` as an
/// object, any `finish_reason`, `usage` partial or missing. `finish_reason: "length"` marks the
/// answer `truncated`; reasoning text comes from `reasoning_content` (llama.cpp, vLLM) or
/// `reasoning` (Ollama, OpenRouter).
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
    let reasoning = ["reasoning_content", "reasoning"]
        .iter()
        .find_map(|k| text_content(message.get(*k)))
        .filter(|t| !t.is_empty());
    let usage = body.get("usage").unwrap_or(&Value::Null);
    let count = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| as_count(usage.get(*k)))
            .unwrap_or(0)
    };
    let reported_reasoning = ["completion_tokens_details", "output_tokens_details"]
        .iter()
        .find_map(|k| as_count(usage.get(*k)?.get("reasoning_tokens")));
    let reasoning_tokens = reported_reasoning
        .or_else(|| reasoning.as_deref().map(estimated_tokens))
        .unwrap_or(0);
    Ok(Completion {
        content,
        tool_calls,
        usage: Usage {
            input_tokens: count(&["prompt_tokens", "input_tokens"]),
            output_tokens: count(&["completion_tokens", "output_tokens"]),
            reasoning_tokens,
            ..Usage::default()
        },
        model: model_name(body, fallback_model),
        reasoning: reasoning.map(|text| crate::host::Reasoning {
            text,
            ..Default::default()
        }),
        truncated: choice.get("finish_reason").and_then(Value::as_str) == Some("length"),
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
