//! Runs a schedule of trials with bounded concurrency, retries and cancellation; emits events.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use rand::Rng;
use tokio::sync::mpsc::Sender;
use tokio_util::sync::CancellationToken;

use super::events::{RunEvent, RunEventKind};
use super::policy::StoppingRule;
use super::pool::ServerPool;
use super::schedule::{trial_seed, Schedule, TrialKey};
use crate::config::{HostConfig, RunConfig};
use crate::episode::{
    check_after, run_call, run_fixtures, run_trial, Driver, Episode, FixtureError, Offer, Redactor,
    Side, Transcript, TrialInput, TrialOutput,
};
use crate::grade::judge::{self, JudgedCall, JudgedTrial};
use crate::grade::{Grade, Judged};
use crate::host::Model;
use crate::rundir::Deal;
use crate::suite::{Suite, Task};

/// A host of the run with what drives its trials.
pub struct HostRuntime {
    pub config: HostConfig,
    /// The agent loop over a model, or an app host (Claude Code, …) that runs each trial itself.
    pub driver: Driver,
    /// The host's adaptive concurrency (API hosts), for the end-of-run report.
    pub congestion: Option<Arc<crate::host::aimd::Congestion>>,
    /// Opens when the host's requests keep failing for one lasting reason: the run then starts
    /// none of its trials (API hosts).
    pub breaker: Option<Arc<crate::host::breaker::Breaker>>,
}

/// Identifies a finished trial across invocations (for `--resume`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DoneKey {
    pub host: String,
    pub task_id: String,
    pub trial: u32,
    pub side: Side,
}

impl DoneKey {
    pub fn of(e: &Episode) -> Self {
        Self {
            host: e.host.clone(),
            task_id: e.task_id.clone(),
            trial: e.trial,
            side: e.side,
        }
    }
}

/// Everything a run needs; `run` consumes it.
pub struct Runner {
    pub run_id: String,
    pub config: RunConfig,
    pub suite: Suite,
    pub hosts: Vec<HostRuntime>,
    /// The judge models of the tasks with a `judge:`, by the host spec the tasks name.
    pub judges: BTreeMap<String, Arc<dyn Model>>,
    /// The models of the simulated users of the tasks with a `user:`, by the host spec named.
    pub users: BTreeMap<String, Arc<dyn Model>>,
    /// Trials finished by an earlier invocation: not run again.
    pub done: HashSet<DoneKey>,
    /// The errors of earlier invocations' attempts of trials that ended as infrastructure
    /// errors and run again (`--resume`), oldest first: kept in the trial's episode.
    pub earlier_attempts: HashMap<DoneKey, Vec<String>>,
    pub redactor: Redactor,
    /// Cancelled by the first Ctrl-C: in-flight trials finish, no new ones start.
    pub cancel: CancellationToken,
    /// Cancelled by a second Ctrl-C: the trials in flight are dropped (their servers stopped);
    /// the episodes finished so far are kept.
    pub abort: CancellationToken,
    /// `--shard I/N`: run only this shard's (task, host, trial) units, both sides of each.
    pub shard: Option<crate::rundir::Shard>,
    /// A baseline and a candidate server already started and listed (the preflight's), for the
    /// first trials that need one: the run does not start each twice.
    pub servers: [Option<super::Server>; 2],
    /// Per side (baseline, candidate), where its servers' answers are recorded
    /// (`run --record`); the preflight's servers record already.
    pub recorders: [Option<Arc<crate::cassette::Recorder>>; 2],
    /// An adaptive run's stopping policy: trials run in looks, and a task settled after a look
    /// runs no more.
    pub policy: Option<Arc<dyn super::StoppingRule>>,
    /// The suite's tasks as the candidate side grades and calls them, where the candidate renamed
    /// tools (`[renames]`); `None`: as written.
    pub candidate_tasks: Option<Vec<Task>>,
    /// The `kind: call` tasks (by index) that use a tool only the candidate lists: they run on
    /// the candidate alone (see `job::added`).
    pub candidate_only: std::collections::BTreeSet<usize>,
    /// `--replay-user-turns` on a resumed run: the user messages of the baseline trials an
    /// earlier invocation finished, by (host, task id, trial).
    pub earlier_user_scripts: HashMap<(String, String, u32), Vec<String>>,
    /// The models of the tasks' `sampling: {host}` (not `sim`), by the host spec they name.
    pub samplers: BTreeMap<String, Arc<dyn Model>>,
    /// `--stale-list`: the baseline's tools, which the candidate's trials are offered.
    pub stale_list: Option<super::StaleList>,
}

impl Runner {
    /// Task `index` as `side` grades it (the candidate's with renamed tools mapped).
    fn task_for(&self, index: usize, side: Side) -> &Task {
        match (side, &self.candidate_tasks) {
            (Side::Candidate, Some(tasks)) => &tasks[index],
            _ => &self.suite.tasks[index],
        }
    }
}

struct Shared {
    runner: Runner,
    pool: ServerPool,
    started: Instant,
    events: Sender<RunEvent>,
    /// Per host, the trials not started because its breaker opened.
    not_run: std::sync::Mutex<Vec<usize>>,
    /// `--replay-user-turns`: the baseline trials' user messages for their candidate trials.
    scripts: super::user_scripts::UserScripts,
}

/// How a run's trials went: how many finished, whether it was cut short, and the hosts the
/// run stopped sending trials to.
#[derive(Debug, Default)]
pub struct Ran {
    pub completed: usize,
    pub cancelled: bool,
    pub stopped: Vec<StoppedHost>,
    /// The wall time estimated before the first trial (`RunStarted`'s).
    pub estimate: Option<super::Estimate>,
    /// The wall time the trials took.
    pub took: Duration,
}

