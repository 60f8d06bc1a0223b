//! One imported case: the mcpeval task keys it converts into, and what of it did not convert.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::suite::task::ToolName;

/// What a converter made of one input file: its cases, and notes about the file as a whole.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Converted {
    pub cases: Vec<Case>,
    pub notes: Vec<String>,
}

/// One expected call: a tool and the arguments it must be given (each equal to its value).
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub tool: ToolName,
    pub args: BTreeMap<String, Value>,
}

impl Call {
    pub fn new(tool: ToolName) -> Self {
        Self {
            tool,
            args: BTreeMap::new(),
        }
    }
}

/// A fixture call: a tool of the server under test and its arguments (`setup`, `teardown`, the
/// call of an `expect.after` check).
#[derive(Debug, Clone, PartialEq)]
pub struct Fixture {
    pub tool: String,
    pub args: serde_json::Map<String, Value>,
}

/// An `expect.after` check: a call made once the trial has ended, and whether its result must
/// be an error (`is_error`).
#[derive(Debug, Clone, PartialEq)]
pub struct After {
    pub call: Fixture,
    pub is_error: bool,
}

/// A test case of another tool, as far as it converts. `finish` settles it; the YAML writer
/// leaves out a case with no prompt or no check.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Case {
    /// Its name or description, for the task id and for messages.
    pub name: String,
    /// `None` when no prompt could be made (the case is left out; `not_converted` says why).
    pub prompt: Option<String>,
    /// Calls expected in any order.
    pub calls: Vec<Call>,
    /// Calls expected in this order (a sequence or call-order check); `finish` folds `calls`
    /// into it.
    pub sequence: Option<Vec<Call>>,
    /// Whether a call order was set (its calls, after `finish`, are `calls`).
    ordered: bool,
    pub forbidden_tools: Vec<String>,
    pub min_tool_calls: Option<u32>,
    pub max_tool_calls: Option<u32>,
    pub answer_contains: Vec<String>,
    pub answer_not_contains: Vec<String>,
    pub answer_regex: Option<String>,
    pub max_latency_ms: Option<u64>,
    /// Rubrics for the model judge; several are joined into one.
    pub rubrics: Vec<String>,
    /// Calls made before the model starts (`setup`) and after the trial (`teardown`).
    pub setup: Vec<Fixture>,
    pub teardown: Vec<Fixture>,
    /// Checks of the state the trial left (`expect.after`).
    pub after: Vec<After>,
    /// Resources the trial must (not) read and prompts it must (not) use: URIs, names or `*`
    /// patterns (`expect.resources_read`, …; run with `--expose`).
    pub resources_read: Vec<String>,
    pub resources_not_read: Vec<String>,
    pub prompts_used: Vec<String>,
    pub prompts_not_used: Vec<String>,
    /// What did not convert, each with why.
    pub not_converted: Vec<String>,
    /// What converted with a difference in meaning.
    pub notes: Vec<String>,
    /// A conversation's user turns (`turns:`), each a case of its own prompt and checks (none
    /// with a rubric: a judge reads the whole conversation); the case's own checks then grade
    /// the whole conversation, and its `prompt` is the first turn's. Empty: one prompt.
    pub turns: Vec<Case>,
}

impl Case {
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    pub fn not_converted(&mut self, what: impl Into<String>) {
        self.not_converted.push(what.into());
    }

    pub fn note(&mut self, what: impl Into<String>) {
        let what = what.into();
        if !self.notes.contains(&what) {
            self.notes.push(what);
        }
    }

    /// Expects a call to `tool` (once: the same tool expected twice is one expectation).
    pub fn expect(&mut self, tool: ToolName) {
        if !self.calls.iter().any(|c| c.tool == tool) {
            self.calls.push(Call::new(tool));
        }
    }

    /// Expects a call with arguments: given to an expected call of the tool that has none yet,
    /// or as a call of its own.
    pub fn expect_with_args(&mut self, tool: ToolName, args: BTreeMap<String, Value>) {
        match self
            .calls
            .iter_mut()
            .find(|c| c.tool == tool && c.args.is_empty())
        {
            Some(call) => call.args = args,
            None => self.calls.push(Call { tool, args }),
        }
    }

