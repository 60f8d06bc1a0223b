//! The trigger: from a diff's changes to the tasks worth running, each with why it was picked.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::model::{Change, ChangeKind, Diff};
use crate::config::Exposed;
use crate::suite::{Task, TaskKind, TaskSet, ToolName};

/// What to run and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Selection {
    /// The changes that affect models (those that can trigger a run).
    pub triggering: Vec<Change>,
    /// Task id → why it was picked, in suite order.
    pub tasks: Vec<(String, Vec<String>)>,
}

impl Selection {
    /// Nothing to run: no change affects models.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// One line per group of triggering changes (those of one kind that differ only in a
    /// number or an id are one line, `3 × kind`), for the summary and the console.
    pub fn describe_changes(&self) -> Vec<String> {
        super::group::group(&self.triggering)
            .iter()
            .map(|g| {
                let at = g
                    .path
                    .as_deref()
                    .map(|p| format!(" at `{p}`"))
                    .unwrap_or_default();
                let breaks = if g.breaks_clients {
                    " (breaks clients)"
                } else {
                    ""
                };
                let kind = kind_name(g.kind);
                format!("{} `{}`{at}: {}{kind}{breaks}", g.list, g.name, g.times())
            })
            .collect()
    }
}

/// A triggering change of a text (a description, a title, the instructions: a string on both
/// sides) with both sides whole, for the reports' word diffs (run.json's `trigger_texts`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangedText {
    /// The line of [`Selection::describe_changes`] (its index) the change is one of.
    pub line: usize,
    /// The change's own name, to tell the members of a grouped line apart.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Absent where the text was added (a first title).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// Absent where the text was removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

impl ChangedText {
    /// Which member of its line it is (`` `tool_2` at `description` ``), for a line that groups
    /// several changes.
    pub fn member(&self) -> String {
        match &self.path {
            Some(path) => format!("`{}` at `{path}`", self.name),
            None => format!("`{}`", self.name),
        }
    }

    /// The change on one line: both sides when short, else the words that differ with a
    /// little context ([`super::words::changed_text`]).
    pub fn words(&self) -> String {
        super::words::sides(self.before.as_deref(), self.after.as_deref())
    }
}

impl Selection {
    /// The triggering changes of a text, each with the line of [`Self::describe_changes`] it
    /// is one of.
    pub fn changed_texts(&self) -> Vec<ChangedText> {
        let mut out = Vec::new();
        for (line, g) in super::group::group(&self.triggering).iter().enumerate() {
            for c in &g.changes {
                if let Some((before, after)) = super::words::texts(c) {
                    out.push(ChangedText {
                        line,
                        name: c.name.clone(),
                        path: c.path.clone(),
                        before: before.map(str::to_owned),
                        after: after.map(str::to_owned),
                    });
                }
            }
        }
        out
    }
}

/// The kind and the number of changes of a line of [`Selection::describe_changes`]
/// (`tools `x` at `description`: description_changed` → (`description_changed`, 1)).
pub fn line_kind(line: &str) -> Option<(&str, usize)> {
    let (_, tail) = line.rsplit_once("`: ")?;
    let (n, rest) = match tail.split_once(" × ") {
        Some((n, rest)) => (n.parse().ok()?, rest),
        None => (1, tail),
    };
    let kind = rest.split(' ').next()?;
    (!kind.is_empty()).then_some((kind, n))
}

