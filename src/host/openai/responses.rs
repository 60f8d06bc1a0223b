//! The Responses API wire format on the client side (`openai-responses:MODEL`): the conversation
//! as `input` items (messages, `function_call`s and their `function_call_output`s), function
//! tools, and a lenient reading of the response object.

use serde::Serialize;
use serde_json::{json, Value};

use crate::host::lenient::{as_count, estimated_tokens, excerpt, model_name};
use crate::host::{
    Completion, CompletionRequest, HostError, Message, Reasoning, ToolCallRequest, Usage,
};

use super::wire::ToolNames;
use crate::host::choice::TurnChoice;

/// The request body, borrowing the conversation and the tools. Stateless: every turn sends the
/// whole conversation (`store: false`, no `previous_response_id`).
#[derive(Debug, Serialize)]
pub(crate) struct RequestBody<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<String>,
    input: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    store: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
}

impl RequestBody<'_> {
    pub(crate) fn has_tools(&self) -> bool {
        !self.tools.is_empty()
    }
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    parameters: &'a Value,
    strict: bool,
}

/// The body of one turn's request (the host's settings are set on it afterwards). The system
/// messages become `instructions`.
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
            name: names.wire(&t.name),
            description: t.description.as_deref(),
            parameters: &t.input_schema,
            strict: false,
        })
        .collect();
    RequestBody {
        model,
        instructions: Message::system_text(&req.messages),
        input: input_items(&req.messages, names),
        tools,
        store: false,
        temperature: None,
        max_output_tokens: None,
        parallel_tool_calls: None,
        tool_choice: None,
        stream: false,
    }
}

/// `tool_choice` as the Responses API takes it: a word, or `{"type": "function", "name": …}`.
pub(crate) fn tool_choice(choice: TurnChoice<'_>, names: &ToolNames) -> Value {
    match choice {
        TurnChoice::Tool(name) => json!({"type": "function", "name": names.wire(name)}),
        word => super::wire::tool_choice(word, names),
    }
}

/// The conversation (system messages aside) as input items.
fn input_items(messages: &[Message], names: &ToolNames) -> Vec<Value> {
    let mut items = Vec::new();
    for m in messages {
        match m {
            Message::System { .. } => {}
            Message::User { content } => {
                items.push(json!({"type": "message", "role": "user", "content": content}));
            }
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                if let Some(text) = content.as_deref().filter(|t| !t.is_empty()) {
                    items.push(json!({"type": "message", "role": "assistant", "content": text}));
                }
                for call in tool_calls {
                    items.push(json!({"type": "function_call", "call_id": call.id,
                        "name": names.wire(&call.name), "arguments": call.arguments}));
                }
            }
            Message::Tool {
                tool_call_id,
                content,
            } => {
                items.push(
                    json!({"type": "function_call_output", "call_id": tool_call_id,
                    "output": content}),
                );
            }
        }
    }
    items
}

/// Reads a response object leniently: unknown item types are skipped, `usage` may be partial.
/// `status: "incomplete"` for `max_output_tokens` marks the answer `truncated`; a `failed`
/// response or an error body is a `BadResponse` with the provider's message.
pub(crate) fn parse_response(
    body: &Value,
    names: &ToolNames,
    fallback_model: &str,
) -> Result<Completion, HostError> {
    if let Some(error) = body.get("error").filter(|e| !e.is_null()) {
        let message = error.get("message").and_then(Value::as_str);
        return Err(HostError::BadResponse(format!(
            "error body: {}",
            message.map_or_else(|| excerpt(error), str::to_owned)
        )));
    }
    let status = body.get("status").and_then(Value::as_str);
    if status == Some("failed") {
        return Err(HostError::BadResponse(format!(
            "the response failed: {}",
            excerpt(body)
        )));
    }
    let output = body
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| HostError::BadResponse(format!("no `output` in {}", excerpt(body))))?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    let mut reasoning = String::new();
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => text.push_str(&parts_text(item.get("content"), "output_text")),
            Some("function_call") => tool_calls.push(tool_call(tool_calls.len(), item, names)?),
            Some("reasoning") => {
                let summary = parts_text(item.get("summary"), "summary_text");
                let full = parts_text(item.get("content"), "reasoning_text");
                reasoning.push_str(if full.is_empty() { &summary } else { &full });
            }
            _ => {}
        }
    }
    let usage = body.get("usage").unwrap_or(&Value::Null);
    let count = |key: &str| as_count(usage.get(key)).unwrap_or(0);
    let reported = usage
        .get("output_tokens_details")
        .and_then(|d| as_count(d.get("reasoning_tokens")));
    let reason = body
        .get("incomplete_details")
        .and_then(|d| d.get("reason"))
        .and_then(Value::as_str);
    let reasoning = (!reasoning.is_empty()).then(|| Reasoning {
        text: reasoning,
        ..Default::default()
    });
    Ok(Completion {
        content: Some(text).filter(|t| !t.is_empty()),
        tool_calls,
        usage: Usage {
            input_tokens: count("input_tokens"),
            output_tokens: count("output_tokens"),
            reasoning_tokens: reported
                .or_else(|| reasoning.as_ref().map(|r| estimated_tokens(&r.text)))
                .unwrap_or(0),
            ..Usage::default()
        },
        model: model_name(body, fallback_model),
        reasoning,
        truncated: status == Some("incomplete") && reason == Some("max_output_tokens"),
        ..Default::default()
    })
}

