//! Planning: exact power of the two-sided Fisher test, trials needed, smallest detectable drop.

use std::ops::Range;

use statrs::distribution::{Binomial, Discrete};

use super::fisher::{margin, margin_p_values, LnFactorials};
use super::normal::critical_value;
use super::types::{check_alpha, check_range, StatsError};

/// The tables (baseline successes x, candidate successes y) out of `n` trials per side that the
/// two-sided Fisher test rejects at `alpha`. It does not depend on the true rates.
struct RejectionRegion {
    n: u64,
    margins: Vec<RejectedTails>,
}

/// The rejected tables with `x + y = m`: p-values grow towards the margin's mode, so the
/// rejected x form a left and a right tail.
pub(super) struct RejectedTails {
    m: u64,
    left: Range<u64>,
    right: Range<u64>,
}

impl RejectedTails {
    /// The tables with `x + y = m` out of `n0` baseline and `n1` candidate trials that the
    /// two-sided Fisher test rejects at `alpha`; `lf` must reach `n0 + n1`. O(n0 + n1).
    pub(super) fn of_margin(lf: &LnFactorials, n0: u64, n1: u64, m: u64, alpha: f64) -> Self {
        let margin = margin(lf, n0, n1, m);
        let p = margin_p_values(&margin.pmf);
        let left = p.iter().take_while(|&&p| p <= alpha).count() as u64;
        let right = p.iter().rev().take_while(|&&p| p <= alpha).count() as u64;
        let (low, end) = (margin.low, margin.low + p.len() as u64);
        let right_start = (end - right).max(low + left);
        RejectedTails {
            m,
            left: low..low + left,
            right: right_start..end,
        }
    }

    /// Whether the table with `x` baseline successes (and `m - x` candidate ones) is rejected.
    pub(super) fn rejects(&self, x: u64) -> bool {
        self.left.contains(&x) || self.right.contains(&x)
    }

    fn cells(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.left
            .clone()
            .chain(self.right.clone())
            .map(|x| (x, self.m - x))
    }
}

impl RejectionRegion {
    /// Enumerates every table margin by margin: O(n²) work in all.
    fn new(n: u64, alpha: f64) -> Self {
        let lf = LnFactorials::up_to(2 * n);
        let margins = (0..=2 * n)
            .map(|m| RejectedTails::of_margin(&lf, n, n, m, alpha))
            .collect();
        Self { n, margins }
    }

    fn cells(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.margins.iter().flat_map(RejectedTails::cells)
    }

    /// The probability of landing in the region when the true rates are `p0` and `p1`.
    fn power(&self, p0: f64, p1: f64) -> f64 {
        let pmf = |p: f64| -> Vec<f64> {
            let b = Binomial::new(p, self.n).expect("rate checked to lie in [0, 1]");
            (0..=self.n).map(|k| b.pmf(k)).collect()
        };
        let (bx, by) = (pmf(p0), pmf(p1));
        let power: f64 = self
            .cells()
            .map(|(x, y)| bx[x as usize] * by[y as usize])
            .sum();
        power.min(1.0)
    }
}

/// Checks the planning inputs and returns the candidate rate `p0 - drop`.
fn candidate_rate(p0: f64, drop: f64, alpha: f64) -> Result<f64, StatsError> {
    check_range("p0", p0, (0.0, 1.0), false)?;
    check_alpha(alpha)?;
    let p1 = p0 - drop;
    check_range("p0 - drop", p1, (0.0, 1.0), false)?;
    Ok(p1)
}

fn check_trials(n: u64) -> Result<(), StatsError> {
    if n == 0 {
        return Err(StatsError::OutOfRange {
            name: "n",
            range: "1 or more",
            value: 0.0,
        });
    }
    Ok(())
}

