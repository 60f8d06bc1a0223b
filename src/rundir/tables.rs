//! The run directory's episode and tool-call tables (polars), and their Parquet and CSV files.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::Context;
use polars_core::prelude::*;
use polars_io::prelude::*;

use super::columns::{EpisodeColumns, ToolCallColumns};
use crate::episode::{Episode, EpisodeFacts, Side};
use crate::suite::{TaskKind, TaskSet};

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
    let mut table = EpisodeColumns::new(eps.len());
    eps.iter().for_each(|e| table.push(e));
    table.take()
}

fn tool_call_frame(eps: &[Episode]) -> PolarsResult<DataFrame> {
    let mut table = ToolCallColumns::new(eps.iter().map(|e| e.calls.len()).sum());
    eps.iter().for_each(|e| table.push_calls(e));
    table.take()
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
    write_atomic(path, |f| parquet_writer(f).finish(df).map(|_| ()))
}

/// A Parquet writer as mcpeval writes its tables: the min/max statistics of text columns are cut
/// to [`STATISTICS_BYTES`]. A writer keeps every page's statistics until the footer is written,
/// and whole values (arguments, grade explanations) made that memory grow by tens of kilobytes
/// per row group.
fn parquet_writer<W: std::io::Write>(file: W) -> ParquetWriter<W> {
    ParquetWriter::new(file).with_statistics(StatisticsOptions {
        binary_statistics_truncate_length: Some(STATISTICS_BYTES),
        ..StatisticsOptions::default()
    })
}

/// The longest min/max statistic of a text column in a Parquet file (longer ones are truncated,
/// as the format allows).
const STATISTICS_BYTES: u64 = 64;

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

/// Rows per Parquet row group (and CSV batch); rows wait as columns until a group is full.
/// Larger groups make a smaller footer and faster writes (a million episodes' tables: 18 s in
/// groups of 2,048 rows, 11 s in groups of 16,384), but the writer holds one group's rows (about
/// 500 bytes per demo episode) and a burst of about as much again while it writes one.
const ROW_GROUP: usize = 4096;

/// Writes `episodes.parquet`, `episodes.csv` and `tool_calls.parquet` from episodes handed over
/// one at a time: each episode's row is copied into the tables' column builders as it arrives
/// (the episode itself is not kept), and [`ROW_GROUP`] rows are written at a time (a Parquet row
/// group and a CSV batch each), so the tables of a run of any size take the memory of one row
/// group. The files are written under `.tmp` names and renamed when the writer finishes: a
/// reader never sees half a table, and a run cut short keeps the tables it had. A run writes its
/// tables with it once its trials are done ([`rebuild_tables`]), `merge` as it merges.
pub struct TableWriter {
    dir: PathBuf,
    /// Rows of the next row group, not yet written.
    episodes: EpisodeColumns,
    tool_calls: ToolCallColumns,
    open: Option<OpenTables>,
    /// The first write that failed: the tables are not put in place then.
    failed: Option<String>,
}

struct OpenTables {
    episodes: polars_io::parquet::write::BatchedWriter<File>,
    csv: polars_io::csv::write::BatchedWriter<File>,
    tool_calls: polars_io::parquet::write::BatchedWriter<File>,
}

/// `episodes.parquet` → `episodes.parquet.tmp`.
fn tmp_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