    /// Forbids a tool by name.
    pub fn forbid(&mut self, tool: &str) {
        if !self.forbidden_tools.iter().any(|t| t == tool) {
            self.forbidden_tools.push(tool.to_owned());
        }
    }

    /// Requires the answer to contain `text` (ignoring case).
    pub fn answer_contains(&mut self, text: &str) {
        if !text.trim().is_empty() && !self.answer_contains.iter().any(|t| t == text) {
            self.answer_contains.push(text.to_owned());
        }
    }

    /// Forbids `text` in the answer (ignoring case).
    pub fn answer_not_contains(&mut self, text: &str) {
        if !text.trim().is_empty() && !self.answer_not_contains.iter().any(|t| t == text) {
            self.answer_not_contains.push(text.to_owned());
        }
    }

    /// Sets the answer's regex; `what` names the source check in messages. A task has one
    /// `answer_regex`, and the regex must compile (the `regex` crate's syntax).
    pub fn answer_regex(&mut self, regex: String, what: &str) {
        if let Err(err) = regex::Regex::new(&regex) {
            let why = crate::suite::regex_error_summary(&err);
            self.not_converted(format!(
                "{what}: /{regex}/ is not a valid regex here ({why})"
            ));
        } else if self.answer_regex.is_some() {
            self.not_converted(format!(
                "{what}: a task has one `answer_regex`, taken by an earlier check"
            ));
        } else {
            self.answer_regex = Some(regex);
        }
    }

    /// At most `max` tool calls (the lower of two bounds).
    pub fn max_calls(&mut self, max: u32) {
        self.max_tool_calls = Some(self.max_tool_calls.map_or(max, |m| m.min(max)));
    }

    /// At least `min` tool calls (the higher of two bounds; 0 asks nothing).
    pub fn min_calls(&mut self, min: u32) {
        if min > 0 {
            self.min_tool_calls = Some(self.min_tool_calls.map_or(min, |m| m.max(min)));
        }
    }

    /// Settles the case so that its keys validate together: the unordered calls folded into
    /// the sequence (when there is one), and contradictions left out with the reason.
    pub fn finish(&mut self) {
        if let Some(mut sequence) = self.sequence.take() {
            for call in std::mem::take(&mut self.calls) {
                // "Any of" these tools, or a pattern, that a step of the order names is met.
                let met = call.args.is_empty()
                    && !matches!(call.tool, ToolName::Literal(_))
                    && sequence.iter().any(|s| match &s.tool {
                        ToolName::Literal(name) => call.tool.matches(name),
                        _ => false,
                    });
                if met {
                    continue;
                }
                let step = sequence
                    .iter_mut()
                    .find(|s| s.tool == call.tool && (s.args.is_empty() || call.args.is_empty()));
                match step {
                    Some(step) if step.args.is_empty() => step.args = call.args,
                    Some(_) => {}
                    None => self.not_converted.push(format!(
                        "expected call to {} besides the call order: mcpeval's `ordered` orders \
                         every expected call",
                        call.tool
                    )),
                }
            }
            self.calls = sequence;
        }
        let literal = |c: &Call| match &c.tool {
            ToolName::Literal(name) => Some(name.clone()),
            _ => None,
        };
        let expected: Vec<String> = self.calls.iter().filter_map(literal).collect();
        let (clash, kept): (Vec<String>, Vec<String>) = std::mem::take(&mut self.forbidden_tools)
            .into_iter()
            .partition(|t| expected.contains(t));
        self.forbidden_tools = kept;
        for tool in clash {
            self.not_converted(format!("forbidding `{tool}`, which is also expected"));
        }
        if let (Some(min), Some(max)) = (self.min_tool_calls, self.max_tool_calls) {
            if min > max {
                self.min_tool_calls = None;
                self.not_converted(format!(
                    "at least {min} tool calls: above the at most {max} also asked"
                ));
            }
        }
        let required: Vec<String> = self
            .answer_contains
            .iter()
            .map(|t| t.to_lowercase())
            .collect();
        let (clash, kept): (Vec<String>, Vec<String>) =
            std::mem::take(&mut self.answer_not_contains)
                .into_iter()
                .partition(|t| required.contains(&t.to_lowercase()));
        self.answer_not_contains = kept;
        for text in clash {
            self.not_converted(format!(
                "the answer must not contain {text:?}, which it must contain"
            ));
        }
        if self
            .max_latency_ms
            .is_some_and(|ms| ms == 0 || ms > u64::from(u32::MAX))
        {
            let ms = self.max_latency_ms.take().unwrap_or_default();
            self.not_converted(format!(
                "a latency bound of {ms} ms (mcpeval takes 1 to {})",
                u32::MAX
            ));
        }
        if self.prompt.as_ref().is_some_and(|p| p.trim().is_empty()) {
            self.prompt = None;
            self.not_converted("the prompt is empty");
        }
    }

