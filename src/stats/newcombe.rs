//! Score intervals for a proportion (Wilson) and for a difference of two (Newcombe's hybrid).

use super::normal::critical_value;
use super::types::{check_alpha, Interval, Proportion, StatsError};

/// Wilson score interval for one proportion, at confidence `1 - alpha`.
///
/// Inverts the score test of a binomial proportion (Wilson 1927); well behaved at 0 and n
/// successes, unlike the Wald interval. Clipped to [0, 1] like statsmodels'
/// `proportion_confint(count, nobs, alpha, method='wilson')`, which it matches.
///
/// Errors: no trials, more successes than trials, `alpha` outside (0, 1).
pub fn wilson_interval(side: Proportion, alpha: f64) -> Result<Interval, StatsError> {
    let rate = side.rate()?;
    check_alpha(alpha)?;
    Ok(wilson_bounds(rate, side.trials as f64, alpha))
}

/// [`wilson_interval`] of a `rate` observed on `n > 0` trials, `n` possibly fractional (an
/// effective sample size); the caller checks `rate` in [0, 1] and `alpha`.
pub(crate) fn wilson_bounds(rate: f64, n: f64, alpha: f64) -> Interval {
    let crit = critical_value(alpha);
    let crit2 = crit * crit;
    let denom = 1.0 + crit2 / n;
    let center = (rate + crit2 / (2.0 * n)) / denom;
    let dist = crit * (rate * (1.0 - rate) / n + crit2 / (4.0 * n * n)).sqrt() / denom;
    Interval {
        low: (center - dist).clamp(0.0, 1.0),
        high: (center + dist).clamp(0.0, 1.0),
    }
}

/// Newcombe's hybrid score interval for `candidate rate - baseline rate`, at `1 - alpha`.
///
/// Combines the two Wilson intervals by the square-and-add rule (Newcombe 1998, *Stat Med*
/// 17:873–890, method 10). Assumes independent binomial samples; the interval always contains
/// the observed difference and stays within [-1, 1]. Matches statsmodels'
/// `confint_proportions_2indep(cs, cn, bs, bn, method='newcomb', compare='diff')`, whose
/// difference is first minus second: the candidate goes first there.
///
/// Errors: a side with no trials, more successes than trials, `alpha` outside (0, 1).
pub fn newcombe_interval(
    baseline: Proportion,
    candidate: Proportion,
    alpha: f64,
) -> Result<Interval, StatsError> {
    let (pb, pc) = (baseline.rate()?, candidate.rate()?);
    check_alpha(alpha)?;
    let (nb, nc) = (baseline.trials as f64, candidate.trials as f64);
    Ok(newcombe_bounds((pb, nb), (pc, nc), alpha))
}

/// [`newcombe_interval`] from each side's `(rate, n)`, `n` possibly fractional (an effective
/// sample size); the caller checks the rates and `alpha`.
pub(crate) fn newcombe_bounds((pb, nb): (f64, f64), (pc, nc): (f64, f64), alpha: f64) -> Interval {
    let wb = wilson_bounds(pb, nb, alpha);
    let wc = wilson_bounds(pc, nc, alpha);
    let delta = pc - pb;
    let below = ((pc - wc.low).powi(2) + (wb.high - pb).powi(2)).sqrt();
    let above = ((pb - wb.low).powi(2) + (wc.high - pc).powi(2)).sqrt();
    Interval {
        low: delta - below,
        high: delta + above,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_support::{assert_close, cases, num};
    use proptest::prelude::*;
    use serde_json::Value;

    fn side(v: &Value) -> Proportion {
        Proportion::new(v[0].as_u64().unwrap(), v[1].as_u64().unwrap())
    }

    #[test]
    fn matches_statsmodels() {
        for case in cases("newcombe.json") {
            let (b, c) = (side(&case["baseline"]), side(&case["candidate"]));
            let alpha = num(&case["alpha"]);
            let name = format!("newcombe {b:?} {c:?} alpha={alpha}");
            let ci = newcombe_interval(b, c, alpha).unwrap();
            assert_close(ci.low, num(&case["low"]), &name);
            assert_close(ci.high, num(&case["high"]), &name);
            for (p, key) in [(b, "wilson_baseline"), (c, "wilson_candidate")] {
                let w = wilson_interval(p, alpha).unwrap();
                assert_close(w.low, num(&case[key][0]), &name);
                assert_close(w.high, num(&case[key][1]), &name);
            }
        }
    }

    #[test]
    fn sign_convention_is_candidate_minus_baseline() {
        let ci = newcombe_interval(Proportion::new(19, 20), Proportion::new(10, 20), 0.05).unwrap();
        assert!(
            ci.high < 0.0,
            "a candidate that fails more gives a negative delta: {ci:?}"
        );
    }

    #[test]
    fn rejects_bad_input() {
        assert!(newcombe_interval(Proportion::new(0, 0), Proportion::new(1, 1), 0.05).is_err());
        assert!(wilson_interval(Proportion::new(1, 2), 0.0).is_err());
        assert!(wilson_interval(Proportion::new(1, 2), f64::NAN).is_err());
    }

    proptest! {
        #[test]
        fn contains_delta_within_bounds(
            n0 in 1u64..200, n1 in 1u64..200, f0 in 0.0..=1.0f64, f1 in 0.0..=1.0f64,
            alpha in 0.001..0.5f64,
        ) {
            let b = Proportion::new((f0 * n0 as f64).round() as u64, n0);
            let c = Proportion::new((f1 * n1 as f64).round() as u64, n1);
            let ci = newcombe_interval(b, c, alpha).unwrap();
            let delta = c.rate().unwrap() - b.rate().unwrap();
            prop_assert!(ci.contains(delta), "{ci:?} misses {delta}");
            prop_assert!(ci.low >= -1.0 - 1e-12 && ci.high <= 1.0 + 1e-12, "{ci:?}");
        }
    }
}
