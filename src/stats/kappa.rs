//! Cohen's kappa of two raters' classes, with its asymptotic standard error and interval.

use super::normal::critical_value;
use super::types::{check_alpha, Interval, StatsError};

/// Cohen's kappa of a square table and what it rests on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Kappa {
    /// `(p_o - p_e) / (1 - p_e)`.
    pub kappa: f64,
    /// The asymptotic standard error (statsmodels' `std_kappa`).
    pub std_error: f64,
    /// `kappa ± z_{1-α/2} · std_error`, not clipped to [-1, 1] (as statsmodels gives it).
    pub interval: Interval,
    /// The observed agreement `p_o`: the diagonal's share.
    pub observed: f64,
    /// The agreement expected by chance from the margins, `p_e`.
    pub expected: f64,
}

/// What the table gives: kappa, or only the raw agreement when kappa is undefined.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Agreement {
    Kappa(Kappa),
    /// Every item in one class on both sides (`p_e = 1`): kappa is 0/0; `observed` is 1.
    Undefined {
        observed: f64,
    },
    /// No items at all.
    Empty,
}

/// Cohen's (1960) unweighted kappa of `table` (rows: the first rater's class, columns: the
/// second's), with the large-sample variance of Fleiss, Cohen & Everitt (1969, Psychological
/// Bulletin 72:323) and the normal interval at level `1 - alpha`. Computed as statsmodels'
/// `statsmodels.stats.inter_rater.cohens_kappa` does (its `var_kappa`, `kappa_low`,
/// `kappa_upp`), term by term, and checked against it. Assumes the items are independent.
pub fn cohens_kappa<const K: usize>(
    table: &[[u64; K]; K],
    alpha: f64,
) -> Result<Agreement, StatsError> {
    check_alpha(alpha)?;
    let n: u64 = table.iter().flatten().sum();
    if n == 0 {
        return Ok(Agreement::Empty);
    }
    let n = n as f64;
    let p = |i: usize, j: usize| table[i][j] as f64 / n;
    let row: [f64; K] = std::array::from_fn(|i| (0..K).map(|j| p(i, j)).sum());
    let col: [f64; K] = std::array::from_fn(|j| (0..K).map(|i| p(i, j)).sum());
    let observed: f64 = (0..K).map(|i| p(i, i)).sum();
    let expected: f64 = (0..K).map(|i| row[i] * col[i]).sum();
    if expected >= 1.0 {
        return Ok(Agreement::Undefined { observed });
    }
    let kappa = (observed - expected) / (1.0 - expected);
    let term_a: f64 = (0..K)
        .map(|i| p(i, i) * (1.0 - (row[i] + col[i]) * (1.0 - kappa)).powi(2))
        .sum();
    // statsmodels' `probs * (freq_col[:, None] + freq_row)**2` off the diagonal: cell (i, j)
    // weighted by the column share of i plus the row share of j.
    let off_diagonal: f64 = (0..K)
        .flat_map(|i| (0..K).map(move |j| (i, j)))
        .filter(|(i, j)| i != j)
        .map(|(i, j)| p(i, j) * (col[i] + row[j]).powi(2))
        .sum();
    let term_b = (1.0 - kappa).powi(2) * off_diagonal;
    let term_c = (kappa - expected * (1.0 - kappa)).powi(2);
    let variance = (term_a + term_b - term_c) / (1.0 - expected).powi(2) / n;
    // Perfect agreement leaves a variance of 0 up to rounding, which may fall just below it.
    let std_error = variance.max(0.0).sqrt();
    let delta = critical_value(alpha) * std_error;
    Ok(Agreement::Kappa(Kappa {
        kappa,
        std_error,
        interval: Interval {
            low: kappa - delta,
            high: kappa + delta,
        },
        observed,
        expected,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_support::{assert_close, fixture, num};

    fn row<const K: usize>(v: &serde_json::Value) -> [u64; K] {
        std::array::from_fn(|j| v[j].as_u64().unwrap())
    }

    fn square<const K: usize>(v: &serde_json::Value) -> [[u64; K]; K] {
        std::array::from_fn(|i| row(&v[i]))
    }

    /// The tables of `agreement.json`, written by `make_agreement_fixtures.py` with statsmodels'
    /// `cohens_kappa` (an implementation independent of this one).
    #[test]
    fn kappa_and_its_interval_equal_statsmodels_on_fixed_tables() {
        let doc = fixture("agreement.json");
        let cases = doc["cases"].as_array().unwrap();
        assert!(cases.len() >= 4);
        for case in cases {
            let table = &case["table"];
            let got = match table.as_array().unwrap().len() {
                2 => cohens_kappa(&square::<2>(table), 0.05),
                3 => cohens_kappa(&square::<3>(table), 0.05),
                k => panic!("a {k}×{k} table in the fixture"),
            };
            let Ok(Agreement::Kappa(got)) = got else {
                panic!("{}: {got:?}", case["name"]);
            };
            let name = &case["name"];
            assert_close(got.kappa, num(&case["kappa"]), name);
            assert_close(got.std_error, num(&case["std_kappa"]), name);
            assert_close(got.interval.low, num(&case["kappa_low"]), name);
            assert_close(got.interval.high, num(&case["kappa_upp"]), name);
        }
    }

    #[test]
    fn one_class_on_both_sides_leaves_kappa_undefined() {
        let table = [[0, 0, 0], [0, 0, 0], [0, 0, 18]];
        assert_eq!(
            cohens_kappa(&table, 0.05),
            Ok(Agreement::Undefined { observed: 1.0 })
        );
        assert_eq!(cohens_kappa(&[[0u64; 3]; 3], 0.05), Ok(Agreement::Empty));
        assert!(cohens_kappa(&table, 1.5).is_err());
    }

    #[test]
    fn perfect_agreement_over_two_classes_is_one_with_no_spread() {
        let Ok(Agreement::Kappa(k)) = cohens_kappa(&[[4, 0, 0], [0, 0, 0], [0, 0, 14]], 0.05)
        else {
            panic!("kappa is defined");
        };
        assert_close(k.kappa, 1.0, &"kappa");
        assert!(k.std_error < 1e-7, "{k:?}");
        assert_eq!((k.observed, k.expected > 0.5), (1.0, true));
    }
}
