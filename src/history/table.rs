//! The rows of `history.parquet`: one per run × comparison × task × host × metric, and their
//! polars frame in both directions.

use polars_core::prelude::*;

use crate::analysis::Row;
use crate::rundir::col;

/// `comparison` of a row comparing the run's baseline with its candidate.
pub const CANDIDATE: &str = "candidate";
/// `comparison` of a row comparing the run's baseline with the last stored baseline run of the
/// same baseline version.
pub const DRIFT: &str = "drift";

/// The columns a notebook reads, in order; `gated` and `reference_run_id` follow them.
pub const COLUMNS: [&str; 17] = [
    "date",
    "run_id",
    "run_dir",
    "comparison",
    "baseline_version",
    "candidate_version",
    "task_id",
    "host",
    "metric",
    "n_baseline",
    "n_candidate",
    "baseline_mean",
    "candidate_mean",
    "delta",
    "p_value",
    "p_adjusted",
    "verdict",
];

/// One row of the history.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryRow {
    /// When the run started, UTC, ISO 8601 (`2026-11-30T03:00:00Z`).
    pub date: String,
    pub run_id: String,
    /// The run directory, absolute, where its episodes are kept.
    pub run_dir: String,
    /// [`CANDIDATE`] or [`DRIFT`].
    pub comparison: String,
    pub baseline_version: String,
    /// For a drift row, the baseline version again: both sides ran it.
    pub candidate_version: String,
    pub task_id: String,
    pub host: String,
    pub metric: String,
    pub n_baseline: u32,
    pub n_candidate: u32,
    pub baseline_mean: Option<f64>,
    pub candidate_mean: Option<f64>,
    pub delta: Option<f64>,
    pub p_value: Option<f64>,
    pub p_adjusted: Option<f64>,
    pub verdict: String,
    /// Whether a regression of this row fails a run.
    pub gated: bool,
    /// For a drift row: the earlier run whose baseline episodes were the reference.
    pub reference_run_id: Option<String>,
}

/// What every row of one comparison of one run shares.
#[derive(Debug, Clone)]
pub struct RunMeta {
    pub date: String,
    pub run_id: String,
    pub run_dir: String,
    pub baseline_version: String,
    pub candidate_version: String,
}

impl HistoryRow {
    /// A history row from a row of a comparison.
    pub fn from_comparison(
        meta: &RunMeta,
        comparison: &str,
        reference_run_id: Option<&str>,
        row: &Row,
    ) -> Self {
        Self {
            date: meta.date.clone(),
            run_id: meta.run_id.clone(),
            run_dir: meta.run_dir.clone(),
            comparison: comparison.to_owned(),
            baseline_version: meta.baseline_version.clone(),
            candidate_version: meta.candidate_version.clone(),
            task_id: row.task_id.clone(),
            host: row.host.clone(),
            metric: row.metric.as_str().to_owned(),
            n_baseline: row.n_baseline,
            n_candidate: row.n_candidate,
            baseline_mean: row.baseline_mean,
            candidate_mean: row.candidate_mean,
            delta: row.delta,
            p_value: row.p_value,
            p_adjusted: row.p_adjusted,
            verdict: row.verdict.as_str().to_owned(),
            gated: row.gated,
            reference_run_id: reference_run_id.map(str::to_owned),
        }
    }

    /// A gated row whose verdict says the compared sides differ.
    pub fn moved(&self) -> bool {
        self.gated && matches!(self.verdict.as_str(), "regression" | "improvement")
    }
}

