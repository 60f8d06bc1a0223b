//! Text for `report.html`: HTML escaping, truncation, and the small Markdown subset of
//! `summary.md` (headings, tables, bullets, `code`, **bold**) that the page shows as HTML.

use std::fmt::Write;

/// Escapes text for HTML element content and quoted attribute values: after this, untrusted
/// text (model output, tool arguments and results) is inert.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `s` cut to at most `max` characters, saying how many were left out, escaped.
pub fn escape_truncated(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => escape(s),
        Some((at, _)) => {
            let left = s[at..].chars().count();
            format!(
                "{}<span class=\"cut\">… ({left} more characters in transcripts.jsonl)</span>",
                escape(&s[..at])
            )
        }
    }
}

/// `s` cut to at most `max` characters with a trailing `…` (labels), not escaped.
pub fn shorten(s: &str, max: usize) -> String {
    match s.char_indices().nth(max.saturating_sub(1)) {
        Some((at, _)) if s.chars().count() > max => format!("{}…", &s[..at]),
        _ => s.to_owned(),
    }
}

/// One line of Markdown with `code` spans and **bold**, as escaped HTML.
pub fn inline(md: &str) -> String {
    let mut out = String::new();
    let mut rest = md;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('`') {
            if let Some(end) = after.find('`') {
                let _ = write!(out, "<code>{}</code>", escape(&after[..end]));
                rest = &after[end + 1..];
                continue;
            }
        }
        if let Some(after) = rest.strip_prefix("**") {
            if let Some(end) = after.find("**") {
                let _ = write!(out, "<strong>{}</strong>", inline(&after[..end]));
                rest = &after[end + 2..];
                continue;
            }
        }
        let next = rest
            .char_indices()
            .skip(1)
            .find(|(_, c)| *c == '`' || *c == '*')
            .map_or(rest.len(), |(i, _)| i);
        out.push_str(&escape(&rest[..next]));
        rest = &rest[next..];
    }
    out
}

/// The body of the `## {title}` section of a Markdown text (up to the next `## `).
pub fn section<'a>(md: &'a str, title: &str) -> Option<&'a str> {
    let heading = format!("## {title}\n");
    let start = if md.starts_with(&heading) {
        heading.len()
    } else {
        md.find(&format!("\n{heading}"))? + heading.len() + 1
    };
    let body = &md[start..];
    Some(body.find("\n## ").map_or(body, |end| &body[..end + 1]))
}

/// What comes before the first `## ` section.
pub fn head(md: &str) -> &str {
    md.find("\n## ").map_or(md, |end| &md[..end + 1])
}

/// Markdown blocks (headings, tables, bullets, paragraphs) as HTML; `#` headings become `<h{level
/// + shift}>`. Raw HTML in the text is escaped like everything else.
pub fn blocks(md: &str, shift: usize) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = md.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_end();
        if line.trim().is_empty() {
            i += 1;
        } else if line.starts_with('#') {
            let level = line.chars().take_while(|c| *c == '#').count();
            let h = (level + shift).min(6);
            let _ = writeln!(out, "<h{h}>{}</h{h}>", inline(line[level..].trim_start()));
            i += 1;
        } else if line.starts_with('|') {
            let end = run_end(&lines, i, |l| l.starts_with('|'));
            table(&mut out, &lines[i..end]);
            i = end;
        } else if line.starts_with("- ") {
            let end = run_end(&lines, i, |l| l.starts_with("- "));
            out.push_str("<ul>\n");
            for item in &lines[i..end] {
                let _ = writeln!(out, "<li>{}</li>", inline(&item[2..]));
            }
            out.push_str("</ul>\n");
            i = end;
        } else {
            let end = run_end(&lines, i, |l| {
                !l.trim().is_empty() && !l.starts_with(['#', '|', '-'])
            });
            let text: Vec<&str> = lines[i..end].iter().map(|l| l.trim()).collect();
            let _ = writeln!(out, "<p>{}</p>", inline(&text.join(" ")));
            i = end;
        }
    }
    out
}

