//! The tasks' expectations checked against the servers' tool lists before the first trial: a
//! task that expects (or forbids) a tool neither server has, or an argument the tool's schema
//! does not know, can only fail on both sides and read `inconclusive`; it is refused with the
//! place it is written. So is a fixture (`setup`, `teardown`, an `after` call) on such a tool or
//! with such an argument, or without one its schema requires: mcpeval sends it as written. A
//! tool only the baseline has is a warning: the candidate removed or renamed it, and its tasks
//! will measure that.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use rmcp::model::Tool;

use super::arguments::Schema;
use crate::suite::{suggestion, Diagnostic, FixtureCall, Suite, Task, ToolName};

/// What the check found: problems that stop the run, and warnings (`file:line:col` each).
#[derive(Debug, Default)]
pub struct Found {
    pub problems: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
    /// The tools only the baseline lists that tasks expect, by warning (index into `warnings`),
    /// with the task.
    baseline_only: Vec<(usize, String, String)>,
}

impl Found {
    /// With the diff the run was given, each warning about a tool only the baseline lists names
    /// what the candidate did to it: removed, or renamed to `x`.
    pub fn naming_changes(mut self, diff: Option<&crate::contract::Diff>) -> Self {
        let Some(diff) = diff else { return self };
        for (i, tool, _) in &self.baseline_only {
            let change = diff.changes.iter().find_map(|c| {
                use crate::contract::ChangeKind;
                match c.kind {
                    _ if c.list != "tools" => None,
                    ChangeKind::ToolRemoved if &c.name == tool => {
                        Some("the diff says the candidate removed it".to_owned())
                    }
                    ChangeKind::ToolRenamed
                        if c.before.as_ref().and_then(|b| b.as_str()) == Some(tool.as_str()) =>
                    {
                        Some(format!(
                            "the diff says the candidate renamed it to `{}`: follow that with \
                             --follow-renames DIFF.json or [renames]",
                            c.name
                        ))
                    }
                    _ => None,
                }
            });
            if let (Some(change), Some(w)) = (change, self.warnings.get_mut(*i)) {
                w.message.push_str(&format!(" ({change})"));
            }
        }
        self
    }

    /// In a `--stale-list` run the candidate's trials are offered the baseline's list: a tool
    /// only the baseline lists is offered there too and called on the candidate, which is what
    /// the run measures, and no rename is to be followed.
    pub fn in_stale_window(mut self, stale: bool) -> Self {
        if !stale {
            return self;
        }
        for (i, tool, task) in &self.baseline_only {
            if let Some(w) = self.warnings.get_mut(*i) {
                w.message = format!(
                    "task `{task}` expects `{tool}`, which only the baseline lists: in the \
                     stale-list window the model is offered it and its calls reach the \
                     candidate, which the run measures"
                );
            }
        }
        self
    }
}

/// The tools both servers list, as the checks of one task read them.
struct Listed<'a> {
    baseline: &'a [Tool],
    candidate: &'a [Tool],
    base: BTreeSet<String>,
    /// The candidate's names, and the old name of each tool it renamed.
    cand: BTreeSet<String>,
    renames: &'a BTreeMap<String, String>,
}

impl Listed<'_> {
    fn has(&self, name: &str) -> bool {
        self.base.contains(name) || self.cand.contains(name)
    }

    fn all(&self) -> Vec<&str> {
        self.base.union(&self.cand).map(String::as_str).collect()
    }

    /// The schemas of the tools `names` (as the task writes them) on both sides.
    fn schema(&self, names: &[String]) -> Option<Schema> {
        let base: Vec<&str> = names.iter().map(String::as_str).collect();
        let cand: Vec<&str> = (names.iter())
            .map(|n| self.renames.get(n).unwrap_or(n).as_str())
            .collect();
        Schema::of(self.baseline, self.candidate, &base, &cand)
    }
}

/// Where one task's diagnostics point: its file, and its own line when a part has no place.
struct Place {
    file: PathBuf,
    line: usize,
}

impl Place {
    fn at(&self, place: Option<(usize, usize)>, message: String) -> Diagnostic {
        let (line, column) = place.unwrap_or((self.line, 1));
        Diagnostic {
            file: self.file.clone(),
            line,
            column,
            message,
        }
    }
}

