//! The conformance stage: the MCP conformance suite (npm `@modelcontextprotocol/conformance`,
//! pinned) run against the candidate over HTTP once per requirement set it claims, its
//! `checks.json` judged by mcpeval against the expected-failures file kept in the repository.
//! A stdio server is bridged to HTTP in-process (served.rs). Skipped, with the reason, without
//! Node ≥ 22.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::served::{self, Served};
use super::{skipped, step, Ctx, Outcome, Stage, StepError};
use crate::config::CONFORMANCE_PACKAGE;
use crate::contract::conformance::{judge, read_results, write_expected, Check, Expected};
use crate::rundir::{Case, StageRecord, StageStatus};

/// The requirement sets the suite has.
const SETS: [&str; 2] = ["2025-11-25", "2026-07-28"];
/// The environment variable naming the command that runs the suite.
pub const CONFORMANCE_ENV: &str = "MCPEVAL_CONFORMANCE";
/// How long one run of a requirement set may take.
const RUN_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a server started by `http_command` may take to listen.
pub(super) const LISTEN_TIMEOUT: Duration = Duration::from_secs(30);

pub(super) async fn run(ctx: &mut Ctx) -> StageRecord {
    let stage = Stage::Conformance;
    let out = Outcome::new(stage);
    let tool = match Tool::find(ctx).await {
        Ok(tool) => tool,
        Err(Unavailable(why)) => return skipped(stage, why),
    };
    // The candidate over HTTP: its URL, `[check] http_command` once it is seen to serve the
    // candidate, or the stdio candidate bridged in-process.
    let served = match served::candidate(ctx).await {
        Ok(served) => served,
        Err(why) => return out.end(StageStatus::Error, why),
    };
    let record = run_at(ctx, &tool, &served, out).await;
    // What the check started is gone (its port closed) before the next stage.
    served.stop().await;
    record
}

/// The suite's runs against the candidate at `url`, judged.
async fn run_at(ctx: &mut Ctx, tool: &Tool, served: &Served, mut out: Outcome) -> StageRecord {
    let stage = Stage::Conformance;
    let url = &served.url();
    let known = match tool.scenarios().await {
        Ok(known) => known,
        Err(why) => return out.end(StageStatus::Error, why),
    };
    let sets = match requirement_sets(ctx).await {
        Ok(sets) if sets.is_empty() => {
            return skipped(
                stage,
                "the candidate supports neither 2025-11-25 nor 2026-07-28, the revisions the \
                 suite has requirement sets for",
            )
        }
        Ok(sets) => sets,
        Err(why) => return out.end(StageStatus::Error, why),
    };
    let dir = ctx.dir.join("conformance");
    out.output(&dir, &ctx.dir);
    out.line(format!(
        "- suite: `{}` (version {})",
        tool.display(),
        tool.version
    ));
    out.line(format!(
        "- the candidate over HTTP at {url} ({})",
        served.how()
    ));
    // The scenarios each set scores, asked once for the baseline's run and the candidate's.
    let mut scored = BTreeMap::new();
    for set in &sets {
        match tool.scored(set).await {
            Ok(names) => scored.insert(set.clone(), names),
            Err(why) => return out.end(StageStatus::Error, why),
        };
    }
    let path = ctx.settings.expected_failures.clone();
    if ctx.settings.write_baseline {
        match write_baseline(ctx, tool, &known, &scored, path.as_deref(), &dir).await {
            Ok(line) => out.line(line),
            Err(why) => return out.end(StageStatus::Error, why),
        }
    }
    // The file is checked before the run: an entry naming no scenario is an error.
    let expected = match &path {
        Some(path) if path.exists() || !ctx.settings.write_baseline => {
            match Expected::read(path, &known, &SETS) {
                Ok(expected) => {
                    out.line(format!("- expected failures: `{}`", path.display()));
                    expected
                }
                Err(e) => {
                    out.case(Case::failed("expected-failures file", e.to_string()));
                    return out.judged(e.to_string());
                }
            }
        }
        _ => {
            out.line(
                "- no expected-failures file ([check] expected_failures or \
                 --expected-failures): every failing check counts; `--write-baseline` writes one \
                 from the baseline's failures",
            );
            Expected::default()
        }
    };
    if let Err(why) = reachable(url, LISTEN_TIMEOUT).await {
        return out.end(StageStatus::Error, format!("the candidate at {url}: {why}"));
    }
    let mut totals = (0, 0, 0);
    for set in &sets {
        let scored = &scored[set];
        let set_dir = dir.join("candidate").join(set);
        let started = Instant::now();
        let checks = match tool.run(url, set, &set_dir, &known).await {
            Ok(checks) => checks,
            Err(why) => return out.end(StageStatus::Error, why),
        };
        let (judged_checks, unscored): (Vec<Check>, Vec<Check>) = checks
            .into_iter()
            .partition(|c| scored.contains(&c.scenario));
        let judged = judge(&judged_checks, &expected.for_set(set));
        totals.0 += judged.new.len();
        totals.1 += judged.stale.len();
        totals.2 += judged.expected.len();
        out.line(format!(
            "- {set}: {} check(s) passed, {} expected failure(s), {} new failure(s), {} stale \
             entr{} ({:.1} s; {} scenario(s) not scored, {} failing check(s) there)",
            judged.passed,
            judged.expected.len(),
            judged.new.len(),
            judged.stale.len(),
            if judged.stale.len() == 1 { "y" } else { "ies" },
            started.elapsed().as_secs_f64(),
            unscored
                .iter()
                .map(|c| &c.scenario)
                .collect::<BTreeSet<_>>()
                .len(),
            unscored.iter().filter(|c| c.status.fails()).count()
        ));
        for check in &judged.new {
            let why = check
                .message
                .clone()
                .unwrap_or_else(|| format!("{:?}", check.status));
            out.line(format!(
                "  - new failure `{}:{}`: {why}",
                check.scenario, check.id
            ));
            out.case(Case::failed(
                format!("{set} {}:{}", check.scenario, check.id),
                why,
            ));
        }
        for entry in &judged.stale {
            let why = format!("`{entry}` passes now: remove it from the expected-failures file");
            out.line(format!("  - stale entry {why}"));
            out.case(Case::failed(format!("{set} stale {entry}"), why));
        }
        if judged.ok() {
            out.case(Case::passed(format!(
                "{set}: no new failure, no stale entry"
            )));
        }
    }
    out.judged(format!(
        "{} new failure(s), {} stale entr{}, {} expected failure(s) over {}",
        totals.0,
        totals.1,
        if totals.1 == 1 { "y" } else { "ies" },
        totals.2,
        sets.join(", ")
    ))
}

