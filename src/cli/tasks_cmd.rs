//! `mcpeval tasks check|list`: validate task suites (with warnings), or list their tasks.

use std::path::PathBuf;

use super::out::{errln, outln};
use crate::error::{Exit, Failure};
use crate::suite::{lint, load_suite, SuiteError, TaskKind, TaskSet};

fn paths_or_default(paths: &[PathBuf]) -> Vec<PathBuf> {
    if paths.is_empty() {
        vec![PathBuf::from("tasks")]
    } else {
        paths.to_vec()
    }
}

/// Prints every problem (file:line:column: message) and exits 2, or the warnings (on stderr)
/// and a one-line summary.
pub fn check(paths: &[PathBuf]) -> Result<Exit, Failure> {
    match load_suite(&paths_or_default(paths)) {
        Ok(suite) => {
            let warnings = lint(&suite);
            for w in &warnings {
                let at = match w.line {
                    0 => w.file.display().to_string(),
                    line => format!("{}:{line}:{}", w.file.display(), w.column),
                };
                errln!("{at}: warning: {}", w.message);
            }
            let count = |f: &dyn Fn(&crate::suite::Task) -> bool| {
                suite.tasks.iter().filter(|t| f(t)).count()
            };
            let plural = if warnings.len() == 1 { "" } else { "s" };
            outln!(
                "ok: {} tasks ({} tool, {} no-tool, {} call; {} regression, {} capability), {} warning{plural}",
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
