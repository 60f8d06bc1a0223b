//! Call-task drafting: the requests `mcpeval init` sends (one valid call per tool, the error
//! semantics, each listed resource and prompt), and the expectations drawn from two answers to
//! each: only what both answers share is pinned, so a clock, a counter or a random id in the
//! answer never becomes a check that fails on the next run.

use serde_json::{json, Value};

use crate::mcp::CallOutcome;
use crate::suite::CallSpec;

/// One request to draft a call task from.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub id: String,
    pub request: CallSpec,
    /// Why the request is as it is, for the task's comment.
    pub why: String,
    /// The request writes (a tool left out unless `--include-writes`): sent on a fresh connection.
    pub writes: bool,
    /// The request is malformed on purpose (an unknown tool, a missing argument): the task says
    /// `malformed: true`, so `tasks check --server` knows it is meant.
    pub malformed: bool,
    /// The arguments of a valid call whose values init chose (the schema gave none: a value
    /// from the description, the format, the command line, or a neutral one), with the value:
    /// a refusal that names one is init's doing, not the server's.
    pub chosen: Vec<(String, Value)>,
}

/// The task's `call` mapping as JSON (a YAML flow mapping), as the task format writes it.
pub fn call_json(call: &CallSpec) -> Value {
    match call {
        CallSpec::Tool { name, args } if args.is_empty() => json!({ "tool": name }),
        CallSpec::Tool { name, args } => json!({ "tool": name, "args": args }),
        CallSpec::Resource { uri } => json!({ "resource": uri }),
        CallSpec::Prompt { name, args } if args.is_empty() => json!({ "prompt": name }),
        CallSpec::Prompt { name, args } => json!({ "prompt": name, "args": args }),
    }
}

/// One answer as a call task sees it: the outcome and its text (as `mcpeval run` grades it).
#[derive(Debug, Clone)]
pub struct Answer {
    pub outcome: CallOutcome,
    pub text: String,
}

/// A call task's expectations, drawn from the answers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expect {
    pub is_error: Option<bool>,
    pub error_code: Option<i64>,
    pub result_contains: Vec<String>,
    /// JSONPath and, where both answers agree on a scalar, its value.
    pub structured: Vec<(String, Option<Value>)>,
    pub output_schema: bool,
}

/// Why no call task could be drawn from a request's answers.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NotPinned {
    #[error("no answer within the call timeout")]
    NoAnswer,
    #[error("two calls were answered differently ({first} / {second})")]
    Differ { first: String, second: String },
}

/// How many texts `result_contains`, and paths `structured`, get at most.
const MAX_TEXTS: usize = 2;
const MAX_PATHS: usize = 3;
/// The shortest and longest text worth pinning, in characters.
const MIN_TEXT: usize = 6;
const MAX_TEXT: usize = 60;

/// The expectations both answers meet, or why none can be drawn (the answers differ in kind, or
/// one did not come). `output_schema` is the called tool's, if it declares one.
pub fn expect(
    call: &CallSpec,
    first: &Answer,
    second: &Answer,
    output_schema: Option<&Value>,
) -> Result<Expect, NotPinned> {
    let tool = matches!(call, CallSpec::Tool { .. });
    let mut out = Expect::default();
    match (&first.outcome, &second.outcome) {
        (CallOutcome::Timeout, _) | (_, CallOutcome::Timeout) => return Err(NotPinned::NoAnswer),
        (
            CallOutcome::Result {
                is_error: a,
                structured: sa,
                ..
            },
            CallOutcome::Result {
                is_error: b,
                structured: sb,
                ..
            },
        ) if a == b => {
            out.is_error = Some(*a);
            // A resource's or a prompt's structured content is its whole result, delivery
            // fields (`ttlMs`, `resultType`) and all: only a tool's is worth a path.
            if let (Some(sa), Some(sb), true) = (sa, sb, tool) {
                out.structured = shared_paths(sa, sb);
                let fits = |v: &Value| output_schema.is_some_and(|s| jsonschema::is_valid(s, v));
                out.output_schema = !a && fits(sa) && fits(sb);
            }
        }
        (
            CallOutcome::ProtocolError { code: a, .. },
            CallOutcome::ProtocolError { code: b, .. },
        ) if a == b => out.error_code = Some(*a),
        (a, b) => {
            return Err(NotPinned::Differ {
                first: kind(a),
                second: kind(b),
            })
        }
    }
    out.result_contains = shared_texts(&first.text, &second.text);
    Ok(out)
}

fn kind(outcome: &CallOutcome) -> String {
    match outcome {
        CallOutcome::Result { is_error: true, .. } => "a result with isError".into(),
        CallOutcome::Result { .. } => "a result".into(),
        CallOutcome::ProtocolError { code, .. } => format!("JSON-RPC error {code}"),
        CallOutcome::Timeout => "no answer".into(),
    }
}

