//! A run's success rows as `agree` reads them: each task's verdict (regression, improvement,
//! neither) and its delta, per host, from `comparison.parquet` (else `comparison.csv`).

use std::path::{Path, PathBuf};

use polars_core::prelude::*;
use polars_io::prelude::*;

use super::AgreeError;
use crate::report::{COMPARISON_CSV, COMPARISON_PARQUET};
use crate::rundir::RunInfo;

/// A host's verdict on a task's success, in the three classes `agree` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    Regression,
    Improvement,
    /// `no_change` and `inconclusive`: the run did not claim a change.
    Neither,
}

impl Class {
    /// The class of a comparison row's `verdict`; `None` for a word that is not a verdict.
    pub fn of_verdict(verdict: &str) -> Option<Self> {
        match verdict {
            "regression" => Some(Self::Regression),
            "improvement" => Some(Self::Improvement),
            "no_change" | "inconclusive" => Some(Self::Neither),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Regression => "regression",
            Self::Improvement => "improvement",
            Self::Neither => "neither",
        }
    }

    /// The class's row and column in kappa's table.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One task's success row of one host.
#[derive(Debug, Clone, PartialEq)]
pub struct SuccessRow {
    pub task_id: String,
    pub host: String,
    pub class: Class,
    /// The row's `delta` (candidate minus baseline success rate), when it has one.
    pub delta: Option<f64>,
}

/// A run as `agree` sees it.
#[derive(Debug, Clone)]
pub struct RunRows {
    pub dir: PathBuf,
    pub run_id: String,
    pub seed: u64,
    /// The hosts with success rows, in the order of `run.json` (each name once).
    pub hosts: Vec<String>,
    pub rows: Vec<SuccessRow>,
}

/// Reads the run in `dir`: its record, and its comparison's success rows of tasks.
pub fn read(dir: &Path) -> Result<RunRows, AgreeError> {
    let info = RunInfo::read(dir).map_err(|source| AgreeError::NotARun {
        dir: dir.to_path_buf(),
        source,
    })?;
    let (path, df) = comparison(dir)?;
    let rows = success_rows(&df).map_err(|e| AgreeError::Table {
        path: path.clone(),
        message: e.to_string(),
    })?;
    if rows.is_empty() {
        return Err(AgreeError::NoSuccessRows { path });
    }
    let mut hosts: Vec<String> = Vec::new();
    let named = info.hosts.iter().map(|h| h.name.as_str());
    for host in named.chain(rows.iter().map(|r| r.host.as_str())) {
        if rows.iter().any(|r| r.host == host) && !hosts.iter().any(|h| h == host) {
            hosts.push(host.to_owned());
        }
    }
    Ok(RunRows {
        dir: dir.to_path_buf(),
        run_id: info.run_id,
        seed: info.seed,
        hosts,
        rows,
    })
}

/// The run's comparison table: the Parquet file when there is one, else the CSV.
fn comparison(dir: &Path) -> Result<(PathBuf, DataFrame), AgreeError> {
    let parquet = dir.join(COMPARISON_PARQUET);
    let csv = dir.join(COMPARISON_CSV);
    let cannot = |path: &Path| {
        let path = path.to_path_buf();
        move |e: PolarsError| AgreeError::Table {
            path,
            message: e.to_string(),
        }
    };
    if let Ok(file) = std::fs::File::open(&parquet) {
        let df = ParquetReader::new(file)
            .finish()
            .map_err(cannot(&parquet))?;
        return Ok((parquet, df));
    }
    if csv.is_file() {
        let df = read_csv(&csv).map_err(cannot(&csv))?;
        return Ok((csv, df));
    }
    Err(AgreeError::NoComparison {
        dir: dir.to_path_buf(),
    })
}

/// A CSV file with a header, every column's type inferred.
pub(crate) fn read_csv(path: &Path) -> PolarsResult<DataFrame> {
    CsvReadOptions::default()
        .with_has_header(true)
        .try_into_reader_with_file_path(Some(path.to_path_buf()))?
        .finish()
}

/// A table whose columns are not what `agree` reads.
#[derive(Debug, thiserror::Error)]
pub enum ColumnError {
    #[error("no column `{0}`")]
    Missing(String),
    #[error("column `{name}`: {source}")]
    WrongType {
        name: String,
        #[source]
        source: PolarsError,
    },
    #[error("task `{task}` on `{host}`: `{word}` is not a verdict")]
    NotAVerdict {
        task: String,
        host: String,
        word: String,
    },
}

/// A column of `df` cast to `to`.
fn cast(df: &DataFrame, name: &str, to: &DataType) -> Result<Column, ColumnError> {
    let c = (df.column(name)).map_err(|_| ColumnError::Missing(name.to_owned()))?;
    c.cast(to).map_err(|source| ColumnError::WrongType {
        name: name.to_owned(),
        source,
    })
}

/// A column of `df` as text (`None` for nulls).
pub(crate) fn text(df: &DataFrame, name: &str) -> Result<Vec<Option<String>>, ColumnError> {
    let c = cast(df, name, &DataType::String)?;
    let s = c.str().map_err(|source| ColumnError::WrongType {
        name: name.to_owned(),
        source,
    })?;
    Ok(s.iter().map(|v| v.map(str::to_owned)).collect())
}

/// A column of `df` as numbers (`None` for nulls and what is not a number).
pub(crate) fn numbers(df: &DataFrame, name: &str) -> Result<Vec<Option<f64>>, ColumnError> {
    let c = cast(df, name, &DataType::Float64)?;
    let s = c.f64().map_err(|source| ColumnError::WrongType {
        name: name.to_owned(),
        source,
    })?;
    Ok(s.iter().collect())
}

/// The rows with `metric = success` and `scope = task` (a table without `scope`, written before
/// suite rows had one, counts every row but `task_id = "*"` as a task's).
fn success_rows(df: &DataFrame) -> Result<Vec<SuccessRow>, ColumnError> {
    let (task, host, metric) = (text(df, "task_id")?, text(df, "host")?, text(df, "metric")?);
    let verdict = text(df, "verdict")?;
    let delta = numbers(df, "delta")?;
    let scope = match df.column("scope") {
        Ok(_) => text(df, "scope")?,
        Err(_) => vec![Some("task".to_owned()); df.height()],
    };
    let mut rows = Vec::new();
    for i in 0..df.height() {
        let (Some(task_id), Some(host)) = (&task[i], &host[i]) else {
            continue;
        };
        let is_task = scope[i].as_deref() == Some("task") && task_id != "*";
        if metric[i].as_deref() != Some("success") || !is_task {
            continue;
        }
        let word = verdict[i].as_deref().unwrap_or("");
        let class = Class::of_verdict(word).ok_or_else(|| ColumnError::NotAVerdict {
            task: task_id.clone(),
            host: host.clone(),
            word: word.to_owned(),
        })?;
        rows.push(SuccessRow {
            task_id: task_id.clone(),
            host: host.clone(),
            class,
            delta: delta[i].filter(|d| d.is_finite()),
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inconclusive_and_no_change_are_neither() {
        assert_eq!(Class::of_verdict("regression"), Some(Class::Regression));
        assert_eq!(Class::of_verdict("improvement"), Some(Class::Improvement));
        assert_eq!(Class::of_verdict("inconclusive"), Some(Class::Neither));
        assert_eq!(Class::of_verdict("no_change"), Some(Class::Neither));
        assert_eq!(Class::of_verdict("regressed"), None);
    }

    #[test]
    fn only_the_success_rows_of_tasks_are_read() {
        let df = DataFrame::new_infer_height(vec![
            crate::rundir::col("task_id", ["*", "a", "a", "b"]),
            crate::rundir::col("host", ["sim", "sim", "sim", "sim"]),
            crate::rundir::col("metric", ["success", "success", "tool_calls", "success"]),
            crate::rundir::col(
                "verdict",
                ["regression", "no_change", "regression", "regression"],
            ),
            crate::rundir::col("delta", [Some(-0.2), Some(0.0), Some(2.0), None]),
            crate::rundir::col("scope", ["suite", "task", "task", "task"]),
        ])
        .unwrap();
        let rows = success_rows(&df).unwrap();
        let got: Vec<(&str, Class, Option<f64>)> = (rows.iter())
            .map(|r| (r.task_id.as_str(), r.class, r.delta))
            .collect();
        assert_eq!(
            got,
            [
                ("a", Class::Neither, Some(0.0)),
                ("b", Class::Regression, None)
            ]
        );
    }
}
