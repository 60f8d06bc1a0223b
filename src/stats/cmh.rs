//! The Cochran–Mantel–Haenszel test over strata of 2×2 tables, its exact conditional version,
//! and the Mantel–Fleiss criterion for choosing between them.

use super::fisher::{margin, margin_p_values, LnFactorials};
use super::normal::two_sided_p;
use super::types::{check_tables, StatsError, Table2x2, TestResult};

/// The margins of one informative stratum: both sides have trials and the outcome varies.
/// `a` counts candidate successes (the first row, as in [`super::fisher_exact`]'s odds ratio).
struct Stratum {
    /// Baseline and candidate trials.
    n0: u64,
    n1: u64,
    /// Successes in all, and the candidate's share of them.
    m1: u64,
    a: u64,
}

impl Stratum {
    fn n(&self) -> u64 {
        self.n0 + self.n1
    }

    fn m0(&self) -> u64 {
        self.n() - self.m1
    }

    /// `E a` under conditional independence, given the margins.
    fn expected(&self) -> f64 {
        self.n1 as f64 * self.m1 as f64 / self.n() as f64
    }

    /// `Var a` under conditional independence, given the margins (hypergeometric).
    fn variance(&self) -> f64 {
        let n = self.n() as f64;
        let product = self.n1 as f64 * self.m1 as f64 * self.n0 as f64 * self.m0() as f64;
        product / (n * n * (n - 1.0))
    }
}

/// The strata whose null variance is positive; the others (a side without trials, or everyone
/// succeeding or everyone failing) have `a` fixed by their margins and carry no information.
fn informative(tables: &[Table2x2]) -> impl Iterator<Item = Stratum> + '_ {
    tables
        .iter()
        .filter(|t| t.has_both_sides())
        .filter_map(|t| {
            let (b, c) = (t.baseline, t.candidate);
            let m1 = b.successes + c.successes;
            let stratum = Stratum {
                n0: b.trials,
                n1: c.trials,
                m1,
                a: c.successes,
            };
            (m1 > 0 && m1 < stratum.n()).then_some(stratum)
        })
}

/// The Cochran–Mantel–Haenszel test, two-sided with continuity correction, of conditional
/// independence of side and outcome across strata (a common odds ratio of 1).
///
/// Statistic `(|Σ (a_i − E a_i)| − ½)² / Σ Var a_i`, χ² with 1 degree of freedom, where `a_i`
/// is the candidate's successes in stratum i and the moments are hypergeometric given the
/// stratum's margins (Cochran 1954, *Biometrics* 10:417–451; Mantel & Haenszel 1959, *JNCI*
/// 22:719–748; Agresti 2002, *Categorical Data Analysis* §6.3). Assumes independent trials
/// within and between strata; an approximation, adequate when [`mantel_fleiss`] is at least 5,
/// otherwise see [`cmh_exact_test`]. Matches statsmodels'
/// `StratifiedTable(tables).test_null_odds(correction=True)` exactly, including its
/// `(½ − |Σ (a_i − E a_i)|)²` when the sum is below ½ (R's `mantelhaen.test` drops the
/// correction there instead). Strata without information have `Var a_i = 0` and add nothing;
/// if none has any, the statistic is 0 and the p-value 1 (statsmodels divides by 0 there).
/// The p-value does not depend on which side is the first row.
///
/// Errors: a side with more successes than trials.
pub fn cmh_test(tables: &[Table2x2]) -> Result<TestResult, StatsError> {
    check_tables(tables)?;
    let (mut deviation, mut variance) = (0.0, 0.0);
    for stratum in informative(tables) {
        deviation += stratum.a as f64 - stratum.expected();
        variance += stratum.variance();
    }
    if variance <= 0.0 {
        return Ok(TestResult {
            statistic: 0.0,
            p_value: 1.0,
        });
    }
    let statistic = (deviation.abs() - 0.5).powi(2) / variance;
    Ok(TestResult {
        statistic,
        // P(χ²₁ ≥ s) = P(|Z| ≥ √s).
        p_value: two_sided_p(statistic.sqrt()),
    })
}