/// The index after the run of lines from `start` that satisfy `keep` (at least one line).
fn run_end(lines: &[&str], start: usize, keep: impl Fn(&str) -> bool) -> usize {
    start + 1 + lines[start + 1..].iter().take_while(|l| keep(l)).count()
}

/// The cells of a Markdown table row. Cells are split on ` | ` so that a `|` inside a value
/// (a URL, a command) stays in its cell.
fn cells(row: &str) -> Vec<&str> {
    let inner = row.trim();
    let inner = inner.strip_prefix('|').unwrap_or(inner);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    inner.split(" | ").map(str::trim).collect()
}

fn is_separator(row: &str) -> bool {
    cells(row)
        .iter()
        .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':')))
}

fn table(out: &mut String, rows: &[&str]) {
    let has_header = rows.len() > 1 && is_separator(rows[1]);
    let header = if has_header {
        Some(cells(rows[0]))
    } else {
        None
    };
    // A table whose header is empty (`| | |`) is a list of facts: the first column names them.
    let facts = header
        .as_ref()
        .is_some_and(|h| h.iter().all(|c| c.is_empty()));
    out.push_str(if facts {
        "<table class=\"facts\">\n"
    } else {
        "<table>\n"
    });
    if let (Some(h), false) = (&header, facts) {
        out.push_str("<thead><tr>");
        for c in h {
            let _ = write!(out, "<th>{}</th>", inline(c));
        }
        out.push_str("</tr></thead>\n");
    }
    out.push_str("<tbody>\n");
    for row in &rows[if has_header { 2 } else { 0 }..] {
        out.push_str("<tr>");
        for (n, c) in cells(row).iter().enumerate() {
            if facts && n == 0 {
                let _ = write!(out, "<th>{}</th>", inline(c));
            } else {
                let _ = write!(out, "<td>{}</td>", inline(c));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_makes_markup_inert() {
        assert_eq!(
            escape(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
    }

    #[test]
    fn truncation_counts_what_it_leaves_out_and_escapes() {
        assert_eq!(escape_truncated("<ab>", 10), "&lt;ab&gt;");
        let cut = escape_truncated("<abcdef", 3);
        assert!(cut.starts_with("&lt;ab<span"), "{cut}");
        assert!(cut.contains("(4 more characters"), "{cut}");
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("abcd", 4), "abcd");
        assert_eq!(shorten("ééééé", 3), "éé…");
    }

    #[test]
    fn inline_markdown_keeps_code_and_bold_and_escapes_the_rest() {
        assert_eq!(
            inline("**running**: `a<b>` & *x*"),
            "<strong>running</strong>: <code>a&lt;b&gt;</code> &amp; *x*"
        );
        assert_eq!(inline("`unclosed"), "`unclosed");
    }

    #[test]
    fn sections_and_blocks() {
        let md = "# title\n\npara one\nline two\n\n| | |\n| --- | --- |\n| run | `r1` |\n\n\
                  ## Tokens\n\n| a | b |\n| --- | ---: |\n| 1 | 2 |\n\n## Last\n\n- x\n- <y>\n";
        assert_eq!(
            head(md),
            "# title\n\npara one\nline two\n\n| | |\n| --- | --- |\n| run | `r1` |\n\n"
        );
        assert_eq!(section(md, "Last"), Some("\n- x\n- <y>\n"));
        assert!(section(md, "Missing").is_none());
        let html = blocks(head(md), 0);
        assert!(html.contains("<h1>title</h1>"), "{html}");
        assert!(html.contains("<p>para one line two</p>"), "{html}");
        assert!(
            html.contains(
                "<table class=\"facts\">\n<tbody>\n<tr><th>run</th><td><code>r1</code></td></tr>"
            ),
            "{html}"
        );
        let tokens = blocks(section(md, "Tokens").unwrap(), 1);
        assert!(
            tokens.contains("<thead><tr><th>a</th><th>b</th></tr></thead>"),
            "{tokens}"
        );
        assert!(tokens.contains("<tr><td>1</td><td>2</td></tr>"), "{tokens}");
        let last = blocks(section(md, "Last").unwrap(), 1);
        assert_eq!(last, "<ul>\n<li>x</li>\n<li>&lt;y&gt;</li>\n</ul>\n");
    }
}
