//! A unit's trials as a run of its own under `RUN_DIR/explain/runs/ID/`: the run's candidate
//! episodes copied in as that run's baseline (done, never run again), the candidate with the
//! unit's overlay (kept in `explain/overlays/ID.yaml`) run with the run's hosts, seeds and trial
//! count. A unit cut short resumes where it stopped.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::plan::Unit;
use super::revert::yaml;
use crate::config::RunConfig;
use crate::episode::{Episode, Side};
use crate::job::{Face, JobError, RunOutcome, RunRequest, Stop, TaskKinds};
use crate::rundir::{RunInfo, RunStatus, EPISODES_JSONL};

/// What the units share: the run explained, its config (with its secrets), and its episodes of
/// the tasks explained.
pub struct Source<'a> {
    pub dir: &'a Path,
    pub info: &'a RunInfo,
    pub config: &'a RunConfig,
    pub episodes: &'a [Episode],
}

/// Runs `unit` (or finishes it) and returns its candidate's episodes; `Ok(None)` when the run
/// was cut short before it ended.
pub async fn run_unit(
    source: &Source<'_>,
    unit: &Unit,
    stop: Stop,
    face: &dyn Face,
) -> Result<Option<Vec<Episode>>, JobError> {
    let explain = source.dir.join("explain");
    let dir = explain.join("runs").join(&unit.id);
    let config = unit_config(source, unit, &explain)?;
    if !dir.join(crate::rundir::RUN_JSON).is_file() {
        seed_dir(source, unit, &config, &dir)?;
    }
    let request = RunRequest {
        resume: Some(dir.clone()),
        resolved: Some(Box::new(config)),
        no_step_summary: true,
        kinds: TaskKinds::Models,
        ..RunRequest::default()
    };
    let finished = match crate::job::run(&request, stop, face).await? {
        RunOutcome::Finished(finished) => finished,
        RunOutcome::Skipped(_) => return Ok(Some(Vec::new())),
    };
    if finished.end.cancelled {
        return Ok(None);
    }
    let mut episodes = Vec::new();
    crate::rundir::scan_episodes(&dir, |e| {
        if e.side == Side::Candidate && e.infra_error.is_none() {
            episodes.push(e);
        }
    })
    .map_err(|e| JobError::Episodes {
        dir: dir.clone(),
        source: e.into(),
    })?;
    Ok(Some(episodes))
}

/// The run's config for a unit: the run's candidate as the baseline, the candidate under the
/// unit's overlay (its file written) or with its list reversed, the unit's hosts only.
fn unit_config(source: &Source<'_>, unit: &Unit, explain: &Path) -> Result<RunConfig, JobError> {
    let mut config = source.config.clone();
    config.baseline = source.config.candidate.clone();
    if let Some(overlay) = &unit.overlay {
        let overlays = explain.join("overlays");
        std::fs::create_dir_all(&overlays).map_err(|e| JobError::write(&overlays, e))?;
        let file = overlays.join(format!("{}.yaml", unit.id));
        std::fs::write(&file, yaml(overlay)).map_err(|e| JobError::write(&file, e))?;
        config.candidate = crate::config::overlay_over(&source.config.candidate, &file)?;
    }
    if unit.trial == super::plan::Trial::Reversed {
        reverse_order(&mut config);
    }
    config.hosts.retain(|h| unit.hosts.contains(&h.name));
    // The unit's trials are compared with fixed-sample tests; every trial runs.
    config.stats.adaptive = false;
    Ok(config)
}

/// Offers every host the candidate's tools in the reverse of the order the run offered them
/// (the server's order for a run that reversed it; a shuffled run's hosts get the server's
/// order reversed). The unit's baseline side is the run's candidate as served, already done.
fn reverse_order(config: &mut RunConfig) {
    use crate::config::ToolOrder;
    for host in &mut config.hosts {
        host.profile.tool_order = match host.profile.tool_order {
            ToolOrder::Reverse => ToolOrder::Server,
            ToolOrder::Server | ToolOrder::Shuffle => ToolOrder::Reverse,
        };
    }
}

/// A new unit directory: its `run.json` (the unit's tasks) and the run's candidate episodes of
/// those tasks and hosts as its baseline's, so that only the unit's candidate runs.
fn seed_dir(
    source: &Source<'_>,
    unit: &Unit,
    config: &RunConfig,
    dir: &Path,
) -> Result<(), JobError> {
    std::fs::create_dir_all(dir).map_err(|e| JobError::write(dir, e))?;
    let mut info = source.info.clone();
    info.run_id = format!("{}-explain-{}", source.info.run_id, unit.id);
    info.config = config.clone();
    info.status = RunStatus::Running;
    info.tasks = (source.info.tasks.iter())
        .filter(|t| unit.tasks.contains(*t))
        .cloned()
        .collect();
    info.trigger = None;
    info.trigger_changes.clear();
    info.trigger_texts.clear();
    info.trigger_diff = None;
    info.shard = None;
    info.merged_from.clear();
    info.write(dir).map_err(|e| JobError::write(dir, e))?;
    let path: PathBuf = dir.join(EPISODES_JSONL);
    let mut out = std::fs::File::create(&path).map_err(|e| JobError::write(&path, e))?;
    for e in source.episodes.iter().filter(|e| {
        e.side == Side::Candidate
            && e.infra_error.is_none()
            && unit.tasks.contains(&e.task_id)
            && unit.hosts.contains(&e.host)
    }) {
        let mut e = e.clone();
        e.side = Side::Baseline;
        e.run_id = info.run_id.clone();
        let line = serde_json::to_string(&e).map_err(|err| JobError::write(&path, err))?;
        writeln!(out, "{line}").map_err(|err| JobError::write(&path, err))?;
    }
    Ok(())
}
