//! `mcpeval check`: the flags turned into a check request, the stages shown as they end, and
//! the verdict's exit code.

use super::args::CheckArgs;
use super::out::{errln, outln};
use super::run_cmd::Console;
use crate::error::{Exit, Failure};
use crate::report::{check_exit, stage_line};

/// Runs `mcpeval check` and returns the exit code.
pub async fn check(args: &CheckArgs) -> Result<Exit, Failure> {
    crate::memory::fixed_mmap_threshold();
    let log = Box::new(|line: &str| errln!("check: {line}"));
    let checked = crate::job::check::check(&args.to_request(), &Console, log).await?;
    let record = &checked.record;
    outln!();
    for stage in &record.stages {
        outln!("{}", stage_line(stage));
    }
    let verdict = record.verdict();
    outln!(
        "check {} (exit {}): reports in {}",
        verdict.word(),
        check_exit(verdict).code(),
        checked.dir.display()
    );
    if checked.interrupted {
        errln!(
            "interrupted: the stages after the one cut short did not run; check.json and the \
             reports hold those that did"
        );
        return Ok(Exit::Interrupted);
    }
    Ok(check_exit(verdict))
}
