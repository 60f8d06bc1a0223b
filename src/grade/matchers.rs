//! Argument matchers: exact, regex and any-value matching of expected call arguments.
//!
//! Pure functions: a [`CallMatcher`] is built once per grading (regexes compiled once) and says
//! whether an observed call matches, and if not, which arguments differed and how;
//! [`assignment`] and [`subsequence`] pair expected calls with observed ones.

use crate::suite::regex_error_summary;
use std::borrow::Cow;

use regex::Regex;
use serde_json::{Number, Value};

use super::snapshot::{same_text, short_diff};
use super::ObservedCall;
use crate::suite::{ArgMatcher, ExpectedCall, ResultCheck, ToolName};

/// JSON equality in which numbers compare by value (`3` equals `3.0`), recursively.
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => numbers_equal(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn numbers_equal(x: &Number, y: &Number) -> bool {
    let int = |n: &Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (int(x), int(y)) {
        (Some(a), Some(b)) => a == b,
        _ => x.as_f64().zip(y.as_f64()).is_some_and(|(a, b)| a == b),
    }
}

/// The texts that `haystack` contains (`present`) or lacks (`!present`), ignoring case unless
/// `case_sensitive`: what the text graders (`answer_contains`, `result_not_contains`, …) report.
pub(crate) fn texts_in_case<'a>(
    texts: &'a [String],
    haystack: &str,
    present: bool,
    case_sensitive: bool,
) -> Vec<&'a String> {
    if case_sensitive {
        return texts
            .iter()
            .filter(|t| haystack.contains(t.as_str()) == present)
            .collect();
    }
    let haystack = haystack.to_lowercase();
    texts
        .iter()
        .filter(|t| haystack.contains(&t.to_lowercase()) == present)
        .collect()
}

/// " (matching case)" after a text check's explanation when it compared case.
pub(crate) fn case_note(case_sensitive: bool) -> &'static str {
    match case_sensitive {
        true => " (matching case)",
        false => "",
    }
}

/// How long a result text was, in characters, as far as its record tells: an episode keeps the
/// first characters of a long result and says how many bytes it left out (`… [N more bytes]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResultLength {
    Whole(usize),
    /// Cut in the record after this many characters (the result was longer).
    CutAfter(usize),
}

pub(crate) fn result_length(recorded: &str) -> ResultLength {
    let cut = recorded.strip_suffix(" more bytes]").and_then(|head| {
        let (kept, count) = head.rsplit_once("… [")?;
        count.parse::<u64>().ok().filter(|n| *n > 0).map(|_| kept)
    });
    match cut {
        Some(kept) => ResultLength::CutAfter(kept.chars().count()),
        None => ResultLength::Whole(recorded.chars().count()),
    }
}

/// The text a regex is matched against: a string itself, any other value as compact JSON.
pub(crate) fn regex_subject(value: &Value) -> Cow<'_, str> {
    match value {
        Value::String(s) => Cow::Borrowed(s),
        other => Cow::Owned(other.to_string()),
    }
}

/// A value for messages: compact JSON, cut to a readable length.
pub(crate) fn show_value(value: &Value) -> String {
    const MAX_CHARS: usize = 60;
    let text = value.to_string();
    if text.chars().count() <= MAX_CHARS {
        return text;
    }
    let cut: String = text.chars().take(MAX_CHARS).collect();
    format!("{cut}…")
}

/// One argument matcher, ready to use.
#[derive(Debug)]
pub(crate) enum Matcher<'a> {
    /// Equal by value (`3` equals `3.0`).
    Equals(&'a Value),
    /// The string (or JSON text) matches; `Err` holds why the pattern did not compile.
    Regex {
        pattern: &'a str,
        regex: Result<Regex, String>,
    },
    /// Present, any value.
    Any,
    /// Absent (`{any: false}`, which the loader does not accept, but a task built in code may).
    Absent,
}

impl<'a> Matcher<'a> {
    pub fn new(matcher: &'a ArgMatcher) -> Self {
        match matcher {
            ArgMatcher::Literal(value) | ArgMatcher::Exact { exact: value } => {
                Matcher::Equals(value)
            }
            ArgMatcher::Regex { regex } => Matcher::Regex {
                pattern: regex,
                regex: Regex::new(regex).map_err(|e| regex_error_summary(&e)),
            },
            ArgMatcher::Any { any: true } => Matcher::Any,
            ArgMatcher::Any { any: false } => Matcher::Absent,
        }
    }