/// The history as a frame: [`COLUMNS`], then `gated` and `reference_run_id`.
pub fn to_frame(rows: &[HistoryRow]) -> PolarsResult<DataFrame> {
    macro_rules! field {
        ($f:expr) => {
            rows.iter().map($f).collect::<Vec<_>>()
        };
    }
    DataFrame::new_infer_height(vec![
        col("date", field!(|r| r.date.as_str())),
        col("run_id", field!(|r| r.run_id.as_str())),
        col("run_dir", field!(|r| r.run_dir.as_str())),
        col("comparison", field!(|r| r.comparison.as_str())),
        col("baseline_version", field!(|r| r.baseline_version.as_str())),
        col(
            "candidate_version",
            field!(|r| r.candidate_version.as_str()),
        ),
        col("task_id", field!(|r| r.task_id.as_str())),
        col("host", field!(|r| r.host.as_str())),
        col("metric", field!(|r| r.metric.as_str())),
        col("n_baseline", field!(|r| r.n_baseline)),
        col("n_candidate", field!(|r| r.n_candidate)),
        col("baseline_mean", field!(|r| r.baseline_mean)),
        col("candidate_mean", field!(|r| r.candidate_mean)),
        col("delta", field!(|r| r.delta)),
        col("p_value", field!(|r| r.p_value)),
        col("p_adjusted", field!(|r| r.p_adjusted)),
        col("verdict", field!(|r| r.verdict.as_str())),
        col("gated", field!(|r| r.gated)),
        col(
            "reference_run_id",
            field!(|r| r.reference_run_id.as_deref()),
        ),
    ])
}

/// A history table whose columns are not the history's.
#[derive(Debug, thiserror::Error)]
pub enum ColumnError {
    #[error("no column `{0}`")]
    Missing(String),
    #[error("column `{name}`: {reason}")]
    WrongType { name: String, reason: String },
    #[error("column `{name}` is null in row {row}")]
    Null { name: String, row: usize },
}

impl ColumnError {
    fn wrong(name: &str, reason: impl std::fmt::Display) -> Self {
        Self::WrongType {
            name: name.to_owned(),
            reason: reason.to_string(),
        }
    }
}

