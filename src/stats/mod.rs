//! Statistics for comparing a baseline and a candidate: tests, intervals, adjustments, planning.
//!
//! Every function is pure; each cites its method and is checked against scipy/statsmodels
//! values in `tests/fixtures/stats/` (written by `make_fixtures.py` and
//! `make_stratified_fixtures.py` there; kappa and Spearman's rho: `make_agreement_fixtures.py`).

mod bootstrap;
mod cmh;
mod compare;
mod fisher;
mod freeman_halton;
mod kappa;
mod mann_whitney;
mod mde;
mod multiplicity;
mod newcombe;
mod normal;
mod pass_at_k;
mod power;
mod rank;
mod risk_difference;
mod sequential;
mod spearman;
#[cfg(test)]
mod test_support;
mod types;
mod van_elteren;
mod wilcoxon;

pub use bootstrap::{
    bootstrap_mean_difference, cluster_bootstrap_mean, BootstrapConfig, DEFAULT_RESAMPLES,
};
pub use cmh::{cmh_exact_test, cmh_test, mantel_fleiss};
pub use compare::{
    compare_counts, compare_success, normal_mean_difference, welch_standard_error, Comparison,
    NORMAL_INTERVAL_FROM,
};
pub use fisher::fisher_exact;
pub use freeman_halton::{freeman_halton, FreemanHalton, MAX_TABLES, MONTE_CARLO_RESAMPLES};
pub use kappa::{cohens_kappa, Agreement, Kappa};
pub use mann_whitney::mann_whitney_u;
pub use mde::{cmh_mde, fisher_mde, mann_whitney_mde, min_fisher_p, van_elteren_mde, FisherPlan};
pub use multiplicity::{p_adjusted, Adjustment};
pub use newcombe::{newcombe_interval, wilson_interval};
pub use pass_at_k::{pass_at_k, pass_hat_k};
pub use power::{
    fisher_power, min_detectable_drop, trials_needed, trials_needed_bisect, trials_needed_shift,
    trials_needed_stable,
};
pub use risk_difference::{
    compare_stratified_rates, mh_risk_difference, stratified_newcombe_interval, RiskDifference,
    StratifiedRates,
};
pub use sequential::{look_weights, obf_spent, one_sided_critical, predictive_power};
pub use spearman::spearman;
pub use types::{Interval, Proportion, StatsError, Table2x2, TestResult};
pub use van_elteren::van_elteren;
pub use wilcoxon::wilcoxon_signed_rank;
