//! Validation of `kind: call` tasks: the request (`call:`) and the checks of its answer.

use std::collections::BTreeMap;

use super::check::{key_places, Checker};
use super::raw::{Node, Value};
use super::retry::{misplaced_retry, retry_of, RETRY_KEYS};
use super::task::{AfterCheck, CallAt, CallExpectations, CallSpec, FixtureCall, StructuredCheck};
use super::validate_result::call_result_keys;

const CALL_SPEC_KEYS: &[&str] = &["tool", "resource", "prompt", "args"];
pub(crate) const CALL_EXPECT_KEYS: &[&str] = &[
    "is_error",
    "error_code",
    "result_contains",
    "result_not_contains",
    "structured",
    "output_schema",
    "max_latency_ms",
    "after",
    "result_equals",
    "result_snapshot",
    "max_result_chars",
    "case_sensitive",
    "sampled",
    "elicited",
];
const FIXTURE_KEYS: &[&str] = &["tool", "args"];
const AFTER_KEYS: &[&str] = &["call", "expect", "within_ms", "every_ms"];
/// The graders of a model's trial: named when a call task sets one.
const MODEL_ONLY: &[(&str, &str)] = &[
    ("calls", "the request is `call:`"),
    ("ordered", "the request is `call:`"),
    ("forbidden_tools", "the request is `call:`"),
    ("no_tool", "the request is `call:`"),
    ("answer_contains", "use `result_contains`"),
    ("answer_not_contains", "use `result_not_contains`"),
    ("answer_regex", "use `result_contains` or `structured`"),
    ("max_tool_calls", "it makes one request"),
    ("min_tool_calls", "it makes one request"),
    ("judge", "its answer is checked exactly"),
];
const STRUCTURED_KEYS: &[&str] = &["path", "equals"];

/// `call: {tool: NAME, args: {…}}`, `{resource: URI}` or `{prompt: NAME, args: {…}}`.
pub(crate) fn call_spec(checker: &mut Checker<'_>, node: &Node) -> Option<CallSpec> {
    let before = checker.count();
    let fields = checker.fields(node, "`call`", Some(CALL_SPEC_KEYS))?;
    let targets: Vec<&str> = ["tool", "resource", "prompt"]
        .into_iter()
        .filter(|k| fields.get(k).is_some())
        .collect();
    if targets.len() != 1 {
        let got = match targets.len() {
            0 => "none".to_owned(),
            _ => targets
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(" and "),
        };
        checker.error(
            node,
            format!("`call` takes one of `tool`, `resource` or `prompt`, got {got}"),
        );
        return None;
    }
    let args = fields.get("args").map(|(_, v)| v);
    let spec = match targets[0] {
        "tool" => {
            let name = checker.non_empty_string(fields.get("tool")?.1, "call.tool");
            let args = match args {
                Some(value) => match checker.json(value)? {
                    serde_json::Value::Object(map) => Some(map),
                    _ => {
                        checker.wrong_type(value, "call.args", "a mapping of arguments");
                        None
                    }
                },
                None => Some(serde_json::Map::new()),
            };
            CallSpec::Tool {
                name: name?,
                args: args?,
            }
        }
        "resource" => {
            if let Some(value) = args {
                checker.error(
                    value,
                    "a resource read takes no `args` (its URI says it all)",
                );
            }
            let uri = checker.non_empty_string(fields.get("resource")?.1, "call.resource")?;
            CallSpec::Resource { uri }
        }
        _ => {
            let name = checker.non_empty_string(fields.get("prompt")?.1, "call.prompt");
            let args = match args {
                Some(value) => prompt_args(checker, value, "call.args"),
                None => Some(BTreeMap::new()),
            };
            CallSpec::Prompt {
                name: name?,
                args: args?,
            }
        }
    };
    (checker.count() == before).then_some(spec)
}

/// Where the request `node` (a `call:` mapping) names its tool or prompt and each argument.
pub(crate) fn call_at(node: &Node) -> CallAt {
    let Value::Map(entries) = &node.value else {
        return CallAt::default();
    };
    let value = |name: &str| {
        (entries.iter())
            .find(|(k, _)| k.value == Value::Str(name.into()))
            .map(|(_, v)| v)
    };
    CallAt {
        tool: (value("tool").or_else(|| value("prompt"))).map(|v| (v.line, v.column)),
        args: value("args").map(key_places).unwrap_or_default(),
    }
}

