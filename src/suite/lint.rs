//! Lint of a loaded suite: warnings about valid tasks that measure less than they seem to.
//!
//! A warning never fails `mcpeval tasks check`; each points at the expected call or forbidden
//! tool it is about (`file:line:col`).

use std::path::PathBuf;

use super::load::{Diagnostic, Suite};
use super::task::{Task, ToolName};

/// The warnings of every task of `suite`, in suite order.
pub fn lint(suite: &Suite) -> Vec<Diagnostic> {
    suite.tasks.iter().flat_map(lint_task).collect()
}

/// The warnings of one task: its prompt naming a tool it expects, an expected call whose
/// arguments are checked but not its result, and literal tool names that look like regexes.
fn lint_task(task: &Task) -> Vec<Diagnostic> {
    let (file, task_line) = split_source(&task.source);
    let at = |place: Option<(usize, usize)>, message: String| {
        let (line, column) = place.unwrap_or((task_line, 1));
        Diagnostic {
            file: file.clone(),
            line,
            column,
            message,
        }
    };
    let mut warnings = Vec::new();
    for call in task.all_expectations().flat_map(|e| &e.calls) {
        for name in call.tool.names() {
            let prompts = std::iter::once(&task.prompt).chain(task.turns.iter().map(|t| &t.prompt));
            let named = prompts.filter_map(|p| named_in(p, name)).next();
            if let Some(spelling) = named {
                let message = format!(
                    "the prompt names the expected tool `{name}` (as \"{spelling}\"): a model \
                     can pick it by its name alone, so a regression in its description goes \
                     unseen; ask as a user would, without the tool's name"
                );
                warnings.push(at(call.at, message));
            }
        }
        if !call.args.is_empty() && call.result.is_none() {
            let message = format!(
                "the expected call of {} checks its `args` but not its result: it passes on a \
                 call that returned an error (a wrong path's ENOENT, a denied access); add \
                 `result: {{is_error: false}}`, or `result: {{contains: [...]}}` for what the \
                 result must hold",
                call.tool
            );
            warnings.push(at(call.at, message));
        }
        let looks = call.tool.names().iter().find(|n| looks_like_regex(n));
        match (&call.tool, looks) {
            (ToolName::Literal(name), Some(_)) => {
                let quoted = serde_json::to_string(name).unwrap_or_default();
                let message = format!(
                    "tool name `{name}` looks like a regex, but a plain `tool` is a literal \
                     name: write `tool: {{pattern: {quoted}}}` to match names"
                );
                warnings.push(at(call.at, message));
            }
            (ToolName::AnyOf { .. }, Some(name)) => {
                let message = format!(
                    "`tool.any_of` entry `{name}` looks like a regex, but `any_of` lists literal \
                     names: list the names, or write `tool: {{pattern: …}}`"
                );
                warnings.push(at(call.at, message));
            }
            _ => {}
        }
    }
    let forbidden = task.all_expectations().flat_map(|e| {
        let at = |i: usize| e.forbidden_at.get(i).copied();
        e.forbidden_tools
            .iter()
            .enumerate()
            .map(move |(i, n)| (n, at(i)))
    });
    for (name, place) in forbidden {
        if looks_like_regex(name) {
            let message = format!(
                "`forbidden_tools` entry `{name}` looks like a regex, but entries are literal \
                 names: list the tools to forbid by name"
            );
            warnings.push(at(place, message));
        }
    }
    warnings
}

/// A warning as `tasks check` and `run` print it: `file:line:col: warning: …`, or
/// `file: warning: …` without a position (the form editors' problem matchers read).
pub fn warning_line(warning: &Diagnostic) -> String {
    let (file, message) = (warning.file.display(), &warning.message);
    match (warning.file.as_os_str().is_empty(), warning.line) {
        (true, _) => format!("warning: {message}"),
        (false, 0) => format!("{file}: warning: {message}"),
        (false, line) => format!("{file}:{line}:{}: warning: {message}", warning.column),
    }
}

/// `tasks/a.yaml:12` -> (`tasks/a.yaml`, 12); a source without a line is line 0.
fn split_source(source: &str) -> (PathBuf, usize) {
    match source.rsplit_once(':') {
        Some((file, line)) if line.parse::<usize>().is_ok() => {
            (PathBuf::from(file), line.parse().unwrap_or(0))
        }
        _ => (PathBuf::from(source), 0),
    }
}

