//! `mcpeval tasks check|list|import`: validate task suites, list their tasks, or import other
//! tools' test files.

use std::path::PathBuf;

use super::args::ImportFrom;
use super::out::{errln, outln};
use crate::error::{Exit, Failure};
use crate::suite::import::{self, Format, Request};
use crate::suite::{lint, load_suite, warning_line, SuiteError, TaskKind, TaskSet};

fn paths_or_default(paths: &[PathBuf]) -> Vec<PathBuf> {
    if paths.is_empty() {
        vec![PathBuf::from("tasks")]
    } else {
        paths.to_vec()
    }
}

/// Prints every problem (file:line:column: message) and exits 2, or the warnings (on stderr)
/// and a one-line summary. With `servers`, or a config that names a baseline or a candidate,
/// the tasks are also checked against their tools (with the config's `[renames]`); a config's
/// suites stand in for `paths` when none is given.
pub async fn check(
    paths: &[PathBuf],
    flags: &[String],
    config: Option<&std::path::Path>,
) -> Result<Exit, Failure> {
    let targets = match config {
        Some(path) => crate::config::config_targets(path)?,
        None => Default::default(),
    };
    let servers = servers_to_check(flags, &targets);
    let paths = match (paths.is_empty(), targets.suites.is_empty()) {
        (true, false) => targets.suites.clone(),
        _ => paths_or_default(paths),
    };
    match load_suite(&paths) {
        Ok(suite) => {
            let mut warnings = Vec::new();
            if !servers.is_empty() {
                let found =
                    against_servers(&suite, &servers, flags, config, &targets.renames).await?;
                if !found.problems.is_empty() {
                    for w in &found.warnings {
                        errln!("{}", warning_line(w));
                    }
                    for d in &found.problems {
                        errln!("{d}");
                    }
                    errln!("{} problem(s) found", found.problems.len());
                    return Ok(Exit::Usage);
                }
                warnings = found.warnings;
            }
            // One list, one format, in file order: the servers' findings and the lint's.
            warnings.extend(lint(&suite));
            warnings.sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
            for w in &warnings {
                errln!("{}", warning_line(w));
            }
            let count = |f: &dyn Fn(&crate::suite::Task) -> bool| {
                suite.tasks.iter().filter(|t| f(t)).count()
            };
            let plural = if warnings.len() == 1 { "" } else { "s" };
            let against = match servers.as_slice() {
                [] => String::new(),
                [one] => format!("; checked against the tools of `{one}`"),
                [base, .., cand] => format!(
                    "; checked against the tools of `{base}` (baseline) and `{cand}` (candidate)"
                ),
            };
            outln!(
                "ok: {} tasks ({} tool, {} no-tool, {} call; {} regression, {} capability), {} warning{plural}{against}",
                suite.tasks.len(),
                count(&|t| t.kind == TaskKind::Tool),
                count(&|t| t.kind == TaskKind::NoTool),
                count(&|t| t.kind == TaskKind::Call),
                count(&|t| t.set == TaskSet::Regression),
                count(&|t| t.set == TaskSet::Capability),
                warnings.len(),
            );
            Ok(Exit::Ok)
        }
        Err(SuiteError::Invalid(diagnostics)) => {
            for d in &diagnostics {
                errln!("{d}");
            }
            errln!("{} problem(s) found", diagnostics.len());
            Ok(Exit::Usage)
        }
        Err(e) => Err(e.into()),
    }
}

/// The servers `--server` names, else the config's baseline and candidate (those it names).
fn servers_to_check(flags: &[String], targets: &crate::config::ConfigTargets) -> Vec<String> {
    if !flags.is_empty() {
        return flags.to_vec();
    }
    [&targets.baseline, &targets.candidate]
        .into_iter()
        .flatten()
        .cloned()
        .collect()
}