    /// A conversation of `turns`, each already finished: what did not convert in a turn is said
    /// with its number, a turn's rubric becomes the whole conversation's (a judge reads it all),
    /// and a turn with no prompt leaves the conversation out (the later turns answer it).
    pub fn conversation(name: impl Into<String>, turns: Vec<Case>) -> Self {
        let mut case = Self::named(name);
        let mut missing = Vec::new();
        // A note every turn shares (the prompt's, say) is said once.
        let mut notes: Vec<(String, Vec<String>)> = Vec::new();
        let count = turns.len();
        for (i, mut turn) in turns.into_iter().enumerate() {
            let n = i + 1;
            if !turn.has_check() && !turn.not_converted.is_empty() {
                case.note(format!(
                    "turn {n} is sent and not graded: none of its checks converts"
                ));
            }
            for what in std::mem::take(&mut turn.not_converted) {
                case.not_converted(format!("turn {n}: {what}"));
            }
            for what in std::mem::take(&mut turn.notes) {
                match notes.iter_mut().find(|(w, _)| *w == what) {
                    Some((_, turns)) => turns.push(n.to_string()),
                    None => notes.push((what, vec![n.to_string()])),
                }
            }
            let shown = turn.prompt.as_deref().map(short).unwrap_or_default();
            for rubric in std::mem::take(&mut turn.rubrics) {
                case.rubrics.push(format!(
                    "About the answer to the user's message {n} (\"{shown}\"): {rubric}"
                ));
            }
            case.setup.append(&mut turn.setup);
            case.teardown.append(&mut turn.teardown);
            case.after.append(&mut turn.after);
            if turn.prompt.is_none() {
                missing.push(n.to_string());
            }
            case.turns.push(turn);
        }
        for (what, turns) in notes {
            match turns.len() {
                n if n == count && n > 1 => case.note(what),
                1 => case.note(format!("turn {}: {what}", turns[0])),
                _ => case.note(format!("turns {}: {what}", turns.join(", "))),
            }
        }
        if missing.is_empty() {
            case.prompt = case.turns.first().and_then(|t| t.prompt.clone());
        } else {
            case.not_converted(format!(
                "the conversation: turn {} has no prompt, and the turns after it answer it",
                missing.join(", ")
            ));
        }
        case
    }

    /// Whether any mcpeval check was made of it, or of one of its turns.
    pub fn has_check(&self) -> bool {
        self.grades_whole() || self.turns.iter().any(Case::grades_whole)
    }

    /// Whether a check of its own was made (for a conversation: of the whole of it).
    pub fn grades_whole(&self) -> bool {
        !self.calls.is_empty()
            || self.sequence.as_ref().is_some_and(|s| !s.is_empty())
            || !self.forbidden_tools.is_empty()
            || self.min_tool_calls.is_some()
            || self.max_tool_calls.is_some()
            || !self.answer_contains.is_empty()
            || !self.answer_not_contains.is_empty()
            || self.answer_regex.is_some()
            || self.max_latency_ms.is_some()
            || !self.rubrics.is_empty()
            || !self.after.is_empty()
            || !self.resources_read.is_empty()
            || !self.resources_not_read.is_empty()
            || !self.prompts_used.is_empty()
            || !self.prompts_not_used.is_empty()
    }

    /// Whether the expected calls must come in order (`ordered: true`).
    pub fn ordered(&self) -> bool {
        self.ordered && self.calls.len() > 1
    }

    /// Takes `calls` as the order they must come in (once `finish` runs).
    pub fn set_sequence(&mut self, calls: Vec<Call>, what: &str) {
        if self.sequence.is_some() || self.ordered {
            self.not_converted(format!("{what}: a second call order (a task has one)"));
            return;
        }
        self.sequence = Some(calls);
        self.ordered = true;
    }
}

