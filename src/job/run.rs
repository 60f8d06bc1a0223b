//! A run job: what `mcpeval run` (and each `mcpeval nightly` job) does between resolving its
//! arguments and printing the outcome: check the servers, record `run.json`, run the trials
//! through the event sinks (episodes, live reports, budget), compare the sides, and write the
//! episode tables from the episodes on disk.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::record::{Recorded, Recording};
use crate::analysis::adaptive::Design;
use crate::analysis::AdaptivePolicy;
use crate::analysis::{Collector, Comparison, Outcome};
use crate::config::RunConfig;
use crate::contract::tokens::Encoding;
use crate::episode::{Driver, Redactor, Side};
use crate::error::chain;
use crate::host::Model;
use crate::report::{LiveReports, REFRESH_EVERY};
use crate::rundir::{
    git_commit, own_cpu_ms, rebuild_tables, scan_episodes, scan_retried, set_aside_infra_errors,
    EpisodeWriter, HostRecord, RunInfo, RunStatus, ServerRecord, Shard, StoppedHostRecord,
    FORMAT_VERSION,
};
use crate::runner::{
    self, BudgetGuard, DoneKey, EventSink, HostRuntime, Ran, RunEvent, RunEventKind, Runner,
    Server, Spent, StoppedHost, StoppingRule,
};
use crate::suite::Suite;

/// Run events waiting for the sinks at most (each finished trial's carries its transcript).
const EVENTS_QUEUED: usize = 256;

/// How a run is asked to stop: `finish` lets the trials in flight finish and no new one start
/// (a first Ctrl-C, SIGTERM, a nightly stop); `now` drops the trials in flight too (a second
/// one). Either way the episodes finished are kept, and the run's files written from them.
#[derive(Debug, Clone, Default)]
pub struct Stop {
    pub finish: CancellationToken,
    pub now: CancellationToken,
}

/// Both servers started and listed before any trial, kept for the run's first trials.
pub struct Preflight {
    pub baseline: ServerRecord,
    pub candidate: ServerRecord,
    servers: [Option<Server>; 2],
}

/// A server that would not start or list its tools before the run.
#[derive(Debug, thiserror::Error)]
#[error("{side} server `{server}`: {reason}")]
pub struct PreflightError {
    pub side: Side,
    pub server: String,
    /// What went wrong, with its causes.
    pub reason: String,
}

impl Preflight {
    /// The tools each side listed: baseline, candidate.
    pub fn tools(&self) -> (&[rmcp::model::Tool], &[rmcp::model::Tool]) {
        let of = |i: usize| self.servers[i].as_ref().map_or(&[][..], |s| &s.tools[..]);
        (of(0), of(1))
    }
}

/// Starts both servers and lists their tools; the error names the side that will not start.
/// With a `recording` (`run --record`), they record into its recorders from the start.
pub async fn preflight(
    config: &RunConfig,
    recording: Option<&Recording>,
) -> Result<Preflight, PreflightError> {
    let [b, c] = recording.map_or([None, None], Recording::sides);
    let (b, c) = tokio::join!(
        Server::connect(&config.baseline, b.as_ref()),
        Server::connect(&config.candidate, c.as_ref())
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
        let server = result.map_err(|e| PreflightError {
            side,
            server: spec.display(),
            reason: chain(&e),
        })?;
        records.push(ServerRecord {
            spec: spec.display(),
            info: Some(server.info.clone()),
            tools: server.tools.iter().map(|t| t.name.to_string()).collect(),
            // Counted while the trials run (see `run_trials`): building the tokenizer takes
            // ~0.2 s, which a run's start should not wait for.
            tool_tokens: None,
            tools_ttl_ms: server.tools_ttl_ms,
        });
        servers[i] = Some(server);
    }
    let candidate = records.pop().expect("two records");
    let baseline = records.pop().expect("two records");
    Ok(Preflight {
        baseline,
        candidate,
        servers,
    })
}

