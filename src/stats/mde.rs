//! Planning: the smallest effect each comparison would flag with a given power (the minimum
//! detectable effect), for the Fisher, Mann–Whitney, CMH and van Elteren tests.
//!
//! Every function is pure and deterministic in its inputs, so callers may cache the answers.

use std::f64::consts::PI;

use statrs::distribution::{Binomial, Discrete};

use super::fisher::LnFactorials;
use super::normal::{critical_value, two_sided_p, upper_tail};
use super::power::RejectedTails;
use super::types::{check_alpha, check_range, StatsError};

/// Binomial tails whose total mass is provably below this are left out of exact power sums.
const NEGLIGIBLE_TAIL: f64 = 1e-16;

/// Differences within this of a margin count as equal to it (they do not exceed it), so that
/// rounding in `x / n` cannot decide whether an observed drop exceeds the margin.
const MARGIN_SLACK: f64 = 1e-12;

/// The largest relative increase [`van_elteren_mde`] looks for (+10000 %).
const MAX_RELATIVE_INCREASE: f64 = 100.0;

/// The standard deviation assumed for a metric observed with no spread at all: 1/√π. For a
/// normal location shift Δ it gives `P(Y > X) − ½ ≈ Δ / (2 σ √π) = Δ / 2`, which is what a
/// fraction Δ of the trials scoring one unit higher gives a constant metric. So the floor
/// reads "a fraction of the trials one unit higher", in the metric's units.
fn floor_sd() -> f64 {
    1.0 / PI.sqrt()
}

fn check_power(power: f64) -> Result<(), StatsError> {
    check_range("power", power, (0.0, 1.0), true)
}

fn check_count(name: &'static str, n: u64) -> Result<(), StatsError> {
    if n == 0 {
        return Err(StatsError::OutOfRange {
            name,
            range: "1 or more",
            value: 0.0,
        });
    }
    Ok(())
}

fn check_non_negative(name: &'static str, value: f64) -> Result<(), StatsError> {
    if value >= 0.0 && value.is_finite() {
        return Ok(());
    }
    Err(StatsError::OutOfRange {
        name,
        range: "[0, ∞)",
        value,
    })
}

/// `z_power`, the standard normal quantile at `power`.
fn z_power(power: f64) -> f64 {
    critical_value(2.0 * (1.0 - power))
}

/// `P(N(mean, sd²) > 0)`; a point mass when `sd = 0`.
fn probability_positive(mean: f64, sd: f64) -> f64 {
    if sd > 0.0 {
        upper_tail(-mean / sd)
    } else if mean > 0.0 {
        1.0
    } else {
        0.0
    }
}

/// The binomial pmf (statrs) of `n` trials at rate `p` on `first..first + pmf.len()`, the
/// tails left out having mass below [`NEGLIGIBLE_TAIL`] each.
struct BinomialWindow {
    first: u64,
    pmf: Vec<f64>,
}

impl BinomialWindow {
    /// Walks out from the mode; beyond it the ratio `r` of neighbouring probabilities falls,
    /// so the tail past `k` is at most `pmf(k) r / (1 − r)` (a geometric series).
    fn new(n: u64, p: f64) -> Self {
        if p <= 0.0 || p >= 1.0 {
            let first = if p <= 0.0 { 0 } else { n };
            return Self {
                first,
                pmf: vec![1.0],
            };
        }
        let b = Binomial::new(p, n).expect("rate checked to lie in [0, 1]");
        let odds = p / (1.0 - p);
        let negligible = |k: u64, r: f64| r < 1.0 && b.pmf(k) * r / (1.0 - r) < NEGLIGIBLE_TAIL;
        let mode = (((n + 1) as f64 * p).floor() as u64).min(n);
        let mut high = mode;
        while high < n && !negligible(high, (n - high) as f64 / (high + 1) as f64 * odds) {
            high += 1;
        }
        let mut low = mode;
        while low > 0 && !negligible(low, low as f64 / ((n - low + 1) as f64 * odds)) {
            low -= 1;
        }
        Self {
            first: low,
            pmf: (low..=high).map(|k| b.pmf(k)).collect(),
        }
    }

    fn iter(&self) -> impl Iterator<Item = (u64, f64)> + '_ {
        (self.first..).zip(self.pmf.iter().copied())
    }
}

