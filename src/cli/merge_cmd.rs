//! `mcpeval merge`: joins the shards of a run into one run directory (`rundir::merge`), then
//! compares it as `mcpeval compare OUT` does.

use super::args::{CompareArgs, MergeArgs};
use super::exit::{CliError, Exit};
use crate::rundir::{merge as merge_shards, MergeError};

/// Runs `mcpeval merge` and returns the exit code of the merged run's verdict.
pub fn merge(args: &MergeArgs) -> Result<Exit, CliError> {
    let merged = merge_shards(&args.shards, &args.out).map_err(|e| match e {
        MergeError::Refused(message) => CliError::usage(anyhow::anyhow!(message)),
        MergeError::Unreadable(e) => CliError::usage(e),
        MergeError::Write(e) => CliError::infra(e),
    })?;
    eprintln!(
        "merged {} shards of run config {} ({} episodes) into {}",
        merged.shards,
        merged.config_hash,
        merged.episodes,
        merged.out.display()
    );
    // The comparison and its reports, exactly as `mcpeval compare OUT` makes them.
    super::compare_cmd::compare(&CompareArgs {
        run: merged.out,
        against: None,
        out: None,
        correction: None,
        alpha: None,
    })
}
