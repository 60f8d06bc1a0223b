//! The MCP conformance suite's results judged against an expected-failures file: which failures
//! are new, which are expected, which expected ones now pass (stale). mcpeval applies the rules
//! itself, per check, rather than trusting the suite's exit code: a WARNING counts as a failure,
//! and an entry that names no known scenario is an error before the run.
//!
//! The expected-failures file is the suite's own format (`server:` a list of `scenario` or
//! `scenario:check-id` entries), with optional sections per requirement set (`"2026-07-28":
//! {server: […]}`) for the failures that only one wire version has.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A check's status as the suite writes it in `checks.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    Success,
    Info,
    Skipped,
    Warning,
    Failure,
}

impl Status {
    /// FAILURE and WARNING fail (the suite itself counts a WARNING as a failure when it has an
    /// expected-failures file).
    pub fn fails(self) -> bool {
        matches!(self, Self::Failure | Self::Warning)
    }

    /// Most severe first: a check id that occurs several times takes its worst status.
    fn severity(self) -> u8 {
        match self {
            Self::Failure => 4,
            Self::Warning => 3,
            Self::Success => 2,
            Self::Info => 1,
            Self::Skipped => 0,
        }
    }
}

/// One check of one scenario, as the suite reported it (occurrences of one id collapsed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub scenario: String,
    pub id: String,
    pub status: Status,
    pub message: Option<String>,
}

/// One check as it appears in `checks.json`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawCheck {
    id: String,
    status: Status,
    #[serde(default)]
    error_message: Option<String>,
}

/// Why results or an expected-failures file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ConformanceError {
    #[error("cannot read `{}`: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("`{}` is not the conformance suite's checks.json: {source}", path.display())]
    Checks {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("expected-failures file `{}`: {message}", path.display())]
    Expected { path: PathBuf, message: String },
}

impl crate::error::Coded for ConformanceError {
    fn exit(&self) -> crate::error::Exit {
        match self {
            Self::Read { .. } | Self::Checks { .. } => crate::error::Exit::Infra,
            Self::Expected { .. } => crate::error::Exit::Usage,
        }
    }
}

/// Reads every `checks.json` under `dir` (the suite's `-o DIR`: one folder per scenario run,
/// `server-<scenario>-<time>/`). `scenarios` names the scenarios that ran, so a folder's
/// scenario is the longest of them its name starts with.
pub fn read_results(dir: &Path, scenarios: &[String]) -> Result<Vec<Check>, ConformanceError> {
    let read_dir = |path: &Path| {
        std::fs::read_dir(path).map_err(|source| ConformanceError::Read {
            path: path.to_path_buf(),
            source,
        })
    };
    let mut folders: Vec<PathBuf> = read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("checks.json").is_file())
        .collect();
    folders.sort();
    let mut out = Vec::new();
    for folder in folders {
        let name = folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let scenario = scenario_of(&name, scenarios);
        let path = folder.join("checks.json");
        let text = std::fs::read_to_string(&path).map_err(|source| ConformanceError::Read {
            path: path.clone(),
            source,
        })?;
        let raw: Vec<RawCheck> = serde_json::from_str(&text)
            .map_err(|source| ConformanceError::Checks { path, source })?;
        out.extend(collapse(&scenario, raw));
    }
    Ok(out)
}

/// The scenario a result folder is of: `server-<scenario>-<time>`.
fn scenario_of(folder: &str, scenarios: &[String]) -> String {
    let name = folder.strip_prefix("server-").unwrap_or(folder);
    (scenarios.iter())
        .filter(|s| {
            name.starts_with(s.as_str())
                && (name.len() == s.len() || name[s.len()..].starts_with('-'))
        })
        .max_by_key(|s| s.len())
        .cloned()
        .unwrap_or_else(|| {
            // No known name fits: drop the trailing time stamp's dash-separated parts.
            let parts: Vec<&str> = name.split('-').collect();
            let keep = parts
                .iter()
                .position(|p| p.len() >= 4 && p.chars().all(|c| c.is_ascii_digit()))
                .unwrap_or(parts.len());
            parts[..keep].join("-")
        })
}