/// The tool list's `o200k_base` tokens, as `tokens.json` counts a snapshot's, for `run.json`
/// (the one tokenizer the report reads: building the other would cost start-up time).
fn tool_tokens(tools: &[rmcp::model::Tool]) -> BTreeMap<String, u64> {
    let mut tools: Vec<serde_json::Value> = (tools.iter())
        .filter_map(|t| serde_json::to_value(t).ok())
        .collect();
    // In the snapshot's order, so that the count is the one its tokens.json records.
    tools.sort_by_cached_key(|t| t.get("name").map(ToString::to_string));
    let count = Encoding::O200k.count(&crate::contract::tokens::list_text(&tools));
    BTreeMap::from([(Encoding::O200k.name().to_owned(), count)])
}

/// Everything a run needs, resolved: the config, the tasks, the hosts and judges built, the
/// servers checked, and its directory (new, or the one `--resume` finishes).
pub struct RunJob {
    pub run_id: String,
    pub config: RunConfig,
    pub suite: Suite,
    pub hosts: Vec<HostRuntime>,
    pub judges: BTreeMap<String, Arc<dyn Model>>,
    /// The models of the simulated users the tasks name (`user.host`), by that spec.
    pub users: BTreeMap<String, Arc<dyn Model>>,
    /// Secret values the judges' and users' settings hold (redacted from transcripts with the
    /// config's).
    pub judge_secrets: Vec<String>,
    pub preflight: Preflight,
    pub dir: PathBuf,
    /// `run.json` of the run being resumed.
    pub previous: Option<RunInfo>,
    /// The trigger's one-line summary and its changes, when a contract diff picked the tasks.
    pub trigger: Option<super::Triggered>,
    pub shard: Option<Shard>,
    /// The models of the tasks' `sampling: {host}`, by host spec (src/job/samplers.rs).
    pub samplers: BTreeMap<String, Arc<dyn Model>>,
    /// `--record DIR`: each side's server traffic, written into cassettes when the trials end.
    pub recording: Option<Recording>,
    /// The call tasks that use a tool only the candidate lists (the pre-flight's lists): they
    /// run on the candidate alone.
    pub added: Vec<super::added::AddedToolTask>,
}

/// How a run ended: its final `run.json` and the comparison of its sides.
pub struct RunEnd {
    pub info: RunInfo,
    pub comparison: Comparison,
    /// Cut short by Ctrl-C (or the caller's token).
    pub cancelled: bool,
    /// Why the budget stopped the run, when it did.
    pub budget_note: Option<String>,
    /// The hosts the run stopped sending trials to (their breakers opened).
    pub stopped: Vec<StoppedHost>,
    /// The cassettes written (`--record`).
    pub recorded: Vec<Recorded>,
    /// Why the cassettes could not be written, when they could not.
    pub record_error: Option<String>,
}

