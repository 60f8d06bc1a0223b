//! A diff as a person reads it: changes of one kind that differ only in a number or an id are
//! one group (`100 × resource_removed resources test://static/resource/{1..100}`), and the
//! changes are counted per kind. Only the showing is grouped: `diff.json` keeps every change.

use std::collections::BTreeMap;

use serde_json::Value;

use super::model::{Change, ChangeKind};

/// Marks where a number or an id stood in a text's template.
const SLOT: char = '\u{0}';

/// Changes of one kind whose list, name, path and note are equal but for numbers and ids.
#[derive(Debug, Clone, PartialEq)]
pub struct Group<'a> {
    pub kind: ChangeKind,
    pub breaks_clients: bool,
    pub affects_models: bool,
    /// The members, in the diff's order; never empty.
    pub changes: Vec<&'a Change>,
    /// The list (`tools`, `resources`, …).
    pub list: String,
    /// The name with each varying number or id merged (`test://static/resource/{1..100}`).
    pub name: String,
    /// The path inside the object, merged the same way.
    pub path: Option<String>,
    /// The note, merged the same way.
    pub note: Option<String>,
}

impl Group<'_> {
    /// How many changes the group holds.
    pub fn len(&self) -> usize {
        self.changes.len()
    }

    /// Never: a group has at least one change.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// `100 × ` for a group of 100, nothing for one change.
    pub fn times(&self) -> String {
        match self.len() {
            1 => String::new(),
            n => format!("{n} × "),
        }
    }

    /// `before → after` for one change, or for a group whose members all have the same values;
    /// otherwise that they differ.
    pub fn values(&self) -> String {
        let first = self.changes[0];
        let same =
            (self.changes.iter()).all(|c| c.before == first.before && c.after == first.after);
        if same {
            values(first)
        } else {
            "each its own values (see diff.json)".to_owned()
        }
    }

    /// What to say about it: the note, else the values.
    pub fn what(&self) -> String {
        self.note.clone().unwrap_or_else(|| self.values())
    }
}

/// The changes in groups, in the order of each group's first change.
pub fn group(changes: &[Change]) -> Vec<Group<'_>> {
    let mut order: Vec<Vec<&Change>> = Vec::new();
    let mut index: BTreeMap<Key, usize> = BTreeMap::new();
    for change in changes {
        let key = key(change);
        match index.get(&key) {
            Some(&i) => order[i].push(change),
            None => {
                index.insert(key, order.len());
                order.push(vec![change]);
            }
        }
    }
    order.into_iter().map(merge).collect()
}

/// The number of changes per kind, the most frequent first (then in the kinds' order).
pub fn counts(changes: &[Change]) -> Vec<(ChangeKind, usize)> {
    let mut per: BTreeMap<ChangeKind, usize> = BTreeMap::new();
    for c in changes {
        *per.entry(c.kind).or_default() += 1;
    }
    let mut out: Vec<(ChangeKind, usize)> = per.into_iter().collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

/// `24 input_schema_declared, 11 description_changed`.
pub fn counts_line(changes: &[Change]) -> String {
    let parts: Vec<String> = counts(changes)
        .into_iter()
        .map(|(kind, n)| format!("{n} {}", kind.as_str()))
        .collect();
    parts.join(", ")
}

/// What makes two changes one group: the kind, its classification, and the texts' templates.
type Key = (
    ChangeKind,
    bool,
    bool,
    String,
    String,
    Option<String>,
    Option<String>,
);

fn key(c: &Change) -> Key {
    let template = |s: &str| split(s).0;
    (
        c.kind,
        c.breaks_clients,
        c.affects_models,
        c.list.clone(),
        template(&c.name),
        c.path.as_deref().map(template),
        c.note.as_deref().map(template),
    )
}

fn merge(changes: Vec<&Change>) -> Group<'_> {
    let first = changes[0];
    let merged = |text: fn(&Change) -> Option<&str>| -> Option<String> {
        let texts: Vec<&str> = changes.iter().filter_map(|c| text(c)).collect();
        (!texts.is_empty()).then(|| merge_texts(&texts))
    };
    Group {
        kind: first.kind,
        breaks_clients: first.breaks_clients,
        affects_models: first.affects_models,
        list: first.list.clone(),
        name: merged(|c| Some(&c.name)).unwrap_or_default(),
        path: merged(|c| c.path.as_deref()),
        note: merged(|c| c.note.as_deref()),
        changes,
    }
}

