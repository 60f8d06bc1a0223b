//! `run.json`: what was run, with which config (no secrets), servers, hosts and seed, and when.

use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::Shard;
use crate::config::RunConfig;
use crate::mcp::ServerInfo;

pub const RUN_JSON: &str = "run.json";

/// The format of `run.json` and of `episodes.jsonl`'s lines that this build writes, as
/// `MAJOR.MINOR`: a reader takes every minor version of its own major (fields added are read
/// with their defaults) and refuses a newer major, whose meaning it cannot know. Records without
/// one are of format 1.0, which this build reads.
pub const FORMAT_VERSION: &str = "1.0";

/// The major version of [`FORMAT_VERSION`].
const FORMAT_MAJOR: u32 = 1;

/// A record's format version was written by a newer mcpeval.
#[derive(Debug, thiserror::Error)]
#[error(
    "`{}` has format_version {found}, newer than this mcpeval ({}) reads ({FORMAT_VERSION}): \
     use a newer mcpeval",
    path.display(),
    env!("CARGO_PKG_VERSION")
)]
pub struct NewerFormat {
    pub path: std::path::PathBuf,
    pub found: String,
}

impl crate::error::Coded for NewerFormat {
    fn exit(&self) -> crate::error::Exit {
        crate::error::Exit::Usage
    }
}

/// Refuses a format version of a newer major than this build's; a version that is not
/// `MAJOR[.MINOR]` is taken as newer (it cannot be read with certainty either).
pub(crate) fn check_format(path: &Path, found: Option<&str>) -> Result<(), NewerFormat> {
    let Some(found) = found else {
        return Ok(());
    };
    let major = found.split('.').next().and_then(|m| m.parse::<u32>().ok());
    match major {
        Some(major) if major <= FORMAT_MAJOR => Ok(()),
        _ => Err(NewerFormat {
            path: path.to_path_buf(),
            found: found.to_owned(),
        }),
    }
}

