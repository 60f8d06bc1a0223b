//! Streamed chat-completions answers: the chunks (`stream: true`) read back into the one body an
//! unstreamed request gets, so that `wire::parse_response` reads both.

use crate::host::http::StreamError;
use serde_json::{json, Map, Value};

use crate::host::http::StreamReader;
use crate::host::lenient::excerpt_text;

/// The chunks of one answer, as far as they came.
#[derive(Debug, Default)]
pub(crate) struct ChunkReader {
    model: Option<String>,
    content: String,
    reasoning: String,
    /// Tool calls by their `index`, each an id, a name and the arguments text so far.
    calls: Vec<(Option<String>, String, String)>,
    finish_reason: Option<String>,
    usage: Option<Value>,
}

impl StreamReader for ChunkReader {
    fn event(&mut self, _event: &str, data: &str) -> Result<bool, StreamError> {
        let chunk: Value = serde_json::from_str(data).map_err(|e| StreamError::Unreadable {
            what: "chunk",
            reason: e.to_string(),
            excerpt: excerpt_text(data),
        })?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            let message = error.get("message").and_then(Value::as_str);
            return Err(StreamError::Provider(
                message.map_or_else(|| error.to_string(), str::to_owned),
            ));
        }
        if let Some(model) = chunk.get("model").and_then(Value::as_str) {
            self.model.get_or_insert_with(|| model.to_owned());
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage.clone());
        }
        let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            return Ok(false);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
        // Some servers put the whole message in the last chunk instead of a delta.
        let delta = choice
            .get("delta")
            .or_else(|| choice.get("message"))
            .unwrap_or(&Value::Null);
        let mut output = append(&mut self.content, delta.get("content"));
        output |= append(&mut self.reasoning, delta.get("reasoning_content"));
        output |= append(&mut self.reasoning, delta.get("reasoning"));
        let calls = delta.get("tool_calls").and_then(Value::as_array);
        for (position, call) in calls.into_iter().flatten().enumerate() {
            let index = call
                .get("index")
                .and_then(Value::as_u64)
                .map_or(position, |i| i as usize);
            if index >= self.calls.len() {
                self.calls.resize(index + 1, Default::default());
            }
            let (id, name, arguments) = &mut self.calls[index];
            if let Some(given) = call.get("id").and_then(Value::as_str) {
                id.get_or_insert_with(|| given.to_owned());
            }
            let function = call.get("function").unwrap_or(call);
            output |= append(name, function.get("name"));
            match function.get("arguments") {
                Some(object @ Value::Object(_)) => {
                    arguments.push_str(&object.to_string());
                    output = true;
                }
                text => output |= append(arguments, text),
            }
            output |= id.is_some();
        }
        Ok(output)
    }

    fn ended(&self) -> bool {
        self.finish_reason.is_some()
    }

    fn finish(&mut self) -> Value {
        let mut message = Map::new();
        message.insert("role".into(), json!("assistant"));
        message.insert("content".into(), json!(self.content));
        if !self.reasoning.is_empty() {
            message.insert("reasoning_content".into(), json!(self.reasoning));
        }
        let calls: Vec<Value> = self
            .calls
            .iter()
            .filter(|(_, name, _)| !name.is_empty())
            .map(|(id, name, arguments)| {
                json!({"id": id, "type": "function",
                       "function": {"name": name, "arguments": arguments}})
            })
            .collect();
        if !calls.is_empty() {
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        let mut body = json!({
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
        });
        if let Some(model) = &self.model {
            body["model"] = json!(model);
        }
        if let Some(usage) = &self.usage {
            body["usage"] = usage.clone();
        }
        body
    }
}

/// Appends a text delta; true when it was not empty.
fn append(to: &mut String, delta: Option<&Value>) -> bool {
    match delta.and_then(Value::as_str).filter(|t| !t.is_empty()) {
        Some(text) => {
            to.push_str(text);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(chunks: &[Value]) -> Value {
        let mut reader = ChunkReader::default();
        for chunk in chunks {
            reader.event("", &chunk.to_string()).unwrap();
        }
        reader.finish()
    }

    #[test]
    fn deltas_are_joined_into_one_message() {
        let body = read(&[
            json!({"model": "m1", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}),
            json!({"choices": [{"delta": {"reasoning_content": "think "}}]}),
            json!({"choices": [{"delta": {"content": "Hel"}}]}),
            json!({"choices": [{"delta": {"content": "lo", "tool_calls": [
                {"index": 0, "id": "c1", "function": {"name": "get", "arguments": "{\"a\""}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [
                {"index": 0, "function": {"arguments": ": 1}"}},
                {"index": 1, "id": "c2", "function": {"name": "put", "arguments": "{}"}}]}}]}),
            json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}}),
        ]);
        let message = &body["choices"][0]["message"];
        assert_eq!(message["content"], "Hello");
        assert_eq!(message["reasoning_content"], "think ");
        assert_eq!(
            message["tool_calls"][0]["function"]["arguments"],
            "{\"a\": 1}"
        );
        assert_eq!(message["tool_calls"][0]["id"], "c1");
        assert_eq!(message["tool_calls"][1]["function"]["name"], "put");
        assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(body["usage"]["completion_tokens"], 4);
        assert_eq!(body["model"], "m1");
    }

    #[test]
    fn output_is_told_apart_from_bookkeeping_and_errors_fail() {
        let mut reader = ChunkReader::default();
        let role = json!({"choices": [{"delta": {"role": "assistant", "content": ""}}]});
        assert!(!reader.event("", &role.to_string()).unwrap());
        let text = json!({"choices": [{"delta": {"content": "x"}}]});
        assert!(reader.event("", &text.to_string()).unwrap());
        let usage = json!({"choices": [], "usage": {"completion_tokens": 1}});
        assert!(!reader.event("", &usage.to_string()).unwrap());
        let error = json!({"error": {"message": "model overloaded"}});
        let e = reader
            .event("", &error.to_string())
            .unwrap_err()
            .to_string();
        assert!(e.contains("model overloaded"), "{e}");
        assert!(reader
            .event("", "not json")
            .unwrap_err()
            .to_string()
            .contains("unreadable"));
    }
}
