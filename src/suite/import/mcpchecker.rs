//! mcpchecker's files as mcpeval cases: a task file (`kind: Task`, `mcpchecker/v1alpha2` or the
//! legacy `steps` form) gives its prompt and LLM-judge checks; an eval file (`kind: Eval`) gives
//! each task of its `taskSets` with the set's tool assertions.
//!
//! The formats: mcpchecker's docs/reference/task-format.md and docs/how-to/use-assertions.md
//! (github.com/mcpchecker/mcpchecker).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::case::{whole_name_pattern, Call, Case};
use super::mcpchecker_files::{read_task, set_files};
use super::mcpchecker_steps::{placeholders, steps, Phase, Requires};
use super::source::{join, BadInput, Sources};
use super::Converted;
use crate::suite::task::ToolName;

/// Converts an mcpchecker task or eval file (`root`, named `file` in messages); the files it
/// names are read through `sources`.
pub fn convert(root: &Value, file: &Path, sources: &dyn Sources) -> Result<Converted, BadInput> {
    let Some(object) = root.as_object() else {
        return Err(BadInput::new(
            "not an mcpchecker file: expected a mapping with `kind: Task` or `kind: Eval`",
        ));
    };
    match object.get("kind").and_then(Value::as_str) {
        Some("Task") => {
            let stem = stem(file);
            let case = task(object, &stem, Path::new(""), sources, &[]);
            Ok(Converted {
                cases: vec![case],
                notes: vec![
                    "mcpchecker keeps its tool assertions in the eval file (`kind: Eval`, \
                     `taskSets[].assertions`): import the eval file to convert them too"
                        .to_owned(),
                ],
            })
        }
        Some("Eval") => eval(object, sources),
        Some(other) => Err(BadInput::new(format!(
            "not an mcpchecker task or eval: `kind: {other}` (expected `Task` or `Eval`)"
        ))),
        None if object.contains_key("tests") || object.contains_key("prompts") => Err(
            BadInput::new("not an mcpchecker file (no `kind`); it looks like a promptfoo config: use --from promptfoo"),
        ),
        None => Err(BadInput::new(
            "not an mcpchecker file: no `kind: Task` or `kind: Eval`",
        )),
    }
}

/// An eval: the tasks of each task set, with the set's assertions.
fn eval(object: &Map<String, Value>, sources: &dyn Sources) -> Result<Converted, BadInput> {
    let config = object.get("config").and_then(Value::as_object);
    let Some(sets) = config
        .and_then(|c| c.get("taskSets"))
        .and_then(Value::as_array)
    else {
        return Err(BadInput::new(
            "an mcpchecker eval without `config.taskSets`: nothing to import",
        ));
    };
    let mut converted = Converted::default();
    if let Some(file) = config
        .and_then(|c| c.get("mcpConfigFile"))
        .and_then(Value::as_str)
    {
        converted.notes.push(format!(
            "the servers are in `{file}`: give them to `mcpeval run` as --baseline and --candidate"
        ));
    }
    if config.is_some_and(|c| c.contains_key("llmJudge")) {
        converted.notes.push(
            "`config.llmJudge` is not carried over: the judge is each task's `judge.host` \
             (--judge-host)"
                .to_owned(),
        );
    }
    let mut found: Vec<Found> = Vec::new();
    let mut skipped: Vec<PathBuf> = Vec::new();
    for (i, set) in sets.iter().enumerate() {
        let place = format!("taskSets[{i}]");
        let Some(set) = set.as_object() else {
            converted
                .notes
                .push(format!("{place} is not a mapping: not converted"));
            continue;
        };
        let Some(files) = set_files(set, &place, sources, &mut converted.notes)? else {
            continue;
        };
        let labels = set.get("labelSelector").and_then(Value::as_object);
        let by = if set.contains_key("path") {
            "path"
        } else {
            "glob"
        };
        for path in files {
            if skipped.contains(&path) {
                continue;
            }
            let Some(task_object) = read_task(&path, &place, by, sources, &mut converted.notes)?
            else {
                skipped.push(path);
                continue;
            };
            if !selected(&task_object, labels) {
                continue;
            }
            // A task several sets select is one task with each set's assertions (mcpchecker
            // runs it once and checks each set's assertions).
            let assertions = set.get("assertions").cloned();
            match found.iter_mut().find(|f| f.path == path) {
                Some(known) => known.assertions.extend(assertions),
                None => found.push(Found {
                    path,
                    task: task_object,
                    assertions: assertions.into_iter().collect(),
                }),
            }
        }
    }
    for f in found {
        let dir = f.path.parent().unwrap_or(Path::new("")).to_path_buf();
        let case = task(&f.task, &stem(&f.path), &dir, sources, &f.assertions);
        converted.cases.push(case);
    }
    Ok(converted)
}