impl RunJob {
    /// `run.json` as the run starts.
    fn info(&self) -> RunInfo {
        let (config, previous) = (&self.config, self.previous.as_ref());
        let record = |name: &str, driver: &Driver| HostRecord {
            name: name.to_owned(),
            model: driver.id(),
            simulated: driver.is_simulated(),
            program: driver.app().map(|a| a.settings.program.clone()),
            version: driver.app().and_then(|a| a.version.clone()),
            args: driver.app().map(|a| a.settings.args.clone()),
            notes: Vec::new(),
        };
        let task_hashes = crate::rundir::task_hashes(&self.suite.tasks);
        RunInfo {
            run_id: self.run_id.clone(),
            format_version: FORMAT_VERSION.to_owned(),
            mcpeval_version: env!("CARGO_PKG_VERSION").to_owned(),
            status: RunStatus::Running,
            config: config.clone(),
            baseline: self.preflight.baseline.clone(),
            candidate: self.preflight.candidate.clone(),
            hosts: self
                .hosts
                .iter()
                .map(|h| record(&h.config.name, &h.driver))
                .collect(),
            judges: self
                .judges
                .iter()
                .map(|(n, m)| record(n, &Driver::Agent(m.clone())))
                .collect(),
            users: self
                .users
                .iter()
                .map(|(n, m)| record(n, &Driver::Agent(m.clone())))
                .collect(),
            seed: config.seed,
            trials: config.trials,
            tasks: self.suite.tasks.iter().map(|t| t.id.clone()).collect(),
            task_hashes: task_hashes.0,
            task_part_hashes: task_hashes.1,
            call_trials: (self.suite.tasks.iter())
                .filter_map(|t| Some((t.id.clone(), t.trials.filter(|_| !t.kind.has_model())?)))
                .collect(),
            trigger: match (&self.trigger, previous) {
                (Some(t), _) => Some(t.summary.clone()),
                (None, Some(p)) => p.trigger.clone(),
                (None, None) => None,
            },
            trigger_changes: match (&self.trigger, previous) {
                (Some(t), _) => t.changes.clone(),
                (None, Some(p)) => p.trigger_changes.clone(),
                (None, None) => Vec::new(),
            },
            trigger_texts: match (&self.trigger, previous) {
                (Some(t), _) => t.texts.clone(),
                (None, Some(p)) => p.trigger_texts.clone(),
                (None, None) => Vec::new(),
            },
            started_at: previous
                .map_or_else(|| chrono::Utc::now().to_rfc3339(), |p| p.started_at.clone()),
            finished_at: None,
            git_commit: git_commit(),
            episodes: 0,
            infra_errors: 0,
            runner_cpu_ms: None,
            config_hash: Some(crate::rundir::config_hash(config, &self.suite.tasks)),
            shard: self.shard,
            merged_from: Vec::new(),
            stopped_hosts: Vec::new(),
            estimate: None,
            candidate_only_tasks: self.added.iter().map(|t| t.id.clone()).collect(),
            trigger_diff: match (&self.trigger, previous) {
                (Some(t), _) => Some(t.path.clone()),
                (None, Some(p)) => p.trigger_diff.clone(),
                (None, None) => None,
            },
        }
    }

    /// Runs the trials not yet done. `sinks` (e.g. a progress bar) see every run event after
    /// the run's own (the episode and table writers, the live reports, the budget). A first
    /// Ctrl-C (or `stop.finish`) stops new trials and lets those in flight finish; a second
    /// (or `stop.now`) drops those in flight too.
    pub async fn execute(
        self,
        stop: Stop,
        sinks: Vec<Box<dyn EventSink>>,
    ) -> anyhow::Result<RunEnd> {
        let dir = self.dir.clone();
        let ended = self.run_trials(stop, sinks).await;
        if ended.is_err() {
            mark_failed(&dir);
        }
        ended
    }

