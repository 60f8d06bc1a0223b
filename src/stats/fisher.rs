//! Fisher's exact test for two proportions (a 2×2 table), two-sided, and its building blocks.

use statrs::function::factorial::ln_factorial;

use super::types::{Proportion, StatsError, TestResult};

/// Two table probabilities within this relative distance count as equal, so that tables that
/// are equally likely in exact arithmetic (e.g. mirror images when both sides have the same
/// number of trials) are all counted despite rounding. R's `fisher.test` uses the same 1e-7;
/// scipy uses 1e-14, which agrees on every fixture (checked against exact fractions).
pub(crate) const RELATIVE_TOLERANCE: f64 = 1e-7;

/// `ln k!` for `k = 0..=n`, precomputed once per table size (statrs' `ln_factorial`).
pub(crate) struct LnFactorials(Vec<f64>);

impl LnFactorials {
    pub(crate) fn up_to(n: u64) -> Self {
        Self((0..=n).map(ln_factorial).collect())
    }

    pub(crate) fn ln_choose(&self, n: u64, k: u64) -> f64 {
        self.0[n as usize] - self.0[k as usize] - self.0[(n - k) as usize]
    }
}

/// The null distribution of the baseline successes given both margins (hypergeometric).
pub(crate) struct Margin {
    /// The smallest possible baseline count; `pmf[i]` is the probability of `low + i`.
    pub low: u64,
    pub pmf: Vec<f64>,
}

/// Hypergeometric probabilities of `j` baseline successes among `m` successes in all,
/// with `n0` baseline and `n1` candidate trials. `lf` must reach `n0 + n1`.
///
/// The mode's probability comes from log-factorials, the others from the ratio of neighbours
/// going outwards, so that tails underflow to 0 gracefully and no `exp` is spent per table;
/// the relative error stays below 1e-12 for thousands of trials.
pub(crate) fn margin(lf: &LnFactorials, n0: u64, n1: u64, m: u64) -> Margin {
    let low = m.saturating_sub(n1);
    let high = m.min(n0);
    let mode = ((m + 1) * (n0 + 1) / (n0 + n1 + 2)).clamp(low, high);
    let ln_total = lf.ln_choose(n0 + n1, m);
    let at_mode = (lf.ln_choose(n0, mode) + lf.ln_choose(n1, m - mode) - ln_total).exp();
    let mut pmf = vec![0.0; (high - low + 1) as usize];
    let index = |j: u64| (j - low) as usize;
    pmf[index(mode)] = at_mode;
    for j in mode..high {
        let ratio = ((n0 - j) * (m - j)) as f64 / ((j + 1) * (n1 + j + 1 - m)) as f64;
        pmf[index(j + 1)] = pmf[index(j)] * ratio;
    }
    for j in (low + 1..=mode).rev() {
        let ratio = (j * (n1 + j - m)) as f64 / ((n0 - j + 1) * (m - j + 1)) as f64;
        pmf[index(j - 1)] = pmf[index(j)] * ratio;
    }
    Margin { low, pmf }
}

/// Two-sided Fisher p-value of every table in a margin: the sum of the probabilities of all
/// tables at most as probable as it (up to [`RELATIVE_TOLERANCE`]). Linear time: the
/// hypergeometric is unimodal, so taking the smaller end of what is left sorts it ascending.
pub(crate) fn margin_p_values(pmf: &[f64]) -> Vec<f64> {
    let mut order = Vec::with_capacity(pmf.len());
    let (mut left, mut right) = (0, pmf.len());
    while left < right {
        if pmf[left] <= pmf[right - 1] {
            order.push(left);
            left += 1;
        } else {
            right -= 1;
            order.push(right);
        }
    }
    let mut p = vec![0.0; pmf.len()];
    let (mut sum, mut next) = (0.0, 0);
    for &i in &order {
        let threshold = pmf[i] * (1.0 + RELATIVE_TOLERANCE);
        while next < order.len() && pmf[order[next]] <= threshold {
            sum += pmf[order[next]];
            next += 1;
        }
        p[i] = sum.min(1.0);
    }
    p
}

