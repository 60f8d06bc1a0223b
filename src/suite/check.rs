//! Validation primitives on the spanned YAML tree: typed reads that record a diagnostic on failure.

use std::ops::RangeInclusive;
use std::path::Path;

use super::load::Diagnostic;
use super::raw::{Node, Value};

/// Collects the diagnostics of one file; every read returns `None` after recording its problem.
pub(crate) struct Checker<'a> {
    file: &'a Path,
    diagnostics: Vec<Diagnostic>,
}

/// The entries of a mapping whose keys were checked: strings, known, not repeated.
pub(crate) struct Fields<'n> {
    /// The mapping node itself, for "missing key" messages.
    pub node: &'n Node,
    pub entries: Vec<(&'n str, &'n Node, &'n Node)>,
}

impl<'n> Fields<'n> {
    /// The key node and value of `name`, if present.
    pub fn get(&self, name: &str) -> Option<(&'n Node, &'n Node)> {
        self.entries
            .iter()
            .find(|(key, _, _)| *key == name)
            .map(|(_, key, value)| (*key, *value))
    }
}

impl<'a> Checker<'a> {
    pub fn new(file: &'a Path) -> Self {
        Checker {
            file,
            diagnostics: Vec::new(),
        }
    }

    pub fn file(&self) -> &'a Path {
        self.file
    }

    /// How many problems were found so far (compare before and after a sub-check).
    pub fn count(&self) -> usize {
        self.diagnostics.len()
    }

    /// The problems found, in file order.
    pub fn into_diagnostics(mut self) -> Vec<Diagnostic> {
        self.diagnostics.sort_by_key(|d| (d.line, d.column));
        self.diagnostics
    }

    /// Records a problem at `node`.
    pub fn error(&mut self, node: &Node, message: impl Into<String>) {
        self.error_at(node.line, node.column, message);
    }

    pub fn error_at(&mut self, line: usize, column: usize, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic {
            file: self.file.to_path_buf(),
            line,
            column,
            message: message.into(),
        });
    }

    /// Records that `value`, the value of `name`, is not what was `expected` ("a string").
    pub fn wrong_type(&mut self, value: &Node, name: &str, expected: &str) {
        let hint = if expected == "a string" && value.value.is_plain_scalar() {
            " (quote it)"
        } else {
            ""
        };
        let got = value.value.kind();
        self.error(
            value,
            format!("`{name}` must be {expected}, got {got}{hint}"),
        );
    }

    /// Checks that `node` is a mapping with string keys, each at most once, and (when `known` is
    /// given) each one of `known`. `place` names the mapping in messages: "task", "`expect`".
    pub fn fields<'n>(
        &mut self,
        node: &'n Node,
        place: &str,
        known: Option<&[&str]>,
    ) -> Option<Fields<'n>> {
        let Value::Map(map) = &node.value else {
            let got = node.value.kind();
            self.error(node, format!("{place} must be a mapping, got {got}"));
            return None;
        };
        let mut fields = Fields {
            node,
            entries: Vec::new(),
        };
        for (key, value) in map {
            let Value::Str(name) = &key.value else {
                let got = key.value.kind();
                self.error(key, format!("keys in {place} must be strings, got {got}"));
                continue;
            };
            if let Some((_, first, _)) = fields.entries.iter().find(|(k, _, _)| k == name) {
                let line = first.line;
                self.error(
                    key,
                    format!("duplicate key `{name}` in {place} (first at line {line})"),
                );
                continue;
            }
            if let Some(known) = known.filter(|known| !known.contains(&name.as_str())) {
                let hint = suggestion(name, known);
                self.error(key, format!("unknown key `{name}` in {place}{hint}"));
                continue;
            }
            fields.entries.push((name, key, value));
        }
        Some(fields)
    }

    /// Records that the mapping `fields` lacks the required key `name`.
    pub fn missing(&mut self, fields: &Fields<'_>, name: &str, place: &str) {
        self.error(
            fields.node,
            format!("missing required key `{name}` in {place}"),
        );
    }

    pub fn string(&mut self, value: &Node, name: &str) -> Option<String> {
        match &value.value {
            Value::Str(s) => Some(s.clone()),
            _ => {
                self.wrong_type(value, name, "a string");
                None
            }
        }
    }

    /// A string that must not be empty or blank.
    pub fn non_empty_string(&mut self, value: &Node, name: &str) -> Option<String> {
        let s = self.string(value, name)?;
        if s.trim().is_empty() {
            self.error(value, format!("`{name}` is empty"));
            return None;
        }
        Some(s)
    }

    pub fn boolean(&mut self, value: &Node, name: &str) -> Option<bool> {
        match value.value {
            Value::Bool(b) => Some(b),
            _ => {
                self.wrong_type(value, name, "`true` or `false`");
                None
            }
        }
    }

    /// An integer in `range`.
    pub fn integer(&mut self, value: &Node, name: &str, range: RangeInclusive<u32>) -> Option<u32> {
        let n = match value.value {
            Value::UInt(n) => i128::from(n),
            Value::Int(n) => i128::from(n),
            _ => {
                self.wrong_type(value, name, "an integer");
                return None;
            }
        };
        match u32::try_from(n) {
            Ok(n) if range.contains(&n) => Some(n),
            _ => {
                let (low, high) = (range.start(), range.end());
                let limits = if *high == u32::MAX {
                    format!("at least {low}")
                } else {
                    format!("between {low} and {high}")
                };
                self.error(value, format!("`{name}` must be {limits}, got {n}"));
                None
            }
        }
    }

    /// A list of non-empty strings; every bad item is reported.
    pub fn string_list(&mut self, value: &Node, name: &str) -> Option<Vec<String>> {
        let Value::Seq(items) = &value.value else {
            self.wrong_type(value, name, "a list of strings");
            return None;
        };
        let before = self.count();
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match &item.value {
                Value::Str(s) if s.trim().is_empty() => {
                    self.error(item, format!("empty string in `{name}`"));
                }
                Value::Str(s) => out.push(s.clone()),
                other => {
                    let got = other.kind();
                    self.error(
                        item,
                        format!("entries of `{name}` must be strings, got {got}"),
                    );
                }
            }
        }
        (self.count() == before).then_some(out)
    }

    /// One of `choices` (by its spelling in YAML).
    pub fn choice<T: Copy>(
        &mut self,
        value: &Node,
        name: &str,
        choices: &[(&str, T)],
    ) -> Option<T> {
        let s = self.string(value, name)?;
        if let Some((_, v)) = choices.iter().find(|(spelling, _)| *spelling == s) {
            return Some(*v);
        }
        let valid: Vec<String> = choices.iter().map(|(c, _)| format!("`{c}`")).collect();
        let valid = valid.join(", ");
        self.error(
            value,
            format!("invalid {name} `{s}` (expected one of {valid})"),
        );
        None
    }

    /// A string that compiles as a regex (the regex crate's syntax).
    pub fn regex(&mut self, value: &Node, name: &str) -> Option<String> {
        let pattern = self.string(value, name)?;
        match regex::Regex::new(&pattern) {
            Ok(_) => Some(pattern),
            Err(err) => {
                let why = regex_error_summary(&err);
                self.error(value, format!("invalid regex in `{name}`: {why}"));
                None
            }
        }
    }

    /// Converts a YAML value to JSON (for argument literals); keys become strings.
    pub fn json(&mut self, node: &Node) -> Option<serde_json::Value> {
        use serde_json::Value as J;
        Some(match &node.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(n) => J::from(*n),
            Value::UInt(n) => J::from(*n),
            Value::Float(f) => match serde_json::Number::from_f64(*f) {
                Some(n) => J::Number(n),
                None => {
                    self.error(node, format!("`{f}` is not a finite number"));
                    return None;
                }
            },
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(items) => {
                let items: Vec<_> = items.iter().map(|item| self.json(item)).collect();
                J::Array(items.into_iter().collect::<Option<_>>()?)
            }
            Value::Map(entries) => {
                let mut object = serde_json::Map::new();
                let mut ok = true;
                for (key, value) in entries {
                    let key = self.json_key(key);
                    let value = self.json(value);
                    match (key, value) {
                        (Some(k), Some(v)) => drop(object.insert(k, v)),
                        _ => ok = false,
                    }
                }
                ok.then_some(J::Object(object))?
            }
        })
    }

    fn json_key(&mut self, key: &Node) -> Option<String> {
        match &key.value {
            Value::Str(s) => Some(s.clone()),
            Value::Null => Some("null".to_owned()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Int(n) => Some(n.to_string()),
            Value::UInt(n) => Some(n.to_string()),
            Value::Float(f) => Some(f.to_string()),
            Value::Seq(_) | Value::Map(_) => {
                let got = key.value.kind();
                self.error(key, format!("object keys must be strings, got {got}"));
                None
            }
        }
    }
}

