//! Token counts where no provider gives them: a simple, deterministic tokenizer over what a model
//! was sent and said (the sim's counts, and the reasoning tokens of providers that return only
//! the reasoning text).
//!
//! Words count one token per started 4 characters, every other visible character counts one.
//! Tool specs count as the JSON a provider would send, so a longer description or one more
//! tool costs tokens, as it would with a real model.

use serde_json::Value;

use crate::host::{Message, ToolCallRequest, ToolSpec};

/// Per-message overhead (role and separators), as chat formats add.
const MESSAGE_OVERHEAD: u64 = 4;
/// Per-tool overhead (the `{"type":"function","function":…}` wrapper).
const TOOL_OVERHEAD: u64 = 8;

/// Tokens of a text.
pub(crate) fn count_text(text: &str) -> u64 {
    let mut tokens = 0;
    let mut word = 0u64;
    for c in text.chars() {
        if c.is_alphanumeric() {
            word += 1;
            continue;
        }
        tokens += word.div_ceil(4);
        word = 0;
        if !c.is_whitespace() {
            tokens += 1;
        }
    }
    tokens + word.div_ceil(4)
}

/// Tokens of a JSON value, counted as its compact serialization would be.
pub(super) fn count_value(value: &Value) -> u64 {
    match value {
        Value::Null | Value::Bool(_) => 1,
        Value::Number(n) => count_text(&n.to_string()),
        Value::String(s) => 2 + count_text(s),
        Value::Array(items) => 2 + items.iter().map(|v| count_value(v) + 1).sum::<u64>(),
        Value::Object(map) => {
            2 + map
                .iter()
                .map(|(k, v)| 4 + count_text(k) + count_value(v))
                .sum::<u64>()
        }
    }
}

fn count_calls(calls: &[ToolCallRequest]) -> u64 {
    calls
        .iter()
        .map(|c| MESSAGE_OVERHEAD + count_text(&c.name) + count_text(&c.arguments))
        .sum()
}

/// Tokens of everything a request sends: messages and tool specs.
pub(crate) fn count_input(messages: &[Message], tools: &[ToolSpec]) -> u64 {
    let messages: u64 = messages
        .iter()
        .map(|m| {
            MESSAGE_OVERHEAD
                + match m {
                    Message::System { content } | Message::User { content } => count_text(content),
                    Message::Assistant {
                        content,
                        tool_calls,
                        ..
                    } => count_text(content.as_deref().unwrap_or("")) + count_calls(tool_calls),
                    Message::Tool {
                        tool_call_id,
                        content,
                    } => count_text(tool_call_id) + count_text(content),
                }
        })
        .sum();
    let tools: u64 = tools
        .iter()
        .map(|t| {
            TOOL_OVERHEAD
                + count_text(&t.name)
                + t.title.as_deref().map_or(0, count_text)
                + t.description.as_deref().map_or(0, count_text)
                + count_value(&t.input_schema)
        })
        .sum();
    messages + tools
}

/// Tokens of what the sim produced.
pub(crate) fn count_output(content: Option<&str>, calls: &[ToolCallRequest]) -> u64 {
    content.map_or(0, count_text) + count_calls(calls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_punctuation() {
        assert_eq!(count_text(""), 0);
        assert_eq!(count_text("hi"), 1);
        assert_eq!(count_text("hello, world!"), 2 + 2 + 2);
        assert_eq!(count_text("Looks up issues."), 2 + 1 + 2 + 1);
        // {} + "a": + [1, "x"]
        assert_eq!(
            count_value(&serde_json::json!({"a": [1, "x"]})),
            2 + 4 + 1 + 8
        );
    }
}