    async fn run_trials(
        self,
        stop: Stop,
        sinks: Vec<Box<dyn EventSink>>,
    ) -> anyhow::Result<RunEnd> {
        let Stop {
            finish: cancel,
            now,
        } = stop;
        let info = self.info();
        let candidate_only = self.added.iter().map(|t| t.index).collect();
        let dir = self.dir;
        info.write(&dir)?;
        let lists = {
            let (b, c) = self.preflight.tools();
            [b.to_vec(), c.to_vec()]
        };
        let counting = tokio::task::spawn_blocking(move || lists.map(|l| tool_tokens(&l)));
        let config = self.config;
        let earlier = Earlier::scan(&dir, &config)?;
        let mut secrets = config.secret_values();
        secrets.extend(self.judge_secrets);
        let redactor = Redactor::new(secrets.iter().map(String::as_str));
        // Bounded: a consumer that falls behind holds the trials back, not their records in
        // memory.
        let (tx, rx) = mpsc::channel(EVENTS_QUEUED);
        let (budget, budget_reached) = BudgetGuard::new(
            config.budget.clone(),
            config.prices.clone(),
            earlier.spent,
            cancel.clone(),
        );
        let policy = stopping_rule(&config, &earlier.collector, &self.hosts, &self.suite)?;
        // Every episode of the run, folded in as it finishes (and those of an earlier
        // invocation): the live reports' and, at the end, the final comparison's.
        let collector = Arc::new(Mutex::new(earlier.collector));
        let mut all: Vec<Box<dyn EventSink>> = vec![
            Box::new(EpisodeWriter::open(&dir)?),
            Box::new(LiveReports::new(
                dir.clone(),
                info.clone(),
                collector.clone(),
                REFRESH_EVERY,
            )),
        ];
        if !config.budget.is_unlimited() {
            all.push(Box::new(budget));
        }
        all.extend(sinks);
        let consumer = tokio::spawn(consume(rx, all));
        let signals = tokio::spawn(watch_signals(cancel.clone(), now.clone(), tx.clone()));
        // Kept to ask what they had to change on the way, once the trials are done.
        let models: Vec<Option<Arc<dyn Model>>> = self
            .hosts
            .iter()
            .map(|h| match &h.driver {
                Driver::Agent(model) => Some(model.clone()),
                Driver::App(_) | Driver::Direct => None,
            })
            .collect();
        // A stale list offers the candidate's trials the baseline's names: they are graded by
        // the tasks as written, and `[renames]` are not followed (docs/hosts.md).
        let candidate_tasks = match config.stale_list {
            true => None,
            false => self.suite.renamed_for_candidate(&config.renames),
        };
        let stale_list =
            (config.stale_list).then(|| runner::StaleList::new(self.preflight.tools().0.to_vec()));
        let recording = self.recording;
        let cassette_redactor = redactor.clone();
        let runner = Runner {
            candidate_tasks,
            candidate_only,
            run_id: self.run_id,
            config,
            suite: self.suite,
            hosts: self.hosts,
            judges: self.judges,
            users: self.users,
            done: earlier.done,
            earlier_attempts: earlier.attempts,
            earlier_user_scripts: earlier.user_scripts,
            redactor,
            cancel: cancel.clone(),
            abort: now,
            shard: self.shard,
            servers: self.preflight.servers,
            recorders: recording.as_ref().map_or([None, None], Recording::sides),
            policy,
            samplers: self.samplers,
            stale_list,
        };
        let ran = runner::run(runner, tx).await;
        // Written once the trials are over, however they ended: a run cut short keeps what its
        // servers answered.
        let recorded = recording.map(|r| r.write(&cassette_redactor));
        let notes: Vec<Vec<String>> = models
            .iter()
            .map(|m| m.as_ref().map_or_else(Vec::new, |m| m.notes()))
            .collect();
        signals.abort();
        consumer
            .await
            .context("the event consumer stopped")?
            .context("cannot record episodes")?;
        let collector = std::mem::take(&mut *crate::report::lock_collector(&collector));
        let budget_note = budget_reached.lock().ok().and_then(|r| r.clone());
        let mut info = info;
        for (host, notes) in info.hosts.iter_mut().zip(notes) {
            host.notes = notes;
        }
        if let Ok([baseline, candidate]) = counting.await {
            info.baseline.tool_tokens = Some(baseline);
            info.candidate.tool_tokens = Some(candidate);
        }
        let mut end = finish(&dir, info, collector, ran, budget_note).await?;
        // A cassette that cannot be written is an infrastructure failure of the run (exit 3),
        // which keeps its verdict and reports.
        match recorded {
            Some(Ok(recorded)) => end.recorded = recorded,
            Some(Err(e)) => end.record_error = Some(chain(&e)),
            None => {}
        }
        Ok(end)
    }
}