/// A host whose breaker opened: why, and how many of its trials were not started.
#[derive(Debug, Clone)]
pub struct StoppedHost {
    pub host: String,
    pub reason: crate::host::breaker::Opened,
    pub not_run: usize,
}

impl Shared {
    async fn emit(&self, kind: RunEventKind) {
        let event = RunEvent {
            elapsed: self.started.elapsed(),
            kind,
        };
        let _ = self.events.send(event).await;
    }
}

/// Runs every trial not yet done; returns how many finished, whether the run was cut short, and
/// which hosts it stopped (their breakers open: their trials left are not started).
/// `events` is bounded: when its consumer (writing the episodes, the tables and the reports)
/// falls behind, finished trials wait to hand over their records instead of piling up in memory.
pub async fn run(mut runner: Runner, events: Sender<RunEvent>) -> Ran {
    // The model hosts come first; the direct host of `kind: call` tasks, if any, last.
    let hosts = runner.hosts.len();
    let direct = runner
        .hosts
        .iter()
        .position(|h| matches!(h.driver, Driver::Direct));
    let (model_hosts, tasks) = (direct.unwrap_or(hosts), runner.suite.tasks.len());
    let mut schedule = Schedule::new(model_hosts, tasks, runner.config.trials, runner.config.seed);
    if runner.config.replay_user_turns {
        // A candidate trial replays its baseline trial's user messages: the baseline goes first.
        schedule = schedule.baseline_first();
    }
    let scripts = super::user_scripts::UserScripts::with(earlier_scripts(&mut runner));
    let policy = runner.policy.clone();
    // An adaptive run deals whole tasks to shards (a shard decides its tasks' looks alone).
    let by_unit = policy.is_some();
    let in_shard = runner.shard.map(|shard| {
        let tasks: Vec<String> = runner.suite.tasks.iter().map(|t| t.id.clone()).collect();
        let hosts: Vec<String> = runner.hosts.iter().map(|h| h.config.name.clone()).collect();
        let (trials, count) = (runner.config.trials, shard.count);
        let deal = match by_unit {
            true => Deal::whole_tasks(&tasks, &hosts, trials, count),
            false => Deal::new(&tasks, &hosts, trials, count),
        };
        (shard, deal)
    });
    // The trials to run, in run order, read off the schedule as they are needed (it is not
    // copied: a run of any size keeps 4 bytes per trial of it).
    let in_shard_of = move |runner: &Runner, key: &TrialKey| {
        let (host, task) = (
            &runner.hosts[key.host].config.name,
            &runner.suite.tasks[key.task].id,
        );
        in_shard
            .as_ref()
            .is_none_or(|(shard, deal)| deal.shard_of(task, host, key.trial) == Some(*shard))
    };
    let to_run = |runner: &Runner, key: &TrialKey| {
        in_shard_of(runner, key)
            && (runner.done.is_empty() || !runner.done.contains(&done_key(runner, key)))
    };
    // A model host runs the tasks a model answers; the direct host the `kind: call` tasks.
    let by_model = |runner: &Runner, key: &TrialKey| {
        runner.suite.tasks[key.task].kind.has_model() && to_run(runner, key)
    };
    let calls: Vec<TrialKey> = direct
        .map(|host| call_keys(&runner, host))
        .unwrap_or_default()
        .into_iter()
        .filter(|k| to_run(&runner, k))
        .collect();
    let total = calls.len() + schedule.iter().filter(|k| by_model(&runner, k)).count();
    let ready = std::mem::take(&mut runner.servers);
    let timed: Vec<Duration> = ready.iter().flatten().map(|s| s.started_in).collect();
    // An app starts (or connects to) the side's server itself: its trials take none from the
    // pool, which then starts none ahead for them.
    let mut none_pooled = true;
    let pooled = calls
        .iter()
        .copied()
        .chain(
            schedule
                .iter()
                .filter(|k| by_model(&runner, k) && runner.hosts[k.host].driver.app().is_none()),
        )
        .map(|k| (k.side, k.task))
        .inspect(|_| none_pooled = false);
    let pool = ServerPool::new(
        runner.config.baseline.clone(),
        runner.config.candidate.clone(),
        runner.config.isolation,
        pooled,
        ready,
        (runner.suite.tasks.iter())
            .map(|t| t.asks.capabilities())
            .collect(),
    )
    .recording(runner.recorders.clone());
    if none_pooled {
        // Only app hosts: the preflight's servers would sit idle through the run.
        pool.shutdown().await;
    }
    let estimate = super::estimate::plan(&runner, total, pool.planned_starts(), &timed)
        .map(super::Estimate::of);
    let cancel = runner.cancel.clone();
    let shared = Arc::new(Shared {
        pool,
        started: Instant::now(),
        events,
        not_run: std::sync::Mutex::new(vec![0; hosts]),
        scripts,
        runner,
    });
    shared
        .emit(RunEventKind::RunStarted {
            run_id: shared.runner.run_id.clone(),
            total,
            already_done: shared.runner.done.len(),
            again: shared.runner.earlier_attempts.len(),
            estimate,
        })
        .await;
    // The call tasks first: cheap, exact, and their answers do not depend on a model.
    let mut completed = run_keys(&shared, calls.into_iter(), &cancel).await;
    completed += match &policy {
        _ if cancel.is_cancelled() => 0,
        None => {
            let order = schedule.iter().filter(|k| by_model(&shared.runner, k));
            run_keys(&shared, order, &cancel).await
        }
        Some(policy) => {
            let looks = Looks {
                policy: policy.as_ref(),
                hosts: model_hosts,
                in_shard_of: &in_shard_of,
                to_run: &to_run,
            };
            run_looks(&shared, looks, &cancel).await
        }
    };
    shared.pool.shutdown().await;
    let took = shared.started.elapsed();
    shared
        .emit(RunEventKind::RunFinished {
            completed,
            cancelled: cancel.is_cancelled(),
        })
        .await;
    let not_run = std::mem::take(&mut *lock(&shared.not_run));
    let stopped = shared
        .runner
        .hosts
        .iter()
        .zip(not_run)
        .filter_map(|(h, not_run)| {
            let reason = h.breaker.as_ref()?.opened()?;
            Some(StoppedHost {
                host: h.config.name.clone(),
                reason,
                not_run,
            })
        })
        .collect();
    Ran {
        completed,
        cancelled: cancel.is_cancelled(),
        stopped,
        estimate,
        took,
    }
}