/// The requirement sets to run: configured, or those of the candidate's supported versions.
async fn requirement_sets(ctx: &Ctx) -> Result<Vec<String>, StepError> {
    if let Some(sets) = &ctx.settings.requirements {
        if let Some(bad) = sets.iter().find(|s| !SETS.contains(&s.as_str())) {
            return Err(step!(
                "[check] requirements: no requirement set `{bad}` (the suite has {})",
                SETS.join(", ")
            ));
        }
        return Ok(sets.clone());
    }
    let snapshot = match &ctx.candidate_snapshot {
        Some(s) => s.clone(),
        None => crate::contract::take(&ctx.candidate)
            .await
            .map_err(|e| format!("the candidate: {}", crate::error::chain(&e)))?,
    };
    let supported: BTreeSet<&str> = (snapshot.server.get("supportedVersions"))
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str())
        .collect();
    Ok(SETS
        .iter()
        .filter(|s| supported.contains(**s))
        .map(|s| (*s).to_owned())
        .collect())
}

/// `--write-baseline`: the suite run against the baseline server, its failing checks written
/// as the expected-failures file.
async fn write_baseline(
    ctx: &Ctx,
    tool: &Tool,
    known: &BTreeSet<String>,
    scored: &BTreeMap<String, BTreeSet<String>>,
    path: Option<&Path>,
    dir: &Path,
) -> Result<String, StepError> {
    let Some(path) = path else {
        return Ok(
            "- expected failures not written: no path ([check] expected_failures or \
                   --expected-failures)"
                .into(),
        );
    };
    let Some(baseline) = &ctx.baseline else {
        return Ok(format!(
            "- `{}` not refreshed: --write-baseline needs a baseline server (--baseline)",
            path.display()
        ));
    };
    let served = served::bridge(baseline, "the baseline").await?;
    let written = write_from(tool, known, scored, path, dir, &served.url()).await;
    let how = served.how();
    served.stop().await;
    let count = written?;
    Ok(format!(
        "- `{}` written from the baseline's {count} failing check(s) (--write-baseline; the \
         baseline: {})",
        path.display(),
        how
    ))
}

