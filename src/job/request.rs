//! A run put together in the library from what was asked (`mcpeval run`'s flags, or a nightly
//! job's settings): the config resolved (or the stored one of a run being resumed), the suite and
//! its trigger, the hosts and judges behind the response cache and rate limits, both servers
//! checked, the run directory. The command line only turns flags into a [`RunRequest`] and shows
//! the [`RunOutcome`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::hosts::{add_direct_host, build_hosts, build_judges, build_users, cached, rate_limited};
use super::trigger::{self, AutoDiff};
use super::{preflight, JobError, RunEnd, RunJob, Stop};
use crate::analysis::stale_list::StaleWindow;
use crate::analysis::tool_shift::ToolShiftFacts;
use crate::analysis::RunDesign;
use crate::config::{resolve, Overrides, RunConfig};
use crate::error::Exit;
use crate::host::aimd::Congestion;
use crate::host::cache::{ResponseCache, CACHE_DIR};
use crate::report::{
    read_stale_list, read_tool_shift, write_reports_with, write_tool_shift, Report,
};
use crate::rundir::{RunInfo, Shard};
use crate::runner::EventSink;

/// A task that attaches resources, starts from a server prompt or grades either needs every
/// host of the run to show that part of the server (`expose`): refused before any trial, with
/// the setting that would show it.
fn refuse_unexposed(
    suite: &crate::suite::Suite,
    hosts: &[crate::runner::HostRuntime],
) -> Result<(), JobError> {
    use crate::config::Exposed;
    for task in suite.tasks.iter().filter(|t| t.kind.has_model()) {
        let needs = [
            (task.needs_resources(), Exposed::Resources),
            (task.needs_prompts(), Exposed::Prompts),
        ];
        for part in needs
            .into_iter()
            .filter_map(|(needed, part)| needed.then_some(part))
        {
            let Some(host) = hosts.iter().find(|h| !h.config.profile.exposes(part)) else {
                continue;
            };
            let why = match part {
                Exposed::Resources => "attaches or grades resources",
                _ => "starts from or grades a server prompt",
            };
            return Err(crate::config::ConfigError::Invalid(format!(
                "task `{}` ({}) {why}, which host `{}` does not show its model: add `{}` to \
                 `expose` ([profile] expose = [\"tools\", \"{}\"], or --expose tools,{})",
                task.id,
                task.source,
                host.config.name,
                part.as_str(),
                part.as_str(),
                part.as_str()
            ))
            .into());
        }
    }
    Ok(())
}

/// What a run is asked to be, before anything is resolved.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// The config's layers above the file: flags and environment.
    pub overrides: Overrides,
    /// Finish this run (`--resume DIR`): its stored config is the run's.
    pub resume: Option<PathBuf>,
    /// The run directory (`--out DIR`); default: a new one under the config's `out_dir`.
    pub out: Option<PathBuf>,
    /// Run only the tasks this diff calls for (`--trigger DIFF.json`).
    pub trigger: Option<PathBuf>,
    /// Snapshot and diff both servers first, and run only the tasks the diff calls for.
    pub auto_trigger: bool,
    /// With `auto_trigger`: run even when the candidate breaks clients.
    pub allow_breaking: bool,
    /// How the command that asked says to run anyway when the candidate breaks clients
    /// [default: `run`'s `--allow-breaking`].
    pub breaking_advice: Option<String>,
    /// No response cache (`--no-cache`; a nightly job's models must answer tonight).
    pub no_cache: bool,
    /// Run only this shard's trials (`--shard I/N`).
    pub shard: Option<Shard>,
    /// Run the embedded demo servers although a suite or hosts were given (`--demo-servers`).
    pub demo_servers: bool,
    /// Follow the tools this diff found renamed (`--follow-renames DIFF.json`): added to the
    /// config's `[renames]`.
    pub follow_renames: Option<PathBuf>,
    /// Which of the suite's tasks to run (`mcpeval check` runs the call tasks in its smoke stage
    /// and the model tasks in its evaluation).
    pub kinds: TaskKinds,
    /// Leave `$GITHUB_STEP_SUMMARY` alone (a check writes one summary of its own).
    pub no_step_summary: bool,
    /// Write the call tasks' `result_snapshot` files from the baseline's answers, comparing
    /// none (`--update-snapshots`); without it a missing snapshot stops the run (exit 2).
    pub update_snapshots: bool,
    /// Record each side's server traffic into a cassette in this directory (`--record DIR`).
    pub record: Option<PathBuf>,
    /// A config already resolved, used as it is (`mcpeval explain`'s reverts: the candidate
    /// with one change undone); with `resume`, the directory's trials are kept as done.
    pub resolved: Option<Box<RunConfig>>,
}

