//! What a host shows the model besides the server's tools, answered by mcpeval from the server:
//! the calls of the host's resource tools, a task's attachments, and the server prompt a task
//! starts from. Each request is recorded as a host call (`resources/list`, `resource:URI`,
//! `prompt:NAME`), kept apart from the server's tool calls.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::record::ToolCallRecord;
use super::tools::HostTool;
use crate::host::{Message, ToolCallRequest};
use crate::mcp::{CallOutcome, McpConnection, McpError};
use crate::suite::ServerPrompt;

/// How a host call is named in the records: a read as `resource:URI`, a prompt as
/// `prompt:NAME` (as call tasks name theirs), a listing as `resources/list`.
pub const LIST_LABEL: &str = "resources/list";

/// The conversation's first messages: the server prompt's (or the task's prompt), with the
/// attached resources put before the first user message's text; and the host calls they took.
#[derive(Debug, Default)]
pub struct Opening {
    pub messages: Vec<Message>,
    pub records: Vec<ToolCallRecord>,
    /// Why the trial cannot start as the task says (its server prompt was refused): the trial
    /// fails with this, as a user whose slash command errs gets nothing.
    pub failure: Option<String>,
}

/// Builds the opening of a trial: `prompt` as the user's message unless the task starts from
/// `server_prompt`, and `attach`'s resources read and put into the first user message.
pub async fn opening(
    prompt: &str,
    attach: &[String],
    server_prompt: Option<&ServerPrompt>,
    server: &McpConnection,
    timeout: Duration,
) -> Result<Opening, McpError> {
    let mut out = Opening::default();
    match server_prompt {
        None => out.messages.push(Message::User {
            content: prompt.to_owned(),
        }),
        Some(asked) => {
            let started = Instant::now();
            let outcome = server.get_prompt(&asked.name, &asked.args, timeout).await?;
            let arguments = serde_json::to_string(&asked.args).unwrap_or_default();
            let label = format!("prompt:{}", asked.name);
            let mut record = record(label, arguments, started, &outcome);
            match prompt_messages(&outcome) {
                Ok(messages) => {
                    record.result = super::agent::recorded_result(&outcome_text(&outcome));
                    out.messages = messages;
                }
                Err(why) => {
                    out.failure = Some(format!("server prompt `{}`: {why}", asked.name));
                    record.result = why.to_string();
                }
            }
            out.records.push(record);
        }
    }
    let mut attached = Vec::new();
    for uri in attach {
        let started = Instant::now();
        let outcome = server.read_resource(uri).await?;
        let arguments = serde_json::json!({"uri": uri, "attached": true}).to_string();
        let mut record = record(format!("resource:{uri}"), arguments, started, &outcome);
        let text = resource_text(&outcome);
        record.result = super::agent::recorded_result(&text);
        if !record.is_error {
            attached.push(format!("<attachment uri=\"{uri}\">\n{text}\n</attachment>"));
        }
        out.records.push(record);
    }
    if !attached.is_empty() {
        attach_to_first_user_message(&mut out.messages, &attached.join("\n\n"));
    }
    Ok(out)
}

/// Puts `attached` before the first user message's text (a user message of its own when the
/// opening has none).
fn attach_to_first_user_message(messages: &mut Vec<Message>, attached: &str) {
    let first = messages.iter_mut().find_map(|m| match m {
        Message::User { content } => Some(content),
        _ => None,
    });
    match first {
        Some(content) => *content = format!("{attached}\n\n{content}"),
        None => messages.insert(
            0,
            Message::User {
                content: attached.to_owned(),
            },
        ),
    }
}

