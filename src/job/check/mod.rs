//! `mcpeval check`: the whole regression check of a server in one run directory, cheapest stage
//! first — smoke, contract, conformance, deprecations, evaluation — each recorded with its
//! result, time and raw output (`check.json`), each skipped with a reason when it cannot apply,
//! and one verdict.

mod conformance;
mod contract;
mod deprecations;
mod evaluation;
mod host_settings;
mod nested;
mod resume;
mod served;
mod smoke;
mod token_cost;

/// The expected-failures file `--write-baseline` writes into the stored snapshot's directory
/// when no path is given.
pub const EXPECTED_FAILURES_FILE: &str = "expected-failures.yml";

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::{Face, JobError};
use crate::config::{resolve, CheckFile, ClientProfile, Overrides, RunConfig, ServerSpec};
use crate::contract::Snapshot;
use crate::report::{append_step_summary, check_junit, check_summary, JUNIT_XML, SUMMARY_MD};
use crate::rundir::{Case, CheckRecord, StageRecord, StageStatus};

/// Why a step of a stage could not be done, in words: it ends the stage (as `error`, or as
/// `failed` when the candidate is to blame) and is shown in its line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct StepError(String);

/// A [`StepError`] from `format!` arguments.
macro_rules! step {
    ($($words:tt)*) => {
        $crate::job::check::StepError::from(format!($($words)*))
    };
}
pub(super) use step;

impl From<String> for StepError {
    fn from(text: String) -> Self {
        Self(text)
    }
}

impl From<&str> for StepError {
    fn from(text: &str) -> Self {
        Self(text.to_owned())
    }
}

/// The stages, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    Smoke,
    Contract,
    Conformance,
    Deprecations,
    Evaluation,
}

impl Stage {
    pub const ALL: [Self; 5] = [
        Self::Smoke,
        Self::Contract,
        Self::Conformance,
        Self::Deprecations,
        Self::Evaluation,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Smoke => "smoke",
            Self::Contract => "contract",
            Self::Conformance => "conformance",
            Self::Deprecations => "deprecations",
            Self::Evaluation => "evaluation",
        }
    }
}

impl std::str::FromStr for Stage {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|stage| stage.name() == s.trim())
            .ok_or_else(|| {
                format!(
                    "unknown stage `{s}` (expected {})",
                    Self::ALL.map(Self::name).join(", ")
                )
            })
    }
}

/// What a check is asked to be: `mcpeval check`'s flags over the config's `[check]` table.
#[derive(Debug, Clone, Default)]
pub struct CheckRequest {
    /// The run config's layers (servers, suite, hosts, trials…), as for `mcpeval run`.
    pub overrides: Overrides,
    /// The snapshot directory kept in the repository that the contract is diffed against.
    pub baseline_snapshot: Option<PathBuf>,
    /// The check's directory [default: `<out_dir>/check-<id>`].
    pub out: Option<PathBuf>,
    /// The stages to run [default: all].
    pub stages: Vec<Stage>,
    /// Evaluate the whole suite, not only the tasks the contract marks.
    pub all: bool,
    pub stop_on_breaking: bool,
    /// Refresh the stored snapshot and the expected-failures file from the baseline side.
    pub write_baseline: bool,
    pub expected_failures: Option<PathBuf>,
    pub client_profiles: Vec<ClientProfile>,
    pub conformance: Option<String>,
    pub fail_on_new_deprecations: bool,
    /// Fail the smoke stage on a description-safety finding the baseline did not have.
    pub fail_on_description_risks: bool,
    /// Fail the contract stage when the tool list's tokens grow past this.
    pub max_tool_tokens_increase: Option<crate::config::TokenIncrease>,
    /// Host settings files to read for entries naming renamed or removed tools [default:
    /// `[check] host_settings`, else those found in the current directory].
    pub host_settings: Vec<PathBuf>,
    pub protocol_versions: Option<Vec<String>>,
    /// A stage named in `stages` that is skipped passes instead of making the check exit 3.
    pub allow_skipped: bool,
    /// Record the evaluation's server traffic into cassettes in this directory.
    pub record: Option<PathBuf>,
    /// Finish the check in `out` (`--resume DIR`): the stages its `check.json` ended are kept.
    pub resume: bool,
    /// The flags as given, recorded in `check.json` for `--resume`.
    pub args: Vec<String>,
    /// A check another job runs for its own ends (`init`'s expected failures): nothing is
    /// appended to GITHUB_STEP_SUMMARY.
    pub quiet: bool,
}

