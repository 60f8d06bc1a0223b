//! Whole-text checks of an answer (`result_equals`, `result_snapshot`, an expected call's
//! `result.equals`) and the short line diff that explains a mismatch.

use similar::{ChangeTag, TextDiff};

use super::Check;
use crate::suite::{SnapshotRef, Stored};

/// How many changed lines a diff names before "and N more".
const MAX_LISTED_LINES: usize = 4;
/// How much of a changed line a diff shows.
const EXCERPT_CHARS: usize = 60;
/// How many characters before the first difference an excerpt keeps.
const LEAD_CHARS: usize = 20;

/// Whether `got` is `expected` as the whole-text checks compare: exactly, trailing whitespace
/// (spaces, newlines) aside.
pub fn same_text(expected: &str, got: &str) -> bool {
    expected.trim_end() == got.trim_end()
}

/// The lines that differ, in one line: `-2 "old text", +2 "new text"` (`-` the expected line
/// and its number, `+` the answer's), the first few, each cut around where it differs.
pub fn short_diff(expected: &str, got: &str, max_lines: usize) -> String {
    // Both end with one newline, so that a last line is not a change for lacking one.
    let old = format!("{}\n", expected.trim_end());
    let new = format!("{}\n", got.trim_end());
    let diff = TextDiff::from_lines(&old, &new);
    let changes: Vec<(char, usize, String)> = diff
        .iter_all_changes()
        .filter_map(|c| {
            let (sign, index) = match c.tag() {
                ChangeTag::Delete => ('-', c.old_index()?),
                ChangeTag::Insert => ('+', c.new_index()?),
                ChangeTag::Equal => return None,
            };
            let line = c.value().trim_end_matches(['\n', '\r']).to_owned();
            Some((sign, index + 1, line))
        })
        .collect();
    let first = |sign: char| changes.iter().find(|c| c.0 == sign).map(|c| c.2.as_str());
    let from = match (first('-'), first('+')) {
        (Some(a), Some(b)) => common_prefix(a, b).saturating_sub(LEAD_CHARS),
        _ => 0,
    };
    let mut listed: Vec<String> = changes
        .iter()
        .take(max_lines)
        .map(|(sign, n, line)| format!("{sign}{n} {:?}", excerpt(line, from)))
        .collect();
    if changes.len() > max_lines {
        listed.push(format!(
            "and {} more changed line(s)",
            changes.len() - max_lines
        ));
    }
    listed.join(", ")
}

/// How many characters `a` and `b` share at their start.
fn common_prefix(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

/// `line` from character `from` (when it is that long), cut to a readable length, with `…`
/// where it was cut.
fn excerpt(line: &str, from: usize) -> String {
    let total = line.chars().count();
    let from = if total > EXCERPT_CHARS { from } else { 0 };
    let mut text: String = line.chars().skip(from).take(EXCERPT_CHARS).collect();
    if from > 0 {
        text.insert(0, '…');
    }
    if from + EXCERPT_CHARS < total {
        text.push('…');
    }
    text
}

/// `result_equals`: the answer is the expected text.
pub(crate) fn result_equals(expected: &str, text: &str) -> Check {
    let (passed, explanation) = match same_text(expected, text) {
        true => (
            true,
            format!(
                "the answer is the expected text ({} characters)",
                text.trim_end().chars().count()
            ),
        ),
        false => (
            false,
            format!(
                "the answer differs from the expected text (by line, - expected, + answer): {}",
                short_diff(expected, text, MAX_LISTED_LINES)
            ),
        ),
    };
    Check {
        grader: "result_equals".to_owned(),
        passed,
        explanation,
        turn: None,
    }
}

/// `result_snapshot`: the answer is the stored snapshot's text; a run that writes snapshots
/// compares nothing.
pub(crate) fn result_snapshot(snapshot: &SnapshotRef, text: &str) -> Check {
    let file = snapshot.file.display();
    let (passed, explanation) = match &snapshot.stored {
        Stored::Updating => (
            true,
            format!("not compared: this run writes `{file}` (--update-snapshots)"),
        ),
        Stored::Missing => (
            false,
            format!("no snapshot `{file}`: run `mcpeval run --update-snapshots` to write it"),
        ),
        Stored::Text(stored) if same_text(stored, text) => {
            (true, format!("the answer is the snapshot `{file}`"))
        }
        Stored::Text(stored) => (
            false,
            format!(
                "the answer differs from the snapshot `{file}` (by line, - snapshot, + answer): \
                 {}",
                short_diff(stored, text, MAX_LISTED_LINES)
            ),
        ),
    };
    Check {
        grader: "result_snapshot".to_owned(),
        passed,
        explanation,
        turn: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_whitespace_is_not_a_difference() {
        assert!(same_text("a\nb\n", "a\nb"));
        assert!(same_text("a  \n\n", "a"));
        assert!(!same_text(" a", "a"));
        assert!(!same_text("A", "a"));
    }

    #[test]
    fn a_diff_names_the_changed_lines_with_their_numbers() {
        let diff = short_diff("one\ntwo\nthree\n", "one\n2\nthree\nfour", 4);
        assert_eq!(diff, r#"-2 "two", +2 "2", +4 "four""#);
    }

    #[test]
    fn a_long_line_is_shown_around_its_first_difference() {
        let old = format!("{}priority: medium, owner: sam", "x".repeat(80));
        let new = format!("{}owner: sam", "x".repeat(80));
        let diff = short_diff(&old, &new, 4);
        assert!(
            diff.starts_with(r#"-1 "…xxxxxxxxxxxxxxxxxxxxpriority"#),
            "{diff}"
        );
        assert!(
            diff.contains(r#"+1 "…xxxxxxxxxxxxxxxxxxxxowner: sam""#),
            "{diff}"
        );
    }

    #[test]
    fn many_changes_are_counted_after_the_first_few() {
        let diff = short_diff("a\nb\nc\nd", "1\n2\n3\n4", 2);
        assert_eq!(diff, r#"-1 "a", -2 "b", and 6 more changed line(s)"#);
    }

    #[test]
    fn snapshot_checks_compare_pass_or_say_they_did_not() {
        let mut snapshot = SnapshotRef {
            name: "t".into(),
            file: "s/t.txt".into(),
            stored: Stored::Text("hello\n".into()),
            ..SnapshotRef::default()
        };
        assert!(result_snapshot(&snapshot, "hello").passed);
        let failed = result_snapshot(&snapshot, "Hello");
        assert_eq!(
            failed.explanation,
            "the answer differs from the snapshot `s/t.txt` (by line, - snapshot, + answer): \
             -1 \"hello\", +1 \"Hello\""
        );
        snapshot.stored = Stored::Updating;
        assert!(result_snapshot(&snapshot, "other").passed);
    }
}