/// Exact power of the two-sided Fisher exact test at level `alpha`, with `n` trials per side,
/// baseline rate `p0` and candidate rate `p1 = p0 - drop`.
///
/// Sums `Binomial(n, p0)(x) · Binomial(n, p1)(y)` over every table (x, y) whose Fisher p-value
/// ([`super::fisher_exact`]) is at most `alpha`. No normal approximation, so it shows how
/// conservative the exact test is at small n; exact power by enumeration as in Suissa &
/// Shuster 1985, *JRSS A* 148:317–327. At `drop = 0` it is the test's actual size.
///
/// Errors: `p0` or `p0 - drop` outside [0, 1], `alpha` outside (0, 1), `n = 0`.
pub fn fisher_power(p0: f64, drop: f64, n: u64, alpha: f64) -> Result<f64, StatsError> {
    let p1 = candidate_rate(p0, drop, alpha)?;
    check_trials(n)?;
    Ok(RejectionRegion::new(n, alpha).power(p0, p1))
}

/// The smallest number of trials per side, at most `max_n`, at which [`fisher_power`] reaches
/// `power`; `None` if none does.
///
/// Exact power is not monotone in n (the test's discreteness makes it saw-toothed), so a
/// larger n can fall below the target again: see [`trials_needed_stable`]. Each n costs O(n²).
///
/// Errors: as [`fisher_power`], and `power` outside (0, 1].
pub fn trials_needed(
    p0: f64,
    drop: f64,
    alpha: f64,
    power: f64,
    max_n: u64,
) -> Result<Option<u64>, StatsError> {
    let p1 = candidate_rate(p0, drop, alpha)?;
    check_target(power)?;
    Ok((1..=max_n).find(|&n| RejectionRegion::new(n, alpha).power(p0, p1) >= power))
}

