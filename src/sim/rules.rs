//! What the sim takes from the system prompt: "use X to …" boosts a tool, "X can never be done"
//! makes it decline requests for X.

use std::sync::LazyLock;

use regex::Regex;

use super::lexicon::{Concepts, VERBS};
use super::request::Utterance;
use super::text::{self, bare_name};
use crate::host::ToolSpec;

/// A sentence that recommends (sign +1) or discourages (sign −1) one tool, for some purpose.
#[derive(Debug)]
struct Boost {
    tool: usize,
    sign: f64,
    verbs: Concepts,
    nouns: Vec<String>,
}

/// A sentence that forbids an action.
#[derive(Debug)]
struct Forbid<'a> {
    sentence: &'a str,
    verbs: Concepts,
    nouns: Vec<(String, Concepts)>,
}

/// The rules found in the system prompt.
#[derive(Debug, Default)]
pub(super) struct Rules<'a> {
    boosts: Vec<Boost>,
    forbids: Vec<Forbid<'a>>,
}

static NEGATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:never|cannot|can't|can not|do not|don't|does not|doesn't|must not|mustn't|should not|shouldn't|may not|no longer|not allowed|not permitted|forbidden|prohibited)\b",
    )
    .expect("regex")
});

static DIRECTIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:use|using|prefer|preferably|call|try|always|recommended)\b")
        .expect("regex")
});

const DIRECTIVE_WORDS: &[&str] = &[
    "use",
    "using",
    "prefer",
    "preferably",
    "call",
    "try",
    "always",
    "recommended",
    "over",
    "instead",
    "rather",
];

static CONTRAST: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(?:over|instead of|rather than)\b").expect("regex"));

impl<'a> Rules<'a> {
    pub fn parse(system: &'a str, tools: &[ToolSpec]) -> Self {
        let mut rules = Rules::default();
        for sentence in sentences(system) {
            let negation = NEGATION.find(sentence);
            let named = tool_mentions(sentence, tools);
            if !named.is_empty() && (DIRECTIVE.is_match(sentence) || negation.is_some()) {
                rules.add_boosts(sentence, &named, negation.is_some());
            } else if let Some(neg) = negation {
                rules.add_forbid(sentence, neg.start());
            }
        }
        rules
    }

    fn add_boosts(&mut self, sentence: &str, named: &[(usize, usize, usize)], negated: bool) {
        let contrast = CONTRAST.find(sentence).map(|m| m.start());
        let (verbs, nouns) = purpose(sentence, named);
        for &(tool, start, _) in named {
            let against = negated || contrast.is_some_and(|c| start > c);
            self.boosts.push(Boost {
                tool,
                sign: if against { -1.0 } else { 1.0 },
                verbs,
                nouns: nouns.clone(),
            });
        }
    }

    fn add_forbid(&mut self, sentence: &'a str, at: usize) {
        let clause = clause_around(sentence, at);
        let mut verbs = 0;
        let mut nouns = Vec::new();
        for w in text::words(clause).into_iter().filter(|w| w.is_content()) {
            if w.concepts & VERBS != 0 {
                verbs |= w.concepts & VERBS;
            } else {
                nouns.push((w.stem, w.concepts));
            }
        }
        if verbs != 0 {
            self.forbids.push(Forbid {
                sentence: sentence.trim(),
                verbs,
                nouns,
            });
        }
    }

    /// The sum of the signs of the rules about `tool` that apply to this request.
    pub fn boost(&self, tool: usize, utt: &Utterance) -> f64 {
        let verbs = utt.verb_concepts();
        let content = utt.content_stems();
        self.boosts
            .iter()
            .filter(|b| b.tool == tool)
            .filter(|b| match (b.verbs, b.nouns.is_empty()) {
                (0, true) => true,
                (0, false) => content
                    .iter()
                    .any(|(s, _)| b.nouns.iter().any(|n| n.as_str() == *s)),
                (v, _) => v & verbs != 0,
            })
            .map(|b| b.sign)
            .sum()
    }