/// Which kinds of task a run takes from its suite.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TaskKinds {
    #[default]
    All,
    /// `kind: call` tasks only.
    Calls,
    /// The tasks a model runs only.
    Models,
}

impl TaskKinds {
    pub fn keeps(self, task: &crate::suite::Task) -> bool {
        match self {
            Self::All => true,
            Self::Calls => !task.kind.has_model(),
            Self::Models => task.kind.has_model(),
        }
    }
}

impl RunRequest {
    /// A request that names a suite or hosts but no servers, and would run them against the
    /// embedded demo servers without being asked to.
    fn demo_servers_unasked(&self) -> bool {
        let o = &self.overrides;
        let no_servers = o.config.is_none() && o.baseline.is_none() && o.candidate.is_none();
        let own = !o.suites.is_empty() || !o.hosts.is_empty();
        self.resume.is_none() && no_servers && own && !self.demo_servers
    }
}

/// A line for the person running the job, in the order the job came to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// What was decided (the trigger's selection, the diff's table): standard output, as is.
    Text(String),
    /// A warning or a stop: standard error, one line.
    Warn(String),
}

impl Note {
    /// A line of standard output.
    pub fn out(line: String) -> Self {
        Self::Text(line + "\n")
    }

    /// Text of standard output as it is (a table that ends its own lines).
    pub fn text(text: String) -> Self {
        Self::Text(text)
    }

    pub fn warn(line: String) -> Self {
        Self::Warn(line)
    }
}

/// Why a run did not run its trials although nothing failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skipped {
    /// The trigger selected no task: no change affects models (exit 0).
    NothingTriggered,
    /// `--auto-trigger` found changes that break clients (exit 1) and they were not allowed.
    Breaking,
}

/// A run ready to start, and what was said on the way.
pub struct Prepared {
    pub notes: Vec<Note>,
    pub start: Start,
}

/// What [`prepare`] came to.
pub enum Start {
    Skipped(Skipped),
    Run(Box<ReadyRun>),
}

/// A run built and checked, with what its end will report besides the run's record.
pub struct ReadyRun {
    pub job: RunJob,
    /// The hosts' adaptive concurrency, for the end-of-run report.
    pub congestion: Vec<(String, Arc<Congestion>)>,
    pub cache: Option<Arc<ResponseCache>>,
    /// The names of the hosts that are the embedded simulated model.
    pub simulated: Vec<String>,
}

/// How a run went: its record and comparison (the reports are written), and what else its end
/// reports.
pub struct Finished {
    pub end: RunEnd,
    pub dir: PathBuf,
    pub shard: Option<Shard>,
    pub congestion: Vec<(String, Arc<Congestion>)>,
    pub cache: Option<Arc<ResponseCache>>,
    pub simulated: Vec<String>,
    /// The tool-choice shift of the finished run (its `tool_shift.csv`), once [`run`] has read
    /// it from the episodes; `None` before.
    pub tool_shift: Option<ToolShiftFacts>,
    /// The stale-list window's counts (`--stale-list`), once [`run`] has read them from the
    /// episodes; `None` before, and for a run without it.
    pub stale_list: Option<StaleWindow>,
}

impl Finished {
    /// The comparison's verdict as an exit code: a gated regression 1, too many infrastructure
    /// errors, a host stopped by its breaker or cassettes that could not be written 3, else 0.
    pub fn verdict(&self) -> Exit {
        match self.end.stopped.is_empty() && self.end.record_error.is_none() {
            true => self.end.comparison.outcome().exit(),
            false => Exit::Infra,
        }
    }

    /// Whether this is one shard of several, whose regression verdict is left to `mcpeval
    /// merge`.
    pub fn is_partial_shard(&self) -> bool {
        self.shard.is_some_and(|s| s.count > 1)
    }

