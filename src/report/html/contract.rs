//! The contract section of `report.html`: the changes that triggered the run, counted per kind,
//! with their list (grouped: one line per kind of change that differs only in a number or an
//! id) behind a `<details>`; placed after the verdict table so the verdict is on the first
//! screen. Under a changed text's line, its whole text with the words removed and added marked
//! (`<del>`, `<ins>`).

use std::fmt::Write;

use super::text::{escape, inline};
use crate::contract::words::{Piece, WordDiff};
use crate::contract::{line_kind, ChangedText};
use crate::rundir::RunInfo;

/// The section, when a diff triggered the run; nothing otherwise.
pub fn render(out: &mut String, info: &RunInfo) {
    if info.trigger_changes.is_empty() {
        return;
    }
    let mut counts: Vec<(String, usize)> = Vec::new();
    for line in &info.trigger_changes {
        let (kind, n) = line_kind(line).unwrap_or(("other", 1));
        match counts.iter_mut().find(|(k, _)| k == kind) {
            Some((_, total)) => *total += n,
            None => counts.push((kind.to_owned(), n)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let total: usize = counts.iter().map(|(_, n)| n).sum();
    let _ = write!(
        out,
        "<section id=\"contract\">\n<h2>What triggered the run</h2>\n<p>{}</p>\n\
         <table class=\"kinds\"><thead><tr><th>kind of change</th><th>changes</th></tr></thead>\
         <tbody>\n",
        info.trigger.as_deref().map(escape).unwrap_or_default()
    );
    for (kind, n) in &counts {
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td class=\"num\">{n}</td></tr>",
            escape(kind)
        );
    }
    let _ = write!(
        out,
        "</tbody></table>\n<details class=\"changes\"><summary>the {total} change(s), {} line(s) \
         (changes that differ only in a number or an id are one line)</summary>\n<ul>\n",
        info.trigger_changes.len()
    );
    for (i, line) in info.trigger_changes.iter().enumerate() {
        let _ = write!(out, "<li>{}", inline(line));
        let texts: Vec<&ChangedText> = info.trigger_texts.iter().filter(|t| t.line == i).collect();
        for t in &texts {
            let member = match texts.len() {
                1 => String::new(),
                _ => format!("{}: ", inline(&t.member())),
            };
            let _ = write!(
                out,
                "\n<div class=\"wdiff\">{member}{}</div>",
                marked(t.before.as_deref(), t.after.as_deref())
            );
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ul>\n</details>\n</section>\n");
}

/// The after's whole text with the before's words that went as `<del>` and the new ones as
/// `<ins>`, escaped; a text added or removed whole is one `<ins>` or `<del>`.
pub fn marked(before: Option<&str>, after: Option<&str>) -> String {
    let (before, after) = match (before, after) {
        (Some(b), Some(a)) => (b, a),
        (None, a) => return format!("<ins>{}</ins>", escape(a.unwrap_or_default())),
        (b, None) => return format!("<del>{}</del>", escape(b.unwrap_or_default())),
    };
    let mut out = String::new();
    for piece in WordDiff::of(before, after).pieces() {
        match piece {
            Piece::Same(s) | Piece::Space(s) => out.push_str(&escape(s)),
            Piece::Gone(s) => {
                let _ = write!(out, "<del>{}</del>", escape(s));
            }
            Piece::New(s) => {
                let _ = write!(out, "<ins>{}</ins>", escape(s));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_text_is_shown_with_its_changed_words_marked_and_escaped() {
        assert_eq!(
            marked(
                Some("Use 'UTC' as local <zone>.\nMore."),
                Some("Use 'Etc/UTC' as local <zone>.\nMore & more.")
            ),
            "Use <del>&#39;UTC&#39;</del> <ins>&#39;Etc/UTC&#39;</ins> as local &lt;zone&gt;.\n\
             <ins>More &amp; more.</ins>"
                .replace("<ins>More", "<del>More.</del> <ins>More")
        );
    }

    #[test]
    fn a_changed_texts_line_holds_its_word_diff() {
        let mut info = crate::test_support::sample_info();
        info.trigger = Some("diff.json: 1 change(s) affect models".into());
        info.trigger_changes = vec!["tools `t` at `description`: description_changed".into()];
        info.trigger_texts = vec![ChangedText {
            line: 0,
            name: "t".into(),
            path: Some("description".into()),
            before: Some("a b c".into()),
            after: Some("a <b> c".into()),
        }];
        let mut out = String::new();
        render(&mut out, &info);
        assert!(
            out.contains(
                "<li>tools <code>t</code> at <code>description</code>: description_changed\n\
                 <div class=\"wdiff\">a <del>b</del> <ins>&lt;b&gt;</ins> c</div></li>"
            ),
            "{out}"
        );
    }
}