/// Everything the stages share: the settings, the servers, and what earlier stages found.
pub(super) struct Ctx {
    pub dir: PathBuf,
    /// The run config's layers, for the runs of call tasks and of the evaluation.
    pub overrides: Overrides,
    /// `None`: no baseline server, only a stored snapshot.
    pub baseline: Option<ServerSpec>,
    pub candidate: ServerSpec,
    pub settings: Settings,
    /// The servers' stderr as the smoke stage saw it (stdio servers).
    pub stderr: BTreeMap<&'static str, String>,
    /// The contract stage's snapshots (first client profile) and diff.
    pub baseline_snapshot: Option<Snapshot>,
    pub candidate_snapshot: Option<Snapshot>,
    pub diff_path: Option<PathBuf>,
    pub breaking: bool,
    /// The suite's tasks by kind, read once for the smoke stage and the evaluation.
    pub tasks: Tasks,
    /// The model host the evaluation runs on.
    pub host: Host,
    /// The check is being finished (`--resume`): a stage's earlier output may be on disk.
    pub resume: bool,
    pub log: Box<dyn Fn(&str) + Sync + Send>,
}

/// The suite a check was given, as its stages need it.
pub(super) enum Tasks {
    /// No suite (no `--suite`, no `suites` in the config).
    NoSuite,
    Counted {
        calls: usize,
        models: usize,
        /// The call tasks the baseline is known to fail (`expected_to_fail: true`).
        expected_to_fail: Vec<String>,
    },
}

impl Tasks {
    /// The suite counted; one that cannot be read, or has a problem, is the user's to fix
    /// before any stage runs (every `file:line:col` at once, exit 2, as `run` refuses it).
    fn of(config: &RunConfig) -> Result<Self, JobError> {
        if config.suites.is_empty() && !config.is_embedded_demo() {
            return Ok(Self::NoSuite);
        }
        let suite = crate::suite::load_or_embedded(&config.suites)?;
        let calls = suite.tasks.iter().filter(|t| !t.kind.has_model()).count();
        Ok(Self::Counted {
            calls,
            models: suite.tasks.len() - calls,
            expected_to_fail: (suite.tasks.iter())
                .filter(|t| t.expected_to_fail)
                .map(|t| t.id.clone())
                .collect(),
        })
    }
}

/// The evaluation's model host, as the config resolved it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Host {
    /// None named (outside the embedded demo, `sim` is no default).
    None,
    /// Only the embedded simulated model: its verdicts are labelled as such.
    Simulated,
    /// At least one real model.
    Real,
}

impl Host {
    fn of(config: &RunConfig) -> Self {
        let sim = crate::config::Provider::Sim;
        if config.hosts.is_empty() {
            Self::None
        } else if config.hosts.iter().all(|h| h.provider == sim) {
            Self::Simulated
        } else {
            Self::Real
        }
    }
}

impl Ctx {
    /// The layers of the runs a check starts (its call tasks, its evaluation).
    pub fn run_overrides(&self) -> Overrides {
        Overrides {
            suite_optional: false,
            ..self.overrides.clone()
        }
    }
}

/// The request and `[check]` resolved.
pub(super) struct Settings {
    pub stored: Option<PathBuf>,
    pub expected_failures: Option<PathBuf>,
    pub requirements: Option<Vec<String>>,
    pub protocol_versions: Option<Vec<String>>,
    pub fail_on_new_deprecations: bool,
    pub fail_on_description_risks: bool,
    pub max_tool_tokens_increase: Option<crate::config::TokenIncrease>,
    /// The host settings files named; `None`: those found in the current directory.
    pub host_settings: Option<host_settings::Named>,
    /// `[profile] server_label` when the config sets it: that label in host settings is the
    /// server under test.
    pub server_label: Option<String>,
    pub conformance: Option<String>,
    pub http_command: Option<String>,
    pub http_url: Option<String>,
    pub client_profiles: Vec<ClientProfile>,
    pub auth_profiles: Vec<String>,
    pub stop_on_breaking: bool,
    pub write_baseline: bool,
    pub all: bool,
    pub config_path: Option<PathBuf>,
    pub record: Option<PathBuf>,
}