/// The smallest drop from the baseline rate `p0` that the two-sided Fisher test flags with
/// `power`, with `n_baseline` and `n_candidate` trials: on a grid of 0.01 (0.01, 0.02, … up
/// to `p0`), the first drop d at which, with true rates `p0` and `p0 − d`, the probability
/// that Fisher's test rejects at `alpha` and the observed drop `x / n_baseline − y /
/// n_candidate` exceeds `margin` is at least `power`. `None` if even a drop to 0 is not
/// flagged.
///
/// Exact power by enumeration of the rejection region (Suissa & Shuster 1985, *JRSS A*
/// 148:317–327; see [`super::fisher_power`]), with unequal sides, over the cells whose
/// binomial probability is not negligible (tails of mass below 1e-16 are skipped), so 2500
/// trials per side cost milliseconds. Only rejections for a decline count; with equal sides
/// and `margin = 0` this is [`super::min_detectable_drop`] except where rejections for an
/// improvement carry weight (small p0 and n, where the two-sided test is biased). A grid, not a
/// bisection: exact power need not be monotone in the drop.
///
/// Errors: `p0` or `margin` outside [0, 1], `alpha` or `power` outside (0, 1), no trials.
pub fn fisher_mde(
    p0: f64,
    n_baseline: u64,
    n_candidate: u64,
    alpha: f64,
    power: f64,
    margin: f64,
) -> Result<Option<f64>, StatsError> {
    FisherPlan::new(n_baseline, n_candidate, alpha)?.mde(p0, power, margin)
}

/// [`fisher_mde`] for many baseline rates at one design (trials per side and level): the
/// rejection region, which does not depend on the rates, is kept between calls, so the rows of
/// a run that share their trial counts compute it once.
pub struct FisherPlan {
    nb: u64,
    nc: u64,
    alpha: f64,
    lf: LnFactorials,
    /// Each margin's rejected tails, once needed.
    tails: Vec<Option<RejectedTails>>,
}

impl FisherPlan {
    /// Errors: `alpha` outside (0, 1), no trials on a side.
    pub fn new(n_baseline: u64, n_candidate: u64, alpha: f64) -> Result<Self, StatsError> {
        check_alpha(alpha)?;
        check_count("n_baseline", n_baseline)?;
        check_count("n_candidate", n_candidate)?;
        let (nb, nc) = (n_baseline, n_candidate);
        let mut tails = Vec::new();
        tails.resize_with((nb + nc + 1) as usize, || None);
        Ok(Self {
            nb,
            nc,
            alpha,
            lf: LnFactorials::up_to(nb + nc),
            tails,
        })
    }

    /// [`fisher_mde`] at this design. Errors: `p0` or `margin` outside [0, 1], `power`
    /// outside (0, 1).
    pub fn mde(&mut self, p0: f64, power: f64, margin: f64) -> Result<Option<f64>, StatsError> {
        check_range("p0", p0, (0.0, 1.0), false)?;
        check_power(power)?;
        check_range("margin", margin, (0.0, 1.0), false)?;
        let (nb, nc) = (self.nb, self.nc);
        let baseline = BinomialWindow::new(nb, p0);
        let steps = (p0 * 100.0 + 1e-9).floor() as u32;
        for k in 1..=steps {
            let drop = f64::from(k) / 100.0;
            let candidate = BinomialWindow::new(nc, (p0 - drop).max(0.0));
            let mut flagged = 0.0;
            for (x, px) in baseline.iter() {
                let rate_b = x as f64 / nb as f64;
                // The observed drop falls as y grows: stop at the first that misses the margin.
                for (y, py) in candidate.iter() {
                    if rate_b - y as f64 / nc as f64 <= margin + MARGIN_SLACK {
                        break;
                    }
                    let m = x + y;
                    let (lf, alpha) = (&self.lf, self.alpha);
                    let rejected = self.tails[m as usize]
                        .get_or_insert_with(|| RejectedTails::of_margin(lf, nb, nc, m, alpha));
                    if rejected.rejects(x) {
                        flagged += px * py;
                    }
                }
            }
            if flagged >= power {
                return Ok(Some(drop));
            }
        }
        Ok(None)
    }
}

/// The smallest two-sided Fisher p-value attainable with `k` trials per side: `2 / C(2k, k)`,
/// from the tables where one side succeeds every time and the other never (Fisher 1922). A
/// planning bound: if it exceeds `alpha`, no outcome of `k` trials per side can be flagged.
/// 1 for `k ≤ 1`; underflows to 0 from k ≈ 540.
///
/// Exact integers up to k = 60; beyond, the product `2 Π_(i=1..k) i / (k + i)` of factors
/// below 1, which cannot overflow, underflows gracefully and is accurate to about k ulps.
pub fn min_fisher_p(k: u64) -> f64 {
    if k <= 1 {
        return 1.0;
    }
    if k <= 60 {
        // The partial products are C(k + i, i), integers; C(120, 60) · 120 < 2^128.
        let central = (1..=u128::from(k)).fold(1u128, |c, i| c * (u128::from(k) + i) / i);
        return 2.0 / central as f64;
    }
    let mut p = 2.0;
    for i in 1..=k {
        p *= i as f64 / (k + i) as f64;
        if p == 0.0 {
            break;
        }
    }
    p
}

