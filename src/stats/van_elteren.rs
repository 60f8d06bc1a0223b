//! van Elteren's stratified Wilcoxon–Mann–Whitney test: a count metric compared within tasks.

use super::normal::two_sided_p;
use super::types::{StatsError, TestResult};

/// One stratum's rank statistics: the candidate's rank sum and its null moments.
struct RankSum {
    /// W − E W: the candidate's mid-rank sum minus its null expectation.
    deviation: f64,
    /// Var W under the null, with the tie correction.
    variance: f64,
    /// n_b + n_c.
    n: f64,
}

/// Ranks the stratum in `pooled` (a buffer reused across strata: sorting it is the only work
/// per value) and returns its rank statistics; `None` if a side is empty or every value ties
/// (no variance). Mid-ranks as in `rank::average_ranks` (scipy's `rankdata`), `==` deciding
/// ties so that −0.0 and 0.0 tie.
fn rank_sum(baseline: &[f64], candidate: &[f64], pooled: &mut Vec<(f64, bool)>) -> Option<RankSum> {
    if baseline.is_empty() || candidate.is_empty() {
        return None;
    }
    pooled.clear();
    pooled.extend(baseline.iter().map(|&v| (v, false)));
    pooled.extend(candidate.iter().map(|&v| (v, true)));
    pooled.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let (mut w, mut tie_term, mut groups, mut start) = (0.0, 0.0, 0, 0);
    while start < pooled.len() {
        let value = pooled[start].0;
        let mut end = start + 1;
        let mut in_candidate = usize::from(pooled[start].1);
        while end < pooled.len() && pooled[end].0 == value {
            in_candidate += usize::from(pooled[end].1);
            end += 1;
        }
        // Ranks start + 1 ..= end share their mean.
        w += in_candidate as f64 * (start + 1 + end) as f64 / 2.0;
        let t = (end - start) as f64;
        tie_term += t * t * t - t;
        groups += 1;
        start = end;
    }
    if groups == 1 {
        return None; // every value ties: W is fixed
    }
    let (nb, nc) = (baseline.len() as f64, candidate.len() as f64);
    let n = nb + nc;
    Some(RankSum {
        deviation: w - nc * (n + 1.0) / 2.0,
        variance: nb * nc * (n + 1.0) / 12.0 - nb * nc * tie_term / (12.0 * n * (n - 1.0)),
        n,
    })
}