    /// The exit code the run's end means: the verdict's for a run the budget stopped; 130 for
    /// one cut short; else the verdict's, except that a shard of several exits 0 on a
    /// regression (so that a CI matrix or an Indexed Job sees the shard succeed).
    pub fn exit(&self) -> Exit {
        let verdict = self.verdict();
        if self.end.budget_note.is_some() {
            verdict
        } else if self.end.cancelled {
            Exit::Interrupted
        } else if self.is_partial_shard() && verdict == Exit::Regression {
            Exit::Ok
        } else {
            verdict
        }
    }
}

/// How a run ended.
pub enum RunOutcome {
    Skipped(Skipped),
    Finished(Box<Finished>),
}

impl RunOutcome {
    /// The documented exit code of the run.
    pub fn exit(&self) -> Exit {
        match self {
            Self::Skipped(Skipped::NothingTriggered) => Exit::Ok,
            Self::Skipped(Skipped::Breaking) => Exit::Regression,
            Self::Finished(finished) => finished.exit(),
        }
    }
}

/// What shows a run to the person running it (the command line's console): the library decides,
/// the face shows.
pub trait Face: Sync {
    /// The job's notes, in the order it came to them.
    fn notes(&self, notes: &[Note]);
    /// The run is built and about to start its trials.
    fn starting(&self, job: &RunJob);
    /// The event sinks that show the run as it goes (a progress bar).
    fn sinks(&self) -> Vec<Box<dyn EventSink>>;
    /// The run is over and its reports are written.
    fn finished(&self, finished: &Finished);
}

/// Runs what `request` asks for, shown through `face`: built ([`prepare`]), its trials run, its
/// comparison and reports written. `stop.finish`, once cancelled, acts as a first Ctrl-C: no new
/// trial starts, those in flight finish, the reports are written; `stop.now` as a second.
pub async fn run(
    request: &RunRequest,
    stop: Stop,
    face: &dyn Face,
) -> Result<RunOutcome, JobError> {
    let prepared = prepare(request).await?;
    face.notes(&prepared.notes);
    let ready = match prepared.start {
        Start::Skipped(why) => return Ok(RunOutcome::Skipped(why)),
        Start::Run(ready) => ready,
    };
    face.starting(&ready.job);
    let mut sinks = face.sinks();
    let writer = request
        .update_snapshots
        .then(|| super::SnapshotWriter::new(&ready.job.suite));
    if let Some(writer) = &writer {
        sinks.push(Box::new(writer.clone()));
    }
    let mut finished = ready.run(stop, sinks).await?;
    if let Some(writer) = writer {
        let notes: Vec<Note> = writer.notes().into_iter().map(Note::warn).collect();
        face.notes(&notes);
    }
    let (dir, info) = (&finished.dir, &finished.end.info);
    // Read from the episodes once, for tool_shift.csv and the reports that say it in words.
    let shift = read_tool_shift(dir, dir, info.config.stats.alpha, info.seed)
        .and_then(|shift| write_tool_shift(&shift, dir).map(|()| shift))
        .map_err(|e| JobError::write(dir, e))?;
    let stale = read_stale_list(dir, dir, info).map_err(|e| JobError::write(dir, e))?;
    let report = Report {
        info,
        baseline_run: None,
        comparison: &finished.end.comparison,
        tool_shift: Some(&shift),
        stale_list: stale.as_ref(),
    };
    write_reports_with(&report, dir, !request.no_step_summary)
        .map_err(|e| JobError::write(dir, e))?;
    finished.tool_shift = Some(shift);
    finished.stale_list = stale;
    face.finished(&finished);
    Ok(RunOutcome::Finished(Box::new(finished)))
}

impl ReadyRun {
    /// Runs the trials through the job's sinks and `sinks`, and compares the sides.
    pub async fn run(
        self,
        stop: Stop,
        sinks: Vec<Box<dyn EventSink>>,
    ) -> Result<Finished, JobError> {
        let dir = self.job.dir.clone();
        let shard = self.job.shard;
        let end = self
            .job
            .execute(stop, sinks)
            .await
            .map_err(|e| JobError::Run(e.into()))?;
        Ok(Finished {
            end,
            dir,
            shard,
            congestion: self.congestion,
            cache: self.cache,
            simulated: self.simulated,
            tool_shift: None,
            stale_list: None,
        })
    }
}

