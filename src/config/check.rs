//! Reads a config file and reports every problem in it at once, in file order, each as
//! `file:line:col: message`, as task files do: syntax errors; unknown keys in any table, with
//! "did you mean" (`crate::suite::suggestion`); and values of the wrong type or form.
//!
//! The file is parsed into a tree that keeps each key's and value's position. Unknown keys are
//! found by walking the tree against the tables' own serde fields ([`shape_at`]); the rest by
//! deserializing the tree into [`ConfigFile`], setting aside the entry each error points at and
//! deserializing again, until nothing is wrong.

use std::borrow::Cow;
use std::ops::Range;
use std::path::PathBuf;

use serde::Deserialize;
use toml::de::{DeArray, DeTable, DeValue};
use toml::Spanned;

use super::file::ConfigFile;
use super::shape::{shape_at, Shape};
use super::ConfigError;
use crate::suite::{suggestion, Diagnostic};

/// One problem: where (a byte offset into the file; `None` for the whole file) and what.
type Problem = (Option<usize>, String);

/// Reads and checks the config file at `path` (the tables that one command alone reads:
/// `[nightly]`, `[check]`): the file, or every problem in it, each naming the file.
pub(crate) fn read_config(path: &std::path::Path) -> Result<ConfigFile, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_config(&path.display().to_string(), &text)
}

/// Reads the config file `text` (named `path` in messages): the file, or every problem in it.
pub(crate) fn parse_config(path: &str, text: &str) -> Result<ConfigFile, ConfigError> {
    let (mut root, syntax) = DeTable::parse_recoverable(text);
    let mut problems: Vec<Problem> = syntax
        .iter()
        .map(|e| (e.span().map(|s| s.start), one_line(e.message())))
        .collect();
    // A file that is no valid TOML is not checked further: its tables may not be what they seem.
    if !problems.is_empty() {
        return Err(report(path, text, problems));
    }
    unknown_keys(root.get_mut(), &mut Vec::new(), &mut problems);
    let moved = hosts_as_tables(root.get_mut(), &mut problems);
    let file = typed(root, &moved, &mut problems);
    match file {
        Some(file) if problems.is_empty() => Ok(file),
        _ => Err(report(path, text, problems)),
    }
}

/// The problems as diagnostics in file order (those of the whole file first).
fn report(path: &str, text: &str, mut problems: Vec<Problem>) -> ConfigError {
    problems.sort_by_key(|(at, _)| *at);
    let problems = problems
        .into_iter()
        .map(|(at, message)| {
            let (line, column) = at.map_or((0, 0), |at| position(text, at));
            Diagnostic {
                file: PathBuf::from(path),
                line,
                column,
                message,
            }
        })
        .collect();
    ConfigError::Problems {
        path: path.to_owned(),
        problems,
    }
}

/// The 1-based line and column (in characters) of byte offset `at`.
fn position(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count() + 1;
    (line, before[line_start..].chars().count() + 1)
}

/// A message on one line (the parser's may span several).
fn one_line(message: &str) -> String {
    let lines: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines.join("; ")
}

/// A table's name as written in a header: `[host.fast]`, `[prices."openai:gpt-4.1"]`.
fn table_name(path: &[String]) -> String {
    let keys: Vec<Cow<'_, str>> = path
        .iter()
        .map(|key| {
            let bare = !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if bare {
                Cow::Borrowed(key.as_str())
            } else {
                Cow::Owned(format!("{key:?}"))
            }
        })
        .collect();
    format!("[{}]", keys.join("."))
}

/// " in [stats]", or nothing at the top level.
fn in_table(path: &[String]) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" in {}", table_name(path))
    }
}

