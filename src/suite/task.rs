//! The task model: one test of a suite, with its prompt and its success criteria.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::snapshot::SnapshotRef;

/// Whether the right behaviour is to use the server's tools or to answer without them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskKind {
    Tool,
    NoTool,
    /// No model: one request (a tool call, a resource read or a prompt) per trial, sent by
    /// mcpeval itself, and its answer checked exactly.
    Call,
}

impl TaskKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskKind::Tool => "tool",
            TaskKind::NoTool => "no-tool",
            TaskKind::Call => "call",
        }
    }

    /// Whether a model runs the task's trials (every kind but `call`).
    pub fn has_model(self) -> bool {
        self != TaskKind::Call
    }
}

/// `regression` tasks are expected to pass (near 100 %); `capability` tasks measure headroom.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSet {
    Regression,
    Capability,
}

impl TaskSet {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSet::Regression => "regression",
            TaskSet::Capability => "capability",
        }
    }
}

/// A matcher for one argument value of an expected tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ArgMatcher {
    /// `{regex: "..."}`: the value (a string, or the JSON text of any other value) matches.
    Regex { regex: String },
    /// `{any: true}`: the argument is present, with any value.
    Any { any: bool },
    /// `{exact: <json>}`: equal to this JSON value (use it for objects).
    Exact { exact: serde_json::Value },
    /// A plain value: equal to it (numbers compare by value: 3 equals 3.0).
    Literal(serde_json::Value),
}

/// Which tool an expected call names: one name, one of several (`{any_of: [a, b]}`: a tool the
/// candidate deprecates in favour of another), or a regex over names (`{pattern: "…"}`, matched
/// whole). A plain string is always a literal name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolName {
    Literal(String),
    AnyOf { any_of: Vec<String> },
    Pattern { pattern: String },
}

impl ToolName {
    /// Whether a call to `tool` is a call to this one. A pattern that does not compile (the
    /// task validator refuses those) matches nothing.
    pub fn matches(&self, tool: &str) -> bool {
        match self {
            Self::Literal(name) => name == tool,
            Self::AnyOf { any_of } => any_of.iter().any(|n| n == tool),
            Self::Pattern { .. } => self.regex().is_some_and(|re| re.is_match(tool)),
        }
    }

    /// A pattern's regex, anchored to match whole names (compile it once where many names are
    /// matched); `None` for names, or a pattern that does not compile.
    pub fn regex(&self) -> Option<regex::Regex> {
        match self {
            Self::Pattern { pattern } => regex::Regex::new(&format!("^(?:{pattern})$")).ok(),
            _ => None,
        }
    }

    /// The names it lists (none for a pattern).
    pub fn names(&self) -> &[String] {
        match self {
            Self::Literal(name) => std::slice::from_ref(name),
            Self::AnyOf { any_of } => any_of,
            Self::Pattern { .. } => &[],
        }
    }
}

impl std::fmt::Display for ToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Literal(name) => write!(f, "`{name}`"),
            Self::AnyOf { any_of } => {
                let names: Vec<String> = any_of.iter().map(|n| format!("`{n}`")).collect();
                write!(f, "one of {}", names.join(", "))
            }
            Self::Pattern { pattern } => write!(f, "a tool matching /{pattern}/"),
        }
    }
}

impl From<&str> for ToolName {
    fn from(name: &str) -> Self {
        Self::Literal(name.to_owned())
    }
}

impl From<String> for ToolName {
    fn from(name: String) -> Self {
        Self::Literal(name)
    }
}

/// `result: {contains: […], is_error: …, equals: "…", max_chars: N, case_sensitive: true}`: what
/// the call's result must hold for the call to count (`contains` ignores case unless
/// `case_sensitive`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ResultCheck {
    pub contains: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// The result's whole text, trailing whitespace aside.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub equals: Option<String>,
    /// At most this many characters of result text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<u64>,
    /// `contains` compares case.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub case_sensitive: bool,
}

