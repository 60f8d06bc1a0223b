//! `mcpeval agree RUN_A [RUN_B]`: the library's comparison of hosts' verdicts (`job::agree`),
//! printed: per pair of hosts, kappa, the tasks they disagree on, Spearman's rho.

use super::args::AgreeArgs;
use super::out::outln;
use crate::error::{Exit, Failure};
use crate::job::agree::{agree as compare, disagreements, kappa_line, spearman_line, AgreeRequest};

/// Runs `mcpeval agree` and returns its exit code: 0 once it has finished.
pub fn agree(args: &AgreeArgs) -> Result<Exit, Failure> {
    let agreed = compare(&AgreeRequest {
        run_a: args.run_a.clone(),
        run_b: args.run_b.clone(),
        out: args.out.clone(),
    })?;
    for pair in &agreed.pairs {
        outln!("host agreement: {} vs {}", pair.host_a, pair.host_b);
        outln!("{}", kappa_line(pair));
        for line in disagreements(pair) {
            outln!("  {line}");
        }
        outln!("{}", spearman_line(pair));
    }
    outln!("agreement: {}", agreed.csv.display());
    Ok(Exit::Ok)
}
