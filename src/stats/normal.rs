//! Standard normal tail probabilities and critical values (statrs) for the asymptotic tests.

use statrs::distribution::{ContinuousCDF, Normal};

/// Two-sided p-value `2 * P(Z >= |z|)`, capped at 1; an infinite `z` gives 0, a NaN gives 1.
pub(crate) fn two_sided_p(z: f64) -> f64 {
    if z.is_nan() {
        return 1.0;
    }
    (2.0 * Normal::standard().sf(z.abs())).min(1.0)
}

/// Upper tail `P(Z >= z)`.
pub(crate) fn upper_tail(z: f64) -> f64 {
    Normal::standard().sf(z)
}

/// The two-sided critical value `z` with `P(|Z| > z) = alpha` (scipy's `norm.isf(alpha / 2)`).
pub(crate) fn critical_value(alpha: f64) -> f64 {
    -Normal::standard().inverse_cdf(alpha / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_scipy_norm() {
        // scipy.stats.norm.isf(0.025), norm.isf(0.05), 2 * norm.sf(2.5)
        assert!((critical_value(0.05) - 1.9599639845400545).abs() < 1e-14);
        assert!((critical_value(0.1) - 1.6448536269514729).abs() < 1e-14);
        // statrs' erfc is good to about 1e-10 relative (its rational approximations use the
        // f64 value of constants that Boost rounds to f32), so 1e-14 would fail here.
        let p = two_sided_p(-2.5);
        assert!((p / 0.012419330651552265 - 1.0).abs() < 1e-9, "{p:e}");
        assert_eq!(two_sided_p(0.0), 1.0);
        assert_eq!(two_sided_p(f64::NEG_INFINITY), 0.0);
        assert_eq!(two_sided_p(f64::NAN), 1.0);
        assert!((upper_tail(8.0) / 6.22096057427174e-16 - 1.0).abs() < 1e-9);
    }
}
