//! Validation of an `after` check's retry deadline: `within_ms` (repeat the call until its
//! expectations pass or this many milliseconds have passed) and `every_ms` (the pause between
//! attempts), for state that settles asynchronously.

use super::check::{Checker, Fields};
use super::raw::{Node, Value};

/// The keys of an `after` check that set its retry deadline.
pub(crate) const RETRY_KEYS: &[&str] = &["within_ms", "every_ms"];
/// The longest deadline: a check that needs more than ten minutes to settle is a bug in the
/// task (or the server), and a trial must not hang on it.
const MAX_WITHIN_MS: u32 = 600_000;
/// The shortest pause between attempts: shorter ones only load the server.
const MIN_EVERY_MS: u32 = 10;

/// `within_ms` and `every_ms` of an `after` check (`None` where absent); `None` if invalid.
pub(crate) fn retry_of(
    checker: &mut Checker<'_>,
    fields: &Fields<'_>,
) -> Option<(Option<u64>, Option<u64>)> {
    let before = checker.count();
    let within = fields.get("within_ms").and_then(|(_, value)| {
        let ms = checker.integer(value, "within_ms", 1..=u32::MAX)?;
        if ms > MAX_WITHIN_MS {
            checker.error(
                value,
                format!(
                    "`within_ms` must be at most {MAX_WITHIN_MS} (ten minutes: a trial must not \
                     wait longer for state to settle), got {ms}"
                ),
            );
            return None;
        }
        Some(u64::from(ms))
    });
    let every = fields.get("every_ms").and_then(|(key, value)| {
        let ms = checker.integer(value, "every_ms", MIN_EVERY_MS..=MAX_WITHIN_MS)?;
        match (fields.get("within_ms"), within) {
            (None, _) => checker.error(
                key,
                "`every_ms` needs `within_ms`: without a deadline the check is made once",
            ),
            (Some(_), Some(within)) if u64::from(ms) > within => checker.error(
                value,
                format!(
                    "`every_ms` ({ms}) is above `within_ms` ({within}): the check would be made \
                     once; lower `every_ms` or raise `within_ms`"
                ),
            ),
            _ => {}
        }
        Some(u64::from(ms))
    });
    (checker.count() == before).then_some((within, every))
}

/// Reports `within_ms` / `every_ms` written in the mapping `node` (`place`: a `setup` call,
/// `after.call`, an `after` check's `expect`), where they do not belong; whether it found any.
pub(crate) fn misplaced_retry(checker: &mut Checker<'_>, node: &Node, place: &str) -> bool {
    let Value::Map(entries) = &node.value else {
        return false;
    };
    let mut found = false;
    for (key, _) in entries {
        let Value::Str(name) = &key.value else {
            continue;
        };
        if !RETRY_KEYS.contains(&name.as_str()) {
            continue;
        }
        found = true;
        let message = match place {
            "setup" | "teardown" => format!(
                "`{name}` retries an `after` check (beside its `call` and `expect`); a \
                 `{place}` call is made once and must succeed"
            ),
            _ => format!(
                "`{name}` goes beside `call` and `expect` of the `after` check, not inside \
                 `{}`",
                place.strip_prefix("after.").unwrap_or(place)
            ),
        };
        checker.error(key, message);
    }
    found
}
