//! `mcpeval nightly`: one nightly job (a triggered `mcpeval run`, its comparison and a drift
//! check appended to the history), run once or on a cron schedule.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::Context;
use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use super::args::{NightlyArgs, RunArgs};
use super::exit::{CliError, Exit};
use crate::config::{resolve, Overrides, RunConfig};
use crate::episode::{Episode, Side};
use crate::history::{
    self, DriftOutcome, HistoryRow, JobEnd, NightlyFile, NightlySettings, RunMeta, Schedule,
};
use crate::report::{compare, SUMMARY_MD};
use crate::rundir::{read_episodes, RunInfo, ServerRecord};

/// Runs `mcpeval nightly`: one job now, or one at each fire time of `--schedule`.
pub async fn nightly(args: &NightlyArgs) -> Result<Exit, CliError> {
    // A bad config or expression is said now, not at 03:00.
    load(&args.config)?;
    let schedule = match &args.schedule {
        Some(expr) => Some(Schedule::parse(expr).map_err(CliError::usage)?),
        None => None,
    };
    let stop = CancellationToken::new();
    let watcher = tokio::spawn(watch_signals(stop.clone()));
    let result = match &schedule {
        None => job(&args.config, &stop).await.map(|(exit, _)| exit),
        Some(schedule) => history::run_schedule(
            schedule,
            &stop,
            |_, stop| async move { job_end(job(&args.config, &stop).await) },
            log,
        )
        .await
        .map(|_| Exit::Ok)
        .map_err(CliError::usage),
    };
    watcher.abort();
    result
}

/// One line of the nightly log on stderr, with the UTC time.
fn log(line: &str) {
    eprintln!("[{}] nightly: {line}", history::stamp(Utc::now()));
}

