//! "Did you mean": the one rule that finds the known key, tool or argument name a misspelt one
//! most likely meant, for every message that names an unknown one.

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
pub fn words(name: &str) -> Vec<String> {
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
}
