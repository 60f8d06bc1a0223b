//! Words for the sim: splitting text and tool names into words, stopwords, light stemming.

use super::lexicon::{self, Concepts};

/// One word of a text, with where it was and what it means to the sim.
#[derive(Debug, Clone)]
pub(super) struct Word<'a> {
    /// The word as written.
    pub raw: &'a str,
    /// Byte offset of `raw` in the text it came from.
    pub start: usize,
    pub stem: String,
    pub stop: bool,
    pub numeric: bool,
    pub concepts: Concepts,
}

impl Word<'_> {
    /// A word that can carry meaning: not a stopword, not a bare number.
    pub fn is_content(&self) -> bool {
        !self.stop && !self.numeric
    }
}

/// The name without an `mcp__<server>__` prefix.
pub(super) fn bare_name(name: &str) -> &str {
    name.strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__").map(|(_, tool)| tool))
        .filter(|tool| !tool.is_empty())
        .unwrap_or(name)
}

/// Splits text into words on anything that is not a letter or digit, and on camelCase humps
/// (`entityType` → `entity`, `Type`; `HTTPServer` → `HTTP`, `Server`).
pub(super) fn words(text: &str) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    for (start, run) in alnum_runs(text) {
        camel_parts(run, |offset, part| {
            out.push(make_word(part, start + offset))
        });
    }
    out
}

/// The stems of the content words of a text (a convenience for tool fields).
pub(super) fn content_stems(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(Word::is_content)
        .map(|w| w.stem)
        .collect()
}

fn make_word(raw: &str, start: usize) -> Word<'_> {
    let lower = if raw.bytes().any(|b| b.is_ascii_uppercase()) || !raw.is_ascii() {
        raw.to_lowercase()
    } else {
        raw.to_owned()
    };
    let stop = lexicon::is_stopword(&lower);
    let numeric = lower.bytes().all(|b| b.is_ascii_digit());
    let stem = stem_owned(lower);
    let concepts = lexicon::concepts(&stem);
    Word {
        raw,
        start,
        stem,
        stop,
        numeric,
        concepts,
    }
}

fn alnum_runs(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = text.char_indices().peekable();
    std::iter::from_fn(move || {
        while let Some(&(_, c)) = rest.peek() {
            if c.is_alphanumeric() {
                break;
            }
            rest.next();
        }
        let (start, _) = *rest.peek()?;
        let mut end = start;
        while let Some(&(i, c)) = rest.peek() {
            if !c.is_alphanumeric() {
                break;
            }
            end = i + c.len_utf8();
            rest.next();
        }
        Some((start, &text[start..end]))
    })
}

/// Splits a run of letters and digits at camelCase boundaries, calling `part(offset, text)`.
fn camel_parts<'a>(run: &'a str, mut part: impl FnMut(usize, &'a str)) {
    let mut from = 0;
    let mut prev: Option<char> = None;
    let mut chars = run.char_indices().peekable();
    while let Some((i, cur)) = chars.next() {
        if let Some(p) = prev {
            let next_lower = chars.peek().is_some_and(|&(_, c)| c.is_lowercase());
            let hump = (p.is_lowercase() && cur.is_uppercase())
                || (p.is_uppercase() && cur.is_uppercase() && next_lower);
            if hump {
                part(from, &run[from..i]);
                from = i;
            }
        }
        prev = Some(cur);
    }
    part(from, &run[from..]);
}

/// A light stemmer: plurals, `-ing`, `-ed` and a final `e`, so that `closed`, `close` and
/// `closing` (or `issues` and `issue`) meet. Stems are internal and need not be words.
pub(super) fn stem(lower: &str) -> String {
    stem_owned(lower.to_owned())
}

fn stem_owned(mut s: String) -> String {
    if s.len() <= 3 || !s.is_ascii() {
        return s;
    }
    strip_plural(&mut s);
    strip_suffix(&mut s);
    // The one who is acted on: `assignee` meets `assign`.
    if s.len() > 6 && s.ends_with("ee") {
        s.truncate(s.len() - 2);
    }
    if s.len() > 3 && s.ends_with('e') && !s.ends_with("ee") {
        s.pop();
    }
    s
}

fn strip_plural(s: &mut String) {
    let n = s.len();
    if s.ends_with("ies") && n > 4 {
        s.truncate(n - 3);
        s.push('y');
    } else if ["sses", "ches", "shes", "xes", "zes"]
        .iter()
        .any(|e| s.ends_with(e))
    {
        s.truncate(n - 2);
    } else if s.ends_with('s') && !["ss", "us", "is"].iter().any(|e| s.ends_with(e)) {
        s.truncate(n - 1);
    }
}

fn strip_suffix(s: &mut String) {
    let n = s.len();
    if s.ends_with("ing") && n >= 6 {
        s.truncate(n - 3);
        undouble(s);
    } else if s.ends_with("ied") && n > 4 {
        s.truncate(n - 3);
        s.push('y');
    } else if s.ends_with("ed") && !s.ends_with("eed") && n >= 5 {
        s.truncate(n - 2);
        undouble(s);
    }
}

/// `runn` → `run`, but `call` stays (Porter's exception for l, s, z).
fn undouble(s: &mut String) {
    let b = s.as_bytes();
    let n = b.len();
    if n >= 3 && b[n - 1] == b[n - 2] && !b"aeioulsz".contains(&b[n - 1]) {
        s.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_meet() {
        for (a, b) in [
            ("closed", "close"),
            ("closing", "close"),
            ("issues", "issue"),
            ("created", "creates"),
            ("entities", "entity"),
            ("named", "name"),
            ("running", "run"),
            ("matches", "match"),
            ("titled", "title"),
            ("calling", "call"),
            ("timezones", "timezone"),
            ("assignee", "assigned"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} / {b}");
        }
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("need"), "need");
    }

    #[test]
    fn names_split_like_a_reader_would() {
        let stems = |s: &str| -> Vec<String> { words(s).into_iter().map(|w| w.stem).collect() };
        assert_eq!(stems("search_issues"), ["search", "issu"]);
        assert_eq!(stems("entityType"), ["entity", "typ"]);
        assert_eq!(stems("HTTPServer-v2"), ["http", "server", "v2"]);
        assert_eq!(bare_name("mcp__tracker__get_issue"), "get_issue");
        assert_eq!(bare_name("get_issue"), "get_issue");
        let w = words("Show me #42, please");
        assert_eq!(w[2].raw, "42");
        assert!(w[2].numeric && w[1].stop && !w[0].stop);
    }
}