/// Where each string key of a mapping is written (line, column); nothing for another node.
pub(crate) fn key_places(node: &Node) -> std::collections::BTreeMap<String, (usize, usize)> {
    let Value::Map(entries) = &node.value else {
        return Default::default();
    };
    (entries.iter())
        .filter_map(|(key, _)| match &key.value {
            Value::Str(name) => Some((name.clone(), (key.line, key.column))),
            _ => None,
        })
        .collect()
}

/// The regex crate's message without the pattern echo: its last line, minus `error: `.
pub(crate) fn regex_error_summary(err: &regex::Error) -> String {
    let text = err.to_string();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    last.trim().trim_start_matches("error: ").to_owned()
}

/// " (did you mean `x`?)" when some known name is close to `name` (see [`nearest`]).
pub(crate) fn suggestion(name: &str, known: &[&str]) -> String {
    nearest(name, known)
        .map(|k| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

/// The known name `name` most likely meant, if one is close. Names are compared as words
/// (split at `_`, `-`, `.` and camelCase humps, lower-cased), closest first:
/// 1. the same words (`listDirectory`, `List-Directory` for `list_directory`);
/// 2. the same words in another order (`issue_get` for `get_issue`), as close as one letter
///    off; or a small edit away (at most 2 letters, or a third of the name's length);
/// 3. an abbreviation, word for word (`list_dir` for `list_directory`, each short word at least
///    3 letters), or the words with one more in front or behind (`issue_id` or `file_path` for
///    `id` or `path`), when exactly one known name is that.
///
/// A name is never suggested when `name` is at least as close to its opposite (`min_…` for
/// `max_…`, `answer_contains` for `answer_not_contains`): the nearest name by letters can mean
/// the reverse of what was written, and following such a hint would flip the check.
pub(crate) fn nearest<'k>(name: &str, known: &[&'k str]) -> Option<&'k str> {
    let spelled = words(name);
    let joined = spelled.join("_");
    let ranked: Vec<(usize, usize, &'k str)> = known
        .iter()
        .filter_map(|k| {
            let theirs = words(k);
            let joined_k = theirs.join("_");
            let mut d = edit_distance(&joined, &joined_k);
            let tier = if d == 0 {
                0
            } else if reorders(&spelled, &theirs) {
                // All its words: as close as one letter off.
                d = 1;
                1
            } else if d <= 2.max(joined_k.len() / 3) && d < joined_k.len() {
                1
            } else if abbreviates(&spelled, &theirs) || qualifies(&spelled, &theirs) {
                2
            } else {
                return None;
            };
            let reverse = opposites(&joined_k)
                .iter()
                .any(|o| edit_distance(&joined, o) <= d);
            (!reverse).then_some((tier, d, *k))
        })
        .collect();
    let &(tier, _, best) = ranked.iter().min_by_key(|(tier, d, _)| (*tier, *d))?;
    // A guess by shape alone (abbreviation, order) must be the only one.
    let alike = ranked.iter().filter(|(t, ..)| *t == tier).count();
    (tier < 2 || alike == 1).then_some(best)
}