/// The earlier invocation's baseline user messages by the run's indices of host and task.
fn earlier_scripts(runner: &mut Runner) -> HashMap<(usize, usize, u32), Vec<String>> {
    let earlier = std::mem::take(&mut runner.earlier_user_scripts);
    let host = |name: &str| runner.hosts.iter().position(|h| h.config.name == name);
    let task = |id: &str| runner.suite.tasks.iter().position(|t| t.id == id);
    earlier
        .into_iter()
        .filter_map(|((h, t, trial), messages)| Some(((host(&h)?, task(&t)?, trial), messages)))
        .collect()
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The trials of the `kind: call` tasks on the direct host (index `host`): each task's own
/// `trials:`, both sides of each next to each other, in task order; a task that uses a tool only
/// the candidate lists, on the candidate alone.
fn call_keys(runner: &Runner, host: usize) -> Vec<TrialKey> {
    let mut keys = Vec::new();
    for (task, t) in runner.suite.tasks.iter().enumerate() {
        if t.kind.has_model() {
            continue;
        }
        let alone = runner.candidate_only.contains(&task);
        for trial in 0..t.trials.unwrap_or(1) {
            for side in Side::BOTH {
                if alone && side == Side::Baseline {
                    continue;
                }
                keys.push(TrialKey {
                    host,
                    task,
                    trial,
                    side,
                });
            }
        }
    }
    keys
}

/// What an adaptive run's looks go by: the stopping rule, the model hosts (the first `hosts` of
/// the run's), and which trials this invocation runs.
struct Looks<'a> {
    policy: &'a dyn StoppingRule,
    hosts: usize,
    in_shard_of: &'a dyn Fn(&Runner, &TrialKey) -> bool,
    to_run: &'a dyn Fn(&Runner, &TrialKey) -> bool,
}

/// An adaptive run: trials in looks of every task still running, each look's trials paired
/// and in a seeded order of their own, and after each look the stopping rule says which tasks
/// are settled (a budget gives its looks to the likeliest regressions first). Returns how many
/// trials finished. `kind: call` tasks take no part: they ran before.
async fn run_looks(shared: &Arc<Shared>, looks: Looks<'_>, cancel: &CancellationToken) -> usize {
    let Looks {
        policy,
        hosts,
        in_shard_of,
        to_run,
    } = looks;
    let tasks = shared.runner.suite.tasks.len();
    // The (host, task) units this invocation runs (a shard's own) that are not settled.
    let mut running: Vec<bool> = (0..hosts * tasks)
        .map(|u| {
            let key = TrialKey {
                host: u / tasks,
                task: u % tasks,
                trial: 0,
                side: Side::Baseline,
            };
            shared.runner.suite.tasks[key.task].kind.has_model()
                && in_shard_of(&shared.runner, &key)
        })
        .collect();
    // A shard's share of a trial budget: its units' share of the run's.
    let budget = policy.budget().map(|b| {
        let share = running.iter().filter(|m| **m).count() as u64;
        b * share / (hosts * tasks).max(1) as u64
    });
    let units = running.iter().filter(|m| **m).count();
    // Trials per side the settled tasks will not run.
    let mut saved = 0u64;
    // Units the budget gave no further look.
    let mut budget_stopped = 0;
    let mut completed = 0;
    let mut from = 0;
    let looks = policy.looks();
    for (j, &n) in looks.iter().enumerate() {
        // One look: the trials from..n of every task still running, paired and in a
        // seeded order of their own (the trial seeds stay those of the fixed design).
        if let Some(budget) = budget {
            let need = u64::from(n - from);
            let before = running.iter().filter(|on| **on).count();
            saved += share_budget(shared, policy, &mut running, budget, need, from).await;
            budget_stopped += before - running.iter().filter(|on| **on).count();
        }
        let order = Schedule::new(
            hosts,
            tasks,
            n - from,
            look_seed(shared.runner.config.seed, j),
        );
        let keys: Vec<TrialKey> = order
            .iter()
            .map(|k| TrialKey {
                trial: k.trial + from,
                ..k
            })
            .filter(|k| running[k.host * tasks + k.task] && to_run(&shared.runner, k))
            .collect();
        completed += run_keys(shared, keys.into_iter(), cancel).await;
        if cancel.is_cancelled() {
            break;
        }
        for (unit, on) in running.iter_mut().enumerate() {
            let (host, task) = (unit / tasks, unit % tasks);
            let runner = &shared.runner;
            let name = &runner.hosts[host].config.name;
            if *on && policy.settled(name, &runner.suite.tasks[task].id) {
                *on = false;
                saved += forget_task(shared, task, n).await;
            }
        }
        let still = running.iter().filter(|on| **on).count();
        shared
            .emit(RunEventKind::LookFinished {
                look: j as u32 + 1,
                looks: looks.len() as u32,
                settled: units - still - budget_stopped,
                budget_stopped,
                running: still,
                saved,
            })
            .await;
        if still == 0 {
            break;
        }
        from = n;
    }
    completed
}

