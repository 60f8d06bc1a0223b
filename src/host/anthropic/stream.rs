//! Streamed Messages API answers: the events (`stream: true`) read back into the one message an
//! unstreamed request gets, so that `wire::parse_response` reads both.

use crate::host::http::StreamError;
use serde_json::{json, Value};

use crate::host::http::StreamReader;
use crate::host::lenient::{append_field, typed_event};

/// The events of one answer, as far as they came.
#[derive(Debug, Default)]
pub(crate) struct EventReader {
    /// `message_start`'s message, its `stop_reason` and `usage` updated by `message_delta`.
    message: Option<Value>,
    /// The content blocks by index.
    blocks: Vec<Value>,
    /// A `tool_use` block's input as JSON text so far, by block index.
    inputs: Vec<String>,
}

impl StreamReader for EventReader {
    fn event(&mut self, event: &str, data: &str) -> Result<bool, StreamError> {
        let (value, kind) = typed_event(event, data)?;
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
        match kind.as_str() {
            "message_start" => {
                let mut message = value.get("message").cloned().unwrap_or_else(|| json!({}));
                message["content"] = json!([]);
                self.message = Some(message);
                Ok(false)
            }
            "content_block_start" => {
                let block = value.get("content_block").cloned().unwrap_or(Value::Null);
                let output = block.get("type").and_then(Value::as_str) == Some("tool_use");
                self.slot(index);
                self.blocks[index] = block;
                Ok(output)
            }
            "content_block_delta" => {
                let delta = value.get("delta").unwrap_or(&Value::Null);
                self.slot(index);
                let text = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or("");
                let block = &mut self.blocks[index];
                let output = match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => append_field(block, "text", "text", text("text")),
                    Some("thinking_delta") => {
                        append_field(block, "thinking", "thinking", text("thinking"))
                    }
                    Some("signature_delta") => {
                        block["signature"] = json!(text("signature"));
                        false
                    }
                    Some("input_json_delta") => {
                        self.inputs[index].push_str(text("partial_json"));
                        !text("partial_json").is_empty()
                    }
                    _ => false,
                };
                Ok(output)
            }
            "message_delta" => {
                let message = self.message.get_or_insert_with(|| json!({"content": []}));
                if let Some(reason) = value.get("delta").and_then(|d| d.get("stop_reason")) {
                    message["stop_reason"] = reason.clone();
                }
                if let Some(Value::Object(usage)) = value.get("usage") {
                    if !message.get("usage").is_some_and(Value::is_object) {
                        message["usage"] = json!({});
                    }
                    for (key, count) in usage {
                        message["usage"][key] = count.clone();
                    }
                }
                Ok(false)
            }
            "error" => {
                let error = value.get("error").unwrap_or(&Value::Null);
                let field = |k: &str| error.get(k).and_then(Value::as_str).unwrap_or("");
                Err(StreamError::Provider(format!(
                    "{}: {}",
                    field("type"),
                    field("message")
                )))
            }
            _ => Ok(false),
        }
    }

    fn ended(&self) -> bool {
        self.message
            .as_ref()
            .is_some_and(|m| m.get("stop_reason").is_some_and(|r| !r.is_null()))
    }

    fn finish(&mut self) -> Value {
        let mut message = self
            .message
            .clone()
            .unwrap_or_else(|| json!({"type": "message"}));
        let blocks: Vec<Value> = self
            .blocks
            .iter()
            .zip(&self.inputs)
            .filter(|(block, _)| !block.is_null())
            .map(|(block, input)| {
                let mut block = block.clone();
                if !input.is_empty() {
                    // Cut short (a timeout), the input stays text: the call's arguments are then
                    // not valid JSON, which the agent loop records as the model's error.
                    block["input"] = serde_json::from_str::<Value>(input)
                        .unwrap_or_else(|_| Value::String(input.clone()));
                }
                block
            })
            .collect();
        message["content"] = Value::Array(blocks);
        message
    }
}

impl EventReader {
    fn slot(&mut self, index: usize) {
        if index >= self.blocks.len() {
            self.blocks.resize(index + 1, Value::Null);
            self.inputs.resize(index + 1, String::new());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_joined_into_one_message() {
        let events = [
            json!({"type": "message_start", "message": {"type": "message", "model": "claude-x",
                "usage": {"input_tokens": 12, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "thinking", "thinking": ""}}),
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "Let me see"}}),
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "signature_delta", "signature": "sig=="}}),
            json!({"type": "content_block_start", "index": 1,
                "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 1,
                "delta": {"type": "text_delta", "text": "Sure"}}),
            json!({"type": "content_block_start", "index": 2,
                "content_block": {"type": "tool_use", "id": "t1", "name": "get", "input": {}}}),
            json!({"type": "content_block_delta", "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": "{\"id\": "}}),
            json!({"type": "content_block_delta", "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": "7}"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 30}}),
        ];
        let mut reader = EventReader::default();
        let outputs: Vec<bool> = events
            .iter()
            .map(|e| reader.event("", &e.to_string()).unwrap())
            .collect();
        assert_eq!(
            outputs,
            [false, false, true, false, false, true, true, true, true, false]
        );
        let message = reader.finish();
        assert_eq!(message["content"][0]["thinking"], "Let me see");
        assert_eq!(message["content"][0]["signature"], "sig==");
        assert_eq!(message["content"][1]["text"], "Sure");
        assert_eq!(message["content"][2]["input"], json!({"id": 7}));
        assert_eq!(message["stop_reason"], "tool_use");
        assert_eq!(message["usage"]["input_tokens"], 12);
        assert_eq!(message["usage"]["output_tokens"], 30);
        let error = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        let e = reader.event("error", &error.to_string()).unwrap_err();
        assert_eq!(e.to_string(), "error event: overloaded_error: Overloaded");
    }

    #[test]
    fn an_input_cut_short_stays_text() {
        let mut reader = EventReader::default();
        for e in [
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "tool_use", "id": "t1", "name": "get", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": "{\"id\": 7"}}),
        ] {
            reader.event("", &e.to_string()).unwrap();
        }
        assert_eq!(reader.finish()["content"][0]["input"], "{\"id\": 7");
    }
}