/// What an adaptive run's trial budget must cover, per side for the whole run.
pub struct BudgetNeeds {
    /// Every task's first look on every host.
    pub first_look: u64,
    /// Every task's looks up to `max_trials` on every host.
    pub max_trials: u64,
}

impl BudgetNeeds {
    pub fn of(stats: &crate::config::StatsConfig, tasks: usize, hosts: usize) -> Self {
        let units = (tasks * hosts) as u64;
        Self {
            first_look: units * u64::from(stats.first_look()),
            max_trials: units * u64::from(stats.max_trials),
        }
    }
}

/// Refuses an adaptive run whose trial budget cannot give every task its first look (exit 2),
/// with the smallest budget that does and the per-task reading of the number given; a budget
/// that serves the first look but not `max_trials` for every task is a warning. `given`: the
/// budget came from `--trial-budget` (else from `[stats] trial_budget`).
fn budget_check(
    config: &RunConfig,
    tasks: usize,
    hosts: usize,
    given: bool,
) -> Result<Option<String>, JobError> {
    let stats = &config.stats;
    let Some(budget) = stats
        .trial_budget
        .filter(|_| stats.adaptive && tasks > 0 && hosts > 0)
    else {
        return Ok(None);
    };
    let needs = BudgetNeeds::of(stats, tasks, hosts);
    let name = match given {
        true => format!("--trial-budget {budget}"),
        false => format!("[stats] trial_budget = {budget}"),
    };
    let units = match hosts {
        1 => format!("{tasks} tasks"),
        _ => format!("{tasks} tasks × {hosts} hosts"),
    };
    if budget < needs.first_look {
        let per_task = budget * (tasks * hosts) as u64;
        let meant = match per_task >= needs.first_look {
            true => format!("; did you mean {per_task}, {budget} per task?"),
            false => String::new(),
        };
        return Err(JobError::BudgetTooSmall(format!(
            "{name} is too small for {units}: it is {budget} trials per side for the whole \
             run, and every task's first look needs {} ({units} × {} trials per side, [stats] \
             look_every); the smallest budget that gives every task its first look is {}{meant}",
            needs.first_look,
            stats.first_look(),
            needs.first_look
        )));
    }
    if budget < needs.max_trials {
        return Ok(Some(format!(
            "warning: {name} gives each of the {units} its first look ({} trials per side in \
             all) but not max_trials to every task ({} = {units} × {}): the budget goes to the \
             likeliest regressions first, and a task it stops reads `inconclusive: budget ran \
             out at N trials`",
            needs.first_look, needs.max_trials, stats.max_trials
        )));
    }
    Ok(None)
}

