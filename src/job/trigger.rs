//! `mcpeval run --trigger DIFF.json | --auto-trigger`: a diff (read, or made from both servers'
//! snapshots), the tasks it calls for, and what and why, said as notes for the command line.

use std::path::Path;

use super::{JobError, Note};
use crate::config::RunConfig;
use crate::contract::versions::sides;
use crate::contract::{counts_line, diff_snapshots, diff_table, select, take, Diff};
use crate::suite::Suite;

/// How many lines of triggering changes the console shows; summary.md shows them all.
const CONSOLE_LINES: usize = 12;

/// How many changed texts of one line the console shows (as words that differ).
const TEXTS_PER_LINE: usize = 3;

/// What the run records about its trigger.
pub struct Triggered {
    /// One line for run.json and the summary's facts.
    pub summary: String,
    /// The triggering changes, one line per group of them.
    pub changes: Vec<String>,
    /// The triggering changes of a text, both sides whole, for the reports' word diffs.
    pub texts: Vec<crate::contract::ChangedText>,
    /// The diff file, made absolute.
    pub path: std::path::PathBuf,
}

/// Reads a diff written by `mcpeval diff --out`.
pub fn read_diff(path: &Path) -> Result<Diff, JobError> {
    let unreadable = |message: String| JobError::Trigger {
        path: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| unreadable(format!("cannot read trigger `{}`: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| {
        unreadable(format!(
            "`{}` is not a diff written by `mcpeval diff --out`: {e}",
            path.display()
        ))
    })
}

/// The tools the diff found renamed, old name → new (`tool_renamed` changes).
pub fn renames(diff: &Diff) -> Vec<(String, String)> {
    diff.changes
        .iter()
        .filter(|c| c.kind == crate::contract::ChangeKind::ToolRenamed && c.list == "tools")
        .filter_map(|c| {
            let old = c.before.as_ref()?.as_str()?;
            let new = c.after.as_ref().and_then(|a| a.as_str()).unwrap_or(&c.name);
            Some((old.to_owned(), new.to_owned()))
        })
        .collect()
}

/// Keeps the tasks the diff calls for and says why in `notes`; `None` when nothing is to run
/// (said so).
pub fn apply(
    diff: &Diff,
    source: &str,
    suite: &mut Suite,
    notes: &mut Vec<Note>,
    exposed: &[crate::config::Exposed],
) -> Option<Triggered> {
    let selection = select(diff, &suite.tasks, exposed);
    if selection.is_empty() {
        notes.push(Note::out(format!(
            "nothing to run: none of the {} change(s) in {source} affects models",
            diff.changes.len()
        )));
        return None;
    }
    let changes = selection.describe_changes();
    notes.push(Note::out(format!(
        "{} change(s) in {source} affect models: {}",
        selection.triggering.len(),
        counts_line(&selection.triggering)
    )));
    let texts = selection.changed_texts();
    for (i, line) in changes.iter().take(CONSOLE_LINES).enumerate() {
        notes.push(Note::out(format!("  {line}")));
        let of_line: Vec<_> = texts.iter().filter(|t| t.line == i).collect();
        for t in of_line.iter().take(TEXTS_PER_LINE) {
            let member = match of_line.len() {
                1 => String::new(),
                _ => format!("{}: ", t.member()),
            };
            notes.push(Note::out(format!("      {member}{}", t.words())));
        }
        if of_line.len() > TEXTS_PER_LINE {
            notes.push(Note::out(format!(
                "      … and {} more: summary.md shows them all",
                of_line.len() - TEXTS_PER_LINE
            )));
        }
    }
    if changes.len() > CONSOLE_LINES {
        notes.push(Note::out(format!(
            "  … and {} more line(s): summary.md lists them all, {source} has every change",
            changes.len() - CONSOLE_LINES
        )));
    }
    notes.push(Note::out(format!(
        "running {} of {} tasks:",
        selection.tasks.len(),
        suite.tasks.len()
    )));
    for (id, why) in &selection.tasks {
        notes.push(Note::out(format!("  {id}: {}", why.join("; "))));
    }
    suite
        .tasks
        .retain(|t| selection.tasks.iter().any(|(id, _)| *id == t.id));
    Some(Triggered {
        summary: format!(
            "{source}: {} change(s) affect models ({}); {} of the suite's tasks selected",
            selection.triggering.len(),
            sides(diff),
            selection.tasks.len()
        ),
        changes,
        texts,
        path: std::path::absolute(source).unwrap_or_else(|_| source.into()),
    })
}

/// What `--auto-trigger` found.
pub enum AutoDiff {
    /// The diff, to select the tasks with.
    Diff(Box<Diff>),
    /// The candidate breaks clients and breaking changes were not allowed: the run stops
    /// (exit 1).
    Breaking,
}

/// `--auto-trigger`: snapshots both servers, diffs them, keeps both snapshots and the diff in
/// `RUN_DIR/contract/`, and notes the table. Breaking changes stop the run unless
/// `allow_breaking`; the stop's note ends with `advice`, the caller's way to run anyway.
pub async fn auto(
    config: &RunConfig,
    dir: &Path,
    allow_breaking: bool,
    advice: &str,
    notes: &mut Vec<Note>,
) -> Result<AutoDiff, JobError> {
    let contract_dir = dir.join("contract");
    let diff = snapshot_and_diff(config, &contract_dir).await?;
    let path = contract_dir.join("diff.json");
    notes.push(Note::text(shortened(&diff_table(&diff), &path)));
    if diff.breaks_clients() && !allow_breaking {
        notes.push(Note::warn(format!(
            "stopping: the candidate breaks clients (see {}); {advice}",
            path.display()
        )));
        return Ok(AutoDiff::Breaking);
    }
    Ok(AutoDiff::Diff(Box::new(diff)))
}

/// Snapshots both servers of `config` into `contract_dir/baseline` and `/candidate`, diffs them
/// and writes `contract_dir/diff.json`.
pub async fn snapshot_and_diff(config: &RunConfig, contract_dir: &Path) -> Result<Diff, JobError> {
    let mut snapshots = Vec::new();
    for (side, spec) in [
        ("baseline", &config.baseline),
        ("candidate", &config.candidate),
    ] {
        let snapshot = take(spec).await.map_err(|source| JobError::Snapshot {
            side,
            server: spec.display(),
            source,
        })?;
        let side_dir = contract_dir.join(side);
        snapshot
            .write(&side_dir)
            .map_err(|e| JobError::write(&side_dir, e))?;
        snapshots.push((snapshot, side_dir));
    }
    let (cand, cand_dir) = snapshots.pop().expect("two snapshots");
    let (base, base_dir) = snapshots.pop().expect("two snapshots");
    let diff = diff_snapshots(&base, &cand, (&base_dir, None), (&cand_dir, None));
    let path = contract_dir.join("diff.json");
    let mut text = serde_json::to_string_pretty(&diff).map_err(|e| JobError::write(&path, e))?;
    text.push('\n');
    std::fs::write(&path, text).map_err(|e| JobError::write(&path, e))?;
    Ok(diff)
}

/// The diff's table for the console: its header, counts and first rows; the rest is in the
/// diff's file.
fn shortened(table: &str, path: &Path) -> String {
    let lines: Vec<&str> = table.lines().collect();
    let keep = 3 + CONSOLE_LINES;
    if lines.len() <= keep {
        return table.to_owned();
    }
    format!(
        "{}\n… and {} more line(s): every change is in {}\n",
        lines[..keep].join("\n"),
        lines.len() - keep,
        path.display()
    )
}