/// Texts of one template, with each slot that varies shown as the set of its values.
fn merge_texts(texts: &[&str]) -> String {
    let split: Vec<(String, Vec<String>)> = texts.iter().map(|t| split(t)).collect();
    let (template, _) = &split[0];
    let mut out = String::new();
    let mut slot = 0;
    for ch in template.chars() {
        if ch != SLOT {
            out.push(ch);
            continue;
        }
        let values: Vec<&str> = split.iter().map(|(_, s)| s[slot].as_str()).collect();
        out.push_str(&merge_values(&values));
        slot += 1;
    }
    out
}

/// One value when all are equal; numbers as ranges (`{1..3,7}`); other ids listed, shortened
/// past three.
fn merge_values(values: &[&str]) -> String {
    if values.iter().all(|v| *v == values[0]) {
        return values[0].to_owned();
    }
    let numbers: Option<Vec<u64>> = values
        .iter()
        .map(|v| v.parse::<u64>().ok().filter(|n| n.to_string() == *v))
        .collect();
    if let Some(mut numbers) = numbers {
        numbers.sort_unstable();
        numbers.dedup();
        return format!("{{{}}}", ranges(&numbers));
    }
    let mut distinct: Vec<&str> = values.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    match distinct.len() {
        n if n <= 3 => format!("{{{}}}", distinct.join(",")),
        n => format!("{{{},{},… {n} ids}}", distinct[0], distinct[1]),
    }
}

/// Sorted distinct numbers as runs: `1..3,7`.
fn ranges(numbers: &[u64]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < numbers.len() {
        let mut j = i;
        while j + 1 < numbers.len() && numbers[j + 1] == numbers[j] + 1 {
            j += 1;
        }
        parts.push(match j - i {
            0 => numbers[i].to_string(),
            1 => format!("{},{}", numbers[i], numbers[j]),
            _ => format!("{}..{}", numbers[i], numbers[j]),
        });
        i = j + 1;
    }
    parts.join(",")
}