/// Builds the run that `request` asks for: resolved, loaded, triggered, its hosts built, both
/// servers started and listed, its directory made. Nothing of the trials runs yet.
pub async fn prepare(request: &RunRequest) -> Result<Prepared, JobError> {
    if request.demo_servers_unasked() {
        return Err(JobError::NoServers);
    }
    let mut notes = Vec::new();
    let (config, dir, previous) = match (&request.resume, &request.resolved) {
        (Some(dir), Some(config)) => {
            let info = RunInfo::read(dir).map_err(|e| JobError::Resume {
                dir: dir.to_path_buf(),
                source: e.into(),
            })?;
            (*config.clone(), Some(dir.clone()), Some(info))
        }
        (Some(dir), None) => resume_state(dir, request.overrides.concurrency)?,
        (None, Some(config)) => (*config.clone(), None, None),
        (None, None) => (resolve(&request.overrides)?, None, None),
    };
    let shard = shard_of(request.shard, previous.as_ref())?;
    for spec in [&config.baseline, &config.candidate] {
        super::read_served_files(spec)?;
    }
    let mut config = config;
    // A diff the run was given (to follow its renames, or as its trigger): it names what the
    // candidate did to a tool only the baseline lists.
    let mut known_diff = None;
    if let Some(path) = &request.follow_renames {
        let diff = trigger::read_diff(path)?;
        let found = trigger::renames(&diff);
        known_diff = Some(diff);
        if found.is_empty() {
            notes.push(Note::warn(format!(
                "warning: --follow-renames {}: the diff found no renamed tool",
                path.display()
            )));
        }
        for (old, new) in found {
            config.renames.entry(old).or_insert(new);
        }
        config.renames = crate::config::checked_renames(&config.renames)?;
    }
    if !config.renames.is_empty() && !config.stale_list {
        let pairs: Vec<String> = (config.renames.iter())
            .map(|(old, new)| format!("`{old}` → `{new}`"))
            .collect();
        notes.push(Note::warn(format!(
            "renames followed on the candidate side: {}",
            pairs.join(", ")
        )));
    }
    if !config.is_embedded_demo() && crate::suite::is_embedded_fallback(&config.suites) {
        notes.push(Note::warn(
            "note: no tasks/demo folder here: the demo suite compiled into mcpeval is used"
                .to_owned(),
        ));
    }
    let mut suite = crate::suite::load_or_embedded(&config.suites)?;
    suite.tasks.retain(|t| request.kinds.keeps(t));
    // What any host shows besides tools: its changes trigger too.
    let mut exposed: Vec<crate::config::Exposed> = (config.hosts.iter())
        .flat_map(|h| h.profile.expose.clone())
        .collect();
    exposed.sort_unstable();
    exposed.dedup();
    let mut trigger = match (&request.trigger, &previous) {
        (Some(path), _) => {
            let diff = trigger::read_diff(path)?;
            let source = path.display().to_string();
            let applied = trigger::apply(&diff, &source, &mut suite, &mut notes, &exposed);
            known_diff = Some(diff);
            match applied {
                Some(trigger) => Some(trigger),
                None => return Ok(skipped(notes, Skipped::NothingTriggered)),
            }
        }
        (None, Some(info)) => {
            // A resumed run keeps the tasks its trigger picked.
            suite.tasks.retain(|t| info.tasks.contains(&t.id));
            None
        }
        (None, None) => None,
    };
    super::stale::prepare(&config, &mut suite, &mut notes)?;
    super::snapshots::prepare(&mut suite, request.update_snapshots)?;
    let cache = (!request.no_cache).then(|| {
        let results = results_dir(request, &config);
        Arc::new(ResponseCache::new(results.join(CACHE_DIR)))
    });
    // A suite of call tasks only needs no model: no host is built (nor its API key asked for).
    let hosts = match suite.tasks.iter().any(|t| t.kind.has_model()) {
        true if config.hosts.is_empty() => {
            return Err(crate::config::ConfigError::Invalid(crate::config::NO_HOST.into()).into())
        }
        true => rate_limited(cached(build_hosts(&config)?, cache.as_ref())),
        false => Vec::new(),
    };
    if previous.is_none() {
        let model_tasks = suite.tasks.iter().filter(|t| t.kind.has_model()).count();
        let given = request.overrides.trial_budget.is_some();
        if let Some(warning) = budget_check(&config, model_tasks, hosts.len(), given)? {
            notes.push(Note::warn(warning));
        }
    }
    let congestion: Vec<(String, Arc<Congestion>)> = hosts
        .iter()
        .filter_map(|h| Some((h.config.name.clone(), h.congestion.clone()?)))
        .collect();
    let (judges, mut judge_secrets) = build_judges(&config, &suite, &mut notes)?;
    let (users, user_secrets) = build_users(&config, &suite)?;
    judge_secrets.extend(user_secrets);
    let (samplers, sampler_secrets) = super::samplers::build_samplers(&config, &suite)?;
    judge_secrets.extend(sampler_secrets);
    let recording = super::record::start(request.record.as_deref(), &hosts, &mut notes)?;
    super::writes::check_sandboxes(&config, &suite.tasks)?;
    // The pre-flight listing (and the `--auto-trigger` snapshot) declares what the suite's tasks
    // say how to answer: a server may list some tools only to a client that declares them.
    let needed = (suite.tasks.iter()).fold(crate::suite::AskCapabilities::default(), |all, t| {
        all.union(t.asks.capabilities())
    });
    config.baseline.asks = needed;
    config.candidate.asks = needed;
    let preflight = preflight(&config, recording.as_ref()).await?;
    let (baseline_tools, candidate_tools) = preflight.tools();
    let found =
        super::expectations::check(&suite, baseline_tools, candidate_tools, &config.renames)
            .naming_changes(known_diff.as_ref())
            .in_stale_window(config.stale_list);
    if !found.problems.is_empty() {
        return Err(crate::suite::SuiteError::Invalid(found.problems).into());
    }
    let warnings = found.warnings.iter().map(crate::suite::warning_line);
    notes.extend(warnings.map(Note::warn));
    let allowed = super::writes::gate_run(&config, &suite, [baseline_tools, candidate_tools])?;
    notes.extend(allowed.notes.into_iter().map(Note::warn));
    let run_id = match &previous {
        Some(info) => info.run_id.clone(),
        None => crate::rundir::new_run_id(&config),
    };
    let dir = match dir {
        Some(dir) => dir,
        None => crate::rundir::create(request.out.as_deref(), &config, &run_id)?,
    };
    if request.auto_trigger {
        let advice =
            (request.breaking_advice.as_deref()).unwrap_or("pass --allow-breaking to run anyway");
        let allow = request.allow_breaking;
        let diff = match trigger::auto(&config, &dir, allow, advice, &mut notes).await? {
            AutoDiff::Diff(diff) => diff,
            AutoDiff::Breaking => return Ok(skipped(notes, Skipped::Breaking)),
        };
        let source = dir.join("contract").join("diff.json");
        let source = source.display().to_string();
        match trigger::apply(&diff, &source, &mut suite, &mut notes, &exposed) {
            Some(t) => trigger = Some(t),
            None => return Ok(skipped(notes, Skipped::NothingTriggered)),
        }
    }
    let added = {
        let (b, c) = preflight.tools();
        super::added::added_tool_tasks(&suite.tasks, b, c)
    };
    let lines = super::added::added_lines(&added, "  - ");
    notes.extend(lines.into_iter().map(Note::warn));
    let design = RunDesign {
        tasks: (suite.tasks.iter())
            .filter(|t| t.kind.has_model())
            .map(|t| (t.kind, t.set))
            .collect(),
        hosts: hosts.len(),
    };
    let mut hosts = hosts;
    let app = hosts.iter().find(|h| h.driver.app().is_some());
    let fixture = (suite.tasks.iter()).find(|t| {
        t.kind.has_model() && !(t.setup.is_empty() && t.teardown.is_empty() && t.after.is_empty())
    });
    if let (Some(app), Some(task)) = (app, fixture) {
        return Err(crate::config::ConfigError::Invalid(format!(
            "task `{}` ({}) has setup, teardown or after calls, which need the trial's server; \
             host `{}` is an app that starts its own: run such tasks on API hosts",
            task.id, task.source, app.config.name
        ))
        .into());
    }
    if config.replay_user_turns && config.stats.adaptive {
        return Err(crate::config::ConfigError::Invalid(
            "--replay-user-turns runs each candidate trial after its baseline trial, which \
             adaptive trials (run in looks) do not: use one or the other"
                .to_owned(),
        )
        .into());
    }
    if config.replay_user_turns && suite.tasks.iter().all(|t| t.user.is_none()) {
        notes.push(Note::warn(
            "--replay-user-turns: no task has a simulated user (`user:`), so there are no user \
             messages to replay"
                .to_owned(),
        ));
    }
    let conversation = suite.tasks.iter().find(|t| t.is_conversation());
    if let (Some(app), Some(task)) = (app, conversation) {
        return Err(crate::config::ConfigError::Invalid(format!(
            "task `{}` ({}) is a conversation of several user messages; host `{}` is an app \
             that mcpeval hands one prompt: run conversations on API hosts",
            task.id, task.source, app.config.name
        ))
        .into());
    }
    refuse_unexposed(&suite, &hosts)?;
    if suite.tasks.iter().all(|t| !t.kind.has_model()) {
        // Only call tasks: no model runs a trial.
        hosts.clear();
    }
    add_direct_host(&mut hosts, &suite)?;
    if let Ok(Some(line)) = design.warning(&config.stats, u64::from(config.trials)) {
        notes.push(Note::warn(line));
    }
    let simulated = hosts
        .iter()
        .filter(|h| h.driver.is_simulated())
        .map(|h| h.config.name.clone())
        .collect();
    let job = RunJob {
        run_id,
        config,
        suite,
        hosts,
        judges,
        users,
        samplers,
        judge_secrets,
        preflight,
        dir,
        previous,
        trigger,
        shard,
        recording,
        added,
    };
    Ok(Prepared {
        notes,
        start: Start::Run(Box::new(ReadyRun {
            job,
            congestion,
            cache,
            simulated,
        })),
    })
}

