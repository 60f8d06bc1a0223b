//! One call per kind of metric: the candidate-minus-baseline delta, its interval and its test.

use serde::Serialize;

use super::bootstrap::{bootstrap_mean_difference, BootstrapConfig};
use super::fisher::fisher_exact;
use super::mann_whitney::mann_whitney_u;
use super::newcombe::newcombe_interval;
use super::normal::critical_value;
use super::types::{check_alpha, check_sample, mean, Interval, Proportion, StatsError, TestResult};

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

/// From this many trials on each side, a count's interval is the normal one
/// ([`normal_mean_difference`]) rather than the bootstrap.
pub const NORMAL_INTERVAL_FROM: usize = 500;

/// A count metric of one task (tool calls, turns, tokens): delta = difference of means, the
/// percentile bootstrap ([`bootstrap_mean_difference`]) — or, with [`NORMAL_INTERVAL_FROM`] or
/// more trials on both sides, the normal interval it converges to — and the Mann–Whitney U test
/// with the baseline as `x` ([`mann_whitney_u`]).
pub fn compare_counts(
    baseline: &[f64],
    candidate: &[f64],
    config: &BootstrapConfig,
) -> Result<Comparison, StatsError> {
    let test = mann_whitney_u(baseline, candidate)?;
    let interval = if baseline.len().min(candidate.len()) >= NORMAL_INTERVAL_FROM {
        normal_mean_difference(baseline, candidate, config.alpha)?
    } else {
        bootstrap_mean_difference(baseline, candidate, config)?
    };
    Ok(Comparison {
        delta: mean(candidate) - mean(baseline),
        interval,
        test,
    })
}

/// The normal (Welch) interval for `mean(candidate) − mean(baseline)`: the difference ± the
/// two-sided critical value × √(s_b²/n_b + s_c²/n_c), sample variances with n − 1 (Welch 1947,
/// *Biometrika* 34:28–35, with the normal rather than t quantile, which at hundreds of trials
/// per side agree to three digits). What the percentile bootstrap converges to by the central
/// limit theorem; used for large samples, where 2000 resamples of thousands of values per row
/// would cost seconds.
///
/// Errors: an empty or non-finite sample, `alpha` outside (0, 1).
pub fn normal_mean_difference(
    baseline: &[f64],
    candidate: &[f64],
    alpha: f64,
) -> Result<Interval, StatsError> {
    check_sample("baseline", baseline)?;
    check_sample("candidate", candidate)?;
    check_alpha(alpha)?;
    let se = welch_standard_error(baseline, candidate);
    let delta = mean(candidate) - mean(baseline);
    let half = critical_value(alpha) * se;
    Ok(Interval {
        low: delta - half,
        high: delta + half,
    })
}

/// Welch's standard error of `mean(candidate) − mean(baseline)`: √(s_b²/n_b + s_c²/n_c), sample
/// variances with n − 1 (0 for a side of one value). Both samples must be non-empty.
pub fn welch_standard_error(baseline: &[f64], candidate: &[f64]) -> f64 {
    let variance = |v: &[f64]| -> f64 {
        if v.len() < 2 {
            return 0.0;
        }
        let m = mean(v);
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64
    };
    (variance(baseline) / baseline.len() as f64 + variance(candidate) / candidate.len() as f64)
        .sqrt()
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
    fn large_samples_get_the_normal_interval() {
        // 600 per side: the normal interval, matching the formula (the variances with n − 1
        // from Python's statistics.variance, the critical value scipy's norm.isf(0.025)).
        let b: Vec<f64> = (0..600).map(|i| f64::from(i % 4)).collect();
        let c: Vec<f64> = (0..600).map(|i| f64::from(i % 5)).collect();
        let cmp = compare_counts(&b, &c, &BootstrapConfig::default()).unwrap();
        let (vb, vc) = (1.2520868113522539, 2.003338898163606);
        let half = 1.959963984540054 * (vb / 600.0 + vc / 600.0f64).sqrt();
        assert!((cmp.delta - 0.5).abs() < 1e-12);
        assert!((cmp.interval.low - (0.5 - half)).abs() < 1e-9, "{cmp:?}");
        assert!((cmp.interval.high - (0.5 + half)).abs() < 1e-9, "{cmp:?}");
        // The bootstrap on the same data lands close to it.
        let boot = bootstrap_mean_difference(&b, &c, &BootstrapConfig::default()).unwrap();
        assert!((boot.low - cmp.interval.low).abs() < 0.02, "{boot:?}");
        assert!((boot.high - cmp.interval.high).abs() < 0.02, "{boot:?}");
        // One fewer trial: the bootstrap.
        let cmp = compare_counts(&b[..499], &c, &BootstrapConfig::default()).unwrap();
        let boot = bootstrap_mean_difference(&b[..499], &c, &BootstrapConfig::default()).unwrap();
        assert_eq!(cmp.interval, boot);
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