/// The text of a content (or summary) array: its parts of type `kind` (and `refusal`s, which
/// are the model's answer too), joined.
fn parts_text(parts: Option<&Value>, kind: &str) -> String {
    match parts {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p.get("type").and_then(Value::as_str) {
                Some(t) if t == kind || t == "text" => p.get("text")?.as_str(),
                Some("refusal") => p.get("refusal")?.as_str(),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

fn tool_call(i: usize, item: &Value, names: &ToolNames) -> Result<ToolCallRequest, HostError> {
    let name = item.get("name").and_then(Value::as_str).ok_or_else(|| {
        HostError::BadResponse(format!("function_call without a name: {}", excerpt(item)))
    })?;
    let arguments = match item.get("arguments") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => "{}".to_owned(),
        Some(other) => other.to_string(),
    };
    let id = ["call_id", "id"]
        .iter()
        .find_map(|k| item.get(*k).and_then(Value::as_str))
        .filter(|id| !id.is_empty())
        .map_or_else(|| format!("call_{i}"), str::to_owned);
    Ok(ToolCallRequest {
        id,
        name: names.original(name),
        arguments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::ToolSpec;

    #[test]
    fn the_conversation_goes_as_items_and_the_output_is_read_back() {
        let tools: std::sync::Arc<[ToolSpec]> = vec![ToolSpec {
            name: "get_issue".into(),
            title: None,
            description: Some("Get an issue.".into()),
            input_schema: json!({"type": "object"}),
            deferred: false,
        }]
        .into();
        let names = ToolNames::new(tools.iter().map(|t| t.name.as_str()));
        let call = ToolCallRequest {
            id: "c1".into(),
            name: "get_issue".into(),
            arguments: "{\"id\":3}".into(),
        };
        let req = CompletionRequest {
            messages: vec![
                Message::System {
                    content: "Be brief.".into(),
                },
                Message::User {
                    content: "Show issue 3".into(),
                },
                Message::Assistant {
                    content: Some("Looking.".into()),
                    tool_calls: vec![call],
                    reasoning: None,
                    server_blocks: Vec::new(),
                },
                Message::Tool {
                    tool_call_id: "c1".into(),
                    content: "Issue 3: crash".into(),
                },
            ],
            tools,
            ..Default::default()
        };
        let body = serde_json::to_value(request_body("m", &req, &names)).unwrap();
        assert_eq!(body["instructions"], "Be brief.");
        assert_eq!(body["store"], false);
        let kinds: Vec<&str> = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "message",
                "message",
                "function_call",
                "function_call_output"
            ]
        );
        assert_eq!(body["input"][3]["call_id"], "c1");
        assert_eq!(body["tools"][0]["name"], "get_issue");

        let answer = json!({"status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"}, "model": "m-2",
            "output": [
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Plan"}]},
                {"type": "message", "content": [{"type": "output_text", "text": "Issue 3 is"}]},
                {"type": "function_call", "call_id": "c2", "name": "get_issue",
                 "arguments": "{\"id\":4}"}],
            "usage": {"input_tokens": 50, "output_tokens": 64,
                      "output_tokens_details": {"reasoning_tokens": 20}}});
        let c = parse_response(&answer, &names, "m").unwrap();
        assert!(c.truncated);
        assert_eq!(c.content.as_deref(), Some("Issue 3 is"));
        assert_eq!(c.tool_calls[0].id, "c2");
        assert_eq!(c.reasoning.unwrap().text, "Plan");
        assert_eq!(
            (
                c.usage.input_tokens,
                c.usage.output_tokens,
                c.usage.reasoning_tokens
            ),
            (50, 64, 20)
        );
        assert_eq!(c.model, "m-2");
        let failed = json!({"status": "failed", "error": {"message": "server_error"}});
        assert!(parse_response(&failed, &names, "m").is_err());
    }
}
