//! `mcpeval check --resume DIR`: the stages an interrupted check already ended (passed, failed
//! or skipped) are kept from its `check.json`, with what later stages read of them (the servers'
//! stderr, the contract's snapshots and diff); the stage in flight and those after it run.

use std::path::{Path, PathBuf};

use super::{Ctx, Stage};
use crate::contract::{Diff, Snapshot};
use crate::rundir::{CheckRecord, StageRecord, StageStatus};

/// The record of a stage to keep, when the check being resumed ended it.
pub(super) fn kept(previous: Option<&CheckRecord>, stage: Stage) -> Option<StageRecord> {
    let found = previous?.stages.iter().find(|s| s.name == stage.name())?;
    match found.status {
        StageStatus::Passed | StageStatus::Failed | StageStatus::Skipped => Some(found.clone()),
        // Could not be done (or was cut short): done again.
        StageStatus::Error => None,
    }
}

/// What a kept stage left for the stages after it, read back from its files.
pub(super) fn restore(ctx: &mut Ctx, stage: &StageRecord) {
    match stage.name.as_str() {
        "smoke" => {
            for side in ["baseline", "candidate"] {
                let path = ctx.dir.join("smoke").join(format!("{side}.stderr.txt"));
                if let Ok(text) = std::fs::read_to_string(path) {
                    ctx.stderr.insert(side, text);
                }
            }
        }
        "contract" if stage.status != StageStatus::Skipped => restore_contract(ctx),
        _ => {}
    }
}

/// The first client profile's snapshots and diff (the top of `contract/`), and whether any
/// profile's diff breaks clients.
fn restore_contract(ctx: &mut Ctx) {
    let dir = ctx.dir.join("contract");
    let candidate = dir.join("candidate");
    let baseline = match &ctx.settings.stored {
        Some(stored) => stored.clone(),
        None => dir.join("baseline"),
    };
    ctx.baseline_snapshot = Snapshot::read(&baseline).ok();
    ctx.candidate_snapshot = Snapshot::read(&candidate).ok();
    let diff = candidate.join("diff.json");
    ctx.diff_path = diff.is_file().then_some(diff);
    let mut diffs = Vec::new();
    find_diffs(&candidate, &mut diffs);
    ctx.breaking = diffs.iter().any(|path| {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str::<Diff>(&text).ok())
            .is_some_and(|d| d.breaks_clients())
    });
}

/// Every `diff.json` under `dir` (one per client and auth profile).
fn find_diffs(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            find_diffs(&path, found);
        } else if path.file_name().is_some_and(|n| n == "diff.json") {
            found.push(path);
        }
    }
}
