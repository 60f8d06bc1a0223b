//! `comparison.parquet` and `comparison.csv`: the comparison's rows as a polars frame.

use polars_core::prelude::*;

use crate::analysis::Row;
use crate::rundir::col;

pub const COMPARISON_PARQUET: &str = "comparison.parquet";
pub const COMPARISON_CSV: &str = "comparison.csv";

/// `comparison.parquet`: the columns docs/output-files.md fixes, then `gated`, `margin`, `k`,
/// `trials_needed`, `scope`, `mde`, `relative_change`, for adaptive runs `trials_run` and
/// `stopped`, and `turn`: after the rows, a conversation's turn rows (`scope = turn`, `turn` its
/// user turn; null on the other rows).
pub fn comparison_frame(rows: &[Row], turn_rows: &[Row]) -> PolarsResult<DataFrame> {
    let rows: Vec<&Row> = rows.iter().chain(turn_rows).collect();
    macro_rules! field {
        ($f:expr) => {
            rows.iter().map($f).collect::<Vec<_>>()
        };
    }
    DataFrame::new_infer_height(vec![
        col("task_id", field!(|r| r.task_id.as_str())),
        col("host", field!(|r| r.host.as_str())),
        col("metric", field!(|r| r.metric.as_str())),
        col("n_baseline", field!(|r| r.n_baseline)),
        col("n_candidate", field!(|r| r.n_candidate)),
        col("baseline_mean", field!(|r| r.baseline_mean)),
        col("candidate_mean", field!(|r| r.candidate_mean)),
        col("delta", field!(|r| r.delta)),
        col("ci_low", field!(|r| r.ci_low)),
        col("ci_high", field!(|r| r.ci_high)),
        col("test", field!(|r| r.test.as_str())),
        col("p_value", field!(|r| r.p_value)),
        col("p_adjusted", field!(|r| r.p_adjusted)),
        col("verdict", field!(|r| r.verdict.as_str())),
        col("gated", field!(|r| r.gated)),
        col("margin", field!(|r| r.margin)),
        col("k", field!(|r| r.k)),
        col("trials_needed", field!(|r| r.trials_needed)),
        col("scope", field!(|r| r.scope.as_str())),
        col("mde", field!(|r| r.mde)),
        col("relative_change", field!(|r| r.relative_change)),
        col("trials_run", field!(|r| r.trials_run)),
        col("stopped", field!(|r| r.stopped.map(|s| s.as_str()))),
        col("turn", field!(|r| r.turn)),
    ])
}