/// The smallest increase of a metric's mean, in its units, that the Mann–Whitney test (as in
/// [`super::mann_whitney_u`]) flags with `power` at two-sided `alpha`, when the increase must
/// also exceed `margin`.
///
/// Normal approximation for a location shift with the test's asymptotic relative efficiency
/// under normal data, 3/π, as [`super::trials_needed_shift`] (Lehmann 1975, *Nonparametrics*
/// §2.4; Noether 1987, *JASA* 82:645–647): `se = √((sd_b²/n_b + sd_c²/n_c) π/3)`. Flagged when
/// the estimate exceeds both `z_(1−α/2) se` and the margin, so the answer is
/// `max(z_(1−α/2) se, margin) + z_power se`. When both standard deviations are 0 each is
/// taken as 1/√π, the location-shift equivalent of a fraction of the trials one unit higher
/// (so the answer reads as that fraction). `None` when no outcome can reach `alpha`: the
/// smallest two-sided p of the test's normal approximation with continuity correction, at
/// full separation without ties, `z = (n_b n_c / 2 − ½) / √(n_b n_c (n + 1) / 12)`, is above
/// it.
///
/// Errors: a negative or non-finite sd or margin, no trials, `alpha` or `power` outside (0, 1).
pub fn mann_whitney_mde(
    sd_b: f64,
    sd_c: f64,
    n_b: u64,
    n_c: u64,
    alpha: f64,
    power: f64,
    margin: f64,
) -> Result<Option<f64>, StatsError> {
    check_non_negative("sd_b", sd_b)?;
    check_non_negative("sd_c", sd_c)?;
    check_count("n_b", n_b)?;
    check_count("n_c", n_c)?;
    check_alpha(alpha)?;
    check_power(power)?;
    check_non_negative("margin", margin)?;
    let (nb, nc) = (n_b as f64, n_c as f64);
    let separated = (nb * nc / 2.0 - 0.5) / (nb * nc * (nb + nc + 1.0) / 12.0).sqrt();
    if two_sided_p(separated) > alpha {
        return Ok(None);
    }
    let (sb, sc) = if sd_b == 0.0 && sd_c == 0.0 {
        (floor_sd(), floor_sd())
    } else {
        (sd_b, sd_c)
    };
    let se = ((sb * sb / nb + sc * sc / nc) * PI / 3.0).sqrt();
    Ok(Some(
        (critical_value(alpha) * se).max(margin) + z_power(power) * se,
    ))
}

/// The asymptotic probability that the CMH comparison flags a uniform change `d` in the bad
/// direction (see [`cmh_mde`]).
fn cmh_flag_probability(
    strata: &[(f64, f64, f64)],
    higher_is_better: bool,
    d: f64,
    z: f64,
    margin: f64,
) -> f64 {
    let (mut mu, mut v0, mut v1, mut w) = (0.0, 0.0, 0.0, 0.0);
    for &(nb, nc, pb) in strata {
        let pc = if higher_is_better {
            (pb - d).max(0.0)
        } else {
            (pb + d).min(1.0)
        };
        let n = nb + nc;
        let pooled = (nb * pb + nc * pc) / n;
        mu += nb * nc * (pc - pb) / n;
        v0 += nb * nc * pooled * (1.0 - pooled) / (n - 1.0);
        v1 += (nb * nc / n).powi(2) * (pb * (1.0 - pb) / nb + pc * (1.0 - pc) / nc);
        w += nb * nc / n;
    }
    let test = probability_positive(mu.abs() - 0.5 - z * v0.sqrt(), v1.sqrt());
    let beyond_margin = probability_positive(mu.abs() / w - margin, v1.sqrt() / w);
    test.min(beyond_margin)
}