/// Records and removes the keys that no table of the config has, with a "did you mean". `path`
/// is the table's, as written; `[hosts.NAME]` tables are checked as `[host.NAME]` ones.
fn unknown_keys(table: &mut DeTable<'_>, path: &mut Vec<String>, problems: &mut Vec<Problem>) {
    let mut typed: Vec<&str> = path.iter().map(String::as_str).collect();
    // Only a `hosts` that is a table is walked into.
    if typed.first() == Some(&"hosts") {
        typed[0] = "host";
    }
    let shape = shape_at::<ConfigFile>(&typed);
    if let Shape::Table(known) = shape {
        let unknown: Vec<(String, usize)> = table
            .iter()
            .filter(|(key, _)| !known.contains(&key.get_ref().as_ref()))
            .map(|(key, _)| (key.get_ref().to_string(), key.span().start))
            .collect();
        for (key, at) in unknown {
            let hint = suggestion(&key, known);
            let place = in_table(path);
            problems.push((Some(at), format!("unknown key `{key}`{place}{hint}")));
            table.remove(key.as_str());
        }
    }
    if matches!(shape, Shape::Table(_) | Shape::Map) {
        for (key, value) in table.iter_mut() {
            if let DeValue::Table(inner) = value.get_mut() {
                path.push(key.get_ref().to_string());
                unknown_keys(inner, path, problems);
                path.pop();
            }
        }
    }
}

/// `[hosts.NAME]` tables instead of a `hosts` list: they become `[host.NAME]` tables and the run's
/// hosts all of them, in name order. Returns the names moved (to name them as written).
fn hosts_as_tables(root: &mut DeTable<'_>, problems: &mut Vec<Problem>) -> Vec<String> {
    let is_table = |v: Option<&Spanned<DeValue<'_>>>| {
        matches!(v.map(|v| v.get_ref()), Some(DeValue::Table(_)))
    };
    if !is_table(root.get("hosts")) || !(root.get("host").is_none() || is_table(root.get("host"))) {
        return Vec::new();
    }
    let Some((key, value)) = root.remove_entry("hosts") else {
        return Vec::new();
    };
    let span = value.span();
    let DeValue::Table(named) = value.into_inner() else {
        return Vec::new();
    };
    let host_key = Spanned::new(key.span(), Cow::Borrowed("host"));
    let host = root
        .entry(host_key)
        .or_insert_with(|| Spanned::new(key.span(), DeValue::Table(DeTable::new())));
    let DeValue::Table(host) = host.get_mut() else {
        return Vec::new();
    };
    let mut names = DeArray::new();
    let mut moved = Vec::new();
    for (name, entry) in named {
        let text: &str = name.get_ref();
        if host.contains_key(text) {
            problems.push((
                Some(name.span().start),
                format!("host `{text}` is defined both as [hosts.{text}] and [host.{text}]"),
            ));
            continue;
        }
        moved.push(text.to_owned());
        names.push(Spanned::new(
            name.span(),
            DeValue::String(name.get_ref().clone()),
        ));
        host.insert(name, entry);
    }
    root.insert(key, Spanned::new(span, DeValue::Array(names)));
    moved
}

/// The file deserialized, or `None` after recording each entry that does not deserialize (a value
/// of the wrong type, a table missing a key). `moved` are the `[hosts.NAME]` tables.
fn typed(
    mut root: Spanned<DeTable<'_>>,
    moved: &[String],
    problems: &mut Vec<Problem>,
) -> Option<ConfigFile> {
    loop {
        let error = match ConfigFile::deserialize(toml::de::Deserializer::from(root.clone())) {
            Ok(file) => return Some(file),
            Err(e) => e,
        };
        let span = error.span();
        let message = plain(error.message());
        let located = span.as_ref().and_then(|s| locate(root.get_ref(), s.start));
        let Some((mut path, is_table)) = located else {
            problems.push((span.map(|s| s.start), message));
            return None;
        };
        let at = span.map(|s| s.start);
        // Set the entry aside; the next round finds the next problem.
        if !remove(root.get_mut(), &path) {
            problems.push((at, message));
            return None;
        }
        if path.len() > 1 && path[0] == "host" && moved.contains(&path[1]) {
            path[0] = "hosts".to_owned();
        }
        let text = if is_table {
            format!("{}: {message}", table_name(&path))
        } else {
            let key = path.pop().unwrap_or_default();
            format!("`{key}`{}: {message}", in_table(&path))
        };
        problems.push((at, text));
    }
}

fn contains(span: &Range<usize>, at: usize) -> bool {
    span.contains(&at) || (span.is_empty() && span.start == at)
}

