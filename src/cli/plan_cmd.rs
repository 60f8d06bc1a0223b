//! `mcpeval plan`: trials per side for Fisher's exact test to detect a drop in success rate.

use super::args::PlanArgs;
use super::exit::{CliError, Exit};
use super::out::outln;
use crate::stats::{fisher_power, trials_needed, trials_needed_stable};

/// Prints the first n whose exact power reaches the target, the n from which it stays there,
/// and the power at a few round numbers of trials for a sense of scale.
pub fn plan(args: &PlanArgs) -> Result<Exit, CliError> {
    let (p0, drop, alpha, power) = (args.baseline_rate, args.drop, args.alpha, args.power);
    let usage = |e: crate::stats::StatsError| CliError::usage(anyhow::anyhow!("{e}"));
    if drop.is_nan() || drop <= 0.0 {
        return Err(CliError::usage(anyhow::anyhow!(
            "--drop must be above 0 (an absolute drop: 0.10 = ten points), got {drop}"
        )));
    }
    let max = args.max_trials.max(1);
    let first = trials_needed(p0, drop, alpha, power, max).map_err(usage)?;
    outln!(
        "Fisher's exact test, two-sided, alpha {alpha}: baseline {:.1} % → candidate {:.1} % \
         (a drop of {:.1} points), power {:.0} %",
        p0 * 100.0,
        (p0 - drop) * 100.0,
        drop * 100.0,
        power * 100.0
    );
    match first {
        None => outln!("trials per side: more than {max} (raise --max-trials)"),
        Some(n) => {
            outln!("trials per side: {n}");
            // Dips below the target happen just above the first n; looking a quarter beyond
            // it keeps this O(n³) search short (the full range would take minutes at 2000).
            let window = (n + n / 4 + 10).min(max);
            let stable = trials_needed_stable(p0, drop, alpha, power, window).map_err(usage)?;
            match stable {
                Some(s) if s != n => outln!(
                    "  exact power saw-tooths: it dips below {:.0} % again between {n} and {s}; \
                     from {s} trials on it stays above (checked up to {window})",
                    power * 100.0
                ),
                Some(_) => outln!("  (power stays above the target from {n} up to {window})"),
                None => outln!(
                    "  exact power saw-tooths: it is below the target again at {window}; \
                     plan for more than {window} trials"
                ),
            }
        }
    }
    let mut scale: Vec<u64> = [5, 10, 20, 50, 100, 200]
        .into_iter()
        .filter(|&n| n <= max)
        .collect();
    if let Some(n) = first {
        scale.push(n);
    }
    scale.sort_unstable();
    scale.dedup();
    outln!("  trials  power");
    for n in scale {
        let p = fisher_power(p0, drop, n, alpha).map_err(usage)?;
        // Rounding can leave -0.0 for a power of nothing.
        let percent = if p > 0.0 { p * 100.0 } else { 0.0 };
        outln!("  {n:>6}  {percent:>5.1} %");
    }
    Ok(Exit::Ok)
}
