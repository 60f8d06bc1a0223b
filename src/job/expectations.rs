//! The tasks' expectations checked against the servers' tool lists before the first trial: a
//! task that expects (or forbids) a tool neither server has, or an argument the tool's schema
//! does not know, can only fail on both sides and read `inconclusive`; it is refused with the
//! place it is written. A tool only the baseline has is a warning: the candidate removed or
//! renamed it, and its tasks will measure that.

use std::collections::BTreeSet;
use std::path::PathBuf;

use rmcp::model::Tool;

use crate::suite::{suggestion, Diagnostic, Suite, Task, ToolName};

/// What the check found: problems that stop the run, and warnings.
#[derive(Debug, Default)]
pub struct Found {
    pub problems: Vec<Diagnostic>,
    pub warnings: Vec<String>,
    /// The tools only the baseline lists that tasks expect, by warning (index into `warnings`).
    baseline_only: Vec<(usize, String)>,
}

impl Found {
    /// With the diff the run was given, each warning about a tool only the baseline lists names
    /// what the candidate did to it: removed, or renamed to `x`.
    pub fn naming_changes(mut self, diff: Option<&crate::contract::Diff>) -> Self {
        let Some(diff) = diff else { return self };
        for (i, tool) in &self.baseline_only {
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
                w.push_str(&format!(" ({change})"));
            }
        }
        self
    }
}