/// A `run.json` that cannot be read as a run record (an input error: the directory given is not
/// a run this mcpeval can read).
#[derive(Debug, thiserror::Error)]
pub enum RunInfoError {
    #[error("cannot read `{}`", path.display())]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` is not a run record", path.display())]
    NotARecord {
        path: std::path::PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Newer(#[from] NewerFormat),
}

impl crate::error::Coded for RunInfoError {
    fn exit(&self) -> crate::error::Exit {
        match self {
            Self::Read { .. } | Self::NotARecord { .. } | Self::Newer(_) => {
                crate::error::Exit::Usage
            }
        }
    }
}

/// Where a run stands, as `run.json` says it (written as these snake-case words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Trials are running, or the run was killed before it could say otherwise.
    Running,
    /// Every trial of the run (or shard) finished.
    Completed,
    /// Cut short (Ctrl-C, SIGTERM, a nightly stop); `--resume DIR` finishes it.
    Interrupted,
    /// The run's `[budget]` stopped it; the trials in flight finished.
    BudgetReached,
    /// Every trial it could run ran, but too many ended as infrastructure errors (more than
    /// `max_infra_share`) or a host was stopped by its breaker; `--resume DIR` runs those trials
    /// again.
    Incomplete,
    /// The run failed after it started (its files could not be written, its sides not compared).
    Failed,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Interrupted => "interrupted",
            Self::BudgetReached => "budget_reached",
            Self::Incomplete => "incomplete",
            Self::Failed => "failed",
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a server said about itself, with how it was reached.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerRecord {
    pub spec: String,
    pub info: Option<ServerInfo>,
    pub tools: Vec<String>,
    /// The tool list's tokens per tokenizer (`{"o200k_base": 590}`), counted as `tokens.json`
    /// counts it; absent in runs from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_tokens: Option<std::collections::BTreeMap<String, u64>>,
    /// The `ttlMs` its `tools/list` answer advertised (SEP-2549: how long a client may keep the
    /// list); absent when it advertised none, and in runs from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_ttl_ms: Option<u64>,
}

/// A host of the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostRecord {
    pub name: String,
    pub model: String,
    /// True for the embedded simulator: its results say nothing about a real model.
    pub simulated: bool,
    /// An app host's program (argv), as configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<Vec<String>>,
    /// What the app's `--version` printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The extra arguments the host passes the app (mcpeval's own are in docs/app-hosts.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// What the host had to change on the way (an endpoint that refused streaming), a line
    /// each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The contents of `run.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    /// The format of this record ([`FORMAT_VERSION`]); absent in records of format 1.0.
    #[serde(default = "format_version")]
    pub format_version: String,
    pub run_id: String,
    pub mcpeval_version: String,
    pub status: RunStatus,
    pub config: RunConfig,
    pub baseline: ServerRecord,
    pub candidate: ServerRecord,
    pub hosts: Vec<HostRecord>,
    /// The models that graded tasks with a `judge` (by the host spec the tasks name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judges: Vec<HostRecord>,
    /// The models that played the simulated users of tasks with a `user` (by the host spec).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<HostRecord>,
    pub seed: u64,
    pub trials: u32,
    pub tasks: Vec<String>,
    /// The `kind: call` tasks among `tasks`, with their trials per side (they run on the host
    /// `direct`, not on the model hosts).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub call_trials: std::collections::BTreeMap<String, u32>,
    /// Each task's definition, hashed (`rundir::task_hash`: 16 hex digits of xxh3 over its
    /// canonical JSON, without its id and file), by task id; absent in runs of an mcpeval
    /// before 0.1 recorded it. `compare --against` warns when a task's hash differs.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub task_hashes: super::TaskHashes,
    /// The same per top-level part of each task (`prompt`, `expect`, `call`, …; 8 hex digits),
    /// to say what differs.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub task_part_hashes: std::collections::BTreeMap<String, super::TaskHashes>,
    /// What triggered the run, in words (`None`: it ran the whole suite unprompted).
    #[serde(default)]
    pub trigger: Option<String>,
    /// The contract changes that triggered it, one line each.
    #[serde(default)]
    pub trigger_changes: Vec<String>,
    /// The triggering changes of a text (a description, a title, the instructions) with both
    /// sides whole, each with the line of `trigger_changes` it is one of: summary.md and
    /// report.html show them as word diffs. Absent when none changed (and in older runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trigger_texts: Vec<crate::contract::ChangedText>,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub git_commit: Option<String>,
    pub episodes: usize,
    pub infra_errors: usize,
    /// CPU time mcpeval itself used in this invocation (not its servers'), in milliseconds;
    /// `None` where the platform does not tell.
    #[serde(default)]
    pub runner_cpu_ms: Option<f64>,
    /// xxh3 of the config as shards compare it and of the selected tasks
    /// (`rundir::config_hash`): `mcpeval merge` joins shards only when theirs are equal.
    #[serde(default)]
    pub config_hash: Option<String>,
    /// Which part of the run this directory holds (`--shard I/N`); absent for a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The shards a merged run (`mcpeval merge`) was joined from, in shard order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<MergedShard>,
    /// The hosts the run stopped sending trials to, their breakers open (status `incomplete`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopped_hosts: Vec<StoppedHostRecord>,
    /// The wall time this invocation's trials were estimated to take before the first, and
    /// took; absent in runs before it was recorded, in merged runs, and in runs whose trials
    /// have not ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<EstimateRecord>,
    /// The `kind: call` tasks that use a tool only the candidate lists: run and judged on the
    /// candidate alone (absent when there are none, and in runs before it was recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidate_only_tasks: Vec<String>,
    /// The diff file the run's trigger read (`--trigger`, `--auto-trigger`, `check`), made
    /// absolute: `mcpeval explain` attributes the run's regressions to its changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_diff: Option<std::path::PathBuf>,
}

/// A run's estimate of its trials' wall time (docs/speed.md), what it was made from, and the
/// time the trials took.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EstimateRecord {
    /// The estimate, in seconds.
    pub estimate_s: f64,
    /// The trials' wall time, from the first start to the last end (the pre-flight and the
    /// tables written after are not in either).
    pub actual_s: f64,
    /// An adaptive design: the estimate is a ceiling.
    pub up_to: bool,
    /// False: a real model's time is left out of the estimate (a lower bound).
    pub model_time_small: bool,
    pub trials: usize,
    pub server_starts: usize,
    /// One server start as the pre-flight timed it, in seconds.
    pub server_start_s: f64,
    pub concurrency: usize,
    pub cores: usize,
}

