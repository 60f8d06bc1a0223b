//! Reading a user's request: its steps, quoted text, numbers, words and main verb.

use std::sync::LazyLock;

use regex::Regex;

use super::lexicon::{Concepts, GET, LIST, VERBS};
use super::literal::{self, Literal};
use super::text::{self, Word};

/// A quoted span of the request ('…', "…", “…”, ‘…’) and the word just before it (its cue).
#[derive(Debug, Clone)]
pub(super) struct Quote<'a> {
    pub text: &'a str,
    pub cue: Option<String>,
}

/// A number written in the request and the word just before it (`issue 42`, `#42`).
#[derive(Debug, Clone)]
pub(super) struct Number {
    pub value: i64,
    /// Index of the number in `Utterance::words`.
    pub word: usize,
    /// Stem of the preceding word, or `#`.
    pub cue: Option<String>,
}

/// One step of a request, read the way the sim needs it.
#[derive(Debug)]
pub(super) struct Utterance<'a> {
    /// The step's text, as written.
    pub text: &'a str,
    /// The text with quoted spans and literals blanked out by U+0001 (same byte offsets as
    /// `text`).
    pub masked: String,
    pub quotes: Vec<Quote<'a>>,
    /// Paths, URLs and e-mail addresses outside quotes, in the order they were written.
    pub literals: Vec<Literal<'a>>,
    /// Stems of the kinds of file the paths name (`imag` for `logo.png`, `directory` for
    /// `/tmp/notes`): a tool that speaks of that kind fits better.
    pub kinds: Vec<&'static str>,
    pub numbers: Vec<Number>,
    /// Words outside quotes, stopwords and numbers included.
    pub words: Vec<Word<'a>>,
    /// Index in `words` of the main verb, if the request has one.
    pub verb: Option<usize>,
    /// `GET` for a question without an action verb ("Who is assigned to issue 9?").
    implied: Concepts,
    content: Vec<(String, Concepts)>,
}

static QUOTE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:^|[\s(\[{:,=])(?:'([^']+)'|"([^"]+)"|“([^”]+)”|‘([^’]+)’)"#).expect("regex")
});

/// "What is in …?" asks for a listing.
static WHATS_IN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*what(?:'s|\s+is|\s+are)\s+(?:in|inside)\b").expect("regex")
});

static STEP_BREAK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\s*(?:,?\s*\band then\b|,?\s*\bthen\b|;)\s*").expect("regex")
});

impl<'a> Utterance<'a> {
    pub fn parse(text: &'a str) -> Self {
        let (mut masked, quotes) = mask_quotes(text);
        let literals = literal::take(text, &mut masked);
        // Words come from the masked text but borrow from the original (same offsets).
        let words: Vec<Word<'a>> = text::words(&masked)
            .into_iter()
            .map(|w| Word {
                raw: &text[w.start..w.start + w.raw.len()],
                start: w.start,
                stem: w.stem,
                stop: w.stop,
                numeric: w.numeric,
                concepts: w.concepts,
            })
            .collect();
        let numbers = numbers(&masked, &words);
        let verb = main_verb(&words);
        let implied = implied_verb(text, &words, verb);
        let mut content: Vec<(String, Concepts)> = Vec::new();
        for (i, w) in words.iter().enumerate() {
            if w.is_content() && Some(i) != verb && !content.iter().any(|(s, _)| *s == w.stem) {
                content.push((w.stem.clone(), w.concepts));
            }
        }
        let mut kinds: Vec<&'static str> = literals.iter().filter_map(Literal::file_kind).collect();
        kinds.dedup();
        Self {
            text,
            masked,
            quotes,
            literals,
            kinds,
            numbers,
            words,
            verb,
            implied,
            content,
        }
    }

    /// The synonym groups of the main verb, or of the verb a question implies (0 without one).
    pub fn verb_concepts(&self) -> Concepts {
        self.verb
            .map_or(self.implied, |i| self.words[i].concepts & VERBS)
    }

    /// Distinct stems of the content words, the main verb left out (it is scored on its own).
    pub fn content_stems(&self) -> &[(String, Concepts)] {
        &self.content
    }

    /// True for a capitalised word that does not start the text: a name, not a verb.
    pub fn is_proper(&self, i: usize) -> bool {
        i > 0
            && self.words[i]
                .raw
                .chars()
                .next()
                .is_some_and(char::is_uppercase)
    }

    /// True when the request is only a greeting or thanks.
    pub fn is_greeting(&self) -> bool {
        let lower = |w: &Word| w.raw.to_lowercase();
        self.words
            .iter()
            .any(|w| super::lexicon::GREETINGS.contains(&lower(w).as_str()))
            && self.words.iter().all(|w| w.stop)
    }
}

/// Splits a request into steps on "then", "and then", ", then" and ";" (outside quotes).
pub(super) fn split_steps(text: &str) -> Vec<&str> {
    let (masked, _) = mask_quotes(text);
    let mut steps = Vec::new();
    let mut from = 0;
    for m in STEP_BREAK.find_iter(&masked) {
        steps.push(&text[from..m.start()]);
        from = m.end();
    }
    steps.push(&text[from..]);
    steps.retain(|s| s.chars().any(char::is_alphanumeric));
    if steps.is_empty() {
        steps.push(text);
    }
    steps
}