/// Runs the scored sets against the baseline at `url` and writes its failing checks to `path`;
/// how many there were.
async fn write_from(
    tool: &Tool,
    known: &BTreeSet<String>,
    scored: &BTreeMap<String, BTreeSet<String>>,
    path: &Path,
    dir: &Path,
    url: &str,
) -> Result<usize, StepError> {
    reachable(url, LISTEN_TIMEOUT)
        .await
        .map_err(|why| format!("the baseline at {url}: {why}"))?;
    let mut per_set = BTreeMap::new();
    for (set, scored) in scored {
        let checks = tool
            .run(url, set, &dir.join("baseline").join(set), known)
            .await?;
        let checks: Vec<Check> = (checks.into_iter())
            .filter(|c| scored.contains(&c.scenario))
            .collect();
        per_set.insert(set.clone(), checks);
    }
    let text = write_expected(&per_set);
    std::fs::write(path, text).map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
    Ok((per_set.values())
        .map(|c| c.iter().filter(|c| c.status.fails()).count())
        .sum())
}

/// Why the suite cannot run here: the stage is skipped, never failed.
struct Unavailable(String);

/// The command that runs the suite.
struct Tool {
    words: Vec<String>,
    /// What `--version` printed when the command was tried.
    version: String,
}

impl Tool {
    /// `[check] conformance`, else `MCPEVAL_CONFORMANCE`, else `npx --yes` of the pinned
    /// package (which needs Node ≥ 22 on PATH).
    async fn find(ctx: &Ctx) -> Result<Self, Unavailable> {
        let text = ctx.settings.conformance.clone().or_else(|| {
            std::env::var(CONFORMANCE_ENV)
                .ok()
                .filter(|v| !v.trim().is_empty())
        });
        let words = match &text {
            Some(text) => shlex::split(text)
                .filter(|w| !w.is_empty())
                .ok_or_else(|| {
                    Unavailable(format!(
                        "the conformance command `{text}` cannot be split into words"
                    ))
                })?,
            None => vec!["npx".into(), "--yes".into(), CONFORMANCE_PACKAGE.into()],
        };
        let program = Path::new(&words[0])
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if matches!(program.as_str(), "npx" | "npm" | "node") {
            node_at_least_22()
                .await
                .map_err(|e| Unavailable(e.to_string()))?;
        }
        let mut tool = Self {
            words,
            version: String::new(),
        };
        let probe = tool.output(&["--version"], Duration::from_secs(120)).await;
        match probe {
            Ok((true, text)) => {
                tool.version = last_line(&text);
                Ok(tool)
            }
            Ok((false, text)) => Err(Unavailable(format!(
                "the conformance suite `{}` does not run: {}",
                tool.display(),
                last_line(&text)
            ))),
            Err(why) => Err(Unavailable(why.to_string())),
        }
    }

    fn display(&self) -> String {
        shlex::try_join(self.words.iter().map(String::as_str))
            .unwrap_or_else(|_| self.words.join(" "))
    }

    /// Every server scenario the suite knows (`list --server`: lines `  - NAME [versions]`).
    async fn scenarios(&self) -> Result<BTreeSet<String>, StepError> {
        let (ok, text) = self
            .output(&["list", "--server"], Duration::from_secs(60))
            .await?;
        if !ok {
            return Err(step!(
                "`{} list --server` failed: {}",
                self.display(),
                last_line(&text)
            ));
        }
        let names: BTreeSet<String> = text.lines().filter_map(list_item).collect();
        match names.is_empty() {
            true => Err(step!(
                "`{} list --server` listed no scenario",
                self.display()
            )),
            false => Ok(names),
        }
    }

    /// The server scenarios a requirement set scores (`list --requirements SET`: those under
    /// `Server scenarios`, before the client ones and the ones never scored).
    async fn scored(&self, set: &str) -> Result<BTreeSet<String>, StepError> {
        let (ok, text) = self
            .output(&["list", "--requirements", set], Duration::from_secs(60))
            .await?;
        if !ok {
            return Err(step!(
                "`{} list --requirements {set}` failed: {}",
                self.display(),
                last_line(&text)
            ));
        }
        let mut in_server = false;
        let mut scored = BTreeSet::new();
        for line in text.lines() {
            let trimmed = line.trim();
            if trimmed.starts_with("Server scenarios") {
                in_server = true;
            } else if trimmed.starts_with("Client scenarios")
                || trimmed.starts_with("Run and reported")
            {
                in_server = false;
            } else if in_server {
                scored.extend(list_item(line));
            }
        }
        Ok(scored)
    }

