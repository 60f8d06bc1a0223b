//! `mcpeval run --trigger DIFF.json | --auto-trigger`: a diff (read, or made from both servers'
//! snapshots), the tasks it calls for, and what and why.

use std::path::Path;

use anyhow::Context;

use super::exit::{CliError, Exit};
use super::out::{out, outln};
use crate::config::RunConfig;
use crate::contract::{diff_snapshots, diff_table, select, take, Diff};
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
        outln!(
            "nothing to run: none of the {} change(s) in {source} affects models",
            diff.changes.len()
        );
        return None;
    }
    let changes = selection.describe_changes();
    outln!("{} change(s) in {source} affect models:", changes.len());
    for line in &changes {
        outln!("  {line}");
    }
    outln!(
        "running {} of {} tasks:",
        selection.tasks.len(),
        suite.tasks.len()
    );
    for (id, why) in &selection.tasks {
        outln!("  {id}: {}", why.join("; "));
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

/// `--auto-trigger`: snapshots both servers, diffs them, keeps both snapshots and the diff in
/// `RUN_DIR/contract/`, and prints the table. Breaking changes stop the run (exit 1) unless
/// `allow_breaking`.
pub async fn auto(
    config: &RunConfig,
    dir: &Path,
    allow_breaking: bool,
) -> Result<Result<Diff, Exit>, CliError> {
    let contract_dir = dir.join("contract");
    let mut snapshots = Vec::new();
    for (side, spec) in [
        ("baseline", &config.baseline),
        ("candidate", &config.candidate),
    ] {
        let snapshot = take(spec).await.map_err(|e| {
            CliError::infra(anyhow::anyhow!("{side} server `{}`: {e}", spec.display()))
        })?;
        let side_dir = contract_dir.join(side);
        snapshot.write(&side_dir)?;
        snapshots.push((snapshot, side_dir));
    }
    let (cand, cand_dir) = snapshots.pop().expect("two snapshots");
    let (base, base_dir) = snapshots.pop().expect("two snapshots");
    let diff = diff_snapshots(&base, &cand, (&base_dir, None), (&cand_dir, None));
    let path = contract_dir.join("diff.json");
    let mut text = serde_json::to_string_pretty(&diff).context("cannot encode the diff")?;
    text.push('\n');
    std::fs::write(&path, text).with_context(|| format!("cannot write `{}`", path.display()))?;
    out!("{}", diff_table(&diff));
    if diff.breaks_clients() && !allow_breaking {
        eprintln!(
            "stopping: the candidate breaks clients (see {}); pass --allow-breaking to run anyway",
            path.display()
        );
        return Ok(Err(Exit::Regression));
    }
    Ok(Ok(diff))
}