/// The smallest uniform change of the success rate, in the bad direction, that the stratified
/// comparison ([`super::cmh_test`] at two-sided `alpha`, the Mantel–Haenszel risk difference
/// beyond `margin`) flags with `power`. `strata` are (baseline trials, candidate trials,
/// baseline rate); the candidate's rate is `p_i − d` clipped to [0, 1] when higher is better,
/// `p_i + d` otherwise. On a grid of 0.001 up to the largest possible change; `None` if none
/// reaches the power.
///
/// The CMH power is the asymptotic one of Woolson, Bean & Rojas (1986, *Biometrics*
/// 42:927–932) for `D = Σ (a_i − E a_i)`: its mean `μ = Σ n_b n_c (p_c − p_b) / N`, its null
/// variance (hypergeometric, given the margins, at their expected values)
/// `V0 = Σ n_b n_c p̄ q̄ / (N − 1)` with `p̄ = (n_b p_b + n_c p_c) / N`, and its variance
/// under the alternative `V1 = Σ (n_b n_c / N)² (p_b q_b / n_b + p_c q_c / n_c)`, so
/// `P(test) ≈ Φ((|μ| − ½ − z_(1−α/2) √V0) / √V1)`, the ½ being `cmh_test`'s continuity
/// correction. The risk difference estimate is `D / W`, `W = Σ n_b n_c / N`, so approximately
/// `N(μ / W, V1 / W²)`. The probability of flagging is approximated by the smaller of the two
/// probabilities (exact when either event implies the other, an upper bound otherwise).
/// Strata with a side of 0 trials are left out. Planning for the normal branch of
/// [`super::compare_stratified_rates`]; where counts are tiny the exact branch applies instead.
///
/// Errors: no stratum with trials on both sides, a rate or `margin` outside [0, 1], `alpha`
/// or `power` outside (0, 1).
pub fn cmh_mde(
    strata: &[(u64, u64, f64)],
    higher_is_better: bool,
    alpha: f64,
    power: f64,
    margin: f64,
) -> Result<Option<f64>, StatsError> {
    check_alpha(alpha)?;
    check_power(power)?;
    check_range("margin", margin, (0.0, 1.0), false)?;
    let mut usable = Vec::with_capacity(strata.len());
    for &(nb, nc, p) in strata {
        check_range("baseline rate", p, (0.0, 1.0), false)?;
        if nb > 0 && nc > 0 {
            usable.push((nb as f64, nc as f64, p));
        }
    }
    if usable.is_empty() {
        return Err(StatsError::EmptySample("strata with both sides"));
    }
    let room = |&(_, _, p): &(f64, f64, f64)| if higher_is_better { p } else { 1.0 - p };
    let largest = usable.iter().map(room).fold(0.0, f64::max);
    let z = critical_value(alpha);
    let steps = (largest * 1000.0 - 1e-9).ceil().max(0.0) as u32;
    Ok((1..=steps)
        .map(|k| (f64::from(k) / 1000.0).min(largest))
        .find(|&d| cmh_flag_probability(&usable, higher_is_better, d, z, margin) >= power))
}

/// One stratum of [`van_elteren_mde`]: sizes, baseline mean, and the spread assumed.
struct ShiftStratum {
    nb: f64,
    nc: f64,
    mean: f64,
    sd: f64,
}

/// The asymptotic probability that van Elteren's test rejects against a relative increase `r`
/// of every mean and that the mean per-stratum delta exceeds the margin (the smaller of the
/// two, see [`van_elteren_mde`]).
fn van_elteren_flag_probability(
    strata: &[ShiftStratum],
    r: f64,
    z: f64,
    relative_margin: f64,
) -> f64 {
    let (mut mu, mut variance) = (0.0, 0.0);
    let (mut mean_of_means, mut delta_variance) = (0.0, 0.0);
    let (mut pooled, mut trials) = (0.0, 0.0);
    for s in strata {
        let n = s.nb + s.nc;
        let w = 1.0 / (n + 1.0);
        // P(Y > X) − ½ = Φ(Δ / (σ √2)) − ½ = ½ − P(Z > Δ / (σ √2)).
        let ahead = 0.5 - upper_tail(r * s.mean / (s.sd * std::f64::consts::SQRT_2));
        mu += w * s.nb * s.nc * ahead;
        variance += w * w * s.nb * s.nc * (n + 1.0) / 12.0;
        mean_of_means += s.mean;
        delta_variance += s.sd * s.sd * (1.0 / s.nb + 1.0 / s.nc);
        pooled += s.nb * s.mean;
        trials += s.nb;
    }
    let k = strata.len() as f64;
    let test = upper_tail(z - mu.abs() / variance.sqrt());
    // The estimate: the mean over the strata of the per-stratum deltas, against the margin
    // relative to the pooled baseline mean.
    let (expected, se) = (r * mean_of_means / k, delta_variance.sqrt() / k);
    let beyond = upper_tail((relative_margin * pooled / trials - expected) / se);
    test.min(beyond)
}