/// Answers a call of one of the host's resource tools from the server; `Err` only when the
/// server itself failed (an infrastructure error, as for a tool call).
pub async fn host_call(
    tool: HostTool,
    call: &ToolCallRequest,
    server: &McpConnection,
    index: u32,
) -> Result<(ToolCallRecord, String), McpError> {
    let started = Instant::now();
    let (label, reply, outcome) = match tool {
        HostTool::ListResources => {
            let resources = server.list_resources().await?;
            let templates = server.list_resource_templates().await?;
            let listed = serde_json::json!({
                "resources": resources,
                "resourceTemplates": templates,
            });
            (LIST_LABEL.to_owned(), listed.to_string(), None)
        }
        HostTool::ReadResource => {
            let uri = serde_json::from_str::<Value>(&call.arguments)
                .ok()
                .and_then(|a| a.get("uri").and_then(Value::as_str).map(str::to_owned));
            let Some(uri) = uri.filter(|u| !u.trim().is_empty()) else {
                let reply = format!("Error: `{}` needs a `uri` (a string)", call.name);
                let mut record = ToolCallRecord::refused(index, &call.name, &call.arguments);
                record.result = reply.clone();
                return Ok((record, reply));
            };
            let outcome = server.read_resource(&uri).await?;
            let reply = resource_text(&outcome);
            (format!("resource:{uri}"), reply, Some(outcome))
        }
        // Answered by the agent loop from the tool view (`search::search_call`), never here.
        HostTool::SearchTools => {
            let reply = format!("Error: `{}` cannot search here", call.name);
            let mut record = ToolCallRecord::refused(index, &call.name, &call.arguments);
            record.result = reply.clone();
            return Ok((record, reply));
        }
    };
    let mut record = match &outcome {
        Some(outcome) => record(label, call.arguments.clone(), started, outcome),
        None => ToolCallRecord {
            latency_ms: started.elapsed().as_secs_f64() * 1000.0,
            ..ToolCallRecord::made(index, &label, &call.arguments)
        },
    };
    record.index = index;
    record.result = super::agent::recorded_result(&reply);
    Ok((record, reply))
}

/// A host call's record from the server's answer.
fn record(
    label: String,
    arguments: String,
    started: Instant,
    outcome: &CallOutcome,
) -> ToolCallRecord {
    let mut record = ToolCallRecord::refused(0, &label, &arguments);
    record.latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    (record.is_error, record.error_code, record.error_kind) = match outcome {
        CallOutcome::Result { is_error, .. } => (*is_error, None, is_error.then(|| "tool".into())),
        CallOutcome::ProtocolError { code, .. } => (true, Some(*code), Some("protocol".into())),
        CallOutcome::Timeout => (true, None, Some("timeout".into())),
    };
    record
}

/// An answer as the model gets it: an error's code and message, or the result's text.
fn outcome_text(outcome: &CallOutcome) -> String {
    match outcome {
        CallOutcome::Result { text, .. } => text.clone(),
        CallOutcome::ProtocolError { code, message, .. } => format!("Error {code}: {message}"),
        CallOutcome::Timeout => "Error: the server did not answer in time".to_owned(),
    }
}

/// A `resources/read` answer as text: each content's text (a binary one as its URI, MIME type
/// and size), or the error.
fn resource_text(outcome: &CallOutcome) -> String {
    let CallOutcome::Result {
        structured: Some(result),
        ..
    } = outcome
    else {
        return outcome_text(outcome);
    };
    let contents = result.get("contents").and_then(Value::as_array);
    let texts: Vec<String> = (contents.into_iter().flatten())
        .map(|c| match c.get("text").and_then(Value::as_str) {
            Some(text) => text.to_owned(),
            None => {
                let blob = c.get("blob").and_then(Value::as_str).unwrap_or_default();
                let mime = c
                    .get("mimeType")
                    .and_then(Value::as_str)
                    .unwrap_or("binary");
                let uri = c.get("uri").and_then(Value::as_str).unwrap_or_default();
                format!(
                    "[{mime} content of {uri}: {} base64 characters]",
                    blob.len()
                )
            }
        })
        .collect();
    texts.join("\n")
}

/// Why a server prompt cannot open a conversation.
#[derive(Debug, thiserror::Error)]
enum Unusable {
    /// The server's error, or no answer in time.
    #[error("{0}")]
    Refused(String),
    #[error("the prompt has no messages")]
    NoMessages,
}