/// The exact conditional test of conditional independence (a common odds ratio of 1) across
/// strata, two-sided.
///
/// Given every stratum's margins, the candidate's total successes `S = Σ a_i` has the
/// convolution of the strata's hypergeometric distributions as its null distribution; the
/// p-value is the probability of the values of S at most as probable as the observed one, up
/// to a relative tolerance of 1e-7 (Mehta, Patel & Gray 1985, *JASA* 80:969–973; Agresti 2002
/// §6.7; the definition of R's `mantelhaen.test(exact = TRUE)`). Exact at any sample size;
/// with one stratum it is [`super::fisher_exact`]. `statistic` is the observed S.
///
/// The convolution costs O(support²), the support of S being at most the total trials; the
/// analysis uses it only where counts are small ([`mantel_fleiss`] below 5).
///
/// Errors: a side with more successes than trials.
pub fn cmh_exact_test(tables: &[Table2x2]) -> Result<TestResult, StatsError> {
    check_tables(tables)?;
    let statistic = tables.iter().map(|t| t.candidate.successes).sum::<u64>() as f64;
    let largest = informative(tables).map(|s| s.n()).max().unwrap_or(0);
    let lf = LnFactorials::up_to(largest);
    // The distribution of the baseline's total successes, `dist[i]` for `low + i`: the same
    // p-value as for S (S = Σ m1_i − that total), and with one stratum the very pmf that
    // `fisher_exact` uses.
    let (mut dist, mut low, mut observed) = (vec![1.0], 0, 0);
    for stratum in informative(tables) {
        let m = margin(&lf, stratum.n0, stratum.n1, stratum.m1);
        let (start, pmf) = trim_zeros(&m.pmf);
        dist = convolve(&dist, pmf);
        low += m.low + start as u64;
        observed += stratum.m1 - stratum.a;
    }
    // The observed total can only fall outside if its probability underflowed to 0.
    let p_value = match observed.checked_sub(low).map(|i| i as usize) {
        Some(i) if i < dist.len() => margin_p_values(&dist)[i],
        _ => 0.0,
    };
    Ok(TestResult { statistic, p_value })
}

/// `pmf` without the zeros (underflowed far tails) at either end, and how many led.
fn trim_zeros(pmf: &[f64]) -> (usize, &[f64]) {
    let Some(start) = pmf.iter().position(|&p| p > 0.0) else {
        return (0, pmf);
    };
    let end = pmf.iter().rposition(|&p| p > 0.0).unwrap_or(start) + 1;
    (start, &pmf[start..end])
}

/// The distribution of the sum of two independent counts from their pmfs. A convolution of
/// log-concave pmfs (the hypergeometric is one) is log-concave, hence unimodal, which
/// `margin_p_values` relies on.
fn convolve(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; a.len() + b.len() - 1];
    for (i, &x) in a.iter().enumerate() {
        for (o, &y) in out[i..].iter_mut().zip(b) {
            *o += x * y;
        }
    }
    out
}

