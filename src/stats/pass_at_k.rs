//! Unbiased pass@k and pass^k estimators from c successes in n trials of one task.

/// Whether `(n, c, k)` describes an estimable case: `1 <= k <= n` and `c <= n`.
fn valid(n: u64, c: u64, k: u64) -> bool {
    n > 0 && k > 0 && k <= n && c <= n
}

/// pass@k: the chance that at least one of `k` trials drawn without replacement from the `n`
/// observed (`c` of them successes) succeeds, `1 - C(n-c, k) / C(n, k)`.
///
/// The unbiased estimator of Chen et al. 2021 (*Evaluating Large Language Models Trained on
/// Code*, §2.1), which assumes exchangeable trials. Computed as
/// `-expm1(sum ln(1 - c/(n-i)), i < k)`, which keeps full relative precision near 0 and 1
/// without forming binomial coefficients. `None` when `n = 0`, `k = 0`, `k > n` or `c > n`.
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if !valid(n, c, k) {
        return None;
    }
    if n - c < k {
        // Fewer failures than draws: some draw must succeed.
        return Some(1.0);
    }
    let ln_all_fail: f64 = (0..k).map(|i| (-(c as f64) / (n - i) as f64).ln_1p()).sum();
    Some(-ln_all_fail.exp_m1())
}

/// pass^k: the chance that all `k` trials drawn without replacement from the `n` observed
/// (`c` of them successes) succeed, `C(c, k) / C(n, k)`.
///
/// The unbiased estimator of the probability that k independent trials all pass (Yao et al.
/// 2024, τ-bench, after Chen et al. 2021). Computed as the product of `(c - i) / (n - i)`,
/// each factor at most 1, so nothing overflows. `None` when `n = 0`, `k = 0`, `k > n` or
/// `c > n`.
pub fn pass_hat_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if !valid(n, c, k) {
        return None;
    }
    if c < k {
        return Some(0.0);
    }
    Some((0..k).map(|i| (c - i) as f64 / (n - i) as f64).product())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_support::{assert_close, cases};
    use proptest::prelude::*;
    use serde_json::Value;

    fn check(actual: Option<f64>, expected: &Value, name: &str) {
        match expected.as_f64() {
            None => assert_eq!(actual, None, "{name}"),
            Some(e) => assert_close(actual.expect(name), e, &name),
        }
    }

    #[test]
    fn matches_exact_fractions() {
        for case in cases("pass_at_k.json") {
            let [n, c, k] = ["n", "c", "k"].map(|key| case[key].as_u64().unwrap());
            let name = format!("n={n} c={c} k={k}");
            check(pass_at_k(n, c, k), &case["pass_at_k"], &name);
            check(pass_hat_k(n, c, k), &case["pass_hat_k"], &name);
        }
    }

    #[test]
    fn reduces_to_the_rate_at_k_one() {
        assert_eq!(pass_at_k(10, 3, 1), Some(0.3));
        assert_eq!(pass_hat_k(10, 3, 1), Some(0.3));
        assert_eq!(pass_at_k(0, 0, 1), None);
        assert_eq!(pass_hat_k(5, 2, 6), None);
    }

    proptest! {
        #[test]
        fn bounded_and_ordered(n in 1u64..300, c_frac in 0.0..=1.0f64, k_frac in 0.0..=1.0f64) {
            let c = (c_frac * n as f64).round() as u64;
            let k = ((k_frac * n as f64).round() as u64).max(1);
            let (at, hat) = (pass_at_k(n, c, k).unwrap(), pass_hat_k(n, c, k).unwrap());
            prop_assert!((0.0..=1.0).contains(&at) && (0.0..=1.0).contains(&hat));
            prop_assert!(hat <= at + 1e-12, "pass^k {hat} above pass@k {at}");
        }
    }
}
