//! `mcpeval run --trigger DIFF.json`: read a diff, pick the tasks it calls for, say what and why.

use std::path::Path;

use super::exit::CliError;
use crate::contract::{select, Diff};
use crate::suite::Suite;

/// What the run records about its trigger.
pub struct Triggered {
    /// One line for run.json and the summary's facts.
    pub summary: String,
    /// The triggering changes, one line each.
    pub changes: Vec<String>,
}

/// Reads a diff written by `mcpeval diff --out`.
pub fn read_diff(path: &Path) -> Result<Diff, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::usage(anyhow::anyhow!(
            "cannot read trigger `{}`: {e}",
            path.display()
        ))
    })?;
    serde_json::from_str(&text).map_err(|e| {
        CliError::usage(anyhow::anyhow!(
            "`{}` is not a diff written by `mcpeval diff --out`: {e}",
            path.display()
        ))
    })
}

/// Keeps the tasks the diff calls for and prints why; `None` when nothing is to run (said so).
pub fn apply(diff: &Diff, source: &str, suite: &mut Suite) -> Option<Triggered> {
    let selection = select(diff, &suite.tasks);
    if selection.is_empty() {
        println!(
            "nothing to run: none of the {} change(s) in {source} affects models",
            diff.changes.len()
        );
        return None;
    }
    let changes = selection.describe_changes();
    println!("{} change(s) in {source} affect models:", changes.len());
    for line in &changes {
        println!("  {line}");
    }
    println!(
        "running {} of {} tasks:",
        selection.tasks.len(),
        suite.tasks.len()
    );
    for (id, why) in &selection.tasks {
        println!("  {id}: {}", why.join("; "));
    }
    suite
        .tasks
        .retain(|t| selection.tasks.iter().any(|(id, _)| *id == t.id));
    Some(Triggered {
        summary: format!(
            "{source}: {} change(s) affect models ({} → {}); {} of the suite's tasks selected",
            changes.len(),
            diff.baseline.label,
            diff.candidate.label,
            selection.tasks.len()
        ),
        changes,
    })
}