/// How a check ended: its record (and reports written) and its directory.
pub struct Checked {
    pub record: CheckRecord,
    pub dir: PathBuf,
    /// A Ctrl-C, SIGTERM or SIGHUP stopped it: the stages after the one it cut short did not
    /// run (exit 130).
    pub interrupted: bool,
}

/// Runs the check `request` asks for. `log` says what is going on, a line at a time; `face`
/// shows the runs of call tasks and of the evaluation.
pub async fn check(
    request: &CheckRequest,
    face: &dyn Face,
    log: Box<dyn Fn(&str) + Sync + Send>,
) -> Result<Checked, JobError> {
    let (table, server_label) = match &request.overrides.config {
        Some(path) => (
            CheckFile::read(path)?.unwrap_or_default(),
            crate::config::explicit_server_label(path)?,
        ),
        None => (CheckFile::default(), None),
    };
    let settings = Settings {
        server_label,
        ..settings(request, table)
    };
    if let Some(named) = &settings.host_settings {
        named.ensure_exist()?;
    }
    let (config, has_baseline) = resolve_servers(&request.overrides, settings.stored.is_some())?;
    let tasks = Tasks::of(&config)?;
    // No stage starts on a suite that could write to a server's real state unasked.
    for note in super::writes::gate_check(&config, has_baseline)
        .await?
        .notes
    {
        log(&note);
    }
    let dir = match &request.out {
        Some(dir) => dir.clone(),
        None => config
            .out_dir
            .join(format!("check-{}", crate::rundir::new_run_id(&config))),
    };
    let previous = match request.resume {
        true => Some(CheckRecord::read(&dir).map_err(|e| JobError::Resume {
            dir: dir.clone(),
            source: e.into(),
        })?),
        false => None,
    };
    std::fs::create_dir_all(&dir).map_err(|e| JobError::write(&dir, e))?;
    let mut ctx = Ctx {
        baseline: has_baseline.then(|| config.baseline.clone()),
        candidate: config.candidate.clone(),
        dir: dir.clone(),
        overrides: request.overrides.clone(),
        settings,
        stderr: BTreeMap::new(),
        baseline_snapshot: None,
        candidate_snapshot: None,
        diff_path: None,
        breaking: false,
        tasks,
        host: Host::of(&config),
        resume: request.resume,
        log,
    };
    let mut record = new_record(&ctx, request);
    let explicit = !request.stages.is_empty();
    let stages: Vec<Stage> = match explicit {
        true => {
            let mut s = request.stages.clone();
            s.sort();
            s.dedup();
            s
        }
        false => Stage::ALL.to_vec(),
    };
    // A signal stops the check: the stage in flight ends as `error` (an evaluation finishes its
    // trials in flight and writes its files, as `run` does), the later ones do not run.
    let (stop, watcher) = watch_signals();
    let nested = nested::Nested(face);
    for stage in stages {
        if stop.is_cancelled() {
            break;
        }
        if let Some(kept) = resume::kept(previous.as_ref(), stage) {
            (ctx.log)(&format!("{}: kept from check.json", stage.name()));
            resume::restore(&mut ctx, &kept);
            record.stages.push(kept);
            contract::reported(&ctx, &mut record);
            continue;
        }
        (ctx.log)(&format!("{}…", stage.name()));
        let started = Instant::now();
        let mut result = run_stage(stage, &mut ctx, &nested, &stop).await;
        result.seconds = started.elapsed().as_secs_f64();
        if explicit && !request.allow_skipped {
            named_skip_not_done(stage, &ctx, &mut result);
        }
        (ctx.log)(&crate::report::stage_line(&result));
        record.stages.push(result);
        contract::reported(&ctx, &mut record);
        // Nothing is lost if the check is cut short: the record so far is on disk.
        write_record(&record, &dir, false)?;
    }
    drop(watcher);
    record.interrupted = stop.is_cancelled();
    write_record(&record, &dir, !request.quiet)?;
    Ok(Checked {
        record,
        dir,
        interrupted: stop.is_cancelled(),
    })
}