/// The words of a name, lower-cased: split at `_`, `-`, `.`, spaces and before an upper-case
/// letter that follows a lower-case one or a digit (`labelSelector` → `label`, `selector`).
fn words(name: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut previous: Option<char> = None;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.' | ' ') {
            out.push(String::new());
        } else {
            let hump = c.is_uppercase()
                && previous.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit());
            if hump {
                out.push(String::new());
            }
            out.last_mut()
                .expect("one word at least")
                .extend(c.to_lowercase());
        }
        previous = Some(c);
    }
    out.retain(|w| !w.is_empty());
    out
}

/// Whether `short` abbreviates `long` word for word: as many words, each a prefix of its
/// counterpart, and each shortened one at least 3 letters (`list_dir`, `desc`).
fn abbreviates(short: &[String], long: &[String]) -> bool {
    short.len() == long.len()
        && short != long
        && short
            .iter()
            .zip(long)
            .all(|(s, l)| s == l || (s.len() >= 3 && l.starts_with(s.as_str())))
}

/// Whether `long` is `short` with one word more in front or behind (`issue_id` for `id`), a word
/// that neither negates nor bounds (`not_…`, `max_…` say something of their own).
fn qualifies(long: &[String], short: &[String]) -> bool {
    const MEANING: &[&str] = &["not", "no", "min", "max", "minimum", "maximum"];
    let extra = match long.len() == short.len() + 1 && !short.is_empty() {
        true if long[1..] == *short => &long[0],
        true if long[..short.len()] == *short => &long[short.len()],
        _ => return false,
    };
    !MEANING.contains(&extra.as_str())
}

