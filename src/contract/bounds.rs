//! Numeric bounds compared as the range they allow, not keyword by keyword: `exclusiveMaximum:
//! 1000000` and `maximum: 999999` allow the same integers (pydantic writes the first for `lt=`,
//! other generators the second), and a bound at or beyond 2^53 − 1 (zod's `.int()`) is none.

use serde_json::{Map, Value};

use super::schema::{Effect, Finding};

/// 2^53 − 1, JavaScript's `Number.MAX_SAFE_INTEGER`: the largest integer every JSON parser holds
/// exactly. zod writes it as the `maximum` of `.int()` (and its negative as the `minimum`).
pub(super) const EDGE_OF_JSON_NUMBERS: f64 = 9_007_199_254_740_991.0;

/// One end of the allowed range: its value and whether the value itself is left out.
#[derive(Debug, Clone, Copy, PartialEq)]
struct End {
    value: f64,
    exclusive: bool,
}

/// Which end of the range.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Upper,
    Lower,
}

impl Side {
    fn keys(self) -> (&'static str, &'static str) {
        match self {
            Side::Upper => ("maximum", "exclusiveMaximum"),
            Side::Lower => ("minimum", "exclusiveMinimum"),
        }
    }

    /// Whether `a` allows fewer values at this end than `b` (`None`: no bound).
    fn tighter(self, a: Option<End>, b: Option<End>) -> bool {
        match (a, b) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(a), Some(b)) if a.value == b.value => a.exclusive && !b.exclusive,
            (Some(a), Some(b)) => match self {
                Side::Upper => a.value < b.value,
                Side::Lower => a.value > b.value,
            },
        }
    }
}

/// Whether the schema allows only integers.
fn integer_only(schema: &Map<String, Value>) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "integer",
        Some(Value::Array(ts)) => !ts.is_empty() && ts.iter().all(|t| t == "integer"),
        _ => false,
    }
}

/// The schema's bound at `side`: the tighter of its inclusive and exclusive keywords; for an
/// integer schema an exclusive bound becomes the inclusive one next to it (`< 1000000` is
/// `≤ 999999`); a bound at or beyond ±(2^53 − 1) is none. `None` also when a keyword is not a
/// number (draft 4's boolean form, left to the keyword rules).
fn end(schema: &Map<String, Value>, side: Side, integers: bool) -> Result<Option<End>, ()> {
    let (inclusive, exclusive) = side.keys();
    let mut found: Option<End> = None;
    for (key, is_exclusive) in [(inclusive, false), (exclusive, true)] {
        let Some(value) = schema.get(key) else {
            continue;
        };
        let value = value.as_f64().ok_or(())?;
        let beyond = match side {
            Side::Upper => value >= EDGE_OF_JSON_NUMBERS,
            Side::Lower => value <= -EDGE_OF_JSON_NUMBERS,
        };
        if beyond {
            continue;
        }
        let mut this = End {
            value,
            exclusive: is_exclusive,
        };
        if integers {
            this = match (side, is_exclusive) {
                (Side::Upper, true) => End {
                    value: value.ceil() - 1.0,
                    exclusive: false,
                },
                (Side::Upper, false) => End {
                    value: value.floor(),
                    exclusive: false,
                },
                (Side::Lower, true) => End {
                    value: value.floor() + 1.0,
                    exclusive: false,
                },
                (Side::Lower, false) => End {
                    value: value.ceil(),
                    exclusive: false,
                },
            };
        }
        if found.is_none_or(|f| side.tighter(Some(this), Some(f))) {
            found = Some(this);
        }
    }
    Ok(found)
}

/// How an end reads: `≤ 999999`, `< 1000000`, `none`.
fn words(end: Option<End>, side: Side) -> String {
    match (end, side) {
        (None, _) => "none".into(),
        (Some(e), Side::Upper) => format!("{} {}", if e.exclusive { "<" } else { "≤" }, e.value),
        (Some(e), Side::Lower) => format!("{} {}", if e.exclusive { ">" } else { "≥" }, e.value),
    }
}

/// What changed at one end, in the keywords' own words where one keyword changed value
/// (`maximum 100 → 50`, `minimum 1 added`), else both sides written out with the ranges they
/// allow; a value at or beyond ±(2^53 − 1) is said to be no bound.
fn note(
    b: &Map<String, Value>,
    a: &Map<String, Value>,
    side: Side,
    (before, after): (Option<End>, Option<End>),
) -> String {
    let (inclusive, exclusive) = side.keys();
    let written = |m: &Map<String, Value>| -> Vec<(&'static str, Value)> {
        [inclusive, exclusive]
            .into_iter()
            .filter_map(|k| Some((k, m.get(k)?.clone())))
            .collect()
    };
    let (wb, wa) = (written(b), written(a));
    let at_edge = wb
        .iter()
        .chain(&wa)
        .any(|(_, v)| v.as_f64().is_some_and(|v| v.abs() >= EDGE_OF_JSON_NUMBERS));
    let edge = match at_edge {
        true => " (2^53 − 1 or beyond: no bound)",
        false => "",
    };
    let simple = match (&wb[..], &wa[..]) {
        ([], [(k, y)]) => Some(format!("{k} {y} added")),
        ([(k, x)], []) => Some(format!("{k} {x} removed")),
        ([(kb, x)], [(ka, y)]) if kb == ka => Some(format!("{kb} {x} → {y}")),
        _ => None,
    };
    if let Some(simple) = simple {
        return simple + edge;
    }
    let shown = |w: &[(&str, Value)]| match w.is_empty() {
        true => "none".to_owned(),
        false => (w.iter())
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", "),
    };
    format!(
        "{} → {} (allows {} → {}){edge}",
        shown(&wb),
        shown(&wa),
        words(before, side),
        words(after, side)
    )
}