/// One verdict per check id, most severe first.
fn collapse(scenario: &str, raw: Vec<RawCheck>) -> Vec<Check> {
    let mut by_id: BTreeMap<String, Check> = BTreeMap::new();
    // INFO checks are transcripts of the exchange, not verdicts (the suite ignores them too).
    for check in raw.into_iter().filter(|c| c.status != Status::Info) {
        let entry = by_id.entry(check.id.clone()).or_insert_with(|| Check {
            scenario: scenario.to_owned(),
            id: check.id.clone(),
            status: check.status,
            message: check.error_message.clone(),
        });
        if check.status.severity() > entry.status.severity() {
            entry.status = check.status;
            entry.message = check.error_message;
        }
    }
    by_id.into_values().collect()
}

/// What is wrong with an expected-failures file's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ExpectedError(String);

impl From<String> for ExpectedError {
    fn from(text: String) -> Self {
        Self(text)
    }
}

/// One entry of an expected-failures file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Entry {
    pub scenario: String,
    /// `None`: the whole scenario may fail.
    pub check: Option<String>,
}

impl std::fmt::Display for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.check {
            Some(check) => write!(f, "{}:{check}", self.scenario),
            None => f.write_str(&self.scenario),
        }
    }
}

/// An expected-failures file: entries for every requirement set, and entries for one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expected {
    pub all: Vec<Entry>,
    pub per_set: BTreeMap<String, Vec<Entry>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Section {
    #[serde(default)]
    server: Vec<String>,
    /// The suite's client entries: read so the file stays the suite's, not used by mcpeval.
    #[serde(default)]
    #[allow(dead_code)]
    client: Vec<String>,
}

impl Expected {
    /// Reads the file at `path`; `known` are the scenario names the suite has (every entry must
    /// name one), `sets` the requirement sets (the only other top-level keys allowed).
    pub fn read(
        path: &Path,
        known: &BTreeSet<String>,
        sets: &[&str],
    ) -> Result<Self, ConformanceError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConformanceError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, known, sets).map_err(|message| ConformanceError::Expected {
            path: path.to_path_buf(),
            message: message.0,
        })
    }

    fn parse(text: &str, known: &BTreeSet<String>, sets: &[&str]) -> Result<Self, ExpectedError> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let top: BTreeMap<String, serde_json::Value> =
            serde_saphyr::from_str(text).map_err(|e| format!("not valid YAML: {e}"))?;
        let mut expected = Self::default();
        for (key, value) in top {
            match key.as_str() {
                "server" | "client" => {
                    let section: Section = serde_json::from_value(
                        serde_json::json!({ key.clone(): value }),
                    )
                    .map_err(|e| {
                        format!(
                            "`{key}`: {e} (a list of `scenario` or `scenario:check-id` strings)"
                        )
                    })?;
                    expected.all.extend(entries(&section.server, known, &key)?);
                }
                set if sets.contains(&set) => {
                    let section: Section = serde_json::from_value(value).map_err(|e| {
                        format!("`{set}`: {e} (a table with `server:`, a list of entries)")
                    })?;
                    let list = entries(&section.server, known, &format!("{set}.server"))?;
                    expected.per_set.insert(set.to_owned(), list);
                }
                other => {
                    return Err(ExpectedError::from(format!(
                        "unknown key `{other}`: expected `server`, `client` or a requirement set \
                         ({})",
                        sets.join(", ")
                    )))
                }
            }
        }
        Ok(expected)
    }

    /// The entries that apply to requirement set `set`.
    pub fn for_set(&self, set: &str) -> Vec<Entry> {
        let mut out = self.all.clone();
        out.extend(self.per_set.get(set).into_iter().flatten().cloned());
        out.sort();
        out.dedup();
        out
    }
}

fn entries(
    list: &[String],
    known: &BTreeSet<String>,
    at: &str,
) -> Result<Vec<Entry>, ExpectedError> {
    let mut out = Vec::new();
    for text in list {
        let (scenario, check) = match text.split_once(':') {
            Some((s, c)) => (s.trim(), Some(c.trim().to_owned())),
            None => (text.trim(), None),
        };
        if !known.contains(scenario) {
            let names: Vec<&str> = known.iter().map(String::as_str).collect();
            let hint = crate::suite::suggestion(scenario, &names);
            return Err(ExpectedError::from(format!(
                "`{at}` entry `{text}` names no scenario the conformance suite has{hint}"
            )));
        }
        out.push(Entry {
            scenario: scenario.to_owned(),
            check,
        });
    }
    for entry in &out {
        if entry.check.is_some()
            && out
                .iter()
                .any(|e| e.check.is_none() && e.scenario == entry.scenario)
        {
            return Err(ExpectedError::from(format!(
                "`{at}` lists scenario `{}` both whole and as `{entry}`: the whole entry already \
                 excuses every check of it",
                entry.scenario
            )));
        }
    }
    Ok(out)
}

