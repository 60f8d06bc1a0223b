//! Turns the YAML tree of one task file into tasks, recording every problem with its position.

use std::collections::BTreeMap;

use super::asks::TaskAsks;
use super::call::{after_of, call_at, call_expectations, call_spec, fixture_calls};
use super::check::{key_places, suggestion, Checker, Fields};
use super::defaults::Defaults;
use super::position::{check_positions, position_of};
use super::raw::{Node, Value};
use super::task::{
    ArgMatcher, CallSpec, Expectations, ExpectedCall, JudgeSpec, ResultCheck, Task, TaskKind,
    TaskSet, ToolName,
};
use super::validate_result::{
    answer_case, attach_snapshot, refuse_after_snapshots, refuse_call_only, result_text_keys,
    result_text_set, same_text, CALL_ONLY,
};

const TASK_KEYS: &[&str] = &[
    "id",
    "prompt",
    "kind",
    "set",
    "tools",
    "max_turns",
    "expect",
    "call",
    "trials",
    "expected_to_fail",
    "malformed",
    "setup",
    "teardown",
    "turns",
    "stop_on_failure",
    "user",
    "sampling",
    "elicitation",
    "attach",
];
const EXPECT_KEYS: &[&str] = &[
    "calls",
    "ordered",
    "forbidden_tools",
    "no_tool",
    "answer_contains",
    "answer_regex",
    "max_tool_calls",
    "min_tool_calls",
    "answer_not_contains",
    "max_latency_ms",
    "judge",
    "after",
    "sampled",
    "elicited",
    "resources_read",
    "resources_not_read",
    "prompts_used",
    "prompts_not_used",
];
/// The graders of what the host showed besides tools (`expect`).
const EXPOSURE_KEYS: &[&str] = &[
    "resources_read",
    "resources_not_read",
    "prompts_used",
    "prompts_not_used",
];
const JUDGE_KEYS: &[&str] = &["rubric", "host"];
/// The providers a `PROVIDER:MODEL` host spec may name.
const PROVIDERS: &[&str] = &["sim", "openai", "openai-responses", "anthropic"];
const CALL_KEYS: &[&str] = &["tool", "args", "result", "position"];
const TOOL_KEYS: &[&str] = &["any_of", "pattern"];
const RESULT_KEYS: &[&str] = &[
    "contains",
    "is_error",
    "equals",
    "max_chars",
    "case_sensitive",
];
const MATCHER_KEYS: &[&str] = &["regex", "any", "exact"];
const KINDS: &[(&str, TaskKind)] = &[
    ("tool", TaskKind::Tool),
    ("no-tool", TaskKind::NoTool),
    ("call", TaskKind::Call),
];
/// The keys of a model's task that a `kind: call` task has no use for, and why.
const NOT_FOR_CALLS: &[(&str, &str)] = &[
    ("prompt", "no model reads a prompt"),
    ("max_turns", "no model takes turns"),
    ("turns", "no user talks to a model"),
    ("stop_on_failure", "no user talks to a model"),
    ("user", "no user talks to a model"),
    ("attach", "no model reads an attachment"),
];
/// Trials per side of a call task unless `trials:` says otherwise.
const DEFAULT_CALL_TRIALS: u32 = 1;
const SETS: &[(&str, TaskSet)] = &[
    ("regression", TaskSet::Regression),
    ("capability", TaskSet::Capability),
];
/// `max_turns` when a task does not set it.
pub(crate) const DEFAULT_MAX_TURNS: u32 = 8;

/// What validation made of one task: its id and where it is written (for the duplicate check,
/// even when the task has other problems), and the task itself when it had none.
#[derive(Debug)]
pub(crate) struct Checked {
    pub id: Option<(String, usize, usize)>,
    pub task: Option<Task>,
}