    /// Runs the set against `url` into `dir` (stdout and stderr beside it) and reads the checks.
    async fn run(
        &self,
        url: &str,
        set: &str,
        dir: &Path,
        known: &BTreeSet<String>,
    ) -> Result<Vec<Check>, StepError> {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
        let dir_text = dir.display().to_string();
        let args = [
            "server",
            "--url",
            url,
            "--requirements",
            set,
            "-o",
            &dir_text,
        ];
        let (_, text) = self.output(&args, RUN_TIMEOUT).await?;
        let log = PathBuf::from(format!("{dir_text}.log"));
        let _ = std::fs::write(&log, &text);
        let names: Vec<String> = known.iter().cloned().collect();
        let checks = read_results(dir, &names).map_err(|e| e.to_string())?;
        if checks.is_empty() {
            return Err(step!(
                "the conformance suite wrote no checks for {set} (its output: `{}`): {}",
                log.display(),
                last_line(&text)
            ));
        }
        Ok(checks)
    }

    /// Runs the suite with `args`: whether it exited 0, and its stdout and stderr without
    /// colours.
    async fn output(&self, args: &[&str], timeout: Duration) -> Result<(bool, String), StepError> {
        let mut command = tokio::process::Command::new(&self.words[0]);
        command
            .args(&self.words[1..])
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let output = match tokio::time::timeout(timeout, command.output()).await {
            Err(_) => return Err(step!("`{}` took longer than {timeout:?}", self.display())),
            Ok(Err(e)) => {
                return Err(step!("cannot run `{}`: {e}", self.display()));
            }
            Ok(Ok(output)) => output,
        };
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        Ok((output.status.success(), strip_colours(&text)))
    }
}

/// `  - NAME [versions]` → NAME.
fn list_item(line: &str) -> Option<String> {
    let item = line.trim_start().strip_prefix("- ")?;
    let name = item.split_whitespace().next()?;
    Some(name.to_owned())
}

fn strip_colours(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

fn last_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("(no output)")
        .to_owned()
}

/// `node --version` is 22 or newer, or why not.
async fn node_at_least_22() -> Result<(), StepError> {
    let output = tokio::process::Command::new("node")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|e| format!("Node is not installed (`node --version`: {e}); the conformance suite needs Node ≥ 22 (scripts/install-conformance installs one)"))?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let major: u32 = version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    match major >= 22 {
        true => Ok(()),
        false => Err(step!(
            "Node {version} is older than 22, which the conformance suite needs; \
             scripts/install-conformance installs Node 24 from PyPI, then set {CONFORMANCE_ENV} \
             (or [check] conformance) to the launcher it prints"
        )),
    }
}

/// Waits until something accepts connections at the URL's host and port.
pub(super) async fn reachable(url: &str, within: Duration) -> Result<(), StepError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
    let host = parsed.host_str().ok_or("the URL has no host")?.to_owned();
    let port = parsed
        .port_or_known_default()
        .ok_or("the URL has no port")?;
    let deadline = Instant::now() + within;
    loop {
        match tokio::net::TcpStream::connect((host.as_str(), port)).await {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() >= deadline => {
                return Err(step!("nothing answers at {host}:{port}: {e}"))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_output_is_read_without_colours() {
        let text = "\u{1b}[1mServer scenarios (test against a server):\u{1b}[0m\n  - tools-list\n  \
                    - server-initialize [2025-06-18,2025-11-25]\nClient scenarios:\n  - sse-retry\n\
                    Run and reported, but never scored:\n  pending (1):\n    - json-schema-2020-12 [server]\n";
        let clean = strip_colours(text);
        assert!(clean.starts_with("Server scenarios"));
        let items: Vec<String> = clean.lines().filter_map(list_item).collect();
        assert_eq!(
            items,
            [
                "tools-list",
                "server-initialize",
                "sse-retry",
                "json-schema-2020-12"
            ]
        );
        assert_eq!(last_line("a\n\n b \n\n"), "b");
    }

    #[tokio::test]
    async fn an_address_nobody_listens_on_is_not_reachable() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        assert!(reachable(&url, Duration::from_millis(10)).await.is_ok());
        drop(listener);
        let err = reachable(&url, Duration::from_millis(300))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("nothing answers"), "{err}");
    }
}