    /// `None` when `actual` (the argument's value, if present) satisfies the matcher; otherwise
    /// what was wrong, naming the argument: "argument `status` was "closed", expected "open"".
    pub fn mismatch(&self, name: &str, actual: Option<&Value>) -> Option<String> {
        let Some(actual) = actual else {
            return match self {
                Matcher::Absent => None,
                _ => Some(format!("argument `{name}` is missing")),
            };
        };
        let shown = show_value(actual);
        match self {
            Matcher::Equals(expected) if json_equal(expected, actual) => None,
            Matcher::Equals(expected) => Some(format!(
                "argument `{name}` was {shown}, expected {}",
                show_value(expected)
            )),
            Matcher::Regex { regex: Ok(re), .. } if re.is_match(&regex_subject(actual)) => None,
            Matcher::Regex {
                pattern,
                regex: Ok(_),
            } => Some(format!(
                "argument `{name}` was {shown}, which does not match /{pattern}/"
            )),
            Matcher::Regex {
                pattern,
                regex: Err(why),
            } => Some(format!(
                "argument `{name}` cannot be checked: invalid regex /{pattern}/ ({why})"
            )),
            Matcher::Any => None,
            Matcher::Absent => Some(format!(
                "argument `{name}` was {shown}, expected no such argument"
            )),
        }
    }

    /// The expectation in words, after the argument's name: `=apollo`, ` matching /x/`.
    fn describe(&self, name: &str) -> String {
        match self {
            Matcher::Equals(Value::String(s)) if is_bare(s) => format!("{name}={s}"),
            Matcher::Equals(value) => format!("{name}={}", show_value(value)),
            Matcher::Regex { pattern, .. } => format!("{name} matching /{pattern}/"),
            Matcher::Any => format!("{name} (any value)"),
            Matcher::Absent => format!("no {name}"),
        }
    }
}

/// Whether a string reads unambiguously without quotes: `apollo`, `v1.2`, `a_b-c`.
fn is_bare(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
}

/// An expected call with its matchers built: matches observed calls and explains mismatches.
#[derive(Debug)]
pub(crate) struct CallMatcher<'a> {
    pub tool: &'a ToolName,
    /// The tool's pattern compiled once (a pattern is matched against every observed call).
    pattern: Option<Regex>,
    args: Vec<(&'a str, Matcher<'a>)>,
    result: Option<&'a ResultCheck>,
}

impl<'a> CallMatcher<'a> {
    pub fn new(call: &'a ExpectedCall) -> Self {
        let args = call
            .args
            .iter()
            .map(|(name, m)| (name.as_str(), Matcher::new(m)))
            .collect();
        CallMatcher {
            tool: &call.tool,
            pattern: call.tool.regex(),
            args,
            result: call.result.as_ref(),
        }
    }

    /// Whether a call to `tool` is a call of the expected tool.
    pub fn is_tool(&self, tool: &str) -> bool {
        match &self.pattern {
            Some(re) => re.is_match(tool),
            None => self.tool.matches(tool),
        }
    }

    /// Every way a call's result fails the expectation's `result` (empty = a match).
    pub fn result_mismatches(&self, result: &str, is_error: bool) -> Vec<String> {
        let Some(check) = self.result else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if let Some(want) = check.is_error.filter(|want| *want != is_error) {
            out.push(match want {
                true => "its result was not an error".to_owned(),
                false => "its result was an error".to_owned(),
            });
        }
        let case = case_note(check.case_sensitive);
        for text in texts_in_case(&check.contains, result, false, check.case_sensitive) {
            out.push(format!("its result does not contain \"{text}\"{case}"));
        }
        if let Some(expected) = check.equals.as_deref().filter(|e| !same_text(e, result)) {
            out.push(format!(
                "its result is not the expected text (by line, - expected, + result): {}",
                short_diff(expected, result, 2)
            ));
        }
        if let Some(max) = check.max_chars {
            match result_length(result) {
                ResultLength::Whole(n) if n as u64 > max => out.push(format!(
                    "its result has {n} characters, over the {max} allowed"
                )),
                ResultLength::CutAfter(kept) if kept as u64 >= max => out.push(format!(
                    "its result has over {kept} characters, over the {max} allowed"
                )),
                ResultLength::CutAfter(kept) => out.push(format!(
                    "its result was cut in the record after {kept} characters: it cannot be \
                     shown to be within {max}"
                )),
                _ => {}
            }
        }
        out
    }

    /// Every way the arguments of a call to this tool fail the expectation (empty = a match).
    /// Arguments that were not valid JSON (`None`) fail every argument check.
    pub fn mismatches(&self, arguments: Option<&Value>) -> Vec<String> {
        if self.args.is_empty() {
            return Vec::new();
        }
        let object = match arguments {
            None => return vec!["the arguments were not valid JSON".to_owned()],
            Some(Value::Object(object)) => Some(object),
            Some(_) => None,
        };
        let Some(object) = object else {
            return vec!["the arguments were not a JSON object".to_owned()];
        };
        self.args
            .iter()
            .filter_map(|(name, m)| m.mismatch(name, object.get(*name)))
            .collect()
    }

