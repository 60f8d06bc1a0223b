//! A conversation's keys: `turns:` (scripted user turns, each graded on its own) and
//! `stop_on_failure`, checked with their positions like the rest of a task.

use super::check::{Checker, Fields};
use super::raw::{Node, Value};
use super::task::{Expectations, SimulatedUser, TaskKind, UserTurn};

/// The keys of a simulated user.
pub(super) const USER_KEYS: &[&str] = &["host", "persona", "goal", "max_turns", "done_when"];

/// The keys of one user turn.
pub(super) const TURN_KEYS: &[&str] = &["prompt", "expect", "max_turns"];

/// The keys of `expect` that grade the whole conversation, refused in a turn's own `expect`.
const WHOLE_ONLY: &[(&str, &str)] = &[
    (
        "after",
        "`after` checks the state the whole conversation left: put it in the task's `expect`",
    ),
    (
        "judge",
        "a judge reads the whole conversation: put it in the task's `expect`",
    ),
    (
        "resources_read",
        "resources are graded over the whole conversation: put it in the task's `expect`",
    ),
    (
        "resources_not_read",
        "resources are graded over the whole conversation: put it in the task's `expect`",
    ),
    (
        "prompts_used",
        "prompts are graded over the whole conversation: put it in the task's `expect`",
    ),
    (
        "prompts_not_used",
        "prompts are graded over the whole conversation: put it in the task's `expect`",
    ),
];

/// `turns:` — a non-empty list of `{prompt, expect, max_turns}`. `expectations` validates a turn's
/// `expect` like a task's; `max_turns` is the task's where a turn does not set its own.
pub(super) fn user_turns(
    checker: &mut Checker<'_>,
    node: &Node,
    kind: Option<TaskKind>,
    max_turns: Option<u32>,
    mut expectations: impl FnMut(
        &mut Checker<'_>,
        &Node,
        &Node,
        Option<TaskKind>,
    ) -> Option<super::task::Expectations>,
) -> Option<Vec<UserTurn>> {
    let keys = valid_keys();
    let items = match &node.value {
        Value::Seq(items) if !items.is_empty() => items,
        Value::Seq(_) => {
            checker.error(
                node,
                format!("`turns` is empty: give at least one user turn, each {keys}"),
            );
            return None;
        }
        other => {
            let got = other.kind();
            checker.error(
                node,
                format!("`turns` must be a list of user turns, each {keys}; got {got}"),
            );
            return None;
        }
    };
    let before = checker.count();
    let mut turns = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let place = format!("turn {} of `turns`", i + 1);
        let Some(fields) = turn_fields(checker, item, &place) else {
            continue;
        };
        let prompt = match fields.get("prompt") {
            Some((_, v)) => checker.non_empty_string(v, "prompt"),
            None => {
                let message = format!("{place} has no `prompt` (a user turn is {keys})");
                checker.error(item, message);
                None
            }
        };
        let turn_max = match fields.get("max_turns") {
            Some((_, v)) => checker.integer(v, "max_turns", 1..=100),
            None => max_turns,
        };
        let expect = match fields.get("expect") {
            Some((key, value)) => {
                refuse_whole_only(checker, value);
                Some(expectations(checker, key, value, kind))
            }
            None => None,
        };
        if let (Some(prompt), Some(max_turns)) = (prompt, turn_max) {
            turns.push(UserTurn {
                prompt,
                expect: expect.flatten(),
                max_turns,
            });
        }
    }
    (checker.count() == before && turns.len() == items.len()).then_some(turns)
}

/// The fields of one turn: a mapping of [`TURN_KEYS`] (unknown keys get "did you mean" and the
/// valid keys).
fn turn_fields<'n>(checker: &mut Checker<'_>, item: &'n Node, place: &str) -> Option<Fields<'n>> {
    if !matches!(item.value, Value::Map(_)) {
        let got = item.value.kind();
        let keys = valid_keys();
        checker.error(item, format!("{place} must be a mapping {keys}, got {got}"));
        return None;
    }
    let before = checker.count();
    let fields = checker.fields(item, place, Some(TURN_KEYS))?;
    if checker.count() > before && fields.get("prompt").is_some() {
        // `fields` said which key is unknown; say what is valid too (a turn without `prompt`
        // says it in its own message).
        let keys = valid_keys();
        checker.error(item, format!("a user turn is {keys}"));
    }
    Some(fields)
}

fn refuse_whole_only(checker: &mut Checker<'_>, expect: &Node) {
    let Value::Map(entries) = &expect.value else {
        return;
    };
    for (key, _) in entries {
        let Value::Str(name) = &key.value else {
            continue;
        };
        if let Some((_, why)) = WHOLE_ONLY.iter().find(|(k, _)| k == name) {
            checker.error(key, format!("`{name}` in a turn's `expect`: {why}"));
        }
    }
}

/// "`{prompt, expect, max_turns}` (`prompt` required)", for messages.
fn valid_keys() -> String {
    let keys: Vec<String> = TURN_KEYS.iter().map(|k| format!("`{k}`")).collect();
    format!("{{{}}} (`prompt` required)", keys.join(", "))
}

/// `user: {host, persona, goal, max_turns, done_when}`: `host` and `goal` required; `done_when`
/// takes the graders of `expect` (not `after` or `judge`, which read a finished conversation).
pub(super) fn simulated_user(
    checker: &mut Checker<'_>,
    node: &Node,
    kind: Option<TaskKind>,
    mut expectations: impl FnMut(
        &mut Checker<'_>,
        &Node,
        &Node,
        Option<TaskKind>,
    ) -> Option<Expectations>,
) -> Option<SimulatedUser> {
    let keys: Vec<String> = USER_KEYS.iter().map(|k| format!("`{k}`")).collect();
    let keys = format!("{{{}}} (`host` and `goal` required)", keys.join(", "));
    if !matches!(node.value, Value::Map(_)) {
        let got = node.value.kind();
        checker.error(node, format!("`user` must be a mapping {keys}, got {got}"));
        return None;
    }
    let before = checker.count();
    let fields = checker.fields(node, "`user`", Some(USER_KEYS))?;
    let required = |checker: &mut Checker<'_>, name: &str| {
        let value = fields.get(name).map(|(_, v)| v);
        if value.is_none() {
            checker.error(
                node,
                format!("`user` has no `{name}` (a simulated user is {keys})"),
            );
        }
        value
    };
    let host = required(checker, "host")
        .and_then(|v| super::validate::host_spec_named(checker, v, "user.host"));
    let goal = required(checker, "goal").and_then(|v| checker.non_empty_string(v, "user.goal"));
    let persona = match fields.get("persona") {
        Some((_, v)) => checker.non_empty_string(v, "user.persona").map(Some),
        None => Some(None),
    };
    let max_turns = match fields.get("max_turns") {
        Some((_, v)) => checker.integer(v, "user.max_turns", 1..=20),
        None => Some(SimulatedUser::DEFAULT_MAX_TURNS),
    };
    let done_when = match fields.get("done_when") {
        Some((key, value)) => {
            refuse_whole_only(checker, value);
            expectations(checker, key, value, kind).map(Some)
        }
        None => Some(None),
    };
    if checker.count() > before {
        return None;
    }
    Some(SimulatedUser {
        host: host?,
        persona: persona?,
        goal: goal?,
        max_turns: max_turns?,
        done_when: done_when?,
    })
}
