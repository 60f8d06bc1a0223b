//! Spearman's rank correlation of paired samples, ties given average ranks.

use super::rank::average_ranks;
use super::types::{check_sample, StatsError};

/// Spearman's rho of `pairs` (x, y): Pearson's correlation of the average ranks of x and of y
/// (Spearman 1904; scipy's `spearmanr`, which ranks ties the same way). `None` when it is
/// undefined: fewer than two pairs, or either sample constant.
pub fn spearman(pairs: &[(f64, f64)]) -> Result<Option<f64>, StatsError> {
    let (x, y): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
    check_sample("x", &x)?;
    check_sample("y", &y)?;
    let (rx, ry) = (average_ranks(&x).ranks, average_ranks(&y).ranks);
    Ok(pearson(&rx, &ry))
}

/// Pearson's correlation; `None` when either sample has no spread.
fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    Some((sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_support::{assert_close, fixture, num, nums};

    /// The pairs of `agreement.json`, written by `make_agreement_fixtures.py` with scipy's
    /// `spearmanr`.
    #[test]
    fn rho_equals_scipy_with_and_without_ties() {
        let doc = fixture("agreement.json");
        for case in doc["spearman"].as_array().unwrap() {
            let pairs: Vec<(f64, f64)> =
                nums(&case["x"]).into_iter().zip(nums(&case["y"])).collect();
            let got = spearman(&pairs).unwrap();
            assert_close(got.unwrap(), num(&case["rho"]), &case["name"]);
        }
    }

    #[test]
    fn a_constant_sample_or_one_pair_has_no_correlation() {
        assert_eq!(spearman(&[(0.0, 1.0), (0.0, 2.0), (0.0, 3.0)]), Ok(None));
        assert_eq!(spearman(&[(1.0, 2.0)]), Ok(None));
        assert!(spearman(&[]).is_err());
        assert!(spearman(&[(f64::NAN, 1.0), (1.0, 2.0)]).is_err());
    }
}