impl TableWriter {
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            episodes: EpisodeColumns::new(ROW_GROUP),
            tool_calls: ToolCallColumns::new(ROW_GROUP),
            open: None,
            failed: None,
        }
    }

    /// Adds an episode's rows; a full row group is written out.
    pub fn push(&mut self, episode: &Episode) -> anyhow::Result<()> {
        if self.failed.is_some() {
            return Ok(());
        }
        self.episodes.push(episode);
        self.tool_calls.push_calls(episode);
        if self.episodes.rows() < ROW_GROUP {
            return Ok(());
        }
        // The next group's calls get the room this group's needed.
        let calls = self.tool_calls.rows();
        if let Err(e) = self.flush() {
            self.failed = Some(format!("{e:#}"));
            return Err(e);
        }
        // Made only now, once the written group's columns are freed (and not by the last flush,
        // in `close`, after which no row comes).
        self.episodes = EpisodeColumns::new(ROW_GROUP);
        self.tool_calls = ToolCallColumns::new(calls);
        Ok(())
    }

    fn create(&self, name: &str) -> anyhow::Result<File> {
        let tmp = tmp_of(&self.dir.join(name));
        File::create(&tmp).with_context(|| format!("cannot create `{}`", tmp.display()))
    }

    /// Writes the waiting rows out (a row group of each table and a CSV batch), leaving the
    /// tables empty without room reserved: `push` makes the next group's.
    fn flush(&mut self) -> anyhow::Result<()> {
        if self.episodes.rows() == 0 {
            return Ok(());
        }
        let (episodes, tool_calls) = (self.episodes.take()?, self.tool_calls.take()?);
        if self.open.is_none() {
            self.open = Some(OpenTables {
                episodes: parquet_writer(self.create(EPISODES_PARQUET)?)
                    .batched(episodes.schema())?,
                csv: CsvWriter::new(self.create(EPISODES_CSV)?)
                    .include_header(true)
                    .batched(episodes.schema())?,
                tool_calls: parquet_writer(self.create(TOOL_CALLS_PARQUET)?)
                    .batched(tool_calls.schema())?,
            });
        }
        let open = self.open.as_mut().expect("opened above");
        let cannot = |name: &str, e: PolarsError| anyhow::anyhow!("cannot write `{name}`: {e}");
        open.episodes
            .write_batch(&episodes)
            .map_err(|e| cannot(EPISODES_PARQUET, e))?;
        open.csv
            .write_batch(&episodes)
            .map_err(|e| cannot(EPISODES_CSV, e))?;
        open.tool_calls
            .write_batch(&tool_calls)
            .map_err(|e| cannot(TOOL_CALLS_PARQUET, e))?;
        drop((episodes, tool_calls));
        // The group's column buffers are freed: hand their pages back (see `memory`).
        crate::memory::return_free_memory();
        Ok(())
    }

    /// Writes what is left, closes the files and puts them in place. Without any episode, the
    /// tables are written empty.
    pub fn finish(mut self) -> anyhow::Result<()> {
        self.close()
    }

    fn close(&mut self) -> anyhow::Result<()> {
        if let Some(e) = &self.failed {
            self.open = None;
            for name in [EPISODES_PARQUET, EPISODES_CSV, TOOL_CALLS_PARQUET] {
                let _ = std::fs::remove_file(tmp_of(&self.dir.join(name)));
            }
            anyhow::bail!("the episode tables were not written: {e}");
        }
        self.flush()?;
        let Some(mut open) = self.open.take() else {
            return write_tables(&mut Tables::from_episodes(&[])?, &self.dir);
        };
        open.episodes.finish()?;
        open.csv.finish()?;
        open.tool_calls.finish()?;
        drop(open);
        for name in [EPISODES_PARQUET, EPISODES_CSV, TOOL_CALLS_PARQUET] {
            let path = self.dir.join(name);
            std::fs::rename(tmp_of(&path), &path)
                .with_context(|| format!("cannot write `{}`", path.display()))?;
        }
        Ok(())
    }
}

/// Rows of `episodes.parquet` read at a time by [`scan_episode_table`].
const READ_CHUNK: usize = 65_536;

/// Columns a comparison reads that tables written before them lack (read as 0, false or empty
/// there).
const NEWER_FACT_COLUMNS: [&str; 11] = [
    "reasoning_tokens",
    "truncated",
    "timed_out",
    "ttft_ms",
    "server_error",
    "text_tool_calls",
    "replay_unmatched",
    "recovered_calls",
    "user_turns",
    "unprepared_requests",
    "found_at_k",
];

