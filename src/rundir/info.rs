//! `run.json`: what was run, with which config (no secrets), servers, hosts and seed, and when.

use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::config::RunConfig;
use crate::mcp::ServerInfo;
use crate::runner::Shard;

pub const RUN_JSON: &str = "run.json";

/// What a server said about itself, with how it was reached.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerRecord {
    pub spec: String,
    pub info: Option<ServerInfo>,
    pub tools: Vec<String>,
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
    /// The extra arguments the host passes the app (mcpeval's own are in the README).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
}

/// The contents of `run.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    pub run_id: String,
    pub mcpeval_version: String,
    /// `running`, `completed` or `interrupted`.
    pub status: String,
    pub config: RunConfig,
    pub baseline: ServerRecord,
    pub candidate: ServerRecord,
    pub hosts: Vec<HostRecord>,
    /// The models that graded tasks with a `judge` (by the host spec the tasks name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judges: Vec<HostRecord>,
    pub seed: u64,
    pub trials: u32,
    pub tasks: Vec<String>,
    /// What triggered the run, in words (`None`: it ran the whole suite unprompted).
    #[serde(default)]
    pub trigger: Option<String>,
    /// The contract changes that triggered it, one line each.
    #[serde(default)]
    pub trigger_changes: Vec<String>,
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
    /// (`runner::config_hash`): `mcpeval merge` joins shards only when theirs are equal.
    #[serde(default)]
    pub config_hash: Option<String>,
    /// Which part of the run this directory holds (`--shard I/N`); absent for a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The shards a merged run (`mcpeval merge`) was joined from, in shard order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<MergedShard>,
}

/// One shard of a merged run, as `run.json`'s `merged_from` lists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MergedShard {
    pub run_id: String,
    pub shard: Shard,
    /// The shard's status when merged (`completed`, or `interrupted` and finished elsewhere).
    pub status: String,
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

    pub fn read(dir: &Path) -> anyhow::Result<Self> {
        let path = dir.join(RUN_JSON);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read `{}`", path.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("`{}` is not a run record", path.display()))
    }
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
pub(crate) mod tests {
    use super::*;

    /// A run record of the embedded demo config, for other modules' tests.
    pub(crate) fn sample_info() -> RunInfo {
        let server = |spec: &str| ServerRecord {
            spec: spec.into(),
            info: None,
            tools: Vec::new(),
        };
        RunInfo {
            run_id: "20261130T000000Z-test00".into(),
            mcpeval_version: "0.0.0".into(),
            status: "running".into(),
            config: crate::config::resolve(&crate::config::Overrides::default())
                .expect("the demo config resolves"),
            baseline: server("demo:1.4.0"),
            candidate: server("demo:1.5.0"),
            hosts: vec![HostRecord {
                name: "sim".into(),
                model: "sim".into(),
                simulated: true,
                program: None,
                version: None,
                args: None,
            }],
            judges: Vec::new(),
            seed: 42,
            trials: 1,
            tasks: vec!["t".into()],
            trigger: None,
            trigger_changes: Vec::new(),
            started_at: "2026-11-30T00:00:00Z".into(),
            finished_at: None,
            git_commit: None,
            episodes: 0,
            infra_errors: 0,
            runner_cpu_ms: None,
            config_hash: None,
            shard: None,
            merged_from: Vec::new(),
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
