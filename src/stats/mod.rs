//! Statistics for comparing a baseline and a candidate: tests, intervals, adjustments, planning.
//!
//! Every function is pure; each cites its method and is checked against scipy/statsmodels
//! values in `tests/fixtures/stats/` (written by `make_fixtures.py` there).

mod bootstrap;
mod compare;
mod fisher;
mod mann_whitney;
mod multiplicity;
mod newcombe;
mod normal;
mod pass_at_k;
mod power;
mod rank;
#[cfg(test)]
mod test_support;
mod types;
mod wilcoxon;

pub use bootstrap::{
    bootstrap_mean_difference, cluster_bootstrap_mean, BootstrapConfig, DEFAULT_RESAMPLES,
};
pub use compare::{compare_counts, compare_success, compare_suite, Comparison};
pub use fisher::fisher_exact;
pub use mann_whitney::mann_whitney_u;
pub use multiplicity::{p_adjusted, Adjustment};
pub use newcombe::{newcombe_interval, wilson_interval};
pub use pass_at_k::{pass_at_k, pass_hat_k};
pub use power::{
    fisher_power, min_detectable_drop, trials_needed, trials_needed_bisect, trials_needed_shift,
    trials_needed_stable,
};
pub use types::{Interval, Proportion, StatsError, TestResult};
pub use wilcoxon::wilcoxon_signed_rank;
