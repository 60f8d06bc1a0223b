//! What a nightly job records once its run has finished: tonight's comparison and the drift
//! of the baseline against an earlier night, appended to the history and to the run's
//! summary.md. The episodes are streamed from the run directories, never all held.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::Context;
use chrono::{DateTime, Utc};

use super::drift::{compare_baselines, moved_rows, moved_tasks, references, section};
use super::drift::{DriftOutcome, MAY_BE_THE_MODEL};
use super::schedule::stamp;
use super::store::{append, HistoryError};
use super::table::{HistoryRow, RunMeta, CANDIDATE, DRIFT};
use crate::analysis::Collector;
use crate::config::NightlySettings;
use crate::rundir::SUMMARY_MD;
use crate::rundir::{scan_facts, RunInfo, ServerRecord, EPISODES_JSONL};

/// Why a job's results could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The history could not be read (the user's to fix) or written.
    #[error(transparent)]
    History(#[from] HistoryError),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl crate::error::Coded for RecordError {
    fn exit(&self) -> crate::error::Exit {
        match self {
            Self::History(e) => e.exit(),
            Self::Other(_) => crate::error::Exit::Infra,
        }
    }
}

/// Appends tonight's comparison and drift rows to the history and the drift section to
/// summary.md; returns what was done.
pub fn record(
    info: &RunInfo,
    dir: &Path,
    earlier: &[HistoryRow],
    settings: &NightlySettings,
    log: &dyn Fn(&str),
) -> Result<String, RecordError> {
    let mut collector = Collector::for_stats(&info.config.stats);
    scan_facts(dir, |side, e| collector.add_facts(side, e))?;
    let comparison = collector
        .comparison(&info.config.stats, info.seed)
        .context("cannot compare the sides")?;
    drop(collector);
    let meta = RunMeta {
        date: utc_date(&info.started_at),
        run_id: info.run_id.clone(),
        run_dir: std::path::absolute(dir)
            .unwrap_or_else(|_| dir.to_path_buf())
            .display()
            .to_string(),
        baseline_version: version(&info.baseline, &info.candidate),
        candidate_version: version(&info.candidate, &info.baseline),
    };
    let mut rows: Vec<HistoryRow> = comparison
        .rows
        .iter()
        .filter(|r| r.in_history())
        .map(|r| HistoryRow::from_comparison(&meta, CANDIDATE, None, r))
        .collect();
    let candidate_rows = rows.len();
    let (outcome, drift_rows) = drift(info, dir, earlier, &meta, log)?;
    rows.extend(drift_rows);
    let total = append(&settings.history, &rows)?;
    let regressed: HashSet<(String, String)> = comparison
        .gated_regressions()
        .map(|r| (r.task_id.clone(), r.host.clone()))
        .collect();
    add_to_summary(dir, &section(&outcome, &regressed))?;
    let drift_note = match &outcome {
        DriftOutcome::Compared {
            reference, moved, ..
        } => {
            let tasks = moved_tasks(moved);
            if tasks.is_empty() {
                format!("no baseline drift against run {}", reference.run_id)
            } else {
                let names: Vec<String> = tasks.iter().map(|(t, h)| format!("{t} ({h})")).collect();
                log(&format!(
                    "baseline drift against run {} on {}: {}",
                    reference.run_id,
                    names.join(", "),
                    MAY_BE_THE_MODEL
                ));
                format!("baseline DRIFT on {} task(s)", tasks.len())
            }
        }
        DriftOutcome::NoReference { version, .. } => {
            format!("no earlier baseline run of {version} to check drift against")
        }
        DriftOutcome::NothingInCommon { reference } => {
            format!(
                "run {} has no task in common: no drift check",
                reference.run_id
            )
        }
    };
    Ok(format!(
        "run {} recorded: {candidate_rows} comparison row(s) and {} drift row(s) appended to {} \
         ({total} rows); {drift_note}",
        info.run_id,
        rows.len() - candidate_rows,
        settings.history.display()
    ))
}