fn mask_quotes(text: &str) -> (String, Vec<Quote<'_>>) {
    let mut masked = text.to_owned();
    let mut quotes = Vec::new();
    for caps in QUOTE.captures_iter(text) {
        let Some(inner) = (1..=4).find_map(|i| caps.get(i)) else {
            continue;
        };
        let whole = caps.get(0).expect("match");
        let after = text[whole.end()..].chars().next();
        if after.is_some_and(char::is_alphanumeric) {
            continue;
        }
        let open = text[..inner.start()]
            .char_indices()
            .next_back()
            .map_or(0, |(i, _)| i);
        let cue = text::words(&text[..open])
            .into_iter()
            .next_back()
            .map(|w| w.stem);
        quotes.push(Quote {
            text: inner.as_str(),
            cue,
        });
        // Blank the quote marks and the inside, keeping byte offsets. The filler is neither a
        // word character nor whitespace, so nothing reads across it.
        let (s, e) = (open, whole.end());
        let blank: String = text[s..e]
            .chars()
            .map(|c| "\u{1}".repeat(c.len_utf8()))
            .collect();
        masked.replace_range(s..e, &blank);
    }
    (masked, quotes)
}

fn numbers(masked: &str, words: &[Word]) -> Vec<Number> {
    let bytes = masked.as_bytes();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if !w.numeric {
            continue;
        }
        let before = w.start.checked_sub(1).map(|p| bytes[p]);
        let after = bytes.get(w.start + w.raw.len()).copied();
        // Parts of times, dates, versions and paths are not numbers the user meant on their own.
        let glued = |b: Option<u8>| matches!(b, Some(b':' | b'.' | b'/' | b'-' | b'_'));
        if glued(before) && before != Some(b'-') || glued(after) {
            continue;
        }
        let Ok(value) = w.raw.parse::<i64>() else {
            continue;
        };
        let cue = if before == Some(b'#') {
            Some("#".to_owned())
        } else {
            i.checked_sub(1).map(|p| words[p].stem.clone())
        };
        out.push(Number {
            value,
            word: i,
            cue,
        });
    }
    out
}

/// The first action verb of the request; "all"/"every" stand in for "list" when nothing else does.
/// A capitalised word inside the text is a name, and a verb after "is"/"are" (`is assigned`)
/// describes a state: neither is the action asked for.
fn main_verb(words: &[Word]) -> Option<usize> {
    let proper = |i: usize, w: &Word| i > 0 && w.raw.chars().next().is_some_and(char::is_uppercase);
    let after_be = |i: usize| {
        words[i.saturating_sub(2)..i].iter().any(|w| {
            matches!(
                w.raw.to_lowercase().as_str(),
                "is" | "are" | "was" | "were" | "be" | "been" | "being" | "am"
            )
        })
    };
    words
        .iter()
        .enumerate()
        .position(|(i, w)| !w.stop && w.concepts & VERBS != 0 && !proper(i, w) && !after_be(i))
        .or_else(|| {
            words
                .iter()
                .position(|w| matches!(w.raw.to_lowercase().as_str(), "all" | "every"))
        })
}

/// A question without an action verb asks to be told something: it implies "get".
fn implied_verb(text: &str, words: &[Word], verb: Option<usize>) -> Concepts {
    let asks = text.trim_end().ends_with('?')
        || words.first().is_some_and(|w| {
            matches!(
                w.raw.to_lowercase().as_str(),
                "who" | "what" | "which" | "where" | "when" | "whose" | "how"
            )
        });
    if verb.is_none() && WHATS_IN.is_match(text) {
        LIST
    } else if verb.is_none() && asks {
        GET
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_numbers_and_verb() {
        let u =
            Utterance::parse("Create an issue in zephyr titled 'App freezes on startup' for #7");
        assert_eq!(u.quotes.len(), 1);
        assert_eq!(u.quotes[0].text, "App freezes on startup");
        assert_eq!(u.quotes[0].cue.as_deref(), Some("titl"));
        assert!(!u.words.iter().any(|w| w.raw == "freezes"));
        assert_eq!(u.numbers[0].value, 7);
        assert_eq!(u.numbers[0].cue.as_deref(), Some("#"));
        assert_eq!(u.words[u.verb.unwrap()].raw, "Create");
        let u = Utterance::parse("Maria's issue 12 at 14:30");
        assert!(u.quotes.is_empty());
        assert_eq!(u.numbers.len(), 1);
        assert_eq!(u.numbers[0].cue.as_deref(), Some("issu"));
    }

    #[test]
    fn steps_split_outside_quotes() {
        assert_eq!(
            split_steps("Find 'this then that', then close issue 2; and then say hi"),
            ["Find 'this then that'", "close issue 2", "say hi"]
        );
        assert_eq!(split_steps("Show issue 3"), ["Show issue 3"]);
    }
}