/// A number of trials per side, at most `max_n`, at which [`fisher_power`] crosses `power`: the
/// power there reaches the target and one trial fewer does not. Found by bisection, so about
/// log2(`max_n`) power evaluations (O(n²) each) instead of the O(n³) scan of [`trials_needed`];
/// as exact power saw-tooths, the crossing found can lie above the first one that
/// [`trials_needed`] returns, never below it. For advice on many rows at once; `None` if the
/// power at `max_n` is below the target.
///
/// Errors: as [`trials_needed`].
pub fn trials_needed_bisect(
    p0: f64,
    drop: f64,
    alpha: f64,
    power: f64,
    max_n: u64,
) -> Result<Option<u64>, StatsError> {
    let p1 = candidate_rate(p0, drop, alpha)?;
    check_target(power)?;
    let reaches = |n: u64| RejectionRegion::new(n, alpha).power(p0, p1) >= power;
    if max_n == 0 || !reaches(max_n) {
        return Ok(None);
    }
    // Invariant: the power at `hi` reaches the target; at `lo` it does not (n = 0: no trials).
    let (mut lo, mut hi) = (0, max_n);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if reaches(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(Some(hi))
}

/// The smallest n such that [`fisher_power`] is at least `power` for every n from it up to
/// `max_n`; `None` if the power at `max_n` is below the target.
///
/// Immune to the saw-tooth of exact power within `1..=max_n`, and never below
/// [`trials_needed`]. Evaluates every n up to `max_n`: O(max_n³); in release about 0.06 s at
/// `max_n = 250`, 0.5 s at 500, 4 s at 1000.
///
/// Errors: as [`trials_needed`].
pub fn trials_needed_stable(
    p0: f64,
    drop: f64,
    alpha: f64,
    power: f64,
    max_n: u64,
) -> Result<Option<u64>, StatsError> {
    let p1 = candidate_rate(p0, drop, alpha)?;
    check_target(power)?;
    let mut stable = None;
    for n in (1..=max_n).rev() {
        if RejectionRegion::new(n, alpha).power(p0, p1) < power {
            break;
        }
        stable = Some(n);
    }
    Ok(stable)
}

/// The smallest drop from `p0`, on a grid of 0.01 (0.01, 0.02, … up to `p0`), that the
/// two-sided Fisher test at `alpha` detects with at least `power` given `n` trials per side;
/// `None` if even a drop to 0 is not detected.
///
/// A grid rather than a bisection because exact power need not be monotone in the drop: the
/// two-sided test is biased, and for p0 < 1/2 a small drop can lower the power below the
/// size. The rejection region is computed once, so this costs O(n²) per grid point.
///
/// Errors: `p0` outside [0, 1], `alpha` or `power` out of range, `n = 0`.
pub fn min_detectable_drop(
    p0: f64,
    n: u64,
    alpha: f64,
    power: f64,
) -> Result<Option<f64>, StatsError> {
    candidate_rate(p0, 0.0, alpha)?;
    check_target(power)?;
    check_trials(n)?;
    let region = RejectionRegion::new(n, alpha);
    let steps = (p0 * 100.0 + 1e-9).floor() as u32;
    Ok((1..=steps)
        .map(|k| f64::from(k) / 100.0)
        .find(|&drop| region.power(p0, (p0 - drop).max(0.0)) >= power))
}

/// Trials per side for the Mann–Whitney U test to detect a shift of the mean by `shift` with
/// `power` at two-sided level `alpha`, from the two sides' standard deviations: the normal
/// approximation `n = (z_(1-alpha/2) + z_power)^2 (sd_b^2 + sd_c^2) / shift^2` for the
/// two-sample t-test, divided by the test's asymptotic relative efficiency under normal data,
/// 3/π (Lehmann 1975, *Nonparametrics*, §2.4; Noether 1987, *JASA* 82:645–647 for the shape).
/// A planning estimate, not an exact power; `None` when the spread is zero or `shift` is not
/// positive (nothing to estimate from).
///
/// Errors: `alpha` outside (0, 1), `power` outside (0, 1), a negative or non-finite spread.
pub fn trials_needed_shift(
    sd_baseline: f64,
    sd_candidate: f64,
    shift: f64,
    alpha: f64,
    power: f64,
) -> Result<Option<u64>, StatsError> {
    check_alpha(alpha)?;
    check_range("power", power, (0.0, 1.0), true)?;
    for (name, sd) in [("sd_baseline", sd_baseline), ("sd_candidate", sd_candidate)] {
        if !(sd >= 0.0 && sd.is_finite()) {
            return Err(StatsError::OutOfRange {
                name,
                range: "[0, ∞)",
                value: sd,
            });
        }
    }
    let spread = sd_baseline.powi(2) + sd_candidate.powi(2);
    if spread == 0.0 || shift.is_nan() || shift <= 0.0 {
        return Ok(None);
    }
    let z = critical_value(alpha) + critical_value(2.0 * (1.0 - power));
    let n = z.powi(2) * spread / shift.powi(2) * std::f64::consts::PI / 3.0;
    Ok(Some(n.ceil().max(2.0) as u64))
}

fn check_target(power: f64) -> Result<(), StatsError> {
    if power > 0.0 && power <= 1.0 {
        return Ok(());
    }
    Err(StatsError::OutOfRange {
        name: "power",
        range: "(0, 1]",
        value: power,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::fisher::fisher_exact;
    use crate::stats::test_support::{assert_close, fixture, num};
    use crate::stats::types::Proportion;
    use proptest::prelude::*;

    #[test]
    fn power_matches_scipy_enumeration() {
        for case in fixture("power.json")["power"].as_array().unwrap() {
            let [p0, drop, alpha] = ["p0", "drop", "alpha"].map(|k| num(&case[k]));
            let n = case["n"].as_u64().unwrap();
            let name = format!("power p0={p0} drop={drop} n={n} alpha={alpha}");
            assert_close(
                fisher_power(p0, drop, n, alpha).unwrap(),
                num(&case["power"]),
                &name,
            );
        }
    }

    #[test]
    fn trials_needed_matches_reference() {
        for case in fixture("power.json")["trials_needed"].as_array().unwrap() {
            let [p0, drop, alpha, power] = ["p0", "drop", "alpha", "power"].map(|k| num(&case[k]));
            let max_n = case["max_n"].as_u64().unwrap();
            let first = trials_needed(p0, drop, alpha, power, max_n).unwrap();
            assert_eq!(first, case["first"].as_u64(), "{case}");
            let stable = trials_needed_stable(p0, drop, alpha, power, max_n).unwrap();
            assert_eq!(stable, case["stable_from"].as_u64(), "{case}");
            if let Some(n) = first {
                assert_close(
                    fisher_power(p0, drop, n, alpha).unwrap(),
                    num(&case["power_at_first"]),
                    &"at",
                );
                if n > 1 {
                    let before = fisher_power(p0, drop, n - 1, alpha).unwrap();
                    assert_close(before, num(&case["power_before_first"]), &"before");
                }
            }
            // Powers from scipy.stats.fisher_exact run on every table.
            for (n, power) in case["scipy_brute_force_power"].as_object().unwrap() {
                let n: u64 = n.parse().unwrap();
                let ours = fisher_power(p0, drop, n, alpha).unwrap();
                assert_close(ours, num(power), &format!("scipy brute force n={n}"));
            }
        }
    }

    #[test]
    fn power_is_not_monotone_in_n() {
        // Reaches 0.8 at 102 trials, falls below it again at 107, stays above from 108.
        assert_eq!(trials_needed(0.65, 0.2, 0.05, 0.8, 250).unwrap(), Some(102));
        assert!(fisher_power(0.65, 0.2, 107, 0.05).unwrap() < 0.8);
        assert_eq!(
            trials_needed_stable(0.65, 0.2, 0.05, 0.8, 150).unwrap(),
            Some(108)
        );
    }

    #[test]
    fn min_detectable_drop_matches_reference() {
        for case in fixture("power.json")["min_detectable_drop"]
            .as_array()
            .unwrap()
        {
            let [p0, alpha, power] = ["p0", "alpha", "power"].map(|k| num(&case[k]));
            let n = case["n"].as_u64().unwrap();
            let drop = min_detectable_drop(p0, n, alpha, power).unwrap();
            assert_eq!(drop, case["drop"].as_f64(), "{case}");
        }
    }

    /// Power by brute force over the public Fisher test, one table at a time.
    fn brute_force_power(p0: f64, p1: f64, n: u64, alpha: f64) -> f64 {
        let (b0, b1) = (Binomial::new(p0, n).unwrap(), Binomial::new(p1, n).unwrap());
        let mut power = 0.0;
        for x in 0..=n {
            for y in 0..=n {
                let test = fisher_exact(Proportion::new(x, n), Proportion::new(y, n)).unwrap();
                if test.p_value <= alpha {
                    power += b0.pmf(x) * b1.pmf(y);
                }
            }
        }
        power
    }

    #[test]
    fn agrees_with_brute_force() {
        for (p0, drop, n, alpha) in [
            (0.95, 0.1, 25, 0.05),
            (0.6, 0.35, 17, 0.1),
            (0.2, 0.2, 9, 0.05),
        ] {
            let fast = fisher_power(p0, drop, n, alpha).unwrap();
            let slow = brute_force_power(p0, p0 - drop, n, alpha);
            assert!((fast - slow).abs() < 1e-12, "{fast} vs {slow}");
        }
    }

    #[test]
    fn rejects_bad_input() {
        assert!(fisher_power(0.5, 0.6, 10, 0.05).is_err());
        assert!(fisher_power(0.5, 0.1, 0, 0.05).is_err());
        assert!(trials_needed(0.5, 0.1, 0.05, 0.0, 10).is_err());
        assert!(min_detectable_drop(1.5, 10, 0.05, 0.8).is_err());
        assert_eq!(trials_needed(0.5, 0.1, 0.05, 0.8, 0).unwrap(), None);
    }

    /// Found by proptest: for p0 < 1/2 the two-sided test is biased, so a small drop can
    /// lower the power below the test's size (rejections for an observed improvement get rarer
    /// faster than rejections for a decline get likelier).
    #[test]
    fn power_can_dip_below_the_size_for_small_drops() {
        let p0 = 0.0067305737990660044;
        let size = fisher_power(p0, 0.0, 4, 0.05).unwrap();
        let dipped = fisher_power(p0, 0.0011726814360156672, 4, 0.05).unwrap();
        assert!(dipped < size, "{dipped} vs {size}");
    }

    /// Power from the tables where the candidate did worse (y < x) and the test rejects.
    fn power_of_declines(region: &RejectionRegion, p0: f64, p1: f64) -> f64 {
        let (bx, by) = (
            Binomial::new(p0, region.n).unwrap(),
            Binomial::new(p1, region.n).unwrap(),
        );
        let cells = region.cells().filter(|&(x, y)| y < x);
        cells.map(|(x, y)| bx.pmf(x) * by.pmf(y)).sum()
    }

    #[test]
    fn shift_planner_follows_the_normal_formula() {
        // (1.959964 + 0.841621)^2 * (1 + 1) / 1 * pi / 3 = 16.44 → 17 (scipy norm.isf values).
        assert_eq!(
            trials_needed_shift(1.0, 1.0, 1.0, 0.05, 0.8).unwrap(),
            Some(17)
        );
        // Halving the shift quadruples n: 65.76 → 66.
        assert_eq!(
            trials_needed_shift(1.0, 1.0, 0.5, 0.05, 0.8).unwrap(),
            Some(66)
        );
        assert_eq!(trials_needed_shift(0.0, 0.0, 1.0, 0.05, 0.8).unwrap(), None);
        assert_eq!(trials_needed_shift(1.0, 1.0, 0.0, 0.05, 0.8).unwrap(), None);
        assert!(trials_needed_shift(-1.0, 1.0, 1.0, 0.05, 0.8).is_err());
        assert!(trials_needed_shift(1.0, 1.0, 1.0, 0.0, 0.8).is_err());
    }

    #[test]
    fn bisection_finds_a_crossing_at_or_above_the_first() {
        for (p0, drop, alpha) in [(0.95, 0.10, 0.05), (1.0, 0.10, 5.6e-4), (0.7, 0.3, 0.01)] {
            let first = trials_needed(p0, drop, alpha, 0.8, 400).unwrap().unwrap();
            let found = trials_needed_bisect(p0, drop, alpha, 0.8, 400)
                .unwrap()
                .unwrap();
            assert!(found >= first, "{p0} {drop}: {found} < {first}");
            assert!(fisher_power(p0, drop, found, alpha).unwrap() >= 0.8);
            assert!(fisher_power(p0, drop, found - 1, alpha).unwrap() < 0.8);
        }
        assert_eq!(
            trials_needed_bisect(0.95, 0.10, 0.05, 0.8, 50).unwrap(),
            None
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn power_is_a_probability_and_monotone_in_the_drop(
            p0 in 0.0..=1.0f64, a in 0.0..=1.0f64, b in 0.0..=1.0f64, n in 1u64..40,
        ) {
            let (small, large) = (p0 * a.min(b), p0 * a.max(b));
            let region = RejectionRegion::new(n, 0.05);
            let (p_small, p_large) = (p0 - small, p0 - large);
            let (ps, pl) = (region.power(p0, p_small), region.power(p0, p_large));
            prop_assert!((0.0..=1.0).contains(&ps) && (0.0..=1.0).contains(&pl));
            let ds = power_of_declines(&region, p0, p_small);
            let dl = power_of_declines(&region, p0, p_large);
            prop_assert!(ds <= dl + 1e-12, "declines, p0={p0} n={n}: {small}: {ds}, {large}: {dl}");
            if p0 >= 0.5 {
                prop_assert!(ps <= pl + 1e-12, "p0={p0} n={n}: {small}: {ps}, {large}: {pl}");
            }
        }
    }
}
