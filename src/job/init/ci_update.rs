//! `mcpeval init --update`: the tools the suite in `DIR/tasks` covers already (a task expects a
//! call of it, or a call task calls it), drafts for the others only, into new numbered files
//! (`tasks/calls-update.yaml`, then `-2`, …) beside the existing ones, which stay untouched.

use std::collections::BTreeSet;
use std::path::Path;

use super::ci::{CiError, CiFiles};
use super::draft::InitRequest;
use super::model_tasks::ModelOutcome;
use super::write::{Files, Report};
use crate::suite::{CallSpec, Suite};

/// What an update found: the tools covered already and those drafted for.
#[derive(Debug, Clone, Default)]
pub struct Update {
    /// The server's tools the suite covers, in order.
    pub covered: Vec<String>,
    /// The server's tools it does not (those drafted for now).
    pub new: Vec<String>,
    /// The suite's task ids (a new task's id must differ from all of them).
    pub ids: BTreeSet<String>,
}

/// The files of the next update of `dir`'s suite: the first of `-update`, `-update-2`, … none
/// of whose files exist. No suite in `dir/tasks`: nothing to update.
pub fn files(dir: &Path) -> Result<Files, CiError> {
    let tasks = dir.join("tasks");
    if !tasks.is_dir() {
        return Err(CiError::NoSuite { dir: tasks });
    }
    let numbered = |n: u32| {
        let tail = match n {
            1 => "-update".to_owned(),
            n => format!("-update-{n}"),
        };
        Files {
            calls: tasks.join(format!("calls{tail}.yaml")),
            models: tasks.join(format!("models{tail}.yaml")),
            rejected: dir.join(format!("rejected{tail}.yaml")),
            unverified: dir.join(format!("unverified{tail}.yaml")),
            todo: dir.join(format!("todo{tail}.yaml")),
            report: dir.join(format!("init-report{tail}.md")),
            ci: CiFiles::under(dir),
        }
    };
    let n = (1..)
        .find(|n| numbered(*n).all().iter().all(|p| !p.exists()))
        .unwrap_or(1);
    Ok(numbered(n))
}

/// The tools to draft for: `request.only_tools`, and with `--update` only those the suite does
/// not cover yet (with what it found).
pub fn scope(
    request: &InitRequest,
    files: &Files,
    tools: &[rmcp::model::Tool],
) -> Result<(Option<BTreeSet<String>>, Option<Update>), CiError> {
    if !request.update {
        return Ok((request.only_tools.clone(), None));
    }
    let names: Vec<String> = (tools.iter())
        .map(|t| t.name.to_string())
        .filter(|t| request.only_tools.as_ref().is_none_or(|o| o.contains(t)))
        .collect();
    let update = find(&files.suite(), &names)?;
    let only = update.new.iter().cloned().collect();
    Ok((Some(only), Some(update)))
}

/// The tools of `tools` in `only` (all without it), for the model tasks.
pub fn in_scope(
    tools: &[rmcp::model::Tool],
    only: Option<&BTreeSet<String>>,
) -> Vec<rmcp::model::Tool> {
    (tools.iter())
        .filter(|t| only.is_none_or(|o| o.contains(t.name.as_ref())))
        .cloned()
        .collect()
}

/// The suite in `suite_dir` against the server's `tools`: which it covers and which not.
pub fn find(suite_dir: &Path, tools: &[String]) -> Result<Update, CiError> {
    let suite = crate::suite::load_suite(&[suite_dir.to_path_buf()]).map_err(CiError::Suite)?;
    let (covered, new) = tools.iter().cloned().partition(|t| covers(&suite, t));
    Ok(Update {
        covered,
        new,
        ids: suite.tasks.iter().map(|t| t.id.clone()).collect(),
    })
}

/// Whether a task of `suite` expects a call of `tool`, or calls it.
fn covers(suite: &Suite, tool: &str) -> bool {
    suite.tasks.iter().any(|task| {
        let called = matches!(&task.call, Some(CallSpec::Tool { name, .. }) if name == tool);
        called
            || task
                .all_expectations()
                .flat_map(|e| &e.calls)
                .any(|c| c.tool.matches(tool))
    })
}