/// Validates the root of a task file: one task (a mapping) or a list of them.
pub(crate) fn tasks_in(
    checker: &mut Checker<'_>,
    root: &Node,
    defaults: &Defaults,
) -> Vec<Checked> {
    match &root.value {
        Value::Null => {
            // A comment-only file's null sits after the comments; the file starts at 1:1.
            checker.error_at(1, 1, "empty task file (expected a task or a list of tasks)");
            Vec::new()
        }
        Value::Map(_) => vec![task(checker, root, defaults)],
        Value::Seq(items) if items.is_empty() => {
            checker.error(root, "empty list of tasks");
            Vec::new()
        }
        Value::Seq(items) => items
            .iter()
            .map(|item| task(checker, item, defaults))
            .collect(),
        other => {
            let got = other.kind();
            let message = format!("a task file holds a task or a list of tasks, got {got}");
            checker.error(root, message);
            Vec::new()
        }
    }
}

/// Validates one task mapping; what it does not say comes from `defaults`.
fn task(checker: &mut Checker<'_>, node: &Node, defaults: &Defaults) -> Checked {
    let before = checker.count();
    let Some(fields) = checker.fields(node, "task", Some(TASK_KEYS)) else {
        return Checked {
            id: None,
            task: None,
        };
    };
    let id_node = required(checker, &fields, "id", "task");
    let id = id_node.and_then(|v| id(checker, v).map(|id| (id, v.line, v.column)));
    let kind = optional(&fields, "kind", TaskKind::Tool, |v| {
        checker.choice(v, "kind", KINDS)
    });
    if kind == Some(TaskKind::Call) {
        let task = call_task(checker, &fields, id.as_ref(), before, node, defaults);
        return Checked { id, task };
    }
    for name in ["call", "trials", "expected_to_fail", "malformed"] {
        if let (Some((key, _)), Some(_)) = (fields.get(name), kind) {
            let why = match name {
                "expected_to_fail" => "a model's task is judged by comparing the sides",
                "malformed" => "a model's task sends no request of its own",
                _ => "a model's task runs the run's `--trials` and is asked through `prompt`",
            };
            checker.error(
                key,
                format!("`{name}` belongs to `kind: call` tasks ({why})"),
            );
        }
    }
    let conversation = fields.get("turns");
    let prompt = match conversation {
        Some(_) => {
            if let Some((key, _)) = fields.get("prompt") {
                let message = "`prompt` and `turns` cannot both be set: with `turns`, the first \
                               turn's `prompt` is the user's first message";
                checker.error(key, message);
            }
            Some((String::new(), None))
        }
        None => required(checker, &fields, "prompt", "task")
            .and_then(|v| super::exposure::prompt(checker, v)),
    };
    let (prompt, server_prompt) = match prompt {
        Some((text, server_prompt)) => (Some(text), server_prompt),
        None => (None, None),
    };
    let attach = super::exposure::attach(checker, &fields);
    let default_set = defaults.set.unwrap_or(TaskSet::Regression);
    let set = optional(&fields, "set", default_set, |v| {
        checker.choice(v, "set", SETS)
    });
    let tools = fields
        .get("tools")
        .map(|(_, v)| checker.string_list(v, "tools"));
    let default_turns = defaults.max_turns.unwrap_or(DEFAULT_MAX_TURNS);
    let max_turns = optional(&fields, "max_turns", default_turns, |v| {
        checker.integer(v, "max_turns", 1..=100)
    });
    let judge_host = defaults.judge_host.as_deref();
    let fixtures = fixtures(checker, &fields, defaults);
    let Conversation {
        turns,
        user,
        stop_on_failure,
    } = conversation_keys(checker, &fields, kind, max_turns, judge_host);
    let turns_graded = (turns.iter().flatten()).any(|t| t.expect.is_some());
    let asks = task_asks(checker, &fields, defaults);
    let by_user =
        (asks.iter()).any(|a| matches!(a.elicitation, Some(super::asks::Elicitation::User)));
    if let (true, Some(None)) = (by_user, &user) {
        let at = fields.get("elicitation").map_or(node, |(key, _)| key);
        let message = "`elicitation: {user: true}` is answered by the task's simulated user: \
                       add `user: {host, goal}`, or answer with `{answers: …}` or `{action: …}`";
        checker.error(at, message);
    }
    let expect = match (fields.get("expect"), kind) {
        (Some((key, value)), kind) => expectations(checker, key, value, kind, judge_host),
        (None, Some(TaskKind::Tool)) if turns_graded => Some(Expectations::default()),
        // Turns that are themselves invalid have said so.
        (None, Some(TaskKind::Tool)) if conversation.is_some() && turns.is_none() => None,
        (None, Some(TaskKind::Tool)) if conversation.is_some() => {
            let message = "a conversation needs an `expect` on the task or on one of its turns";
            checker.error(node, message);
            None
        }
        (None, Some(TaskKind::Tool)) => {
            checker.missing(&fields, "expect", "task");
            None
        }
        // `no-tool` implies `no_tool`; with an invalid kind the kind's error says enough.
        (None, _) => Some(Expectations::default()),
    };
    let mut task = None;
    if checker.count() == before {
        if let (
            Some((id, ..)),
            Some(prompt),
            Some(kind),
            Some(set),
            Some(max_turns),
            Some(mut expect),
            Some((setup, teardown, after)),
            Some(turns),
            Some(stop_on_failure),
            Some(user),
            Some(asks),
            Some(attach),
        ) = (
            &id,
            prompt,
            kind,
            set,
            max_turns,
            expect,
            fixtures,
            turns,
            stop_on_failure,
            user,
            asks,
            attach,
        ) {
            expect.no_tool |= kind == TaskKind::NoTool;
            let turn_calls = turns.iter().filter_map(|t| t.expect.as_ref());
            let all_calls: Vec<ExpectedCall> = (expect.calls.iter())
                .chain(turn_calls.flat_map(|e| &e.calls))
                .cloned()
                .collect();
            let tools = match tools {
                Some(Some(tools)) => tools,
                _ => called_tools(&all_calls),
            };
            let prompt = match turns.first() {
                Some(first) => first.prompt.clone(),
                None => prompt,
            };
            let source = format!("{}:{}", checker.file().display(), node.line);
            task = Some(Task {
                id: id.clone(),
                prompt,
                kind,
                set,
                tools,
                max_turns,
                expect,
                call: None,
                call_expect: Default::default(),
                trials: None,
                expected_to_fail: false,
                malformed: false,
                setup,
                teardown,
                after,
                source,
                call_at: Default::default(),
                turns,
                stop_on_failure,
                user,
                asks,
                attach,
                server_prompt,
            });
        }
    }
    Checked { id, task }
}

