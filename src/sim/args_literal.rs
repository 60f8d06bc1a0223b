//! Giving the request's verbatim values (paths, URLs, e-mail addresses, path-like quotes) to the
//! parameters that want them, character for character.

use serde_json::Value;

use super::extract::Used;
use super::literal::Kind;
use super::params::{self, Param};
use super::request::Utterance;

/// Cues of a path that is the destination of a move or copy ("to /b", "into /b", "as b.txt").
const TO_CUES: &[&str] = &["to", "into", "as", "onto"];

/// A path for a path, source or target parameter: a written-out path, else a quoted one.
/// A source takes the path after "from" (else the first not after "to"), a target only the path
/// after "to"; others take the first path. Marks it used.
pub(super) fn path_value(p: &Param, utt: &Utterance, used: &mut Used) -> Option<String> {
    let found = candidates(utt, used);
    let cue_in = |c: &Option<String>, set: &[&str]| c.as_deref().is_some_and(|c| set.contains(&c));
    let pick = if p.is(params::TARGET) {
        // No destination without "to": "Read a and b" moves nothing.
        found.iter().find(|c| cue_in(&c.cue, TO_CUES))
    } else if p.is(params::SOURCE) {
        let from = found.iter().find(|c| cue_in(&c.cue, &["from"]));
        from.or_else(|| found.iter().find(|c| !cue_in(&c.cue, TO_CUES)))
    } else {
        found.first()
    }?;
    pick.mark(used);
    Some(pick.text.to_owned())
}

/// True when the request still has a path for a parameter.
pub(super) fn has_paths(utt: &Utterance, used: &Used) -> bool {
    !candidates(utt, used).is_empty()
}

/// Every path the request still has, in the order written (for an array of paths). Marks them.
pub(super) fn all_paths(utt: &Utterance, used: &mut Used) -> Vec<Value> {
    let found = candidates(utt, used);
    found
        .iter()
        .map(|c| {
            c.mark(used);
            Value::String(c.text.to_owned())
        })
        .collect()
}

/// The first unused literal of a kind (a URL for a `url` parameter). Marks it used.
pub(super) fn of_kind(utt: &Utterance, used: &mut Used, kind: Kind) -> Option<String> {
    let at =
        (0..utt.literals.len()).find(|&i| !used.literals[i] && utt.literals[i].kind == kind)?;
    used.literals[at] = true;
    Some(utt.literals[at].text.to_owned())
}

/// A required string parameter the request named nothing for takes a path that is still
/// unused rather than a guess made of the request's words. Not marked used: the parameter did
/// not ask for a path, so the tool has not placed it.
pub(super) fn any_unused(p: &Param, utt: &Utterance, used: &Used) -> Option<Value> {
    if p.ty() != "string"
        || p.enum_values().is_some()
        || p.is(params::ID | params::URL | params::EMAIL)
    {
        return None;
    }
    let at = (0..utt.literals.len())
        .find(|&i| !used.literals[i] && utt.literals[i].kind == Kind::Path)?;
    Some(Value::String(utt.literals[at].text.to_owned()))
}

/// A path the request offers: a literal (index into `literals`) or a quote (into `quotes`).
struct Candidate<'a> {
    text: &'a str,
    cue: Option<String>,
    literal: Option<usize>,
    quote: Option<usize>,
}

impl Candidate<'_> {
    fn mark(&self, used: &mut Used) {
        if let Some(i) = self.literal {
            used.literals[i] = true;
        }
        if let Some(i) = self.quote {
            used.quotes[i] = true;
        }
    }
}

/// Unused path literals and path-like quotes, in the order written (literals first).
fn candidates<'a>(utt: &Utterance<'a>, used: &Used) -> Vec<Candidate<'a>> {
    let literals = utt
        .literals
        .iter()
        .enumerate()
        .filter(|(i, l)| l.kind == Kind::Path && !used.literals[*i]);
    let mut out: Vec<Candidate<'a>> = literals
        .map(|(i, l)| Candidate {
            text: l.text,
            cue: l.cue.clone(),
            literal: Some(i),
            quote: None,
        })
        .collect();
    for (i, q) in utt.quotes.iter().enumerate() {
        if !used.quotes[i] && looks_like_path(q.text) {
            out.push(Candidate {
                text: q.text,
                cue: q.cue.clone(),
                literal: None,
                quote: Some(i),
            });
        }
    }
    out
}

/// A quoted text that is a path: one token with a separator or a file extension, no wildcard
/// (a quoted `**/*.txt` is a pattern, not a path).
fn looks_like_path(text: &str) -> bool {
    let mut masked = text.to_owned();
    !text.contains(['*', '?', ' '])
        && super::literal::take(text, &mut masked)
            .first()
            .is_some_and(|l| l.kind == Kind::Path && l.text == text)
}