/// Whether a name holds regex syntax (`*`, `+`, `?`, `|`, `^`, `$`, `[`, `(`, `\`).
fn looks_like_regex(name: &str) -> bool {
    name.contains(['*', '+', '?', '|', '^', '$', '[', '(', '\\'])
}

/// How `prompt` names the tool `name`, if it does: the name as a whole word, ignoring case,
/// also with its `_` or `-` read as a space, `-` or `_` ("search issues" for `search_issues`).
pub fn named_in(prompt: &str, name: &str) -> Option<String> {
    let prompt = prompt.to_lowercase();
    let name = name.to_lowercase();
    let words: Vec<&str> = name.split(['_', '-']).filter(|w| !w.is_empty()).collect();
    let mut spellings = vec![name.clone()];
    for separator in [" ", "-", "_"] {
        let spelled = words.join(separator);
        if !spellings.contains(&spelled) {
            spellings.push(spelled);
        }
    }
    spellings
        .into_iter()
        .filter(|s| !s.is_empty())
        .find(|s| contains_word(&prompt, s))
}

/// Whether `text` holds `word` with no letter, digit or `_` right before or after it.
fn contains_word(text: &str, word: &str) -> bool {
    let inside = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(start, _)| {
        let before = text[..start].chars().next_back();
        let after = text[start + word.len()..].chars().next();
        !before.is_some_and(inside) && !after.is_some_and(inside)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::load_sources;

    fn warnings(yaml: &str) -> Vec<String> {
        let suite = load_sources(&[(PathBuf::from("t.yaml"), yaml.to_owned())]).unwrap();
        lint(&suite).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_prompt_naming_its_tool_is_found_in_every_spelling() {
        assert_eq!(
            named_in("Use search_issues for login", "search_issues").as_deref(),
            Some("search_issues")
        );
        assert_eq!(
            named_in("Please Search Issues about login", "search_issues").as_deref(),
            Some("search issues")
        );
        assert_eq!(
            named_in("run the search-issues tool", "search_issues").as_deref(),
            Some("search-issues")
        );
        // Words, not parts of words; the demo suite's phrasing is not a name.
        assert_eq!(named_in("research issues", "search_issues"), None);
        assert_eq!(named_in("Search for crash issues", "search_issues"), None);
        assert_eq!(named_in("get issues", "get_issue"), None);
    }

    #[test]
    fn each_warning_points_at_its_call_or_entry() {
        let found = warnings(
            r#"
- id: named
  prompt: Search issues about login
  expect:
    calls:
      - tool: search_issues
- id: regex-names
  prompt: Find open issues about login
  expect:
    calls:
      - tool: "search_.*"
    forbidden_tools: [create_issue, "delete_.*"]
"#,
        );
        assert_eq!(found.len(), 3, "{found:#?}");
        assert!(found[0].starts_with("t.yaml:6:15: the prompt names the expected tool `search_issues` (as \"search issues\")"), "{}", found[0]);
        assert!(found[0].contains("regression in its description goes unseen"));
        assert!(
            found[1].starts_with("t.yaml:11:15: tool name `search_.*` looks like a regex"),
            "{}",
            found[1]
        );
        assert!(found[1].contains(r#"`tool: {pattern: "search_.*"}`"#));
        assert!(
            found[2].starts_with("t.yaml:12:37: `forbidden_tools` entry `delete_.*`"),
            "{}",
            found[2]
        );
    }

    #[test]
    fn the_demo_suite_has_no_warnings() {
        let sources: Vec<(PathBuf, String)> = crate::suite::DEMO_SUITE
            .iter()
            .map(|(path, text)| (PathBuf::from(path), (*text).to_owned()))
            .collect();
        let suite = load_sources(&sources).unwrap();
        assert_eq!(lint(&suite), Vec::new());
    }

    #[test]
    fn patterns_and_plain_names_are_not_regex_warnings() {
        let found = warnings(
            r#"
- id: fine
  prompt: Find open issues about login
  expect:
    calls:
      - tool: {pattern: "search_.*"}
      - tool: {any_of: [get_issue, fetch_issue]}
    forbidden_tools: [create_issue]
"#,
        );
        assert_eq!(found, Vec::<String>::new());
    }
}
