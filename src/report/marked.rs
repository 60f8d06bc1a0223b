//! The sections other commands add to a run's `summary.md` and `report.html` — "Why" (what
//! `mcpeval explain` found, `explain/why.md`) and "Host agreement" (what `mcpeval agree` found,
//! `agreement.md`) — put into both reports between markers, again whenever they are written.

use std::path::Path;

use anyhow::Context;

/// The section `explain` writes, as Markdown, beside its attribution.
pub const WHY_MD: &str = "why.md";

/// The section `agree` writes, as Markdown, into the first run's directory.
pub const AGREEMENT_MD: &str = "agreement.md";

/// A section kept in the reports: its marker, heading, Markdown file (under the run directory)
/// and the `id` of its HTML section.
struct Marked {
    marker: &'static str,
    title: &'static str,
    source: &'static [&'static str],
    id: &'static str,
}

/// Every marked section, in the order the reports show them.
const SECTIONS: [Marked; 2] = [
    Marked {
        marker: "why",
        title: "Why",
        source: &["explain", WHY_MD],
        id: "why",
    },
    Marked {
        marker: "agreement",
        title: "Host agreement",
        source: &[AGREEMENT_MD],
        id: "agreement",
    },
];

/// Puts each section's Markdown (when the run directory has it) into `dir/summary.md` and
/// `dir/report.html`, replacing the section they had.
pub fn refresh(dir: &Path) -> anyhow::Result<()> {
    for marked in &SECTIONS {
        let path = marked
            .source
            .iter()
            .fold(dir.to_path_buf(), |p, s| p.join(s));
        if let Ok(md) = std::fs::read_to_string(&path) {
            put(dir, marked, &md)?;
        }
    }
    Ok(())
}

/// Puts one section's Markdown `md` into both reports.
fn put(dir: &Path, marked: &Marked, md: &str) -> anyhow::Result<()> {
    let (start, end) = markers(marked.marker);
    let summary = dir.join(super::SUMMARY_MD);
    if let Ok(text) = std::fs::read_to_string(&summary) {
        let section = format!("{start}\n## {}\n\n{}\n{end}\n", marked.title, md.trim_end());
        let text = replaced(&text, marked.marker, &section, None);
        std::fs::write(&summary, text)
            .with_context(|| format!("cannot write `{}`", summary.display()))?;
    }
    let html = dir.join(super::REPORT_HTML);
    if let Ok(text) = std::fs::read_to_string(&html) {
        let section = format!(
            "{start}\n<section id=\"{}\">\n<h2>{}</h2>\n{}</section>\n{end}\n",
            marked.id,
            marked.title,
            super::html::blocks(md, 1)
        );
        let text = replaced(
            &text,
            marked.marker,
            &section,
            Some("<section id=\"tools\">"),
        );
        std::fs::write(&html, text)
            .with_context(|| format!("cannot write `{}`", html.display()))?;
    }
    Ok(())
}

/// The opening and closing markers of the section `marker`.
fn markers(marker: &str) -> (String, String) {
    (
        format!("<!-- mcpeval:{marker} -->"),
        format!("<!-- /mcpeval:{marker} -->"),
    )
}

/// `text` with its section `marker` replaced by `section`, or `section` put before `before` (at
/// the end when absent).
fn replaced(text: &str, marker: &str, section: &str, before: Option<&str>) -> String {
    let (start_mark, end_mark) = markers(marker);
    if let (Some(start), Some(end)) = (text.find(&start_mark), text.find(&end_mark)) {
        let end =
            end + end_mark.len() + usize::from(text[end + end_mark.len()..].starts_with('\n'));
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
            "why",
            "<!-- mcpeval:why -->\nA\n<!-- /mcpeval:why -->\n",
            None,
        );
        let twice = replaced(
            &once,
            "why",
            "<!-- mcpeval:why -->\nB\n<!-- /mcpeval:why -->\n",
            None,
        );
        assert_eq!(
            twice,
            "# run\n\n<!-- mcpeval:why -->\nB\n<!-- /mcpeval:why -->\n"
        );
        let html = replaced(
            "<h1>x</h1><section id=\"tools\">",
            "why",
            "W",
            Some("<section id=\"tools\">"),
        );
        assert_eq!(html, "<h1>x</h1>W<section id=\"tools\">");
    }

    #[test]
    fn each_section_keeps_its_own_place_when_the_reports_are_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(crate::report::SUMMARY_MD), "# run\n").unwrap();
        std::fs::create_dir(dir.path().join("explain")).unwrap();
        std::fs::write(dir.path().join("explain").join(WHY_MD), "- a\n").unwrap();
        std::fs::write(dir.path().join(AGREEMENT_MD), "kappa 1.00\n").unwrap();
        refresh(dir.path()).unwrap();
        refresh(dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(crate::report::SUMMARY_MD)).unwrap();
        assert_eq!(text.matches("## Why").count(), 1, "{text}");
        assert_eq!(text.matches("## Host agreement").count(), 1, "{text}");
        assert!(
            text.find("## Why") < text.find("## Host agreement"),
            "{text}"
        );
        assert!(text.contains("kappa 1.00"), "{text}");
    }
}