/// What the rules made of one requirement set's results.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Judged {
    pub passed: usize,
    /// Failing checks an entry excuses.
    pub expected: Vec<Check>,
    /// Failing checks no entry excuses: the stage fails.
    pub new: Vec<Check>,
    /// Entries whose scenario or check ran and passed: the stage fails until they are removed.
    pub stale: Vec<Entry>,
}

impl Judged {
    pub fn ok(&self) -> bool {
        self.new.is_empty() && self.stale.is_empty()
    }
}

/// Applies the rules: a failure not in the file fails; a listed failure passes; a listed entry
/// whose scenario (whole entry) or check (`scenario:check`) ran and passed is stale; a listed
/// check that did not run or was skipped is tolerated; entries of scenarios that did not run in
/// this set are not judged.
pub fn judge(checks: &[Check], entries: &[Entry]) -> Judged {
    let mut judged = Judged::default();
    for check in checks {
        if !check.status.fails() {
            judged.passed += usize::from(check.status == Status::Success);
            continue;
        }
        let excused = entries.iter().any(|e| {
            e.scenario == check.scenario && e.check.as_deref().is_none_or(|c| c == check.id)
        });
        match excused {
            true => judged.expected.push(check.clone()),
            false => judged.new.push(check.clone()),
        }
    }
    for entry in entries {
        let ran: Vec<&Check> = (checks.iter())
            .filter(|c| c.scenario == entry.scenario)
            .collect();
        let stale = match &entry.check {
            None => !ran.is_empty() && !ran.iter().any(|c| c.status.fails()),
            Some(id) => ran
                .iter()
                .any(|c| &c.id == id && c.status == Status::Success),
        };
        if stale {
            judged.stale.push(entry.clone());
        }
    }
    judged
}

