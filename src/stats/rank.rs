//! Average ranks with ties (scipy's `rankdata(method='average')`), shared by the rank tests.

/// Ranks of a sample and its tie term.
pub(crate) struct Ranks {
    /// 1-based ranks, in input order; tied values share the mean of their ranks.
    pub ranks: Vec<f64>,
    /// `sum(t^3 - t)` over the groups of `t` tied values, for the tie-corrected variances.
    pub tie_term: f64,
}

/// Ranks finite `values` (the callers check finiteness), averaging the ranks of ties.
pub(crate) fn average_ranks(values: &[f64]) -> Ranks {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut tie_term = 0.0;
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        // `==` rather than total_cmp so that -0.0 and 0.0 tie, as in scipy.
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Ranks start..end (0-based) share the mean rank (start + 1 + end) / 2.
        let shared = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = shared;
        }
        let t = (end - start) as f64;
        tie_term += t * t * t - t;
        start = end;
    }
    Ranks { ranks, tie_term }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn averages_tied_ranks() {
        let r = average_ranks(&[3.0, 1.0, 3.0, 2.0, 3.0, -0.0, 0.0]);
        assert_eq!(r.ranks, vec![6.0, 3.0, 6.0, 4.0, 6.0, 1.5, 1.5]);
        assert_eq!(r.tie_term, 24.0 + 6.0);
    }

    #[test]
    fn empty_and_single() {
        assert!(average_ranks(&[]).ranks.is_empty());
        let r = average_ranks(&[5.0]);
        assert_eq!((r.ranks, r.tie_term), (vec![1.0], 0.0));
    }
}
