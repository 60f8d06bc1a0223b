//! Sequential designs for adaptive runs: an error rate spent over looks (Lan–DeMets,
//! O'Brien–Fleming-like) and predictive power for futility.

use statrs::distribution::{ContinuousCDF, Normal};

use super::types::{check_alpha, StatsError};

/// The share of a two-sided level `alpha` spent by information fraction `t` under Lan and
/// DeMets' O'Brien–Fleming-like spending function, `α(t) = 2 − 2Φ(z₁₋α/₂ / √t)` (Lan & DeMets
/// 1983, *Biometrika* 70:659–663): almost nothing early, the whole level at `t = 1`.
pub fn obf_spent(t: f64, alpha: f64) -> f64 {
    if t <= 0.0 {
        return 0.0;
    }
    if t >= 1.0 {
        return alpha;
    }
    let normal = Normal::standard();
    let z = -normal.inverse_cdf(alpha / 2.0);
    2.0 * normal.sf(z / t.sqrt())
}

/// The weight of each look: the share of the level spent at it, `(α(t_j) − α(t_{j−1})) / α`, with
/// `t_j = looks[j] / looks.last()` (trials per side at look `j` over the planned maximum). The
/// weights are positive and sum to 1.
///
/// Errors: no looks, looks that do not increase, or `alpha` outside (0, 1).
pub fn look_weights(looks: &[u32], alpha: f64) -> Result<Vec<f64>, StatsError> {
    check_alpha(alpha)?;
    let Some(&last) = looks.last() else {
        return Err(StatsError::InvalidLooks("no look".into()));
    };
    if looks[0] == 0 || looks.windows(2).any(|w| w[0] >= w[1]) {
        return Err(StatsError::InvalidLooks(format!(
            "they must increase from 1 trial on: {looks:?}"
        )));
    }
    let spent: Vec<f64> = looks
        .iter()
        .map(|&n| obf_spent(f64::from(n) / f64::from(last), alpha))
        .collect();
    Ok(spent
        .iter()
        .enumerate()
        .map(|(j, &s)| (s - if j == 0 { 0.0 } else { spent[j - 1] }) / alpha)
        .collect())
}

/// Predictive power with a flat prior (Spiegelhalter, Freedman & Blackburn 1986, *Controlled
/// Clinical Trials* 7:8–17): the probability that the standardised statistic, now `z` at
/// information fraction `t`, ends at or beyond `z_crit` at `t = 1`, averaging over what the
/// data so far say about the effect: `Φ((z − z_crit·√t) / √(1 − t))`. At `t ≥ 1` it is 1 or 0.
pub fn predictive_power(z: f64, t: f64, z_crit: f64) -> f64 {
    if t >= 1.0 {
        return f64::from(u8::from(z >= z_crit));
    }
    if z.is_nan() {
        return 0.0;
    }
    let t = t.max(f64::MIN_POSITIVE);
    Normal::standard().cdf((z - z_crit * t.sqrt()) / (1.0 - t).sqrt())
}

/// The one-sided critical value `z` with `P(Z > z) = alpha`.
pub fn one_sided_critical(alpha: f64) -> f64 {
    -Normal::standard().inverse_cdf(alpha.clamp(f64::MIN_POSITIVE, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spending_matches_the_formula() {
        // Python: from statistics import NormalDist as N; z = N().inv_cdf(1 - 0.05 / 2)
        // [2 - 2 * N().cdf(z / t ** 0.5) for t in (0.2, 0.5, 0.8)]
        let expected = [
            (0.2, 1.1726446842441618e-05),
            (0.5, 0.005574596680784527),
            (0.8, 0.02842963075307292),
        ];
        for (t, want) in expected {
            let got = obf_spent(t, 0.05);
            assert!(
                (got / want - 1.0).abs() < 1e-7,
                "t = {t}: {got:e} vs {want:e}"
            );
        }
        assert_eq!(obf_spent(0.0, 0.05), 0.0);
        assert_eq!(obf_spent(1.0, 0.05), 0.05);
    }

    #[test]
    fn weights_are_positive_increasing_and_sum_to_one() {
        let looks = [5, 10, 15, 20, 25, 30];
        let w = look_weights(&looks, 0.01).unwrap();
        assert_eq!(w.len(), 6);
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(w.windows(2).all(|p| p[0] > 0.0 && p[0] < p[1]), "{w:?}");
        // O'Brien–Fleming-like: most of the level is kept for the last look.
        assert!(w[5] > 0.5, "{w:?}");
        assert_eq!(look_weights(&[30], 0.01).unwrap(), vec![1.0]);
        assert!(look_weights(&[], 0.01).is_err());
        assert!(look_weights(&[5, 5], 0.01).is_err());
        assert!(look_weights(&[0, 5], 0.01).is_err());
    }

    #[test]
    fn predictive_power_follows_the_trend() {
        // Python: N().cdf((z - zc * t ** 0.5) / (1 - t) ** 0.5) with z = 1.5, t = 1/3, zc = 2.5
        let got = predictive_power(1.5, 1.0 / 3.0, 2.5);
        assert!((got - 0.5276446273039475).abs() < 1e-9, "{got}");
        // No trend at a fifth of the trials: Φ(−1.5).
        assert!((predictive_power(0.0, 0.2, 3.0) - 0.06680720126885807).abs() < 1e-9);
        assert!(predictive_power(4.0, 0.5, 3.0) > 0.95);
        assert_eq!(predictive_power(3.1, 1.0, 3.0), 1.0);
        assert_eq!(predictive_power(2.9, 1.0, 3.0), 0.0);
        assert!((one_sided_critical(0.025) - 1.959963984540054).abs() < 1e-12);
    }
}