fn kind_name(kind: ChangeKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Picks the tasks a diff calls for. Only changes with `affectsModels` count; with none, the
/// selection is empty. Then: the tasks whose `tools`, expected calls or forbidden tools name a
/// changed, renamed or removed tool; every task when the `instructions` changed or a tool was
/// added (a new tool can draw calls from any task); every no-tool task; the whole regression set.
///
/// Where a host shows resources or prompts (`exposed`), a change of a resource, template or
/// prompt triggers too, and picks the tasks that read, attach or start from it.
pub fn select(diff: &Diff, tasks: &[Task], exposed: &[Exposed]) -> Selection {
    let shown = |c: &Change| match c.list.as_str() {
        "resources" | "resourceTemplates" => exposed.contains(&Exposed::Resources),
        "prompts" => exposed.contains(&Exposed::Prompts),
        _ => false,
    };
    let triggering: Vec<Change> = diff
        .changes
        .iter()
        .filter(|c| c.affects_models || shown(c))
        .cloned()
        .collect();
    if triggering.is_empty() {
        return Selection {
            triggering,
            tasks: Vec::new(),
        };
    }
    let mut touched: BTreeSet<String> = BTreeSet::new();
    let mut everything: Vec<String> = Vec::new();
    for c in &triggering {
        match (c.list.as_str(), c.kind) {
            ("tools", ChangeKind::ToolAdded) => {
                everything.push(format!("tool `{}` was added", c.name));
            }
            ("server", ChangeKind::InstructionsChanged) => {
                everything.push("the server instructions changed".into());
            }
            ("tools", ChangeKind::ToolRenamed) => {
                touched.insert(c.name.clone());
                for v in [&c.before, &c.after].into_iter().flatten() {
                    if let Some(name) = v.as_str() {
                        touched.insert(name.to_owned());
                    }
                }
            }
            ("tools", _) => {
                touched.insert(c.name.clone());
            }
            _ => {}
        }
    }
    let mut picked: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (i, task) in tasks.iter().enumerate() {
        let mut why = Vec::new();
        let hit = used_of(task, &touched);
        if !hit.is_empty() {
            why.push(format!("uses changed tool {}", quoted(&hit)));
        }
        let shown_changes = triggering.iter().filter(|c| shown(c));
        let mut read: Vec<&str> = (shown_changes.clone())
            .filter(|c| c.list != "prompts" && reads(task, &c.name))
            .map(|c| c.name.as_str())
            .collect();
        read.dedup();
        if !read.is_empty() {
            why.push(format!("reads changed resource {}", quoted(&read)));
        }
        let mut used: Vec<&str> = shown_changes
            .filter(|c| c.list == "prompts" && uses_prompt(task, &c.name))
            .map(|c| c.name.as_str())
            .collect();
        used.dedup();
        if !used.is_empty() {
            why.push(format!("starts from changed prompt {}", quoted(&used)));
        }
        why.extend(everything.iter().cloned());
        if task.kind == TaskKind::NoTool {
            why.push("no-tool task".into());
        }
        if task.set == TaskSet::Regression {
            why.push("regression set".into());
        }
        if !why.is_empty() {
            picked.insert(i, why);
        }
    }
    Selection {
        triggering,
        tasks: picked
            .into_iter()
            .map(|(i, why)| (tasks[i].id.clone(), why))
            .collect(),
    }
}

/// The tools of `touched` that `task` uses: named in its `tools`, expected calls or forbidden
/// tools, or matched by an expected call's pattern.
fn used_of<'a>(task: &'a Task, touched: &'a BTreeSet<String>) -> Vec<&'a str> {
    let names: BTreeSet<&str> = task
        .tools
        .iter()
        .chain(
            task.all_expectations()
                .flat_map(|e| &e.calls)
                .flat_map(|c| c.tool.names()),
        )
        .chain(task.all_expectations().flat_map(|e| &e.forbidden_tools))
        .map(String::as_str)
        .collect();
    let mut hit: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| touched.contains(*n))
        .collect();
    // A pattern names no tool: each changed tool it matches is one the task uses.
    for call in task.all_expectations().flat_map(|e| &e.calls) {
        if let ToolName::Pattern { .. } = &call.tool {
            hit.extend(
                touched
                    .iter()
                    .map(|t| t.as_str())
                    .filter(|t| call.tool.matches(t)),
            );
        }
    }
    hit.sort_unstable();
    hit.dedup();
    hit
}

/// Whether `task` reads the resource or template `name` (a URI or a `uriTemplate`): attaches
/// it, or names it (a URI, a pattern) in `resources_read` / `resources_not_read`.
fn reads(task: &Task, name: &str) -> bool {
    let graded = task
        .all_expectations()
        .flat_map(|e| (e.resources_read.iter()).chain(&e.resources_not_read));
    let named: Vec<&String> = task.attach.iter().chain(graded).collect();
    named.iter().any(|uri| {
        uri.as_str() == name
            || crate::suite::glob_matches(uri, name)
            || crate::mcp::proxy::uri_template_matches(name, uri)
    })
}

/// Whether `task` starts from the prompt `name` or grades its use.
fn uses_prompt(task: &Task, name: &str) -> bool {
    task.server_prompt.as_ref().is_some_and(|p| p.name == name)
        || (task.all_expectations()).any(|e| {
            e.prompts_used
                .iter()
                .chain(&e.prompts_not_used)
                .any(|p| p == name)
        })
}