/// An adaptive run's stopping rule, starting from the earlier trials the collector already
/// holds; `None` for a run of fixed trials.
fn stopping_rule(
    config: &RunConfig,
    collector: &Collector,
    hosts: &[HostRuntime],
    suite: &Suite,
) -> anyhow::Result<Option<Arc<dyn StoppingRule>>> {
    let Some(looks) = collector.looks() else {
        return Ok(None);
    };
    let design = Design::new(&config.stats, hosts.len()).context("the adaptive design")?;
    let tasks = suite.tasks.len();
    Ok(Some(Arc::new(AdaptivePolicy::new(
        design,
        looks.clone(),
        tasks,
    ))))
}

/// The end of a run whose trials are done: the final comparison, the episode tables written
/// from the episodes on disk, and `run.json` with how the run ended.
async fn finish(
    dir: &Path,
    mut info: RunInfo,
    collector: Collector,
    ran: Ran,
    budget_note: Option<String>,
) -> anyhow::Result<RunEnd> {
    info.estimate = ran.estimate.map(|e| e.record(ran.took));
    let Ran {
        cancelled, stopped, ..
    } = ran;
    info.episodes = collector.episodes();
    info.infra_errors = collector.infra_errors();
    let comparison = collector
        .comparison(&info.config.stats, info.seed)
        .context("cannot compare the sides")?;
    drop(collector);
    // The tables are written from the episodes on disk once the trials are done, a row group
    // at a time: while the trials go, neither a row group's rows (2 MB of demo episodes) nor
    // the Parquet footer's records, which grow with the run (3.9 MB at 100k), take memory.
    let tables_dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || rebuild_tables(&tables_dir, |_| ()))
        .await
        .context("the tables' writer stopped")?
        .context("cannot write the episode tables")?;
    info.status = if budget_note.is_some() {
        RunStatus::BudgetReached
    } else if cancelled {
        RunStatus::Interrupted
    } else if !stopped.is_empty() || comparison.outcome() == Outcome::InfraFailure {
        RunStatus::Incomplete
    } else {
        RunStatus::Completed
    };
    info.stopped_hosts = stopped
        .iter()
        .map(|s| StoppedHostRecord {
            host: s.host.clone(),
            reason: s.reason.to_string(),
            not_run: s.not_run,
        })
        .collect();
    info.finished_at = Some(chrono::Utc::now().to_rfc3339());
    info.runner_cpu_ms = own_cpu_ms();
    info.write(dir)?;
    Ok(RunEnd {
        info,
        comparison,
        cancelled,
        budget_note,
        stopped,
        recorded: Vec::new(),
        record_error: None,
    })
}

/// A run that failed after it started says so in its `run.json` (best effort: the failure may be
/// that the directory cannot be written).
fn mark_failed(dir: &Path) {
    if let Ok(mut info) = RunInfo::read(dir) {
        if info.status == RunStatus::Running {
            info.status = RunStatus::Failed;
            info.finished_at = Some(chrono::Utc::now().to_rfc3339());
            let _ = info.write(dir);
        }
    }
}

/// What a resumed run's directory already holds: the trials done (not run again), what they
/// spent of the budget and their aggregates for the live reports. Empty for a new run. Trials
/// that ended as infrastructure errors are not done: their episodes are set aside (into
/// `retried.jsonl`) and the trials run again, each keeping the errors of its earlier attempts.
struct Earlier {
    done: HashSet<DoneKey>,
    spent: Spent,
    collector: Collector,
    /// The earlier attempts' errors of the trials to run again, oldest first.
    attempts: HashMap<DoneKey, Vec<String>>,
    /// `--replay-user-turns`: the finished baseline trials' user messages, by (host, task,
    /// trial), for their candidate trials still to run.
    user_scripts: HashMap<(String, String, u32), Vec<String>>,
}