/// The Mantel & Fleiss (1980, *Am J Epidemiol* 112:129–134) criterion for the χ²
/// approximation of [`cmh_test`]: `min(Σ E a_i − Σ max(0, n1_i − m0_i), Σ min(n1_i, m1_i) −
/// Σ E a_i)` over the informative strata, i.e. how far the expected total lies from either end
/// of its range (`n1` candidate trials, `m1` successes and `m0` failures in the stratum). The
/// approximation is considered adequate when it is at least 5. 0 when no stratum is
/// informative. Meaningless for tables with more successes than trials (the tests reject them).
pub fn mantel_fleiss(tables: &[Table2x2]) -> f64 {
    let (mut expected, mut low, mut high) = (0.0, 0.0, 0.0);
    for stratum in informative(tables) {
        expected += stratum.expected();
        low += stratum.n1.saturating_sub(stratum.m0()) as f64;
        high += stratum.n1.min(stratum.m1) as f64;
    }
    (expected - low).min(high - expected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::fisher::fisher_exact;
    use crate::stats::test_support::{assert_close, cases, num, table, tables};
    use proptest::prelude::*;

    #[test]
    fn matches_statsmodels_and_the_python_exact_test() {
        let all = cases("cmh.json");
        assert!(all.len() > 50);
        for (i, case) in all.iter().enumerate() {
            let t = tables(&case["strata"]);
            let name = format!("cmh case {i}");
            let res = cmh_test(&t).unwrap();
            if case.get("statsmodels_undefined").is_some() {
                assert_eq!((res.statistic, res.p_value), (0.0, 1.0), "{name}");
            } else {
                assert_close(res.statistic, num(&case["statistic"]), &name);
                assert_close(res.p_value, num(&case["p_value"]), &name);
            }
            assert_close(mantel_fleiss(&t), num(&case["mantel_fleiss"]), &name);
            let exact = cmh_exact_test(&t).unwrap();
            assert_close(exact.p_value, num(&case["exact_p_value"]), &name);
            assert_eq!(exact.statistic, num(&case["exact_statistic"]), "{name}");
        }
    }

    #[test]
    fn uninformative_strata_give_p_one() {
        let t = [table(5, 5, 7, 7), table(0, 3, 0, 4), table(0, 0, 2, 4)];
        for res in [cmh_test(&t).unwrap(), cmh_exact_test(&t).unwrap()] {
            assert_eq!(res.p_value, 1.0);
        }
        assert_eq!(cmh_test(&[]).unwrap().p_value, 1.0);
        assert_eq!(cmh_exact_test(&[]).unwrap().p_value, 1.0);
        assert_eq!(mantel_fleiss(&t), 0.0);
    }

    #[test]
    fn continuity_correction_below_one_half_follows_statsmodels() {
        // Σ (a − E) = 0: statsmodels' statistic is (0 − ½)² / V, not 0.
        let t = [table(5, 10, 5, 10)];
        let v = 10.0 * 10.0 * 10.0 * 10.0 / (400.0 * 19.0);
        assert_close(cmh_test(&t).unwrap().statistic, 0.25 / v, &"half");
    }

    #[test]
    fn rejects_impossible_tables() {
        let err = cmh_test(&[table(3, 2, 0, 1)]).unwrap_err();
        assert!(matches!(err, StatsError::InvalidProportion { .. }));
        assert!(cmh_exact_test(&[table(0, 1, 3, 2)]).is_err());
    }

    #[test]
    fn exact_test_handles_many_large_strata() {
        // 200 strata of 500 trials per side at 99 %: the support of S stays small.
        let t: Vec<_> = (0..200)
            .map(|i| table(495, 500, 494 + i % 3, 500))
            .collect();
        let res = cmh_exact_test(&t).unwrap();
        assert!((0.0..=1.0).contains(&res.p_value), "{res:?}");
    }

    fn strata() -> impl Strategy<Value = Vec<Table2x2>> {
        let stratum =
            (1u64..25, 1u64..25, 0.0..=1.0f64, 0.0..=1.0f64).prop_map(|(bn, cn, f, g)| {
                let (bs, cs) = ((f * bn as f64).round(), (g * cn as f64).round());
                table(bs as u64, bn, cs as u64, cn)
            });
        prop::collection::vec(stratum, 1..8)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn one_stratum_exact_is_fisher(t in strata()) {
            let (b, c) = (t[0].baseline, t[0].candidate);
            let exact = cmh_exact_test(&t[..1]).unwrap().p_value;
            prop_assert_eq!(exact, fisher_exact(b, c).unwrap().p_value);
        }

        #[test]
        fn order_and_orientation_do_not_matter(t in strata()) {
            let mut reversed = t.clone();
            reversed.reverse();
            let swapped: Vec<_> =
                t.iter().map(|s| Table2x2::new(s.candidate, s.baseline)).collect();
            for test in [cmh_test, cmh_exact_test] {
                let p = test(&t).unwrap().p_value;
                prop_assert!((0.0..=1.0).contains(&p));
                for other in [&reversed, &swapped] {
                    let q = test(other).unwrap().p_value;
                    prop_assert!((p - q).abs() <= 1e-9 * p.max(1e-300) + 1e-15, "{p} vs {q}");
                }
            }
        }
    }
}