/// An expected-failures file that lists exactly the failing checks of each set's results, per
/// check, in a stable order, each with a comment saying how it failed.
pub fn write_expected(per_set: &BTreeMap<String, Vec<Check>>) -> String {
    let mut text = String::from(
        "# Known conformance failures, written by `mcpeval check --write-baseline`.\n\
         # One section per requirement set; each entry is `scenario:check-id`, with how it\n\
         # failed. `mcpeval check` fails on a failure not listed here and on an entry that\n\
         # now passes (remove it). Entries under a top-level `server:` apply to every set.\n",
    );
    for (set, checks) in per_set {
        let mut failing: Vec<&Check> = checks.iter().filter(|c| c.status.fails()).collect();
        failing.sort_by(|a, b| (&a.scenario, &a.id).cmp(&(&b.scenario, &b.id)));
        failing.dedup_by(|a, b| a.scenario == b.scenario && a.id == b.id);
        text.push_str(&format!("\"{set}\":\n  server:"));
        if failing.is_empty() {
            text.push_str(" []\n");
            continue;
        }
        text.push('\n');
        for check in failing {
            let why = check
                .message
                .as_deref()
                .unwrap_or("(no message)")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let why: String = why.chars().take(160).collect();
            let status = match check.status {
                Status::Warning => "WARNING",
                _ => "FAILURE",
            };
            text.push_str(&format!("    # {status}: {why}\n"));
            text.push_str(&format!("    - \"{}:{}\"\n", check.scenario, check.id));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(scenario: &str, id: &str, status: Status) -> Check {
        Check {
            scenario: scenario.into(),
            id: id.into(),
            status,
            message: Some(format!("{id} went wrong")),
        }
    }

    fn known() -> BTreeSet<String> {
        ["tools-list", "server-stateless", "resources-list"]
            .map(String::from)
            .into()
    }

    const SETS: [&str; 2] = ["2025-11-25", "2026-07-28"];

    #[test]
    fn the_rules_of_the_suite_per_check() {
        let checks = vec![
            check("tools-list", "tools-list", Status::Success),
            check("server-stateless", "discover", Status::Failure),
            check("server-stateless", "meta", Status::Warning),
            check("resources-list", "resources-list", Status::Success),
        ];
        let entries = Expected::parse(
            "server:\n  - server-stateless:discover\n  - resources-list\n",
            &known(),
            &SETS,
        )
        .unwrap()
        .for_set("2026-07-28");
        let judged = judge(&checks, &entries);
        assert_eq!(judged.passed, 2);
        assert_eq!(judged.expected.len(), 1);
        // A WARNING is a failure; no entry excuses `meta`.
        assert_eq!(judged.new.len(), 1);
        assert_eq!(judged.new[0].id, "meta");
        // The whole-scenario entry whose scenario passes is stale.
        assert_eq!(judged.stale.len(), 1);
        assert_eq!(judged.stale[0].to_string(), "resources-list");
        assert!(!judged.ok());
    }

    #[test]
    fn a_check_that_did_not_run_is_tolerated_and_a_passing_one_is_stale() {
        let checks = vec![check("server-stateless", "other", Status::Failure)];
        let entries = vec![
            Entry {
                scenario: "server-stateless".into(),
                check: Some("skipped-one".into()),
            },
            Entry {
                scenario: "server-stateless".into(),
                check: Some("other".into()),
            },
        ];
        let judged = judge(&checks, &entries);
        assert!(judged.ok(), "{judged:?}");
        let passing = vec![check("server-stateless", "other", Status::Success)];
        assert_eq!(judge(&passing, &entries).stale.len(), 1);
    }

    #[test]
    fn bad_files_are_refused_before_the_run() {
        let err = Expected::parse("server:\n  - tool-list\n", &known(), &SETS)
            .unwrap_err()
            .0;
        assert!(
            err.contains("names no scenario") && err.contains("tools-list"),
            "{err}"
        );
        let err = Expected::parse(
            "server:\n  - tools-list\n  - tools-list:tools-list\n",
            &known(),
            &SETS,
        )
        .unwrap_err()
        .0;
        assert!(err.contains("both whole"), "{err}");
        let err = Expected::parse("servers: []\n", &known(), &SETS)
            .unwrap_err()
            .0;
        assert!(err.contains("unknown key `servers`"), "{err}");
        let err = Expected::parse("server:\n  - tools-list: x\n", &known(), &SETS)
            .unwrap_err()
            .0;
        assert!(err.contains("`server`"), "{err}");
    }

    #[test]
    fn per_set_sections_apply_to_their_set_only() {
        let expected = Expected::parse(
            "server: [tools-list]\n\"2026-07-28\":\n  server: [\"server-stateless:discover\"]\n",
            &known(),
            &SETS,
        )
        .unwrap();
        assert_eq!(expected.for_set("2025-11-25").len(), 1);
        assert_eq!(expected.for_set("2026-07-28").len(), 2);
    }

    #[test]
    fn a_written_file_reads_back_and_excuses_exactly_the_failures() {
        let checks = vec![
            check("server-stateless", "discover", Status::Failure),
            check("server-stateless", "meta", Status::Warning),
            check("tools-list", "tools-list", Status::Success),
        ];
        let per_set = BTreeMap::from([("2026-07-28".to_owned(), checks.clone())]);
        let text = write_expected(&per_set);
        assert!(text.contains("# FAILURE: discover went wrong"), "{text}");
        let expected = Expected::parse(&text, &known(), &SETS).unwrap();
        let judged = judge(&checks, &expected.for_set("2026-07-28"));
        assert!(judged.ok(), "{judged:?}");
        assert_eq!(judged.expected.len(), 2);
    }

    #[test]
    fn results_are_read_per_folder_and_collapsed_most_severe_first() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir
            .path()
            .join("server-tools-list-2026-12-03T10-00-00-000Z");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("checks.json"),
            r#"[{"id":"a","name":"A","status":"SUCCESS"},
                {"id":"a","name":"A","status":"FAILURE","errorMessage":"bad"},
                {"id":"b","name":"B","status":"INFO"}]"#,
        )
        .unwrap();
        let checks = read_results(dir.path(), &["tools-list".into(), "tools".into()]).unwrap();
        assert_eq!(checks.len(), 1, "the INFO check is no verdict");
        assert_eq!(checks[0].scenario, "tools-list");
        assert_eq!(
            (checks[0].status, checks[0].message.as_deref()),
            (Status::Failure, Some("bad"))
        );
        assert_eq!(
            scenario_of("server-tools-list-2026-12-03T10-00-00-000Z", &[]),
            "tools-list"
        );
    }
}
