//! The run directory's episode and tool-call tables (polars), and their Parquet and CSV files.

use std::fs::File;
use std::path::Path;

use anyhow::Context;
use polars::prelude::*;

use crate::episode::Episode;

pub const EPISODES_PARQUET: &str = "episodes.parquet";
pub const EPISODES_CSV: &str = "episodes.csv";
pub const TOOL_CALLS_PARQUET: &str = "tool_calls.parquet";

/// The tables a run's reports are written from.
pub struct Tables {
    pub episodes: DataFrame,
    pub tool_calls: DataFrame,
}

/// A named column of `values` (one per row), for the frames mcpeval writes.
pub(crate) fn col<T, V>(name: &str, values: V) -> Column
where
    Series: NamedFrom<V, T>,
    T: ?Sized,
{
    Column::from(Series::new(name.into(), values))
}

impl Tables {
    pub fn from_episodes(episodes: &[Episode]) -> anyhow::Result<Self> {
        Ok(Self {
            episodes: episode_frame(episodes)?,
            tool_calls: tool_call_frame(episodes)?,
        })
    }
}

fn episode_frame(eps: &[Episode]) -> PolarsResult<DataFrame> {
    macro_rules! field {
        ($f:expr) => {
            eps.iter().map($f).collect::<Vec<_>>()
        };
    }
    DataFrame::new_infer_height(vec![
        col("run_id", field!(|e| e.run_id.as_str())),
        col("task_id", field!(|e| e.task_id.as_str())),
        col("kind", field!(|e| e.kind.as_str())),
        col("set", field!(|e| e.set.as_str())),
        col("side", field!(|e| e.side.as_str())),
        col("host", field!(|e| e.host.as_str())),
        col("model", field!(|e| e.model.as_str())),
        col("trial", field!(|e| e.trial)),
        col("seed", field!(|e| e.seed)),
        col("success", field!(|e| e.success)),
        col("infra_error", field!(|e| e.infra_error.as_deref())),
        col("turns", field!(|e| e.turns)),
        col("tool_calls", field!(|e| e.tool_calls)),
        col("tool_errors", field!(|e| e.tool_errors)),
        col("protocol_errors", field!(|e| e.protocol_errors)),
        col("input_tokens", field!(|e| e.input_tokens)),
        col("output_tokens", field!(|e| e.output_tokens)),
        col("total_tokens", field!(|e| e.total_tokens)),
        col("cache_read_tokens", field!(|e| e.cache_read_tokens)),
        col("cache_write_tokens", field!(|e| e.cache_write_tokens)),
        col("judge_input_tokens", field!(|e| e.judge_input_tokens)),
        col("judge_output_tokens", field!(|e| e.judge_output_tokens)),
        col("latency_ms", field!(|e| e.latency_ms)),
        col("first_tool", field!(|e| e.first_tool.as_deref())),
        col("tools_called", field!(|e| e.tools_called.as_str())),
        col("hit_max_turns", field!(|e| e.hit_max_turns)),
        col("attempts", field!(|e| e.attempts.len() as u32 + 1)),
        col(
            "request_retries",
            field!(|e| e.request_retries.len() as u32),
        ),
        col("grade_failures", field!(|e| e.grade.failure_summary())),
        col("started_at", field!(|e| e.started_at.as_str())),
    ])
}

fn tool_call_frame(eps: &[Episode]) -> PolarsResult<DataFrame> {
    let rows: Vec<(&Episode, &crate::episode::ToolCallRecord)> = eps
        .iter()
        .flat_map(|e| e.calls.iter().map(move |c| (e, c)))
        .collect();
    macro_rules! field {
        ($f:expr) => {
            rows.iter().map($f).collect::<Vec<_>>()
        };
    }
    DataFrame::new_infer_height(vec![
        col("run_id", field!(|(e, _)| e.run_id.as_str())),
        col("task_id", field!(|(e, _)| e.task_id.as_str())),
        col("side", field!(|(e, _)| e.side.as_str())),
        col("host", field!(|(e, _)| e.host.as_str())),
        col("trial", field!(|(e, _)| e.trial)),
        col("index", field!(|(_, c)| c.index)),
        col("tool", field!(|(_, c)| c.tool.as_str())),
        col("arguments", field!(|(_, c)| c.arguments.as_str())),
        col("is_error", field!(|(_, c)| c.is_error)),
        col("error_code", field!(|(_, c)| c.error_code)),
        col("error_kind", field!(|(_, c)| c.error_kind.as_deref())),
        col("latency_ms", field!(|(_, c)| c.latency_ms)),
    ])
}

/// Writes a file through a temporary name and renames it, so a reader never sees half a file.
fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut File) -> PolarsResult<()>,
) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut file =
        File::create(&tmp).with_context(|| format!("cannot create `{}`", tmp.display()))?;
    write(&mut file).map_err(|e| anyhow::anyhow!("cannot write `{}`: {e}", path.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(())
}

pub fn write_parquet(df: &mut DataFrame, path: &Path) -> anyhow::Result<()> {
    write_atomic(path, |f| ParquetWriter::new(f).finish(df).map(|_| ()))
}

pub fn write_csv(df: &mut DataFrame, path: &Path) -> anyhow::Result<()> {
    write_atomic(path, |f| CsvWriter::new(f).include_header(true).finish(df))
}

/// Writes `episodes.parquet`, `episodes.csv` and `tool_calls.parquet`.
pub fn write_tables(tables: &mut Tables, dir: &Path) -> anyhow::Result<()> {
    write_parquet(&mut tables.episodes, &dir.join(EPISODES_PARQUET))?;
    write_csv(&mut tables.episodes, &dir.join(EPISODES_CSV))?;
    write_parquet(&mut tables.tool_calls, &dir.join(TOOL_CALLS_PARQUET))?;
    Ok(())
}