/// Whether an update has nothing to write: every tool covered, or nothing drafted for the new
/// ones (tools that write, left out).
pub fn nothing_new(update: Option<&Update>, report: &Report) -> bool {
    let Some(update) = update else {
        return false;
    };
    let kept = report.models.as_ref().is_some_and(|m| !m.kept.is_empty());
    let drafted = !report.drafted.is_empty() || !report.unverified.is_empty();
    update.new.is_empty() || (!drafted && !kept)
}

/// An update keeps only the model tasks of the new tools (the general no-tool tasks and those
/// of covered tools are in the suite already), each with an id the suite does not have.
pub fn keep_new(outcome: &mut ModelOutcome, update: &Update) {
    let new: BTreeSet<&str> = update.new.iter().map(String::as_str).collect();
    let of_new = |d: &super::models::ModelDraft| d.tool.as_deref().is_some_and(|t| new.contains(t));
    outcome.kept.retain(|(d, _)| of_new(d));
    outcome.unverified.retain(|(d, _)| of_new(d));
    let mut taken = update.ids.clone();
    for (draft, _) in &mut outcome.kept {
        let mut id = draft.id.clone();
        let mut n = 2;
        while taken.contains(&id) {
            id = format!("{}-{n}", draft.id);
            n += 1;
        }
        taken.insert(id.clone());
        draft.id = id;
    }
}

/// The report's section on the update.
pub fn report_section(update: &Update) -> String {
    let list = |tools: &[String]| match tools.is_empty() {
        true => "none".to_owned(),
        false => (tools.iter())
            .map(|t| format!("`{t}`"))
            .collect::<Vec<_>>()
            .join(", "),
    };
    format!(
        "\n## Update\n\nCovered by the suite already (left as it is): {}.\nDrafted for now: {}.\n",
        list(&update.covered),
        list(&update.new)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::init::model_tasks::Passed;
    use crate::job::init::models::{ModelDraft, Origin, Purpose};

    fn draft(id: &str, tool: Option<&str>) -> (ModelDraft, Passed) {
        let draft = ModelDraft {
            id: id.into(),
            tool: tool.map(str::to_owned),
            prompt: "p".into(),
            call: None,
            forbidden: Vec::new(),
            purpose: Purpose::Serves,
            origin: Origin::Templated,
            first_turn: None,
        };
        (draft, Passed::default())
    }

    #[test]
    fn an_update_keeps_the_model_tasks_of_new_tools_under_ids_the_suite_lacks() {
        let update = Update {
            covered: vec!["search_issues".into()],
            new: vec!["find_issues".into()],
            ids: ["find-issues-1".to_owned()].into(),
        };
        let mut outcome = ModelOutcome {
            kept: vec![
                draft("find-issues-1", Some("find_issues")),
                draft("search-issues-1", Some("search_issues")),
                draft("no-tool-weather", None),
            ],
            ..ModelOutcome::default()
        };
        keep_new(&mut outcome, &update);
        let ids: Vec<&str> = outcome.kept.iter().map(|(d, _)| d.id.as_str()).collect();
        assert_eq!(ids, ["find-issues-1-2"]);
    }

    #[test]
    fn an_expected_call_or_a_call_task_covers_a_tool_and_updates_are_numbered() {
        let dir = tempfile::tempdir().unwrap();
        let tasks = dir.path().join("tasks");
        assert!(matches!(files(dir.path()), Err(CiError::NoSuite { .. })));
        std::fs::create_dir_all(&tasks).unwrap();
        std::fs::write(
            tasks.join("a.yaml"),
            "- id: t1\n  prompt: find the login bug\n  expect:\n    calls:\n      - tool: \
             search_issues\n- id: c1\n  kind: call\n  call: {tool: get_issue, args: {id: 1}}\n  \
             expect:\n    is_error: false\n",
        )
        .unwrap();
        let tools = ["get_issue", "search_issues", "find_issues"].map(String::from);
        let found = find(&tasks, &tools).unwrap();
        assert_eq!(found.covered, ["get_issue", "search_issues"]);
        assert_eq!(found.new, ["find_issues"]);
        let first = files(dir.path()).unwrap();
        assert!(first.calls.ends_with("tasks/calls-update.yaml"));
        std::fs::write(&first.calls, "[]\n").unwrap();
        let second = files(dir.path()).unwrap();
        assert!(second.calls.ends_with("tasks/calls-update-2.yaml"));
        assert!(second.report.ends_with("init-report-update-2.md"));
    }
}
