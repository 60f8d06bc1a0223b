//! promptfoo's assertion types, each into the mcpeval keys it converts to, or named as not
//! converted with the reason.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::suite::import::case::{glob_pattern, Call, Case};
use crate::suite::task::ToolName;

/// The assertion types that convert, each into its keys; the others are named as not
/// converted with the reason.
pub(super) fn answer_or_tools(
    kind: &str,
    value: Option<&Value>,
    threshold: Option<f64>,
    a: &Map<String, Value>,
    case: &mut Case,
) {
    let what = format!("`{kind}`");
    let single = value.map(texts).unwrap_or_default();
    let listed = value.map(list_texts).unwrap_or_default();
    match kind {
        "contains" | "icontains" | "contains-all" | "icontains-all" if !listed.is_empty() => {
            if !kind.starts_with('i') {
                case.note(format!(
                    "{what} is case-sensitive in promptfoo; `answer_contains` ignores case"
                ));
            }
            let texts = if kind.ends_with("-all") {
                &listed
            } else {
                &single
            };
            texts.iter().for_each(|t| case.answer_contains(t));
        }
        "contains-any" | "icontains-any" if !listed.is_empty() => {
            let any: Vec<String> = listed.iter().map(|t| regex::escape(t)).collect();
            let flags = if kind.starts_with('i') { "(?i)" } else { "" };
            case.answer_regex(format!("{flags}(?:{})", any.join("|")), &what);
        }
        "not-contains" | "not-icontains" | "not-contains-any" | "not-icontains-any"
            if !listed.is_empty() =>
        {
            if !kind.starts_with("not-i") {
                case.note(format!(
                    "{what} is case-sensitive in promptfoo; `answer_not_contains` ignores case"
                ));
            }
            let texts = if kind.ends_with("-any") {
                &listed
            } else {
                &single
            };
            texts.iter().for_each(|t| case.answer_not_contains(t));
        }
        "regex" => match value.and_then(Value::as_str) {
            Some(regex) => case.answer_regex(regex.to_owned(), &what),
            None => case.not_converted(format!("{what} without a pattern")),
        },
        "starts-with" => match value.and_then(text) {
            Some(start) => case.answer_regex(format!("^{}", regex::escape(&start)), &what),
            None => case.not_converted(format!("{what} without a text")),
        },
        "equals" => match value.and_then(Value::as_str) {
            Some(whole) => case.answer_regex(format!("\\A{}\\z", regex::escape(whole)), &what),
            None => case.not_converted(format!(
                "{what} with a JSON value (no mcpeval check parses the answer)"
            )),
        },
        "llm-rubric" | "model-graded-closedqa" => match value.and_then(Value::as_str) {
            Some(rubric) => {
                let rubric = if kind == "llm-rubric" {
                    rubric.to_owned()
                } else {
                    format!("The final answer meets this criterion: {rubric}")
                };
                case.rubrics.push(rubric);
                if let Some(provider) = a.get("provider") {
                    case.note(format!(
                        "{what}'s grader {provider} is not carried over: the judge is `judge.host` \
                         (--judge-host)"
                    ));
                }
                if threshold.is_some() {
                    case.note(format!(
                        "{what}'s `threshold` is not carried over: the judge says pass or fail"
                    ));
                }
            }
            None => case.not_converted(format!("{what} without a rubric text")),
        },
        "latency" => match threshold {
            Some(ms) if ms >= 1.0 => {
                case.max_latency_ms = Some(ms as u64);
                case.note(format!(
                    "{what} times the model's answer in promptfoo; `max_latency_ms` times the \
                     whole trial, tool calls included"
                ));
            }
            _ => case.not_converted(format!("{what} without a `threshold` in milliseconds")),
        },
        "trajectory:tool-used" => tool_used(value, case),
        "not-trajectory:tool-used" => {
            let names = value.map(texts).unwrap_or_default();
            if names.is_empty() {
                case.not_converted(format!(
                    "{what} {} (`forbidden_tools` lists names)",
                    show(value)
                ));
            }
            names.iter().for_each(|n| case.forbid(n));
        }
        "trajectory:tool-sequence" => tool_sequence(value, case),
        "trajectory:tool-args-match" => tool_args(value, case),
        "trajectory:step-count" => step_count(value, case),
        "tool-call-f1" if threshold.is_none_or(|t| t >= 1.0) && !listed.is_empty() => {
            for name in &listed {
                case.expect(ToolName::Literal(name.clone()));
            }
            case.not_converted(format!(
                "{what}'s precision: F1 = 1 also refuses any other tool, which mcpeval cannot say \
                 without the server's tool list (add `forbidden_tools`)"
            ));
        }
        "tool-call-f1" => case.not_converted(format!(
            "{what} with `threshold` {} (a partial score; every mcpeval check passes or fails)",
            threshold.unwrap_or(1.0)
        )),
        other => case.not_converted(format!("{what} assertion ({})", why_not(other))),
    }
}

