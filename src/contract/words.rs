//! A changed text as a person reads it: the words that differ, with a few words of context on
//! each side (`… Use ['UTC' → 'Etc/UTC'] as local …`) for the console and summary.md, and the
//! whole text with its deletions and insertions marked for report.html. Words are the text's
//! runs between whitespace, compared with `similar`'s Myers diff; a change of spacing alone
//! changes no word.

use std::ops::Range;

use serde_json::Value;
use similar::{capture_diff_slices, Algorithm, DiffOp};

use super::model::{Change, ChangeKind};

/// Words of context shown on each side of a change.
const CONTEXT: usize = 3;
/// Changes shown in an excerpt; the rest are counted.
const HUNKS: usize = 3;
/// The longest run of changed words shown whole in an excerpt (in characters).
const CHANGED_CHARS: usize = 80;
/// A text this long or shorter (on one line) is shown whole, before → after, rather than as a
/// word diff.
pub const WHOLE_CHARS: usize = 60;

/// A text split into words: each word's byte range in the text.
struct Words<'a> {
    text: &'a str,
    spans: Vec<Range<usize>>,
}

impl<'a> Words<'a> {
    fn of(text: &'a str) -> Self {
        let mut spans = Vec::new();
        let mut start = None;
        for (i, c) in text.char_indices() {
            match (c.is_whitespace(), start) {
                (true, Some(s)) => {
                    spans.push(s..i);
                    start = None;
                }
                (false, None) => start = Some(i),
                _ => {}
            }
        }
        if let Some(s) = start {
            spans.push(s..text.len());
        }
        Self { text, spans }
    }

    fn word(&self, i: usize) -> &'a str {
        &self.text[self.spans[i].clone()]
    }

    fn list(&self) -> Vec<&'a str> {
        (0..self.spans.len()).map(|i| self.word(i)).collect()
    }

    /// The words `range` (word indices) as the text has them, inner whitespace kept.
    fn slice(&self, range: &Range<usize>) -> &'a str {
        match (range.is_empty(), self.spans.get(range.start)) {
            (false, Some(first)) => &self.text[first.start..self.spans[range.end - 1].end],
            _ => "",
        }
    }

    /// The words `range` joined by single spaces.
    fn joined(&self, range: Range<usize>) -> String {
        range.map(|i| self.word(i)).collect::<Vec<_>>().join(" ")
    }
}

/// A run of words equal on both sides, or a change: the words it removed and those it added
/// (word indices into each side; either may be empty).
#[derive(Debug, Clone, PartialEq)]
struct Part {
    same: bool,
    old: Range<usize>,
    new: Range<usize>,
}

