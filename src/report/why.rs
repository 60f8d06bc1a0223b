//! The "Why" section of a run's `summary.md` and `report.html`: what `mcpeval explain` found
//! (`explain/why.md`), put into both reports between markers, again whenever they are written.

use std::path::Path;

use anyhow::Context;

/// The section `explain` writes, as Markdown, beside its attribution.
pub const WHY_MD: &str = "why.md";

const START: &str = "<!-- mcpeval:why -->";
const END: &str = "<!-- /mcpeval:why -->";

/// Puts `dir/explain/why.md` (when there is one) into `dir/summary.md` and `dir/report.html`,
/// replacing the section they had.
pub fn refresh(dir: &Path) -> anyhow::Result<()> {
    let why = dir.join("explain").join(WHY_MD);
    let Ok(md) = std::fs::read_to_string(&why) else {
        return Ok(());
    };
    let summary = dir.join(super::SUMMARY_MD);
    if let Ok(text) = std::fs::read_to_string(&summary) {
        let section = format!("{START}\n## Why\n\n{}\n{END}\n", md.trim_end());
        let text = replaced(&text, &section, None);
        std::fs::write(&summary, text)
            .with_context(|| format!("cannot write `{}`", summary.display()))?;
    }
    let html = dir.join(super::REPORT_HTML);
    if let Ok(text) = std::fs::read_to_string(&html) {
        let section = format!(
            "{START}\n<section id=\"why\">\n<h2>Why</h2>\n{}</section>\n{END}\n",
            super::html::blocks(&md, 1)
        );
        let text = replaced(&text, &section, Some("<section id=\"tools\">"));
        std::fs::write(&html, text)
            .with_context(|| format!("cannot write `{}`", html.display()))?;
    }
    Ok(())
}

/// `text` with its marked section replaced by `section`, or `section` put before `before` (at
/// the end when absent).
fn replaced(text: &str, section: &str, before: Option<&str>) -> String {
    if let (Some(start), Some(end)) = (text.find(START), text.find(END)) {
        let end = end + END.len() + usize::from(text[end + END.len()..].starts_with('\n'));
        return format!("{}{section}{}", &text[..start], &text[end..]);
    }
    match before.and_then(|b| text.find(b)) {
        Some(at) => format!("{}{section}{}", &text[..at], &text[at..]),
        None => format!("{text}\n{section}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_goes_in_once_and_is_replaced_after() {
        let once = replaced(
            "# run\n",
            "<!-- mcpeval:why -->\nA\n<!-- /mcpeval:why -->\n",
            None,
        );
        let twice = replaced(
            &once,
            "<!-- mcpeval:why -->\nB\n<!-- /mcpeval:why -->\n",
            None,
        );
        assert_eq!(
            twice,
            "# run\n\n<!-- mcpeval:why -->\nB\n<!-- /mcpeval:why -->\n"
        );
        let html = replaced(
            "<h1>x</h1><section id=\"tools\">",
            "W",
            Some("<section id=\"tools\">"),
        );
        assert_eq!(html, "<h1>x</h1>W<section id=\"tools\">");
    }
}
