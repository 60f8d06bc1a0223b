//! The Wilcoxon signed-rank test on paired differences, two-sided, normal approximation.

use super::normal::two_sided_p;
use super::rank::average_ranks;
use super::types::{check_sample, StatsError, TestResult};

/// Wilcoxon signed-rank test, two-sided, of whether the paired differences `d` (candidate minus
/// baseline, one per task) are centred on zero.
///
/// Assumes independent pairs and differences symmetric about their median under the null.
/// Zero differences are dropped before ranking (`zero_method='wilcox'`); the absolute
/// differences get average ranks, and the rank sum of the positive ones is compared with the
/// normal distribution of mean `n(n+1)/4` and tie-corrected variance
/// `n(n+1)(2n+1)/24 - sum(t^3 - t)/48`, without continuity correction (Wilcoxon 1945,
/// *Biometrics Bulletin* 1:80–83; Lehmann 1975, *Nonparametrics*, ch. 3). Matches
/// `scipy.stats.wilcoxon(d, zero_method='wilcox', correction=False, method='asymptotic')`.
///
/// `statistic` is `min(R+, R-)` as in scipy. When every difference is zero the p-value is 1
/// (scipy gives NaN).
///
/// Errors: no differences, or a non-finite one.
pub fn wilcoxon_signed_rank(d: &[f64]) -> Result<TestResult, StatsError> {
    check_sample("d", d)?;
    let nonzero: Vec<f64> = d.iter().copied().filter(|&v| v != 0.0).collect();
    if nonzero.is_empty() {
        return Ok(TestResult {
            statistic: 0.0,
            p_value: 1.0,
        });
    }
    let magnitudes: Vec<f64> = nonzero.iter().map(|v| v.abs()).collect();
    let ranks = average_ranks(&magnitudes);
    let (mut r_plus, mut r_minus) = (0.0, 0.0);
    for (v, r) in nonzero.iter().zip(&ranks.ranks) {
        if *v > 0.0 {
            r_plus += r;
        } else {
            r_minus += r;
        }
    }
    let n = nonzero.len() as f64;
    let mean = n * (n + 1.0) * 0.25;
    let variance = (n * (n + 1.0) * (2.0 * n + 1.0) - ranks.tie_term / 2.0) / 24.0;
    Ok(TestResult {
        statistic: r_plus.min(r_minus),
        p_value: two_sided_p((r_plus - mean) / variance.sqrt()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_support::{assert_close, cases, num, nums};
    use proptest::prelude::*;

    #[test]
    fn matches_scipy() {
        for case in cases("wilcoxon.json") {
            let d = nums(&case["d"]);
            let res = wilcoxon_signed_rank(&d).unwrap();
            let name = format!("wilcoxon {d:?}");
            assert_close(res.statistic, num(&case["statistic"]), &name);
            assert_close(res.p_value, num(&case["p_value"]), &name);
        }
    }

    #[test]
    fn all_zero_gives_one_and_empty_is_an_error() {
        assert_eq!(wilcoxon_signed_rank(&[0.0, -0.0]).unwrap().p_value, 1.0);
        assert_eq!(
            wilcoxon_signed_rank(&[]).unwrap_err(),
            StatsError::EmptySample("d")
        );
    }

    proptest! {
        #[test]
        fn p_in_unit_interval_and_sign_symmetric(d in prop::collection::vec(-5i8..=5, 1..50)) {
            let d: Vec<f64> = d.into_iter().map(f64::from).collect();
            let res = wilcoxon_signed_rank(&d).unwrap();
            prop_assert!((0.0..=1.0).contains(&res.p_value));
            let flipped: Vec<f64> = d.iter().map(|v| -v).collect();
            let other = wilcoxon_signed_rank(&flipped).unwrap();
            prop_assert!((res.p_value - other.p_value).abs() <= 1e-12);
        }
    }
}
