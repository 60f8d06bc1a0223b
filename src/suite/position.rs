//! Validation of an expected call's `position` ("the first call is X"): one place in the trial's
//! calls, counted from the start (`1`, `first`) or from the end (`-1`, `last`), and the checks
//! that a set of positions can be met at all (distinct, within `max_tool_calls`, in list order
//! when `ordered`).

use super::check::{suggestion, Checker};
use super::raw::{Node, Value};
use super::task::Expectations;

/// The words `position` takes besides integers.
const WORDS: &[(&str, i32)] = &[("first", 1), ("last", -1)];
/// No trial makes this many calls; a larger position is a typo.
const MAX_POSITION: i64 = 10_000;

/// `position: N` (1-based; negative counts from the end: -1 is the last call), `first` or `last`.
pub(crate) fn position_of(checker: &mut Checker<'_>, node: &Node) -> Option<i32> {
    let n = match &node.value {
        Value::Int(n) => *n,
        Value::UInt(n) => i64::try_from(*n).unwrap_or(i64::MAX),
        Value::Str(word) => {
            if let Some((_, n)) = WORDS.iter().find(|(w, _)| w == word) {
                return Some(*n);
            }
            let names: Vec<&str> = WORDS.iter().map(|(w, _)| *w).collect();
            let hint = suggestion(word, &names);
            checker.error(
                node,
                format!(
                    "unknown `position` `{word}`{hint}: use `first`, `last` or a number \
                     (1 = the first call, -1 = the last)"
                ),
            );
            return None;
        }
        other => {
            let got = other.kind();
            checker.error(
                node,
                format!(
                    "`position` must be a whole number (1 = the first call, -1 = the last) or \
                     `first`/`last`, got {got}"
                ),
            );
            return None;
        }
    };
    if n == 0 {
        checker.error(
            node,
            "`position` counts from 1 (the first call) or from -1 (the last call); 0 is neither",
        );
        return None;
    }
    if n.abs() > MAX_POSITION {
        checker.error(
            node,
            format!("`position` must be between -{MAX_POSITION} and {MAX_POSITION}, got {n}"),
        );
        return None;
    }
    i32::try_from(n).ok()
}

/// A position in words: "the first call", "call 4", "the last call", "call 3 from the end".
pub fn position_words(position: i32) -> String {
    const ORDINALS: [&str; 3] = ["first", "second", "third"];
    match position {
        1..=3 => format!("the {} call", ORDINALS[position as usize - 1]),
        -1 => "the last call".to_owned(),
        -2 => "the second-to-last call".to_owned(),
        p if p > 0 => format!("call {p}"),
        p => format!("call {} from the end", -p),
    }
}

/// Checks that the positions of `expect.calls` can be met together: no two claim one place,
/// none lies beyond `max_tool_calls`, and with `ordered: true` each leaves room for the expected
/// calls listed before and after it. `calls` is the `calls` list as written.
pub(crate) fn check_positions(checker: &mut Checker<'_>, expect: &Expectations, calls: &Node) {
    let Value::Seq(items) = &calls.value else {
        return;
    };
    let nodes: Vec<Option<&Node>> = items.iter().map(position_node).collect();
    let placed: Vec<(usize, i32, &Node)> = expect
        .calls
        .iter()
        .zip(&nodes)
        .enumerate()
        .filter_map(|(i, (call, node))| Some((i, call.position?, (*node)?)))
        .collect();
    for (k, &(_, position, node)) in placed.iter().enumerate() {
        if let Some((_, _, first)) = placed[..k].iter().find(|(_, p, _)| *p == position) {
            let message = format!(
                "two expected calls claim `position: {position}` ({}; the other at {}:{}): one \
                 call cannot match both",
                position_words(position),
                first.line,
                first.column
            );
            checker.error(node, message);
        }
        if let Some(max) = expect.max_tool_calls {
            if position.unsigned_abs() > max {
                let message = format!(
                    "`position: {position}` ({}) can never match: `max_tool_calls` allows at \
                     most {max} call(s)",
                    position_words(position)
                );
                checker.error(node, message);
            }
        }
    }
    if expect.ordered {
        ordered_room(checker, &placed, items.len());
    }
}

