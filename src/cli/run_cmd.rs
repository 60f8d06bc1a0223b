//! `mcpeval run`: resolve the config, check the servers, run the trials, write the files.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::args::RunArgs;
use super::exit::{CliError, Exit};
use super::hosts::{
    build_hosts, build_judges, cached, print_cache_note, print_congestion, rate_limited,
};
use super::out::outln;
use super::progress::Progress;
use crate::config::{resolve, RunConfig};
use crate::episode::{chain, Redactor, Side};
use crate::host::aimd::Congestion;
use crate::host::cache::{ResponseCache, CACHE_DIR};
use crate::report::{Collector, LiveReports, Report, REFRESH_EVERY};
use crate::rundir::{
    git_commit, own_cpu_ms, scan_episodes, EpisodeWriter, HostRecord, RunInfo, ServerRecord,
    TableWriter,
};
use crate::runner::{
    self, BudgetGuard, DoneKey, EventSink, Price, RunEvent, RunEventKind, Runner, Server, Spent,
};

/// Run events waiting for the sinks at most (each finished trial's carries its transcript).
const EVENTS_QUEUED: usize = 256;

/// Runs `mcpeval run` and returns the exit code.
pub async fn run_command(args: &RunArgs) -> Result<Exit, CliError> {
    fixed_mmap_threshold();
    run_cancellable(args, CancellationToken::new()).await
}

/// glibc raises its mmap threshold each time a large block is freed, up to 32 MiB, so that
/// polars' short-lived column buffers end up in the heap, whose freed middle is not handed back:
/// a long run's RSS then keeps what it once held (67 instead of 59 MB at 100k demo episodes). A
/// fixed threshold (128 KiB, glibc's starting value) keeps large blocks in mappings of their own,
/// returned when freed. Only for runs: a one-off `compare` of a million episodes is faster
/// without it.
pub(super) fn fixed_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of the allocator, under the allocator's own lock.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
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
    let (baseline, candidate, servers) = preflight(&config).await?;
    let started_at = chrono::Utc::now().to_rfc3339();
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
    let mut info = RunInfo {
        run_id: run_id.clone(),
        mcpeval_version: env!("CARGO_PKG_VERSION").to_owned(),
        status: "running".into(),
        config: config.clone(),
        baseline,
        candidate,
        hosts: hosts
            .iter()
            .map(|h| HostRecord {
                name: h.config.name.clone(),
                model: h.model.id().to_owned(),
                simulated: h.model.is_simulated(),
                program: h.app.as_ref().map(|a| a.settings.program.clone()),
                version: h.app.as_ref().and_then(|a| a.version.clone()),
                args: h.app.as_ref().map(|a| a.settings.args.clone()),
            })
            .collect(),
        judges: judges
            .iter()
            .map(|(name, model)| HostRecord {
                name: name.clone(),
                model: model.id().to_owned(),
                simulated: model.is_simulated(),
                program: None,
                version: None,
                args: None,
            })
            .collect(),
        seed: config.seed,
        trials: config.trials,
        tasks: suite.tasks.iter().map(|t| t.id.clone()).collect(),
        trigger: match (&trigger, &previous) {
            (Some(t), _) => Some(t.summary.clone()),
            (None, Some(p)) => p.trigger.clone(),
            (None, None) => None,
        },
        trigger_changes: match (&trigger, &previous) {
            (Some(t), _) => t.changes.clone(),
            (None, Some(p)) => p.trigger_changes.clone(),
            (None, None) => Vec::new(),
        },
        started_at: previous
            .as_ref()
            .map_or(started_at, |p| p.started_at.clone()),
        finished_at: None,
        git_commit: git_commit(),
        episodes: 0,
        infra_errors: 0,
        runner_cpu_ms: None,
        config_hash: Some(runner::config_hash(&config, &suite.tasks)),
        shard,
        merged_from: Vec::new(),
    };
    info.write(&dir)?;
    let earlier = Earlier::scan(&dir, &config.prices)?;
    let tables = earlier.tables;
    let mut secrets = config.secret_values();
    secrets.extend(judge_secrets);
    let redactor = Redactor::new(secrets.iter().map(String::as_str));
    // Bounded: a consumer that falls behind holds the trials back, not their records in memory.
    let (tx, rx) = mpsc::channel(EVENTS_QUEUED);
    let (budget, budget_reached) = BudgetGuard::new(
        config.budget.clone(),
        config.prices.clone(),
        earlier.spent,
        cancel.clone(),
    );
    // Every episode of the run, folded in as it finishes (and those of an earlier invocation):
    // the live reports' and, at the end, the final comparison's.
    let collector = Arc::new(Mutex::new(earlier.collector));
    let mut sinks: Vec<Box<dyn EventSink>> = vec![
        Box::new(EpisodeWriter::open(&dir)?),
        Box::new(tables),
        Box::new(Progress::new()),
        Box::new(LiveReports::new(
            dir.clone(),
            info.clone(),
            collector.clone(),
            REFRESH_EVERY,
        )),
    ];
    if !config.budget.is_unlimited() {
        sinks.push(Box::new(budget));
    }
    let consumer = tokio::spawn(consume(rx, sinks));
    let ctrl_c = tokio::spawn(watch_ctrl_c(cancel.clone(), tx.clone()));
    let simulated = hosts
        .iter()
        .filter(|h| h.model.is_simulated())
        .map(|h| h.config.name.clone())
        .collect::<Vec<_>>();
    let runner = Runner {
        run_id,
        config,
        suite,
        hosts,
        judges,
        done: earlier.done,
        redactor,
        cancel: cancel.clone(),
        shard,
        servers,
    };
    eprintln!("run directory: {}", dir.display());
    let (_, cancelled) = runner::run(runner, tx).await;
    ctrl_c.abort();
    consumer
        .await
        .context("the event consumer stopped")?
        .context("cannot record episodes")?;
    let collector = std::mem::take(&mut *crate::report::lock_collector(&collector));
    let budget_note = budget_reached.lock().ok().and_then(|r| r.clone());
    info.status = if budget_note.is_some() {
        "budget_reached"
    } else if cancelled {
        "interrupted"
    } else {
        "completed"
    }
    .into();
    info.finished_at = Some(chrono::Utc::now().to_rfc3339());
    info.episodes = collector.episodes();
    info.infra_errors = collector.infra_errors();
    info.runner_cpu_ms = own_cpu_ms();
    info.write(&dir)?;
    let comparison = collector
        .comparison(&info.config.stats, info.seed)
        .context("cannot compare the sides")?;
    drop(collector);
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