/// Fisher's exact test, two-sided, of equal success rates on the baseline and the candidate.
///
/// Conditions on both margins of the 2×2 table; the p-value is the probability under the
/// hypergeometric null of the tables at most as probable as the observed one (Fisher 1922;
/// Agresti 2002, *Categorical Data Analysis* §3.5.1), the definition of
/// `scipy.stats.fisher_exact(..., alternative='two-sided')`. Exact for any sample size.
///
/// `statistic` is the sample odds ratio, candidate odds over baseline odds (scipy's on the
/// table `[[cs, cn - cs], [bs, bn - bs]]`): infinite when a denominator cell is 0, NaN when
/// nobody or everybody succeeded (then `p_value` is 1).
///
/// Errors: a side with no trials, or more successes than trials.
pub fn fisher_exact(baseline: Proportion, candidate: Proportion) -> Result<TestResult, StatsError> {
    baseline.rate()?;
    candidate.rate()?;
    let (n0, n1) = (baseline.trials, candidate.trials);
    let (b, c) = (baseline.successes, candidate.successes);
    let lf = LnFactorials::up_to(n0 + n1);
    let margin = margin(&lf, n0, n1, b + c);
    let p_value = margin_p_values(&margin.pmf)[(b - margin.low) as usize];
    Ok(TestResult {
        statistic: odds_ratio(baseline, candidate),
        p_value,
    })
}

/// Candidate odds over baseline odds, with scipy's conventions for zero cells.
fn odds_ratio(baseline: Proportion, candidate: Proportion) -> f64 {
    let (bs, bf) = (baseline.successes, baseline.trials - baseline.successes);
    let (cs, cf) = (candidate.successes, candidate.trials - candidate.successes);
    if bs + cs == 0 || bf + cf == 0 {
        f64::NAN
    } else if bs > 0 && cf > 0 {
        (cs as f64 * bf as f64) / (bs as f64 * cf as f64)
    } else {
        f64::INFINITY
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_support::{assert_close, cases, num};
    use proptest::prelude::*;
    use serde_json::Value;
    use statrs::distribution::{Discrete, Hypergeometric};

    fn side(v: &Value) -> Proportion {
        Proportion::new(v[0].as_u64().unwrap(), v[1].as_u64().unwrap())
    }

    #[test]
    fn matches_scipy_and_exact_fractions() {
        for case in cases("fisher.json") {
            let (b, c) = (side(&case["baseline"]), side(&case["candidate"]));
            let res = fisher_exact(b, c).unwrap();
            let name = format!("fisher {b:?} {c:?}");
            assert_close(res.p_value, num(&case["p_value"]), &name);
            assert_close(res.p_value, num(&case["p_exact"]), &name);
            match case["odds_ratio_kind"].as_str().unwrap() {
                "finite" => assert_close(res.statistic, num(&case["odds_ratio"]), &name),
                "inf" => assert_eq!(res.statistic, f64::INFINITY, "{name}"),
                _ => assert!(res.statistic.is_nan(), "{name}"),
            }
        }
    }

    #[test]
    fn margin_agrees_with_statrs_hypergeometric() {
        let lf = LnFactorials::up_to(70);
        let m = margin(&lf, 30, 40, 33);
        let h = Hypergeometric::new(70, 30, 33).unwrap();
        for (i, p) in m.pmf.iter().enumerate() {
            let reference = h.pmf(m.low + i as u64);
            assert!((p - reference).abs() <= 1e-12 * reference, "{i}");
        }
    }

    #[test]
    fn rejects_empty_or_impossible_sides() {
        let err = fisher_exact(Proportion::new(0, 0), Proportion::new(1, 2)).unwrap_err();
        assert!(matches!(err, StatsError::InvalidProportion { .. }));
        assert!(fisher_exact(Proportion::new(1, 2), Proportion::new(3, 2)).is_err());
    }

    proptest! {
        #[test]
        fn p_in_unit_interval_and_symmetric(
            n0 in 1u64..60, n1 in 1u64..60, f0 in 0.0..=1.0f64, f1 in 0.0..=1.0f64,
        ) {
            let b = Proportion::new((f0 * n0 as f64).round() as u64, n0);
            let c = Proportion::new((f1 * n1 as f64).round() as u64, n1);
            let p = fisher_exact(b, c).unwrap().p_value;
            prop_assert!((0.0..=1.0).contains(&p));
            let swapped = fisher_exact(c, b).unwrap().p_value;
            prop_assert!((p - swapped).abs() <= 1e-12, "{p} vs {swapped}");
        }
    }
}