/// Checks every task of `suite` against the tools of both servers.
/// `renames` (old → new, the candidate's) count a renamed tool as listed by the candidate under
/// its old name.
pub fn check(
    suite: &Suite,
    baseline: &[Tool],
    candidate: &[Tool],
    renames: &BTreeMap<String, String>,
) -> Found {
    let names =
        |tools: &[Tool]| -> BTreeSet<String> { tools.iter().map(|t| t.name.to_string()).collect() };
    let mut listed = Listed {
        baseline,
        candidate,
        base: names(baseline),
        cand: names(candidate),
        renames,
    };
    for (old, new) in renames {
        if listed.cand.contains(new) {
            listed.cand.insert(old.clone());
        }
    }
    let mut found = Found::default();
    for task in &suite.tasks {
        let place = Place {
            file: task_file(task),
            line: task_line(task),
        };
        call_task(task, &listed, &place, &mut found);
        fixtures(task, &listed, &place, &mut found);
        expected_tools(task, &listed, &place, &mut found);
        expected_args(task, &listed, &place, &mut found);
    }
    // In file order, as the file's own problems are.
    found
        .problems
        .sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
    found
}

/// A call task's request: calling an unknown tool, or with an unknown or missing argument, on
/// purpose is a fair test of error semantics, so each is a warning; none with `malformed: true`,
/// which says it is on purpose, and then a request with none of them is the warning.
fn call_task(task: &Task, listed: &Listed<'_>, place: &Place, found: &mut Found) {
    let Some(crate::suite::CallSpec::Tool { name, args }) = &task.call else {
        return;
    };
    let mut said = Vec::new();
    call_task_findings(task, name, args, listed, place, &mut said);
    match task.malformed {
        false => found.warnings.extend(said),
        true if said.is_empty() => {
            let message = format!(
                "task `{}` says `malformed: true`, but its call of `{name}` is well-formed: \
                 the tool is listed and its arguments are the ones the input schema names",
                task.id
            );
            found.warnings.push(place.at(task.call_at.tool, message));
        }
        true => {}
    }
}

/// The warnings of a call task's request: an unknown tool, an unknown or a missing argument.
fn call_task_findings(
    task: &Task,
    name: &str,
    args: &serde_json::Map<String, serde_json::Value>,
    listed: &Listed<'_>,
    place: &Place,
    said: &mut Vec<Diagnostic>,
) {
    let at = &task.call_at;
    if !listed.has(name) {
        let hint = suggestion(name, &listed.all());
        let message = format!(
            "task `{}` calls tool `{name}`, which neither server lists{hint}: it checks how \
             both answer an unknown tool",
            task.id
        );
        said.push(place.at(at.tool, message));
        return;
    }
    let name = name.to_owned();
    let Some(schema) = listed.schema(std::slice::from_ref(&name)) else {
        return;
    };
    let label = format!("`{name}`");
    for (arg, more) in schema.unknown(args.keys().map(String::as_str), &label) {
        let message = format!(
            "task `{}` calls `{name}` with argument `{arg}`, which its input schema does not \
             know{more}: it checks how both answer an unknown argument",
            task.id
        );
        said.push(place.at(at.args.get(arg).copied().or(at.tool), message));
    }
    let given: BTreeSet<&str> = args.keys().map(String::as_str).collect();
    for missing in schema.missing(&given) {
        let message = format!(
            "task `{}` calls `{name}` without argument `{}`, which its input schema requires: \
             it checks how both answer a missing argument",
            task.id, missing.name
        );
        said.push(place.at(at.tool, message));
    }
}

/// A fixture must reach the server and succeed: one on a tool neither lists, with an argument
/// its schema does not know, or without one it requires, can only fail.
fn fixtures(task: &Task, listed: &Listed<'_>, place: &Place, found: &mut Found) {
    let calls = (task.setup.iter().map(|c| (c, "setup")))
        .chain(task.teardown.iter().map(|c| (c, "teardown")))
        .chain(task.after.iter().map(|a| (&a.call, "an `after` check")));
    for (call, stage) in calls {
        // A fixture a defaults.yaml gives is written there.
        let place = Place {
            file: call.file.clone().unwrap_or_else(|| place.file.clone()),
            line: place.line,
        };
        let tool = &call.tool;
        if !listed.has(tool) {
            let hint = suggestion(tool, &listed.all());
            let message = format!(
                "task `{}`: {stage} calls tool `{tool}`, which neither server lists{hint}",
                task.id
            );
            found.problems.push(place.at(call.at, message));
            continue;
        }
        fixture_args(task, call, stage, listed, &place, found);
    }
}