/// The expectations check of a run, against the tools the servers list now.
async fn against_servers(
    suite: &crate::suite::Suite,
    servers: &[String],
    flags: &[String],
    config: Option<&std::path::Path>,
    renames: &std::collections::BTreeMap<String, String>,
) -> Result<crate::job::Found, Failure> {
    if servers.len() > 2 {
        return Err(Failure::usage(anyhow::anyhow!(
            "--server is given at most twice (the baseline, then the candidate), got {}",
            servers.len()
        )));
    }
    let mut lists = Vec::new();
    let from_config = flags.is_empty();
    for (i, given) in servers.iter().enumerate() {
        let spec = crate::config::resolve_server(config, given, &[]).map_err(|e| {
            // A spec the config names is the config's `baseline` or `candidate`, not a flag.
            match (e, from_config) {
                (crate::config::ConfigError::Invalid(m), true) => {
                    let side = if i == 0 { "baseline: " } else { "candidate: " };
                    crate::config::ConfigError::Invalid(m.replacen("--server: ", side, 1))
                }
                (e, _) => e,
            }
        })?;
        let listed = async {
            let conn = crate::mcp::McpConnection::connect(&spec).await?;
            let tools = conn.list_tools().await;
            conn.close().await;
            tools
        };
        let tools = listed.await.map_err(|e| {
            Failure::infra(anyhow::anyhow!(
                "`{}`: {}",
                spec.display(),
                crate::error::chain(&e)
            ))
        })?;
        lists.push(tools);
    }
    let (base, cand) = (&lists[0], lists.last().expect("one server at least"));
    Ok(crate::job::check_expectations(suite, base, cand, renames))
}

pub fn list(paths: &[PathBuf]) -> Result<Exit, Failure> {
    let suite = load_suite(&paths_or_default(paths))?;
    let w = suite
        .tasks
        .iter()
        .map(|t| t.id.len())
        .max()
        .unwrap_or(2)
        .max(2);
    outln!(
        "{:w$}  {:7}  {:10}  {:24}  source",
        "id",
        "kind",
        "set",
        "tools"
    );
    for t in &suite.tasks {
        outln!(
            "{:w$}  {:7}  {:10}  {:24}  {}",
            t.id,
            t.kind.as_str(),
            t.set.as_str(),
            t.tools.join(","),
            t.source
        );
    }
    Ok(Exit::Ok)
}

/// Converts the files, then prints per input the file written, its notes and, per case, what
/// did not convert.
pub fn import(
    from: ImportFrom,
    files: Vec<PathBuf>,
    out: PathBuf,
    judge_host: String,
    force: bool,
) -> Result<Exit, Failure> {
    let format = match from {
        ImportFrom::Mcpchecker => Format::Mcpchecker,
        ImportFrom::Promptfoo => Format::Promptfoo,
    };
    let request = Request {
        format,
        files,
        out,
        judge_host,
        force,
    };
    let reports = import::import(&request)?;
    let mut tasks = 0;
    for report in &reports {
        let input = report.input.display();
        let left_out = report.cases.iter().filter(|c| c.id.is_none()).count();
        match &report.output {
            Some(output) => outln!(
                "{input} -> {}: {} task(s), {left_out} case(s) left out",
                output.display(),
                report.tasks()
            ),
            None => outln!("{input}: no case converts; nothing written"),
        }
        tasks += report.tasks();
        for note in &report.notes {
            outln!("  note: {note}");
        }
        for case in &report.cases {
            let name = case
                .id
                .clone()
                .unwrap_or_else(|| format!("{:?}", case.name));
            for what in &case.not_converted {
                outln!("  {name}: not converted: {what}");
            }
            for what in &case.notes {
                outln!("  {name}: note: {what}");
            }
        }
    }
    if tasks > 0 {
        let dir = request.out.display();
        outln!(
            "{tasks} task(s) written to {dir}; check them with `mcpeval tasks check --suite {dir}`"
        );
    }
    Ok(Exit::Ok)
}