/// The columns a comparison reads (see [`EpisodeFacts`]), besides [`NEWER_FACT_COLUMNS`].
const FACT_COLUMNS: [&str; 19] = [
    "host",
    "task_id",
    "trial",
    "model",
    "kind",
    "set",
    "side",
    "infra_error",
    "success",
    "tool_calls",
    "tool_errors",
    "turns",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "judge_input_tokens",
    "judge_output_tokens",
    "latency_ms",
    "grade_failures",
];

/// Hands each row of the run's `episodes.parquet` to `each` as what a comparison reads of it:
/// polars reads only those columns, [`READ_CHUNK`] rows at a time, so memory stays flat. `None`
/// when there is no table or it is older than `episodes.jsonl` (a run cut short, or resumed since
/// its tables were written): the caller reads the JSONL then.
pub fn scan_episode_table(
    dir: &Path,
    mut each: impl FnMut(Side, &EpisodeFacts),
) -> anyhow::Result<Option<usize>> {
    let path = dir.join(EPISODES_PARQUET);
    if !table_is_current(dir) {
        return Ok(None);
    }
    let cannot = |e: PolarsError| anyhow::anyhow!("cannot read `{}`: {e}", path.display());
    let open = || File::open(&path).with_context(|| format!("cannot read `{}`", path.display()));
    let rows = ParquetReader::new(open()?).num_rows().map_err(cannot)?;
    let mut columns = FACT_COLUMNS.map(str::to_owned).to_vec();
    let schema = ParquetReader::new(open()?).schema().map_err(cannot)?;
    for newer in NEWER_FACT_COLUMNS {
        if schema.contains(newer) {
            columns.push(newer.to_owned());
        }
    }
    let mut offset = 0;
    while offset < rows {
        let mut df = ParquetReader::new(open()?)
            .with_columns(Some(columns.clone()))
            .with_slice(Some((offset, READ_CHUNK)))
            .finish()
            .map_err(cannot)?;
        df.rechunk_mut();
        facts_of(&df, &mut each).map_err(cannot)?;
        offset += df.height().max(1);
    }
    Ok(Some(rows))
}