/// One call the model is expected to make: the tool, a subset of its arguments, and what its
/// result must hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedCall {
    pub tool: ToolName,
    #[serde(default)]
    pub args: BTreeMap<String, ArgMatcher>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ResultCheck>,
    /// `position: 1` (or `first`): only the trial's first call may match; `-1` (or `last`) the
    /// last, `-2` the one before it; `None`: any call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<i32>,
    /// Where `tool` is written (line, column), for messages about it; not serialized.
    #[serde(skip)]
    pub at: Option<(usize, usize)>,
    /// Where each key of `args` is written (line, column); not serialized.
    #[serde(skip)]
    pub args_at: BTreeMap<String, (usize, usize)>,
}

/// The success criteria of a task. Success = every grader that is set passes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Expectations {
    /// Calls that must each be matched by a call the model made.
    pub calls: Vec<ExpectedCall>,
    /// The expected calls must be matched in this order.
    pub ordered: bool,
    /// Tools that must not be called.
    pub forbidden_tools: Vec<String>,
    /// Where each of `forbidden_tools` is written (line, column); not serialized.
    #[serde(skip)]
    pub forbidden_at: Vec<(usize, usize)>,
    /// No tool may be called at all (implied by `kind: no-tool`).
    pub no_tool: bool,
    /// Texts the final answer must contain (case-insensitive).
    pub answer_contains: Vec<String>,
    /// A regex the final answer must match.
    pub answer_regex: Option<String>,
    /// At most this many tool calls.
    pub max_tool_calls: Option<u32>,
    /// At least this many tool calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_tool_calls: Option<u32>,
    /// Texts the final answer must not contain (case-insensitive).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub answer_not_contains: Vec<String>,
    /// The trial (model turns and tool calls) must take at most this many milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_latency_ms: Option<u64>,
    /// A model-graded check: another model reads the trial and judges it against a rubric.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeSpec>,
    /// `answer_contains` and `answer_not_contains` compare case.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub case_sensitive: bool,
    /// Resources the trial must have read (the model through the host's resource tool, or
    /// attached to the prompt): each a URI, or a pattern with `*` (any characters).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources_read: Vec<String>,
    /// Resources it must not have read (URIs or patterns).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources_not_read: Vec<String>,
    /// Server prompts the trial must have started from (their `prompts/get` answered).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prompts_used: Vec<String>,
    /// Server prompts it must not have used.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prompts_not_used: Vec<String>,
}

impl Expectations {
    /// Whether any of the graders of what the host showed besides tools is set (resources read,
    /// prompts used).
    pub fn grades_exposure(&self) -> bool {
        !(self.resources_read.is_empty()
            && self.resources_not_read.is_empty()
            && self.prompts_used.is_empty()
            && self.prompts_not_used.is_empty())
    }
}

/// `prompt: {server_prompt: NAME, args: {…}}`: the task starts from a server prompt, whose
/// messages (`prompts/get`) open the conversation as a host's slash command does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerPrompt {
    pub name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub args: BTreeMap<String, String>,
}

impl ServerPrompt {
    /// How the task's prompt reads where a text is shown (`/triage_issue id=5`).
    pub fn shown(&self) -> String {
        let args: Vec<String> = self.args.iter().map(|(k, v)| format!("{k}={v}")).collect();
        match args.is_empty() {
            true => format!("/{}", self.name),
            false => format!("/{} {}", self.name, args.join(" ")),
        }
    }
}

/// `judge: {rubric, host}`: the rubric a judge model grades the trial against, and the host
/// (`sim`, `openai:MODEL`, `anthropic:MODEL` or a `[host.NAME]` of the config) that runs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeSpec {
    pub rubric: String,
    pub host: String,
}