/// Why an assertion type has no mcpeval key.
fn why_not(kind: &str) -> &'static str {
    let base = kind.strip_prefix("not-").unwrap_or(kind);
    match base {
        "javascript" | "python" | "ruby" | "webhook" => {
            "it runs code; mcpeval's graders are declarative"
        }
        "is-json" | "contains-json" | "is-xml" | "contains-xml" | "is-html" | "contains-html"
        | "is-sql" | "contains-sql" => "no mcpeval check parses the answer's format",
        "is-valid-function-call"
        | "is-valid-openai-function-call"
        | "is-valid-openai-tools-call" => {
            "mcpeval does not check calls against schemas; the server's errors count in the \
             `tool_errors` metric"
        }
        "similar"
        | "factuality"
        | "answer-relevance"
        | "context-faithfulness"
        | "context-recall"
        | "context-relevance"
        | "g-eval"
        | "classifier"
        | "moderation"
        | "select-best"
        | "max-score"
        | "pi"
        | "conversation-relevance" => "no mcpeval grader; an `llm-rubric` converts into `judge`",
        "cost" | "perplexity" | "perplexity-score" => {
            "no mcpeval grader; tokens are a compared metric"
        }
        "levenshtein" | "rouge-n" | "bleu" | "gleu" | "meteor" | "word-count" => {
            "no mcpeval grader scores the answer's text"
        }
        "trace-span-count" | "trace-span-duration" | "trace-error-spans" | "skill-used" => {
            "mcpeval reads the trial, not traces"
        }
        _ if kind.starts_with("not-") => "no negated form of it in mcpeval",
        _ => "no mcpeval grader for it",
    }
}

/// `trajectory:tool-used`: a name, names, or `{pattern, min, max}` (a glob).
fn tool_used(value: Option<&Value>, case: &mut Case) {
    match value {
        Some(Value::Object(spec)) => {
            let tool = match (
                spec.get("name").and_then(Value::as_str),
                spec.get("pattern").and_then(Value::as_str),
            ) {
                (Some(name), _) => ToolName::Literal(name.to_owned()),
                (None, Some(glob)) => ToolName::Pattern {
                    pattern: glob_pattern(glob),
                },
                _ => {
                    case.not_converted(format!(
                        "`trajectory:tool-used` {} (no name or pattern)",
                        show(value)
                    ));
                    return;
                }
            };
            let min = spec.get("min").and_then(Value::as_u64).unwrap_or(1);
            if min > 1 || spec.contains_key("max") {
                case.not_converted(format!(
                    "`trajectory:tool-used` counts for {tool} (min/max of one tool; mcpeval counts \
                     all calls)"
                ));
            }
            if min >= 1 {
                case.expect(tool);
            }
        }
        Some(value) if !texts(value).is_empty() => {
            for name in texts(value) {
                case.expect(ToolName::Literal(name));
            }
        }
        _ => case.not_converted(format!("`trajectory:tool-used` {}", show(value))),
    }
}