/// The record of a check about to run its stages.
fn new_record(ctx: &Ctx, request: &CheckRequest) -> CheckRecord {
    CheckRecord {
        format_version: 1,
        baseline: match (&ctx.baseline, &ctx.settings.stored) {
            (Some(spec), _) => spec.display(),
            (None, Some(stored)) => format!("stored snapshot {}", stored.display()),
            (None, None) => "(none)".into(),
        },
        candidate: ctx.candidate.display(),
        baseline_reported: None,
        candidate_reported: None,
        stages: Vec::new(),
        interrupted: false,
        args: request.args.clone(),
    }
}

/// A token cancelled by the first Ctrl-C, SIGTERM or SIGHUP, and the task that watches for them.
fn watch_signals() -> (CancellationToken, AbortOnDropHandle<()>) {
    let stop = CancellationToken::new();
    let watcher = tokio::spawn({
        let stop = stop.clone();
        async move {
            if super::run::Signals::new().next().await {
                stop.cancel();
            }
        }
    });
    (stop, AbortOnDropHandle::new(watcher))
}

/// A stage named in `--stages` that was skipped could not be done: a job that asked only for it
/// has checked nothing. A skip the flags asked for (`--stop-on-breaking`) is what was asked.
fn named_skip_not_done(stage: Stage, ctx: &Ctx, result: &mut StageRecord) {
    let asked = stage == Stage::Evaluation && ctx.breaking && ctx.settings.stop_on_breaking;
    if asked || result.status != StageStatus::Skipped {
        return;
    }
    result.status = StageStatus::Error;
    result.reason = format!(
        "named in --stages but skipped, so it could not be done: {} (--allow-skipped lets a \
         skipped stage pass)",
        result.reason
    );
}

/// Runs one stage; a signal ends any but the evaluation (which finishes its trials in flight and
/// writes its files, as `run` does) as `error`.
async fn run_stage(
    stage: Stage,
    ctx: &mut Ctx,
    face: &dyn Face,
    stop: &CancellationToken,
) -> StageRecord {
    if stage == Stage::Evaluation {
        return evaluation::run(ctx, face).await;
    }
    let work = async {
        match stage {
            Stage::Smoke => smoke::run(ctx, face).await,
            Stage::Contract => contract::run(ctx).await,
            Stage::Conformance => conformance::run(ctx).await,
            _ => deprecations::run(ctx).await,
        }
    };
    tokio::select! {
        result = work => result,
        _ = stop.cancelled() => Outcome::new(stage).end(
            StageStatus::Error,
            "interrupted (Ctrl-C, SIGTERM or SIGHUP) before the stage finished",
        ),
    }
}

fn write_record(record: &CheckRecord, dir: &Path, last: bool) -> Result<(), JobError> {
    record.write(dir).map_err(|e| JobError::write(dir, e))?;
    let summary = check_summary(record);
    let path = dir.join(SUMMARY_MD);
    std::fs::write(&path, &summary).map_err(|e| JobError::write(&path, e))?;
    let path = dir.join(JUNIT_XML);
    std::fs::write(&path, check_junit(record)).map_err(|e| JobError::write(&path, e))?;
    if last {
        append_step_summary(summary.as_bytes()).map_err(|e| JobError::write(&path, e))?;
    }
    Ok(())
}

fn settings(request: &CheckRequest, table: CheckFile) -> Settings {
    let stored = (request.baseline_snapshot.clone()).or(table.baseline_snapshot);
    // Without a path, the file in the stored snapshot's directory: written there by
    // --write-baseline, read from there when it exists.
    let beside = (stored.as_ref())
        .map(|dir| dir.join(EXPECTED_FAILURES_FILE))
        .filter(|path| request.write_baseline || path.exists());
    Settings {
        expected_failures: (request.expected_failures.clone())
            .or(table.expected_failures)
            .or(beside),
        stored,
        requirements: table.requirements,
        protocol_versions: request
            .protocol_versions
            .clone()
            .or(table.protocol_versions),
        fail_on_new_deprecations: request.fail_on_new_deprecations
            || table.fail_on_new_deprecations.unwrap_or(false),
        fail_on_description_risks: request.fail_on_description_risks
            || table.fail_on_description_risks.unwrap_or(false),
        max_tool_tokens_increase: (request.max_tool_tokens_increase)
            .or(table.max_tool_tokens_increase),
        host_settings: host_settings::Named::of(&request.host_settings, table.host_settings),
        server_label: None,
        conformance: request.conformance.clone().or(table.conformance),
        http_command: table.http_command,
        http_url: table.http_url,
        client_profiles: match (&request.client_profiles, table.client_profiles) {
            (given, _) if !given.is_empty() => given.clone(),
            (_, Some(listed)) if !listed.is_empty() => listed,
            _ => vec![ClientProfile::Bare],
        },
        auth_profiles: table.auth_profiles.unwrap_or_default(),
        stop_on_breaking: request.stop_on_breaking || table.stop_on_breaking.unwrap_or(false),
        write_baseline: request.write_baseline,
        all: request.all,
        config_path: request.overrides.config.clone(),
        record: request.record.clone(),
    }
}

