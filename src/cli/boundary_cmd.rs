//! `mcpeval tasks boundary`: call tasks for the input schemas a diff narrowed, written as a task
//! file (the values come from `contract::boundary`).

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use serde_json::Value;

use super::out::{errln, outln};
use crate::contract::boundary::{boundary_tasks, to_yaml};
use crate::contract::{Diff, TOOLS_JSON};
use crate::error::{Exit, Failure};

/// The file the tasks are written to, in `--out`.
const BOUNDARY_YAML: &str = "boundary.yaml";

pub struct Boundary<'a> {
    pub diff: &'a Path,
    pub out: &'a Path,
    pub baseline: Option<&'a Path>,
    pub candidate: Option<&'a Path>,
    pub force: bool,
}

pub fn boundary(args: Boundary<'_>) -> Result<Exit, Failure> {
    let text = std::fs::read_to_string(args.diff)
        .map_err(|e| Failure::usage(anyhow!("cannot read diff `{}`: {e}", args.diff.display())))?;
    let diff: Diff = serde_json::from_str(&text).map_err(|e| {
        Failure::usage(anyhow!(
            "`{}` is not a diff written by `mcpeval diff --out`: {e}",
            args.diff.display()
        ))
    })?;
    let snapshot = |given: Option<&Path>, named: &str| -> PathBuf {
        given
            .map_or_else(|| PathBuf::from(named), Path::to_path_buf)
            .join(TOOLS_JSON)
    };
    let base = tools(
        &snapshot(args.baseline, &diff.baseline.snapshot),
        "--baseline-snapshot",
    )?;
    let cand = tools(
        &snapshot(args.candidate, &diff.candidate.snapshot),
        "--candidate-snapshot",
    )?;
    let (tasks, notes) = boundary_tasks(&diff, &base, &cand);
    for note in &notes {
        errln!("not generated: {note}");
    }
    let path = args.out.join(BOUNDARY_YAML);
    if path.exists() && !args.force {
        return Err(Failure::usage(anyhow!(
            "`{}` exists: pass --force to overwrite it",
            path.display()
        )));
    }
    if tasks.is_empty() {
        outln!("no input schema of the diff was narrowed: no boundary task to write");
        return Ok(Exit::Ok);
    }
    std::fs::create_dir_all(args.out)
        .and_then(|()| std::fs::write(&path, to_yaml(&tasks, &args.diff.display().to_string())))
        .map_err(|e| Failure::usage(anyhow!("cannot write `{}`: {e}", path.display())))?;
    let refused = tasks.iter().filter(|t| t.breaking).count();
    let tools: std::collections::BTreeSet<&str> = tasks.iter().map(|t| t.tool.as_str()).collect();
    outln!(
        "{} call task(s) for {} tool(s): {refused} with a value the candidate's schema refuses, {} \
         on the border of both; written to {}",
        tasks.len(),
        tools.len(),
        tasks.len() - refused,
        path.display()
    );
    Ok(Exit::Ok)
}

/// A snapshot's `tools.json`; `flag` names the option that points elsewhere.
fn tools(path: &Path, flag: &str) -> Result<Vec<Value>, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::usage(anyhow!(
            "cannot read `{}` ({e}); the diff names that snapshot: give its directory with {flag}",
            path.display()
        ))
    })?;
    match serde_json::from_str(&text) {
        Ok(Value::Array(tools)) => Ok(tools),
        _ => Err(Failure::usage(anyhow!(
            "`{}` must hold a JSON array of tools",
            path.display()
        ))),
    }
}