impl Earlier {
    fn scan(dir: &Path, config: &RunConfig) -> anyhow::Result<Self> {
        let (mut earlier, infra) = Self::kept(dir, config)?;
        if infra {
            // Read again once those episodes are set aside (rare: only after an outage).
            set_aside_infra_errors(dir)?;
            earlier = Self::kept(dir, config)?.0;
        }
        // What the set-aside attempts spent is spent; their errors go to the trials run again.
        let (done, attempts) = (&earlier.done, &mut earlier.attempts);
        let spent = &mut earlier.spent;
        scan_retried(dir, |e| {
            spent.add(&e, &config.prices);
            let key = DoneKey::of(&e);
            if !done.contains(&key) {
                let errors = attempts.entry(key).or_default();
                errors.extend(e.attempts);
                errors.extend(e.infra_error);
            }
        })?;
        Ok(earlier)
    }

    /// What `episodes.jsonl` holds, in one pass, and whether any of it is an infrastructure
    /// error.
    fn kept(dir: &Path, config: &RunConfig) -> anyhow::Result<(Self, bool)> {
        let mut infra = false;
        let mut earlier = Self {
            done: HashSet::new(),
            spent: Spent::default(),
            collector: Collector::for_stats(&config.stats),
            attempts: HashMap::new(),
            user_scripts: HashMap::new(),
        };
        scan_episodes(dir, |e| {
            infra |= e.infra_error.is_some();
            if config.replay_user_turns && e.side == Side::Baseline && !e.user_turns.is_empty() {
                let sent = crate::episode::messages_sent(&e.user_turns);
                earlier.user_scripts.insert(
                    (e.host.clone(), e.task_id.clone(), e.trial),
                    sent.map(str::to_owned).collect(),
                );
            }
            earlier.spent.add(&e, &config.prices);
            earlier.collector.add(e.side, &e);
            earlier.done.insert(DoneKey::of(&e));
        })?;
        Ok((earlier, infra))
    }
}

/// Hands every run event to every sink, then finishes them; the first error is returned, after
/// all sinks have had every event (a report that cannot be written does not lose episodes).
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

/// The signals that stop a run as a first Ctrl-C does: Ctrl-C, and on Unix SIGTERM (CI
/// cancellation, `docker stop`, Kubernetes) and SIGHUP (a closed terminal).
pub(super) struct Signals {
    #[cfg(unix)]
    others: Vec<tokio::signal::unix::Signal>,
}

impl Signals {
    pub(super) fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let others = [SignalKind::terminate(), SignalKind::hangup()]
                .into_iter()
                .filter_map(|kind| signal(kind).ok())
                .collect();
            Self { others }
        }
        #[cfg(not(unix))]
        Self {}
    }

    /// The next signal; `false` when none can come (Ctrl-C cannot be watched).
    pub(super) async fn next(&mut self) -> bool {
        #[cfg(unix)]
        if !self.others.is_empty() {
            let others =
                futures::future::select_all(self.others.iter_mut().map(|s| Box::pin(s.recv())));
            return tokio::select! {
                ctrl_c = tokio::signal::ctrl_c() => ctrl_c.is_ok(),
                _ = others => true,
            };
        }
        tokio::signal::ctrl_c().await.is_ok()
    }
}

/// First Ctrl-C (or SIGTERM, SIGHUP): stop starting trials, let those in flight finish. Second:
/// drop those too.
async fn watch_signals(
    cancel: CancellationToken,
    now: CancellationToken,
    tx: mpsc::Sender<RunEvent>,
) {
    let mut signals = Signals::new();
    if !signals.next().await {
        return;
    }
    cancel.cancel();
    let cancelling = RunEvent {
        elapsed: std::time::Duration::ZERO,
        kind: RunEventKind::Cancelling,
    };
    let _ = tx.send(cancelling).await;
    if signals.next().await {
        let aborting = RunEvent {
            elapsed: std::time::Duration::ZERO,
            kind: RunEventKind::Aborting,
        };
        let _ = tx.try_send(aborting);
        now.cancel();
    }
}