/// Up to [`MAX_TEXTS`] pieces of `a` (split at JSON punctuation and line ends) that `b` holds
/// too, that have a letter, and that look like nothing that changes by itself (a date, a time,
/// a uuid, a long number or hex string). Longer pieces first, kept in the order of `a`.
pub fn shared_texts(a: &str, b: &str) -> Vec<String> {
    let lower_b = b.to_lowercase();
    let mut pieces: Vec<(usize, String)> = Vec::new();
    for (at, piece) in a
        .split(['"', '{', '}', '[', ']', ',', '\n', '\\'])
        .enumerate()
    {
        let piece = piece.trim().trim_matches(|c: char| c == ':' || c == ';');
        let piece = cut_at_word(piece, MAX_TEXT);
        if piece.chars().count() < MIN_TEXT
            || !piece.chars().any(char::is_alphabetic)
            || volatile(&piece)
            || !lower_b.contains(&piece.to_lowercase())
            || pieces.iter().any(|(_, p)| p.eq_ignore_ascii_case(&piece))
        {
            continue;
        }
        pieces.push((at, piece));
    }
    pieces.sort_by_key(|(at, p)| (std::cmp::Reverse(p.chars().count().min(24)), *at));
    pieces.truncate(MAX_TEXTS);
    pieces.sort_by_key(|(at, _)| *at);
    pieces.into_iter().map(|(_, p)| p).collect()
}

/// The text up to `max` characters, cut after the last whole word when it is longer.
fn cut_at_word(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max + 1).collect();
    match cut.rfind(' ') {
        Some(at) => cut[..at].trim_end().to_owned(),
        None => cut.chars().take(max).collect(),
    }
}

/// Whether a text holds what tends to change between calls: a date or time, a uuid, six digits
/// in a row (a timestamp, a counter), or a hex run of twelve characters or more.
pub fn volatile(text: &str) -> bool {
    static VOLATILE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}(:\d{2})?|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-|\d{6}|[0-9a-fA-F]{12}",
        )
        .expect("a valid regex")
    });
    VOLATILE.is_match(text)
}

/// Top-level keys of a structured answer both answers have: a scalar both give the same,
/// steady-looking value is pinned (`equals`), anything else only required to be there.
fn shared_paths(a: &Value, b: &Value) -> Vec<(String, Option<Value>)> {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return Vec::new();
    };
    let mut out: Vec<(String, Option<Value>)> = Vec::new();
    for (key, value) in a {
        let Some(other) = b.get(key) else { continue };
        if !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || key.is_empty() {
            continue;
        }
        let steady = match value {
            Value::String(s) => !volatile(s) && s.chars().count() <= MAX_TEXT,
            Value::Number(_) | Value::Bool(_) => true,
            _ => false,
        };
        let pinned = (steady && value == other).then(|| value.clone());
        out.push((format!("$.{key}"), pinned));
    }
    // Pinned values first: they say more.
    out.sort_by_key(|(_, v)| v.is_none());
    out.truncate(MAX_PATHS);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(is_error: bool, text: &str, structured: Option<Value>) -> Answer {
        Answer {
            outcome: CallOutcome::Result {
                is_error,
                text: text.into(),
                structured,
                replay_unmatched: false,
            },
            text: text.into(),
        }
    }

    #[test]
    fn only_what_both_answers_share_is_pinned() {
        let a = json!({"id": 13, "title": "Login fails", "at": "2026-12-04T12:00:01Z", "n": 1});
        let b = json!({"id": 14, "title": "Login fails", "at": "2026-12-04T12:00:02Z", "n": 1});
        let schema = json!({"type": "object", "required": ["id"]});
        let tool = CallSpec::Tool {
            name: "t".into(),
            args: Default::default(),
        };
        let got = expect(
            &tool,
            &result(false, &a.to_string(), Some(a.clone())),
            &result(false, &b.to_string(), Some(b.clone())),
            Some(&schema),
        )
        .unwrap();
        assert_eq!(got.is_error, Some(false));
        assert!(got.output_schema);
        assert_eq!(got.result_contains, ["Login fails"]);
        assert!(got
            .structured
            .contains(&("$.title".into(), Some(json!("Login fails")))));
        assert!(got.structured.contains(&("$.n".into(), Some(json!(1)))));
        assert!(
            !got.structured.iter().any(|(_, v)| v == &Some(json!(13))),
            "the id differs: {:?}",
            got.structured
        );
    }

    #[test]
    fn errors_pin_their_code_and_different_kinds_of_answer_pin_nothing() {
        let err = |code| Answer {
            outcome: CallOutcome::ProtocolError {
                code,
                message: "unknown tool `x`".into(),
                data: None,
            },
            text: format!("Error {code}: unknown tool `x`"),
        };
        let call = CallSpec::Resource {
            uri: "x://y".into(),
        };
        let got = expect(&call, &err(-32602), &err(-32602), None).unwrap();
        assert_eq!(got.error_code, Some(-32602));
        assert_eq!(got.is_error, None);
        assert_eq!(got.result_contains, ["Error -32602: unknown tool `x`"]);
        let why = expect(&call, &err(-32602), &result(true, "no", None), None)
            .unwrap_err()
            .to_string();
        assert!(
            why.contains("JSON-RPC error -32602 / a result with isError"),
            "{why}"
        );
    }

    #[test]
    fn volatile_texts_are_never_pinned() {
        for text in [
            "created at 2026-12-04",
            "took 12:03:44",
            "id 123e4567-e89b-12d3",
            "seed 1733312345",
            "hash deadbeefcafe42",
        ] {
            assert!(volatile(text), "{text}");
        }
        assert!(!volatile("issue 99999 not found"));
        assert!(shared_texts("token a1b2c3d4e5f6a7", "token a1b2c3d4e5f6a7").is_empty());
        let long = "On 3G connections the login form spins for 30 seconds and then fails";
        assert_eq!(
            shared_texts(long, long),
            ["On 3G connections the login form spins for 30 seconds and"]
        );
    }
}