/// A task's conversation keys, each `None` when invalid (its problem recorded).
struct Conversation {
    /// `turns:` (empty without it).
    turns: Option<Vec<super::task::UserTurn>>,
    /// `user:` (`Some(None)` without it).
    user: Option<Option<super::task::SimulatedUser>>,
    stop_on_failure: Option<bool>,
}

/// `turns` (scripted user turns, whose `max_turns` is the task's unless set), `user` (a
/// simulated user beside `prompt`, not with `turns`) and `stop_on_failure` (with `turns`).
fn conversation_keys(
    checker: &mut Checker<'_>,
    fields: &Fields<'_>,
    kind: Option<TaskKind>,
    max_turns: Option<u32>,
    judge_host: Option<&str>,
) -> Conversation {
    let scripted = fields.get("turns");
    let stop_on_failure = optional(fields, "stop_on_failure", false, |v| {
        checker.boolean(v, "stop_on_failure")
    });
    if let (Some((key, _)), None) = (fields.get("stop_on_failure"), scripted) {
        checker.error(key, "`stop_on_failure` applies to a conversation (`turns`)");
    }
    if let (Some((key, _)), Some(_)) = (fields.get("user"), scripted) {
        let message = "`user` and `turns` cannot both be set: a conversation's user messages \
                       are scripted (`turns`) or written by a simulated user (`user` beside \
                       `prompt`)";
        checker.error(key, message);
    }
    let graders =
        |c: &mut Checker<'_>, k: &Node, v: &Node, kind| expectations(c, k, v, kind, judge_host);
    let turns = match scripted {
        Some((_, value)) => super::turns::user_turns(checker, value, kind, max_turns, graders),
        None => Some(Vec::new()),
    };
    let user = match (fields.get("user"), scripted) {
        (Some((_, value)), None) => {
            super::turns::simulated_user(checker, value, kind, graders).map(Some)
        }
        _ => Some(None),
    };
    Conversation {
        turns,
        user,
        stop_on_failure,
    }
}

