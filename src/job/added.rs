//! Call tasks that use a tool only the candidate lists: they run on the candidate alone and are
//! judged on it, in `run` and in `check`'s smoke stage alike (the baseline cannot answer a tool
//! it does not have, and its failure says nothing about how it was started).

use std::collections::BTreeSet;

use crate::suite::Task;

/// How many task ids a message lists, one per line, before it gives the count of the rest.
pub const LISTED_IDS: usize = 10;

/// A call task that calls a tool the candidate lists and the baseline does not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedToolTask {
    /// Its index in the suite.
    pub index: usize,
    pub id: String,
    /// The tools it calls that only the candidate lists, in the order it calls them.
    pub tools: Vec<String>,
}

/// The call tasks of `tasks` that call (in their request or a fixture) a tool the `candidate`
/// lists and the `baseline` does not. A tool neither lists is not one: such a task checks how
/// both answer an unknown tool. Model tasks never are: a model on the baseline is offered what it
/// has.
pub fn added_tool_tasks(
    tasks: &[Task],
    baseline: &[rmcp::model::Tool],
    candidate: &[rmcp::model::Tool],
) -> Vec<AddedToolTask> {
    added_among(tasks, &names(baseline), &names(candidate))
}

/// [`added_tool_tasks`] over the tools' names.
fn added_among(
    tasks: &[Task],
    baseline: &BTreeSet<String>,
    candidate: &BTreeSet<String>,
) -> Vec<AddedToolTask> {
    let added = |tool: &&str| !baseline.contains(*tool) && candidate.contains(*tool);
    let mut out = Vec::new();
    for (index, task) in tasks.iter().enumerate() {
        if task.kind.has_model() {
            continue;
        }
        let mut tools: Vec<String> = Vec::new();
        for tool in task.tools_called().filter(added) {
            if !tools.iter().any(|t| t == tool) {
                tools.push(tool.to_owned());
            }
        }
        if !tools.is_empty() {
            out.push(AddedToolTask {
                index,
                id: task.id.clone(),
                tools,
            });
        }
    }
    out
}

/// The names of `tools`.
fn names(tools: &[rmcp::model::Tool]) -> BTreeSet<String> {
    tools.iter().map(|t| t.name.to_string()).collect()
}

/// The lines that say which call tasks run on the candidate alone: a headline, then one line
/// per task (the first [`LISTED_IDS`], then how many more), each indented by `indent`.
pub fn added_lines(tasks: &[AddedToolTask], indent: &str) -> Vec<String> {
    if tasks.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "{} call task(s) use tools added in the candidate: run and judged on the candidate \
         alone (the baseline does not list them)",
        tasks.len()
    )];
    let items: Vec<String> = (tasks.iter())
        .map(|t| format!("{} (`{}`)", t.id, t.tools.join("`, `")))
        .collect();
    lines.extend(listed(&items, indent));
    lines
}

/// `items` one per line, each after `indent`: the first [`LISTED_IDS`], then `… and N more`.
pub fn listed(items: &[String], indent: &str) -> Vec<String> {
    let mut lines: Vec<String> = (items.iter().take(LISTED_IDS))
        .map(|item| format!("{indent}{item}"))
        .collect();
    if items.len() > LISTED_IDS {
        lines.push(format!("{indent}… and {} more", items.len() - LISTED_IDS));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task as the suite holds it, from its serialized form.
    fn task(kind: &str, id: &str, call: Option<&str>, setup: &[&str]) -> Task {
        let setup: Vec<_> = setup
            .iter()
            .map(|t| serde_json::json!({"tool": t}))
            .collect();
        let mut value = serde_json::json!({
            "id": id, "prompt": "", "kind": kind, "set": "regression", "tools": [], "max_turns": 1,
            "expect": {}, "source": "t.yaml:1", "setup": setup});
        if let Some(tool) = call {
            value["call"] = serde_json::json!({"tool": {"name": tool, "args": {}}});
        }
        serde_json::from_value(value).expect("a task")
    }

    fn call_task(id: &str, tool: &str) -> Task {
        task("call", id, Some(tool), &[])
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn a_call_task_on_a_tool_only_the_candidate_lists_is_found_with_its_tools() {
        let fixture = task("call", "fixture", Some("search_issues"), &["find_issues"]);
        let tasks = vec![
            call_task("old", "search_issues"),
            call_task("new", "find_issues"),
            call_task("unknown", "no_such_tool"),
            fixture,
            task("tool", "model", None, &["find_issues"]),
        ];
        let found = added_among(
            &tasks,
            &set(&["search_issues"]),
            &set(&["search_issues", "find_issues"]),
        );
        let ids: Vec<(&str, usize)> = found.iter().map(|t| (t.id.as_str(), t.index)).collect();
        assert_eq!(ids, [("new", 1), ("fixture", 3)]);
        assert_eq!(found[1].tools, ["find_issues"]);
    }

    #[test]
    fn a_long_list_shows_ten_ids_one_per_line_and_a_count() {
        let items: Vec<String> = (0..13).map(|i| format!("task-{i}")).collect();
        let lines = listed(&items, "  - ");
        assert_eq!(lines.len(), 11);
        assert_eq!(lines[0], "  - task-0");
        assert_eq!(lines[10], "  - … and 3 more");
        assert_eq!(listed(&items[..2], "").len(), 2);
    }
}