/// Finds the reference run (the newest earlier run of the same baseline version still on
/// disk), compares the baselines, and returns the outcome with the history rows it makes.
fn drift(
    info: &RunInfo,
    dir: &Path,
    earlier: &[HistoryRow],
    meta: &RunMeta,
    log: &dyn Fn(&str),
) -> Result<(DriftOutcome, Vec<HistoryRow>), RecordError> {
    let mut missing = Vec::new();
    let identity = crate::contract::versions::identity(&info.baseline.spec);
    for reference in references(
        earlier,
        &meta.baseline_version,
        Some(&identity),
        &meta.run_id,
    ) {
        let on_disk = matches!(
            std::fs::metadata(reference.run_dir.join(EPISODES_JSONL)),
            Ok(m) if m.len() > 0
        );
        if !on_disk {
            {
                log(&format!(
                    "drift: run {} is gone from `{}`; trying an older one",
                    reference.run_id,
                    reference.run_dir.display()
                ));
                missing.push(reference);
                continue;
            }
        }
        let compared = compare_baselines(&reference.run_dir, &dir, &info.config.stats, info.seed)
            .context("cannot compare the baselines")?;
        let Some(c) = compared else {
            return Ok((DriftOutcome::NothingInCommon { reference }, Vec::new()));
        };
        // Both sides ran the baseline version.
        let drift_meta = RunMeta {
            candidate_version: meta.baseline_version.clone(),
            ..meta.clone()
        };
        let rows = c
            .rows
            .iter()
            .filter(|r| r.in_history())
            .map(|r| HistoryRow::from_comparison(&drift_meta, DRIFT, Some(&reference.run_id), r))
            .collect();
        let outcome = DriftOutcome::Compared {
            version: meta.baseline_version.clone(),
            tasks: c.tasks.len(),
            moved: moved_rows(&c),
            reference,
        };
        return Ok((outcome, rows));
    }
    let outcome = DriftOutcome::NoReference {
        version: meta.baseline_version.clone(),
        missing,
    };
    Ok((outcome, Vec::new()))
}

/// The server's own version (serverInfo.version), else its spec; with the spec's package (or
/// the spec) beside it when the other side reports the same version, since then the version
/// does not tell the releases apart.
fn version(server: &ServerRecord, other: &ServerRecord) -> String {
    let reported = |s: &ServerRecord| {
        (s.info.as_ref())
            .map(|i| i.version.clone())
            .filter(|v| !v.trim().is_empty())
    };
    match (reported(server), reported(other)) {
        (Some(own), Some(theirs)) => {
            crate::contract::versions::labelled(&own, &server.spec, &theirs, &other.spec)
        }
        (Some(own), None) => own,
        (None, _) => server.spec.clone(),
    }
}

/// `2026-11-30T03:00:00Z` from run.json's RFC 3339 start time (kept as is if it is not one).
fn utc_date(started_at: &str) -> String {
    DateTime::parse_from_rfc3339(started_at)
        .map(|t| stamp(t.with_timezone(&Utc)))
        .unwrap_or_else(|_| started_at.to_owned())
}

/// `<out_dir>/nightly-<UTC time>`, with `-2`, `-3`, … if that is taken.
pub fn new_run_dir(out_dir: &Path) -> PathBuf {
    let base = format!("nightly-{}", Utc::now().format("%Y%m%dT%H%M%SZ"));
    let mut dir = out_dir.join(&base);
    let mut n = 1;
    while dir.exists() {
        n += 1;
        dir = out_dir.join(format!("{base}-{n}"));
    }
    dir
}

/// Appends the drift section to summary.md (through a temporary file and a rename) and to
/// `$GITHUB_STEP_SUMMARY`, which the run has already written its summary into.
fn add_to_summary(dir: &Path, section: &str) -> anyhow::Result<()> {
    let path = dir.join(SUMMARY_MD);
    let mut text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    text.push_str(section);
    let tmp = path.with_extension("md.tmp");
    std::fs::write(&tmp, &text).with_context(|| format!("cannot write `{}`", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot write `{}`", path.display()))?;
    if let Some(step) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&step)
            .and_then(|mut f| f.write_all(section.as_bytes()))
            .with_context(|| format!("cannot append to `{}`", step.to_string_lossy()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_seconds_and_versions_fall_back_to_the_spec() {
        assert_eq!(
            utc_date("2026-11-30T04:00:00.123456+01:00"),
            "2026-11-30T03:00:00Z"
        );
        assert_eq!(utc_date("yesterday"), "yesterday");
        let mut server = ServerRecord {
            spec: "node build/index.js".into(),
            info: None,
            tools: Vec::new(),
            tool_tokens: None,
            tools_ttl_ms: None,
        };
        let other = server.clone();
        assert_eq!(version(&server, &other), "node build/index.js");
        server.info = Some(crate::mcp::ServerInfo {
            name: "x".into(),
            version: "2.1.0".into(),
            protocol_version: "2025-11-25".into(),
            era: "legacy".into(),
            instructions: None,
        });
        let mut other = server.clone();
        other.info.as_mut().unwrap().version = "2.0.0".into();
        assert_eq!(version(&server, &other), "2.1.0");
        // Both report 2.1.0: the spec tells them apart, unless it is the same.
        assert_eq!(version(&server, &server), "2.1.0");
        let mut newer = server.clone();
        newer.spec = "node new/build/index.js".into();
        assert_eq!(version(&server, &newer), "2.1.0 (node build/index.js)");
    }

    #[test]
    fn nightly_run_dirs_never_reuse_one() {
        let out = tempfile::tempdir().unwrap();
        let first = new_run_dir(out.path());
        std::fs::create_dir_all(&first).unwrap();
        let second = new_run_dir(out.path());
        assert_ne!(first, second);
        assert!(second
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("nightly-"));
    }
}