/// A prompt's arguments (`what`: where they are written, for messages): strings, as
/// `prompts/get` takes them.
pub(crate) fn prompt_args(
    checker: &mut Checker<'_>,
    node: &Node,
    what: &str,
) -> Option<BTreeMap<String, String>> {
    let fields = checker.fields(node, &format!("`{what}`"), None)?;
    let mut args = BTreeMap::new();
    let mut ok = true;
    for (name, _, value) in &fields.entries {
        match &value.value {
            Value::Str(s) => drop(args.insert((*name).to_owned(), s.clone())),
            _ => {
                let arg = format!("{what}.{name}");
                checker.wrong_type(value, &arg, "a string (prompt arguments are strings)");
                ok = false;
            }
        }
    }
    ok.then_some(args)
}

/// The `expect` of a call task: what its one answer must be.
pub(crate) fn call_expectations(
    checker: &mut Checker<'_>,
    key: &Node,
    node: &Node,
) -> Option<CallExpectations> {
    let before = checker.count();
    // The model's graders get a message of their own, not "unknown key".
    if let Value::Map(entries) = &node.value {
        for (k, _) in entries {
            if let Value::Str(name) = &k.value {
                if let Some((_, instead)) = MODEL_ONLY.iter().find(|(m, _)| m == name) {
                    checker.error(
                        k,
                        format!("`{name}` grades a model's trial; a `kind: call` task has no model ({instead})"),
                    );
                }
            }
        }
    }
    let mut known: Vec<&str> = CALL_EXPECT_KEYS.to_vec();
    known.extend(MODEL_ONLY.iter().map(|(k, _)| *k));
    let fields = checker.fields(node, "`expect`", Some(&known))?;
    let mut expect = CallExpectations::default();
    if let Some((_, value)) = fields.get("is_error") {
        expect.is_error = checker.boolean(value, "is_error");
    }
    if let Some((_, value)) = fields.get("error_code") {
        expect.error_code = match value.value {
            Value::Int(n) => Some(n),
            Value::UInt(n) => i64::try_from(n).ok(),
            _ => None,
        };
        if expect.error_code.is_none() {
            checker.wrong_type(value, "error_code", "an integer (a JSON-RPC error code)");
        }
    }
    if let (Some(true), Some(_)) = (expect.is_error, expect.error_code) {
        let (k, _) = fields.get("error_code")?;
        checker.error(
            k,
            "`is_error: true` expects a result and `error_code` a JSON-RPC error: set one",
        );
    }
    if let Some((_, value)) = fields.get("result_contains") {
        expect.result_contains = checker
            .string_list(value, "result_contains")
            .unwrap_or_default();
    }
    if let Some((_, value)) = fields.get("result_not_contains") {
        expect.result_not_contains = checker
            .string_list(value, "result_not_contains")
            .unwrap_or_default();
    }
    if let Some((_, value)) = fields.get("structured") {
        expect.structured = structured(checker, value).unwrap_or_default();
    }
    if let Some((_, value)) = fields.get("output_schema") {
        expect.output_schema = checker.boolean(value, "output_schema").unwrap_or_default();
    }
    if let Some((_, value)) = fields.get("max_latency_ms") {
        expect.max_latency_ms = checker
            .integer(value, "max_latency_ms", 1..=u32::MAX)
            .map(u64::from);
    }
    call_result_keys(checker, &fields, &mut expect);
    if checker.count() > before {
        return None;
    }
    let asks_graded = fields.get("sampled").is_some() || fields.get("elicited").is_some();
    if expect.is_empty() && fields.get("after").is_none() && !asks_graded {
        let keys = CALL_EXPECT_KEYS.iter().filter(|k| **k != "case_sensitive");
        let keys: Vec<String> = keys.map(|k| format!("`{k}`")).collect();
        let message = format!("`expect` sets no check: set one of {}", keys.join(", "));
        checker.error(key, message);
        return None;
    }
    Some(expect)
}

/// `setup:` / `teardown:`: a list of `{tool, args}` calls.
pub(crate) fn fixture_calls(
    checker: &mut Checker<'_>,
    node: &Node,
    name: &str,
) -> Option<Vec<FixtureCall>> {
    let Value::Seq(items) = &node.value else {
        checker.wrong_type(node, name, "a list of `{tool, args}` calls");
        return None;
    };
    let calls: Vec<Option<FixtureCall>> = items
        .iter()
        .map(|item| fixture_call(checker, item, name))
        .collect();
    calls.into_iter().collect()
}

