//! The Mantel–Haenszel risk difference over strata (tasks), its intervals, and the stratified
//! comparison of success rates that picks the asymptotic or the exact analysis.

use serde::Serialize;

use super::cmh::{cmh_exact_test, cmh_test, mantel_fleiss};
use super::compare::Comparison;
use super::newcombe::newcombe_bounds;
use super::normal::critical_value;
use super::types::{check_alpha, check_tables, Interval, StatsError, Table2x2};

/// A common risk difference (candidate rate − baseline rate) and its estimated variance.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RiskDifference {
    pub estimate: f64,
    pub variance: f64,
}

/// The stratified comparison of success rates, and whether it took the exact branch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StratifiedRates {
    pub comparison: Comparison,
    /// True when counts were too small for the normal approximation ([`mantel_fleiss`] < 5):
    /// the test is [`cmh_exact_test`] and the interval [`stratified_newcombe_interval`].
    pub exact: bool,
}

/// One stratum with both sides, as reals: group 1 is the candidate (`a` successes of `n1`),
/// group 0 the baseline (`c` of `n0`), `n = n0 + n1`.
struct Counts {
    a: f64,
    n1: f64,
    c: f64,
    n0: f64,
    n: f64,
}

impl Counts {
    /// The Mantel–Haenszel weight `n1 n0 / n`.
    fn weight(&self) -> f64 {
        self.n1 * self.n0 / self.n
    }
}

/// The strata with trials on both sides (the others say nothing about a difference); checks
/// every table and that at least one stratum remains.
fn with_both_sides(tables: &[Table2x2]) -> Result<Vec<Counts>, StatsError> {
    check_tables(tables)?;
    let counts: Vec<Counts> = tables
        .iter()
        .filter(|t| t.has_both_sides())
        .map(|t| {
            let (n0, n1) = (t.baseline.trials as f64, t.candidate.trials as f64);
            Counts {
                a: t.candidate.successes as f64,
                n1,
                c: t.baseline.successes as f64,
                n0,
                n: n0 + n1,
            }
        })
        .collect();
    if counts.is_empty() {
        return Err(StatsError::EmptySample("strata with both sides"));
    }
    Ok(counts)
}

/// The Mantel–Haenszel estimate of a common risk difference, candidate − baseline, with the
/// variance of Sato (1989).
///
/// `RD = Σ (a_i n0_i − c_i n1_i) / N_i ÷ W`, `W = Σ n1_i n0_i / N_i` (group 1 = the candidate
/// with `a_i` successes of `n1_i`, group 0 = the baseline with `c_i` of `n0_i`); Greenland &
/// Robins 1985, *Biometrics* 41:55–68. Variance `(RD · P + Q) / W²` with
/// `P = Σ (n1_i² c_i − n0_i² a_i + n1_i n0_i (n0_i − n1_i) / 2) / N_i²` and
/// `Q = Σ (a_i (n0_i − c_i) + c_i (n1_i − a_i)) / (2 N_i)` (Sato 1989, *Biometrics*
/// 45:1323–1324), consistent both for many small strata and for few large ones; the formula of
/// R's `metafor::rma.mh(measure = "RD")` and RevMan. Strata with a side of 0 trials are left
/// out; strata where everyone succeeded (or failed) count, with a difference of 0.
///
/// Errors: no stratum with trials on both sides, a side with more successes than trials.
pub fn mh_risk_difference(tables: &[Table2x2]) -> Result<RiskDifference, StatsError> {
    let counts = with_both_sides(tables)?;
    let (mut numerator, mut w, mut p, mut q) = (0.0, 0.0, 0.0, 0.0);
    for Counts { a, n1, c, n0, n } in &counts {
        let (a, n1, c, n0, n) = (*a, *n1, *c, *n0, *n);
        numerator += (a * n0 - c * n1) / n;
        w += n1 * n0 / n;
        p += (n1 * n1 * c - n0 * n0 * a + n1 * n0 * (n0 - n1) / 2.0) / (n * n);
        q += (a * (n0 - c) + c * (n1 - a)) / (2.0 * n);
    }
    let estimate = numerator / w;
    Ok(RiskDifference {
        estimate,
        variance: (estimate * p + q) / (w * w),
    })
}