/// The smallest uniform relative increase r of a metric's mean (candidate mean `m_i (1 + r)`
/// in every stratum) that van Elteren's test ([`super::van_elteren`]) flags with `power` at
/// two-sided `alpha`, with the suite's estimate (the mean over the strata of the per-stratum
/// mean deltas) above `relative_margin` times the pooled baseline mean. `strata` are (baseline trials,
/// candidate trials, baseline mean, pooled sd). `None` if nothing up to r = 100 (+10000 %)
/// reaches the power.
///
/// Normal location-shift model per stratum: shift `Δ_i = r m_i`, so `P(Y > X) = Φ(Δ_i / (σ_i
/// √2))` with `σ_i` the pooled sd, or 1/√π when it is 0 (the location-shift equivalent of a
/// fraction of the trials one unit higher, see [`mann_whitney_mde`]); then, with `w_i = 1 /
/// (n_i + 1)`, `μ = Σ w_i n_b n_c (P(Y > X) − ½)` and the null variance
/// `V = Σ w_i² n_b n_c (n_i + 1) / 12`, power ≈ `Φ(|μ| / √V − z_(1−α/2))` (Noether 1987,
/// *JASA* 82:645–647, for the form; van Elteren 1960 for the statistic). The estimate is
/// approximately normal with mean `r Σ m_i / K` and variance `Σ σ_i² (1/n_b + 1/n_c) / K²`;
/// as for [`cmh_mde`] the probability of flagging is approximated by the smaller of the
/// test's power and the chance that the estimate is beyond the margin. Found by bisection to 1e-4 relative (the answer reaches the power), which assumes the
/// means share a sign (counts, durations); strata with `m_i = 0` cannot move relatively and
/// are left out, as are strata with a side of 0 trials.
///
/// Errors: no strata, a non-finite mean, a negative or non-finite sd or margin, `alpha` or
/// `power` outside (0, 1).
pub fn van_elteren_mde(
    strata: &[(u64, u64, f64, f64)],
    alpha: f64,
    power: f64,
    relative_margin: f64,
) -> Result<Option<f64>, StatsError> {
    check_alpha(alpha)?;
    check_power(power)?;
    check_non_negative("relative_margin", relative_margin)?;
    if strata.is_empty() {
        return Err(StatsError::EmptySample("strata"));
    }
    let mut usable = Vec::with_capacity(strata.len());
    for &(nb, nc, mean, sd) in strata {
        if !mean.is_finite() {
            return Err(StatsError::NonFinite("mean"));
        }
        check_non_negative("sd", sd)?;
        if nb > 0 && nc > 0 && mean != 0.0 {
            let sd = if sd > 0.0 { sd } else { floor_sd() };
            let (nb, nc) = (nb as f64, nc as f64);
            usable.push(ShiftStratum { nb, nc, mean, sd });
        }
    }
    let z = critical_value(alpha);
    let reaches = |r: f64| van_elteren_flag_probability(&usable, r, z, relative_margin) >= power;
    if usable.is_empty() || !reaches(MAX_RELATIVE_INCREASE) {
        return Ok(None);
    }
    if reaches(0.0) {
        return Ok(Some(0.0)); // a target power below the chance of a false flag
    }
    // Invariant: the power at `high` reaches the target; at `low` it does not.
    let (mut low, mut high) = (0.0, MAX_RELATIVE_INCREASE);
    while high - low > 1e-4 * high {
        let mid = 0.5 * (low + high);
        if reaches(mid) {
            high = mid;
        } else {
            low = mid;
        }
    }
    Ok(Some(high))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::cmh::cmh_test;
    use crate::stats::power::min_detectable_drop;
    use crate::stats::risk_difference::mh_risk_difference;
    use crate::stats::test_support::{fixture, num};
    use crate::stats::types::{Proportion, Table2x2};
    use crate::stats::van_elteren::van_elteren;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn fisher_mde_is_min_detectable_drop_for_equal_sides() {
        for case in fixture("power.json")["min_detectable_drop"]
            .as_array()
            .unwrap()
        {
            let [p0, alpha, power] = ["p0", "alpha", "power"].map(|k| num(&case[k]));
            let n = case["n"].as_u64().unwrap();
            let ours = fisher_mde(p0, n, n, alpha, power, 0.0).unwrap();
            assert_eq!(ours, case["drop"].as_f64(), "{case}");
            assert_eq!(ours, min_detectable_drop(p0, n, alpha, power).unwrap());
        }
        for (p0, n) in [(0.9, 13), (0.75, 40), (1.0, 8), (0.6, 25)] {
            let ours = fisher_mde(p0, n, n, 0.05, 0.8, 0.0).unwrap();
            assert_eq!(
                ours,
                min_detectable_drop(p0, n, 0.05, 0.8).unwrap(),
                "{p0} {n}"
            );
        }
    }

    /// Power by brute force: every table, the public Fisher test, the margin rule.
    fn brute_force_flag_rate(p0: f64, p1: f64, nb: u64, nc: u64, margin: f64) -> f64 {
        let (b0, b1) = (
            Binomial::new(p0, nb).unwrap(),
            Binomial::new(p1, nc).unwrap(),
        );
        let mut rate = 0.0;
        for x in 0..=nb {
            for y in 0..=nc {
                let drop = x as f64 / nb as f64 - y as f64 / nc as f64;
                let (b, c) = (Proportion::new(x, nb), Proportion::new(y, nc));
                let p = crate::stats::fisher_exact(b, c).unwrap().p_value;
                if p <= 0.05 && drop > margin + MARGIN_SLACK {
                    rate += b0.pmf(x) * b1.pmf(y);
                }
            }
        }
        rate
    }

    #[test]
    fn fisher_mde_agrees_with_brute_force_for_unequal_sides() {
        for (p0, nb, nc, margin) in [(0.9, 30, 12, 0.0), (0.7, 9, 25, 0.1), (0.95, 20, 20, 0.05)] {
            let drop = fisher_mde(p0, nb, nc, 0.05, 0.8, margin).unwrap().unwrap();
            let at = brute_force_flag_rate(p0, p0 - drop, nb, nc, margin);
            let before = brute_force_flag_rate(p0, p0 - drop + 0.01, nb, nc, margin);
            assert!(at >= 0.8, "{p0} {nb} {nc}: {drop} gives {at}");
            assert!(
                before < 0.8 || drop <= margin + 0.01,
                "{p0} {nb} {nc}: {before}"
            );
        }
        // A margin at the baseline rate can never be exceeded.
        assert_eq!(fisher_mde(0.5, 10, 10, 0.05, 0.8, 0.5).unwrap(), None);
    }

    #[test]
    fn fisher_mde_handles_large_sides() {
        // Thousands of trials per side (the speed is measured by `scripts/bench`).
        let drop = fisher_mde(0.95, 2500, 2400, 0.05, 0.8, 0.0)
            .unwrap()
            .unwrap();
        assert!((0.01..=0.03).contains(&drop), "{drop}");
        assert!(fisher_mde(0.5, 2500, 2500, 0.05, 0.8, 0.02)
            .unwrap()
            .is_some());
    }

    #[test]
    fn min_fisher_p_is_two_over_the_central_binomial() {
        assert_eq!(min_fisher_p(0), 1.0);
        assert_eq!(min_fisher_p(1), 1.0);
        assert_eq!(min_fisher_p(2), 2.0 / 6.0);
        assert_eq!(min_fisher_p(5), 2.0 / 252.0);
        // C(62, 31), C(100, 50) and C(200, 100) from Python's math.comb.
        let rel = |a: f64, b: f64| ((a - b) / b).abs();
        assert!(rel(min_fisher_p(31), 2.0 / 465428353255261088.0) < 1e-15);
        let c100 = 100891344545564193334812497256.0;
        assert!(rel(min_fisher_p(50), 2.0 / c100) < 1e-15);
        let c200 = 9.054851465610328e58;
        assert!(rel(min_fisher_p(100), 2.0 / c200) < 1e-13);
        // Continuous across the switch from integers to the product.
        // C(2k + 2, k + 1) / C(2k, k) = 2 (2k + 1) / (k + 1).
        assert!(rel(min_fisher_p(61), min_fisher_p(60) * 61.0 / 242.0) < 1e-13);
        // Agrees with a brute-force Fisher test on the most extreme table.
        let fisher = crate::stats::fisher_exact(Proportion::new(7, 7), Proportion::new(0, 7));
        assert!(rel(min_fisher_p(7), fisher.unwrap().p_value) < 1e-12);
        assert!(min_fisher_p(600) == 0.0 && min_fisher_p(400) > 0.0);
    }

    #[test]
    fn mann_whitney_mde_follows_the_formula() {
        // se = √((1/20 + 1/20) π/3) = 0.32360; (1.959964 + 0.841621) se = 0.90661.
        let se = (0.1 * PI / 3.0f64).sqrt();
        let mde = mann_whitney_mde(1.0, 1.0, 20, 20, 0.05, 0.8, 0.0)
            .unwrap()
            .unwrap();
        assert!((mde - 2.801585218 * se).abs() < 1e-6, "{mde}");
        // A margin above z se replaces it.
        let with = mann_whitney_mde(1.0, 1.0, 20, 20, 0.05, 0.8, 1.0)
            .unwrap()
            .unwrap();
        assert!((with - (1.0 + 0.841621234 * se)).abs() < 1e-6, "{with}");
        // Both spreads 0: σ = 1/√π each.
        let floor = mann_whitney_mde(0.0, 0.0, 20, 20, 0.05, 0.8, 0.0)
            .unwrap()
            .unwrap();
        assert!(
            (floor - 2.801585218 * (0.1 / 3.0f64).sqrt()).abs() < 1e-6,
            "{floor}"
        );
        // 2 against 2 trials: full separation gives p = 0.19 at best.
        assert_eq!(
            mann_whitney_mde(1.0, 1.0, 2, 2, 0.05, 0.8, 0.0).unwrap(),
            None
        );
        assert!(mann_whitney_mde(1.0, 1.0, 4, 4, 0.05, 0.8, 0.0)
            .unwrap()
            .is_some());
        assert!(mann_whitney_mde(-1.0, 1.0, 4, 4, 0.05, 0.8, 0.0).is_err());
        assert!(mann_whitney_mde(1.0, 1.0, 0, 4, 0.05, 0.8, 0.0).is_err());
        assert!(mann_whitney_mde(1.0, 1.0, 4, 4, 0.05, 1.0, 0.0).is_err());
    }

    fn binomial(rng: &mut ChaCha8Rng, n: u64, p: f64) -> u64 {
        (0..n).filter(|_| rng.random::<f64>() < p).count() as u64
    }

    /// The simulated rate at which the CMH comparison flags the change `d`.
    fn simulated_cmh_flag_rate(
        strata: &[(u64, u64, f64)],
        higher_is_better: bool,
        d: f64,
        margin: f64,
        draws: usize,
    ) -> f64 {
        let mut rng = ChaCha8Rng::seed_from_u64(20261115);
        let mut flagged = 0;
        for _ in 0..draws {
            let tables: Vec<Table2x2> = strata
                .iter()
                .map(|&(nb, nc, p)| {
                    let pc = if higher_is_better {
                        (p - d).max(0.0)
                    } else {
                        (p + d).min(1.0)
                    };
                    let b = Proportion::new(binomial(&mut rng, nb, p), nb);
                    let c = Proportion::new(binomial(&mut rng, nc, pc), nc);
                    Table2x2::new(b, c)
                })
                .collect();
            let rd = mh_risk_difference(&tables).unwrap().estimate;
            let bad = if higher_is_better { -rd } else { rd };
            if cmh_test(&tables).unwrap().p_value <= 0.05 && bad > margin {
                flagged += 1;
            }
        }
        flagged as f64 / draws as f64
    }

    #[test]
    fn cmh_mde_reaches_its_power_in_simulation() {
        let at_mde = |strata: &[(u64, u64, f64)], higher_is_better: bool, margin: f64| {
            let d = cmh_mde(strata, higher_is_better, 0.05, 0.8, margin)
                .unwrap()
                .unwrap();
            let rate = simulated_cmh_flag_rate(strata, higher_is_better, d, margin, 3000);
            assert!((rate - 0.8).abs() <= 0.08, "d = {d}: simulated {rate}");
        };
        // Near-ceiling rates, as in agent evaluations; mixed rates with a margin; error rates.
        at_mde(&[(10, 10, 0.95); 30], true, 0.0);
        let mixed = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.6, 0.75, 0.85, 0.99];
        let strata: Vec<_> = mixed.iter().map(|&p| (20, 20, p)).collect();
        at_mde(&strata, true, 0.05);
        let strata: Vec<_> = (0..12)
            .map(|i| (15, 25, 0.05 + 0.01 * f64::from(i)))
            .collect();
        at_mde(&strata, false, 0.0);
    }

    #[test]
    fn cmh_mde_edges() {
        // Nothing can get worse than 0 % success.
        assert!(cmh_mde(&[(10, 10, 0.0)], true, 0.05, 0.8, 0.0)
            .unwrap()
            .is_none());
        // One trial per side is never enough.
        assert!(cmh_mde(&[(1, 1, 0.9)], true, 0.05, 0.8, 0.0)
            .unwrap()
            .is_none());
        assert!(cmh_mde(&[(0, 10, 0.5)], true, 0.05, 0.8, 0.0).is_err());
        assert!(cmh_mde(&[(10, 10, 1.5)], true, 0.05, 0.8, 0.0).is_err());
        // More strata detect smaller changes; a margin raises the answer.
        let few = cmh_mde(&[(20, 20, 0.9); 5], true, 0.05, 0.8, 0.0)
            .unwrap()
            .unwrap();
        let many = cmh_mde(&[(20, 20, 0.9); 50], true, 0.05, 0.8, 0.0)
            .unwrap()
            .unwrap();
        let margin = cmh_mde(&[(20, 20, 0.9); 50], true, 0.05, 0.8, 0.1)
            .unwrap()
            .unwrap();
        assert!(
            many < few && margin > 0.1 && margin > many,
            "{few} {many} {margin}"
        );
    }

    /// A standard normal draw (Box–Muller).
    fn normal(rng: &mut ChaCha8Rng) -> f64 {
        let (u, v): (f64, f64) = (1.0 - rng.random::<f64>(), rng.random());
        (-2.0 * u.ln()).sqrt() * (2.0 * PI * v).cos()
    }

    #[test]
    fn van_elteren_mde_reaches_its_power_in_simulation() {
        let means = [5.0, 8.0, 10.0, 12.0, 6.0, 9.0, 11.0, 7.0];
        let sds = [2.0, 3.0, 2.5, 4.0, 1.5, 3.0, 2.0, 2.5];
        // The third design's margin binds: the mean delta must also exceed 20 % of the pooled
        // baseline mean.
        type Design = (Vec<(u64, u64, f64, f64)>, f64);
        let designs: [Design; 3] = [
            ((0..8).map(|i| (15, 15, means[i], sds[i])).collect(), 0.0),
            (
                (0..20).map(|i| (8, 12, means[i % 8], sds[i % 8])).collect(),
                0.0,
            ),
            ((0..8).map(|i| (15, 15, means[i], sds[i])).collect(), 0.2),
        ];
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for (strata, margin) in designs {
            let r = van_elteren_mde(&strata, 0.05, 0.8, margin)
                .unwrap()
                .unwrap();
            assert!(r > margin, "{r} {margin}");
            let pooled: f64 = strata.iter().map(|s| s.0 as f64 * s.2).sum::<f64>()
                / strata.iter().map(|s| s.0 as f64).sum::<f64>();
            let draws = 2000;
            let mut flagged = 0;
            for _ in 0..draws {
                let samples: Vec<(Vec<f64>, Vec<f64>)> = strata
                    .iter()
                    .map(|&(nb, nc, m, s)| {
                        let b = (0..nb).map(|_| m + s * normal(&mut rng)).collect();
                        let c = (0..nc)
                            .map(|_| m * (1.0 + r) + s * normal(&mut rng))
                            .collect();
                        (b, c)
                    })
                    .collect();
                let views: Vec<(&[f64], &[f64])> = samples
                    .iter()
                    .map(|(b, c)| (b.as_slice(), c.as_slice()))
                    .collect();
                let res = van_elteren(&views).unwrap();
                let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
                let delta =
                    views.iter().map(|(b, c)| mean(c) - mean(b)).sum::<f64>() / views.len() as f64;
                if res.p_value <= 0.05 && res.statistic > 0.0 && delta > margin * pooled {
                    flagged += 1;
                }
            }
            let rate = f64::from(flagged) / f64::from(draws);
            assert!((rate - 0.8).abs() <= 0.08, "r = {r}: simulated {rate}");
        }
    }

    #[test]
    fn van_elteren_mde_edges() {
        let strata = [(20, 20, 10.0, 3.0); 5];
        let r = van_elteren_mde(&strata, 0.05, 0.8, 0.0).unwrap().unwrap();
        assert!(r > 0.0 && r < 1.0, "{r}");
        // A margin far above what the test needs: the estimate must clear it too.
        let wide = van_elteren_mde(&strata, 0.05, 0.8, 2.0).unwrap().unwrap();
        assert!(wide > 2.0 && wide < 2.1, "{wide}");
        // Means of 0 cannot move relatively; one trial per side never reaches 0.05.
        assert_eq!(
            van_elteren_mde(&[(20, 20, 0.0, 3.0)], 0.05, 0.8, 0.0).unwrap(),
            None
        );
        assert_eq!(
            van_elteren_mde(&[(1, 1, 5.0, 1.0)], 0.05, 0.8, 0.0).unwrap(),
            None
        );
        // No spread: the 1/√π floor.
        assert!(van_elteren_mde(&[(20, 20, 3.0, 0.0)], 0.05, 0.8, 0.0)
            .unwrap()
            .is_some());
        assert!(van_elteren_mde(&[], 0.05, 0.8, 0.0).is_err());
        assert!(van_elteren_mde(&[(5, 5, f64::NAN, 1.0)], 0.05, 0.8, 0.0).is_err());
    }
}