fn fixture_call(checker: &mut Checker<'_>, node: &Node, place: &str) -> Option<FixtureCall> {
    let misplaced = misplaced_retry(checker, node, place);
    let known = [FIXTURE_KEYS, RETRY_KEYS].concat();
    let fields = checker.fields(node, &format!("a `{place}` call"), Some(&known))?;
    if misplaced {
        return None;
    }
    let Some((_, tool_node)) = fields.get("tool") else {
        checker.missing(&fields, "tool", &format!("a `{place}` call"));
        return None;
    };
    let tool = checker.non_empty_string(tool_node, &format!("{place}.tool"));
    let args = match fields.get("args") {
        Some((_, value)) => match checker.json(value)? {
            serde_json::Value::Object(map) => Some(map),
            _ => {
                checker.wrong_type(value, &format!("{place}.args"), "a mapping of arguments");
                None
            }
        },
        None => Some(serde_json::Map::new()),
    };
    Some(FixtureCall {
        tool: tool?,
        args: args?,
        at: Some((tool_node.line, tool_node.column)),
        args_at: fields
            .get("args")
            .map(|(_, v)| key_places(v))
            .unwrap_or_default(),
        file: Some(checker.file().to_path_buf()),
    })
}

/// The `after` checks of an `expect` mapping, if it has any.
pub(crate) fn after_of(checker: &mut Checker<'_>, expect: &Node) -> Option<Vec<AfterCheck>> {
    let Value::Map(entries) = &expect.value else {
        return Some(Vec::new());
    };
    let Some((_, node)) = entries
        .iter()
        .find(|(k, _)| k.value == Value::Str("after".into()))
    else {
        return Some(Vec::new());
    };
    let Value::Seq(items) = &node.value else {
        checker.wrong_type(node, "after", "a list of `{call, expect}` checks");
        return None;
    };
    let checks: Vec<Option<AfterCheck>> = items
        .iter()
        .map(|item| {
            let fields = checker.fields(item, "an `after` check", Some(AFTER_KEYS))?;
            let call = match fields.get("call") {
                Some((_, v)) => fixture_call(checker, v, "after.call"),
                None => {
                    checker.missing(&fields, "call", "an `after` check");
                    None
                }
            };
            let expect = match fields.get("expect") {
                Some((_, v)) if misplaced_retry(checker, v, "expect") => None,
                Some((key, v)) if !has_key(v, "after") => call_expectations(checker, key, v),
                Some((key, _)) => {
                    checker.error(key, "an `after` check cannot hold `after` checks");
                    None
                }
                None => {
                    checker.missing(&fields, "expect", "an `after` check");
                    None
                }
            };
            let (within_ms, every_ms) = retry_of(checker, &fields)?;
            Some(AfterCheck {
                call: call?,
                expect: expect?,
                within_ms,
                every_ms,
            })
        })
        .collect();
    checks.into_iter().collect()
}

fn has_key(node: &Node, key: &str) -> bool {
    matches!(&node.value, Value::Map(entries) if entries.iter().any(|(k, _)| k.value == Value::Str(key.into())))
}

/// `structured: [{path: "$.a.b", equals: …}]`.
fn structured(checker: &mut Checker<'_>, node: &Node) -> Option<Vec<StructuredCheck>> {
    let Value::Seq(items) = &node.value else {
        checker.wrong_type(node, "structured", "a list of `{path, equals}` checks");
        return None;
    };
    let checks: Vec<Option<StructuredCheck>> = items
        .iter()
        .map(|item| {
            let fields = checker.fields(item, "a `structured` check", Some(STRUCTURED_KEYS))?;
            let Some((_, path_node)) = fields.get("path") else {
                checker.missing(&fields, "path", "a `structured` check");
                return None;
            };
            let path = checker.non_empty_string(path_node, "structured.path")?;
            if let Err(e) = serde_json_path::JsonPath::parse(&path) {
                let why = e.to_string();
                let why = why.lines().next().unwrap_or_default();
                checker.error(
                    path_node,
                    format!("invalid JSONPath in `structured.path`: {why} (a path starts at `$`, as `$.issue.state`)"),
                );
                return None;
            }
            let equals = match fields.get("equals") {
                Some((_, value)) => Some(checker.json(value)?),
                None => None,
            };
            Some(StructuredCheck { path, equals })
        })
        .collect();
    checks.into_iter().collect()
}