fn fixture_args(
    task: &Task,
    call: &FixtureCall,
    stage: &str,
    listed: &Listed<'_>,
    place: &Place,
    found: &mut Found,
) {
    let Some(schema) = listed.schema(std::slice::from_ref(&call.tool)) else {
        return;
    };
    let tool = &call.tool;
    let label = format!("`{tool}`");
    for (arg, more) in schema.unknown(call.args.keys().map(String::as_str), &label) {
        let message = format!(
            "task `{}`: {stage} calls `{tool}` with argument `{arg}`, which its input schema \
             does not know{more}",
            task.id
        );
        let at = call.args_at.get(arg).copied().or(call.at);
        found.problems.push(place.at(at, message));
    }
    let given: BTreeSet<&str> = call.args.keys().map(String::as_str).collect();
    for missing in schema.missing(&given) {
        let (name, side) = (&missing.name, missing.side);
        let message = match missing.everywhere {
            true => format!(
                "task `{}`: {stage} calls `{tool}` without argument `{name}`, which its input \
                 schema requires: the call is sent as written and would fail",
                task.id
            ),
            false => format!(
                "task `{}`: {stage} calls `{tool}` without argument `{name}`, which the \
                 {side}'s input schema requires: the call will fail on the {side}",
                task.id
            ),
        };
        let diagnostic = place.at(call.at, message);
        match missing.everywhere {
            true => found.problems.push(diagnostic),
            false => found.warnings.push(diagnostic),
        }
    }
}

/// Where a part of a task is written (line, column), when known.
type Spot = Option<(usize, usize)>;