/// A host whose requests kept failing for one lasting reason: the run started none of its
/// trials after that.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct StoppedHostRecord {
    pub host: String,
    /// The reason, where, and after how many requests in a row.
    pub reason: String,
    /// The host's trials (both sides) that were not started.
    pub not_run: usize,
}

/// One shard of a merged run, as `run.json`'s `merged_from` lists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MergedShard {
    pub run_id: String,
    pub shard: Shard,
    /// The shard's status when merged (`completed`, or `interrupted` and finished elsewhere).
    pub status: RunStatus,
    pub episodes: usize,
    pub started_at: String,
    pub finished_at: Option<String>,
}

impl RunInfo {
    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        let path = dir.join(RUN_JSON);
        let tmp = dir.join("run.json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(self)?)
            .with_context(|| format!("cannot write `{}`", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("cannot write `{}`", path.display()))
    }

    /// Reads `DIR/run.json`; a record of a newer major format version is refused with a
    /// message that names the file and the version.
    pub fn read(dir: &Path) -> Result<Self, RunInfoError> {
        let path = dir.join(RUN_JSON);
        let text = std::fs::read_to_string(&path).map_err(|source| RunInfoError::Read {
            path: path.clone(),
            source,
        })?;
        let not_a_record = |source| RunInfoError::NotARecord {
            path: path.clone(),
            source,
        };
        let value: serde_json::Value = serde_json::from_str(&text).map_err(not_a_record)?;
        check_format(&path, value.get("format_version").and_then(|v| v.as_str()))?;
        serde_json::from_value(value).map_err(not_a_record)
    }
}

fn format_version() -> String {
    "1.0".to_owned()
}

/// The commit of the git checkout mcpeval runs in, if any (asked of git directly, no shell).
pub fn git_commit() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// CPU time (user + system, all threads) this process has used so far, from `/proc/self/stat`.
pub fn own_cpu_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // The kernel reports clock ticks; USER_HZ is 100 on every Linux platform Rust supports.
    Some((utime + stime) * 10.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_major_format_is_refused_naming_the_file_and_the_version() {
        let dir = tempfile::tempdir().unwrap();
        let mut info = crate::test_support::sample_info();
        info.write(dir.path()).unwrap();
        let read = RunInfo::read(dir.path()).unwrap();
        assert_eq!(read.format_version, FORMAT_VERSION);
        assert_eq!(read.status, RunStatus::Running);
        info.format_version = "1.7".into();
        info.write(dir.path()).unwrap();
        RunInfo::read(dir.path()).expect("a newer minor version is read");
        info.format_version = "2.0".into();
        info.write(dir.path()).unwrap();
        let err = format!("{:#}", RunInfo::read(dir.path()).unwrap_err());
        let path = dir.path().join(RUN_JSON);
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(err.contains("format_version 2.0"), "{err}");
    }

    #[test]
    fn a_record_without_a_format_version_is_of_format_1_0() {
        let dir = tempfile::tempdir().unwrap();
        crate::test_support::sample_info()
            .write(dir.path())
            .unwrap();
        let path = dir.path().join(RUN_JSON);
        let mut value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        value.as_object_mut().unwrap().remove("format_version");
        std::fs::write(&path, value.to_string()).unwrap();
        assert_eq!(RunInfo::read(dir.path()).unwrap().format_version, "1.0");
    }

    #[test]
    fn every_status_is_written_as_its_word() {
        for (status, word) in [
            (RunStatus::Running, "running"),
            (RunStatus::Completed, "completed"),
            (RunStatus::Interrupted, "interrupted"),
            (RunStatus::BudgetReached, "budget_reached"),
            (RunStatus::Failed, "failed"),
        ] {
            assert_eq!(serde_json::to_value(status).unwrap(), word);
            assert_eq!(status.to_string(), word);
        }
    }

    #[test]
    fn own_cpu_time_is_read_on_linux() {
        if cfg!(target_os = "linux") {
            let spin: u64 = (0..20_000_000u64).fold(0, |a, b| a.wrapping_add(b * b));
            assert!(spin > 0);
            assert!(super::own_cpu_ms().expect("linux has /proc") > 0.0);
        }
    }
}