/// Gives the budget's next look of `need` trials per side to the running tasks likeliest to end
/// as regressions; a task that gets none stops at `from`. Returns the trials per side saved.
async fn share_budget(
    shared: &Shared,
    policy: &dyn StoppingRule,
    running: &mut [bool],
    budget: u64,
    need: u64,
    from: u32,
) -> u64 {
    let runner = &shared.runner;
    let tasks = runner.suite.tasks.len();
    let waiting: Vec<usize> = (0..running.len()).filter(|&u| running[u]).collect();
    let priorities: Vec<f64> = waiting
        .iter()
        .map(|&u| {
            policy.priority(
                &runner.hosts[u / tasks].config.name,
                &runner.suite.tasks[u % tasks].id,
            )
        })
        .collect();
    let left = budget.saturating_sub(policy.trials());
    let chosen = super::allocate(&priorities, need, Some(left));
    let mut saved = 0;
    for (&u, chosen) in waiting.iter().zip(chosen) {
        if !chosen {
            running[u] = false;
            saved += forget_task(shared, u % tasks, from).await;
        }
    }
    saved
}

/// Runs `keys` with the run's concurrency until they are done or the run is cancelled; returns
/// how many finished.
async fn run_keys(
    shared: &Arc<Shared>,
    keys: impl Iterator<Item = TrialKey>,
    cancel: &CancellationToken,
) -> usize {
    let cancel = cancel.clone();
    let mut results = futures::stream::iter(keys)
        .take_while(move |_| std::future::ready(!cancel.is_cancelled()))
        .map(|key| {
            let shared = shared.clone();
            async move { execute(&shared, key).await }
        })
        .buffer_unordered(shared.runner.config.concurrency);
    let abort = shared.runner.abort.clone();
    let mut completed = 0;
    loop {
        tokio::select! {
            biased;
            _ = abort.cancelled() => break,
            next = results.next() => match next {
                Some(ran) => completed += usize::from(ran),
                None => break,
            },
        }
    }
    completed
}

/// A settled task's trials after the first `from` will not run: its servers' uses are released.
/// Returns how many trials per side that saves.
async fn forget_task(shared: &Shared, task: usize, from: u32) -> u64 {
    let left = shared.runner.config.trials.saturating_sub(from);
    for side in Side::BOTH {
        shared.pool.forget_uses(side, task, left as usize).await;
    }
    u64::from(left)
}