/// Expected and forbidden tools: one neither server lists is a problem; one only the baseline
/// lists a warning.
fn expected_tools(task: &Task, listed: &Listed<'_>, place: &Place, found: &mut Found) {
    let mut named: Vec<(&str, Spot, &'static str)> = Vec::new();
    let all = listed.all();
    for call in task.all_expectations().flat_map(|e| &e.calls) {
        match &call.tool {
            ToolName::Literal(name) => named.push((name, call.at, "expects")),
            // One of the names is enough (the old and the new name of a tool).
            ToolName::AnyOf { any_of } if any_of.iter().any(|n| listed.has(n)) => {}
            ToolName::AnyOf { .. } => {
                let message = format!(
                    "task `{}` expects {}, none of which either server lists",
                    task.id, call.tool
                );
                found.problems.push(place.at(call.at, message));
            }
            ToolName::Pattern { .. }
                if call
                    .tool
                    .regex()
                    .is_some_and(|re| all.iter().any(|n| re.is_match(n))) => {}
            ToolName::Pattern { .. } => {
                let message = format!(
                    "task `{}` expects {}, and no tool either server lists matches it",
                    task.id, call.tool
                );
                found.problems.push(place.at(call.at, message));
            }
        }
    }
    for expect in task.all_expectations() {
        for (i, name) in expect.forbidden_tools.iter().enumerate() {
            named.push((name, expect.forbidden_at.get(i).copied(), "forbids"));
        }
    }
    for (name, at, verb) in named {
        match (listed.base.contains(name), listed.cand.contains(name)) {
            (false, false) => {
                let hint = suggestion(name, &all);
                let message = format!(
                    "task `{}` {verb} tool `{name}`, which neither server lists{hint}",
                    task.id
                );
                found.problems.push(place.at(at, message));
            }
            (true, false) if verb == "expects" => {
                let message = format!(
                    "task `{}` expects `{name}`, which only the baseline lists: the candidate \
                     removed or renamed it, and the task measures that (a rename is followed \
                     with --follow-renames DIFF.json or [renames])",
                    task.id
                );
                let i = found.warnings.len();
                found
                    .baseline_only
                    .push((i, name.to_owned(), task.id.clone()));
                found.warnings.push(place.at(at, message));
            }
            _ => {}
        }
    }
}

/// An expected call's argument its tool's schema does not know can never be matched.
fn expected_args(task: &Task, listed: &Listed<'_>, place: &Place, found: &mut Found) {
    for call in task.all_expectations().flat_map(|e| &e.calls) {
        let Some(schema) = listed.schema(call.tool.names()) else {
            continue;
        };
        let label = match &call.tool {
            ToolName::Literal(name) => format!("`{name}`"),
            _ => "each".to_owned(),
        };
        for (arg, more) in schema.unknown(call.args.keys().map(String::as_str), &label) {
            let message = format!(
                "task `{}` expects argument `{arg}` of {}, which its input schema does not \
                 know{more}",
                task.id, call.tool
            );
            let at = call.args_at.get(arg).copied().or(call.at);
            found.problems.push(place.at(at, message));
        }
    }
}

/// The file a task was read from (its `source` is `FILE:LINE`).
fn task_file(task: &Task) -> PathBuf {
    let file = task
        .source
        .rsplit_once(':')
        .map_or(task.source.as_str(), |(file, _)| file);
    PathBuf::from(file)
}

fn task_line(task: &Task) -> usize {
    task.source
        .rsplit_once(':')
        .and_then(|(_, line)| line.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, schema: serde_json::Value) -> Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": schema})).unwrap()
    }

    fn suite(yaml: &str) -> Suite {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.yaml"), yaml).unwrap();
        crate::suite::load_suite(&[dir.path().to_path_buf()]).unwrap()
    }

    #[test]
    fn unknown_tools_and_arguments_are_problems_and_a_removed_tool_a_warning() {
        let schema = json!({"type": "object", "properties": {"id": {}, "project": {}}});
        let base = [
            tool("get_issue", schema.clone()),
            tool("old_search", json!({})),
        ];
        let cand = [tool("get_issue", schema)];
        let s = suite(
            "- id: a\n  prompt: p\n  expect:\n    calls: [{tool: get_isue}]\n\
             - id: b\n  prompt: p\n  expect:\n    calls:\n      - tool: get_issue\n        args: {idd: 3}\n\
             - id: c\n  prompt: p\n  expect:\n    calls: [{tool: old_search}]\n    forbidden_tools: [delete_all]\n\
             - id: d\n  prompt: p\n  expect:\n    calls: [{tool: get_issue, args: {id: 3}}]\n\
             - id: e\n  prompt: p\n  expect:\n    calls: [{tool: {any_of: [fetch_issue, get_issue]}}]\n\
             - id: f\n  prompt: p\n  expect:\n    calls: [{tool: {any_of: [x, y]}}, {tool: {pattern: \"z.*\"}}]\n",
        );
        let found = check(&s, &base, &cand, &Default::default());
        let problems: Vec<String> = found
            .problems
            .iter()
            .map(|d| format!("{}:{}: {}", d.line, d.column, d.message))
            .collect();
        assert_eq!(
            problems,
            [
                "4:20: task `a` expects tool `get_isue`, which neither server lists (did you mean \
                 `get_issue`?)",
                // At the argument's key, with what the schema takes (issue 37).
                "10:16: task `b` expects argument `idd` of `get_issue`, which its input schema \
                 does not know (did you mean `id`?); `get_issue` takes `id`, `project`",
                "15:23: task `c` forbids tool `delete_all`, which neither server lists",
                "27:20: task `f` expects one of `x`, `y`, none of which either server lists",
                "27:46: task `f` expects a tool matching /z.*/, and no tool either server lists \
                 matches it",
            ]
        );
        assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
        assert!(
            found.warnings[0]
                .message
                .contains("task `c` expects `old_search`, which only the baseline"),
            "{:?}",
            found.warnings
        );
    }
}

#[cfg(test)]
mod fixture_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fixture_arguments_are_checked_and_call_tasks_warned() {
        let create: Tool = serde_json::from_value(json!({"name": "create_issue", "inputSchema": {
            "type": "object", "required": ["project", "title"],
            "properties": {"project": {}, "title": {}, "priority": {}}}}))
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("t.yaml"),
            "- id: a\n  prompt: p\n  setup:\n    - tool: create_issue\n      args: {project: x, titel: y}\n  expect: {max_tool_calls: 1}\n\
             - id: b\n  kind: call\n  call: {tool: create_issue, args: {project: x, prio: high}}\n  expect: {is_error: true}\n",
        )
        .unwrap();
        let s = crate::suite::load_suite(&[dir.path().to_path_buf()]).unwrap();
        let tools = [create];
        let found = check(&s, &tools, &tools, &Default::default());
        let said = |d: &Vec<Diagnostic>| -> Vec<String> {
            d.iter()
                .map(|d| format!("{}:{}: {}", d.line, d.column, d.message))
                .collect()
        };
        let takes = "`create_issue` takes `project`, `title`, `priority`";
        assert_eq!(
            said(&found.problems),
            [
                "4:13: task `a`: setup calls `create_issue` without argument `title`, which its \
                 input schema requires: the call is sent as written and would fail"
                    .to_owned(),
                format!(
                    "5:26: task `a`: setup calls `create_issue` with argument `titel`, which its \
                     input schema does not know (did you mean `title`?); {takes}"
                ),
            ]
        );
        assert_eq!(
            said(&found.warnings),
            [
                format!(
                    "9:49: task `b` calls `create_issue` with argument `prio`, which its input \
                     schema does not know (did you mean `priority`?); {takes}: it checks how \
                     both answer an unknown argument"
                ),
                "9:16: task `b` calls `create_issue` without argument `title`, which its input \
                 schema requires: it checks how both answer a missing argument"
                    .to_owned(),
            ]
        );
    }
}