/// Compares the numeric bounds of two schemas (objects at `path`) as ranges: one finding per end
/// whose range changed (narrowed or widened), none for a rewrite that allows the same values.
/// Returns the keywords it decided, which the keyword rules then skip; an end whose keywords are
/// not all numbers is left to them.
pub(super) fn compare_bounds(
    b: &Map<String, Value>,
    a: &Map<String, Value>,
    path: &str,
    out: &mut Vec<Finding>,
) -> Vec<&'static str> {
    let integers = integer_only(b) && integer_only(a);
    let mut decided = Vec::new();
    for side in [Side::Upper, Side::Lower] {
        let (inclusive, exclusive) = side.keys();
        if b.get(inclusive) == a.get(inclusive) && b.get(exclusive) == a.get(exclusive) {
            continue;
        }
        let (Ok(before), Ok(after)) = (end(b, side, integers), end(a, side, integers)) else {
            continue;
        };
        decided.extend([inclusive, exclusive]);
        if before == after {
            continue;
        }
        // The keyword the candidate bounds with (else the one the baseline did).
        let key = [exclusive, inclusive]
            .into_iter()
            .find(|k| a.contains_key(*k))
            .or_else(|| {
                [exclusive, inclusive]
                    .into_iter()
                    .find(|k| b.contains_key(*k))
            })
            .unwrap_or(inclusive);
        let note = note(b, a, side, (before, after));
        let effect = match side.tighter(after, before) {
            true => Effect::Narrowed,
            false => Effect::Widened,
        };
        out.push(Finding {
            effect,
            path: format!("{path}.{key}"),
            before: b.get(key).cloned(),
            after: a.get(key).cloned(),
            note: Some(note),
        });
    }
    decided
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compared(b: Value, a: Value) -> Vec<(Effect, String, String)> {
        let (Value::Object(b), Value::Object(a)) = (b, a) else {
            unreachable!()
        };
        let mut out = Vec::new();
        compare_bounds(&b, &a, "s", &mut out);
        out.into_iter()
            .map(|f| (f.effect, f.path, f.note.unwrap_or_default()))
            .collect()
    }

    #[test]
    fn an_exclusive_bound_rewritten_as_the_inclusive_one_next_to_it_allows_the_same_integers() {
        // mcp-server-fetch: pydantic's `gt=0, lt=1000000` written two ways.
        let b = json!({"type": "integer", "exclusiveMaximum": 1000000, "exclusiveMinimum": 0});
        let a = json!({"type": "integer", "maximum": 999999, "minimum": 1});
        assert!(compared(b.clone(), a.clone()).is_empty());
        // For numbers they differ: 999999.5 no longer validates, 0.5 no longer does.
        let (b, a) = (
            json!({"type": "number", "exclusiveMaximum": 1000000, "exclusiveMinimum": 0}),
            json!({"type": "number", "maximum": 999999, "minimum": 1}),
        );
        let found = compared(b, a);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found.iter().all(|(e, _, _)| *e == Effect::Narrowed));
        assert_eq!(found[0].1, "s.maximum");
        assert!(found[0].2.contains("< 1000000 → ≤ 999999"), "{found:?}");
    }

    #[test]
    fn a_bound_lowered_raised_added_or_removed_is_compared_as_a_range() {
        let narrowed = compared(
            json!({"type": "integer", "maximum": 100}),
            json!({"type": "integer", "exclusiveMaximum": 100}),
        );
        assert_eq!(narrowed[0].0, Effect::Narrowed, "{narrowed:?}");
        let widened = compared(json!({"minimum": 5}), json!({"exclusiveMinimum": 4}));
        assert_eq!(widened[0].0, Effect::Widened, "{widened:?}");
        let added = compared(json!({}), json!({"minimum": 1}));
        assert_eq!(
            (added[0].0, added[0].1.as_str()),
            (Effect::Narrowed, "s.minimum")
        );
        let removed = compared(json!({"exclusiveMaximum": 3}), json!({}));
        assert_eq!(removed[0].0, Effect::Widened);
        // At or beyond 2^53 − 1 a bound is none: zod's `.int()` adds nothing.
        assert!(compared(json!({}), json!({"maximum": 9007199254740991_i64})).is_empty());
        assert!(compared(json!({}), json!({"minimum": -9007199254740991_i64})).is_empty());
        let lowered = compared(
            json!({"maximum": 9007199254740991_i64}),
            json!({"maximum": 10}),
        );
        assert_eq!(lowered[0].0, Effect::Narrowed);
    }

    #[test]
    fn draft_4_boolean_exclusives_are_left_to_the_keyword_rules() {
        let (Value::Object(b), Value::Object(a)) = (
            json!({"maximum": 5, "exclusiveMaximum": false}),
            json!({"maximum": 5, "exclusiveMaximum": true}),
        ) else {
            unreachable!()
        };
        let mut out = Vec::new();
        assert!(compare_bounds(&b, &a, "s", &mut out).is_empty());
        assert!(out.is_empty());
    }
}