/// The path of the innermost entry whose key or value holds byte offset `at`, and whether that
/// value is a table.
fn locate(table: &DeTable<'_>, at: usize) -> Option<(Vec<String>, bool)> {
    let mut found = None;
    for (key, value) in table {
        if let DeValue::Table(inner) = value.get_ref() {
            if let Some((mut path, is_table)) = locate(inner, at) {
                path.insert(0, key.get_ref().to_string());
                return Some((path, is_table));
            }
        }
        if contains(&key.span(), at) || contains(&value.span(), at) {
            let is_table = matches!(value.get_ref(), DeValue::Table(_));
            found = Some((vec![key.get_ref().to_string()], is_table));
        }
    }
    found
}

/// Removes the entry at `path`; false if there is none.
fn remove(table: &mut DeTable<'_>, path: &[String]) -> bool {
    match path {
        [] => false,
        [last] => table.remove(last.as_str()).is_some(),
        [first, rest @ ..] => match table.get_mut(first.as_str()).map(|v| v.get_mut()) {
            Some(DeValue::Table(inner)) => remove(inner, rest),
            _ => false,
        },
    }
}

/// serde's words for types in the config's words: `u32` is a whole number, a `struct` a table.
fn plain(message: &str) -> String {
    let mut text = one_line(message);
    for (rust, words) in [
        ("expected u8", "expected a whole number (0 or more)"),
        ("expected u16", "expected a whole number (0 or more)"),
        ("expected u32", "expected a whole number (0 or more)"),
        ("expected u64", "expected a whole number (0 or more)"),
        ("expected usize", "expected a whole number (0 or more)"),
        ("expected f64", "expected a number"),
        ("expected a sequence", "expected an array"),
        ("expected a map", "expected a table"),
    ] {
        if let Some(rest) = text.strip_suffix(rust) {
            text = format!("{rest}{words}");
        }
    }
    // "expected struct ProfileFile": a table.
    if let Some(at) = text.find("expected struct ") {
        text.truncate(at);
        text.push_str("expected a table");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<String> {
        match parse_config("c.toml", text) {
            Ok(_) => Vec::new(),
            Err(ConfigError::Problems { problems, .. }) => {
                problems.iter().map(ToString::to_string).collect()
            }
            Err(e) => panic!("not a list of problems: {e}"),
        }
    }

    #[test]
    fn three_typos_in_three_tables_are_three_lines_in_file_order_with_suggestions() {
        let text =
            "trials = 3\nconcurency = 2\n\n[stats]\nalpah = 0.1\n\n[sim]\ntemprature = 1.0\n";
        assert_eq!(
            problems(text),
            [
                "c.toml:2:1: unknown key `concurency` (did you mean `concurrency`?)",
                "c.toml:5:1: unknown key `alpah` in [stats] (did you mean `alpha`?)",
                "c.toml:8:1: unknown key `temprature` in [sim] (did you mean `temperature`?)",
            ]
        );
    }

    #[test]
    fn every_table_is_checked_and_named() {
        let text = concat!(
            "[budget]\nmax_request = 5\n",
            "[profile]\ntool_nameing = \"bare\"\n",
            "[nightly]\nwhole_suit = true\n",
            "[host.fast]\nprovider = \"openai\"\nmodle = \"m\"\nprofile = { pass_titel = true }\n",
            "[servers.old]\ncommand = \"x\"\nenv = { ANY_NAME = \"ok\" }\nstartup_timeout = 5\n",
            "[auth.ci]\nheader = { A = \"b\" }\n",
            "[prices.\"openai:gpt-4.1\"]\ninput = 1.0\noutput = 2.0\ninptu = 3.0\n",
            "[hosts.other]\nprovider = \"sim\"\ncolour = 1\n",
        );
        assert_eq!(
            problems(text),
            [
                "c.toml:2:1: unknown key `max_request` in [budget] (did you mean `max_requests`?)",
                "c.toml:4:1: unknown key `tool_nameing` in [profile] (did you mean `tool_naming`?)",
                "c.toml:6:1: unknown key `whole_suit` in [nightly] (did you mean `whole_suite`?)",
                "c.toml:9:1: unknown key `modle` in [host.fast] (did you mean `model`?)",
                "c.toml:10:13: unknown key `pass_titel` in [host.fast.profile] (did you mean \
                 `pass_title`?)",
                "c.toml:14:1: unknown key `startup_timeout` in [servers.old] (did you mean \
                 `startup_timeout_ms`?)",
                "c.toml:16:1: unknown key `header` in [auth.ci] (did you mean `headers`?)",
                "c.toml:20:1: unknown key `inptu` in [prices.\"openai:gpt-4.1\"] (did you mean \
                 `input`?)",
                // No key is close to `colour`: no suggestion.
                "c.toml:23:1: unknown key `colour` in [hosts.other]",
            ]
        );
    }

    #[test]
    fn a_type_error_has_its_position_and_comes_with_the_unknown_keys() {
        let text = "trials = \"ten\"\ntrails = 3\n[stats]\npass_k = 2.5\ngated = [\"calls\"]\n";
        let found = problems(text);
        assert_eq!(found.len(), 4, "{found:#?}");
        assert_eq!(
            found[0],
            "c.toml:1:10: `trials`: invalid type: string \"ten\", expected a whole number (0 or \
             more)"
        );
        assert!(
            found[1].starts_with("c.toml:2:1: unknown key `trails`"),
            "{found:#?}"
        );
        assert!(
            found[2].starts_with("c.toml:4:10: `pass_k` in [stats]: invalid type: floating point"),
            "{found:#?}"
        );
        assert!(
            found[3].starts_with("c.toml:5:")
                && found[3].contains("`gated` in [stats]: unknown variant `calls`"),
            "{found:#?}"
        );
    }

    #[test]
    fn tables_missing_a_key_and_values_of_the_wrong_form_are_named() {
        let text = "[prices.m]\ninput = 1.0\n[host.h]\nprovider = \"sim\"\nprofile = 3\n\
                    max_tokens = true\n[hosts.x]\nprovider = \"sim\"\n[host.x]\nprovider = \"sim\"\n";
        let found = problems(text);
        assert_eq!(found.len(), 4, "{found:#?}");
        assert_eq!(found[0], "c.toml:1:1: [prices.m]: missing field `output`");
        assert!(
            found[1].starts_with("c.toml:5:11: `profile` in [host.h]: invalid type: integer")
                && found[1].ends_with("expected a table"),
            "{found:#?}"
        );
        assert!(
            found[2].starts_with("c.toml:6:14: `max_tokens` in [host.h]:"),
            "{found:#?}"
        );
        assert_eq!(
            found[3],
            "c.toml:7:8: host `x` is defined both as [hosts.x] and [host.x]"
        );
    }

    #[test]
    fn syntax_errors_are_all_reported() {
        let found = problems("trials = \nseed = 1\nseed = 2\n");
        assert!(found.len() >= 2, "{found:#?}");
        assert!(found[0].starts_with("c.toml:1:"), "{found:#?}");
        assert!(
            found
                .iter()
                .any(|p| p.starts_with("c.toml:3:1: ") && p.contains("duplicate")),
            "{found:#?}"
        );
    }

    #[test]
    fn a_valid_config_still_loads() {
        for text in [super::super::DEFAULT_CONFIG, super::super::DEMO_CONFIG] {
            assert!(parse_config("embedded", text).is_ok());
        }
        let text = "trials = 3\n[stats]\nalpha = 0.1\n[host.fast]\nprovider = \"openai\"\n\
                    model = \"m\"\nprofile = { tool_naming = \"prefixed\" }\n\
                    [hosts.a]\nprovider = \"sim\"\n[prices.\"x:y\"]\ninput = 1\noutput = 2\n";
        let file = parse_config("c.toml", text).unwrap();
        assert_eq!(file.trials, Some(3));
        assert_eq!(file.hosts.as_deref(), Some(&["a".to_owned()][..]));
        assert!(file.named_hosts.contains_key("fast") && file.named_hosts.contains_key("a"));
        assert_eq!(file.prices["x:y"].output, 2.0);
    }

    #[test]
    fn positions_count_characters_and_survive_odd_offsets() {
        let text = "a = \"é\"\nb = 1";
        assert_eq!(position(text, 0), (1, 1));
        assert_eq!(position(text, text.find('b').unwrap()), (2, 1));
        // Inside the two bytes of `é`, and past the end: no panic.
        assert_eq!(position(text, 6), (1, 6));
        assert_eq!(position(text, 999), (2, 6));
    }
}
