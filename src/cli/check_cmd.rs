//! `mcpeval check`: the flags turned into a check request (or read back from the check.json of
//! the check `--resume` finishes), the stages shown as they end, and the verdict's exit code.

use clap::Parser;

use super::args::{CheckArgs, Cli, Command};
use super::out::{errln, outln};
use super::run_cmd::Console;
use crate::error::{Exit, Failure};
use crate::job::check::CheckRequest;
use crate::report::{check_record_exit, stage_line};
use crate::rundir::CheckRecord;

/// Runs `mcpeval check` and returns the exit code.
pub async fn check(args: &CheckArgs) -> Result<Exit, Failure> {
    crate::memory::fixed_mmap_threshold();
    let request = match &args.resume {
        Some(dir) => resumed(dir)?,
        None => args.to_request(),
    };
    let log = Box::new(|line: &str| errln!("check: {line}"));
    let checked = crate::job::check::check(&request, &Console, log).await?;
    let record = &checked.record;
    outln!();
    for stage in &record.stages {
        outln!("{}", stage_line(stage));
    }
    // The exit the process ends with, 130 when interrupted: the line never contradicts it.
    let exit = check_record_exit(record);
    let verdict = record.verdict();
    outln!(
        "check {}{} (exit {}): reports in {}",
        verdict.word(),
        if checked.interrupted {
            ", interrupted"
        } else {
            ""
        },
        exit.code(),
        checked.dir.display()
    );
    let evaluation = checked.dir.join("evaluation");
    if args.explain && !checked.interrupted && evaluation.join(crate::rundir::RUN_JSON).is_file() {
        super::explain_cmd::after_verdict(&evaluation).await;
    }
    if checked.interrupted {
        errln!(
            "interrupted: the stages after the one cut short did not run; check.json and the \
             reports hold those that did; finish with: mcpeval check --resume {}",
            checked.dir.display()
        );
    }
    Ok(exit)
}

/// The request of the check in `dir`, from the flags its check.json recorded, to finish there.
fn resumed(dir: &std::path::Path) -> Result<CheckRequest, Failure> {
    let record = CheckRecord::read(dir).map_err(|e| {
        Failure::usage(anyhow::anyhow!(
            "cannot resume `{}`: no check.json of a check there: {e}",
            dir.display()
        ))
    })?;
    let argv = ["mcpeval", "check"]
        .into_iter()
        .map(str::to_owned)
        .chain(record.args);
    let parsed = Cli::try_parse_from(argv).map_err(|e| {
        Failure::usage(anyhow::anyhow!(
            "cannot resume `{}`: its check.json's flags do not parse: {e}",
            dir.display()
        ))
    })?;
    let Some(Command::Check(args)) = parsed.command else {
        return Err(Failure::usage(anyhow::anyhow!(
            "cannot resume `{}`: its check.json holds no check's flags",
            dir.display()
        )));
    };
    let mut request = args.to_request();
    request.out = Some(dir.to_path_buf());
    request.resume = true;
    Ok(request)
}
