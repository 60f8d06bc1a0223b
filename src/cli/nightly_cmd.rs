//! `mcpeval nightly`: one nightly job (a triggered `mcpeval run`, its comparison and a drift
//! check appended to the history), run once or on a cron schedule.

use std::path::Path;

use chrono::Utc;
use tokio_util::sync::CancellationToken;

use super::args::{NightlyArgs, RunArgs};
use super::exit::{CliError, Exit};
use crate::config::{resolve, Overrides, RunConfig};
use crate::history::{self, JobEnd, NightlyFile, NightlySettings, Schedule};
use crate::rundir::RunInfo;

/// Runs `mcpeval nightly`: one job now, or one at each fire time of `--schedule`.
pub async fn nightly(args: &NightlyArgs) -> Result<Exit, CliError> {
    crate::memory::fixed_mmap_threshold();
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
    let dir = history::new_run_dir(&config.out_dir);
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
    let note = history::record(&info, &dir, &history, &settings, &log).map_err(|e| match e {
        history::RecordError::History(e @ history::HistoryError::Read { .. }) => CliError::usage(e),
        other => CliError::infra(other),
    })?;
    log(&note);
    Ok((exit, note))
}