/// The seed of look `j`'s run order (each look's trials are shuffled apart).
fn look_seed(seed: u64, j: usize) -> u64 {
    seed ^ (j as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

fn done_key(runner: &Runner, key: &TrialKey) -> DoneKey {
    DoneKey {
        host: runner.hosts[key.host].config.name.clone(),
        task_id: runner.suite.tasks[key.task].id.clone(),
        trial: key.trial,
        side: key.side,
    }
}

/// Whether `host`'s breaker is open.
fn stopped(host: &HostRuntime) -> bool {
    host.breaker.as_ref().is_some_and(|b| b.opened().is_some())
}

/// Runs one trial, retrying after infrastructure errors; every attempt's error is kept. A trial
/// of a host whose breaker is open is not started (`false`): it is counted as not run.
async fn execute(shared: &Shared, key: TrialKey) -> bool {
    let runner = &shared.runner;
    let host = &runner.hosts[key.host];
    let task = &runner.suite.tasks[key.task];
    let replays = runner.config.replay_user_turns && task.user.is_some();
    // A baseline trial hands its user messages to its candidate trial however it ends.
    let mut handover =
        (replays && key.side == Side::Baseline).then(|| shared.scripts.handover(&key));
    let replay = match replays && key.side == Side::Candidate {
        true => shared.scripts.wait(&key).await,
        false => Vec::new().into(),
    };
    if stopped(host) {
        let first = {
            let mut not_run = lock(&shared.not_run);
            not_run[key.host] += 1;
            not_run[key.host] == 1
        };
        shared.pool.forget_uses(key.side, key.task, 1).await;
        if let (true, Some(opened)) = (first, host.breaker.as_ref().and_then(|b| b.opened())) {
            shared
                .emit(RunEventKind::HostStopped {
                    host: host.config.name.clone(),
                    reason: opened.to_string(),
                })
                .await;
        }
        return false;
    }
    let seed = trial_seed(runner.config.seed, &task.id, key.trial);
    shared
        .emit(RunEventKind::TrialStarted {
            task_id: task.id.clone(),
            side: key.side,
            host: host.config.name.clone(),
            trial: key.trial,
        })
        .await;
    let started_at = chrono::Utc::now().to_rfc3339();
    let mut attempts = Vec::new();
    let (output, tools, judged) = loop {
        let (output, tools, judged) = attempt(shared, key, seed, &replay).await;
        match &output.infra_error {
            Some(error) if (attempts.len() as u32) < runner.config.retries && !stopped(host) => {
                attempts.push(error.clone());
                shared
                    .emit(RunEventKind::TrialRetrying {
                        task_id: task.id.clone(),
                        side: key.side,
                        host: host.config.name.clone(),
                        trial: key.trial,
                        attempt: attempts.len() as u32,
                        error: error.clone(),
                    })
                    .await;
                shared.pool.add_use(key.side, key.task).await;
                tokio::time::sleep(backoff(attempts.len() as u32)).await;
            }
            _ => break (output, tools, judged),
        }
    };
    let mut output = output;
    if let Some(handover) = &mut handover {
        let sent = crate::episode::messages_sent(&output.user_turns);
        handover.set(sent.map(str::to_owned).collect());
    }
    let messages = std::mem::take(&mut output.messages);
    if let Some(earlier) = runner.earlier_attempts.get(&done_key(runner, &key)) {
        attempts.splice(0..0, earlier.iter().cloned());
    }
    let mut episode = build_episode(shared, key, task, seed, output, attempts, started_at);
    if let Some(judged) = &judged {
        add_judge(&runner.redactor, &mut episode, judged);
    }
    let transcript = Transcript {
        run_id: runner.run_id.clone(),
        task_id: task.id.clone(),
        side: key.side,
        host: host.config.name.clone(),
        trial: key.trial,
        seed,
        tools,
        messages,
        judge: judged.map(|j| j.record),
    };
    let transcript = redact_transcript(&runner.redactor, transcript);
    if let (Some(policy), true) = (&runner.policy, task.kind.has_model()) {
        policy.record(&episode);
    }
    shared
        .emit(RunEventKind::TrialFinished {
            episode: Arc::new(episode),
            transcript: Arc::new(transcript),
        })
        .await;
    true
}

/// Exponential backoff with jitter: 250 ms, 500 ms, 1 s, … (+ up to 50 %).
fn backoff(attempt: u32) -> Duration {
    let base = 250u64 << attempt.saturating_sub(1).min(6);
    Duration::from_millis(base + rand::rng().random_range(0..=base / 2))
}

async fn attempt(
    shared: &Shared,
    key: TrialKey,
    seed: u64,
    replay: &[String],
) -> (TrialOutput, Arc<[crate::host::ToolSpec]>, Option<Judged>) {
    let runner = &shared.runner;
    let host = &runner.hosts[key.host];
    let task = &runner.suite.tasks[key.task];
    let model = match &host.driver {
        Driver::Agent(model) => model,
        Driver::App(app) => return app_attempt(shared, key, seed, app).await,
        Driver::Direct => return direct_attempt(shared, key).await,
    };
    let lease = match shared.pool.acquire(key.side, key.task).await {
        Ok(lease) => lease,
        Err(e) => return (start_infra(&e), Vec::new().into(), None),
    };
    let plan = super::asks::plan_of(
        task,
        (&runner.samplers, &runner.users),
        trial_context(task, key),
        seed,
    );
    let profile = &host.config.profile;
    let view = match (key.side, &runner.stale_list) {
        (Side::Candidate, Some(stale)) => stale.view(key.host, profile, seed),
        (Side::Candidate, None) => {
            let renamed = &runner.config.renames;
            lease
                .server
                .view(key.host, profile, &Offer { seed, renamed })
        }
        (Side::Baseline, _) => lease.server.view(key.host, profile, &Offer::seeded(seed)),
    };
    let timeout = shared.pool.spec(key.side).call_timeout;
    let copies = lease.server.connection.sandbox();
    let sandboxed =
        copies.map(|c| super::sandboxed::task_on(c, runner.task_for(key.task, key.side)));
    let fixtures = sandboxed
        .as_ref()
        .unwrap_or(runner.task_for(key.task, key.side));
    if let Err(error) =
        run_fixtures(&lease.server.connection, &fixtures.setup, "setup", timeout).await
    {
        shared.pool.release(lease, true).await;
        let output = TrialOutput {
            tools_offered: view.offered(),
            ..fixture_infra(&error)
        };
        return (output, view.specs.clone(), None);
    }
    let input = TrialInput {
        prompt: &fixtures.prompt,
        max_turns: task.max_turns,
        model: model.as_ref(),
        profile: &host.config.profile,
        seed,
        context: crate::host::RequestContext {
            task_id: task.id.clone(),
            side: key.side.as_str().to_owned(),
            trial: key.trial,
        },
        tools: &view,
        instructions: lease.server.info.instructions.as_deref(),
        call_timeout: shared.pool.spec(key.side).call_timeout,
        turns: &fixtures.turns,
        stop_on_failure: task.stop_on_failure,
        kind: task.kind,
        user: user_player(runner, fixtures, replay),
        attach: &fixtures.attach,
        server_prompt: fixtures.server_prompt.as_ref(),
    };
    let connection = &lease.server.connection;
    let trial = run_trial(&input, connection);
    let mut output = super::asks::with_asks(connection, plan, trial).await;
    output.tools_offered = view.offered();
    if output.infra_error.is_none() {
        finish_fixtures(&lease.server, fixtures, timeout, &mut output).await;
    }
    if let Some(copies) = copies {
        super::sandboxed::map_back(copies, &mut output);
    }
    if let Some(error) = &mut output.infra_error {
        let tail = lease.server.connection.stderr_tail();
        if !tail.trim().is_empty() && !error.contains(tail.trim()) {
            error.push_str(&format!("\n--- server stderr ---\n{}", tail.trim_end()));
        }
    }
    let failed = output.infra_error.is_some();
    shared.pool.release(lease, failed).await;
    let judged = judge_output(shared, key, seed, &mut output).await;
    (output, view.specs.clone(), judged)
}

/// What plays the simulated user of `task` (`None` without a `user:`, or when its host was not
/// built, which the run refuses before any trial); `replay`: the baseline's messages to send
/// again.
fn user_player<'a>(
    runner: &'a Runner,
    task: &'a Task,
    replay: &'a [String],
) -> Option<crate::episode::UserPlayer<'a>> {
    let spec = task.user.as_ref()?;
    let model = runner.users.get(&spec.host)?;
    Some(crate::episode::UserPlayer {
        spec,
        model: model.as_ref(),
        replay,
    })
}