/// Checks every task of `suite` against the tools of both servers.
/// `renames` (old → new, the candidate's) count a renamed tool as listed by the candidate under
/// its old name.
pub fn check(
    suite: &Suite,
    baseline: &[Tool],
    candidate: &[Tool],
    renames: &std::collections::BTreeMap<String, String>,
) -> Found {
    let mut found = Found::default();
    let names =
        |tools: &[Tool]| -> BTreeSet<String> { tools.iter().map(|t| t.name.to_string()).collect() };
    let (base, mut cand) = (names(baseline), names(candidate));
    for (old, new) in renames {
        if cand.contains(new) {
            cand.insert(old.clone());
        }
    }
    let all: Vec<&str> = base.union(&cand).map(String::as_str).collect();
    for task in &suite.tasks {
        let file = task_file(task);
        let at = |(line, column): (usize, usize), message: String| Diagnostic {
            file: file.clone(),
            line,
            column,
            message,
        };
        if let Some(crate::suite::CallSpec::Tool { name, .. }) = &task.call {
            // Calling an unknown tool on purpose is a fair test of error semantics: a warning.
            if !base.contains(name) && !cand.contains(name) {
                let hint = suggestion(name, &all);
                found.warnings.push(format!(
                    "{}:{}: task `{}` calls tool `{name}`, which neither server lists{hint}: it \
                     checks how both answer an unknown tool",
                    file.display(),
                    task_line(task),
                    task.id
                ));
            }
        }
        // A fixture must reach the server: one on a tool neither lists can only fail.
        let fixtures = (task.setup.iter().map(|c| (c, "setup")))
            .chain(task.teardown.iter().map(|c| (c, "teardown")))
            .chain(task.after.iter().map(|a| (&a.call, "after")));
        for (call, stage) in fixtures {
            if !base.contains(&call.tool) && !cand.contains(&call.tool) {
                let hint = suggestion(&call.tool, &all);
                let message = format!(
                    "task `{}`: {stage} calls tool `{}`, which neither server lists{hint}",
                    task.id, call.tool
                );
                let place = call.at.unwrap_or((task_line(task), 1));
                found.problems.push(at(place, message));
            }
        }
        let mut named: Vec<(&str, (usize, usize), &'static str)> = Vec::new();
        for call in &task.expect.calls {
            let place = call.at.unwrap_or((task_line(task), 1));
            let listed = |name: &str| base.contains(name) || cand.contains(name);
            match &call.tool {
                ToolName::Literal(name) => named.push((name, place, "expects")),
                // One of the names is enough (the old and the new name of a tool).
                ToolName::AnyOf { any_of } if any_of.iter().any(|n| listed(n)) => {}
                ToolName::AnyOf { .. } => {
                    let message = format!(
                        "task `{}` expects {}, none of which either server lists",
                        task.id, call.tool
                    );
                    found.problems.push(at(place, message));
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
                    found.problems.push(at(place, message));
                }
            }
        }
        for (i, name) in task.expect.forbidden_tools.iter().enumerate() {
            let place = task.expect.forbidden_at.get(i).copied();
            named.push((name, place.unwrap_or((task_line(task), 1)), "forbids"));
        }
        for (name, place, verb) in named {
            match (base.contains(name), cand.contains(name)) {
                (false, false) => {
                    let hint = suggestion(name, &all);
                    let message = format!(
                        "task `{}` {verb} tool `{name}`, which neither server lists{hint}",
                        task.id
                    );
                    found.problems.push(at(place, message));
                }
                (true, false) if verb == "expects" => {
                    found
                        .baseline_only
                        .push((found.warnings.len(), name.to_owned()));
                    found.warnings.push(format!(
                        "{}:{}:{}: task `{}` expects `{name}`, which only the baseline lists: the \
                     candidate removed or renamed it, and the task measures that (a rename is \
                     followed with --follow-renames DIFF.json or [renames])",
                        file.display(),
                        place.0,
                        place.1,
                        task.id
                    ));
                }
                _ => {}
            }
        }
        for call in &task.expect.calls {
            let place = call.at.unwrap_or((task_line(task), 1));
            let schemas: Vec<&Tool> = baseline
                .iter()
                .chain(candidate)
                .filter(|t| call.tool.names().iter().any(|n| *n == t.name.as_ref()))
                .collect();
            let known: Option<BTreeSet<String>> = schemas.iter().map(|t| properties(t)).try_fold(
                BTreeSet::new(),
                |mut all, props| {
                    all.extend(props?);
                    Some(all)
                },
            );
            // A schema that lists no properties says nothing about which arguments it takes.
            let Some(known) = known.filter(|k| !k.is_empty() && !schemas.is_empty()) else {
                continue;
            };
            let candidates: Vec<&str> = known.iter().map(String::as_str).collect();
            for arg in call.args.keys().filter(|a| !known.contains(*a)) {
                let hint = suggestion(arg, &candidates);
                let message = format!(
                    "task `{}` expects argument `{arg}` of {}, which its input schema does not \
                     know{hint}",
                    task.id, call.tool
                );
                found.problems.push(at(place, message));
            }
        }
    }
    found
}

/// The names of a tool's `inputSchema.properties`, or `None` when it lists none.
fn properties(tool: &Tool) -> Option<Vec<String>> {
    let props = tool.input_schema.get("properties")?.as_object()?;
    Some(props.keys().cloned().collect())
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
                "9:15: task `b` expects argument `idd` of `get_issue`, which its input schema does \
                 not know (did you mean `id`?)",
                "15:23: task `c` forbids tool `delete_all`, which neither server lists",
                "27:20: task `f` expects one of `x`, `y`, none of which either server lists",
                "27:46: task `f` expects a tool matching /z.*/, and no tool either server lists \
                 matches it",
            ]
        );
        assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
        assert!(
            found.warnings[0].contains("task `c` expects `old_search`, which only the baseline"),
            "{:?}",
            found.warnings
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
        assert!(plain.warnings.iter().all(|w| !w.contains("the diff says")));
        let named = check(&s, &base, &cand, &Default::default()).naming_changes(Some(&diff));
        assert!(named.warnings[0].ends_with("(the diff says the candidate removed it)"));
        assert!(
            named.warnings[1].contains("the diff says the candidate renamed it to `fetch_issue`"),
            "{:?}",
            named.warnings
        );
    }
}