/// A task's `setup`, `teardown` and `expect.after` (empty where absent; `None` if invalid).
fn fixtures(
    checker: &mut Checker<'_>,
    fields: &Fields<'_>,
    defaults: &Defaults,
) -> Option<Fixtures> {
    let list =
        |checker: &mut Checker<'_>, name: &str, default: &Option<Vec<_>>| match fields.get(name) {
            Some((_, v)) => fixture_calls(checker, v, name),
            None => Some(default.clone().unwrap_or_default()),
        };
    let setup = list(checker, "setup", &defaults.setup);
    let teardown = list(checker, "teardown", &defaults.teardown);
    let after = match fields.get("expect") {
        Some((_, v)) => after_of(checker, v),
        None => Some(Vec::new()),
    };
    if let Some(after) = &after {
        refuse_after_snapshots(checker, after);
    }
    Some((setup?, teardown?, after?))
}

type Fixtures = (
    Vec<super::task::FixtureCall>,
    Vec<super::task::FixtureCall>,
    Vec<super::task::AfterCheck>,
);

/// A `kind: call` task: its request, its checks and its trials; no prompt, no model.
fn call_task(
    checker: &mut Checker<'_>,
    fields: &Fields<'_>,
    id: Option<&(String, usize, usize)>,
    before: usize,
    node: &Node,
    defaults: &Defaults,
) -> Option<Task> {
    for (name, why) in NOT_FOR_CALLS {
        if let Some((key, _)) = fields.get(name) {
            checker.error(
                key,
                format!("`{name}` does not apply to a `kind: call` task: {why}"),
            );
        }
    }
    let call = required(checker, fields, "call", "a `kind: call` task")
        .and_then(|v| call_spec(checker, v));
    let set = optional(
        fields,
        "set",
        defaults.set.unwrap_or(TaskSet::Regression),
        |v| checker.choice(v, "set", SETS),
    );
    let tools = fields
        .get("tools")
        .map(|(_, v)| checker.string_list(v, "tools"));
    let trials = optional(fields, "trials", DEFAULT_CALL_TRIALS, |v| {
        checker.integer(v, "trials", 1..=1000)
    });
    let expected_to_fail = optional(fields, "expected_to_fail", false, |v| {
        checker.boolean(v, "expected_to_fail")
    });
    let malformed = optional(fields, "malformed", false, |v| {
        checker.boolean(v, "malformed")
    });
    let expect = required(checker, fields, "expect", "a `kind: call` task")
        .and_then(|v| call_expectations(checker, fields.get("expect")?.0, v));
    let fixtures = fixtures(checker, fields, defaults);
    let asks = task_asks(checker, fields, defaults);
    let by_user =
        (asks.iter()).any(|a| matches!(a.elicitation, Some(super::asks::Elicitation::User)));
    if by_user {
        let at = fields.get("elicitation").map_or(node, |(key, _)| key);
        let message = "`elicitation: {user: true}` needs a simulated user, which a `kind: call` \
                       task has none of: answer with `{answers: …}` or `{action: …}`";
        checker.error(at, message);
    }
    if checker.count() > before {
        return None;
    }
    let (call, set, trials, mut call_expect) = (call?, set?, trials?, expect?);
    attach_snapshot(checker, &mut call_expect, &id?.0);
    if checker.count() > before {
        return None;
    }
    let (expected_to_fail, malformed) = (expected_to_fail?, malformed?);
    let (setup, teardown, after) = fixtures?;
    let tools = match (tools, &call) {
        (Some(Some(tools)), _) => tools,
        (_, CallSpec::Tool { name, .. }) => vec![name.clone()],
        _ => Vec::new(),
    };
    Some(Task {
        id: id?.0.clone(),
        prompt: String::new(),
        kind: TaskKind::Call,
        set,
        tools,
        max_turns: 0,
        expect: Expectations::default(),
        call: Some(call),
        call_expect,
        trials: Some(trials),
        expected_to_fail,
        malformed,
        setup,
        teardown,
        after,
        source: format!("{}:{}", checker.file().display(), node.line),
        call_at: fields
            .get("call")
            .map(|(_, v)| call_at(v))
            .unwrap_or_default(),
        turns: Vec::new(),
        stop_on_failure: false,
        user: None,
        asks: asks?,
        attach: Vec::new(),
        server_prompt: None,
    })
}