/// Whether `episodes.parquet` holds the run's episodes: it exists and was written after the last
/// episode was appended to `episodes.jsonl` (or there is no JSONL).
pub fn table_is_current(dir: &Path) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    match (
        modified(&dir.join(EPISODES_PARQUET)),
        modified(&dir.join(super::EPISODES_JSONL)),
    ) {
        (Some(table), Some(jsonl)) => table >= jsonl,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// Writes the run's tables from its `episodes.jsonl` in one pass, a chunk at a time (nothing
/// holds them all), handing each episode to `also` on the way. Returns how many were read.
pub fn rebuild_tables(dir: &Path, mut also: impl FnMut(&Episode)) -> anyhow::Result<usize> {
    let mut tables = TableWriter::new(dir);
    let mut failed = None;
    let read = super::scan_episodes(dir, |e| {
        also(&e);
        if failed.is_none() {
            failed = tables.push(&e).err();
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    tables.finish()?;
    Ok(read)
}

/// Hands what a comparison reads of each of the run's episodes to `each`: from
/// `episodes.parquet` when it is up to date ([`scan_episode_table`]), else from
/// `episodes.jsonl`. Returns how many episodes were read.
pub fn scan_facts(dir: &Path, mut each: impl FnMut(Side, &EpisodeFacts)) -> anyhow::Result<usize> {
    if let Some(rows) = scan_episode_table(dir, &mut each)? {
        return Ok(rows);
    }
    super::scan_episodes(dir, |e| each(e.side, &EpisodeFacts::of(&e)))
}

/// Each row of a chunk of the episode table as [`EpisodeFacts`].
fn facts_of(df: &DataFrame, each: &mut impl FnMut(Side, &EpisodeFacts)) -> PolarsResult<()> {
    let text = |name: &str| df.column(name).and_then(|c| c.str().cloned());
    let count = |name: &str| df.column(name).and_then(|c| c.u32().cloned());
    let tokens = |name: &str| df.column(name).and_then(|c| c.u64().cloned());
    let (host, task, model) = (text("host")?, text("task_id")?, text("model")?);
    let (kind, set, side) = (text("kind")?, text("set")?, text("side")?);
    let (infra, failures) = (text("infra_error")?, text("grade_failures")?);
    let success = df.column("success")?.bool()?.clone();
    let (calls, errors, turns) = (count("tool_calls")?, count("tool_errors")?, count("turns")?);
    let trial = count("trial")?;
    let (input, output, total) = (
        tokens("input_tokens")?,
        tokens("output_tokens")?,
        tokens("total_tokens")?,
    );
    let (judge_in, judge_out) = (
        tokens("judge_input_tokens")?,
        tokens("judge_output_tokens")?,
    );
    let latency = df.column("latency_ms")?.f64()?.clone();
    let optional = |name: &str| df.column(name).ok();
    let reasoning = optional("reasoning_tokens")
        .map(|c| c.u64().cloned())
        .transpose()?;
    let truncated = optional("truncated")
        .map(|c| c.bool().cloned())
        .transpose()?;
    let timed_out = optional("timed_out")
        .map(|c| c.bool().cloned())
        .transpose()?;
    let ttft = optional("ttft_ms").map(|c| c.f64().cloned()).transpose()?;
    let text_calls = optional("text_tool_calls")
        .map(|c| c.u32().cloned())
        .transpose()?;
    let unmatched = optional("replay_unmatched")
        .map(|c| c.u32().cloned())
        .transpose()?;
    let recovered = optional("recovered_calls")
        .map(|c| c.u32().cloned())
        .transpose()?;
    let user_turns = optional("user_turns")
        .map(|c| c.str().cloned())
        .transpose()?;
    let unprepared = optional("unprepared_requests")
        .map(|c| c.u32().cloned())
        .transpose()?;
    let server = optional("server_error")
        .map(|c| c.str().cloned())
        .transpose()?;
    let found = optional("found_at_k")
        .map(|c| c.bool().cloned())
        .transpose()?;
    let bad = |what: &str, value: Option<&str>| polars_err!(ComputeError: "unknown {what} `{}`", value.unwrap_or("null"));
    for i in 0..df.height() {
        let side = match side.get(i) {
            Some("baseline") => Side::Baseline,
            Some("candidate") => Side::Candidate,
            other => return Err(bad("side", other)),
        };
        let kind = match kind.get(i) {
            Some("tool") => TaskKind::Tool,
            Some("no-tool") => TaskKind::NoTool,
            Some("call") => TaskKind::Call,
            other => return Err(bad("kind", other)),
        };
        let set = match set.get(i) {
            Some("regression") => TaskSet::Regression,
            Some("capability") => TaskSet::Capability,
            other => return Err(bad("set", other)),
        };
        let success = success.get(i).unwrap_or(false);
        let server_error = server.as_ref().and_then(|c| c.get(i));
        let facts = EpisodeFacts {
            host: host.get(i).unwrap_or(""),
            task_id: task.get(i).unwrap_or(""),
            trial: trial.get(i).unwrap_or(0),
            model: model.get(i).unwrap_or(""),
            kind,
            set,
            infra_error: infra.get(i).is_some(),
            error_text: infra.get(i).or(server_error),
            success,
            tool_calls: calls.get(i).unwrap_or(0),
            tool_errors: errors.get(i).unwrap_or(0),
            turns: turns.get(i).unwrap_or(0),
            input_tokens: input.get(i).unwrap_or(0),
            output_tokens: output.get(i).unwrap_or(0),
            total_tokens: total.get(i).unwrap_or(0),
            reasoning_tokens: reasoning.as_ref().and_then(|r| r.get(i)).unwrap_or(0),
            judge_input_tokens: judge_in.get(i).unwrap_or(0),
            judge_output_tokens: judge_out.get(i).unwrap_or(0),
            latency_ms: latency.get(i).unwrap_or(0.0),
            truncated: truncated.as_ref().and_then(|c| c.get(i)).unwrap_or(false),
            timed_out: timed_out.as_ref().and_then(|c| c.get(i)).unwrap_or(false),
            ttft_ms: ttft.as_ref().and_then(|c| c.get(i)),
            server_error: server_error.is_some(),
            text_tool_calls: text_calls.as_ref().and_then(|c| c.get(i)).unwrap_or(0),
            replay_unmatched: unmatched.as_ref().and_then(|c| c.get(i)).unwrap_or(0),
            recovered_calls: recovered.as_ref().and_then(|c| c.get(i)).unwrap_or(0),
            text_tool_call: None,
            turns_of_user: (user_turns.as_ref().and_then(|c| c.get(i)))
                .map(crate::episode::TurnFacts::of_json)
                .unwrap_or_default(),
            failure: std::borrow::Cow::Borrowed(match server_error {
                _ if success => "",
                Some(error) => crate::episode::server_error_line(error),
                None => failures.get(i).unwrap_or(""),
            }),
            unprepared_requests: unprepared.as_ref().and_then(|c| c.get(i)).unwrap_or(0),
            found_at_k: found.as_ref().and_then(|c| c.get(i)),
        };
        each(side, &facts);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::episode::{Side, ToolCallRecord};
    use crate::test_support::sample_episode;

    /// More than two row groups of episodes, some with tool calls.
    fn episodes() -> Vec<Episode> {
        (0..2 * ROW_GROUP + 17)
            .map(|i| {
                let side = if i % 2 == 0 {
                    Side::Baseline
                } else {
                    Side::Candidate
                };
                let mut e = sample_episode(&format!("t{}", i % 7), side, i % 3 != 0);
                e.trial = i as u32;
                e.calls = (0..i % 3)
                    .map(|k| ToolCallRecord {
                        index: k as u32,
                        tool: "search_issues".into(),
                        arguments: format!("{{\"n\":{i}}}"),
                        is_error: k == 1,
                        error_code: None,
                        error_kind: None,
                        latency_ms: 1.5,
                        result: String::new(),
                        replay_unmatched: false,
                        recovered: k == 1,
                        user_turn: 1,
                    })
                    .collect();
                e
            })
            .collect()
    }

    #[test]
    fn written_a_chunk_at_a_time_the_tables_are_those_of_all_episodes_at_once() {
        let eps = episodes();
        let (streamed, whole) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut writer = TableWriter::new(streamed.path());
        for e in &eps {
            writer.push(e).unwrap();
        }
        writer.finish().unwrap();
        write_tables(&mut Tables::from_episodes(&eps).unwrap(), whole.path()).unwrap();
        for name in [EPISODES_PARQUET, TOOL_CALLS_PARQUET] {
            let read = |dir: &Path| {
                ParquetReader::new(File::open(dir.join(name)).unwrap())
                    .finish()
                    .unwrap()
            };
            let (a, b) = (read(streamed.path()), read(whole.path()));
            assert!(a.height() > ROW_GROUP, "{name}: {}", a.height());
            assert!(a.equals_missing(&b), "{name} differs");
        }
        let csv = |dir: &Path| std::fs::read_to_string(dir.join(EPISODES_CSV)).unwrap();
        assert_eq!(csv(streamed.path()), csv(whole.path()));
        let leftovers: Vec<_> = std::fs::read_dir(streamed.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn without_episodes_the_tables_are_written_empty() {
        let dir = tempfile::tempdir().unwrap();
        TableWriter::new(dir.path()).finish().unwrap();
        let df = ParquetReader::new(File::open(dir.path().join(EPISODES_PARQUET)).unwrap())
            .finish()
            .unwrap();
        assert_eq!(df.height(), 0);
        assert!(df
            .get_column_names()
            .iter()
            .any(|c| c.as_str() == "task_id"));
    }
}
