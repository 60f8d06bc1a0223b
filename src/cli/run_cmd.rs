//! `mcpeval run`: the arguments turned into a [`RunJob`] (config, tasks, trigger, hosts, run
//! directory), its outcome into reports, notes and an exit code.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::args::RunArgs;
use super::exit::{CliError, Exit};
use super::hosts::{
    build_hosts, build_judges, cached, print_cache_note, print_congestion, rate_limited,
};
use super::out::outln;
use super::progress::Progress;
use crate::config::{resolve, RunConfig};
use crate::host::aimd::Congestion;
use crate::host::cache::{ResponseCache, CACHE_DIR};
use crate::job::{RunEnd, RunJob};
use crate::report::Report;
use crate::rundir::RunInfo;
use crate::runner;

/// Runs `mcpeval run` and returns the exit code.
pub async fn run_command(args: &RunArgs) -> Result<Exit, CliError> {
    crate::memory::fixed_mmap_threshold();
    run_cancellable(args, CancellationToken::new()).await
}

/// [`run_command`] with a token that, once cancelled, acts as a first Ctrl-C: no new trial
/// starts, those in flight finish, the reports are written, exit 130 (`mcpeval nightly` cancels
/// it on SIGTERM).
pub(super) async fn run_cancellable(
    args: &RunArgs,
    cancel: CancellationToken,
) -> Result<Exit, CliError> {
    let (config, dir, previous) = match &args.resume {
        Some(dir) => resume_state(dir, args)?,
        None => {
            let config = resolve(&args.to_overrides()).map_err(CliError::usage)?;
            (config, None, None)
        }
    };
    let shard = shard_of(args, previous.as_ref())?;
    let mut suite = super::suites::load(&config.suites, &config.config_source)?;
    let mut trigger = match (&args.trigger, &previous) {
        (Some(path), _) => {
            let diff = super::trigger::read_diff(path)?;
            match super::trigger::apply(&diff, &path.display().to_string(), &mut suite) {
                Some(trigger) => Some(trigger),
                None => return Ok(Exit::Ok),
            }
        }
        (None, Some(info)) => {
            // A resumed run keeps the tasks its trigger picked.
            suite.tasks.retain(|t| info.tasks.contains(&t.id));
            None
        }
        (None, None) => None,
    };
    // The cache lives beside the run directory, in the results folder it sits in: `results/`
    // by default, the parent of `--out DIR` or of a resumed run's directory.
    let results_dir = args
        .resume
        .as_deref()
        .or(args.out.as_deref())
        .and_then(Path::parent)
        .map(|p| match p.as_os_str().is_empty() {
            true => PathBuf::from("."),
            false => p.to_path_buf(),
        })
        .unwrap_or_else(|| config.out_dir.clone());
    let cache = (!args.no_cache).then(|| Arc::new(ResponseCache::new(results_dir.join(CACHE_DIR))));
    let hosts = rate_limited(cached(build_hosts(&config)?, cache.as_ref()));
    let congestion: Vec<(String, Arc<Congestion>)> = hosts
        .iter()
        .filter_map(|h| Some((h.config.name.clone(), h.congestion.clone()?)))
        .collect();
    let (judges, judge_secrets) = build_judges(&config, &suite)?;
    let preflight = crate::job::preflight(&config)
        .await
        .map_err(CliError::infra)?;
    let run_id = match &previous {
        Some(info) => info.run_id.clone(),
        None => crate::rundir::new_run_id(&config),
    };
    let dir = match dir {
        Some(dir) => dir,
        None => {
            crate::rundir::create(args.out.as_deref(), &config, &run_id).map_err(|e| match e {
                crate::rundir::CreateError::HoldsRun(_) => CliError::usage(e),
                crate::rundir::CreateError::Create { .. } => CliError::infra(e),
            })?
        }
    };
    if args.auto_trigger {
        let diff = match super::trigger::auto(&config, &dir, args.allow_breaking).await? {
            Ok(diff) => diff,
            Err(exit) => return Ok(exit),
        };
        let source = dir.join("contract").join("diff.json");
        match super::trigger::apply(&diff, &source.display().to_string(), &mut suite) {
            Some(t) => trigger = Some(t),
            None => return Ok(Exit::Ok),
        }
    }
    let design = crate::report::RunDesign {
        tasks: suite.tasks.iter().map(|t| (t.kind, t.set)).collect(),
        hosts: hosts.len(),
    };
    if let Ok(Some(line)) = design.warning(&config.stats, u64::from(config.trials)) {
        eprintln!("{line}");
    }
    let simulated = hosts
        .iter()
        .filter(|h| h.model.is_simulated())
        .map(|h| h.config.name.clone())
        .collect::<Vec<_>>();
    let job = RunJob {
        run_id,
        config,
        suite,
        hosts,
        judges,
        judge_secrets,
        preflight,
        dir: dir.clone(),
        previous,
        trigger: trigger.map(|t| (t.summary, t.changes)),
        shard,
    };
    eprintln!("run directory: {}", dir.display());
    let RunEnd {
        info,
        comparison,
        cancelled,
        budget_note,
    } = job.execute(cancel, vec![Box::new(Progress::new())]).await?;
    let report = Report {
        info: &info,
        baseline_run: None,
        comparison: &comparison,
    };
    let exit = super::compare_cmd::publish(&report, &dir)?;
    print_notes(&info, &dir, &simulated);
    print_congestion(&congestion);
    print_cache_note(cache.as_deref());
    if let Some(note) = budget_note {
        eprintln!(
            "{note}: stopped scheduling, finished the trials in flight; the reports cover the {} \
             episodes recorded",
            info.episodes
        );
        return Ok(exit);
    }
    if cancelled {
        eprintln!(
            "interrupted: {} episodes recorded; finish with: mcpeval run --resume {}",
            info.episodes,
            dir.display()
        );
        return Ok(Exit::Interrupted);
    }
    Ok(shard_exit(shard, exit))
}

