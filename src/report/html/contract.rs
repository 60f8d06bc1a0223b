//! The contract section of `report.html`: the changes that triggered the run, counted per kind,
//! with their list (grouped: one line per kind of change that differs only in a number or an
//! id) behind a `<details>`; placed after the verdict table so the verdict is on the first
//! screen.

use std::fmt::Write;

use super::text::{escape, inline};
use crate::contract::line_kind;
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
    for line in &info.trigger_changes {
        let _ = writeln!(out, "<li>{}</li>", inline(line));
    }
    out.push_str("</ul>\n</details>\n</section>\n");
}