/// A task file the task sets select, with the assertions of each set that selects it.
struct Found {
    path: PathBuf,
    task: Map<String, Value>,
    assertions: Vec<Value>,
}

/// Whether a task's `metadata.labels` carry every label of the set's `labelSelector`.
fn selected(task: &Map<String, Value>, selector: Option<&Map<String, Value>>) -> bool {
    let labels = task
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object);
    selector.is_none_or(|selector| {
        selector
            .iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
    })
}

/// One task: its prompt and judge checks, and the assertions of its task set. `dir` is the
/// task file's directory (relative to the input), where its prompt file is.
fn task(
    object: &Map<String, Value>,
    fallback_name: &str,
    dir: &Path,
    sources: &dyn Sources,
    assertions: &[Value],
) -> Case {
    let name = object
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or(fallback_name);
    let mut case = Case::named(name);
    // v1alpha2 keeps the task under `spec`; the legacy form under `steps`.
    let (body, legacy) = match (object.get("spec"), object.get("steps")) {
        (Some(spec), _) => (spec.as_object(), false),
        (None, Some(steps)) => (steps.as_object(), true),
        (None, None) => (None, false),
    };
    let Some(body) = body else {
        case.not_converted("no `spec` (or legacy `steps`) with a prompt");
        return case;
    };
    case.prompt = prompt(body.get("prompt"), dir, sources, &mut case);
    let named = case.prompt.as_deref().map(placeholders).unwrap_or_default();
    if !named.is_empty() {
        case.prompt = None;
        case.not_converted(format!(
            "the prompt names {}, filled by mcpchecker at run time from a step's output              (mcpeval sends the prompt as written)",
            named.join(", ")
        ));
    }
    let requires = Requires::of(body);
    if legacy {
        for phase in ["setup", "cleanup"] {
            if body.get(phase).is_some_and(|v| !is_empty_step(v)) {
                let target = if phase == "setup" {
                    "setup"
                } else {
                    "teardown"
                };
                case.not_converted(format!(
                    "the `{phase}` script (mcpeval's `{target}` makes MCP tool calls on the \
                     trial's server only)"
                ));
            }
        }
    } else {
        steps(Phase::Setup, body.get("setup"), &requires, &mut case, judge);
        steps(
            Phase::Cleanup,
            body.get("cleanup"),
            &requires,
            &mut case,
            judge,
        );
    }
    if let Some(limits) = body.get("limits") {
        case.not_converted(format!(
            "`limits` {limits} (mcpeval bounds turns with `max_turns` and each request with \
             the host's `timeout_s`)"
        ));
    }
    match (body.get("verify"), legacy) {
        (Some(verify @ Value::Object(_)), true) => legacy_verify(verify, &mut case),
        (verify, false) => steps(Phase::Verify, verify, &requires, &mut case, judge),
        (Some(Value::Null) | None, true) => {}
        (Some(other), true) => {
            case.not_converted(format!("`verify` {other}: not a script or judge"))
        }
    }
    for set in assertions {
        assertions_of(set, &mut case);
    }
    case.finish();
    case
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "task".to_owned())
}