    pub fn matches(&self, call: &ObservedCall<'_>) -> bool {
        self.is_tool(call.tool)
            && self.mismatches(call.arguments).is_empty()
            && self
                .result_mismatches(call.result, call.is_error)
                .is_empty()
    }

    /// "`create_issue` with project=apollo, query matching /login/", and what its result must
    /// hold.
    pub fn describe(&self) -> String {
        let mut text = self.tool.to_string();
        if !self.args.is_empty() {
            let args: Vec<String> = self.args.iter().map(|(n, m)| m.describe(n)).collect();
            text = format!("{text} with {}", args.join(", "));
        }
        if let Some(check) = self.result {
            let mut wants = Vec::new();
            if let Some(is_error) = check.is_error {
                wants.push(if is_error { "an error" } else { "not an error" }.to_owned());
            }
            for t in &check.contains {
                let case = case_note(check.case_sensitive);
                wants.push(format!("containing \"{t}\"{case}"));
            }
            if let Some(expected) = &check.equals {
                wants.push(format!(
                    "exactly {}",
                    show_value(&Value::from(expected.trim_end()))
                ));
            }
            if let Some(max) = check.max_chars {
                wants.push(format!("at most {max} characters"));
            }
            text = format!("{text} whose result is {}", wants.join(", "));
        }
        text
    }
}

/// An observed call in words: `search_issues`(query="login", limit=5).
pub(crate) fn describe_call(tool: &str, arguments: Option<&Value>) -> String {
    let args = match arguments {
        None => "<invalid JSON>".to_owned(),
        Some(Value::Object(object)) => object
            .iter()
            .map(|(k, v)| format!("{k}={}", show_value(v)))
            .collect::<Vec<_>>()
            .join(", "),
        Some(other) => show_value(other),
    };
    format!("`{tool}`({args})")
}

/// For each expected call, the observed call matched to it: the earliest possible, in order.
pub(crate) fn subsequence(fits: &[Vec<bool>]) -> Vec<Option<usize>> {
    let mut next = 0;
    fits.iter()
        .map(|row| {
            let found = (next..row.len()).find(|&i| row[i]);
            if let Some(i) = found {
                next = i + 1;
            }
            found
        })
        .collect()
}