/// SIGTERM or Ctrl-C: stop (a running job's trials in flight finish). A second one: stop now.
async fn watch_signals(stop: CancellationToken) {
    #[cfg(unix)]
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => Some(term),
        Err(e) => {
            log(&format!(
                "cannot watch SIGTERM ({e}): only Ctrl-C stops cleanly"
            ));
            None
        }
    };
    for time in 0..2 {
        #[cfg(unix)]
        let terminated = async {
            match term.as_mut() {
                Some(t) => {
                    t.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        #[cfg(not(unix))]
        let terminated = std::future::pending::<()>();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminated => {}
        }
        if time == 0 {
            log("stop requested: a running job finishes its in-flight trials first");
            stop.cancel();
        } else {
            log("stopped now: the episodes finished so far are in the run directory");
            std::process::exit(Exit::Interrupted as i32);
        }
    }
}

/// The run config and its `[nightly]` settings; errors are the user's (exit 2).
fn load(path: &Path) -> Result<(RunConfig, NightlySettings), CliError> {
    let config = resolve(&Overrides {
        config: Some(path.to_path_buf()),
        ..Overrides::default()
    })
    .map_err(CliError::usage)?;
    let settings = NightlyFile::read(path)
        .map_err(|e| CliError::usage(anyhow::anyhow!(e)))?
        .unwrap_or_default()
        .resolve(&config.out_dir);
    Ok((config, settings))
}

fn job_end(result: Result<(Exit, String), CliError>) -> JobEnd {
    match result {
        Ok((exit, note)) => JobEnd {
            exit: exit as u8,
            summary: note,
        },
        Err(e) => JobEnd {
            exit: e.exit as u8,
            summary: format!("failed: {:#}", e.error),
        },
    }
}

/// One nightly job; returns the run's exit code and a line saying what was recorded.
async fn job(config_path: &Path, stop: &CancellationToken) -> Result<(Exit, String), CliError> {
    if stop.is_cancelled() {
        return Ok((Exit::Interrupted, "not started: stop requested".into()));
    }
    let (config, settings) = load(config_path)?;
    // An unreadable history stops the job before an eval is spent on it.
    let history = history::read(&settings.history).map_err(CliError::usage)?;
    let dir = new_run_dir(&config.out_dir)?;
    log(&format!(
        "running {} into {}",
        if settings.whole_suite {
            "the whole suite"
        } else {
            "the tasks the contract diff triggers"
        },
        dir.display()
    ));
    let args = RunArgs {
        config: Some(config_path.to_path_buf()),
        out: Some(dir.clone()),
        auto_trigger: !settings.whole_suite,
        // Tonight's model must answer tonight: a cached answer would hide drift.
        no_cache: true,
        ..RunArgs::default()
    };
    let exit = super::run_cmd::run_cancellable(&args, stop.child_token()).await?;
    let info = match RunInfo::read(&dir) {
        Ok(info) => info,
        Err(_) => {
            let note = match exit {
                Exit::Ok => "no contract change affects models: nothing run, nothing appended",
                _ => "the run stopped before its trials: nothing appended",
            };
            log(note);
            return Ok((exit, note.into()));
        }
    };
    if info.status != "completed" || exit == Exit::Infra {
        let note = format!(
            "run {} ended `{}` (exit {}): not recorded in the history",
            info.run_id, info.status, exit as u8
        );
        log(&note);
        return Ok((exit, note));
    }
    let episodes = read_episodes(&dir).map_err(CliError::infra)?;
    let note = record(&info, &dir, &episodes, &history, &settings)?;
    log(&note);
    Ok((exit, note))
}

/// Appends tonight's comparison and drift rows to the history and the drift section to
/// summary.md; returns what was done.
fn record(
    info: &RunInfo,
    dir: &Path,
    episodes: &[Episode],
    earlier: &[HistoryRow],
    settings: &NightlySettings,
) -> Result<String, CliError> {
    let (baseline, candidate): (Vec<&Episode>, Vec<&Episode>) =
        episodes.iter().partition(|e| e.side == Side::Baseline);
    let comparison = compare(baseline, candidate, &info.config.stats, info.seed)
        .context("cannot compare the sides")?;
    let meta = RunMeta {
        date: utc_date(&info.started_at),
        run_id: info.run_id.clone(),
        run_dir: std::path::absolute(dir)
            .unwrap_or_else(|_| dir.to_path_buf())
            .display()
            .to_string(),
        baseline_version: version(&info.baseline),
        candidate_version: version(&info.candidate),
    };
    let mut rows: Vec<HistoryRow> = comparison
        .rows
        .iter()
        .filter(|r| r.in_history())
        .map(|r| HistoryRow::from_comparison(&meta, history::CANDIDATE, None, r))
        .collect();
    let candidate_rows = rows.len();
    let (outcome, drift_rows) = drift(info, episodes, earlier, &meta)?;
    rows.extend(drift_rows);
    let total = history::append(&settings.history, &rows).map_err(|e| match e {
        history::HistoryError::Read { .. } => CliError::usage(e),
        history::HistoryError::Write { .. } => CliError::infra(e),
    })?;
    let regressed: HashSet<(String, String)> = comparison
        .gated_regressions()
        .map(|r| (r.task_id.clone(), r.host.clone()))
        .collect();
    add_to_summary(dir, &history::section(&outcome, &regressed))?;
    let drift_note = match &outcome {
        DriftOutcome::Compared {
            reference, moved, ..
        } => {
            let tasks = history::moved_tasks(moved);
            if tasks.is_empty() {
                format!("no baseline drift against run {}", reference.run_id)
            } else {
                let names: Vec<String> = tasks.iter().map(|(t, h)| format!("{t} ({h})")).collect();
                log(&format!(
                    "baseline drift against run {} on {}: {}",
                    reference.run_id,
                    names.join(", "),
                    history::MAY_BE_THE_MODEL
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
    episodes: &[Episode],
    earlier: &[HistoryRow],
    meta: &RunMeta,
) -> Result<(DriftOutcome, Vec<HistoryRow>), CliError> {
    let mut missing = Vec::new();
    for reference in history::references(earlier, &meta.baseline_version, &meta.run_id) {
        let reference_episodes = match read_episodes(&reference.run_dir) {
            Ok(eps) if !eps.is_empty() => eps,
            _ => {
                log(&format!(
                    "drift: run {} is gone from `{}`; trying an older one",
                    reference.run_id,
                    reference.run_dir.display()
                ));
                missing.push(reference);
                continue;
            }
        };
        let compared = history::compare_baselines(
            &reference_episodes,
            episodes,
            &info.config.stats,
            info.seed,
        )
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
            .map(|r| {
                HistoryRow::from_comparison(&drift_meta, history::DRIFT, Some(&reference.run_id), r)
            })
            .collect();
        let outcome = DriftOutcome::Compared {
            version: meta.baseline_version.clone(),
            tasks: c.tasks.len(),
            moved: history::moved_rows(&c),
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

/// The server's own version (serverInfo.version), else its spec.
fn version(server: &ServerRecord) -> String {
    server
        .info
        .as_ref()
        .map(|i| i.version.clone())
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| server.spec.clone())
}

/// `2026-11-30T03:00:00Z` from run.json's RFC 3339 start time (kept as is if it is not one).
fn utc_date(started_at: &str) -> String {
    DateTime::parse_from_rfc3339(started_at)
        .map(|t| history::stamp(t.with_timezone(&Utc)))
        .unwrap_or_else(|_| started_at.to_owned())
}

/// `<out_dir>/nightly-<UTC time>`, with `-2`, `-3`, … if that is taken.
fn new_run_dir(out_dir: &Path) -> Result<PathBuf, CliError> {
    let base = format!("nightly-{}", Utc::now().format("%Y%m%dT%H%M%SZ"));
    let mut dir = out_dir.join(&base);
    let mut n = 1;
    while dir.exists() {
        n += 1;
        dir = out_dir.join(format!("{base}-{n}"));
    }
    Ok(dir)
}

/// Appends the drift section to summary.md (through a temporary file and a rename) and to
/// `$GITHUB_STEP_SUMMARY`, which the run has already written its summary into.
fn add_to_summary(dir: &Path, section: &str) -> Result<(), CliError> {
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
        };
        assert_eq!(version(&server), "node build/index.js");
        server.info = Some(crate::mcp::ServerInfo {
            name: "x".into(),
            version: "2.1.0".into(),
            protocol_version: "2025-11-25".into(),
            era: "legacy".into(),
            instructions: None,
        });
        assert_eq!(version(&server), "2.1.0");
    }

    #[test]
    fn nightly_run_dirs_never_reuse_one() {
        let out = tempfile::tempdir().unwrap();
        let first = new_run_dir(out.path()).unwrap();
        std::fs::create_dir_all(&first).unwrap();
        let second = new_run_dir(out.path()).unwrap();
        assert_ne!(first, second);
        assert!(second
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("nightly-"));
    }
}
