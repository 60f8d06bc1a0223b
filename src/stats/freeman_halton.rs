//! The Fisher–Freeman–Halton exact test of a 2 × c table (two sides × c categories, e.g. the first
//! tool each side's episodes called): whether the categories are distributed alike on both
//! sides, two-sided by "at most as probable" as R's `fisher.test`; past [`MAX_TABLES`] tables, a
//! seeded Monte Carlo estimate with its standard error.

use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::fisher::{LnFactorials, RELATIVE_TOLERANCE};

/// The most tables enumerated exactly; a larger table space is sampled instead.
pub const MAX_TABLES: u64 = 2_000_000;

/// Monte Carlo resamples when the table space is too large to enumerate.
pub const MONTE_CARLO_RESAMPLES: u32 = 100_000;

/// A Fisher–Freeman–Halton p-value: exact, or estimated (then with its standard error).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FreemanHalton {
    pub p: f64,
    /// `None` when exact; the Monte Carlo standard error √(p(1 − p)/R) otherwise.
    pub monte_carlo_se: Option<f64>,
}

/// The test of a 2 × c table given as one `(baseline, candidate)` count per category. Categories
/// with no count on either side are left out; a table with fewer than two categories, or with an
/// empty side, has p = 1 (nothing can differ). `seed` is used only when the table space is
/// sampled.
pub fn freeman_halton(columns: &[(u64, u64)], seed: u64) -> FreemanHalton {
    tested(columns, seed, MAX_TABLES, MONTE_CARLO_RESAMPLES)
}

/// [`freeman_halton`] with its limits: enumerate up to `max_tables`, else draw `resamples`.
fn tested(columns: &[(u64, u64)], seed: u64, max_tables: u64, resamples: u32) -> FreemanHalton {
    let columns: Vec<(u64, u64)> = (columns.iter().copied())
        .filter(|(b, c)| b + c > 0)
        .collect();
    let n0: u64 = columns.iter().map(|c| c.0).sum();
    let n1: u64 = columns.iter().map(|c| c.1).sum();
    if columns.len() < 2 || n0 == 0 || n1 == 0 {
        return FreemanHalton {
            p: 1.0,
            monte_carlo_se: None,
        };
    }
    let totals: Vec<u64> = columns.iter().map(|(b, c)| b + c).collect();
    let lf = LnFactorials::up_to(n0 + n1);
    let observed: Vec<u64> = columns.iter().map(|c| c.0).collect();
    let ln_observed = ln_probability(&lf, &totals, &observed, n0);
    let table = Table {
        lf: &lf,
        totals: &totals,
        n0,
        threshold: ln_observed + RELATIVE_TOLERANCE.ln_1p(),
    };
    match tables_at_most(&totals, n0, max_tables) {
        Some(_) => FreemanHalton {
            p: exact_p(&table),
            monte_carlo_se: None,
        },
        None => monte_carlo_p(&table, seed, resamples),
    }
}

/// A table's margins, and the log-probability up to which a table counts as at most as
/// probable as the observed one ([`RELATIVE_TOLERANCE`] above it).
struct Table<'a> {
    lf: &'a LnFactorials,
    totals: &'a [u64],
    n0: u64,
    threshold: f64,
}

/// `ln P(first row = a)`: Π C(total_j, a_j) / C(N, n0), the multivariate hypergeometric.
fn ln_probability(lf: &LnFactorials, totals: &[u64], row: &[u64], n0: u64) -> f64 {
    let n: u64 = totals.iter().sum();
    let parts: f64 = (totals.iter().zip(row))
        .map(|(t, a)| lf.ln_choose(*t, *a))
        .sum();
    parts - lf.ln_choose(n, n0)
}

/// How many first rows have these column totals and row sum `n0`, when at most `cap`.
fn tables_at_most(totals: &[u64], n0: u64, cap: u64) -> Option<u64> {
    // ways[s]: first rows of the columns so far summing to s (saturating at cap + 1).
    let mut ways = vec![0u64; n0 as usize + 1];
    ways[0] = 1;
    for &t in totals {
        let mut next = vec![0u64; n0 as usize + 1];
        for (s, w) in ways.iter().enumerate().filter(|(_, w)| **w > 0) {
            for a in 0..=t.min(n0 - s as u64) {
                let at = s + a as usize;
                next[at] = next[at].saturating_add(*w).min(cap + 1);
            }
        }
        ways = next;
    }
    (ways[n0 as usize] <= cap).then_some(ways[n0 as usize])
}