/// Task, side and trial, as a model's requests carry them.
fn trial_context(task: &Task, key: TrialKey) -> crate::host::RequestContext {
    crate::host::RequestContext {
        task_id: task.id.clone(),
        side: key.side.as_str().to_owned(),
        trial: key.trial,
    }
}

/// The output of a trial that could not run: an infrastructure error and nothing else.
fn infra(error: String) -> TrialOutput {
    TrialOutput {
        infra_error: Some(error),
        ..TrialOutput::default()
    }
}

/// The output of a trial whose server did not start or complete its handshake: an
/// infrastructure error (retried, left out of the statistics, run again by `--resume`), never the
/// side's failure. A slow start on a busy machine says nothing about the release, and a server
/// that cannot start at all is stopped by the pre-flight before any trial.
fn start_infra(error: &crate::mcp::McpError) -> TrialOutput {
    infra(crate::error::chain(error))
}

/// The output of a trial whose server failed at `what` (`start`, a fixture call): the side's
/// server is to blame.
fn server_infra(error: String, what: &str) -> TrialOutput {
    TrialOutput {
        server_failed: Some(what.to_owned()),
        ..infra(error)
    }
}

/// The output of a trial whose setup failed: the server's fault when it could not answer.
fn fixture_infra(error: &FixtureError) -> TrialOutput {
    match error.unreachable_call() {
        Some(what) => server_infra(error.to_string(), &what),
        None => infra(error.to_string()),
    }
}

/// After a trial: the `expect.after` checks of the state it left, then the `teardown` calls. A
/// server that fails either makes the trial an infrastructure error.
async fn finish_fixtures(
    server: &super::Server,
    task: &Task,
    timeout: Duration,
    output: &mut TrialOutput,
) {
    match check_after(&server.connection, &task.after, &server.tools, timeout).await {
        Ok(checks) => output.after = checks,
        Err(error) => {
            output.infra_error = Some(error.to_string());
            output.server_failed = error.unreachable_call();
            return;
        }
    }
    if let Err(error) = run_fixtures(&server.connection, &task.teardown, "teardown", timeout).await
    {
        output.infra_error = Some(error.to_string());
        output.server_failed = error.unreachable_call();
    }
}

/// One attempt of a `kind: call` task's trial: its request sent to a server of the pool's.
async fn direct_attempt(
    shared: &Shared,
    key: TrialKey,
) -> (TrialOutput, Arc<[crate::host::ToolSpec]>, Option<Judged>) {
    let task = shared.runner.task_for(key.task, key.side);
    let lease = match shared.pool.acquire(key.side, key.task).await {
        Ok(lease) => lease,
        Err(e) => return (start_infra(&e), Vec::new().into(), None),
    };
    let timeout = shared.pool.spec(key.side).call_timeout;
    let server = &lease.server;
    let copies = server.connection.sandbox();
    let sandboxed = copies.map(|c| super::sandboxed::task_on(c, task));
    let task = sandboxed.as_ref().unwrap_or(task);
    let mut output = match run_fixtures(&server.connection, &task.setup, "setup", timeout).await {
        Ok(()) => {
            let runner = &shared.runner;
            let seed = trial_seed(runner.config.seed, &task.id, key.trial);
            let plan = super::asks::plan_of(
                task,
                (&runner.samplers, &runner.users),
                trial_context(task, key),
                seed,
            );
            let call = run_call(task, &server.connection, &server.tools, timeout);
            super::asks::with_asks(&server.connection, plan, call).await
        }
        Err(error) => fixture_infra(&error),
    };
    if output.infra_error.is_none() {
        finish_fixtures(server, task, timeout, &mut output).await;
    }
    if let Some(copies) = copies {
        super::sandboxed::map_back(copies, &mut output);
    }
    if let Some(error) = &mut output.infra_error {
        let tail = server.connection.stderr_tail();
        if !tail.trim().is_empty() && !error.contains(tail.trim()) {
            error.push_str(&format!("\n--- server stderr ---\n{}", tail.trim_end()));
        }
    }
    let failed = output.infra_error.is_some();
    shared.pool.release(lease, failed).await;
    (output, Vec::new().into(), None)
}

/// One attempt of a trial that an app host runs itself: it starts (stdio) or connects to (HTTP)
/// the side's server on its own, so no server of the pool's is used.
async fn app_attempt(
    shared: &Shared,
    key: TrialKey,
    seed: u64,
    app: &crate::episode::app::AppHost,
) -> (TrialOutput, Arc<[crate::host::ToolSpec]>, Option<Judged>) {
    let host = &shared.runner.hosts[key.host];
    let task = &shared.runner.suite.tasks[key.task];
    // The app starts the server itself: its sandbox copies are made here, one set per trial.
    let spec = shared.pool.spec(key.side);
    let copies = match crate::mcp::sandbox::SandboxCopies::make(spec) {
        Ok(copies) => copies,
        Err(e) => return (infra(crate::error::chain(&e)), Vec::new().into(), None),
    };
    let sandboxed = copies
        .as_ref()
        .map(|c| (c.apply(spec), super::sandboxed::task_on(c, task)));
    let (spec, task) = sandboxed.as_ref().map_or((spec, task), |(s, t)| (s, t));
    let trial = crate::episode::app::AppTrial {
        prompt: &task.prompt,
        max_turns: task.max_turns,
        seed,
        server: spec,
        label: &host.config.profile.server_label,
    };
    let mut output = app.run_trial(&trial).await;
    if let Some(copies) = &copies {
        super::sandboxed::map_back(copies, &mut output);
    }
    let judged = judge_output(shared, key, seed, &mut output).await;
    (output, Vec::new().into(), judged)
}

