//! Finding values in a request: "<key> <value>", "in X", "to X", times, dates, description hints.

use std::sync::LazyLock;

use regex::Regex;

use super::lexicon::VERBS;
use super::literal::Kind;
use super::request::Utterance;

/// Words that may stand between a key and its value ("project is apollo", "named Alice").
const GLUE: &[&str] = &[
    "is", "as", "called", "named", "be", "the", "a", "an", "to", "of", "=",
];

static TIME_24: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b([01]?\d|2[0-3]):([0-5]\d)\b").expect("regex"));
static TIME_12: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(1[0-2]|0?[1-9])(?::([0-5]\d))?\s*([ap])\.?m\b\.?").expect("regex")
});
static DATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:\d{2})?)?\b")
        .expect("regex")
});
static EMAIL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[\w.+-]+@[\w-]+\.[\w.-]+\w").expect("regex"));
static URL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"https?://[^\s'"<>]+[^\s'"<>.,;:!?)]"#).expect("regex"));
static ID_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
        r"|[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*[-_][A-Za-z]*[0-9][A-Za-z0-9]*",
        r"|[0-9][A-Za-z0-9]*[-_][A-Za-z][A-Za-z0-9_-]*",
        r"|[0-9a-f]{12,})\b"
    ))
    .expect("regex")
});
static DESC_DEFAULT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(?:use|defaults?(?:\s+(?:is|to|value))?:?)\s+['"‘“`]?([\w/+.-]*\w)"#)
        .expect("regex")
});
static DESC_EXAMPLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(?:e\.g\.|eg|for example|such as|like),?:?\s*['"‘“`]?([\w/+.-]*\w)"#)
        .expect("regex")
});
static DESC_QUOTED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"['"‘“`]([\w/+.-]+)['"’”`]"#).expect("regex"));

/// Which words of the request are already taken as values or as keys of values.
#[derive(Debug, Clone)]
pub(super) struct Used {
    pub words: Vec<bool>,
    pub quotes: Vec<bool>,
    pub literals: Vec<bool>,
}

impl Used {
    pub fn new(utt: &Utterance) -> Self {
        Self {
            words: vec![false; utt.words.len()],
            quotes: vec![false; utt.quotes.len()],
            literals: vec![false; utt.literals.len()],
        }
    }
}

/// The value token that starts at word `i`: letters, digits and `/_-.+@:` (so `Asia/Tokyo`,
/// `v1.2` and `maria@example.com` stay whole), trailing punctuation trimmed.
pub(super) fn token_at<'a>(utt: &Utterance<'a>, i: usize) -> &'a str {
    let start = utt.words[i].start;
    let rest = &utt.masked[start..];
    let len = rest
        .char_indices()
        .find(|&(_, c)| !(c.is_alphanumeric() || "/_-.+@:".contains(c)))
        .map_or(rest.len(), |(k, _)| k);
    utt.text[start..start + len].trim_end_matches(['.', ':', '-', '/'])
}

/// A word that can be a value: not a stopword, verb, number or taken word, and not `reject`ed.
/// A capitalised word inside the sentence is a name even if it spells a verb ("New York").
fn can_be_value(utt: &Utterance, used: &Used, j: usize, reject: &dyn Fn(&str) -> bool) -> bool {
    let w = &utt.words[j];
    let verb = w.concepts & VERBS != 0 && !utt.is_proper(j);
    !used.words[j] && !w.stop && !w.numeric && !verb && !reject(&w.stem)
}

/// "<key> <value>": the word after one of `keys` (glue words skipped). Marks key and value used.
pub(super) fn after_key<'a>(
    utt: &Utterance<'a>,
    used: &mut Used,
    keys: &[String],
    reject: &dyn Fn(&str) -> bool,
) -> Option<(usize, &'a str)> {
    for key in keys {
        for (i, w) in utt.words.iter().enumerate() {
            if w.stem != *key || used.words[i] {
                continue;
            }
            let mut j = i + 1;
            while j < utt.words.len() && GLUE.contains(&utt.words[j].raw.to_lowercase().as_str()) {
                j += 1;
            }
            let not_key = |s: &str| keys.iter().any(|k| k == s) || reject(s);
            if j < utt.words.len() && can_be_value(utt, used, j, &not_key) {
                used.words[i] = true;
                used.words[j] = true;
                return Some((j, token_at(utt, j)));
            }
        }
    }
    None
}

/// "<value> <key>" ("the apollo project"). Marks key and value used.
pub(super) fn before_key<'a>(
    utt: &Utterance<'a>,
    used: &mut Used,
    keys: &[String],
    reject: &dyn Fn(&str) -> bool,
) -> Option<&'a str> {
    for (i, w) in utt.words.iter().enumerate().skip(1) {
        if keys.contains(&w.stem) && can_be_value(utt, used, i - 1, reject) {
            let j = i - 1;
            let prev = j.checked_sub(1).map(|p| utt.words[p].raw.to_lowercase());
            // Only "the X project", "X project" at the start, or after a preposition.
            if prev.is_none_or(|p| matches!(p.as_str(), "the" | "in" | "for" | "of" | "to")) {
                used.words[i] = true;
                used.words[j] = true;
                return Some(token_at(utt, j));
            }
        }
    }
    None
}