/// The run config, and whether it has a baseline server of its own. With a stored snapshot and
/// no baseline named anywhere, the candidate (`--candidate`, or the config's) stands in for the
/// baseline so the config resolves; the stages then use the stored snapshot and skip what needs
/// a baseline server.
fn resolve_servers(over: &Overrides, stored: bool) -> Result<(RunConfig, bool), JobError> {
    let candidate = over.candidate.clone().or_else(|| {
        let path = over.config.as_deref()?;
        crate::config::config_targets(path).ok()?.candidate
    });
    match resolve(over) {
        Ok(config) => Ok((config, true)),
        Err(e) if stored && over.baseline.is_none() && candidate.is_some() => {
            let mut standin = over.clone();
            standin.baseline = candidate;
            match resolve(&standin) {
                Ok(config) => Ok((config, false)),
                Err(_) => Err(e.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// A stage's record, built as it goes.
pub(super) struct Outcome {
    name: &'static str,
    lines: Vec<String>,
    cases: Vec<Case>,
    output: Option<String>,
}

impl Outcome {
    pub fn new(stage: Stage) -> Self {
        Self {
            name: stage.name(),
            lines: Vec::new(),
            cases: Vec::new(),
            output: None,
        }
    }

    pub fn line(&mut self, line: impl Into<String>) {
        self.lines.push(line.into());
    }

    pub fn lines(&mut self, lines: Vec<String>) {
        self.lines.extend(lines);
    }

    pub fn case(&mut self, case: Case) {
        self.cases.push(case);
    }

    pub fn output(&mut self, dir: &Path, base: &Path) {
        let relative = dir.strip_prefix(base).unwrap_or(dir);
        self.output = Some(relative.display().to_string());
    }

    pub fn failures(&self) -> usize {
        self.cases.iter().filter(|c| c.failure.is_some()).count()
    }

    pub fn end(self, status: StageStatus, reason: impl std::fmt::Display) -> StageRecord {
        StageRecord {
            name: self.name.to_owned(),
            status,
            reason: reason.to_string(),
            seconds: 0.0,
            lines: self.lines,
            cases: self.cases,
            output: self.output,
            simulated: false,
        }
    }

    /// Passed when no case failed, else failed; `summary` says what it came to either way.
    pub fn judged(self, summary: impl std::fmt::Display) -> StageRecord {
        let status = match self.failures() {
            0 => StageStatus::Passed,
            _ => StageStatus::Failed,
        };
        self.end(status, summary)
    }
}

/// The tasks with a gated regression, each once, in order.
pub(super) fn regressed_tasks(comparison: &crate::analysis::Comparison) -> Vec<String> {
    let mut tasks: Vec<String> = Vec::new();
    for t in &comparison.tasks {
        let regressed = comparison.task_verdict(t).verdict == crate::analysis::Verdict::Regression;
        if regressed && !tasks.contains(&t.task_id) {
            tasks.push(t.task_id.clone());
        }
    }
    tasks
}

/// A stage that does not apply, and why.
pub(super) fn skipped(stage: Stage, why: impl std::fmt::Display) -> StageRecord {
    Outcome::new(stage).end(StageStatus::Skipped, why)
}

/// The stored snapshot's folder for a client profile (and an auth profile): the first client
/// profile's snapshot is at the top, another's in `client-<profile>/`, an auth profile's in
/// `<auth>/`.
pub(super) fn profile_dir(
    base: &Path,
    profiles: &[ClientProfile],
    profile: ClientProfile,
    auth: Option<&str>,
) -> PathBuf {
    let dir = match profiles.first() == Some(&profile) {
        true => base.to_path_buf(),
        false => base.join(format!("client-{profile}")),
    };
    match auth {
        Some(auth) => dir.join(auth),
        None => dir,
    }
}