/// Runs the task's judge on a trial that finished without an infrastructure error. A judge that
/// fails makes the trial an infrastructure error (retried like the others).
async fn judge_output(
    shared: &Shared,
    key: TrialKey,
    seed: u64,
    output: &mut TrialOutput,
) -> Option<Judged> {
    let runner = &shared.runner;
    let task = &runner.suite.tasks[key.task];
    let spec = task.expect.judge.as_ref()?;
    if output.infra_error.is_some() {
        return None;
    }
    let Some(model) = runner.judges.get(&spec.host) else {
        output.infra_error = Some(format!("judge `{}`: no such judge host", spec.host));
        return None;
    };
    let calls: Vec<JudgedCall<'_>> = output
        .calls
        .iter()
        .map(|c| JudgedCall {
            tool: &c.tool,
            arguments: &c.arguments,
            result: &c.result,
            is_error: c.is_error,
        })
        .collect();
    // A conversation's judge reads every user message, in order.
    let messages: Vec<&str> = (output.user_turns.iter())
        .map(|t| t.message.as_str())
        .collect();
    let prompt = match messages.is_empty() {
        true => task.prompt.clone(),
        false => messages.join("\n\n"),
    };
    let trial = JudgedTrial {
        prompt: &prompt,
        calls: &calls,
        answer: output.final_answer.as_deref(),
    };
    let context = crate::host::RequestContext {
        task_id: task.id.clone(),
        side: key.side.as_str().to_owned(),
        trial: key.trial,
    };
    let judged = judge::judge(model.as_ref(), spec, &trial, seed, context).await;
    if let Err(error) = &judged.outcome {
        output.infra_error = Some(error.clone());
    }
    Some(judged)
}

/// Puts the judge's check into the grade and its tokens into the judge columns (not the trial's).
fn add_judge(redactor: &Redactor, episode: &mut Episode, judged: &Judged) {
    episode.judge_input_tokens = judged.record.usage.input_tokens;
    episode.judge_output_tokens = judged.record.usage.output_tokens;
    if let (Ok(check), None) = (&judged.outcome, &episode.infra_error) {
        let mut check = check.clone();
        check.explanation = redactor.redact(&check.explanation);
        judge::add_check(&mut episode.grade, check);
        episode.success = episode.grade.success;
    }
}

fn build_episode(
    shared: &Shared,
    key: TrialKey,
    task: &Task,
    seed: u64,
    mut output: TrialOutput,
    attempts: Vec<String>,
    started_at: String,
) -> Episode {
    let runner = &shared.runner;
    let host = &runner.hosts[key.host];
    let mut grade = match (&output.infra_error, output.grade.take()) {
        (Some(_), _) => Grade::default(),
        (None, Some(grade)) => grade,
        (None, None) => grade_output(runner.task_for(key.task, key.side), &output),
    };
    if output.infra_error.is_none() && !output.after.is_empty() {
        grade.checks.append(&mut output.after);
        grade.success = grade.checks.iter().all(|c| c.passed);
    }
    if output.infra_error.is_none() {
        super::asks::grade_asks(runner.task_for(key.task, key.side), &output, &mut grade);
    }
    let asks = std::mem::take(&mut output.asks);
    let host_calls = std::mem::take(&mut output.host_calls);
    let tool_search = output.tool_search.take();
    let count = |sampling: bool| asks.iter().filter(|a| a.is_sampling() == sampling).count();
    let tool_errors = output.calls.iter().filter(|c| c.is_error).count() as u32;
    let protocol_errors = output
        .calls
        .iter()
        .filter(|c| c.error_code.is_some())
        .count() as u32;
    let tools_called: Vec<&str> = output.calls.iter().map(|c| c.tool.as_str()).collect();
    let redact = |s: String| runner.redactor.redact(&s);
    // The side's own server failed on the last attempt: the side's failure, not the run's.
    let server_error = match (&output.infra_error, &output.server_failed) {
        (Some(error), Some(what)) => {
            Some(format!("{} server failed during {what}: {error}", key.side))
        }
        _ => None,
    };
    if server_error.is_some() {
        output.infra_error = None;
        grade.success = false;
    }
    Episode {
        format_version: crate::rundir::FORMAT_VERSION.to_owned(),
        run_id: runner.run_id.clone(),
        task_id: task.id.clone(),
        kind: task.kind,
        set: task.set,
        side: key.side,
        host: host.config.name.clone(),
        model: output.model.clone().unwrap_or_else(|| host.driver.id()),
        trial: key.trial,
        seed,
        success: grade.success && output.infra_error.is_none(),
        infra_error: output.infra_error.map(redact),
        server_error: server_error.map(redact),
        turns: output.turns,
        tool_calls: output.calls.len() as u32,
        tool_errors,
        protocol_errors,
        input_tokens: output.usage.input_tokens,
        output_tokens: output.usage.output_tokens,
        total_tokens: output.usage.input_tokens + output.usage.output_tokens,
        cache_read_tokens: output.usage.cache_read_tokens,
        cache_write_tokens: output.usage.cache_write_tokens,
        judge_input_tokens: 0,
        judge_output_tokens: 0,
        latency_ms: output.latency_ms,
        first_tool: tools_called.first().map(|t| t.to_string()),
        tools_called: tools_called.join(","),
        final_answer: output.final_answer.map(redact),
        hit_max_turns: output.hit_max_turns,
        reasoning_tokens: output.usage.reasoning_tokens,
        truncated: output.truncated_turn.is_some(),
        truncated_turn: output.truncated_turn,
        timed_out: output.timed_out,
        tokens_estimated: output.tokens_estimated,
        ttft_ms: output.model_turns.first().and_then(|t| t.ttft_ms),
        model_turns: output.model_turns,
        calls: output
            .calls
            .into_iter()
            .map(|mut c| {
                c.arguments = runner.redactor.redact(&c.arguments);
                c.result = runner.redactor.redact(&c.result);
                c
            })
            .collect(),
        grade,
        attempts: attempts.into_iter().map(redact).collect(),
        request_retries: output.request_retries.into_iter().map(redact).collect(),
        started_at,
        text_calls: output.text_calls.redacted(&runner.redactor),
        app: output.app,
        tools_offered: output.tools_offered,
        user_turns: output
            .user_turns
            .into_iter()
            .map(|mut t| {
                t.message = redact(t.message);
                t.answer = t.answer.map(redact);
                t
            })
            .collect(),
        sampling_requests: count(true) as u32,
        elicitation_requests: count(false) as u32,
        unprepared_requests: asks.iter().filter(|a| !a.prepared).count() as u32,
        sampling_input_tokens: asks.iter().map(|a| a.input_tokens).sum(),
        sampling_output_tokens: asks.iter().map(|a| a.output_tokens).sum(),
        asks: asks
            .into_iter()
            .map(|mut a| {
                let text = runner.redactor.redact(&a.request.to_string());
                a.request = serde_json::from_str(&text).unwrap_or(a.request);
                let text = runner.redactor.redact(&a.answer.to_string());
                a.answer = serde_json::from_str(&text).unwrap_or(a.answer);
                a
            })
            .collect(),
        host_calls: host_calls
            .into_iter()
            .map(|mut c| {
                c.arguments = runner.redactor.redact(&c.arguments);
                c.result = runner.redactor.redact(&c.result);
                c
            })
            .collect(),
        tool_search: search_facts(
            host.config.profile.tool_search,
            host.config.profile.tool_search_k,
            tool_search,
            runner.task_for(key.task, key.side),
        ),
    }
}