    /// The sentence forbidding what the request asks for, if one does.
    pub fn forbidding(&self, utt: &Utterance) -> Option<&'a str> {
        let verbs = utt.verb_concepts();
        if verbs == 0 {
            return None;
        }
        let content = utt.content_stems();
        let about = |(stem, concepts): &(String, Concepts)| {
            content
                .iter()
                .any(|(s, c)| *s == stem.as_str() || (c & concepts & !VERBS) != 0)
        };
        self.forbids
            .iter()
            .find(|f| f.verbs & verbs != 0 && (f.nouns.is_empty() || f.nouns.iter().any(about)))
            .map(|f| f.sentence)
    }
}

/// Sentences and lines of a text.
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    text.split('\n').flat_map(|line| {
        let mut out = Vec::new();
        let mut from = 0;
        let bytes = line.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            let end = matches!(b, b'.' | b'!' | b'?')
                && bytes.get(i + 1).is_none_or(|n| n.is_ascii_whitespace());
            if end {
                out.push(&line[from..=i]);
                from = i + 1;
            }
        }
        out.push(&line[from..]);
        out.into_iter().filter(|s| !s.trim().is_empty())
    })
}

/// The part of a sentence, between `:`/`;`/`,`/dashes, that holds byte offset `at`.
fn clause_around(sentence: &str, at: usize) -> &str {
    let is_break = |c: char| matches!(c, ':' | ';' | ',' | '—' | '–');
    let start = sentence[..at]
        .char_indices()
        .rfind(|&(_, c)| is_break(c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let end = sentence[at..]
        .find(is_break)
        .map_or(sentence.len(), |i| at + i);
    &sentence[start..end]
}

/// Tools named in a sentence: (tool index, start, end), in order of appearance.
fn tool_mentions(sentence: &str, tools: &[ToolSpec]) -> Vec<(usize, usize, usize)> {
    let lower = sentence.to_lowercase();
    let mut out = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        let name = bare_name(&tool.name).to_lowercase();
        if name.len() < 3 {
            continue;
        }
        let found = lower.match_indices(&name).find(|(at, _)| {
            let before = lower[..*at].chars().next_back();
            let after = lower[at + name.len()..].chars().next();
            let edge = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            edge(before) && edge(after)
        });
        if let Some((at, _)) = found {
            out.push((i, at, at + name.len()));
        }
    }
    out.sort_by_key(|&(_, start, _)| start);
    out
}

/// The verbs and nouns of a recommendation, the tool names themselves left out.
fn purpose(sentence: &str, named: &[(usize, usize, usize)]) -> (Concepts, Vec<String>) {
    let mut verbs = 0;
    let mut nouns = Vec::new();
    for w in text::words(sentence) {
        let inside = named.iter().any(|&(_, s, e)| w.start >= s && w.start < e);
        let directive = DIRECTIVE_WORDS.contains(&w.raw.to_lowercase().as_str());
        if inside || directive || !w.is_content() {
            continue;
        }
        if w.concepts & VERBS != 0 {
            verbs |= w.concepts & VERBS;
        } else {
            nouns.push(w.stem);
        }
    }
    (verbs, nouns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            title: None,
            description: None,
            input_schema: serde_json::json!({"type": "object"}),
            deferred: false,
        }
    }

    #[test]
    fn recommendations_and_prohibitions() {
        let tools = [tool("mcp__t__find_items"), tool("search_items")];
        let system = "You help.\n\nItems can never be deleted: archive them instead. \
                      Use find_items to look items up. Prefer find_items over search_items.";
        let rules = Rules::parse(system, &tools);
        let delete = Utterance::parse("Delete item 4");
        assert_eq!(
            rules.forbidding(&delete),
            Some("Items can never be deleted: archive them instead.")
        );
        let find = Utterance::parse("Look up items about login");
        assert!(rules.forbidding(&find).is_none());
        assert_eq!(rules.boost(0, &find), 2.0);
        assert_eq!(rules.boost(1, &find), -1.0);
        let make = Utterance::parse("Make a new item");
        assert_eq!(rules.boost(0, &make), 1.0);
    }
}