/// A maximum matching of expected calls to distinct observed calls (Kuhn's augmenting paths),
/// so that "expected `a` twice" needs two calls and a loose expectation cannot steal the only
/// call that satisfies a strict one.
pub(crate) fn assignment(fits: &[Vec<bool>], n_calls: usize) -> Vec<Option<usize>> {
    fn augment(
        e: usize,
        fits: &[Vec<bool>],
        seen: &mut [bool],
        owner: &mut [Option<usize>],
    ) -> bool {
        for call in 0..owner.len() {
            if fits[e][call] && !seen[call] {
                seen[call] = true;
                if owner[call].is_none_or(|other| augment(other, fits, seen, owner)) {
                    owner[call] = Some(e);
                    return true;
                }
            }
        }
        false
    }
    let mut owner = vec![None; n_calls];
    for e in 0..fits.len() {
        augment(e, fits, &mut vec![false; n_calls], &mut owner);
    }
    let mut assigned = vec![None; fits.len()];
    for (call, e) in owner.iter().enumerate() {
        if let Some(e) = e {
            assigned[*e] = Some(call);
        }
    }
    assigned
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call to `tool` with `arguments` and an empty, successful result.
    fn observed<'a>(tool: &'a str, arguments: Option<&'a Value>) -> ObservedCall<'a> {
        ObservedCall {
            tool,
            arguments,
            ..ObservedCall::default()
        }
    }
    use serde_json::json;

    #[test]
    fn numbers_compare_by_value() {
        assert!(json_equal(&json!(3), &json!(3.0)));
        assert!(json_equal(&json!({"a": [1, 2.0]}), &json!({"a": [1.0, 2]})));
        assert!(!json_equal(&json!(3), &json!(3.5)));
        assert!(!json_equal(&json!(3), &json!("3")));
        assert!(json_equal(&json!(u64::MAX), &json!(u64::MAX)));
        assert!(!json_equal(&json!(-1), &json!(u64::MAX)));
    }

    #[test]
    fn objects_must_have_the_same_keys() {
        assert!(json_equal(
            &json!({"a": 1, "b": 2}),
            &json!({"b": 2, "a": 1})
        ));
        assert!(!json_equal(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
    }

    #[test]
    fn regex_on_non_strings_uses_json_text() {
        assert_eq!(regex_subject(&json!("login")), "login");
        assert_eq!(regex_subject(&json!(42)), "42");
        assert_eq!(regex_subject(&json!({"a": [1]})), r#"{"a":[1]}"#);
        let m = ArgMatcher::Regex {
            regex: r"^\d+$".into(),
        };
        assert_eq!(Matcher::new(&m).mismatch("n", Some(&json!(42))), None);
    }

    #[test]
    fn literal_mismatch_names_both_values() {
        let m = ArgMatcher::Literal(json!("open"));
        let got = Matcher::new(&m).mismatch("status", Some(&json!("closed")));
        assert_eq!(
            got.as_deref(),
            Some(r#"argument `status` was "closed", expected "open""#)
        );
        assert_eq!(
            Matcher::new(&m).mismatch("status", Some(&json!("open"))),
            None
        );
    }

    #[test]
    fn missing_argument_fails_every_matcher_but_absent() {
        for m in [
            ArgMatcher::Literal(json!(1)),
            ArgMatcher::Any { any: true },
            ArgMatcher::Regex { regex: ".*".into() },
        ] {
            let got = Matcher::new(&m).mismatch("x", None);
            assert_eq!(got.as_deref(), Some("argument `x` is missing"));
        }
        let absent = ArgMatcher::Any { any: false };
        assert_eq!(Matcher::new(&absent).mismatch("x", None), None);
    }

    #[test]
    fn regex_mismatch_and_invalid_regex_explain_without_panicking() {
        let m = ArgMatcher::Regex {
            regex: "(?i)login".into(),
        };
        let got = Matcher::new(&m).mismatch("query", Some(&json!("logout")));
        assert_eq!(
            got.as_deref(),
            Some(r#"argument `query` was "logout", which does not match /(?i)login/"#)
        );
        let bad = ArgMatcher::Regex { regex: "(".into() };
        let got = Matcher::new(&bad).mismatch("q", Some(&json!("x"))).unwrap();
        assert!(got.ends_with("(unclosed group)"), "{got}");
        assert!(
            got.starts_with("argument `q` cannot be checked: invalid regex /(/"),
            "{got}"
        );
    }

    #[test]
    fn call_matcher_checks_a_subset_of_arguments() {
        let call: ExpectedCall = serde_json::from_value(json!({
            "tool": "search_issues",
            "args": {"project": "apollo", "query": {"regex": "(?i)login"}}
        }))
        .unwrap();
        let m = CallMatcher::new(&call);
        let args = json!({"project": "apollo", "query": "Login bug", "limit": 5});
        assert!(m.matches(&observed("search_issues", Some(&args))));
        assert!(!m.matches(&observed("other", Some(&args))));
        assert_eq!(
            m.mismatches(None),
            vec!["the arguments were not valid JSON".to_owned()]
        );
        assert_eq!(
            m.describe(),
            "`search_issues` with project=apollo, query matching /(?i)login/"
        );
    }

    #[test]
    fn calls_without_expected_args_match_on_the_tool_alone() {
        let call = ExpectedCall {
            tool: "get_issue".into(),
            args: Default::default(),
            result: None,
            position: None,
            at: None,
            args_at: Default::default(),
        };
        assert!(CallMatcher::new(&call).matches(&observed("get_issue", None)));
    }

    #[test]
    fn observed_calls_are_described_with_json_values() {
        let args = json!({"query": "login", "limit": 5});
        assert_eq!(
            describe_call("search_issues", Some(&args)),
            r#"`search_issues`(limit=5, query="login")"#
        );
        assert_eq!(describe_call("x", None), "`x`(<invalid JSON>)");
        let long = json!("a".repeat(100));
        assert!(show_value(&long).ends_with('…'));
    }

    #[test]
    fn assignment_finds_a_maximum_matching() {
        // Expected 0 fits calls 0 and 1, expected 1 only call 0: greedy would fail.
        let fits = vec![vec![true, true], vec![true, false]];
        assert_eq!(assignment(&fits, 2), [Some(1), Some(0)]);
        let fits = vec![vec![true], vec![true]];
        assert_eq!(assignment(&fits, 1), [Some(0), None]);
        assert_eq!(assignment(&[vec![], vec![]], 0), [None, None]);
    }

    #[test]
    fn subsequence_takes_the_earliest_call_after_the_previous_match() {
        let fits = vec![
            vec![true, false, true],
            vec![true, false, false],
            vec![false, true, true],
        ];
        assert_eq!(subsequence(&fits), [Some(0), None, Some(1)]);
    }
}