/// A `prompts/get` answer's messages as the conversation's, or why there are none.
fn prompt_messages(outcome: &CallOutcome) -> Result<Vec<Message>, Unusable> {
    let result = match outcome {
        CallOutcome::Result {
            structured: Some(result),
            ..
        } => result,
        other => return Err(Unusable::Refused(outcome_text(other))),
    };
    let messages = result.get("messages").and_then(Value::as_array);
    let messages: Vec<Message> = (messages.into_iter().flatten())
        .map(|m| {
            let text = content_text(m.get("content").unwrap_or(&Value::Null));
            match m.get("role").and_then(Value::as_str) {
                Some("assistant") => Message::Assistant {
                    content: Some(text),
                    tool_calls: Vec::new(),
                    reasoning: None,
                    server_blocks: Vec::new(),
                },
                _ => Message::User { content: text },
            }
        })
        .collect();
    match messages.is_empty() {
        true => Err(Unusable::NoMessages),
        false => Ok(messages),
    }
}

/// A prompt message's content as text: its text, an embedded resource's text in an
/// `<attachment>`, anything else as JSON.
fn content_text(content: &Value) -> String {
    if let Some(text) = content.get("text").and_then(Value::as_str) {
        return text.to_owned();
    }
    if let Some(resource) = content.get("resource") {
        let uri = resource
            .get("uri")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Some(text) = resource.get("text").and_then(Value::as_str) {
            return format!("<attachment uri=\"{uri}\">\n{text}\n</attachment>");
        }
    }
    content.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(value: Value) -> CallOutcome {
        CallOutcome::Result {
            is_error: false,
            text: value.to_string(),
            structured: Some(value),
            replay_unmatched: false,
        }
    }

    #[test]
    fn a_prompts_messages_open_the_conversation_in_their_roles() {
        let answer = result(serde_json::json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "Triage #5"}},
            {"role": "assistant", "content": {"type": "text", "text": "On it."}},
            {"role": "user", "content": {"type": "resource",
                "resource": {"uri": "tracker://issues/5", "text": "{\"id\":5}"}}},
        ]}));
        let messages = prompt_messages(&answer).unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(
            messages[0],
            Message::User {
                content: "Triage #5".into()
            }
        );
        assert!(
            matches!(&messages[1], Message::Assistant { content: Some(t), .. } if t == "On it.")
        );
        assert!(
            matches!(&messages[2], Message::User { content } if content.contains("uri=\"tracker://issues/5\"") && content.contains("{\"id\":5}"))
        );
        let refused = CallOutcome::ProtocolError {
            code: -32602,
            message: "unknown prompt `x`".into(),
            data: None,
        };
        assert_eq!(
            prompt_messages(&refused).unwrap_err().to_string(),
            "Error -32602: unknown prompt `x`"
        );
        let empty = result(serde_json::json!({"messages": []}));
        assert!(prompt_messages(&empty).is_err());
    }

    #[test]
    fn attachments_go_before_the_first_user_message() {
        let mut messages = vec![Message::User {
            content: "What is its priority?".into(),
        }];
        attach_to_first_user_message(&mut messages, "<attachment uri=\"u\">\nx\n</attachment>");
        assert_eq!(
            messages[0],
            Message::User {
                content: "<attachment uri=\"u\">\nx\n</attachment>\n\nWhat is its priority?".into()
            }
        );
        let mut none = vec![Message::Assistant {
            content: Some("hi".into()),
            tool_calls: Vec::new(),
            reasoning: None,
            server_blocks: Vec::new(),
        }];
        attach_to_first_user_message(&mut none, "A");
        assert_eq!(
            none[0],
            Message::User {
                content: "A".into()
            }
        );
    }

    #[test]
    fn a_resources_text_is_its_contents_or_its_error() {
        let text = resource_text(&result(serde_json::json!({"contents": [
            {"uri": "u", "text": "first"},
            {"uri": "b", "mimeType": "image/png", "blob": "aGk="},
        ]})));
        assert_eq!(text, "first\n[image/png content of b: 4 base64 characters]");
        let missing = CallOutcome::ProtocolError {
            code: -32002,
            message: "resource `u` not found".into(),
            data: None,
        };
        assert_eq!(
            resource_text(&missing),
            "Error -32002: resource `u` not found"
        );
    }
}