/// `prompt: {inline: …}` or `{file: …}` (read next to the task file).
fn prompt(
    value: Option<&Value>,
    dir: &Path,
    sources: &dyn Sources,
    case: &mut Case,
) -> Option<String> {
    if let Some(Value::Array(_)) = value {
        // mcpchecker has no conversation: its `prompt` is one step (docs/how-to/write-tasks.md).
        case.not_converted(
            "`prompt` is a list: an mcpchecker task has one prompt (`inline` or `file`, not a \
             list of messages), so mcpchecker refuses it too; write the conversation as mcpeval \
             `turns:`",
        );
        return None;
    }
    let value = value.and_then(Value::as_object);
    if let Some(text) = value.and_then(|p| p.get("inline")).and_then(Value::as_str) {
        return Some(text.to_owned());
    }
    if let Some(file) = value.and_then(|p| p.get("file")).and_then(Value::as_str) {
        let path = join(dir, file);
        return match sources.read(&path) {
            Ok(text) => Some(text.trim_end().to_owned()),
            Err(e) => {
                case.not_converted(format!("the prompt file `{}`: {e}", path.display()));
                None
            }
        };
    }
    case.not_converted("no `prompt` with `inline` or `file`");
    None
}

/// Whether a legacy `setup`/`cleanup` names no script (`setup:` left empty).
fn is_empty_step(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(o) => o.values().all(|v| v.is_null() || v == ""),
        _ => false,
    }
}

/// The legacy `verify`: a script (`file`/`inline`) or an LLM judge (`contains`/`exact`).
fn legacy_verify(verify: &Value, case: &mut Case) {
    if verify.get("contains").is_some() || verify.get("exact").is_some() {
        judge(verify, case);
    } else {
        case.not_converted(
            "the verify script (a shell script; mcpeval's `expect.after` makes MCP tool calls on \
             the trial's server only)",
        );
    }
}

/// `llmJudge: {contains: …}` or `{exact: …}` as a judge rubric.
fn judge(body: &Value, case: &mut Case) {
    let text = |key| body.get(key).and_then(Value::as_str);
    let named = placeholders(&body.to_string());
    if !named.is_empty() {
        case.not_converted(format!(
            "`llmJudge`: it names {}, filled by mcpchecker at run time from a step's output; \
             left out of the rubric (a judge reads its rubric as written)",
            named.join(", ")
        ));
        return;
    }
    match (text("contains"), text("exact")) {
        (Some(expected), None) => case.rubrics.push(format!(
            "The final answer contains this information, in any wording: {expected}"
        )),
        (None, Some(expected)) => case.rubrics.push(format!(
            "The final answer means the same as this, in any wording: {expected}"
        )),
        _ => case.not_converted(format!(
            "`llmJudge` {body}: expected one of `contains` or `exact`"
        )),
    }
}

