//! What `explain` tries: the regressed tasks read from the run's own comparison, and for each the
//! model-affecting changes of the diff that touch it, grouped into units of trials (one overlay,
//! the tasks it is tried on), in budget order.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::revert::{priority, undo, Undo};
use crate::analysis::{Comparison, Scope, Verdict};
use crate::config::Metric;
use crate::contract::{touches, Change};
use crate::suite::Task;

/// A task row of the run to explain: a regression (or, with `--all`, an improvement).
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub task_id: String,
    pub host: String,
    pub metric: Metric,
    pub verdict: Verdict,
}

/// The task rows `explain` attributes: every regressed row of a gated metric (success, tool
/// calls, tool errors, total tokens by default: what the verdict stands on), and the improved
/// ones with `all` (call tasks among them; the caller sets those apart). Where no task of `models` (the
/// tasks a model runs) has such a row, the model tasks under a regressed suite row.
pub fn targets(comparison: &Comparison, all: bool, models: &BTreeSet<String>) -> Vec<Target> {
    let wanted = |v: Verdict| v == Verdict::Regression || (all && v == Verdict::Improvement);
    let mut out: Vec<Target> = (comparison.rows.iter())
        .filter(|r| r.scope == Scope::Task && r.gated && r.tested() && wanted(r.verdict))
        .map(|r| Target {
            task_id: r.task_id.clone(),
            host: r.host.clone(),
            metric: r.metric,
            verdict: r.verdict,
        })
        .collect();
    // A run whose regression is in suite rows only (a few tokens more on every no-tool task,
    // none significant alone): the tasks whose own row moved the same way are explained on
    // that metric.
    let suites = (comparison.rows.iter()).filter(|r| r.is_suite() && r.gated && wanted(r.verdict));
    let none_of_models = !out.iter().any(|t| models.contains(&t.task_id));
    for suite in suites.filter(|_| none_of_models).collect::<Vec<_>>() {
        let bad = |delta: f64| delta * suite.delta.unwrap_or(0.0) > 0.0;
        for row in comparison.task_rows_of(suite) {
            let target = Target {
                task_id: row.task_id.clone(),
                host: row.host.clone(),
                metric: row.metric,
                verdict: suite.verdict,
            };
            let model = models.contains(&row.task_id);
            if model && row.tested() && row.delta.is_some_and(bad) && !out.contains(&target) {
                out.push(target);
            }
        }
    }
    out
}

/// How a unit's trials change the candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum Trial {
    /// One change undone (the index of the change among the model-affecting ones).
    Revert(usize),
    /// Every other tried change of `task` undone: the baseline plus this change alone.
    OnlyThis { change: usize },
    /// The candidate as served, its tool list offered in reverse order.
    Reversed,
}

/// One set of trials: the candidate under `overlay` (or reordered) on these tasks and hosts.
#[derive(Debug, Clone)]
pub struct Unit {
    /// The file and directory name (`01-instructions`).
    pub id: String,
    pub trial: Trial,
    pub overlay: Option<Value>,
    pub tasks: BTreeSet<String>,
    pub hosts: BTreeSet<String>,
}

impl Unit {
    /// Trials the unit runs: every task on every host, `trials` each.
    pub fn cost(&self, trials: u32) -> u64 {
        (self.tasks.len() * self.hosts.len()) as u64 * u64::from(trials)
    }
}

/// A change that is not tried on a target, and why.
#[derive(Debug, Clone)]
pub struct Untried {
    pub target: usize,
    pub change: usize,
    pub reason: String,
}

/// The units of single reverts in budget order, and the (target, change) pairs not tried.
pub struct Plan {
    pub units: Vec<Unit>,
    pub untried: Vec<Untried>,
}