/// An interval for the common risk difference, candidate − baseline, at `1 - alpha`, for counts
/// too small for the normal approximation.
///
/// Newcombe's hybrid score interval (Newcombe 1998, *Stat Med* 17:873–890, method 10; see
/// [`super::newcombe_interval`]) applied to each side's Mantel–Haenszel-weighted rate
/// `p̂_j = Σ w_i p̂_ij / Σ w_i`, `w_i = n1_i n0_i / N_i`, whose difference is the MH estimate;
/// each side is treated as a binomial proportion on Kish's effective sample size
/// `(Σ w_i)² / Σ (w_i² / n_ij)` (Kish 1965, *Survey Sampling*; Korn & Graubard 1998,
/// *Survey Methodology* 24:193–201, for Wilson intervals of weighted proportions). With the
/// same trials in every stratum and side it is Newcombe's interval on the pooled counts. The
/// interval contains the estimate and stays within [−1, 1]. Strata with a side of 0 trials are
/// left out.
///
/// Errors: as [`mh_risk_difference`], and `alpha` outside (0, 1).
pub fn stratified_newcombe_interval(
    tables: &[Table2x2],
    alpha: f64,
) -> Result<Interval, StatsError> {
    check_alpha(alpha)?;
    let counts = with_both_sides(tables)?;
    let weighted = |successes: fn(&Counts) -> (f64, f64)| {
        let (mut w_sum, mut rate, mut w2_over_n) = (0.0, 0.0, 0.0);
        for stratum in &counts {
            let (x, n) = successes(stratum);
            let w = stratum.weight();
            w_sum += w;
            rate += w * x / n;
            w2_over_n += w * w / n;
        }
        (rate / w_sum, w_sum * w_sum / w2_over_n)
    };
    let baseline = weighted(|s| (s.c, s.n0));
    let candidate = weighted(|s| (s.a, s.n1));
    Ok(newcombe_bounds(baseline, candidate, alpha))
}