#[cfg(test)]
mod naming_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn with_a_diff_the_warning_names_the_removal_or_the_new_name() {
        let tool = |name: &str| -> Tool {
            serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}}))
                .unwrap()
        };
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("t.yaml"),
            "- id: a\n  prompt: p\n  expect: {calls: [{tool: add_comment}]}\n\
             - id: b\n  prompt: p\n  expect: {calls: [{tool: get_issue}]}\n",
        )
        .unwrap();
        let s = crate::suite::load_suite(&[dir.path().to_path_buf()]).unwrap();
        let base = [tool("add_comment"), tool("get_issue")];
        let cand = [tool("fetch_issue")];
        let side = json!({"label": "x", "snapshot": "s", "serverInfo": null});
        let diff: crate::contract::Diff = serde_json::from_value(json!({
            "baseline": side, "candidate": side, "changes": [
                {"list": "tools", "name": "add_comment", "kind": "tool_removed",
                 "breaksClients": true, "affectsModels": true},
                {"list": "tools", "name": "fetch_issue", "path": "name", "kind": "tool_renamed",
                 "before": "get_issue", "after": "fetch_issue",
                 "breaksClients": true, "affectsModels": true}]
        }))
        .unwrap();
        let plain = check(&s, &base, &cand, &Default::default());
        assert!(plain
            .warnings
            .iter()
            .all(|w| !w.message.contains("the diff says")));
        let named = check(&s, &base, &cand, &Default::default()).naming_changes(Some(&diff));
        assert!(named.warnings[0]
            .message
            .ends_with("(the diff says the candidate removed it)"));
        assert!(
            named.warnings[1]
                .message
                .contains("the diff says the candidate renamed it to `fetch_issue`"),
            "{:?}",
            named.warnings
        );
    }
}

#[cfg(test)]
mod malformed_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn malformed_true_silences_the_request_warnings_and_warns_on_a_well_formed_call() {
        let get: Tool = serde_json::from_value(json!({"name": "get_issue", "inputSchema": {
            "type": "object", "required": ["id"], "properties": {"id": {}}}}))
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("t.yaml"),
            "- id: a\n  kind: call\n  call: {tool: no_such_tool}\n  malformed: true\n  expect: {error_code: -32602}\n\
             - id: b\n  kind: call\n  call: {tool: get_issue}\n  malformed: true\n  expect: {is_error: true}\n\
             - id: c\n  kind: call\n  call: {tool: get_issue, args: {id: 1}}\n  malformed: true\n  expect: {is_error: false}\n\
             - id: d\n  kind: call\n  call: {tool: get_issue}\n  expect: {is_error: true}\n",
        )
        .unwrap();
        let suite = crate::suite::load_suite(&[dir.path().to_path_buf()]).unwrap();
        assert!(suite.tasks[0].malformed && !suite.tasks[3].malformed);
        let tools = [get];
        let found = check(&suite, &tools, &tools, &Default::default());
        let said: Vec<&str> = found.warnings.iter().map(|w| w.message.as_str()).collect();
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].starts_with(
                "task `c` says `malformed: true`, but its call of `get_issue` is well-formed"
            ),
            "{said:?}"
        );
        assert!(
            said[1].starts_with("task `d` calls `get_issue` without argument `id`"),
            "{said:?}"
        );
        // A model's task has no request of its own to be malformed.
        std::fs::write(
            dir.path().join("t.yaml"),
            "- id: m\n  prompt: p\n  malformed: true\n  expect: {no_tool: true}\n",
        )
        .unwrap();
        let loaded = crate::suite::load_suite(&[dir.path().to_path_buf()]);
        let Err(crate::suite::SuiteError::Invalid(problems)) = loaded else {
            panic!("a model's task with `malformed` is refused");
        };
        let said = |d: &Diagnostic| {
            d.message
                .contains("`malformed` belongs to `kind: call` tasks")
        };
        assert!(problems.iter().any(said), "{problems:?}");
    }
}