/// A task set's `assertions`.
fn assertions_of(assertions: &Value, case: &mut Case) {
    let Some(assertions) = assertions.as_object() else {
        case.not_converted(format!("`assertions` {assertions}: not a mapping"));
        return;
    };
    // Names before "any of" (a name already expected satisfies it), whatever the file's order.
    const FIRST: &[&str] = &["toolsUsed", "requireAny", "toolsNotUsed", "callOrder"];
    let mut keys: Vec<&String> = assertions.keys().collect();
    keys.sort_by_key(|k| FIRST.iter().position(|f| f == k).unwrap_or(FIRST.len()));
    for key in keys {
        let value = &assertions[key];
        match key.as_str() {
            "toolsUsed" => {
                for item in items(value) {
                    if let Some(tool) = tool_of(item, "toolsUsed", case) {
                        case.expect(tool);
                    }
                }
            }
            "requireAny" => require_any(value, case),
            "toolsNotUsed" => {
                for item in items(value) {
                    match (
                        item.get("tool").and_then(Value::as_str),
                        item.get("toolPattern"),
                    ) {
                        (Some(tool), _) => case.forbid(tool),
                        (None, Some(pattern)) => case.not_converted(format!(
                            "`toolsNotUsed` pattern {pattern} (`forbidden_tools` lists names)"
                        )),
                        _ => case.not_converted(format!(
                            "`toolsNotUsed` entry {}",
                            Value::Object(item.clone())
                        )),
                    }
                }
            }
            "minToolCalls" | "maxToolCalls" => {
                match value.as_u64().and_then(|n| u32::try_from(n).ok()) {
                    Some(n) if key == "minToolCalls" => case.min_calls(n),
                    Some(n) => case.max_calls(n),
                    None => case.not_converted(format!("`{key}: {value}`: not a count")),
                }
            }
            "callOrder" => call_order(value, case),
            "resourcesRead" | "resourcesNotRead" | "promptsUsed" | "promptsNotUsed" => {
                exposure_assertion(key, value, case)
            }
            "skillsLoaded" | "skillsNotLoaded" => {
                case.not_converted(format!("`{key}` (mcpeval does not see an agent's skills)"))
            }
            "noDuplicateCalls" if value == &Value::Bool(false) => {}
            "noDuplicateCalls" => case.not_converted(
                "`noDuplicateCalls` (no mcpeval check; repeated calls show in the `tool_calls` \
                 metric)",
            ),
            other => case.not_converted(format!("assertion `{other}` (unknown to the importer)")),
        }
    }
}

/// `resourcesRead` / `resourcesNotRead` (`{uri}` or `{uriPattern}`) and `promptsUsed` /
/// `promptsNotUsed` (`{prompt}` or `{promptPattern}`; neither: any): mcpeval's
/// `resources_read` … graders, whose patterns are `*` globs. An unanchored regex made of
/// literal text and `.*` converts (`*` around it, as mcpchecker matches anywhere); others are
/// not converted.
fn exposure_assertion(key: &str, value: &Value, case: &mut Case) {
    let (name_key, pattern_key) = match key {
        "resourcesRead" | "resourcesNotRead" => ("uri", "uriPattern"),
        _ => ("prompt", "promptPattern"),
    };
    let mut converted = Vec::new();
    for item in items(value) {
        let named = item.get(name_key).and_then(Value::as_str);
        let pattern = item.get(pattern_key).and_then(Value::as_str);
        match (named, pattern) {
            (Some(name), _) => converted.push(name.to_owned()),
            (None, Some(pattern)) => match glob_of(pattern) {
                Some(glob) => {
                    case.note(format!(
                        "`{key}` pattern /{pattern}/ (a regex matched anywhere) is the glob `{glob}`"
                    ));
                    converted.push(glob);
                }
                None => case.not_converted(format!(
                    "`{key}` pattern /{pattern}/ (mcpeval's patterns are globs with `*`)"
                )),
            },
            (None, None) => converted.push("*".to_owned()),
        }
    }
    let list = match key {
        "resourcesRead" => &mut case.resources_read,
        "resourcesNotRead" => &mut case.resources_not_read,
        "promptsUsed" => &mut case.prompts_used,
        _ => &mut case.prompts_not_used,
    };
    list.extend(converted);
    if !list.is_empty() {
        case.note(format!(
            "`{key}` is graded when the run shows resources or prompts (`--expose \
             tools,resources,prompts`)"
        ));
    }
}