/// "<preposition> <value>" ("in apollo", "to maria"), optionally joining capitalised words
/// ("in New York"). Marks the value used.
pub(super) fn after_preposition<'a>(
    utt: &Utterance<'a>,
    used: &mut Used,
    preps: &[&str],
    join_capitalised: bool,
    reject: &dyn Fn(&str) -> bool,
) -> Option<String> {
    for (i, w) in utt.words.iter().enumerate() {
        if !preps.contains(&w.raw.to_lowercase().as_str()) {
            continue;
        }
        let j = i + 1;
        if j >= utt.words.len() || !can_be_value(utt, used, j, reject) {
            continue;
        }
        used.words[j] = true;
        let mut value = token_at(utt, j).to_owned();
        let mut k = j + 1;
        let capital = |s: &str| s.chars().next().is_some_and(char::is_uppercase);
        while join_capitalised && capital(&value) && k < utt.words.len() {
            let next = &utt.words[k];
            let prev = &utt.words[k - 1];
            let adjacent = utt.text[prev.start + prev.raw.len()..next.start]
                .trim()
                .is_empty();
            if !adjacent || !capital(next.raw) || !can_be_value(utt, used, k, reject) {
                break;
            }
            used.words[k] = true;
            value.push(' ');
            value.push_str(token_at(utt, k));
            k += 1;
        }
        return Some(value);
    }
    None
}

/// A time of day as `HH:MM` (from `14:30` or `4 PM` / `9:30 am`).
pub(super) fn time_of_day(utt: &Utterance) -> Option<String> {
    if let Some(c) = TIME_24.captures(&utt.masked) {
        return Some(format!("{:0>2}:{}", &c[1], &c[2]));
    }
    let c = TIME_12.captures(&utt.masked)?;
    let mut hour: u32 = c[1].parse().ok()?;
    let minute = c.get(2).map_or("00", |m| m.as_str());
    match (&c[3].to_lowercase()[..], hour) {
        ("p", h) if h < 12 => hour += 12,
        ("a", 12) => hour = 0,
        _ => {}
    }
    Some(format!("{hour:02}:{minute}"))
}

pub(super) fn date(utt: &Utterance) -> Option<String> {
    DATE.find(&utt.masked).map(|m| m.as_str().to_owned())
}

/// An e-mail address the request writes out (outside quotes).
pub(super) fn email(utt: &Utterance) -> Option<String> {
    literal_of(utt, Kind::Email).or_else(|| EMAIL.find(&utt.masked).map(|m| m.as_str().to_owned()))
}

/// A URL of any scheme the request writes out, else an http(s) URL inside a quote.
pub(super) fn url(utt: &Utterance) -> Option<String> {
    literal_of(utt, Kind::Url).or_else(|| URL.find(utt.text).map(|m| m.as_str().to_owned()))
}

fn literal_of(utt: &Utterance, kind: Kind) -> Option<String> {
    utt.literals
        .iter()
        .find(|l| l.kind == kind)
        .map(|l| l.text.to_owned())
}

/// An identifier written out whole: `INV-2024-001`, `ord_8f3k2`, a UUID (letters and digits
/// joined by `-` or `_`, or a long hex string).
pub(super) fn id_token(utt: &Utterance) -> Option<String> {
    ID_TOKEN.find(&utt.masked).map(|m| m.as_str().to_owned())
}

/// The value a description recommends when the user gives none ("Use 'UTC' …", "default: x").
pub(super) fn described_default(desc: &str) -> Option<&str> {
    DESC_DEFAULT
        .captures(desc)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str())
}

/// The first example a description gives ("e.g. apollo").
pub(super) fn described_example(desc: &str) -> Option<&str> {
    DESC_EXAMPLE
        .captures(desc)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str())
}

/// A quoted example of the description that ends in the given value ("New York" →
/// 'America/New_York'), so that a place becomes the identifier the tool wants.
pub(super) fn matching_example<'d>(desc: &'d str, value: &str) -> Option<&'d str> {
    let wanted = value.to_lowercase().replace(' ', "_");
    DESC_QUOTED
        .captures_iter(desc)
        .map(|c| c.get(1).expect("group").as_str())
        .find(|ex| {
            let ex = ex.to_lowercase();
            ex == wanted || ex.rsplit('/').next() == Some(wanted.as_str())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(ks: &[&str]) -> Vec<String> {
        ks.iter().map(|k| super::super::text::stem(k)).collect()
    }

    #[test]
    fn values_after_keys_and_prepositions() {
        let u = Utterance::parse("Find open issues about login in project apollo.");
        let mut used = Used::new(&u);
        let none = |_: &str| false;
        assert_eq!(
            after_key(&u, &mut used, &keys(&["project"]), &none)
                .unwrap()
                .1,
            "apollo"
        );
        let u = Utterance::parse("What time is it in New York now?");
        let mut used = Used::new(&u);
        let v = after_preposition(&u, &mut used, &["in"], true, &none);
        assert_eq!(v.as_deref(), Some("New York"));
        let desc = "IANA timezone name (e.g., 'America/New_York', 'Europe/London').";
        assert_eq!(matching_example(desc, "New York"), Some("America/New_York"));
        assert_eq!(described_example(desc), Some("America/New_York"));
        assert_eq!(
            described_default("Use 'UTC' as local timezone"),
            Some("UTC")
        );
        let u = Utterance::parse("Convert 4 PM from Asia/Tokyo");
        assert_eq!(time_of_day(&u).as_deref(), Some("16:00"));
        let mut used = Used::new(&u);
        let v = after_preposition(&u, &mut used, &["from"], false, &none);
        assert_eq!(v.as_deref(), Some("Asia/Tokyo"));
    }
}
