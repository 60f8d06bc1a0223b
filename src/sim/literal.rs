//! Verbatim values in a request: URLs, e-mail addresses and file paths, which a model copies
//! into arguments character for character instead of reading them as words.

use std::sync::LazyLock;

use regex::Regex;

use super::text;

/// What kind of verbatim value a literal is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `scheme://…` (http, https, file, s3, memory…).
    Url,
    Email,
    /// `/abs/path`, `~/x`, `./x`, `../x`, `C:\x`, `dir/file.ext` or `file.ext`.
    Path,
}

/// A verbatim value of the request and the word just before it (its cue).
#[derive(Debug, Clone)]
pub(super) struct Literal<'a> {
    pub text: &'a str,
    pub kind: Kind,
    /// Stem of the preceding word, if any.
    pub cue: Option<String>,
}

impl Literal<'_> {
    /// The kind of file a path names, as the stem of a word a tool description would use:
    /// by its extension (`logo.png` → "imag", `notes.md` → "text"), "directory" without one
    /// (or with a trailing separator); `None` for a literal that is no path.
    pub fn file_kind(&self) -> Option<&'static str> {
        if self.kind != Kind::Path {
            return None;
        }
        let name = self.text.rsplit(['/', '\\']).next()?;
        let Some((_, ext)) = name.rsplit_once('.') else {
            return Some("directory");
        };
        let ext = ext.to_ascii_lowercase();
        let kind = match ext.as_str() {
            "png" | "jpg" | "jpeg" | "gif" | "webp" | "bmp" | "svg" | "ico" | "tif" | "tiff" => {
                "imag"
            }
            "mp3" | "wav" | "ogg" | "flac" | "m4a" | "aac" => "audio",
            "mp4" | "mov" | "avi" | "mkv" | "webm" => "video",
            "pdf" | "zip" | "gz" | "tar" | "exe" | "bin" | "so" | "dll" => return None,
            _ => "text",
        };
        Some(kind)
    }
}

static URL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'"<>\x01]+"#).expect("regex"));
static EMAIL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[\w.+-]+@[\w-]+\.[\w.-]+\w").expect("regex"));
/// Paths start a token: an absolute, home, dot-relative or drive path, a relative path ending
/// in a file name with an extension, or a bare file name with an extension.
static PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r#"(?:^|[\s(\[{:,=])("#,
        r#"(?:~|\.{1,2})?/[^\s'"<>,;()\x01]*"#,
        r#"|[A-Za-z]:\\[^\s'"<>,;()\x01]*"#,
        r#"|[\w-]+(?:/[\w.-]+)*/[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7}"#,
        r#"|[\w-]{2,}(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{0,7}"#,
        r#")"#
    ))
    .expect("regex")
});

/// Punctuation that ends a sentence rather than a value.
const TRAILING: &[char] = &['.', ',', ';', ':', '!', '?', ')', ']', '}'];

/// Finds the literals of `text` (whose quoted spans `masked` has already blanked with U+0001),
/// and blanks them in `masked` too, keeping byte offsets. URLs first, then e-mail addresses,
/// then paths, so that a URL's path is not read as a path of its own.
pub(super) fn take<'a>(text: &'a str, masked: &mut String) -> Vec<Literal<'a>> {
    let mut found: Vec<(usize, Literal<'a>)> = Vec::new();
    for kind in [Kind::Url, Kind::Email, Kind::Path] {
        let spans: Vec<(usize, usize)> = match kind {
            Kind::Url => URL
                .find_iter(masked)
                .map(|m| (m.start(), m.end()))
                .collect(),
            Kind::Email => EMAIL
                .find_iter(masked)
                .map(|m| (m.start(), m.end()))
                .collect(),
            Kind::Path => PATH
                .captures_iter(masked)
                .filter_map(|c| c.get(1))
                .map(|m| (m.start(), m.end()))
                .collect(),
        };
        for (s, e) in spans {
            let value = text[s..e].trim_end_matches(TRAILING);
            // A lone "/" or "~/" names nothing in particular.
            if !value.chars().any(char::is_alphanumeric) {
                continue;
            }
            let e = s + value.len();
            let cue = text::words(&masked[..s])
                .into_iter()
                .next_back()
                .map(|w| w.stem);
            masked.replace_range(s..e, &"\u{1}".repeat(e - s));
            found.push((
                s,
                Literal {
                    text: value,
                    kind,
                    cue,
                },
            ));
        }
    }
    found.sort_by_key(|(s, _)| *s);
    found.into_iter().map(|(_, l)| l).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(&str, Kind)> {
        let mut masked = text.to_owned();
        take(text, &mut masked)
            .into_iter()
            .map(|l| (l.text, l.kind))
            .collect()
    }

    #[test]
    fn paths_urls_and_emails_stay_whole() {
        assert_eq!(
            kinds("Read /tmp/fixture/notes, then mail maria@example.com."),
            [
                ("/tmp/fixture/notes", Kind::Path),
                ("maria@example.com", Kind::Email)
            ]
        );
        assert_eq!(
            kinds("Fetch https://example.com/a/b.json?x=1 and ./src/main.rs"),
            [
                ("https://example.com/a/b.json?x=1", Kind::Url),
                ("./src/main.rs", Kind::Path)
            ]
        );
        assert_eq!(
            kinds("Open notes/todo.txt or README.md in C:\\Users\\me?"),
            [
                ("notes/todo.txt", Kind::Path),
                ("README.md", Kind::Path),
                ("C:\\Users\\me", Kind::Path)
            ]
        );
        // Place names, versions, times and abbreviations are not paths.
        assert!(kinds("Convert 4 PM from Asia/Tokyo, e.g. v1.2 at 14:30").is_empty());
        let mut masked = "List ~/docs now".to_owned();
        let lits = take("List ~/docs now", &mut masked);
        assert_eq!(lits[0].cue.as_deref(), Some("list"));
        assert_eq!(masked, "List \u{1}\u{1}\u{1}\u{1}\u{1}\u{1} now");
    }
}
