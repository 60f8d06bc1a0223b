//! Validation of the keys that check a call's result text: `result_equals`, `result_snapshot`,
//! `max_result_chars` and `case_sensitive` of a call task's `expect` (and of an `after` check's),
//! `equals`, `max_chars` and `case_sensitive` of an expected call's `result`, and
//! `case_sensitive` of a model task's answer checks.

use super::check::{Checker, Fields};
use super::raw::{Node, Value};
use super::snapshot::{attach, is_file_name, SnapshotRef};
use super::task::{AfterCheck, CallExpectations, ResultCheck};

/// The call task's keys a model task's `expect` does not take, and what it takes instead.
pub(crate) const CALL_ONLY: &[(&str, &str)] = &[
    (
        "result_equals",
        "check a call's result with `result: {equals: …}` on an expected call",
    ),
    (
        "result_snapshot",
        "a model's answer changes from trial to trial; snapshot a `kind: call` task's answer",
    ),
    (
        "max_result_chars",
        "bound a call's result with `result: {max_chars: N}` on an expected call",
    ),
];
/// The longest result an episode records whole (longer ones are cut, so an expected call's
/// `max_chars` can judge no more; it is `RECORDED_RESULT_CHARS` of the agent loop).
const RECORDED_RESULT_CHARS: u32 = 4000;

/// Reads the result-text keys of a call task's `expect` into `expect`; `case_sensitive` needs
/// `result_contains` or `result_not_contains` (already read) to apply to.
pub(crate) fn call_result_keys(
    checker: &mut Checker<'_>,
    fields: &Fields<'_>,
    expect: &mut CallExpectations,
) {
    if let Some((_, value)) = fields.get("result_equals") {
        expect.result_equals = checker.string(value, "result_equals");
    }
    if let Some((_, value)) = fields.get("result_snapshot") {
        expect.result_snapshot = snapshot_ref(checker, value);
    }
    if let Some((_, value)) = fields.get("max_result_chars") {
        expect.max_result_chars = checker
            .integer(value, "max_result_chars", 0..=u32::MAX)
            .map(u64::from);
    }
    if let Some((key, value)) = fields.get("case_sensitive") {
        expect.case_sensitive = checker.boolean(value, "case_sensitive").unwrap_or_default();
        let texts = !expect.result_contains.is_empty() || !expect.result_not_contains.is_empty();
        if !texts {
            checker.error(
                key,
                "`case_sensitive` applies to `result_contains` and `result_not_contains`; set one \
                 (`result_equals` and `result_snapshot` always compare case)",
            );
        }
    }
    if let (Some(_), Some(_)) = (&expect.result_equals, &expect.result_snapshot) {
        let (key, _) = fields.get("result_snapshot").expect("read above");
        checker.error(
            key,
            "`result_equals` and `result_snapshot` both fix the whole answer: set one",
        );
    }
}

/// `result_snapshot: true` (named after the task) or `result_snapshot: NAME`.
fn snapshot_ref(checker: &mut Checker<'_>, node: &Node) -> Option<SnapshotRef> {
    let name = match &node.value {
        Value::Bool(true) => String::new(),
        Value::Str(name) if is_file_name(name) => name.clone(),
        Value::Str(name) => {
            checker.error(
                node,
                format!(
                    "invalid snapshot name `{name}`: use letters, digits, `.`, `_` and `-` (it \
                     names a file)"
                ),
            );
            return None;
        }
        Value::Bool(false) => {
            checker.error(
                node,
                "`result_snapshot: false` checks nothing: leave the key out",
            );
            return None;
        }
        _ => {
            checker.wrong_type(node, "result_snapshot", "`true` or a snapshot name");
            return None;
        }
    };
    Some(SnapshotRef {
        name,
        at: (node.line, node.column),
        ..SnapshotRef::default()
    })
}