/// The first 60 characters of a text, on one line, for messages.
fn short(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// A regex matched against a whole tool name for a regex another tool matches anywhere in
/// the name (Go's and JavaScript's `MatchString`/`test`): `pods_.*` becomes `.*pods_.*`.
pub fn whole_name_pattern(unanchored: &str) -> String {
    let (start, core) = match unanchored.strip_prefix('^') {
        Some(rest) => ("", rest),
        None => (".*", unanchored),
    };
    let ends = core.ends_with('$') && !core.ends_with("\\$");
    let (core, end) = if ends {
        (&core[..core.len() - 1], "")
    } else {
        (core, ".*")
    };
    let start = if core.starts_with(".*") { "" } else { start };
    let end = if core.ends_with(".*") { "" } else { end };
    if core.contains('|') && (!start.is_empty() || !end.is_empty()) {
        format!("{start}(?:{core}){end}")
    } else {
        format!("{start}{core}{end}")
    }
}

/// A regex for a glob over names (`*` any run of characters, `?` one): `search*` is
/// `search.*`.
pub fn glob_pattern(glob: &str) -> String {
    let mut out = String::new();
    for c in glob.chars() {
        match c {
            '*' => out.push_str(".*"),
            '?' => out.push('.'),
            c => out.push_str(&regex::escape(&c.to_string())),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unanchored_regexes_become_whole_name_patterns() {
        assert_eq!(whole_name_pattern("pods_.*"), ".*pods_.*");
        assert_eq!(whole_name_pattern("^pods_"), "pods_.*");
        assert_eq!(whole_name_pattern("^get_issue$"), "get_issue");
        assert_eq!(whole_name_pattern(".*"), ".*");
        assert_eq!(whole_name_pattern("get|fetch"), ".*(?:get|fetch).*");
        for (unanchored, name, hit) in [
            ("issue", "get_issue", true),
            ("^get", "forget", false),
            ("issue$", "issues", false),
            ("get|fetch", "fetch_issue", true),
        ] {
            let whole = regex::Regex::new(&format!("^(?:{})$", whole_name_pattern(unanchored)));
            assert_eq!(whole.unwrap().is_match(name), hit, "{unanchored} on {name}");
        }
    }

    #[test]
    fn globs_become_regexes() {
        assert_eq!(glob_pattern("search*"), "search.*");
        assert_eq!(glob_pattern("get_?.v1"), "get_.\\.v1");
    }

    #[test]
    fn finish_folds_calls_into_the_order_and_drops_contradictions() {
        let mut case = Case::named("c");
        case.prompt = Some("p".into());
        let mut args = BTreeMap::new();
        args.insert("project".to_owned(), Value::from("apollo"));
        case.expect_with_args("search_issues".into(), args.clone());
        case.expect("list_projects".into());
        case.set_sequence(
            vec![
                Call::new("search_issues".into()),
                Call::new("get_issue".into()),
            ],
            "sequence",
        );
        case.forbid("get_issue");
        case.min_calls(5);
        case.max_calls(3);
        case.answer_contains("Login");
        case.answer_not_contains("login");
        case.finish();
        assert_eq!(case.calls.len(), 2);
        assert_eq!(case.calls[0].args, args, "the args joined the ordered step");
        assert!(case.ordered());
        assert!(case.forbidden_tools.is_empty());
        assert_eq!((case.min_tool_calls, case.max_tool_calls), (None, Some(3)));
        assert!(case.answer_not_contains.is_empty());
        let missed = case.not_converted.join("\n");
        for what in [
            "`list_projects` besides the call order",
            "forbidding `get_issue`",
            "at least 5",
            "\"login\"",
        ] {
            assert!(missed.contains(what), "{what}: {missed}");
        }
    }

    #[test]
    fn one_answer_regex_and_only_valid_ones() {
        let mut case = Case::named("c");
        case.answer_regex("(?<=a)b".into(), "`regex`");
        assert_eq!(case.answer_regex, None);
        case.answer_regex("a+".into(), "`regex`");
        case.answer_regex("b+".into(), "`starts-with`");
        assert_eq!(case.answer_regex.as_deref(), Some("a+"));
        assert_eq!(case.not_converted.len(), 2, "{:?}", case.not_converted);
    }
}