fn skipped(notes: Vec<Note>, why: Skipped) -> Prepared {
    Prepared {
        notes,
        start: Start::Skipped(why),
    }
}

/// The results folder the response cache lives in, beside the run directory: `results/` by
/// default, the parent of `--out DIR` or of a resumed run's directory.
fn results_dir(request: &RunRequest, config: &RunConfig) -> PathBuf {
    request
        .resume
        .as_deref()
        .or(request.out.as_deref())
        .and_then(Path::parent)
        .map(|p| match p.as_os_str().is_empty() {
            true => PathBuf::from("."),
            false => p.to_path_buf(),
        })
        .unwrap_or_else(|| config.out_dir.clone())
}

/// `--shard I/N`, or the shard of the run `--resume` finishes (which keeps it).
fn shard_of(given: Option<Shard>, previous: Option<&RunInfo>) -> Result<Option<Shard>, JobError> {
    let Some(previous) = previous else {
        return Ok(given);
    };
    match (given, previous.shard) {
        (Some(given), kept) if Some(given) != kept => Err(JobError::ShardMismatch {
            given: given.to_string(),
            kept: kept.map_or("not sharded".to_owned(), |s| format!("shard {s}")),
        }),
        _ => Ok(previous.shard),
    }
}

/// The config, directory and record of a run to finish (`--resume DIR`); `concurrency` is
/// the one flag that may change.
fn resume_state(
    dir: &Path,
    concurrency: Option<usize>,
) -> Result<(RunConfig, Option<PathBuf>, Option<RunInfo>), JobError> {
    let info = RunInfo::read(dir).map_err(|e| JobError::Resume {
        dir: dir.to_path_buf(),
        source: e.into(),
    })?;
    let mut config = stored_config(&info, None)?;
    if let Some(c) = concurrency {
        config.concurrency = c.max(1);
    }
    Ok((config, Some(dir.to_path_buf()), Some(info)))
}

