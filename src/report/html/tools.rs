//! The tools each side's model was shown, compared in `report.html`: what was added, removed or
//! reworded between the baseline and the candidate (the usual cause of a divergence).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::text::{escape, escape_truncated};
use crate::host::ToolSpec;

const DESCRIPTION_CHARS: usize = 1_000;

/// How a tool differs between the sides.
#[derive(Debug, PartialEq)]
pub enum Change<'a> {
    Added(&'a ToolSpec),
    Removed(&'a ToolSpec),
    /// Which of title, description and input schema changed.
    Changed(&'a ToolSpec, &'a ToolSpec, Vec<&'static str>),
}

/// The tools that differ, in the baseline's order, then the candidate's new ones; and how many
/// are the same.
pub fn changes<'a>(
    baseline: &'a [ToolSpec],
    candidate: &'a [ToolSpec],
) -> (Vec<Change<'a>>, usize) {
    let mut out = Vec::new();
    let mut same = 0;
    for b in baseline {
        match candidate.iter().find(|c| c.name == b.name) {
            None => out.push(Change::Removed(b)),
            Some(c) => {
                let mut fields = Vec::new();
                if b.title != c.title {
                    fields.push("title");
                }
                if b.description != c.description {
                    fields.push("description");
                }
                if b.input_schema != c.input_schema {
                    fields.push("input schema");
                }
                if fields.is_empty() {
                    same += 1;
                } else {
                    out.push(Change::Changed(b, c, fields));
                }
            }
        }
    }
    for c in candidate {
        if !baseline.iter().any(|b| b.name == c.name) {
            out.push(Change::Added(c));
        }
    }
    (out, same)
}

/// The section's body: one table per host whose two sides' tool lists were read.
pub fn render(out: &mut String, tools: &BTreeMap<String, [Option<Vec<ToolSpec>>; 2]>) {
    if tools.is_empty() {
        out.push_str(
            "<p class=\"note\">No transcripts were read, so the tool lists are not known.</p>\n",
        );
        return;
    }
    for (host, sides) in tools {
        let _ = writeln!(out, "<h3>Host <code>{}</code></h3>", escape(host));
        let [Some(b), Some(c)] = sides else {
            out.push_str("<p class=\"note\">Only one side's transcripts were read.</p>\n");
            continue;
        };
        let (list, same) = changes(b, c);
        let _ = writeln!(
            out,
            "<p>{} tools on the baseline, {} on the candidate; {same} shown the same way.</p>",
            b.len(),
            c.len()
        );
        if list.is_empty() {
            continue;
        }
        out.push_str(
            "<table class=\"tools\"><thead><tr><th>tool</th><th>change</th><th>baseline</th>\
             <th>candidate</th></tr></thead><tbody>\n",
        );
        for change in &list {
            let (name, what, before, after) = match change {
                Change::Added(c) => (&c.name, "added".to_owned(), None, Some(*c)),
                Change::Removed(b) => (&b.name, "removed".to_owned(), Some(*b), None),
                Change::Changed(b, c, fields) => (&b.name, fields.join(", "), Some(*b), Some(*c)),
            };
            let _ = writeln!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(name),
                escape(&what),
                describe(before),
                describe(after)
            );
        }
        out.push_str("</tbody></table>\n");
    }
}

fn describe(tool: Option<&ToolSpec>) -> String {
    let Some(t) = tool else {
        return "–".into();
    };
    let mut s = String::new();
    if let Some(title) = &t.title {
        let _ = write!(s, "<b>{}</b><br>", escape(title));
    }
    s.push_str(&escape_truncated(
        t.description.as_deref().unwrap_or("(no description)"),
        DESCRIPTION_CHARS,
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            input_schema: serde_json::json!({"type": "object"}),
            deferred: false,
        }
    }

    #[test]
    fn finds_added_removed_and_reworded_tools() {
        let b = vec![tool("a", "same"), tool("b", "old"), tool("gone", "x")];
        let c = vec![tool("a", "same"), tool("b", "<new>"), tool("new", "y")];
        let (list, same) = changes(&b, &c);
        assert_eq!(same, 1);
        assert_eq!(list.len(), 3);
        assert!(matches!(&list[0], Change::Changed(_, _, f) if f == &vec!["description"]));
        assert!(matches!(list[1], Change::Removed(t) if t.name == "gone"));
        assert!(matches!(list[2], Change::Added(t) if t.name == "new"));
        let mut out = String::new();
        render(
            &mut out,
            &BTreeMap::from([("sim".to_owned(), [Some(b), Some(c)])]),
        );
        assert!(
            out.contains("&lt;new&gt;") && !out.contains("<new>"),
            "{out}"
        );
        assert!(
            out.contains("3 tools on the baseline, 3 on the candidate; 1 shown"),
            "{out}"
        );
    }
}