/// A task's `sampling`, `elicitation` (its own, else the defaults') and the graders of them in
/// `expect` (`None` if one is invalid).
fn task_asks(
    checker: &mut Checker<'_>,
    fields: &Fields<'_>,
    defaults: &Defaults,
) -> Option<TaskAsks> {
    let before = checker.count();
    let mut asks = TaskAsks {
        sampling: defaults.sampling.clone().map(|(s, _)| s),
        host_at: defaults.sampling.clone().and_then(|(_, at)| at),
        elicitation: defaults.elicitation.clone(),
        ..TaskAsks::default()
    };
    if let Some((_, v)) = fields.get("sampling") {
        if let Some((sampling, at)) = super::asks::sampling(checker, v, sampling_host) {
            (asks.sampling, asks.host_at) = (Some(sampling), at);
        }
    }
    if let Some((_, v)) = fields.get("elicitation") {
        asks.elicitation = super::asks::elicitation(checker, v);
    }
    if let Some((_, v)) = fields.get("expect") {
        asks.expect = super::asks::ask_expect(checker, v).unwrap_or_default();
    }
    (checker.count() == before).then_some(asks)
}

/// `sampling.host`: a host spec as `judge.host` takes it.
pub(crate) fn sampling_host(checker: &mut Checker<'_>, value: &Node) -> Option<String> {
    host_spec_named(checker, value, "sampling.host")
}

/// The value of a required key, or a "missing" diagnostic.
fn required<'n>(
    checker: &mut Checker<'_>,
    fields: &Fields<'n>,
    name: &str,
    place: &str,
) -> Option<&'n Node> {
    let value = fields.get(name).map(|(_, value)| value);
    if value.is_none() {
        checker.missing(fields, name, place);
    }
    value
}

/// `Some(default)` when the key is absent, the checked value when present (`None` if invalid).
fn optional<T>(
    fields: &Fields<'_>,
    name: &str,
    default: T,
    check: impl FnOnce(&Node) -> Option<T>,
) -> Option<T> {
    match fields.get(name) {
        Some((_, value)) => check(value),
        None => Some(default),
    }
}

fn id(checker: &mut Checker<'_>, value: &Node) -> Option<String> {
    let id = checker.string(value, "id")?;
    let mut chars = id.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let rest_ok =
        chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'));
    if first_ok && rest_ok {
        return Some(id);
    }
    checker.error(
        value,
        format!(
            "invalid id `{id}`: use lower-case letters, digits, `.`, `_` and `-`, \
             starting with a letter or digit"
        ),
    );
    None
}

/// The tools named in the expected calls (a pattern names none), each once, in order: the
/// default of `tools`.
fn called_tools(calls: &[ExpectedCall]) -> Vec<String> {
    let mut tools: Vec<String> = Vec::new();
    for name in calls.iter().flat_map(|c| c.tool.names()) {
        if !tools.contains(name) {
            tools.push(name.clone());
        }
    }
    tools
}