/// `trajectory:tool-sequence`: `{steps: […], mode: in_order|exact}`; `exact` is the order
/// with no other call (at most as many calls as steps).
fn tool_sequence(value: Option<&Value>, case: &mut Case) {
    let steps = value
        .and_then(|v| v.get("steps").or(Some(v)))
        .map(texts)
        .unwrap_or_default();
    if steps.is_empty() {
        case.not_converted(format!("`trajectory:tool-sequence` {}", show(value)));
        return;
    }
    let calls: Vec<Call> = steps.iter().map(|s| Call::new(s.as_str().into())).collect();
    if value.and_then(|v| v.get("mode")).and_then(Value::as_str) == Some("exact") {
        case.max_calls(u32::try_from(calls.len()).unwrap_or(u32::MAX));
    }
    case.set_sequence(calls, "`trajectory:tool-sequence`");
}

/// `trajectory:tool-args-match`: `{name|pattern, args|arguments, mode}`.
fn tool_args(value: Option<&Value>, case: &mut Case) {
    let what = "`trajectory:tool-args-match`";
    let spec = value.and_then(Value::as_object);
    let tool = match (
        spec.and_then(|s| s.get("name")).and_then(Value::as_str),
        spec.and_then(|s| s.get("pattern")).and_then(Value::as_str),
    ) {
        (Some(name), _) => ToolName::Literal(name.to_owned()),
        (None, Some(glob)) => ToolName::Pattern {
            pattern: glob_pattern(glob),
        },
        _ => {
            case.not_converted(format!("{what} {} (no name or pattern)", show(value)));
            return;
        }
    };
    let args = spec
        .and_then(|s| s.get("args").or_else(|| s.get("arguments")))
        .and_then(Value::as_object);
    let Some(args) = args else {
        case.not_converted(format!("{what} for {tool} without `args`"));
        return;
    };
    let args: BTreeMap<String, Value> = args.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    if args.values().any(Value::is_object) {
        case.note(format!(
            "{what}: object arguments must equal the expected object in mcpeval (promptfoo \
             matches them as a subset)"
        ));
    }
    if spec.and_then(|s| s.get("mode")).and_then(Value::as_str) == Some("exact") {
        case.not_converted(format!(
            "{what} `mode: exact` for {tool}: arguments besides the listed ones are not refused"
        ));
    }
    for key in ["defaults", "ignore"] {
        if spec.is_some_and(|s| s.contains_key(key)) {
            case.note(format!(
                "{what} `{key}` not needed: mcpeval checks only the listed arguments"
            ));
        }
    }
    case.expect_with_args(tool, args);
}

/// `trajectory:step-count` of tool steps, without a name pattern: the call counts.
fn step_count(value: Option<&Value>, case: &mut Case) {
    let spec = value.and_then(Value::as_object);
    let tools = spec.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("tool");
    let pattern = spec.is_some_and(|s| s.contains_key("pattern"));
    let count = |key| {
        spec.and_then(|s| s.get(key))
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
    };
    if !tools || pattern || (count("min").is_none() && count("max").is_none()) {
        case.not_converted(format!(
            "`trajectory:step-count` {} (only counts of all tool steps convert)",
            show(value)
        ));
        return;
    }
    if let Some(min) = count("min") {
        case.min_calls(min);
    }
    if let Some(max) = count("max") {
        case.max_calls(max);
    }
}

/// The texts of a list-taking assertion's value: a list's strings and numbers, or a string's
/// comma-separated parts (`value: 'get_weather, book_flight'`).
fn list_texts(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => s
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect(),
        other => texts(other),
    }
}

/// The texts of a value: a list's strings and numbers, or the one string or number.
fn texts(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items.iter().filter_map(text).collect(),
        other => text(other).into_iter().collect(),
    }
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn show(value: Option<&Value>) -> String {
    value.map_or_else(|| "without a value".to_owned(), Value::to_string)
}