/// The config a run directory records, with the secrets it does not store (server env and
/// headers, literal host headers) read again from its config file, or from `config_file` when
/// given.
pub fn stored_config(info: &RunInfo, config_file: Option<&Path>) -> Result<RunConfig, JobError> {
    let mut config = info.config.clone();
    // Secrets (server env, headers) are not stored: read them again from the config file.
    let source =
        config_file.map_or_else(|| PathBuf::from(&config.config_source), Path::to_path_buf);
    if source.is_file() {
        // The run's suites stand in for a file that names none (they came from `--suite`), and
        // a side the file does not name came from a flag, with no secrets in the file: a
        // stand-in spec lets the file resolve, and that side keeps what the run stored.
        let named = crate::config::config_targets(&source).unwrap_or_default();
        let stand_in = |given: &Option<String>| given.is_none().then(|| "demo:1.4.0".to_owned());
        let again = resolve(&Overrides {
            config: Some(source),
            suites: config.suites.clone(),
            baseline: stand_in(&named.baseline),
            candidate: stand_in(&named.candidate),
            ..Default::default()
        })?;
        // Literal host header values are written as `[REDACTED]`: take them from the file.
        for host in &mut config.hosts {
            if let Ok(fresh) = crate::config::resolve_extra_host(&again, &host.name) {
                host.settings.headers = fresh.settings.headers;
            }
        }
        if named.baseline.is_some() {
            config.baseline.env = again.baseline.env;
            config.baseline.headers = again.baseline.headers;
        }
        if named.candidate.is_some() {
            config.candidate.env = again.candidate.env;
            config.candidate.headers = again.candidate.headers;
        }
    }
    Ok(config)
}