/// Starts both servers and lists their tools: a server that will not start fails the run before
/// any trial. The servers are kept for the run's first trials.
async fn preflight(
    config: &RunConfig,
) -> Result<(ServerRecord, ServerRecord, [Option<Server>; 2]), CliError> {
    let (b, c) = tokio::join!(
        Server::connect(&config.baseline),
        Server::connect(&config.candidate)
    );
    let mut records = Vec::new();
    let mut servers = [None, None];
    for (i, (side, result, spec)) in [
        (Side::Baseline, b, &config.baseline),
        (Side::Candidate, c, &config.candidate),
    ]
    .into_iter()
    .enumerate()
    {
        let server = result.map_err(|e| {
            CliError::infra(anyhow::anyhow!(
                "{side} server `{}`: {}",
                spec.display(),
                chain(&e)
            ))
        })?;
        records.push(ServerRecord {
            spec: spec.display(),
            info: Some(server.info.clone()),
            tools: server.tools.iter().map(|t| t.name.to_string()).collect(),
        });
        servers[i] = Some(server);
    }
    let candidate = records.pop().expect("two records");
    let baseline = records.pop().expect("two records");
    Ok((baseline, candidate, servers))
}

/// What a resumed run's directory already holds: the trials done (not run again), what they
/// spent of the budget, their aggregates for the live reports, and the tables' writer, which
/// has their rows and gets the new episodes' as the run goes. Empty for a new run.
struct Earlier {
    done: HashSet<DoneKey>,
    spent: Spent,
    collector: Collector,
    tables: TableWriter,
}

impl Earlier {
    fn scan(dir: &Path, prices: &BTreeMap<String, Price>) -> anyhow::Result<Self> {
        let mut earlier = Self {
            done: HashSet::new(),
            spent: Spent::default(),
            collector: Collector::default(),
            tables: TableWriter::new(dir),
        };
        let mut failed = None;
        scan_episodes(dir, |e| {
            earlier.spent.add(&e, prices);
            earlier.collector.add(e.side, &e);
            earlier.done.insert(DoneKey::of(&e));
            if let Err(e) = earlier.tables.push(e) {
                failed.get_or_insert(e);
            }
        })?;
        match failed {
            Some(e) => Err(e),
            None => Ok(earlier),
        }
    }
}

async fn consume(
    mut rx: mpsc::Receiver<RunEvent>,
    mut sinks: Vec<Box<dyn EventSink>>,
) -> anyhow::Result<()> {
    let mut first_error = None;
    while let Some(event) = rx.recv().await {
        for sink in &mut sinks {
            if let Err(e) = sink.handle(&event) {
                first_error.get_or_insert(e);
            }
        }
    }
    for sink in &mut sinks {
        if let Err(e) = sink.finish() {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// First Ctrl-C: stop starting trials, let those in flight finish. Second: stop now.
async fn watch_ctrl_c(cancel: CancellationToken, tx: mpsc::Sender<RunEvent>) {
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    cancel.cancel();
    let cancelling = RunEvent {
        elapsed: std::time::Duration::ZERO,
        kind: RunEventKind::Cancelling,
    };
    let _ = tx.send(cancelling).await;
    if tokio::signal::ctrl_c().await.is_ok() {
        eprintln!("stopped: the episodes finished so far are in episodes.jsonl");
        std::process::exit(Exit::Interrupted as i32);
    }
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
