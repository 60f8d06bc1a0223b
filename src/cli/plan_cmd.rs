//! `mcpeval plan`: the library's plan (`job::plan`) for the flags given, printed; with
//! `--agreement FILE`, the screening host's missed regressions (`job::agree::screen`).

use super::args::PlanArgs;
use super::out::outln;
use crate::error::{Exit, Failure};
use crate::job::PlanRequest;

/// Runs `mcpeval plan`; with `--agreement`, what a screening host would have missed.
pub fn plan(args: &PlanArgs) -> Result<Exit, Failure> {
    if let Some(path) = &args.agreement {
        for line in crate::job::agree::screen(path)? {
            outln!("{line}");
        }
        return Ok(Exit::Ok);
    }
    let Some(drop) = args.drop else {
        return Err(Failure::usage(anyhow::anyhow!(
            "--drop is required without --agreement"
        )));
    };
    let lines = crate::job::plan(&PlanRequest {
        baseline_rate: args.baseline_rate,
        drop,
        alpha: args.alpha,
        power: args.power,
        max_trials: args.max_trials,
        suite: args.suite.clone(),
        config: args.config.clone(),
        host: args.host.clone(),
        from: args.from.clone(),
        adaptive: args.adaptive,
    })?;
    for line in lines {
        outln!("{line}");
    }
    Ok(Exit::Ok)
}