/// Whether `a` holds the words of `b` in another order; never when a negation moves (it says
/// what it negates by its place: `not_answer_contains` is not `answer_not_contains`).
fn reorders(a: &[String], b: &[String]) -> bool {
    let sorted = |w: &[String]| {
        let mut w = w.to_vec();
        w.sort();
        w
    };
    let negation = a.iter().any(|w| w == "not" || w == "no");
    a.len() > 1 && a != b && !negation && sorted(a) == sorted(b)
}

/// The keys that mean the reverse of `key` (words split at `_` or `-`, joined with `_`): each
/// `min` made `max` and the other way round, and each `not`/`no` left out, or, in a key
/// without one, `not_`/`no_` put before any of its words or `_not` after the last.
fn opposites(key: &str) -> Vec<String> {
    const SWAPS: &[(&str, &str)] = &[
        ("min", "max"),
        ("max", "min"),
        ("minimum", "maximum"),
        ("maximum", "minimum"),
    ];
    let words: Vec<&str> = key.split(['_', '-']).collect();
    let join = |words: &[&str]| words.join("_");
    let mut out = Vec::new();
    for (i, word) in words.iter().enumerate() {
        if let Some((_, other)) = SWAPS.iter().find(|(w, _)| w == word) {
            let mut swapped = words.clone();
            swapped[i] = other;
            out.push(join(&swapped));
        }
    }
    let negated = |w: &&str| matches!(*w, "not" | "no");
    if words.iter().any(negated) {
        let kept: Vec<&str> = words.iter().copied().filter(|w| !negated(w)).collect();
        out.push(join(&kept));
    } else if words.len() > 1 {
        for i in 0..=words.len() {
            for negation in ["not", "no"] {
                let mut with = words.clone();
                with.insert(i, negation);
                out.push(join(&with));
            }
        }
    }
    out
}