/// What the episode keeps of its trial's searches for tools: `found_rank` and `found_at_k`
/// for the tools the side's task expects called (its own `expect`'s and its turns').
fn search_facts(
    mode: Option<crate::config::ToolSearch>,
    k: usize,
    log: Option<crate::episode::SearchLog>,
    task: &Task,
) -> Option<crate::episode::ToolSearchFacts> {
    let (mode, log) = (mode?, log?);
    let turns = task.turns.iter().filter_map(|t| t.expect.as_ref());
    let expected: Vec<&crate::suite::ToolName> = (std::iter::once(&task.expect).chain(turns))
        .flat_map(|e| e.calls.iter().map(|c| &c.tool))
        .collect();
    let matches = |tool: &str| expected.iter().any(|e| e.matches(tool));
    let matches: &dyn Fn(&str) -> bool = &matches;
    let expected = (!expected.is_empty()).then_some(matches);
    Some(crate::episode::ToolSearchFacts::of(mode, k, log, expected))
}

/// Grades a model's trial from its output, as the run records it. A conversation's grade holds
/// each turn's checks (tagged with the turn) and those of the task-level `expect`, which reads
/// all of the conversation's calls and every answer the model gave in it.
pub fn grade_output(task: &Task, output: &TrialOutput) -> Grade {
    let mut grade = grade_model(task, output);
    let requests: Vec<crate::grade::HostRequest> = (output.host_calls.iter())
        .map(|c| crate::grade::HostRequest {
            label: &c.tool,
            is_error: c.is_error,
        })
        .collect();
    let opening = output.opening_failure.as_deref();
    let exposure = crate::grade::exposure_checks(&task.expect, &requests, opening);
    if !exposure.is_empty() {
        let passed = exposure.iter().all(|c| c.passed);
        // A task whose only graders are these has no other check to have passed.
        grade.success = passed && (grade.success || grade.checks.is_empty());
        grade.checks.extend(exposure);
    }
    grade
}

/// The grade of the model's calls and answers (the task's `expect`, each turn's).
fn grade_model(task: &Task, output: &TrialOutput) -> Grade {
    let answer = output.final_answer.as_deref();
    if !task.is_conversation() {
        let calls = &output.calls;
        return crate::episode::grade_calls(
            task.kind,
            &task.expect,
            calls,
            answer,
            output.latency_ms,
        );
    }
    let mut checks = output.turn_checks.clone();
    let answers: Vec<&str> = (output.user_turns.iter())
        .filter_map(|t| t.answer.as_deref())
        .collect();
    let answers = answers.join("\n\n");
    let whole = crate::episode::grade_calls(
        task.kind,
        &task.expect,
        &output.calls,
        Some(&answers),
        output.latency_ms,
    );
    checks.extend(whole.checks);
    let ran_all = output.user_turns.iter().all(|t| t.ran);
    Grade {
        success: ran_all && !checks.is_empty() && checks.iter().all(|c| c.passed),
        checks,
    }
}

fn redact_transcript(redactor: &Redactor, transcript: Transcript) -> Transcript {
    if redactor.is_empty() {
        return transcript;
    }
    // Serialise, redact the text, parse back: one pass covers every string in the exchange.
    let text = serde_json::to_string(&transcript).unwrap_or_default();
    let redacted = redactor.redact(&text);
    if redacted == text {
        return transcript;
    }
    serde_json::from_str(&redacted).unwrap_or(transcript)
}