/// Validates `expect`; `kind` is `None` when the task's kind was itself invalid.
fn expectations(
    checker: &mut Checker<'_>,
    key: &Node,
    node: &Node,
    kind: Option<TaskKind>,
    judge_host: Option<&str>,
) -> Option<Expectations> {
    let before = checker.count();
    refuse_call_only(checker, node);
    let mut known = EXPECT_KEYS.to_vec();
    known.push("case_sensitive");
    known.extend(CALL_ONLY.iter().map(|(k, _)| *k));
    let fields = checker.fields(node, "`expect`", Some(&known))?;
    let mut expect = Expectations {
        case_sensitive: answer_case(checker, &fields),
        ..Expectations::default()
    };
    if let Some((calls_key, value)) = fields.get("calls") {
        expect.calls = expected_calls(checker, value).unwrap_or_default();
        if kind == Some(TaskKind::NoTool) && !expect.calls.is_empty() {
            checker.error(calls_key, "a `kind: no-tool` task cannot expect calls");
        }
    }
    if let Some((_, value)) = fields.get("ordered") {
        expect.ordered = checker.boolean(value, "ordered").unwrap_or_default();
    }
    if let Some((_, value)) = fields.get("forbidden_tools") {
        expect.forbidden_tools = checker
            .string_list(value, "forbidden_tools")
            .unwrap_or_default();
        expect.forbidden_at = match &value.value {
            Value::Seq(items) => items.iter().map(|i| (i.line, i.column)).collect(),
            _ => Vec::new(),
        };
        let both = expect.forbidden_tools.iter().find(|t| {
            expect
                .calls
                .iter()
                .any(|c| matches!(&c.tool, ToolName::Literal(name) if name == *t))
        });
        if let Some(tool) = both {
            checker.error(value, format!("`{tool}` is both expected and forbidden"));
        }
    }
    if let Some((no_tool_key, value)) = fields.get("no_tool") {
        expect.no_tool = checker.boolean(value, "no_tool").unwrap_or_default();
        if expect.no_tool && !expect.calls.is_empty() {
            checker.error(
                no_tool_key,
                "`no_tool: true` contradicts the expected `calls`",
            );
        }
    }
    if let Some((_, value)) = fields.get("answer_contains") {
        expect.answer_contains = checker
            .string_list(value, "answer_contains")
            .unwrap_or_default();
    }
    if let Some((_, value)) = fields.get("answer_regex") {
        expect.answer_regex = checker.regex(value, "answer_regex");
    }
    if let Some((_, value)) = fields.get("max_tool_calls") {
        expect.max_tool_calls = checker.integer(value, "max_tool_calls", 0..=u32::MAX);
    }
    if let Some((_, value)) = fields.get("min_tool_calls") {
        expect.min_tool_calls = checker.integer(value, "min_tool_calls", 1..=u32::MAX);
        if let (Some(min), Some(max)) = (expect.min_tool_calls, expect.max_tool_calls) {
            if min > max {
                let message = format!("`min_tool_calls` ({min}) is above `max_tool_calls` ({max})");
                checker.error(value, message);
            }
        }
        if kind == Some(TaskKind::NoTool) {
            checker.error(value, "a `kind: no-tool` task cannot expect tool calls");
        }
    }
    if let Some((_, value)) = fields.get("answer_not_contains") {
        expect.answer_not_contains = checker
            .string_list(value, "answer_not_contains")
            .unwrap_or_default();
        let both = expect.answer_not_contains.iter().find(|t| {
            let case = expect.case_sensitive;
            expect.answer_contains.iter().any(|a| same_text(a, t, case))
        });
        if let Some(text) = both {
            checker.error(
                value,
                format!("`{text}` is both required and forbidden in the answer"),
            );
        }
    }
    if let Some((_, value)) = fields.get("max_latency_ms") {
        expect.max_latency_ms = checker
            .integer(value, "max_latency_ms", 1..=u32::MAX)
            .map(u64::from);
    }
    if let Some((_, value)) = fields.get("judge") {
        expect.judge = judge(checker, value, judge_host);
    }
    for key in EXPOSURE_KEYS {
        let Some((_, value)) = fields.get(key) else {
            continue;
        };
        let list = super::exposure::names(checker, value, key).unwrap_or_default();
        match *key {
            "resources_read" => expect.resources_read = list,
            "resources_not_read" => expect.resources_not_read = list,
            "prompts_used" => expect.prompts_used = list,
            _ => expect.prompts_not_used = list,
        }
    }
    if let Some((_, calls)) = fields.get("calls") {
        check_positions(checker, &expect, calls);
    }
    if checker.count() > before {
        return None;
    }
    let has_grader = !expect.calls.is_empty()
        || !expect.forbidden_tools.is_empty()
        || expect.no_tool
        || !expect.answer_contains.is_empty()
        || expect.answer_regex.is_some()
        || expect.max_tool_calls.is_some()
        || expect.min_tool_calls.is_some()
        || !expect.answer_not_contains.is_empty()
        || expect.max_latency_ms.is_some()
        || expect.judge.is_some()
        || expect.grades_exposure()
        || fields.get("after").is_some()
        || fields.get("sampled").is_some()
        || fields.get("elicited").is_some()
        || kind == Some(TaskKind::NoTool);
    if !has_grader {
        let keys = EXPECT_KEYS.iter().filter(|k| **k != "ordered");
        let keys: Vec<String> = keys.map(|k| format!("`{k}`")).collect();
        let message = format!("`expect` sets no grader: set one of {}", keys.join(", "));
        checker.error(key, message);
        return None;
    }
    Some(expect)
}