/// `--shard I/N`, or the shard of the run `--resume` finishes (which keeps it).
fn shard_of(args: &RunArgs, previous: Option<&RunInfo>) -> Result<Option<runner::Shard>, CliError> {
    let Some(previous) = previous else {
        return Ok(args.shard);
    };
    match (args.shard, previous.shard) {
        (Some(given), kept) if Some(given) != kept => Err(CliError::usage(anyhow::anyhow!(
            "--shard {given} does not match the run being resumed ({}): --resume keeps the \
             run's shard, leave --shard out",
            kept.map_or("not sharded".to_owned(), |s| format!("shard {s}"))
        ))),
        _ => Ok(previous.shard),
    }
}

/// A shard of several judges only part of the episodes: its regression verdict is left to
/// `mcpeval merge` (exit 0), so that a CI matrix or an Indexed Job sees the shard succeed.
fn shard_exit(shard: Option<runner::Shard>, exit: Exit) -> Exit {
    match shard {
        Some(s) if s.count > 1 => {
            eprintln!(
                "shard {s}: the reports cover this shard's episodes only; join the shards with \
                 `mcpeval merge RUN_DIR... --out DIR` for the run's verdict"
            );
            if exit == Exit::Regression {
                Exit::Ok
            } else {
                exit
            }
        }
        _ => exit,
    }
}

/// The config, directory and record of a run to finish (`--resume DIR`).
fn resume_state(
    dir: &Path,
    args: &RunArgs,
) -> Result<(RunConfig, Option<PathBuf>, Option<RunInfo>), CliError> {
    let info = RunInfo::read(dir).map_err(CliError::usage)?;
    let mut config = info.config.clone();
    // Secrets (server env, headers) are not stored: read them again from the config file.
    let source = PathBuf::from(&config.config_source);
    if source.is_file() {
        let again = resolve(&crate::config::Overrides {
            config: Some(source),
            ..Default::default()
        })
        .map_err(CliError::usage)?;
        // Literal host header values are written as `[REDACTED]`: take them from the file.
        for host in &mut config.hosts {
            if let Ok(fresh) = crate::config::resolve_extra_host(&again, &host.name) {
                host.settings.headers = fresh.settings.headers;
            }
        }
        config.baseline.env = again.baseline.env;
        config.baseline.headers = again.baseline.headers;
        config.candidate.env = again.candidate.env;
        config.candidate.headers = again.candidate.headers;
    }
    if let Some(c) = args.concurrency {
        config.concurrency = c.max(1);
    }
    Ok((config, Some(dir.to_path_buf()), Some(info)))
}

fn print_notes(info: &RunInfo, dir: &Path, simulated: &[String]) {
    outln!(
        "{} episodes ({} infrastructure errors) in {}",
        info.episodes,
        info.infra_errors,
        dir.display()
    );
    if !simulated.is_empty() {
        outln!(
            "note: host {} is the embedded simulated model, not a real LLM",
            simulated.join(", ")
        );
    }
}