/// Every model-affecting change against every target: undone alone where it touches the
/// target's task and an overlay can undo it, else untried with the reason.
pub fn plan(targets: &[Target], changes: &[Change], tasks: &[Task]) -> Plan {
    let mut by_change: BTreeMap<usize, Unit> = BTreeMap::new();
    let mut untried = Vec::new();
    for (t, target) in targets.iter().enumerate() {
        let task = tasks.iter().find(|x| x.id == target.task_id);
        for (c, change) in changes.iter().enumerate() {
            let not = |reason: String| Untried {
                target: t,
                change: c,
                reason,
            };
            if !task.is_some_and(|task| touches(change, task)) {
                untried.push(not("does not touch this task's tools".into()));
                continue;
            }
            match undo(change) {
                Undo::NotTried(reason) => untried.push(not(reason)),
                Undo::Overlay(overlay) => {
                    let unit = by_change.entry(c).or_insert_with(|| Unit {
                        id: String::new(),
                        trial: Trial::Revert(c),
                        overlay: Some(overlay),
                        tasks: BTreeSet::new(),
                        hosts: BTreeSet::new(),
                    });
                    unit.tasks.insert(target.task_id.clone());
                    unit.hosts.insert(target.host.clone());
                }
            }
        }
    }
    let mut units: Vec<Unit> = by_change.into_values().collect();
    units.sort_by_key(|u| match u.trial {
        Trial::Revert(c) => (priority(&changes[c]), c),
        _ => (u8::MAX, 0),
    });
    for (i, unit) in units.iter_mut().enumerate() {
        if let Trial::Revert(c) = unit.trial {
            unit.id = format!("{:02}-{}", i + 1, slug(&changes[c]));
        }
    }
    Plan { units, untried }
}

/// A change as a file name: `instructions`, `hide-find_issues`, `search_issues-description`.
pub fn slug(change: &Change) -> String {
    let words = match (change.list.as_str(), change.path.as_deref()) {
        ("server", _) => change.name.clone(),
        (_, Some(path)) => format!("{}-{path}", change.name),
        (_, None) => format!("{}-{}", change.name, change.kind.as_str()),
    };
    let clean: String = (words.chars())
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                true => c,
                false => '-',
            },
        )
        .collect();
    clean.chars().take(60).collect()
}

/// A change as the tables name it, from its columns: `instructions_changed`,
/// `tool_added find_issues`, `description_changed search_issues description`.
pub fn label_of(kind: &str, list: &str, name: &str, path: Option<&str>) -> String {
    match (list, path) {
        ("server", _) => kind.to_owned(),
        (_, Some(path)) => format!("{kind} {name} {path}"),
        (_, None) => format!("{kind} {name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::ChangeKind;

    #[test]
    fn instructions_and_added_tools_come_first_and_names_read_as_files() {
        let mut described = Change::new("tools", "search_issues", ChangeKind::DescriptionChanged);
        described.path = Some("inputSchema.properties.query.description".into());
        let changes = vec![
            described,
            Change::new("tools", "find_issues", ChangeKind::ToolAdded),
            Change::new("server", "instructions", ChangeKind::InstructionsChanged),
        ];
        let targets = vec![Target {
            task_id: "search".into(),
            host: "sim".into(),
            metric: Metric::Success,
            verdict: Verdict::Regression,
        }];
        let text = "id: search\nprompt: Find the login issues.\nexpect:\n  calls: [{tool: search_issues}]\n";
        let suite = crate::suite::load_sources(&[("t.yaml".into(), text.into())]).unwrap();
        let plan = plan(&targets, &changes, &suite.tasks);
        let ids: Vec<&str> = plan.units.iter().map(|u| u.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "01-find_issues-tool_added",
                "02-instructions",
                "03-search_issues-inputSchema-properties-query-description"
            ]
        );
        assert!(plan.untried.is_empty());
        assert_eq!(plan.units[0].cost(10), 10);
        let label = |c: &Change| label_of(&c.kind.as_str(), &c.list, &c.name, c.path.as_deref());
        assert_eq!(label(&changes[1]), "tool_added find_issues");
        assert_eq!(label(&changes[2]), "instructions_changed");
    }
}
