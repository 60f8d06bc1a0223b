//! One call per kind of metric: the candidate-minus-baseline delta, its interval and its test.

use serde::Serialize;

use super::bootstrap::{bootstrap_mean_difference, BootstrapConfig};
use super::fisher::fisher_exact;
use super::mann_whitney::mann_whitney_u;
use super::newcombe::newcombe_interval;
use super::types::{mean, Interval, Proportion, StatsError, TestResult};

/// A delta (candidate minus baseline), its confidence interval and a two-sided test of no
/// difference.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Comparison {
    pub delta: f64,
    pub interval: Interval,
    pub test: TestResult,
}

/// Success rates of one task: delta = candidate rate − baseline rate, Newcombe's interval at
/// `1 - alpha` ([`newcombe_interval`]) and Fisher's exact test ([`fisher_exact`]).
pub fn compare_success(
    baseline: Proportion,
    candidate: Proportion,
    alpha: f64,
) -> Result<Comparison, StatsError> {
    Ok(Comparison {
        delta: candidate.rate()? - baseline.rate()?,
        interval: newcombe_interval(baseline, candidate, alpha)?,
        test: fisher_exact(baseline, candidate)?,
    })
}

/// A count metric of one task (tool calls, turns, tokens): delta = difference of means, the
/// percentile bootstrap ([`bootstrap_mean_difference`]) and the Mann–Whitney U test with the
/// baseline as `x` ([`mann_whitney_u`]).
pub fn compare_counts(
    baseline: &[f64],
    candidate: &[f64],
    config: &BootstrapConfig,
) -> Result<Comparison, StatsError> {
    let test = mann_whitney_u(baseline, candidate)?;
    Ok(Comparison {
        delta: mean(candidate) - mean(baseline),
        interval: bootstrap_mean_difference(baseline, candidate, config)?,
        test,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_delta_is_candidate_minus_baseline() {
        let c = compare_success(Proportion::new(19, 20), Proportion::new(12, 20), 0.05).unwrap();
        assert!((c.delta + 0.35).abs() < 1e-15);
        assert!(c.interval.contains(c.delta) && c.interval.high < 0.0);
        assert!(c.test.p_value < 0.05);
    }

    #[test]
    fn counts_combine_their_parts() {
        let config = BootstrapConfig::default();
        let (b, c) = ([2.0, 3.0, 2.0, 4.0], [5.0, 6.0, 4.0, 7.0, 6.0]);
        let cmp = compare_counts(&b, &c, &config).unwrap();
        assert_eq!(cmp.delta, 5.6 - 2.75);
        assert_eq!(cmp.test, mann_whitney_u(&b, &c).unwrap());
        assert_eq!(
            cmp.interval,
            bootstrap_mean_difference(&b, &c, &config).unwrap()
        );
    }
}
