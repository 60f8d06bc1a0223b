//! The Mann–Whitney U test, two-sided, normal approximation with tie and continuity corrections.

use super::normal::upper_tail;
use super::rank::average_ranks;
use super::types::{check_sample, StatsError, TestResult};

/// Mann–Whitney U test (Wilcoxon rank-sum), two-sided, of whether values of `x` tend to be
/// larger or smaller than values of `y`.
///
/// Assumes independent observations within and between samples. Uses the normal
/// approximation to U with the tie-corrected variance
/// `n1 n2 / 12 * ((n + 1) - sum(t^3 - t) / (n (n - 1)))` and a continuity correction of 1/2
/// (Mann & Whitney 1947, *Ann Math Statist* 18:50–60; the tie correction as in Lehmann 1975,
/// *Nonparametrics*, ch. 1).
/// Matches `scipy.stats.mannwhitneyu(x, y, alternative='two-sided', method='asymptotic',
/// use_continuity=True)`. Approximate for very small samples; never exact.
///
/// `statistic` is U of `x` (scipy's U1): the number of pairs with `x > y`, ties counting 1/2.
/// When every value is equal (no variance) the p-value is 1.
///
/// Errors: an empty sample or a non-finite value.
pub fn mann_whitney_u(x: &[f64], y: &[f64]) -> Result<TestResult, StatsError> {
    check_sample("x", x)?;
    check_sample("y", y)?;
    let (n1, n2) = (x.len() as f64, y.len() as f64);
    let n = n1 + n2;
    let pooled: Vec<f64> = x.iter().chain(y).copied().collect();
    let ranks = average_ranks(&pooled);
    let r1: f64 = ranks.ranks[..x.len()].iter().sum();
    let u1 = r1 - n1 * (n1 + 1.0) / 2.0;
    let u = u1.max(n1 * n2 - u1);
    let mu = n1 * n2 / 2.0;
    let s = (n1 * n2 / 12.0 * ((n + 1.0) - ranks.tie_term / (n * (n - 1.0)))).sqrt();
    // Zero variance happens only when every value ties (NaN would mean the same).
    let p_value = if s > 0.0 {
        (2.0 * upper_tail((u - mu - 0.5) / s)).clamp(0.0, 1.0)
    } else {
        1.0
    };
    Ok(TestResult {
        statistic: u1,
        p_value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_support::{assert_close, cases, num, nums};
    use proptest::prelude::*;

    #[test]
    fn matches_scipy() {
        for case in cases("mann_whitney.json") {
            let (x, y) = (nums(&case["x"]), nums(&case["y"]));
            let res = mann_whitney_u(&x, &y).unwrap();
            let name = format!("mwu {x:?} {y:?}");
            assert_close(res.statistic, num(&case["statistic"]), &name);
            assert_close(res.p_value, num(&case["p_value"]), &name);
        }
    }

    #[test]
    fn all_equal_gives_one() {
        let res = mann_whitney_u(&[2.0; 5], &[2.0; 3]).unwrap();
        assert_eq!((res.statistic, res.p_value), (7.5, 1.0));
        assert_eq!(mann_whitney_u(&[1.0], &[1.0]).unwrap().p_value, 1.0);
    }

    #[test]
    fn rejects_empty_and_nan() {
        assert_eq!(
            mann_whitney_u(&[], &[1.0]).unwrap_err(),
            StatsError::EmptySample("x")
        );
        assert_eq!(
            mann_whitney_u(&[1.0], &[f64::NAN]).unwrap_err(),
            StatsError::NonFinite("y")
        );
    }

    proptest! {
        #[test]
        fn p_in_unit_interval_and_symmetric(
            x in prop::collection::vec(0u8..12, 1..40),
            y in prop::collection::vec(0u8..12, 1..40),
        ) {
            let x: Vec<f64> = x.into_iter().map(f64::from).collect();
            let y: Vec<f64> = y.into_iter().map(f64::from).collect();
            let a = mann_whitney_u(&x, &y).unwrap();
            let b = mann_whitney_u(&y, &x).unwrap();
            prop_assert!((0.0..=1.0).contains(&a.p_value));
            prop_assert!((a.p_value - b.p_value).abs() <= 1e-12);
            let pairs = (x.len() * y.len()) as f64;
            prop_assert!((a.statistic + b.statistic - pairs).abs() <= 1e-9);
        }
    }
}
