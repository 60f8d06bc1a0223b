//! What can keep a job from running, and the exit code each kind means.

use std::path::{Path, PathBuf};

use crate::error::{Coded, Exit};

type Source = Box<dyn std::error::Error + Send + Sync>;

/// A job that could not be built or run.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Suite(#[from] crate::suite::SuiteError),
    /// A host whose model cannot be built (unknown provider, missing API key, bad header).
    #[error("host `{host}`")]
    Host {
        host: String,
        #[source]
        source: crate::host::HostError,
    },
    /// An app host whose program cannot be found or run.
    #[error("host `{host}`: {source}")]
    App {
        host: String,
        source: crate::episode::app::AppError,
    },
    /// A configured host named like the host of `kind: call` tasks.
    #[error(
        "host `{0}`: the name is taken by the `kind: call` tasks' episodes (mcpeval's own \
         requests, no model); name the host otherwise"
    )]
    ReservedHost(String),
    /// An app host named as a task's judge: it runs its own loop and answers no completion.
    #[error("`{host}` is an app host: it runs its own loop and cannot judge")]
    AppJudge { host: String },
    /// An app host named as a task's simulated user: it answers no completion.
    #[error("`{host}` is an app host: it runs its own loop and cannot play a user")]
    AppUser { host: String },
    /// A task's simulated user's host that cannot be resolved or built.
    #[error("user host `{host}` of task `{task}` ({file})")]
    User {
        host: String,
        task: String,
        file: String,
        #[source]
        source: Box<JobError>,
    },
    /// A task's judge host that cannot be resolved or built.
    #[error("judge host `{host}` of task `{task}` ({file})")]
    Judge {
        host: String,
        task: String,
        file: String,
        #[source]
        source: Box<JobError>,
    },
    /// A task's sampling host that cannot be resolved or built (`sampling: {host}`).
    #[error("{at}: sampling host `{host}` of task `{task}`")]
    Sampler {
        host: String,
        task: String,
        at: String,
        #[source]
        source: Box<JobError>,
    },
    /// An app host named as a sampling host: it answers no completion.
    #[error("`{host}` is an app host: it runs its own loop and cannot answer sampling requests")]
    AppSampler { host: String },
    /// An adaptive run whose trial budget cannot give every task its first look.
    #[error("{0}")]
    BudgetTooSmall(String),
    /// `--trigger DIFF.json` that cannot be read as a diff.
    #[error("{message}")]
    Trigger { path: PathBuf, message: String },
    /// `--auto-trigger`: a server that cannot be snapshotted.
    #[error("{side} server `{server}`")]
    Snapshot {
        side: &'static str,
        server: String,
        #[source]
        source: crate::contract::SnapshotError,
    },
    /// `--resume DIR` whose run record cannot be read.
    #[error("cannot resume `{}`", dir.display())]
    Resume {
        dir: PathBuf,
        #[source]
        source: Source,
    },
    /// A suite or hosts given without servers: the run would quietly use the demo servers.
    #[error(
        "no servers named: give --baseline and --candidate (server commands or URLs), or a \
         --config that names them; --demo-servers runs the embedded demo servers on purpose"
    )]
    NoServers,
    /// `--shard I/N` against the shard a resumed run keeps.
    #[error(
        "--shard {given} does not match the run being resumed ({kept}): --resume keeps the run's \
         shard, leave --shard out"
    )]
    ShardMismatch { given: String, kept: String },
    #[error(transparent)]
    RunDir(#[from] crate::rundir::CreateError),
    #[error(transparent)]
    History(#[from] crate::history::HistoryError),
    #[error(transparent)]
    Record(#[from] crate::history::RecordError),
    /// The baseline or the candidate server would not start or list its tools.
    #[error(transparent)]
    Preflight(#[from] super::PreflightError),
    /// A file of the run that cannot be written.
    #[error("cannot write `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: Source,
    },
    #[error(transparent)]
    RunInfo(#[from] crate::rundir::RunInfoError),
    #[error(transparent)]
    Setting(#[from] crate::config::InvalidSetting),
    /// A run directory whose episodes cannot be read.
    #[error("cannot read the episodes of `{}`", dir.display())]
    Episodes {
        dir: PathBuf,
        #[source]
        source: Source,
    },
    /// A run directory without episodes of a side.
    #[error("`{}` has no {side} episodes to compare", dir.display())]
    NoEpisodes {
        dir: PathBuf,
        side: crate::episode::Side,
    },
    /// A rate, drop or power the statistics cannot plan with.
    #[error(transparent)]
    Stats(#[from] crate::stats::StatsError),
    /// The statistics cannot compare the sides' episodes.
    #[error("cannot compare")]
    Compare(#[source] crate::stats::StatsError),
    /// A suite that could write to a server's real state, or sandboxes and placeholders that
    /// do not go together.
    #[error(transparent)]
    Writes(#[from] super::writes::WriteError),
    /// `explain` on a run that regressed although its two servers differ in nothing that
    /// affects models.
    #[error(
        "`{}` regressed, but its diff `{}` has no change that affects models: the regression \
         is noise or the environment (hosts, network, the model's provider), not the release",
        dir.display(),
        diff.display()
    )]
    NothingToExplain { dir: PathBuf, diff: PathBuf },
    /// A host settings file named for `check` (`--host-settings`, `[check] host_settings`)
    /// that is not there: the check would pass without reading it.
    #[error("host settings file `{}` does not exist (named by {by})", path.display())]
    NoHostSettings { path: PathBuf, by: &'static str },
    /// The run itself failed (its event sinks, its tables).
    #[error("the run failed")]
    Run(#[source] Source),
}

impl JobError {
    pub(crate) fn write(path: &Path, source: impl Into<Source>) -> Self {
        Self::Write {
            path: path.to_path_buf(),
            source: source.into(),
        }
    }
}

impl Coded for JobError {
    fn exit(&self) -> Exit {
        match self {
            Self::Config(_)
            | Self::Suite(_)
            | Self::Host { .. }
            | Self::App { .. }
            | Self::AppJudge { .. }
            | Self::AppUser { .. }
            | Self::AppSampler { .. }
            | Self::ReservedHost(_)
            | Self::Trigger { .. }
            | Self::BudgetTooSmall(_)
            | Self::Resume { .. }
            | Self::ShardMismatch { .. }
            | Self::NoServers
            | Self::Setting(_)
            | Self::Episodes { .. }
            | Self::NoEpisodes { .. }
            | Self::Stats(_)
            | Self::Writes(_)
            | Self::Compare(_)
            | Self::NothingToExplain { .. }
            | Self::NoHostSettings { .. } => Exit::Usage,
            Self::RunInfo(e) => e.exit(),
            Self::Judge { source, .. }
            | Self::User { source, .. }
            | Self::Sampler { source, .. } => source.exit(),
            Self::RunDir(e) => e.exit(),
            Self::History(e) => e.exit(),
            Self::Record(e) => e.exit(),
            Self::Snapshot { .. } | Self::Preflight(_) | Self::Write { .. } | Self::Run(_) => {
                Exit::Infra
            }
        }
    }
}