/// Levenshtein distance, in characters.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_insertions_deletions_and_substitutions() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("max_turn", "max_turns"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[test]
    fn suggestions_only_for_close_keys() {
        let known = ["id", "prompt", "max_turns", "expect"];
        assert_eq!(
            suggestion("max_turn", &known),
            " (did you mean `max_turns`?)"
        );
        assert_eq!(suggestion("Prompt", &known), " (did you mean `prompt`?)");
        assert_eq!(suggestion("colour", &known), "");
        // A one-letter key is not "close" to a two-letter one.
        assert_eq!(suggestion("x", &known), "");
    }

    #[test]
    fn suggestions_never_name_the_opposite_key() {
        let expect = [
            "max_tool_calls",
            "min_tool_calls",
            "answer_contains",
            "answer_not_contains",
            "no_tool",
        ];
        // Real typos still get the key meant.
        let hint = |k: &str| format!(" (did you mean `{k}`?)");
        assert_eq!(suggestion("max_tool_call", &expect), hint("max_tool_calls"));
        assert_eq!(suggestion("min_tool_cals", &expect), hint("min_tool_calls"));
        assert_eq!(
            suggestion("answer_not_contain", &expect),
            hint("answer_not_contains")
        );
        assert_eq!(
            suggestion("answer_contain", &expect),
            hint("answer_contains")
        );
        assert_eq!(
            suggestion("answer_nto_contains", &expect),
            hint("answer_not_contains")
        );
        assert_eq!(suggestion("notool", &expect), hint("no_tool"));
        // Halfway between a key and its opposite: no guess.
        assert_eq!(suggestion("mix_tool_calls", &expect), "");
        assert_eq!(suggestion("tool_calls", &expect), "");
        assert_eq!(suggestion("not_answer_contains", &expect), "");
        // With only one of a pair known, its opposite is not offered for the other.
        assert_eq!(suggestion("max_tool_calls", &["min_tool_calls"]), "");
        assert_eq!(suggestion("min_tool_calls", &["max_tool_calls"]), "");
        assert_eq!(suggestion("answer_not_contains", &["answer_contains"]), "");
        assert_eq!(suggestion("answer_contains", &["answer_not_contains"]), "");
        assert_eq!(suggestion("max_turns", &["min_turns", "prompt"]), "");
    }

    #[test]
    fn tool_and_argument_names_are_matched_by_their_words() {
        let fs = [
            "list_directory",
            "list_directory_with_sizes",
            "read_text_file",
            "read_media_file",
            "directory_tree",
        ];
        let hint = |k: &str| format!(" (did you mean `{k}`?)");
        // An abbreviation, word for word, picks the one name of as many words.
        assert_eq!(suggestion("list_dir", &fs), hint("list_directory"));
        assert_eq!(suggestion("read_txt_file", &fs), hint("read_text_file"));
        // Spelled in camelCase, with hyphens, in capitals, or in another order.
        assert_eq!(suggestion("listDirectory", &fs), hint("list_directory"));
        assert_eq!(suggestion("READ-TEXT-FILE", &fs), hint("read_text_file"));
        assert_eq!(suggestion("tree_directory", &fs), hint("directory_tree"));
        assert_eq!(
            suggestion("labelSelektor", &["labelSelector", "namespace"]),
            hint("labelSelector")
        );
        // A known name with the tool's noun in front, or a kind behind.
        assert_eq!(suggestion("issue_id", &["id", "status"]), hint("id"));
        assert_eq!(
            suggestion("file_path", &["path", "head", "tail"]),
            hint("path")
        );
        // Nonsense gets nothing: other words, a bare word of several names, an abbreviation of
        // two names, a bound or a negation in front.
        assert_eq!(suggestion("filename", &["path", "head", "tail"]), "");
        assert_eq!(suggestion("list", &fs), "");
        assert_eq!(suggestion("read_file", &fs), "");
        assert_eq!(suggestion("dir", &fs), "");
        assert_eq!(suggestion("pro", &["project", "prompt"]), "");
        assert_eq!(suggestion("li_dir", &fs), "");
        assert_eq!(suggestion("max_id", &["id"]), "");
        assert_eq!(suggestion("not_id", &["id"]), "");
        // `issue_id` is `id` with a word in front and `issue` with one behind: no guess.
        assert_eq!(suggestion("issue_id", &["id", "issue"]), "");
        assert_eq!(suggestion("get_issue_id", &["get_issue", "issue_id"]), "");
    }

    #[test]
    fn words_split_at_separators_and_camel_humps() {
        assert_eq!(words("labelSelector"), ["label", "selector"]);
        assert_eq!(
            words("list-directory_with.sizes"),
            ["list", "directory", "with", "sizes"]
        );
        assert_eq!(words("HTTPServer"), ["httpserver"]);
        assert_eq!(words("v2Name"), ["v2", "name"]);
        assert_eq!(words("__x__"), ["x"]);
    }

    #[test]
    fn the_opposites_of_a_key_swap_bounds_and_negations() {
        assert!(opposites("max_tool_calls").contains(&"min_tool_calls".to_owned()));
        assert!(opposites("answer_not_contains").contains(&"answer_contains".to_owned()));
        assert!(opposites("answer_contains").contains(&"answer_not_contains".to_owned()));
        assert!(opposites("no_tool").contains(&"tool".to_owned()));
        // One word: nothing to negate or swap.
        assert!(opposites("prompt").is_empty());
    }

    #[test]
    #[allow(clippy::invalid_regex, reason = "the test needs a regex error")]
    fn regex_errors_are_summarised_on_one_line() {
        let err = regex::Regex::new("(abc").unwrap_err();
        assert_eq!(regex_error_summary(&err), "unclosed group");
    }
}
