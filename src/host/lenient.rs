//! Lenient reading helpers shared by the providers' wire formats: counts that arrive as numbers or
//! strings, and short one-line excerpts of what a server sent, for error messages.

use super::http::StreamError;
use serde_json::Value;

/// A token count as servers send it: an integer, a float, or a numeric string.
pub(crate) fn as_count(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64().or_else(|| n.as_f64().map(|f| f.max(0.0) as u64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// At most 200 characters of a text, on one line.
pub(crate) fn excerpt_text(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

/// [`excerpt_text`] of a JSON value.
pub(crate) fn excerpt(v: &Value) -> String {
    excerpt_text(&v.to_string())
}

/// The answering model as the body names it (`model`), or `fallback` when it names none.
pub(crate) fn model_name(body: &Value, fallback: &str) -> String {
    body.get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .unwrap_or(fallback)
        .to_owned()
}

/// Tokens of a text the provider did not count (reasoning text it returns without a token
/// count), estimated with the sim's tokenizer: about one per 4 characters of a word.
pub(crate) fn estimated_tokens(text: &str) -> u64 {
    super::tokens::count_text(text)
}

/// Appends `text` to the string field `key` of a JSON object (made an object of `{"type":
/// kind}` first if it is not one): how a streamed delta grows its part. True when `text` was
/// not empty.
pub(crate) fn append_field(value: &mut Value, kind: &str, key: &str, text: &str) -> bool {
    if !value.is_object() {
        *value = serde_json::json!({ "type": kind });
    }
    match value.get_mut(key) {
        Some(Value::String(s)) => s.push_str(text),
        _ => value[key] = Value::String(text.to_owned()),
    }
    !text.is_empty()
}

/// A streamed event's JSON and its type: the data's `type`, else the SSE event name. `Err` for
/// data that is not JSON.
pub(crate) fn typed_event(event: &str, data: &str) -> Result<(Value, String), StreamError> {
    let value: Value = serde_json::from_str(data).map_err(|e| StreamError::Unreadable {
        what: "event",
        reason: e.to_string(),
        excerpt: excerpt_text(data),
    })?;
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or(event)
        .to_owned();
    Ok((value, kind))
}
