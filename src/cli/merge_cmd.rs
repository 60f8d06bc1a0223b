//! `mcpeval merge`: joins the shards of a run into one run directory (`rundir::merge`), then
//! compares it as `mcpeval compare OUT` does.

use super::args::{CompareArgs, MergeArgs};
use super::out::errln;
use crate::error::{Exit, Failure};
use crate::rundir::merge as merge_shards;

/// Runs `mcpeval merge` and returns the exit code of the merged run's verdict.
pub fn merge(args: &MergeArgs) -> Result<Exit, Failure> {
    let merged = merge_shards(&args.shards, &args.out)?;
    if merged.without_transcript > 0 {
        errln!(
            "warning: {} of the {} episodes have no transcript in their shard's {}",
            merged.without_transcript,
            merged.episodes,
            crate::rundir::TRANSCRIPTS_JSONL
        );
    }
    errln!(
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