/// Reads rows back from a frame; an error says which column is missing or of the wrong type.
pub fn from_frame(df: &DataFrame) -> Result<Vec<HistoryRow>, ColumnError> {
    let text = |name: &str| -> Result<Vec<Option<String>>, ColumnError> {
        let c = df
            .column(name)
            .map_err(|_| ColumnError::Missing(name.to_owned()))?;
        let c = c
            .cast(&DataType::String)
            .map_err(|e| ColumnError::wrong(name, e))?;
        let s = c.str().map_err(|e| ColumnError::wrong(name, e))?;
        Ok(s.iter().map(|v| v.map(str::to_owned)).collect())
    };
    let required = |name: &str| -> Result<Vec<String>, ColumnError> {
        text(name)?
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                v.ok_or_else(|| ColumnError::Null {
                    name: name.to_owned(),
                    row: i + 1,
                })
            })
            .collect()
    };
    let count = |name: &str| -> Result<Vec<u32>, ColumnError> {
        let c = df
            .column(name)
            .map_err(|_| ColumnError::Missing(name.to_owned()))?
            .cast(&DataType::UInt32)
            .map_err(|e| ColumnError::wrong(name, e))?;
        let s = c.u32().map_err(|e| ColumnError::wrong(name, e))?;
        Ok(s.iter().map(Option::unwrap_or_default).collect())
    };
    let number = |name: &str| -> Result<Vec<Option<f64>>, ColumnError> {
        let c = df
            .column(name)
            .map_err(|_| ColumnError::Missing(name.to_owned()))?
            .cast(&DataType::Float64)
            .map_err(|e| ColumnError::wrong(name, e))?;
        let s = c.f64().map_err(|e| ColumnError::wrong(name, e))?;
        Ok(s.iter().collect())
    };
    let gated: Vec<bool> = match df.column("gated") {
        Ok(c) => c
            .bool()
            .map_err(|e| ColumnError::wrong("gated", e))?
            .iter()
            .map(Option::unwrap_or_default)
            .collect(),
        Err(_) => vec![false; df.height()],
    };
    let reference = match df.column("reference_run_id") {
        Ok(_) => text("reference_run_id")?,
        Err(_) => vec![None; df.height()],
    };
    let (date, run_id, run_dir, comparison) = (
        required("date")?,
        required("run_id")?,
        required("run_dir")?,
        required("comparison")?,
    );
    let (baseline_version, candidate_version, task_id, host, metric, verdict) = (
        required("baseline_version")?,
        required("candidate_version")?,
        required("task_id")?,
        required("host")?,
        required("metric")?,
        required("verdict")?,
    );
    let (n_baseline, n_candidate) = (count("n_baseline")?, count("n_candidate")?);
    let (baseline_mean, candidate_mean, delta, p_value, p_adjusted) = (
        number("baseline_mean")?,
        number("candidate_mean")?,
        number("delta")?,
        number("p_value")?,
        number("p_adjusted")?,
    );
    Ok((0..df.height())
        .map(|i| HistoryRow {
            date: date[i].clone(),
            run_id: run_id[i].clone(),
            run_dir: run_dir[i].clone(),
            comparison: comparison[i].clone(),
            baseline_version: baseline_version[i].clone(),
            candidate_version: candidate_version[i].clone(),
            task_id: task_id[i].clone(),
            host: host[i].clone(),
            metric: metric[i].clone(),
            n_baseline: n_baseline[i],
            n_candidate: n_candidate[i],
            baseline_mean: baseline_mean[i],
            candidate_mean: candidate_mean[i],
            delta: delta[i],
            p_value: p_value[i],
            p_adjusted: p_adjusted[i],
            verdict: verdict[i].clone(),
            gated: gated[i],
            reference_run_id: reference[i].clone(),
        })
        .collect())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A history row of `run`, for the tests of this module and its neighbours.
    pub(crate) fn sample(run: &str, comparison: &str, task: &str, verdict: &str) -> HistoryRow {
        HistoryRow {
            date: format!("2026-11-{:02}T03:00:00Z", run.len()),
            run_id: run.into(),
            run_dir: format!("/results/{run}"),
            comparison: comparison.into(),
            baseline_version: "1.4.0".into(),
            candidate_version: "1.5.0".into(),
            task_id: task.into(),
            host: "sim".into(),
            metric: "success".into(),
            n_baseline: 4,
            n_candidate: 4,
            baseline_mean: Some(1.0),
            candidate_mean: Some(0.5),
            delta: Some(-0.5),
            p_value: Some(0.4),
            p_adjusted: None,
            verdict: verdict.into(),
            gated: true,
            reference_run_id: (comparison == DRIFT).then(|| "earlier".into()),
        }
    }

    #[test]
    fn rows_survive_the_frame_both_ways_with_the_notebook_columns_first() {
        let rows = vec![
            sample("a", CANDIDATE, "t1", "regression"),
            sample("bb", DRIFT, "*", "no_change"),
        ];
        let df = to_frame(&rows).unwrap();
        let names: Vec<&str> = df.get_column_names().iter().map(|n| n.as_str()).collect();
        assert_eq!(&names[..COLUMNS.len()], COLUMNS);
        assert_eq!(from_frame(&df).unwrap(), rows);
    }

    #[test]
    fn a_frame_without_a_fixed_column_says_which() {
        let df = to_frame(&[sample("a", CANDIDATE, "t1", "no_change")])
            .unwrap()
            .drop("verdict")
            .unwrap();
        assert_eq!(
            from_frame(&df).unwrap_err().to_string(),
            "no column `verdict`"
        );
    }

    #[test]
    fn only_gated_regressions_and_improvements_move() {
        assert!(sample("a", DRIFT, "t", "regression").moved());
        assert!(sample("a", DRIFT, "t", "improvement").moved());
        assert!(!sample("a", DRIFT, "t", "inconclusive").moved());
        let mut ungated = sample("a", DRIFT, "t", "regression");
        ungated.gated = false;
        assert!(!ungated.moved());
    }
}