/// Names the snapshot file of a call task `id` and reads what it holds.
pub(crate) fn attach_snapshot(checker: &mut Checker<'_>, expect: &mut CallExpectations, id: &str) {
    let Some(snapshot) = &mut expect.result_snapshot else {
        return;
    };
    if let Err(e) = attach(snapshot, checker.file(), id) {
        let (line, column) = snapshot.at;
        let file = snapshot.file.display();
        checker.error_at(line, column, format!("cannot read snapshot `{file}`: {e}"));
    }
}

/// A snapshot is of a call task's answer, not of an `after` check's.
pub(crate) fn refuse_after_snapshots(checker: &mut Checker<'_>, after: &[AfterCheck]) {
    for snapshot in after
        .iter()
        .filter_map(|a| a.expect.result_snapshot.as_ref())
    {
        let (line, column) = snapshot.at;
        checker.error_at(
            line,
            column,
            "`result_snapshot` applies to a `kind: call` task's answer, not to an `after` \
             check (use `result_equals`)",
        );
    }
}

/// Reads the result-text keys of an expected call's `result` into `check` (`contains` already
/// read).
pub(crate) fn result_text_keys(
    checker: &mut Checker<'_>,
    fields: &Fields<'_>,
    check: &mut ResultCheck,
) {
    if let Some((_, value)) = fields.get("equals") {
        check.equals = checker.string(value, "result.equals");
    }
    if let Some((_, value)) = fields.get("max_chars") {
        let max = checker.integer(value, "result.max_chars", 0..=u32::MAX);
        check.max_chars = match max {
            Some(n) if n > RECORDED_RESULT_CHARS => {
                checker.error(
                    value,
                    format!(
                        "`result.max_chars` can be at most {RECORDED_RESULT_CHARS}, got {n}: an \
                         episode records a call's result up to {RECORDED_RESULT_CHARS} characters"
                    ),
                );
                None
            }
            n => n.map(u64::from),
        };
    }
    if let Some((key, value)) = fields.get("case_sensitive") {
        check.case_sensitive = checker
            .boolean(value, "result.case_sensitive")
            .unwrap_or_default();
        if check.contains.is_empty() {
            checker.error(
                key,
                "`case_sensitive` applies to `contains`; set it (`equals` always compares case)",
            );
        }
    }
}

/// Whether an expected call's `result` checks something with the keys of this file.
pub(crate) fn result_text_set(check: &ResultCheck) -> bool {
    check.equals.is_some() || check.max_chars.is_some()
}

/// A model task's `expect`: the call task's keys it does not take get a message of their own.
pub(crate) fn refuse_call_only(checker: &mut Checker<'_>, node: &Node) {
    let Value::Map(entries) = &node.value else {
        return;
    };
    for (key, _) in entries {
        if let Value::Str(name) = &key.value {
            if let Some((_, instead)) = CALL_ONLY.iter().find(|(k, _)| k == name) {
                checker.error(
                    key,
                    format!("`{name}` belongs to `kind: call` tasks ({instead})"),
                );
            }
        }
    }
}

/// `case_sensitive` of a model task's `expect`: read before the answer texts, so that "both
/// required and forbidden" compares as the graders will.
pub(crate) fn answer_case(checker: &mut Checker<'_>, fields: &Fields<'_>) -> bool {
    let Some((key, value)) = fields.get("case_sensitive") else {
        return false;
    };
    let on = checker.boolean(value, "case_sensitive").unwrap_or_default();
    let texts =
        fields.get("answer_contains").is_some() || fields.get("answer_not_contains").is_some();
    if !texts {
        checker.error(
            key,
            "`case_sensitive` applies to `answer_contains` and `answer_not_contains`; set one \
             (`answer_regex` takes `(?i)` for the other way round)",
        );
    }
    on
}

/// Whether `a` and `b` are the same text as the answer graders compare them.
pub(crate) fn same_text(a: &str, b: &str, case_sensitive: bool) -> bool {
    match case_sensitive {
        true => a == b,
        false => a.to_lowercase() == b.to_lowercase(),
    }
}