/// The one request of a `kind: call` task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallSpec {
    /// `{tool: NAME, args: {…}}`: `tools/call`.
    Tool {
        name: String,
        args: serde_json::Map<String, serde_json::Value>,
    },
    /// `{resource: URI}`: `resources/read`.
    Resource { uri: String },
    /// `{prompt: NAME, args: {…}}`: `prompts/get` (prompt arguments are strings).
    Prompt {
        name: String,
        args: BTreeMap<String, String>,
    },
}

impl CallSpec {
    /// The request as episodes name it in `tools_called`: the tool's name, `resource:URI` or
    /// `prompt:NAME`.
    pub fn label(&self) -> String {
        match self {
            Self::Tool { name, .. } => name.clone(),
            Self::Resource { uri } => format!("resource:{uri}"),
            Self::Prompt { name, .. } => format!("prompt:{name}"),
        }
    }

    /// The arguments as JSON text (`{}` for a resource: its URI is in the label).
    pub fn arguments_json(&self) -> String {
        match self {
            Self::Tool { args, .. } => serde_json::Value::Object(args.clone()).to_string(),
            Self::Resource { uri } => serde_json::json!({ "uri": uri }).to_string(),
            Self::Prompt { args, .. } => serde_json::to_string(args).unwrap_or_default(),
        }
    }
}

/// `structured: [{path, equals}]`: a JSONPath (RFC 9535) into a call's structured content;
/// without `equals` the path must find something, with it every node it finds must equal it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StructuredCheck {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<serde_json::Value>,
}

/// What a `kind: call` task checks of its one answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CallExpectations {
    /// A result with `isError` as given (a JSON-RPC error fails either way).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// A JSON-RPC error with this code (a result fails this).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<i64>,
    /// Texts the answer (the result's text, or the error's message) must contain
    /// (case-insensitive).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub result_contains: Vec<String>,
    /// Texts it must not contain (case-insensitive).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub result_not_contains: Vec<String>,
    /// JSONPath checks of the structured content (a tool's `structuredContent`; a resource's or
    /// a prompt's whole result).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub structured: Vec<StructuredCheck>,
    /// The structured content validates against the tool's `outputSchema` on that side.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub output_schema: bool,
    /// The request must be answered within this many milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_latency_ms: Option<u64>,
    /// The answer's whole text, trailing whitespace aside.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_equals: Option<String>,
    /// The answer's whole text equals a stored snapshot (`__snapshots__/` beside the task file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_snapshot: Option<SnapshotRef>,
    /// At most this many characters of answer text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_result_chars: Option<u64>,
    /// `result_contains` and `result_not_contains` compare case.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub case_sensitive: bool,
}

impl CallExpectations {
    /// Whether any check is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A fixture: one tool call made on the trial's server before the model starts (`setup`) or
/// after the trial ends (`teardown`); it must return a result without `isError`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixtureCall {
    pub tool: String,
    #[serde(default)]
    pub args: serde_json::Map<String, serde_json::Value>,
    /// Where `tool` is written (line, column), for messages; not serialized.
    #[serde(skip)]
    pub at: Option<(usize, usize)>,
    /// Where each key of `args` is written (line, column); not serialized.
    #[serde(skip)]
    pub args_at: BTreeMap<String, (usize, usize)>,
    /// The file the call is written in (a `defaults.yaml` for an inherited fixture); not
    /// serialized.
    #[serde(skip)]
    pub file: Option<std::path::PathBuf>,
}

/// Where a call task's request is written: its tool or name, and each argument key (line,
/// column), for messages; not serialized.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallAt {
    pub tool: Option<(usize, usize)>,
    pub args: BTreeMap<String, (usize, usize)>,
}

/// `expect.after: [{call: {tool, args}, expect: {…}}]`: a call made once the trial has ended,
/// its answer checked like a call task's (the state the trial left: "the issue is now closed").
///
/// With `within_ms` the call is repeated (every `every_ms`, 250 by default) until its answer
/// passes or the deadline has passed: for state that settles asynchronously.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AfterCheck {
    pub call: FixtureCall,
    pub expect: CallExpectations,
    /// Retry until the answer passes, for at most this many milliseconds (`None`: one attempt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_ms: Option<u64>,
    /// The pause between attempts (`None`: [`AfterCheck::DEFAULT_EVERY_MS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every_ms: Option<u64>,
}