/// `judge: {rubric, host}`: a non-empty rubric and a host spec (the `defaults.yaml` host where
/// the task names none).
fn judge(checker: &mut Checker<'_>, node: &Node, default_host: Option<&str>) -> Option<JudgeSpec> {
    let fields = checker.fields(node, "`judge`", Some(JUDGE_KEYS))?;
    let rubric = required(checker, &fields, "rubric", "`judge`")
        .and_then(|v| checker.non_empty_string(v, "judge.rubric"));
    let host = match (fields.get("host"), default_host) {
        (Some((_, v)), _) => host_spec(checker, v),
        (None, Some(host)) => Some(host.to_owned()),
        (None, None) => {
            checker.missing(
                &fields,
                "host",
                "`judge` (or set `judge.host` in a defaults.yaml)",
            );
            None
        }
    };
    Some(JudgeSpec {
        rubric: rubric?,
        host: host?,
    })
}

/// A host spec as `--host` takes it: `sim`, `PROVIDER:MODEL`, or the name of a `[host.NAME]`
/// (whether that name exists is checked against the config when a run starts).
fn host_spec(checker: &mut Checker<'_>, value: &Node) -> Option<String> {
    host_spec_named(checker, value, "judge.host")
}

/// A host spec under the key `name` (`judge.host`, `user.host`), checked as [`host_spec`].
pub(super) fn host_spec_named(
    checker: &mut Checker<'_>,
    value: &Node,
    name: &str,
) -> Option<String> {
    let spec = checker.non_empty_string(value, name)?;
    let problem = if spec.chars().any(char::is_whitespace) {
        Some("a host spec has no spaces".to_owned())
    } else if let Some((provider, model)) = spec.split_once(':') {
        if !PROVIDERS.contains(&provider) {
            let hint = suggestion(provider, PROVIDERS);
            Some(format!("unknown provider `{provider}`{hint}"))
        } else if model.is_empty() {
            Some(format!("no model after `{provider}:`"))
        } else {
            None
        }
    } else {
        None
    };
    let Some(problem) = problem else {
        return Some(spec);
    };
    checker.error(
        value,
        format!(
            "invalid `{name}` `{spec}`: {problem} (expected `sim`, `openai:MODEL`, \
             `anthropic:MODEL` or the name of a [host.NAME] in the config)"
        ),
    );
    None
}

fn expected_calls(checker: &mut Checker<'_>, node: &Node) -> Option<Vec<ExpectedCall>> {
    let Value::Seq(items) = &node.value else {
        checker.wrong_type(node, "calls", "a list of expected calls");
        return None;
    };
    let calls: Vec<_> = items
        .iter()
        .map(|item| expected_call(checker, item))
        .collect();
    calls.into_iter().collect()
}

fn expected_call(checker: &mut Checker<'_>, node: &Node) -> Option<ExpectedCall> {
    let fields = checker.fields(node, "expected call", Some(CALL_KEYS))?;
    let tool_node = required(checker, &fields, "tool", "expected call");
    let at = tool_node.map(|v| (v.line, v.column));
    let tool = tool_node.and_then(|v| tool(checker, v));
    let args = match fields.get("args") {
        Some((_, value)) => arguments(checker, value),
        None => Some(BTreeMap::new()),
    };
    let args_at = fields
        .get("args")
        .map(|(_, value)| key_places(value))
        .unwrap_or_default();
    let result = match fields.get("result") {
        Some((_, value)) => result(checker, value).map(Some),
        None => Some(None),
    };
    let position = match fields.get("position") {
        Some((_, value)) => position_of(checker, value).map(Some),
        None => Some(None),
    };
    Some(ExpectedCall {
        tool: tool?,
        args: args?,
        result: result?,
        position: position?,
        at,
        args_at,
    })
}

