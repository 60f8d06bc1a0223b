//! Streamed Responses API answers: the events (`stream: true`) read back into the response
//! object. `response.completed` (or `.incomplete`) carries the whole response; an answer cut at
//! the timeout is rebuilt from the deltas that came before.

use crate::host::http::StreamError;
use serde_json::{json, Value};

use crate::host::http::StreamReader;
use crate::host::lenient::{append_field, typed_event};

/// The events of one answer, as far as they came.
#[derive(Debug, Default)]
pub(crate) struct EventReader {
    /// The response of `response.created`, replaced by the final one when it comes.
    response: Option<Value>,
    /// Output items by `output_index`, their text and arguments grown by the deltas.
    items: Vec<Value>,
    done: bool,
}

impl StreamReader for EventReader {
    fn event(&mut self, event: &str, data: &str) -> Result<bool, StreamError> {
        let (value, kind) = typed_event(event, data)?;
        let index = value
            .get("output_index")
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize;
        let delta = value.get("delta").and_then(Value::as_str).unwrap_or("");
        match kind.as_str() {
            "response.created" | "response.in_progress" => {
                self.response = value.get("response").cloned();
                Ok(false)
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                self.response = value.get("response").cloned();
                self.done = true;
                Ok(false)
            }
            "response.output_item.added" => {
                let item = value.get("item").cloned().unwrap_or(Value::Null);
                let output = item.get("type").and_then(Value::as_str) == Some("function_call");
                *self.slot(index) = item;
                Ok(output)
            }
            "response.output_text.delta" => Ok(self.grow(index, "text", delta)),
            "response.function_call_arguments.delta" => Ok(self.grow(index, "arguments", delta)),
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                Ok(self.grow(index, "reasoning", delta))
            }
            "error" => {
                let message = value
                    .get("message")
                    .or_else(|| value.get("error").and_then(|e| e.get("message")))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                Err(StreamError::Provider(message.to_owned()))
            }
            _ => Ok(false),
        }
    }

    fn finish(&mut self) -> Value {
        let mut response = self.response.clone().unwrap_or_else(|| json!({}));
        if self.done {
            return response;
        }
        // Cut short: the items as far as their deltas went.
        let output: Vec<Value> = self
            .items
            .iter()
            .filter(|item| !item.is_null())
            .map(|item| match item.get("type").and_then(Value::as_str) {
                Some("message") => json!({"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": item["text"]}]}),
                Some("reasoning") => json!({"type": "reasoning",
                    "summary": [{"type": "summary_text", "text": item["reasoning"]}]}),
                _ => item.clone(),
            })
            .collect();
        response["output"] = Value::Array(output);
        response["status"] = json!("in_progress");
        response
    }

    fn ended(&self) -> bool {
        self.done
    }
}

impl EventReader {
    fn slot(&mut self, index: usize) -> &mut Value {
        if index >= self.items.len() {
            self.items.resize(index + 1, Value::Null);
        }
        &mut self.items[index]
    }

    /// Appends a delta to an item's field; true when it was not empty.
    fn grow(&mut self, index: usize, key: &str, delta: &str) -> bool {
        let kind = if key == "reasoning" {
            "reasoning"
        } else {
            "message"
        };
        append_field(self.slot(index), kind, key, delta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_final_response_is_taken_and_a_cut_answer_is_rebuilt() {
        let mut reader = EventReader::default();
        let events = [
            json!({"type": "response.created", "response": {"id": "r1", "status": "in_progress",
                "model": "m", "output": []}}),
            json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"type": "message", "role": "assistant", "content": []}}),
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Hi "}),
            json!({"type": "response.output_item.added", "output_index": 1,
                "item": {"type": "function_call", "call_id": "c1", "name": "get",
                         "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 1,
                "delta": "{\"id\":"}),
        ];
        let outputs: Vec<bool> = events
            .iter()
            .map(|e| reader.event("", &e.to_string()).unwrap())
            .collect();
        assert_eq!(outputs, [false, false, true, true, true]);
        assert!(!reader.ended());
        let cut = reader.finish();
        assert_eq!(cut["output"][0]["content"][0]["text"], "Hi ");
        assert_eq!(cut["output"][1]["arguments"], "{\"id\":");
        assert_eq!(cut["model"], "m");
        let whole = json!({"type": "response.completed", "response": {"status": "completed",
            "output": [{"type": "message", "content": [{"type": "output_text", "text": "Hi"}]}]}});
        reader.event("", &whole.to_string()).unwrap();
        assert!(reader.ended());
        assert_eq!(reader.finish()["status"], "completed");
        let e = reader
            .event(
                "error",
                &json!({"type": "error", "message": "rate limited"}).to_string(),
            )
            .unwrap_err();
        assert_eq!(e.to_string(), "error event: rate limited");
    }
}
