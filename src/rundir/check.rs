//! `check.json`: the record of one `mcpeval check`: each stage's result, time, what it found and
//! where its raw output is, and the verdict. The reports (`summary.md`, `junit.xml`) are
//! rendered from it.

use serde::{Deserialize, Serialize};

/// The record's file in the check's directory.
pub const CHECK_JSON: &str = "check.json";

/// How a stage ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StageStatus {
    Passed,
    /// It found what the check fails on (exit 1).
    Failed,
    /// It could not apply (a stored snapshot instead of a server, Node too old…): never a
    /// failure; `reason` says why.
    Skipped,
    /// It could not be done (a server that would not start): exit 3 unless another stage failed.
    Error,
}

impl StageStatus {
    pub fn word(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
            Self::Error => "error",
        }
    }
}

/// One item a stage checked, as a test case of `junit.xml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Case {
    pub name: String,
    /// Why it failed; `None` when it passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

impl Case {
    pub fn passed(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            failure: None,
        }
    }

    pub fn failed(name: impl Into<String>, why: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            failure: Some(why.into()),
        }
    }
}

/// One stage's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageRecord {
    /// `smoke`, `contract`, `conformance`, `deprecations`, `evaluation`.
    pub name: String,
    pub status: StageStatus,
    /// One line: what it came to, or why it failed or was skipped.
    pub reason: String,
    pub seconds: f64,
    /// The stage's section of summary.md, a Markdown line each.
    #[serde(default)]
    pub lines: Vec<String>,
    #[serde(default)]
    pub cases: Vec<Case>,
    /// Where its raw output is, relative to the check's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Its verdict came from the embedded simulated model (`sim`), not a real LLM: every line
    /// that shows it says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub simulated: bool,
}

/// A server's `serverInfo`: its name and version as it reports them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reported {
    pub name: String,
    pub version: String,
}

/// The whole check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckRecord {
    pub format_version: u32,
    pub baseline: String,
    pub candidate: String,
    /// The name and version each server reported, once a stage learnt them (the contract
    /// stage's snapshots); absent before, and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_reported: Option<Reported>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate_reported: Option<Reported>,
    pub stages: Vec<StageRecord>,
    /// A Ctrl-C, SIGTERM or SIGHUP cut it short (exit 130): `mcpeval check --resume DIR`
    /// finishes it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// The check's flags as given (without `--out`), read back by `mcpeval check --resume`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
}

impl CheckRecord {
    /// `failed` when a stage failed; else `error` when one could not be done; else `passed`.
    pub fn verdict(&self) -> StageStatus {
        let any = |s: StageStatus| self.stages.iter().any(|r| r.status == s);
        if any(StageStatus::Failed) {
            StageStatus::Failed
        } else if any(StageStatus::Error) {
            StageStatus::Error
        } else {
            StageStatus::Passed
        }
    }

    /// Whether a stage's verdict came from the simulated model.
    pub fn simulated(&self) -> bool {
        self.stages.iter().any(|s| s.simulated)
    }

    /// Reads `check.json` from `dir`.
    pub fn read(dir: &std::path::Path) -> std::io::Result<Self> {
        let text = std::fs::read_to_string(dir.join(CHECK_JSON))?;
        serde_json::from_str(&text).map_err(std::io::Error::other)
    }

    /// Writes `check.json` into `dir`.
    pub fn write(&self, dir: &std::path::Path) -> std::io::Result<()> {
        let mut text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        text.push('\n');
        std::fs::write(dir.join(CHECK_JSON), text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(status: StageStatus) -> StageRecord {
        StageRecord {
            name: "s".into(),
            status,
            reason: String::new(),
            seconds: 0.0,
            lines: vec![],
            cases: vec![],
            output: None,
            simulated: false,
        }
    }

    #[test]
    fn a_failure_outweighs_an_error_and_a_skip_is_no_failure() {
        let record = |s: Vec<StageStatus>| CheckRecord {
            format_version: 1,
            baseline: "b".into(),
            candidate: "c".into(),
            baseline_reported: None,
            candidate_reported: None,
            stages: s.into_iter().map(stage).collect(),
            interrupted: false,
            args: vec![],
        };
        use StageStatus::*;
        assert_eq!(record(vec![Passed, Skipped]).verdict(), Passed);
        assert_eq!(record(vec![Error, Passed]).verdict(), Error);
        assert_eq!(record(vec![Error, Failed]).verdict(), Failed);
    }
}