impl AfterCheck {
    /// The pause between attempts when `every_ms` is not set.
    pub const DEFAULT_EVERY_MS: u64 = 250;
}

/// One task of a suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    pub prompt: String,
    pub kind: TaskKind,
    pub set: TaskSet,
    /// The tools this task exercises (used to select tasks touched by a contract change).
    pub tools: Vec<String>,
    pub max_turns: u32,
    pub expect: Expectations,
    /// A `kind: call` task's request (`None` for the other kinds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<CallSpec>,
    /// A `kind: call` task's checks of the answer.
    #[serde(default, skip_serializing_if = "CallExpectations::is_empty")]
    pub call_expect: CallExpectations,
    /// A `kind: call` task's trials per side (1 unless `trials:` says otherwise); `None` for the
    /// other kinds, which run the run's `--trials`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials: Option<u32>,
    /// A `kind: call` task the baseline is known to fail (`expected_to_fail: true`): `mcpeval
    /// check`'s smoke stage does not fail on the baseline failing it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expected_to_fail: bool,
    /// A `kind: call` task whose request is malformed on purpose (`malformed: true`: a tool no
    /// server lists, an argument left out or unknown), to pin the server's error semantics:
    /// `tasks check --server` does not warn about it, and warns when the request is well-formed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub malformed: bool,
    /// Calls made on the trial's server before the model starts (or the call task's request).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<FixtureCall>,
    /// Calls made on the trial's server after the trial and its `after` checks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub teardown: Vec<FixtureCall>,
    /// Checks of the state the trial left, graded with the trial (`expect.after`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<AfterCheck>,
    /// Where the task was defined, for messages: `tasks/demo/search.yaml:12`.
    pub source: String,
    /// Where a call task's request is written; not serialized.
    #[serde(skip)]
    pub call_at: CallAt,
    /// A conversation's user turns (`turns:`), in order; empty for a task of one `prompt`
    /// (whose `prompt` is then its only user message). With turns, `prompt` is the first turn's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<UserTurn>,
    /// A conversation stops at its first failed turn (`stop_on_failure: true`); by default the
    /// later turns still run (the user does not know it failed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stop_on_failure: bool,
    /// A simulated user who carries the conversation on after `prompt` (`user:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<SimulatedUser>,
    /// How the server's sampling and elicitation requests are answered during a trial, and the
    /// graders of them (`sampling:`, `elicitation:`, `expect.sampled`, `expect.elicited`).
    #[serde(default, skip_serializing_if = "super::asks::TaskAsks::is_empty")]
    pub asks: super::asks::TaskAsks,
    /// Resources put into the first user message, as an app attaches them (`attach:`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attach: Vec<String>,
    /// The server prompt the task starts from (`prompt: {server_prompt: …}`); `prompt` then
    /// reads `/NAME k=v`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_prompt: Option<ServerPrompt>,
}

/// `user: {host, persona, goal, max_turns, done_when}`: a model plays the user, from the task's
/// `prompt` (its first message) on, until its goal is met.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimulatedUser {
    /// The host that plays the user (`sim`, `PROVIDER:MODEL` or a `[host.NAME]`).
    pub host: String,
    /// Who the user is and how they write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
    /// What the user wants done.
    pub goal: String,
    /// User messages at most, the first (`prompt`) included.
    pub max_turns: u32,
    /// Graders that end the conversation once they hold after a model answer (over the calls so
    /// far and that answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_when: Option<Expectations>,
}

impl SimulatedUser {
    /// User messages at most unless `max_turns` says otherwise.
    pub const DEFAULT_MAX_TURNS: u32 = 5;
}

