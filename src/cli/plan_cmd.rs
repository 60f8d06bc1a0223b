//! `mcpeval plan`: the library's plan (`job::plan`) for the flags given, printed.

use super::args::PlanArgs;
use super::out::outln;
use crate::error::{Exit, Failure};
use crate::job::PlanRequest;

/// Runs `mcpeval plan`.
pub fn plan(args: &PlanArgs) -> Result<Exit, Failure> {
    let lines = crate::job::plan(&PlanRequest {
        baseline_rate: args.baseline_rate,
        drop: args.drop,
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