/// An unanchored regex of literal text, escaped characters (`\.`) and `.*` as a glob (`*` for `.*`,
/// `*` at an end that is not anchored); `None` for any other regex.
fn glob_of(pattern: &str) -> Option<String> {
    let (start, body) = match pattern.strip_prefix('^') {
        Some(rest) => (String::new(), rest),
        None => ("*".to_owned(), pattern),
    };
    let (body, end) = match body.strip_suffix('$') {
        Some(rest) => (rest, ""),
        None => (body, "*"),
    };
    let mut glob = start;
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '.' if chars.peek() == Some(&'*') => {
                chars.next();
                glob.push('*');
            }
            '\\' => glob.push(chars.next().filter(|e| !e.is_alphanumeric())?),
            c if "[](){}|+?^$.*".contains(c) => return None,
            c => glob.push(c),
        }
    }
    glob.push_str(end);
    while glob.contains("**") {
        glob = glob.replace("**", "*");
    }
    Some(glob)
}

/// The entries of an assertion's list (a single mapping counts as one).
fn items(value: &Value) -> Vec<&Map<String, Value>> {
    match value {
        Value::Array(items) => items.iter().filter_map(Value::as_object).collect(),
        Value::Object(one) => vec![one],
        _ => Vec::new(),
    }
}

/// `{tool: name}` or `{toolPattern: regex}` (unanchored in mcpchecker: matched anywhere).
fn tool_of(item: &Map<String, Value>, key: &str, case: &mut Case) -> Option<ToolName> {
    if let Some(tool) = item.get("tool").and_then(Value::as_str) {
        return Some(ToolName::Literal(tool.to_owned()));
    }
    if let Some(pattern) = item.get("toolPattern").and_then(Value::as_str) {
        let whole = whole_name_pattern(pattern);
        if regex::Regex::new(&whole).is_err() {
            case.not_converted(format!(
                "`{key}` pattern /{pattern}/: not a valid regex here"
            ));
            return None;
        }
        if whole != pattern {
            case.note(format!(
                "`{key}` pattern /{pattern}/ matches anywhere in a name; as mcpeval matches \
                 whole names it is /{whole}/"
            ));
        }
        return Some(ToolName::Pattern { pattern: whole });
    }
    case.not_converted(format!("`{key}` entry {}", Value::Object(item.clone())));
    None
}

/// `requireAny`: one call to any of the tools: `any_of` for names, one pattern when some are
/// patterns.
fn require_any(value: &Value, case: &mut Case) {
    let tools: Vec<ToolName> = items(value)
        .into_iter()
        .filter_map(|item| tool_of(item, "requireAny", case))
        .collect();
    let mut names = Vec::new();
    let mut patterns = Vec::new();
    for tool in tools {
        match tool {
            ToolName::Literal(name) => names.push(name),
            ToolName::Pattern { pattern } => patterns.push(pattern),
            ToolName::AnyOf { any_of } => names.extend(any_of),
        }
    }
    let tool = match (names.len(), patterns.len()) {
        (0, 0) => return,
        (1, 0) => ToolName::Literal(names.remove(0)),
        (_, 0) => ToolName::AnyOf { any_of: names },
        _ => {
            let mut all: Vec<String> = names.iter().map(|n| regex::escape(n)).collect();
            all.extend(patterns.iter().map(|p| format!("(?:{p})")));
            ToolName::Pattern {
                pattern: all.join("|"),
            }
        }
    };
    // A tool already expected on its own satisfies "any of" with it.
    let covered = case.calls.iter().any(|c| match (&c.tool, &tool) {
        (ToolName::Literal(name), other) => other.names().contains(name),
        _ => false,
    });
    if !covered {
        case.expect(tool);
    }
}

/// `callOrder`: the tools in order (other calls may come between, as with `ordered: true`).
fn call_order(value: &Value, case: &mut Case) {
    let mut steps = Vec::new();
    for item in items(value) {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("tool");
        match (kind, item.get("name").and_then(Value::as_str)) {
            ("tool", Some(name)) => steps.push(Call::new(name.into())),
            (kind, name) => {
                let name = name.unwrap_or("?");
                case.not_converted(format!(
                    "`callOrder` step {kind} `{name}` (the order holds only tool calls)"
                ));
                return;
            }
        }
    }
    if !steps.is_empty() {
        case.set_sequence(steps, "`callOrder`");
    }
}