/// Whether one model-affecting change touches `task` as [`select`] reads it: the server
/// instructions and an added tool touch every task; a change of a tool (renamed: either name)
/// touches the tasks that use it, and every no-tool task (any tool can draw its call). A change
/// of a resource, template or prompt touches the tasks that read, attach or start from it.
pub fn touches(change: &Change, task: &Task) -> bool {
    match (change.list.as_str(), change.kind) {
        ("tools", ChangeKind::ToolAdded) | ("server", ChangeKind::InstructionsChanged) => true,
        ("tools", _) if task.kind == TaskKind::NoTool => true,
        ("tools", _) => {
            let mut touched = BTreeSet::from([change.name.clone()]);
            if change.kind == ChangeKind::ToolRenamed {
                for v in [&change.before, &change.after].into_iter().flatten() {
                    touched.extend(v.as_str().map(str::to_owned));
                }
            }
            !used_of(task, &touched).is_empty()
        }
        ("resources" | "resourceTemplates", _) => reads(task, &change.name),
        ("prompts", _) => uses_prompt(task, &change.name),
        _ => false,
    }
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::model::Side;
    use crate::suite::{Expectations, ExpectedCall};

    fn task(id: &str, kind: TaskKind, set: TaskSet, tools: &[&str]) -> Task {
        Task {
            id: id.into(),
            prompt: "p".into(),
            kind,
            set,
            tools: tools.iter().map(|t| t.to_string()).collect(),
            max_turns: 4,
            expect: Expectations {
                calls: tools
                    .iter()
                    .map(|t| ExpectedCall {
                        tool: t.to_string().into(),
                        args: Default::default(),
                        result: None,
                        position: None,
                        at: None,
                        args_at: Default::default(),
                    })
                    .collect(),
                ..Default::default()
            },
            call: None,
            call_expect: Default::default(),
            trials: None,
            expected_to_fail: false,
            malformed: false,
            setup: Vec::new(),
            teardown: Vec::new(),
            after: Vec::new(),
            source: "t.yaml:1".into(),
            call_at: Default::default(),
            turns: Vec::new(),
            stop_on_failure: false,
            user: None,
            asks: Default::default(),
            attach: Vec::new(),
            server_prompt: None,
        }
    }

    fn diff(changes: Vec<Change>) -> Diff {
        let side = || Side {
            label: "x".into(),
            snapshot: "dir".into(),
            server_info: serde_json::Value::Null,
        };
        Diff {
            baseline: side(),
            candidate: side(),
            changes,
            tokens: None,
        }
    }

    fn suite() -> Vec<Task> {
        vec![
            task(
                "search",
                TaskKind::Tool,
                TaskSet::Capability,
                &["search_issues"],
            ),
            task(
                "create",
                TaskKind::Tool,
                TaskSet::Capability,
                &["create_issue"],
            ),
            task("chat", TaskKind::NoTool, TaskSet::Capability, &[]),
            task(
                "close",
                TaskKind::Tool,
                TaskSet::Regression,
                &["update_issue"],
            ),
        ]
    }

    fn ids(s: &Selection) -> Vec<&str> {
        s.tasks.iter().map(|(id, _)| id.as_str()).collect()
    }

    #[test]
    fn a_changed_description_picks_its_tasks_no_tool_tasks_and_the_regression_set() {
        let d = diff(vec![Change::new(
            "tools",
            "search_issues",
            ChangeKind::DescriptionChanged,
        )
        .at("description")]);
        let s = select(&d, &suite(), &[]);
        assert_eq!(ids(&s), ["search", "chat", "close"]);
        assert_eq!(s.tasks[0].1, ["uses changed tool `search_issues`"]);
    }

    #[test]
    fn an_added_tool_or_new_instructions_pick_everything() {
        let d = diff(vec![Change::new(
            "tools",
            "find_issues",
            ChangeKind::ToolAdded,
        )]);
        assert_eq!(ids(&select(&d, &suite(), &[])).len(), 4);
        let d = diff(vec![Change::new(
            "server",
            "instructions",
            ChangeKind::InstructionsChanged,
        )]);
        let s = select(&d, &suite(), &[]);
        assert_eq!(ids(&s).len(), 4);
        assert!(s.tasks[1].1[0].contains("instructions"));
    }

    #[test]
    fn a_change_touches_the_tasks_that_use_its_tool_and_the_whole_list_ones_touch_all() {
        let tasks = suite();
        let described = Change::new("tools", "search_issues", ChangeKind::DescriptionChanged);
        let touched: Vec<&str> = (tasks.iter())
            .filter(|t| touches(&described, t))
            .map(|t| t.id.as_str())
            .collect();
        assert_eq!(touched, ["search", "chat"]);
        let added = Change::new("tools", "find_issues", ChangeKind::ToolAdded);
        assert!(tasks.iter().all(|t| touches(&added, t)));
        let renamed = Change::new("tools", "create_ticket", ChangeKind::ToolRenamed)
            .values(Some("create_issue".into()), Some("create_ticket".into()));
        assert!(tasks
            .iter()
            .any(|t| t.id == "create" && touches(&renamed, t)));
        let prompt = Change::new("prompts", "triage", ChangeKind::DescriptionChanged);
        assert!(!tasks.iter().any(|t| touches(&prompt, t)));
    }

    #[test]
    fn changes_that_affect_no_model_trigger_nothing() {
        let d = diff(vec![
            Change::new("tools", "get_issue", ChangeKind::OutputSchemaNarrowed),
            Change::new("errors", "unknown_tool", ChangeKind::ErrorSemanticsChanged),
        ]);
        let s = select(&d, &suite(), &[]);
        assert!(s.is_empty() && s.triggering.is_empty());
    }

    #[test]
    fn a_rename_touches_both_names() {
        let d = diff(vec![Change::new(
            "tools",
            "create_ticket",
            ChangeKind::ToolRenamed,
        )
        .values(Some("create_issue".into()), Some("create_ticket".into()))]);
        let s = select(&d, &suite(), &[]);
        assert!(ids(&s).contains(&"create"));
        assert_eq!(
            s.describe_changes(),
            ["tools `create_ticket`: tool_renamed (breaks clients)"]
        );
    }

    #[test]
    fn changes_that_differ_only_in_a_number_are_one_line_whose_kind_reads_back() {
        let changes = (1..=3)
            .map(|n| {
                Change::new(
                    "tools",
                    &format!("tool_{n}"),
                    ChangeKind::DescriptionChanged,
                )
                .at("description")
            })
            .collect();
        let s = select(&diff(changes), &suite(), &[]);
        let lines = s.describe_changes();
        assert_eq!(
            lines,
            ["tools `tool_{1..3}` at `description`: 3 × description_changed"]
        );
        assert_eq!(line_kind(&lines[0]), Some(("description_changed", 3)));
        assert_eq!(
            line_kind("tools `create_ticket`: tool_renamed (breaks clients)"),
            Some(("tool_renamed", 1))
        );
    }

    #[test]
    fn changed_texts_keep_both_sides_whole_with_their_line() {
        let long = |zone: &str| {
            format!("IANA timezone name (e.g., 'America/New_York'). Use '{zone}' if none given.")
        };
        let changes = vec![
            Change::new("tools", "get_issue", ChangeKind::ToolAdded),
            Change::new("tools", "search_issues", ChangeKind::DescriptionChanged)
                .at("description")
                .values(Some(long("UTC").into()), Some(long("Etc/UTC").into())),
            Change::new("tools", "search_issues", ChangeKind::AnnotationsChanged)
                .at("annotations.readOnlyHint")
                .values(Some(false.into()), Some(true.into())),
        ];
        let s = select(&diff(changes), &suite(), &[]);
        let texts = s.changed_texts();
        assert_eq!(texts.len(), 1, "{texts:?}");
        assert_eq!(texts[0].line, 1);
        assert_eq!(texts[0].name, "search_issues");
        assert_eq!(texts[0].path.as_deref(), Some("description"));
        assert_eq!(texts[0].after, Some(long("Etc/UTC")));
        assert!(s.describe_changes()[1].contains("description_changed"));
    }

    #[test]
    fn exposed_resources_and_prompts_trigger_and_pick_the_tasks_that_read_them() {
        let mut reader = task("reader", TaskKind::Tool, TaskSet::Capability, &[]);
        reader.expect.resources_read = vec!["tracker://issues/5".into()];
        let mut starter = task("starter", TaskKind::Tool, TaskSet::Capability, &[]);
        starter.server_prompt = Some(crate::suite::ServerPrompt {
            name: "triage_issue".into(),
            args: Default::default(),
        });
        let other = task("other", TaskKind::Tool, TaskSet::Capability, &["get_issue"]);
        let tasks = [reader, starter, other];
        let mut described = Change::new(
            "resourceTemplates",
            "tracker://issues/{id}",
            ChangeKind::DescriptionChanged,
        );
        described.affects_models = false;
        let prompt = Change::new("prompts", "triage_issue", ChangeKind::DescriptionChanged);
        let d = diff(vec![described, prompt]);
        let none = select(&d, &tasks, &[]);
        assert_eq!(
            none.triggering.len(),
            1,
            "the prompt's change affects models by itself"
        );
        assert!(
            ids(&none).is_empty(),
            "no task is picked without exposure: {none:?}"
        );
        let shown = select(
            &d,
            &tasks,
            &[Exposed::Tools, Exposed::Resources, Exposed::Prompts],
        );
        assert_eq!(shown.triggering.len(), 2);
        assert_eq!(
            shown.tasks,
            [
                (
                    "reader".to_owned(),
                    vec!["reads changed resource `tracker://issues/{id}`".to_owned()]
                ),
                (
                    "starter".to_owned(),
                    vec!["starts from changed prompt `triage_issue`".to_owned()]
                ),
            ]
        );
        assert!(touches(&shown.triggering[0], &tasks[0]));
        assert!(!touches(&shown.triggering[0], &tasks[2]));
    }
}