/// One scripted user turn of a conversation (`turns: [{prompt, expect, max_turns}]`): the user's
/// message, the graders of that turn's calls and answer, and the model turns it may take.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserTurn {
    pub prompt: String,
    /// The turn's graders (`None`: the turn is not graded on its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expectations>,
    /// Model turns allowed inside this user turn (the task's `max_turns` unless set).
    pub max_turns: u32,
}

impl Task {
    /// Every set of graders the task has: the task-level `expect`, then each turn's.
    pub fn all_expectations(&self) -> impl Iterator<Item = &Expectations> {
        let done_when = self.user.iter().filter_map(|u| u.done_when.as_ref());
        std::iter::once(&self.expect)
            .chain(self.turns.iter().filter_map(|t| t.expect.as_ref()))
            .chain(done_when)
    }

    /// Whether the task needs its host to show the server's resources: it attaches some or
    /// grades what was read.
    pub fn needs_resources(&self) -> bool {
        let reads = (self.all_expectations())
            .any(|e| !e.resources_read.is_empty() || !e.resources_not_read.is_empty());
        !self.attach.is_empty() || reads
    }

    /// Whether it needs its host to show the server's prompts: it starts from one or grades
    /// their use.
    pub fn needs_prompts(&self) -> bool {
        let used = (self.all_expectations())
            .any(|e| !e.prompts_used.is_empty() || !e.prompts_not_used.is_empty());
        self.server_prompt.is_some() || used
    }

    /// Whether the task is a conversation of several user messages (`turns:`, or a simulated
    /// `user:`).
    pub fn is_conversation(&self) -> bool {
        !self.turns.is_empty() || self.user.is_some()
    }

    /// Whether the task-level `expect` sets a grader of its own (a conversation whose turns carry
    /// their `expect` may have none): the kind's `no_tool`, or any key of it.
    pub fn grades_whole(&self) -> bool {
        self.kind == TaskKind::NoTool
            || self.expect != Expectations::default()
            || !self.after.is_empty()
    }

    /// The tools this task calls itself, not through a model: every `setup`, `teardown` and
    /// `after` call, then a call task's request, in that order (a name may repeat).
    pub fn tools_called(&self) -> impl Iterator<Item = &str> {
        let request = match &self.call {
            Some(CallSpec::Tool { name, .. }) => Some(name.as_str()),
            _ => None,
        };
        let fixtures = self.setup.iter().chain(&self.teardown);
        fixtures
            .chain(self.after.iter().map(|a| &a.call))
            .map(|f| f.tool.as_str())
            .chain(request)
    }

    /// The task as the candidate side grades it when the candidate renamed tools (`old → new`):
    /// expected (literal and `any_of`), forbidden, exercised and called tool names mapped; a
    /// pattern is kept as written.
    pub fn renamed(&self, renames: &BTreeMap<String, String>) -> Task {
        let map = |name: &String| renames.get(name).unwrap_or(name).clone();
        let mut task = self.clone();
        let turns = task.turns.iter_mut().filter_map(|t| t.expect.as_mut());
        let done_when = task.user.iter_mut().filter_map(|u| u.done_when.as_mut());
        for expect in std::iter::once(&mut task.expect)
            .chain(turns)
            .chain(done_when)
        {
            for call in &mut expect.calls {
                call.tool = match &call.tool {
                    ToolName::Literal(name) => ToolName::Literal(map(name)),
                    ToolName::AnyOf { any_of } => ToolName::AnyOf {
                        any_of: any_of.iter().map(map).collect(),
                    },
                    pattern => pattern.clone(),
                };
            }
            expect.forbidden_tools = expect.forbidden_tools.iter().map(map).collect();
        }
        task.tools = task.tools.iter().map(map).collect();
        if let Some(CallSpec::Tool { name, .. }) = &mut task.call {
            *name = map(name);
        }
        let fixtures = task.setup.iter_mut().chain(task.teardown.iter_mut());
        for call in fixtures.chain(task.after.iter_mut().map(|a| &mut a.call)) {
            call.tool = map(&call.tool);
        }
        task
    }
}