/// With `ordered: true`, the expected calls listed between two positioned ones (or between one
/// and the start or end) each need a call of their own between them.
fn ordered_room(checker: &mut Checker<'_>, placed: &[(usize, i32, &Node)], n: usize) {
    let mut previous: Option<(usize, i32, &Node)> = None;
    for &(i, position, node) in placed.iter().filter(|(_, p, _)| *p > 0) {
        let (j, at) = previous.map_or((-1, 0), |(j, p, _)| (j as i64, p));
        let listed = i as i64 - j;
        if i64::from(position - at) < listed {
            let after = match previous {
                None => format!(
                    "{i} expected call(s) are listed before it, so it is call {} or later",
                    i + 1
                ),
                Some((_, p, earlier)) => format!(
                    "it is listed {listed} after the one at `position: {p}` (line {}), so it is \
                     call {} or later",
                    earlier.line,
                    i64::from(p) + listed
                ),
            };
            checker.error(
                node,
                format!(
                    "with `ordered: true` this call cannot be at `position: {position}`: {after}"
                ),
            );
        }
        previous = Some((i, position, node));
    }
    let mut next: Option<(usize, i32, &Node)> = None;
    for &(i, position, node) in placed.iter().rev().filter(|(_, p, _)| *p < 0) {
        let (k, at) = next.map_or((n as i64, 0), |(k, p, _)| (k as i64, p));
        let listed = k - i as i64;
        if i64::from(at - position) < listed {
            let before = match next {
                None => format!(
                    "{} expected call(s) are listed after it, so it is {} or earlier",
                    n - i - 1,
                    position_words(-((n - i) as i32))
                ),
                Some((_, p, later)) => format!(
                    "it is listed {listed} before the one at `position: {p}` (line {}), so it is \
                     {} or earlier",
                    later.line,
                    position_words(p - listed as i32)
                ),
            };
            checker.error(
                node,
                format!(
                    "with `ordered: true` this call cannot be at `position: {position}`: {before}"
                ),
            );
        }
        next = Some((i, position, node));
    }
}

/// The value of `position` in one written expected call, if it has one.
fn position_node(call: &Node) -> Option<&Node> {
    let Value::Map(entries) = &call.value else {
        return None;
    };
    entries
        .iter()
        .find(|(k, _)| k.value == Value::Str("position".into()))
        .map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::load::check_bytes;

    /// The problems in an inline task file (named `t.yaml`), each `t.yaml:LINE:COL: message`.
    fn problems(yaml: &str) -> Vec<String> {
        let (_, found) = check_bytes(Path::new("t.yaml"), yaml.as_bytes());
        found.iter().map(ToString::to_string).collect()
    }

    fn task(calls: &str, extra: &str) -> String {
        format!("id: t\nprompt: p\nexpect:\n{extra}  calls:\n{calls}")
    }

    #[test]
    fn positions_read_numbers_and_first_or_last() {
        let (checked, found) = check_bytes(
            Path::new("t.yaml"),
            task(
                "    - {tool: a, position: first}\n    - {tool: b, position: last}\n    - {tool: c, position: -2}\n",
                "",
            )
            .as_bytes(),
        );
        assert!(found.is_empty(), "{found:?}");
        let task = checked[0].task.as_ref().unwrap();
        let positions: Vec<_> = task.expect.calls.iter().map(|c| c.position).collect();
        assert_eq!(positions, [Some(1), Some(-1), Some(-2)]);
    }

    #[test]
    fn misused_positions_are_refused_where_they_are_written() {
        let bad = |calls: &str, extra: &str| problems(&task(calls, extra));
        assert_eq!(
            bad("    - {tool: a, position: 0}\n", ""),
            ["t.yaml:5:27: `position` counts from 1 (the first call) or from -1 (the last call); 0 is neither"]
        );
        assert_eq!(
            bad("    - {tool: a, position: 1.5}\n", ""),
            ["t.yaml:5:27: `position` must be a whole number (1 = the first call, -1 = the last) or `first`/`last`, got a number"]
        );
        assert_eq!(
            bad("    - {tool: a, position: frist}\n", ""),
            ["t.yaml:5:27: unknown `position` `frist` (did you mean `first`?): use `first`, `last` or a number (1 = the first call, -1 = the last)"]
        );
        assert_eq!(
            bad("    - {tool: a, position: 1}\n    - {tool: b, position: first}\n", ""),
            ["t.yaml:6:27: two expected calls claim `position: 1` (the first call; the other at 5:27): one call cannot match both"]
        );
        assert_eq!(
            bad("    - {tool: a, position: 4}\n", "  max_tool_calls: 3\n"),
            ["t.yaml:6:27: `position: 4` (call 4) can never match: `max_tool_calls` allows at most 3 call(s)"]
        );
        assert_eq!(
            bad("    - {tool: a}\n    - {tool: b, position: 1}\n", "  ordered: true\n"),
            ["t.yaml:7:27: with `ordered: true` this call cannot be at `position: 1`: 1 expected call(s) are listed before it, so it is call 2 or later"]
        );
        assert_eq!(
            bad("    - {tool: a, position: last}\n    - {tool: b}\n", "  ordered: true\n"),
            ["t.yaml:6:27: with `ordered: true` this call cannot be at `position: -1`: 1 expected call(s) are listed after it, so it is the second-to-last call or earlier"]
        );
        assert_eq!(
            bad("    - {tool: a, position: 2}\n    - {tool: b}\n    - {tool: c, position: 3}\n", "  ordered: true\n"),
            ["t.yaml:8:27: with `ordered: true` this call cannot be at `position: 3`: it is listed 2 after the one at `position: 2` (line 6), so it is call 4 or later"]
        );
        // Unordered, a later-listed call may take an earlier place; ordered, in list order, too.
        assert!(bad("    - {tool: a}\n    - {tool: b, position: 1}\n", "").is_empty());
        assert!(bad(
            "    - {tool: a, position: 1}\n    - {tool: b}\n    - {tool: c, position: -1}\n",
            "  ordered: true\n"
        )
        .is_empty());
    }
}
