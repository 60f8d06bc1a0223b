//! Adjusted p-values for many comparisons: Holm (family-wise) and Benjamini–Hochberg (FDR).

use serde::{Deserialize, Serialize};

use super::types::{check_range, StatsError};

/// A multiple-comparison adjustment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Adjustment {
    /// Holm's step-down method: controls the family-wise error rate under any dependence
    /// (Holm 1979, *Scand J Statist* 6:65–70). statsmodels `multipletests(method='holm')`.
    Holm,
    /// Benjamini–Hochberg step-up method: controls the false discovery rate for independent or
    /// positively dependent tests (Benjamini & Hochberg 1995, *JRSS B* 57:289–300).
    /// statsmodels `multipletests(method='fdr_bh')`. Written `bh` in configs and flags.
    #[serde(alias = "bh")]
    BenjaminiHochberg,
}

impl std::str::FromStr for Adjustment {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "holm" => Ok(Self::Holm),
            "bh" | "benjamini_hochberg" => Ok(Self::BenjaminiHochberg),
            other => Err(format!(
                "unknown correction `{other}` (expected holm or bh)"
            )),
        }
    }
}

impl Adjustment {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Holm => "holm",
            Self::BenjaminiHochberg => "bh",
        }
    }
}

/// Adjusts the p-values `p` for multiple comparisons by `method`, preserving their order.
///
/// Missing values (`None` or NaN) are skipped: they stay `None` and do not count among the m
/// tests. Adjusted values are monotone in the raw ones, at least the raw value, and capped at 1;
/// tied raw values get equal adjusted values. Holm: the i-th smallest (1-based) becomes the
/// running maximum of `(m - i + 1) p_(i)`; BH: the running minimum from the top of
/// `m / i * p_(i)`. Matches statsmodels' `multipletests(p, method=...)` on the present values.
///
/// Errors: a present value outside [0, 1].
pub fn p_adjusted(p: &[Option<f64>], method: Adjustment) -> Result<Vec<Option<f64>>, StatsError> {
    let mut present: Vec<(usize, f64)> = Vec::with_capacity(p.len());
    for (i, v) in p.iter().enumerate() {
        match v {
            Some(v) if !v.is_nan() => {
                check_range("p", *v, (0.0, 1.0), false)?;
                present.push((i, *v));
            }
            _ => {}
        }
    }
    present.sort_by(|a, b| a.1.total_cmp(&b.1));
    let m = present.len() as f64;
    let mut adjusted = vec![0.0; present.len()];
    match method {
        Adjustment::Holm => {
            let mut running = 0.0f64;
            for (rank, &(_, v)) in present.iter().enumerate() {
                running = running.max((m - rank as f64) * v);
                adjusted[rank] = running.min(1.0);
            }
        }
        Adjustment::BenjaminiHochberg => {
            let mut running = f64::INFINITY;
            for (rank, &(_, v)) in present.iter().enumerate().rev() {
                running = running.min(v / ((rank + 1) as f64 / m));
                adjusted[rank] = running.min(1.0);
            }
        }
    }
    let mut out = vec![None; p.len()];
    for (&(i, _), a) in present.iter().zip(adjusted) {
        out[i] = Some(a);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_support::{assert_close, cases};
    use proptest::prelude::*;
    use serde_json::Value;

    fn options(v: &Value) -> Vec<Option<f64>> {
        v.as_array().unwrap().iter().map(Value::as_f64).collect()
    }

    #[test]
    fn matches_statsmodels() {
        for case in cases("multiplicity.json") {
            let p = options(&case["p"]);
            for (method, key) in [
                (Adjustment::Holm, "holm"),
                (Adjustment::BenjaminiHochberg, "bh"),
            ] {
                let ours = p_adjusted(&p, method).unwrap();
                let reference = options(&case[key]);
                assert_eq!(ours.len(), reference.len());
                for (o, r) in ours.iter().zip(&reference) {
                    let name = format!("{key} {p:?}");
                    match r {
                        None => assert_eq!(*o, None, "{name}"),
                        Some(r) => assert_close(o.expect("present"), *r, &name),
                    }
                }
            }
        }
    }

    #[test]
    fn nan_is_missing_and_out_of_range_is_an_error() {
        let out = p_adjusted(&[Some(f64::NAN), Some(0.5)], Adjustment::Holm).unwrap();
        assert_eq!(out, vec![None, Some(0.5)]);
        assert!(p_adjusted(&[Some(1.5)], Adjustment::BenjaminiHochberg).is_err());
        assert!(p_adjusted(&[Some(-0.1)], Adjustment::Holm).is_err());
    }

    proptest! {
        #[test]
        fn adjusted_at_least_raw_and_monotone(
            p in prop::collection::vec(prop::option::of(0.0..=1.0f64), 0..30),
        ) {
            for method in [Adjustment::Holm, Adjustment::BenjaminiHochberg] {
                let adj = p_adjusted(&p, method).unwrap();
                let pairs: Vec<(f64, f64)> = p.iter().zip(&adj)
                    .filter_map(|(r, a)| Some(((*r)?, (*a)?)))
                    .collect();
                prop_assert_eq!(pairs.len(), p.iter().flatten().count());
                for &(raw, a) in &pairs {
                    prop_assert!(a >= raw && a <= 1.0, "{:?}: {} -> {}", method, raw, a);
                }
                for &(r1, a1) in &pairs {
                    for &(r2, a2) in &pairs {
                        prop_assert!(r1 > r2 || a1 <= a2, "{} -> {} but {} -> {}", r1, a1, r2, a2);
                    }
                }
            }
        }
    }
}