/// The sum of the probabilities of every table at most as probable as the observed one (up to
/// [`RELATIVE_TOLERANCE`]), by enumerating the first rows column by column.
fn exact_p(table: &Table<'_>) -> f64 {
    let Table {
        lf,
        totals,
        n0,
        threshold,
    } = *table;
    let base = -lf.ln_choose(totals.iter().sum(), n0);
    // What the columns after each one can still hold, to prune rows that cannot reach n0.
    let mut room = vec![0u64; totals.len() + 1];
    for j in (0..totals.len()).rev() {
        room[j] = room[j + 1] + totals[j];
    }
    let mut sum = 0.0;
    let mut stack: Vec<(usize, u64, f64)> = vec![(0, n0, base)];
    while let Some((j, left, ln_p)) = stack.pop() {
        if j == totals.len() {
            if left == 0 && ln_p <= threshold {
                sum += ln_p.exp();
            }
            continue;
        }
        let low = left.saturating_sub(room[j + 1]);
        for a in low..=totals[j].min(left) {
            stack.push((j + 1, left - a, ln_p + lf.ln_choose(totals[j], a)));
        }
    }
    sum.min(1.0)
}

/// The share of random relabellings (n0 of the N trials drawn as the baseline) whose table is at
/// most as probable as the observed one, seeded; with its standard error.
fn monte_carlo_p(table: &Table<'_>, seed: u64, resamples: u32) -> FreemanHalton {
    let Table {
        lf,
        totals,
        n0,
        threshold,
    } = *table;
    let mut labels: Vec<usize> = (totals.iter().enumerate())
        .flat_map(|(j, t)| std::iter::repeat_n(j, *t as usize))
        .collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut row = vec![0u64; totals.len()];
    let mut hits = 0u32;
    for _ in 0..resamples {
        labels.shuffle(&mut rng);
        row.iter_mut().for_each(|a| *a = 0);
        for &j in &labels[..n0 as usize] {
            row[j] += 1;
        }
        if ln_probability(lf, totals, &row, n0) <= threshold {
            hits += 1;
        }
    }
    // Counting the observed table among the resamples keeps the estimate above 0.
    let r = f64::from(resamples) + 1.0;
    let p = (f64::from(hits) + 1.0) / r;
    FreemanHalton {
        p,
        monte_carlo_se: Some((p * (1.0 - p) / r).sqrt()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_support::{assert_close, cases, num};

    /// The cases of `freeman_halton.json`, written by `make_freeman_halton_fixtures.R` with R's
    /// `fisher.test` (its network algorithm: an implementation independent of this one).
    #[test]
    fn p_values_equal_r_fisher_test_on_fixed_tables() {
        for case in cases("freeman_halton.json") {
            let baseline: Vec<u64> = (case["baseline"].as_array().unwrap().iter())
                .map(|v| v.as_u64().unwrap())
                .collect();
            let candidate: Vec<u64> = (case["candidate"].as_array().unwrap().iter())
                .map(|v| v.as_u64().unwrap())
                .collect();
            let columns: Vec<(u64, u64)> = baseline.into_iter().zip(candidate).collect();
            let got = freeman_halton(&columns, 1);
            assert_eq!(got.monte_carlo_se, None);
            assert_close(got.p, num(&case["p"]), &case["name"]);
        }
    }

    #[test]
    fn a_2_by_2_table_is_fisher_s_exact_test() {
        // Tool A first on 7 of 10 baseline trials, on 2 of 10 candidate trials.
        let columns = [(7, 2), (3, 8)];
        let fisher = crate::stats::fisher_exact(
            crate::stats::Proportion::new(7, 10),
            crate::stats::Proportion::new(2, 10),
        )
        .unwrap();
        assert_close(
            freeman_halton(&columns, 1).p,
            fisher.p_value,
            &"7/10 vs 2/10",
        );
    }

    #[test]
    fn nothing_to_compare_is_p_1_and_a_huge_table_is_sampled_with_its_error() {
        assert_eq!(freeman_halton(&[(10, 10)], 1).p, 1.0);
        assert_eq!(freeman_halton(&[(5, 0), (5, 0)], 1).p, 1.0);
        assert_eq!(freeman_halton(&[(0, 0), (3, 3), (0, 0)], 1).p, 1.0);
        assert_eq!(tables_at_most(&[3, 3], 3, MAX_TABLES), Some(4));
        let wide: Vec<(u64, u64)> = (0..12).map(|j| (20 + j, 30 - j)).collect();
        let totals: Vec<u64> = wide.iter().map(|(b, c)| b + c).collect();
        assert_eq!(tables_at_most(&totals, 282, MAX_TABLES), None, "sampled");
        // Sampled where enumeration would do, the estimate is within 4 standard errors of the
        // exact p, and the same seed gives the same estimate.
        let columns = [(8, 2), (4, 3), (4, 5), (2, 5), (2, 5)];
        let exact = tested(&columns, 1, MAX_TABLES, 0);
        let sampled = tested(&columns, 7, 0, 20_000);
        let se = sampled.monte_carlo_se.expect("sampled");
        assert!(
            se > 0.0 && (sampled.p - exact.p).abs() < 4.0 * se,
            "{sampled:?} {exact:?}"
        );
        assert_eq!(tested(&columns, 7, 0, 20_000), sampled);
    }
}
