//! What triggered a run, in summary.md: one line per group of contract changes, and under a
//! changed text's line the words that differ with a little context.

use std::fmt::Write;

use crate::rundir::RunInfo;

/// The triggering changes, when a diff triggered the run; under a changed text's line, the
/// words that differ with a little context (both sides whole when short).
pub fn markdown(out: &mut String, info: &RunInfo) {
    if info.trigger_changes.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "## What triggered the run
"
    );
    for (i, line) in info.trigger_changes.iter().enumerate() {
        let _ = writeln!(out, "- {line}");
        let texts: Vec<_> = info.trigger_texts.iter().filter(|t| t.line == i).collect();
        for t in &texts {
            let member = match texts.len() {
                1 => String::new(),
                _ => format!("{}: ", t.member()),
            };
            let _ = writeln!(out, "  - {member}{}", code(&t.words()));
        }
    }
    let _ = writeln!(out);
}

/// `text` as a Markdown code span, whatever backticks it holds: fenced by one more backtick
/// than its longest run of them (CommonMark), so server text cannot start markup.
pub fn code(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::ChangedText;

    #[test]
    fn code_spans_hold_any_backticks() {
        assert_eq!(code("a `b` c"), "``a `b` c``");
        assert_eq!(code("`x`"), "`` `x` ``");
        assert_eq!(code("plain <b>"), "`plain <b>`");
    }

    #[test]
    fn a_changed_text_shows_its_words_under_its_line() {
        let mut info = crate::test_support::sample_info();
        let text = |zone: &str| {
            format!("IANA timezone name (e.g., 'America/New_York', 'Europe/London'). Use '{zone}' as local timezone if none")
        };
        info.trigger_changes = vec![
            "tools `get_current_time` at `description`: description_changed".into(),
            "tools `tool_{1,2}` at `title`: 2 × title_changed".into(),
        ];
        let changed = |line, name: &str, before: String, after: String| ChangedText {
            line,
            name: name.into(),
            path: Some("title".into()),
            before: Some(before),
            after: Some(after),
        };
        info.trigger_texts = vec![
            changed(0, "get_current_time", text("UTC"), text("Etc/UTC")),
            changed(1, "tool_1", "One".into(), "First".into()),
            changed(1, "tool_2", "Two".into(), "Second".into()),
        ];
        let mut out = String::new();
        markdown(&mut out, &info);
        assert!(
            out.contains(
                "- tools `get_current_time` at `description`: description_changed\n  - `… \
                 'America/New_York', 'Europe/London'). Use ['UTC' → 'Etc/UTC'] as local \
                 timezone …`\n"
            ),
            "{out}"
        );
        assert!(
            out.contains("  - `tool_2` at `title`: `Two → Second`\n"),
            "{out}"
        );
    }
}