/// The stratified comparison of success rates over tasks: delta = the Mantel–Haenszel risk
/// difference ([`mh_risk_difference`]), candidate − baseline.
///
/// When the Mantel–Fleiss criterion ([`mantel_fleiss`]) is at least 5 the χ² approximation is
/// adequate: the test is [`cmh_test`] and the interval `RD ± z_(1−α/2) √Var` with Sato's
/// variance. Otherwise (few failures or few successes, the usual case for agent evaluations)
/// the test is [`cmh_exact_test`] and the interval [`stratified_newcombe_interval`], and
/// `exact` is true.
///
/// Errors: as [`stratified_newcombe_interval`].
pub fn compare_stratified_rates(
    tables: &[Table2x2],
    alpha: f64,
) -> Result<StratifiedRates, StatsError> {
    check_alpha(alpha)?;
    let rd = mh_risk_difference(tables)?;
    let exact = mantel_fleiss(tables) < 5.0;
    let (interval, test) = if exact {
        (
            stratified_newcombe_interval(tables, alpha)?,
            cmh_exact_test(tables)?,
        )
    } else {
        // Sato's variance is non-negative; the clamp only guards against rounding.
        let half = critical_value(alpha) * rd.variance.max(0.0).sqrt();
        let interval = Interval {
            low: rd.estimate - half,
            high: rd.estimate + half,
        };
        (interval, cmh_test(tables)?)
    };
    Ok(StratifiedRates {
        comparison: Comparison {
            delta: rd.estimate,
            interval,
            test,
        },
        exact,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::newcombe::newcombe_interval;
    use crate::stats::test_support::{assert_close, cases, num, table, tables};
    use crate::stats::types::Proportion;
    use proptest::prelude::*;

    #[test]
    fn matches_the_published_formulas() {
        let all = cases("risk_difference.json");
        assert!(all.len() > 50);
        for (i, case) in all.iter().enumerate() {
            let t = tables(&case["strata"]);
            let name = format!("risk difference case {i}");
            let rd = mh_risk_difference(&t).unwrap();
            assert_close(rd.estimate, num(&case["estimate"]), &name);
            assert_close(rd.variance, num(&case["variance"]), &name);
            for (alpha, reference) in case["alpha"].as_object().unwrap() {
                let alpha: f64 = alpha.parse().unwrap();
                let ci = stratified_newcombe_interval(&t, alpha).unwrap();
                assert_close(ci.low, num(&reference["newcombe"][0]), &name);
                assert_close(ci.high, num(&reference["newcombe"][1]), &name);
                let cmp = compare_stratified_rates(&t, alpha).unwrap();
                assert_eq!(cmp.exact, case["exact"].as_bool().unwrap(), "{name}");
                assert_close(
                    cmp.comparison.interval.low,
                    num(&reference["chosen"][0]),
                    &name,
                );
                assert_close(
                    cmp.comparison.interval.high,
                    num(&reference["chosen"][1]),
                    &name,
                );
                let test = if cmp.exact {
                    cmh_exact_test(&t)
                } else {
                    cmh_test(&t)
                };
                assert_eq!(cmp.comparison.test, test.unwrap(), "{name}");
                assert_eq!(cmp.comparison.delta, rd.estimate, "{name}");
            }
        }
    }

    #[test]
    fn equal_trials_give_newcombe_on_pooled_counts() {
        // Against the statsmodels values of newcombe.json, split into strata of equal size.
        let mut checked = 0;
        for case in cases("newcombe.json") {
            let [bs, bn] = [0, 1].map(|i| case["baseline"][i].as_u64().unwrap());
            let [cs, cn] = [0, 1].map(|i| case["candidate"][i].as_u64().unwrap());
            let Some(k) = [5, 4, 2].into_iter().find(|k| bn == cn && bn % k == 0) else {
                continue;
            };
            // Spread the successes unevenly over k strata of bn / k trials each.
            let size = bn / k;
            let split = |s: u64| -> Vec<u64> {
                let mut left = s;
                (0..k)
                    .map(|_| {
                        let here = left.min(size);
                        left -= here;
                        here
                    })
                    .collect()
            };
            let (b, c) = (split(bs), split(cs));
            let t: Vec<_> = (0..k as usize)
                .map(|i| table(b[i], size, c[i], size))
                .collect();
            let alpha = num(&case["alpha"]);
            let ci = stratified_newcombe_interval(&t, alpha).unwrap();
            let name = format!("pooled {bs}/{bn} vs {cs}/{cn} in {k} strata");
            assert_close(ci.low, num(&case["low"]), &name);
            assert_close(ci.high, num(&case["high"]), &name);
            let pooled = newcombe_interval(Proportion::new(bs, bn), Proportion::new(cs, cn), alpha);
            assert_close(ci.low, pooled.unwrap().low, &name);
            checked += 1;
        }
        assert!(checked >= 10, "{checked}");
    }

    #[test]
    fn rejects_strata_without_both_sides() {
        let err = mh_risk_difference(&[table(0, 0, 3, 4)]).unwrap_err();
        assert!(matches!(err, StatsError::EmptySample(_)));
        assert!(compare_stratified_rates(&[], 0.05).is_err());
        assert!(stratified_newcombe_interval(&[table(1, 2, 1, 2)], 1.0).is_err());
        assert!(mh_risk_difference(&[table(3, 2, 1, 2)]).is_err());
    }

    #[test]
    fn rare_failures_take_the_exact_branch() {
        let t: Vec<_> = (0..10).map(|i| table(10, 10, 10 - (i % 2), 10)).collect();
        assert_eq!(mantel_fleiss(&t), 2.5);
        let cmp = compare_stratified_rates(&t, 0.05).unwrap();
        assert!(cmp.exact);
        assert_close(cmp.comparison.delta, -0.05, &"delta");
        assert!(cmp.comparison.interval.contains(-0.05) && cmp.comparison.interval.high < 0.0);
    }

    fn strata() -> impl Strategy<Value = Vec<Table2x2>> {
        let stratum =
            (1u64..40, 1u64..40, 0.0..=1.0f64, 0.0..=1.0f64).prop_map(|(bn, cn, f, g)| {
                let (bs, cs) = ((f * bn as f64).round(), (g * cn as f64).round());
                table(bs as u64, bn, cs as u64, cn)
            });
        prop::collection::vec(stratum, 1..12)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn swapping_sides_flips_the_sign(t in strata(), alpha in 0.01..0.3f64) {
            let swapped: Vec<_> =
                t.iter().map(|s| Table2x2::new(s.candidate, s.baseline)).collect();
            let rd = mh_risk_difference(&t).unwrap();
            let back = mh_risk_difference(&swapped).unwrap();
            prop_assert!((rd.estimate + back.estimate).abs() <= 1e-12);
            let scale = rd.variance.abs().max(1e-3);
            prop_assert!((rd.variance - back.variance).abs() <= 1e-12 * scale);
            prop_assert!(rd.variance >= -1e-15, "{rd:?}");
            let (ci, flipped) = (
                stratified_newcombe_interval(&t, alpha).unwrap(),
                stratified_newcombe_interval(&swapped, alpha).unwrap(),
            );
            prop_assert!((ci.low + flipped.high).abs() <= 1e-12);
            prop_assert!((ci.high + flipped.low).abs() <= 1e-12);
            prop_assert!(ci.contains(rd.estimate) || (ci.low - rd.estimate).abs() < 1e-12);
            prop_assert!(ci.low >= -1.0 - 1e-12 && ci.high <= 1.0 + 1e-12);
        }

        #[test]
        fn permuting_strata_changes_nothing(t in strata(), alpha in 0.01..0.3f64) {
            let mut reversed = t.clone();
            reversed.reverse();
            let (a, b) = (
                compare_stratified_rates(&t, alpha).unwrap(),
                compare_stratified_rates(&reversed, alpha).unwrap(),
            );
            prop_assert_eq!(a.exact, b.exact);
            let (a, b) = (a.comparison, b.comparison);
            for (x, y) in [
                (a.delta, b.delta), (a.interval.low, b.interval.low),
                (a.interval.high, b.interval.high), (a.test.p_value, b.test.p_value),
            ] {
                prop_assert!((x - y).abs() <= 1e-9 * x.abs().max(1e-3), "{x} vs {y}");
            }
        }
    }
}