/// A text's template (each number or id replaced by [`SLOT`]) and the numbers and ids, in order.
/// A word of hex digits and hyphens with at least eight hex digits, one of them a digit (a UUID,
/// a hash, a date) is one id; elsewhere each run of digits is a number.
fn split(text: &str) -> (String, Vec<String>) {
    let mut template = String::with_capacity(text.len());
    let mut slots = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if !is_word(chars[i]) {
            template.push(chars[i]);
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && is_word(chars[i]) {
            i += 1;
        }
        let word: String = chars[start..i].iter().collect();
        if is_id(&word) {
            template.push(SLOT);
            slots.push(word);
        } else {
            digits(&word, &mut template, &mut slots);
        }
    }
    (template, slots)
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

fn is_id(word: &str) -> bool {
    let hex = word.chars().filter(char::is_ascii_hexdigit).count();
    word.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
        && hex >= 8
        && word.chars().any(|c| c.is_ascii_digit())
        && !word.starts_with('-')
}

/// The word into the template, each run of digits as a slot.
fn digits(word: &str, template: &mut String, slots: &mut Vec<String>) {
    let mut run = String::new();
    for c in word.chars() {
        if c.is_ascii_digit() {
            run.push(c);
            continue;
        }
        if !run.is_empty() {
            template.push(SLOT);
            slots.push(std::mem::take(&mut run));
        }
        template.push(c);
    }
    if !run.is_empty() {
        template.push(SLOT);
        slots.push(run);
    }
}

/// `before → after`, each shortened to one line of 60 characters; a changed text (a
/// description, a title, the instructions: a string on both sides) longer than that, as the
/// words that differ with a little context ([`super::words::changed_text`]).
pub fn values(c: &Change) -> String {
    let show = |v: &Option<Value>| match v {
        None => "–".to_owned(),
        Some(Value::String(s)) => short(s),
        Some(other) => short(&other.to_string()),
    };
    match (&c.before, &c.after) {
        (None, None) => String::new(),
        (Some(Value::String(b)), Some(Value::String(a))) => super::words::changed_text(b, a),
        _ => format!("{} → {}", show(&c.before), show(&c.after)),
    }
}

fn short(s: &str) -> String {
    let one_line = s.replace('\n', " ");
    match one_line.char_indices().nth(super::words::WHOLE_CHARS) {
        Some((at, _)) => format!("{}…", &one_line[..at]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn removed(uri: &str) -> Change {
        Change::new("resources", uri, ChangeKind::ResourceRemoved)
            .values(Some(json!({"uri": uri})), None)
    }

    #[test]
    fn a_hundred_resources_that_differ_in_a_number_are_one_group() {
        let changes: Vec<Change> = (1..=100)
            .map(|n| removed(&format!("test://static/resource/{n}")))
            .collect();
        let groups = group(&changes);
        assert_eq!(groups.len(), 1, "{groups:?}");
        let g = &groups[0];
        assert_eq!(g.len(), 100);
        assert_eq!(g.times(), "100 × ");
        assert_eq!(g.name, "test://static/resource/{1..100}");
        assert_eq!(g.what(), "each its own values (see diff.json)");
        assert_eq!(counts_line(&changes), "100 resource_removed");
    }

    #[test]
    fn gaps_and_pairs_show_as_ranges_and_lists() {
        assert_eq!(ranges(&[1, 2, 3, 5, 7, 8]), "1..3,5,7,8");
        let changes: Vec<Change> = [4, 1, 2, 3, 9]
            .iter()
            .map(|n| removed(&format!("r/{n}")))
            .collect();
        assert_eq!(group(&changes)[0].name, "r/{1..4,9}");
    }

    #[test]
    fn changes_of_other_kinds_or_words_stay_apart() {
        let changes = vec![
            removed("test://a/1"),
            removed("test://b/2"),
            Change::new("resources", "test://a/3", ChangeKind::MimeTypeChanged),
            removed("test://a/4"),
        ];
        let groups = group(&changes);
        let names: Vec<(String, usize)> =
            groups.iter().map(|g| (g.name.clone(), g.len())).collect();
        assert_eq!(
            names,
            [
                ("test://a/{1,4}".to_owned(), 2),
                ("test://b/2".to_owned(), 1),
                ("test://a/3".to_owned(), 1)
            ]
        );
        assert_eq!(groups[1].times(), "", "one change has no count");
        assert_eq!(groups[1].what(), r#"{"uri":"test://b/2"} → –"#);
    }

    #[test]
    fn ids_group_as_one_word_and_equal_numbers_stay_written() {
        let ids = [
            "550e8400-e29b-41d4-a716-446655440000",
            "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
        ];
        let changes: Vec<Change> = ids
            .iter()
            .map(|id| removed(&format!("item://v2/{id}")))
            .collect();
        let groups = group(&changes);
        assert_eq!(groups.len(), 1, "{groups:?}");
        assert_eq!(
            groups[0].name,
            "item://v2/{550e8400-e29b-41d4-a716-446655440000,6ba7b810-9dad-11d1-80b4-00c04fd430c8}"
        );
        let many: Vec<Change> = (0..5)
            .map(|n| removed(&format!("h/{n}abcdef0{n}")))
            .collect();
        assert_eq!(group(&many)[0].name, "h/{0abcdef00,1abcdef01,… 5 ids}");
    }

    #[test]
    fn counts_put_the_most_frequent_kind_first() {
        let mut changes = vec![Change::new("tools", "a", ChangeKind::ToolAdded)];
        changes.extend((0..3).map(|n| removed(&format!("r/{n}"))));
        assert_eq!(counts_line(&changes), "3 resource_removed, 1 tool_added");
    }
}
