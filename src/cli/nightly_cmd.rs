//! `mcpeval nightly`: the library's nightly job (`job::nightly`), run once or on a cron
//! schedule, with its log on stderr and SIGTERM or Ctrl-C as the way to stop it.

use chrono::Utc;

use super::args::NightlyArgs;
use super::out::errln;
use super::run_cmd::Console;
use crate::error::{Exit, Failure};
use crate::history::{self, Schedule};
use crate::job::nightly::{job_end, load, night};
use crate::job::Stop;

/// Runs `mcpeval nightly`: one job now, or one at each fire time of `--schedule`.
pub async fn nightly(args: &NightlyArgs) -> Result<Exit, Failure> {
    crate::memory::fixed_mmap_threshold();
    // A bad config or expression is said now, not at 03:00.
    load(&args.config)?;
    let schedule = match &args.schedule {
        Some(expr) => Some(Schedule::parse(expr)?),
        None => None,
    };
    let writes = &args.writes.to_flags();
    let stop = Stop::default();
    let watcher = tokio::spawn(watch_signals(stop.clone()));
    let result = match &schedule {
        None => night(
            &args.config,
            args.allow_breaking,
            writes,
            &stop,
            &Console,
            &log,
        )
        .await
        .map(|(exit, _)| exit)
        .map_err(Failure::from),
        Some(schedule) => history::run_schedule(
            schedule,
            &stop.finish,
            |_, finish| {
                let stop = Stop {
                    finish,
                    now: stop.now.clone(),
                };
                async move {
                    job_end(
                        night(
                            &args.config,
                            args.allow_breaking,
                            writes,
                            &stop,
                            &Console,
                            &log,
                        )
                        .await,
                    )
                }
            },
            log,
        )
        .await
        .map(|_| Exit::Ok)
        .map_err(Failure::from),
    };
    watcher.abort();
    result
}

/// One line of the nightly log on stderr, with the UTC time.
fn log(line: &str) {
    errln!("[{}] nightly: {line}", history::stamp(Utc::now()));
}

/// SIGTERM or Ctrl-C: stop (a running job's trials in flight finish). A second one: a running
/// job drops its trials in flight too.
async fn watch_signals(stop: Stop) {
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
            stop.finish.cancel();
        } else {
            log("stopping now: the trials in flight are dropped; the episodes finished so far are kept");
            stop.now.cancel();
        }
    }
}
