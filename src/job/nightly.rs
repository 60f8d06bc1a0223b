//! One nightly job: a run of the tasks the contract diff triggers (or of the whole suite), its
//! comparison, and a drift check appended to the history. `mcpeval nightly` runs it once or on a
//! cron schedule.

use std::path::{Path, PathBuf};

use super::{Face, JobError, RunOutcome, RunRequest, Skipped, Stop};
use crate::config::{resolve, NightlyFile, NightlySettings, Overrides, RunConfig, WriteFlags};
use crate::error::{Coded, Exit};
use crate::history::{self, JobEnd};
use crate::rundir::RunStatus;

/// Reads the run config and its `[nightly]` settings; an error is the user's (exit 2).
pub fn load(path: &Path) -> Result<(RunConfig, NightlySettings), JobError> {
    let config = resolve(&Overrides {
        config: Some(path.to_path_buf()),
        ..Overrides::default()
    })?;
    let settings = NightlyFile::read(path)?
        .unwrap_or_default()
        .resolve(&config.out_dir);
    Ok((config, settings))
}

/// What the job says to do instead of stopping at a candidate that breaks clients.
const BREAKING_ADVICE: &str =
    "pass --allow-breaking to `mcpeval nightly` or set [nightly] allow_breaking = true to run anyway";

/// One nightly job; returns the run's exit code and a line saying what was recorded. `log`
/// says what the job does, a line at a time. `allow_breaking` (`--allow-breaking`) runs the
/// triggered tasks although the candidate breaks clients, as `[nightly] allow_breaking` does.
pub async fn night(
    config_path: &Path,
    allow_breaking: bool,
    writes: &WriteFlags,
    stop: &Stop,
    face: &dyn Face,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(Exit, String), JobError> {
    if stop.finish.is_cancelled() {
        return Ok((Exit::Interrupted, "not started: stop requested".into()));
    }
    let (config, mut settings) = load(config_path)?;
    settings.allow_breaking |= allow_breaking;
    // An unreadable history stops the job before an eval is spent on it.
    let history = history::read(&settings.history)?;
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
    let request = request(config_path, &dir, &settings, writes);
    let tokens = Stop {
        finish: stop.finish.child_token(),
        now: stop.now.child_token(),
    };
    let finished = match super::run(&request, tokens, face).await? {
        RunOutcome::Skipped(why) => {
            let note = match why {
                Skipped::NothingTriggered => {
                    "no contract change affects models: nothing run, nothing appended"
                }
                Skipped::Breaking => {
                    "the candidate breaks clients: the run stopped before its trials, nothing \
                     appended (--allow-breaking or [nightly] allow_breaking = true runs it)"
                }
            };
            log(note);
            return Ok((RunOutcome::Skipped(why).exit(), note.into()));
        }
        RunOutcome::Finished(finished) => finished,
    };
    let exit = finished.exit();
    let info = &finished.end.info;
    if info.status != RunStatus::Completed || exit == Exit::Infra {
        let note = format!(
            "run {} ended `{}` (exit {}): not recorded in the history",
            info.run_id,
            info.status,
            exit.code()
        );
        log(&note);
        return Ok((exit, note));
    }
    let note = history::record(info, &dir, &history, &settings, log)?;
    log(&note);
    Ok((exit, note))
}

/// The run a nightly job asks for: into its own new directory, with no response cache
/// (tonight's model must answer tonight: a cached answer would hide drift), triggered by the
/// contract diff unless `[nightly] whole_suite`.
fn request(
    config_path: &Path,
    dir: &Path,
    settings: &NightlySettings,
    writes: &WriteFlags,
) -> RunRequest {
    RunRequest {
        follow_renames: None,
        overrides: Overrides {
            config: Some(PathBuf::from(config_path)),
            writes: writes.clone(),
            ..Overrides::default()
        },
        out: Some(dir.to_path_buf()),
        auto_trigger: !settings.whole_suite,
        allow_breaking: settings.allow_breaking,
        breaking_advice: Some(BREAKING_ADVICE.to_owned()),
        no_cache: true,
        ..RunRequest::default()
    }
}

/// A job's end as the schedule logs it.
pub fn job_end(result: Result<(Exit, String), JobError>) -> JobEnd {
    match result {
        Ok((exit, note)) => JobEnd {
            exit: exit.code(),
            summary: note,
        },
        Err(e) => JobEnd {
            exit: e.exit().code(),
            summary: format!("failed: {:#}", anyhow::Error::new(e)),
        },
    }
}