/// van Elteren's test, two-sided, of whether a metric tends to be higher or lower on the
/// candidate than on the baseline within strata (tasks); each pair is (baseline, candidate).
///
/// Per stratum i with `n_i = n_b,i + n_c,i`: `W_i` = the candidate's sum of mid-ranks within
/// the stratum, `E_i = n_c,i (n_i + 1) / 2`, the tie-corrected null variance
/// `V_i = n_b,i n_c,i (n_i + 1) / 12 − n_b,i n_c,i Σ(t³ − t) / (12 n_i (n_i − 1))`, and the
/// weight `w_i = 1 / (n_i + 1)`, locally most powerful against a common shift (van Elteren
/// 1960, *Bull Int Stat Inst* 37:351–361; Lehmann 1975, *Nonparametrics* ch. 3). Then
/// `Z = Σ w_i (W_i − E_i) / √(Σ w_i² V_i)`, standard normal under the null; no continuity
/// correction. Assumes independent observations; strata are not pooled, so a metric that
/// differs between tasks does not blur the comparison. With one stratum it is the
/// Mann–Whitney z without continuity correction.
///
/// `statistic` is Z, positive when the candidate tends higher. Strata with an empty side or
/// a single value repeated (V_i = 0) add nothing; if none is left, Z = 0 and p = 1.
/// O(n log n) per stratum, one buffer for all strata.
///
/// Errors: a value that is not finite.
pub fn van_elteren(strata: &[(&[f64], &[f64])]) -> Result<TestResult, StatsError> {
    let mut pooled = Vec::new();
    let (mut numerator, mut variance) = (0.0, 0.0);
    for &(baseline, candidate) in strata {
        for (name, sample) in [("baseline", baseline), ("candidate", candidate)] {
            if sample.iter().any(|v| !v.is_finite()) {
                return Err(StatsError::NonFinite(name));
            }
        }
        let Some(stratum) = rank_sum(baseline, candidate, &mut pooled) else {
            continue;
        };
        let w = 1.0 / (stratum.n + 1.0);
        numerator += w * stratum.deviation;
        variance += w * w * stratum.variance;
    }
    if variance <= 0.0 {
        return Ok(TestResult {
            statistic: 0.0,
            p_value: 1.0,
        });
    }
    let z = numerator / variance.sqrt();
    Ok(TestResult {
        statistic: z,
        p_value: two_sided_p(z),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::mann_whitney::mann_whitney_u;
    use crate::stats::rank::average_ranks;
    use crate::stats::test_support::{assert_close, cases, num, nums};
    use proptest::prelude::*;

    fn run(strata: &[(Vec<f64>, Vec<f64>)]) -> TestResult {
        let views: Vec<(&[f64], &[f64])> = strata
            .iter()
            .map(|(b, c)| (b.as_slice(), c.as_slice()))
            .collect();
        van_elteren(&views).unwrap()
    }

    #[test]
    fn matches_the_scipy_reference() {
        let all = cases("van_elteren.json");
        assert!(all.len() > 30);
        for (i, case) in all.iter().enumerate() {
            let strata: Vec<(Vec<f64>, Vec<f64>)> = case["strata"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| (nums(&s[0]), nums(&s[1])))
                .collect();
            let res = run(&strata);
            let name = format!("van Elteren case {i}");
            assert_close(res.statistic, num(&case["statistic"]), &name);
            assert_close(res.p_value, num(&case["p_value"]), &name);
        }
    }

    #[test]
    fn degenerate_strata_add_nothing() {
        let same = run(&[(vec![3.0, 3.0], vec![3.0]), (vec![], vec![1.0, 2.0])]);
        assert_eq!((same.statistic, same.p_value), (0.0, 1.0));
        assert_eq!(van_elteren(&[]).unwrap().p_value, 1.0);
        let informative = (vec![1.0, 2.0, 2.0], vec![2.0, 5.0]);
        let alone = run(std::slice::from_ref(&informative));
        let with = run(&[
            informative,
            (vec![4.0; 3], vec![4.0; 2]),
            (vec![7.0], vec![]),
        ]);
        assert_eq!(alone, with);
    }

    #[test]
    fn rejects_non_finite_values() {
        let err = van_elteren(&[(&[1.0], &[f64::NAN])]).unwrap_err();
        assert_eq!(err, StatsError::NonFinite("candidate"));
        let err = van_elteren(&[(&[f64::INFINITY], &[])]).unwrap_err();
        assert_eq!(err, StatsError::NonFinite("baseline"));
    }

    #[test]
    fn many_large_strata_add_up() {
        // 200 strata × 2 × 2500 values (the speed is measured by `scripts/bench`).
        let values: Vec<f64> = (0..2500).map(|i| f64::from((i * 7919) % 13)).collect();
        let shifted: Vec<f64> = values
            .iter()
            .map(|v| v + f64::from(u8::from(*v > 9.0)))
            .collect();
        let strata: Vec<(&[f64], &[f64])> = (0..200)
            .map(|_| (values.as_slice(), shifted.as_slice()))
            .collect();
        let res = van_elteren(&strata).unwrap();
        assert!(res.statistic > 0.0 && res.p_value < 1e-6, "{res:?}");
        // Identical strata: Z grows with the square root of their number.
        let one = van_elteren(&strata[..1]).unwrap();
        assert!(
            (res.statistic / one.statistic - 200f64.sqrt()).abs() < 1e-9,
            "{res:?}"
        );
    }

    fn sample() -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec((0u8..8).prop_map(f64::from), 0..25)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn one_stratum_is_mann_whitney_without_continuity(
            x in prop::collection::vec((0u8..8).prop_map(f64::from), 1..30),
            y in prop::collection::vec((0u8..8).prop_map(f64::from), 1..30),
        ) {
            let res = run(&[(x.clone(), y.clone())]);
            let (nx, ny) = (x.len() as f64, y.len() as f64);
            let n = nx + ny;
            let pooled: Vec<f64> = x.iter().chain(&y).copied().collect();
            let tie_term = average_ranks(&pooled).tie_term;
            let sd = (nx * ny / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)))).sqrt();
            // mann_whitney_u's statistic is U of x (the baseline); the candidate's is the rest.
            let u_candidate = nx * ny - mann_whitney_u(&x, &y).unwrap().statistic;
            let z = if sd > 1e-9 { (u_candidate - nx * ny / 2.0) / sd } else { 0.0 };
            let tolerance = 1e-9 * z.abs().max(1.0);
            prop_assert!((res.statistic - z).abs() <= tolerance, "{} vs {z}", res.statistic);
        }

        #[test]
        fn swapping_sides_flips_z_and_order_does_not_matter(
            strata in prop::collection::vec((sample(), sample()), 1..10),
        ) {
            let res = run(&strata);
            prop_assert!((0.0..=1.0).contains(&res.p_value));
            let swapped: Vec<_> = strata.iter().map(|(b, c)| (c.clone(), b.clone())).collect();
            let flipped = run(&swapped);
            let tolerance = 1e-9 * res.statistic.abs().max(1.0);
            prop_assert!((res.statistic + flipped.statistic).abs() <= tolerance);
            let mut reversed = strata.clone();
            reversed.reverse();
            let again = run(&reversed);
            prop_assert!((res.statistic - again.statistic).abs() <= tolerance);
        }
    }
}