/// `tool`: a name (always literal), `{any_of: [a, b]}` or `{pattern: "regex"}`.
fn tool(checker: &mut Checker<'_>, node: &Node) -> Option<ToolName> {
    if !matches!(node.value, Value::Map(_)) {
        return checker
            .non_empty_string(node, "tool")
            .map(ToolName::Literal);
    }
    let fields = checker.fields(node, "`tool`", Some(TOOL_KEYS))?;
    match (fields.get("any_of"), fields.get("pattern")) {
        (Some((_, names)), None) => {
            let names = checker.string_list(names, "tool.any_of")?;
            if names.len() < 2 {
                checker.error(
                    node,
                    "`tool.any_of` needs two names or more (one is a plain `tool`)",
                );
                return None;
            }
            Some(ToolName::AnyOf { any_of: names })
        }
        (None, Some((_, pattern))) => checker
            .regex(pattern, "tool.pattern")
            .map(|pattern| ToolName::Pattern { pattern }),
        // Unknown keys were named already.
        (None, None) if matches!(&node.value, Value::Map(m) if !m.is_empty()) => None,
        _ => {
            checker.error(
                node,
                "`tool` as a mapping takes one of `any_of` or `pattern`",
            );
            None
        }
    }
}

/// `result: {contains: [...], is_error: bool}`.
fn result(checker: &mut Checker<'_>, node: &Node) -> Option<ResultCheck> {
    let before = checker.count();
    let fields = checker.fields(node, "`result`", Some(RESULT_KEYS))?;
    let mut check = ResultCheck::default();
    if let Some((_, value)) = fields.get("contains") {
        check.contains = checker
            .string_list(value, "result.contains")
            .unwrap_or_default();
    }
    if let Some((_, value)) = fields.get("is_error") {
        check.is_error = checker.boolean(value, "result.is_error");
    }
    result_text_keys(checker, &fields, &mut check);
    let empty = check.contains.is_empty() && check.is_error.is_none() && !result_text_set(&check);
    if checker.count() == before && empty {
        // The message names the keys `result` takes (`equals` and `max_chars` are issue 37's).
        checker.error(
            node,
            "`result` checks nothing: set `contains`, `is_error`, `equals` or `max_chars`",
        );
    }
    (checker.count() == before).then_some(check)
}

fn arguments(checker: &mut Checker<'_>, node: &Node) -> Option<BTreeMap<String, ArgMatcher>> {
    let fields = checker.fields(node, "`args`", None)?;
    let mut args = BTreeMap::new();
    let mut ok = true;
    for (name, _, value) in &fields.entries {
        match matcher(checker, name, value) {
            Some(m) => drop(args.insert((*name).to_owned(), m)),
            None => ok = false,
        }
    }
    ok.then_some(args)
}

/// A plain value is a literal; a mapping must be one of `{regex: …}`, `{any: true}`, `{exact: …}`.
fn matcher(checker: &mut Checker<'_>, arg: &str, node: &Node) -> Option<ArgMatcher> {
    let Value::Map(entries) = &node.value else {
        return checker.json(node).map(ArgMatcher::Literal);
    };
    let [(key, value)] = entries.as_slice() else {
        let message = format!(
            "argument `{arg}` must be a plain value or one matcher: {{regex: …}}, {{any: true}} \
             or {{exact: …}} (wrap objects in `exact`)"
        );
        checker.error(node, message);
        return None;
    };
    match &key.value {
        Value::Str(k) if k == "regex" => {
            let name = format!("args.{arg}.regex");
            checker
                .regex(value, &name)
                .map(|regex| ArgMatcher::Regex { regex })
        }
        Value::Str(k) if k == "any" => match value.value {
            Value::Bool(true) => Some(ArgMatcher::Any { any: true }),
            _ => {
                checker.error(value, format!("`args.{arg}.any` must be `true`"));
                None
            }
        },
        Value::Str(k) if k == "exact" => {
            checker.json(value).map(|exact| ArgMatcher::Exact { exact })
        }
        other => {
            let shown = match other {
                Value::Str(s) => s.clone(),
                _ => other.kind().to_owned(),
            };
            let hint = suggestion(&shown, MATCHER_KEYS);
            let message = format!(
                "unknown matcher `{shown}` for argument `{arg}`{hint}: use `regex`, `any` or \
                 `exact` (wrap objects in `exact`)"
            );
            checker.error(key, message);
            None
        }
    }
}
