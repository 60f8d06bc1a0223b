//! `mcpeval diff`: two contract snapshots into classified changes, a table and the diff's JSON.

use std::path::Path;

use anyhow::Context;

use super::args::DiffArgs;
use super::out::out;
use crate::contract::{self, Snapshot};
use crate::error::{Exit, Failure};

/// Diffs two snapshot directories; the table goes to stdout, the JSON to `--out`.
pub fn diff(args: &DiffArgs) -> Result<Exit, Failure> {
    let read = |dir: &Path| Snapshot::read(dir);
    let (base, cand) = (read(&args.baseline)?, read(&args.candidate)?);
    Snapshot::comparable(&base, &cand)?;
    let diff = contract::diff_snapshots(
        &base,
        &cand,
        (&args.baseline, args.baseline_label.as_deref()),
        (&args.candidate, args.candidate_label.as_deref()),
    );
    if let Some(out) = &args.out {
        let mut text = serde_json::to_string_pretty(&diff).context("cannot encode the diff")?;
        text.push('\n');
        std::fs::write(out, text).with_context(|| format!("cannot write `{}`", out.display()))?;
    }
    out!("{}", contract::diff_table(&diff));
    Ok(if diff.breaks_clients() {
        Exit::Regression
    } else {
        Exit::Ok
    })
}