/// One piece of the whole text with its changes marked, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Words both sides have.
    Same(&'a str),
    /// Words only the before has.
    Gone(&'a str),
    /// Words only the after has.
    New(&'a str),
    /// Whitespace between two pieces (the after's, where it has words on both sides).
    Space(&'a str),
}

/// The word diff of two texts.
pub struct WordDiff<'a> {
    old: Words<'a>,
    new: Words<'a>,
    parts: Vec<Part>,
}

impl<'a> WordDiff<'a> {
    pub fn of(before: &'a str, after: &'a str) -> Self {
        let (old, new) = (Words::of(before), Words::of(after));
        let ops = capture_diff_slices(Algorithm::Myers, &old.list(), &new.list());
        let mut parts: Vec<Part> = Vec::new();
        for op in ops {
            let (same, o, n) = match op {
                DiffOp::Equal {
                    old_index,
                    new_index,
                    len,
                } => (true, old_index..old_index + len, new_index..new_index + len),
                DiffOp::Delete {
                    old_index,
                    old_len,
                    new_index,
                } => (false, old_index..old_index + old_len, new_index..new_index),
                DiffOp::Insert {
                    old_index,
                    new_index,
                    new_len,
                } => (false, old_index..old_index, new_index..new_index + new_len),
                DiffOp::Replace {
                    old_index,
                    old_len,
                    new_index,
                    new_len,
                } => (
                    false,
                    old_index..old_index + old_len,
                    new_index..new_index + new_len,
                ),
            };
            // A delete next to an insert is one change.
            match parts.last_mut() {
                Some(last) if !last.same && !same => {
                    last.old.end = o.end.max(last.old.end);
                    last.new.end = n.end.max(last.new.end);
                }
                _ => parts.push(Part {
                    same,
                    old: o,
                    new: n,
                }),
            }
        }
        Self { old, new, parts }
    }

    /// How many separate changes (runs of changed words) there are.
    pub fn changes(&self) -> usize {
        self.parts.iter().filter(|p| !p.same).count()
    }

    /// The whole text with its changes marked: what report.html shows.
    pub fn pieces(&self) -> Vec<Piece<'a>> {
        let mut out = Vec::new();
        // The byte end, in the after, of the last word shown that the after has.
        let mut new_end: Option<usize> = None;
        for part in &self.parts {
            let new_start = self.new.spans.get(part.new.start).map(|s| s.start);
            let new_last = part.new.end.checked_sub(1).map(|i| self.new.spans[i].end);
            if part.same {
                self.space(&mut out, new_end, new_start);
                out.push(Piece::Same(self.new.slice(&part.new)));
                new_end = new_last;
                continue;
            }
            if !part.old.is_empty() {
                // The after's whitespace goes before the words that went (a line break stays
                // where the after has it); one space after them.
                self.space(&mut out, new_end, new_start);
                out.push(Piece::Gone(self.old.slice(&part.old)));
                new_end = None;
            }
            if !part.new.is_empty() {
                self.space(&mut out, new_end, new_start);
                out.push(Piece::New(self.new.slice(&part.new)));
                new_end = new_last;
            }
        }
        out
    }

    /// The whitespace before the next piece: the after's between its words where it has words
    /// on both sides (a line break stays one), else one space; none before the first piece.
    /// `next_new`: where the after's next word starts (the words after a deletion's place).
    fn space(&self, out: &mut Vec<Piece<'a>>, new_end: Option<usize>, next_new: Option<usize>) {
        if out.is_empty() {
            return;
        }
        match (new_end, next_new) {
            (Some(end), Some(start)) if start > end => {
                out.push(Piece::Space(&self.new.text[end..start]));
            }
            _ => out.push(Piece::Space(" ")),
        }
    }

    /// The changes with a few words of context, on one line: `… Use ['UTC' → 'Etc/UTC'] as
    /// local timezone …`. A replacement reads `[before → after]`, an insertion `[+words]`, a
    /// deletion `[-words]`; past three changes, the rest are counted.
    pub fn excerpt(&self) -> String {
        let changes = self.changes();
        if changes == 0 {
            return "the same words, spaced differently".to_owned();
        }
        let mut out: Vec<String> = Vec::new();
        let mut shown = 0;
        let last = self.parts.len() - 1;
        for (i, part) in self.parts.iter().enumerate() {
            if !part.same {
                if shown == HUNKS {
                    out.push(format!("({} more change(s) not shown)", changes - HUNKS));
                    break;
                }
                out.push(self.change(part));
                shown += 1;
                continue;
            }
            let (words, len) = (&part.new, part.new.len());
            let context = |r: Range<usize>| self.new.joined(r);
            let leading = i == 0;
            let trailing = i == last || shown == HUNKS;
            if leading && len > CONTEXT {
                out.push(format!("… {}", context(words.end - CONTEXT..words.end)));
            } else if trailing && (len > CONTEXT || i != last) {
                let head = context(words.start..words.start + CONTEXT.min(len));
                out.push(format!("{head} …"));
            } else if !leading && !trailing && len > 2 * CONTEXT + 1 {
                out.push(format!(
                    "{} … {}",
                    context(words.start..words.start + CONTEXT),
                    context(words.end - CONTEXT..words.end)
                ));
            } else {
                out.push(context(words.clone()));
            }
        }
        out.join(" ")
    }

    fn change(&self, part: &Part) -> String {
        let side = |words: &Words, r: &Range<usize>| shortened(&words.joined(r.clone()));
        match (part.old.is_empty(), part.new.is_empty()) {
            (true, _) => format!("[+{}]", side(&self.new, &part.new)),
            (false, true) => format!("[-{}]", side(&self.old, &part.old)),
            (false, false) => format!(
                "[{} → {}]",
                side(&self.old, &part.old),
                side(&self.new, &part.new)
            ),
        }
    }
}

fn shortened(s: &str) -> String {
    match s.char_indices().nth(CHANGED_CHARS) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

/// A changed text for one line: both sides whole (`before → after`) when each fits in
/// [`WHOLE_CHARS`] on one line, else the [`WordDiff::excerpt`].
pub fn changed_text(before: &str, after: &str) -> String {
    let fits = |s: &str| !s.contains('\n') && s.chars().count() <= WHOLE_CHARS;
    if fits(before) && fits(after) {
        return format!("{before} → {after}");
    }
    WordDiff::of(before, after).excerpt()
}

/// Either side of a changed text, absent as `–`, on one line: [`changed_text`] when both are
/// there, else the one there shortened to one line of [`WHOLE_CHARS`].
pub fn sides(before: Option<&str>, after: Option<&str>) -> String {
    let one = |s: Option<&str>| match s {
        None => "–".to_owned(),
        Some(s) => {
            let line = s.split_whitespace().collect::<Vec<_>>().join(" ");
            match line.char_indices().nth(WHOLE_CHARS) {
                Some((at, _)) => format!("{}…", &line[..at]),
                None => line,
            }
        }
    };
    match (before, after) {
        (Some(b), Some(a)) => changed_text(b, a),
        _ => format!("{} → {}", one(before), one(after)),
    }
}

/// The sides of a change of a text, each a string or absent: any change of a description, a
/// title or the instructions, and a change of another kind whose values are strings too long
/// to show whole on one line. `None` for any other change.
pub fn texts(c: &Change) -> Option<(Option<&str>, Option<&str>)> {
    let (before, after) = (text_side(&c.before)?, text_side(&c.after)?);
    let text = matches!(
        c.kind,
        ChangeKind::DescriptionChanged | ChangeKind::TitleChanged | ChangeKind::InstructionsChanged
    );
    let long =
        |s: Option<&str>| s.is_some_and(|s| s.contains('\n') || s.chars().count() > WHOLE_CHARS);
    let shown = match (before, after) {
        (None, None) => false,
        (Some(_), Some(_)) => text || long(before) || long(after),
        _ => text,
    };
    shown.then_some((before, after))
}

/// A side of a change as text: `Some(None)` when absent, `None` when not a string.
fn text_side(v: &Option<Value>) -> Option<Option<&str>> {
    match v {
        None => Some(None),
        Some(Value::String(s)) => Some(Some(s.as_str())),
        Some(_) => None,
    }
}

#[cfg(test)]
#[path = "words_tests.rs"]
mod tests;
