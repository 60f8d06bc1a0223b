//! The run directory's append-only JSONL files: every finished episode is on disk at once.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::info::{check_format, FORMAT_VERSION};
use crate::episode::{Episode, Transcript};

pub const EPISODES_JSONL: &str = "episodes.jsonl";
pub const TRANSCRIPTS_JSONL: &str = "transcripts.jsonl";

/// Appends each finished episode and its transcript, one line each, flushed at once, so a run
/// killed at any moment keeps every episode that finished.
pub struct EpisodeWriter {
    episodes: File,
    transcripts: File,
}

impl EpisodeWriter {
    pub fn open(dir: &Path) -> anyhow::Result<Self> {
        Ok(Self {
            episodes: open_append(&dir.join(EPISODES_JSONL))?,
            transcripts: open_append(&dir.join(TRANSCRIPTS_JSONL))?,
        })
    }
}

/// Opens for appending, first cutting a partial last line left by a killed run (reading back
/// from the end only as far as the last line break).
fn open_append(path: &Path) -> anyhow::Result<File> {
    let mut file = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open `{}`", path.display()))?;
    let keep =
        whole_lines(&mut file).with_context(|| format!("cannot read `{}`", path.display()))?;
    if keep < file.metadata()?.len() {
        file.set_len(keep)?;
    }
    Ok(file)
}

/// The length of `file` up to and including its last line break (0 when it has none).
fn whole_lines(file: &mut File) -> std::io::Result<u64> {
    const BLOCK: u64 = 64 * 1024;
    let mut end = file.metadata()?.len();
    let mut block = vec![0u8; BLOCK as usize];
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let part = &mut block[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(part)?;
        if let Some(i) = part.iter().rposition(|&b| b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

impl EpisodeWriter {
    /// Appends a finished trial's episode and transcript, a line each.
    pub fn append(&mut self, episode: &Episode, transcript: &Transcript) -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(episode)?;
        line.push(b'\n');
        self.episodes.write_all(&line)?;
        let mut line = serde_json::to_vec(transcript)?;
        line.push(b'\n');
        self.transcripts.write_all(&line)?;
        Ok(())
    }

    /// Makes what was appended durable (at the end of a run).
    pub fn sync(&mut self) -> anyhow::Result<()> {
        self.episodes.sync_data()?;
        self.transcripts.sync_data()?;
        Ok(())
    }
}

/// Reads the episodes of a run directory. A partial last line (a killed run) is skipped; a
/// trial recorded twice keeps its first record.
pub fn read_episodes(dir: &Path) -> anyhow::Result<Vec<Episode>> {
    let mut episodes = Vec::new();
    scan_episodes(dir, |e| episodes.push(e))?;
    Ok(episodes)
}

/// Episodes handed over one at a time: a run directory's, streamed from its `episodes.jsonl`, or
/// episodes already in memory (tests, embedding).
pub trait EpisodeSource {
    /// Hands each episode to `each`; returns how many.
    fn each_episode(&self, each: &mut dyn FnMut(Episode)) -> anyhow::Result<usize>;
}

impl EpisodeSource for &Path {
    fn each_episode(&self, each: &mut dyn FnMut(Episode)) -> anyhow::Result<usize> {
        scan_episodes(self, each)
    }
}

impl EpisodeSource for PathBuf {
    fn each_episode(&self, each: &mut dyn FnMut(Episode)) -> anyhow::Result<usize> {
        scan_episodes(self, each)
    }
}

impl EpisodeSource for Vec<Episode> {
    fn each_episode(&self, each: &mut dyn FnMut(Episode)) -> anyhow::Result<usize> {
        self.iter().cloned().for_each(each);
        Ok(self.len())
    }
}

/// Hands each episode of a run directory to `each` as it is read, holding none of them: what
/// [`read_episodes`] returns, in the same order, in constant memory (a bit per trial remembers
/// which trials were seen, see [`SeenTrials`]). Returns how many episodes were handed over.
pub fn scan_episodes(dir: &Path, mut each: impl FnMut(Episode)) -> anyhow::Result<usize> {
    scan_episode_lines(dir, |_, e| each(e))
}

/// Where an episode's line is in `episodes.jsonl`: its first byte and its length (the line break
/// included).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LineAt {
    pub offset: u64,
    pub len: u32,
}

/// [`scan_episodes`], handing over where each episode's line is too (to read it again later with
/// [`read_episode_at`]).
pub(crate) fn scan_episode_lines(
    dir: &Path,
    mut each: impl FnMut(LineAt, Episode),
) -> anyhow::Result<usize> {
    let path: PathBuf = dir.join(EPISODES_JSONL);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e).with_context(|| format!("cannot read `{}`", path.display())),
    };
    let mut reader = BufReader::with_capacity(READ_BUFFER, file);
    let mut seen = SeenTrials::default();
    let (mut line, mut number, mut handed, mut offset) = (String::new(), 0usize, 0usize, 0u64);
    // A line that did not parse: an error unless it turns out to be the last one.
    let mut bad: Option<(usize, serde_json::Error)> = None;
    loop {
        line.clear();
        let read = reader
            .read_line(&mut line)
            .with_context(|| format!("cannot read `{}`", path.display()))?;
        if read == 0 {
            break;
        }
        let at = LineAt {
            offset,
            len: u32::try_from(read).context("an episode line of 4 GiB or more")?,
        };
        offset += read as u64;
        number += 1;
        if line.trim().is_empty() {
            continue;
        }
        if let Some((n, e)) = bad.take() {
            anyhow::bail!("`{}` line {n}: not an episode record: {e}", path.display());
        }
        match serde_json::from_str::<Episode>(&line) {
            Ok(e) => {
                if e.format_version != FORMAT_VERSION {
                    check_format(&path, Some(&e.format_version))?;
                }
                if seen.insert(&e) {
                    handed += 1;
                    each(at, e);
                }
            }
            Err(e) => {
                // A line of a newer format is refused as such, even as the last line.
                check_format(&path, version_of(&line).as_deref())?;
                bad = Some((number, e));
            }
        }
    }
    Ok(handed)
}

/// The `format_version` of a line that is not an episode this build reads, if it says one.
fn version_of(line: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Version {
        format_version: Option<String>,
    }
    serde_json::from_str::<Version>(line).ok()?.format_version
}

/// The episode whose line [`scan_episode_lines`] found at `at` in `file` (an `episodes.jsonl`).
pub(crate) fn read_episode_at(
    file: &File,
    at: LineAt,
    buffer: &mut Vec<u8>,
) -> anyhow::Result<Episode> {
    use std::os::unix::fs::FileExt;
    buffer.resize(at.len as usize, 0);
    file.read_exact_at(buffer, at.offset)?;
    Ok(serde_json::from_slice(buffer)?)
}

/// Bytes read from `episodes.jsonl` at a time (the kernel reads ahead besides).
const READ_BUFFER: usize = 128 * 1024;

/// Trial indexes below this are remembered as bits (at most 128 KiB per host × task × side);
/// larger ones, which no run numbers densely, by their hash.
const DENSE_TRIALS: u32 = 1 << 20;

/// The trials a scan has seen (a trial appears once, even if its line was written twice): per
/// host × task × side, a bit per trial index, instead of a 16-byte hash per trial in a hash set
/// (2.2 MB at 100k episodes, and twice that while the set grew).
#[derive(Default)]
struct SeenTrials {
    dense: std::collections::HashMap<u128, bit_set::BitSet>,
    sparse: std::collections::HashSet<u128>,
}

impl SeenTrials {
    /// Whether `e`'s trial is new (and now seen).
    fn insert(&mut self, e: &Episode) -> bool {
        if e.trial < DENSE_TRIALS {
            let trials = self.dense.entry(cell_key(e, None)).or_default();
            trials.insert(e.trial as usize)
        } else {
            self.sparse.insert(cell_key(e, Some(e.trial)))
        }
    }
}

/// A host × task × side (and trial index, if given) as a 128-bit hash.
fn cell_key(e: &Episode, trial: Option<u32>) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for part in [e.host.as_bytes(), &[0xff], e.task_id.as_bytes(), &[0xff]] {
        h.update(part);
    }
    h.update(e.side.as_str().as_bytes());
    if let Some(trial) = trial {
        h.update(&trial.to_le_bytes());
    }
    h.digest128()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `open_append` on a file holding `content`: what is left of it.
    fn after_open(content: &[u8]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.jsonl");
        std::fs::write(&path, content).unwrap();
        drop(open_append(&path).unwrap());
        std::fs::read(&path).unwrap()
    }

    #[test]
    fn a_partial_last_line_is_cut_and_whole_lines_are_kept() {
        assert_eq!(
            after_open(b"{\"a\":1}\n{\"b\":2}\n"),
            b"{\"a\":1}\n{\"b\":2}\n"
        );
        assert_eq!(after_open(b"{\"a\":1}\n{\"b\":"), b"{\"a\":1}\n");
        assert_eq!(after_open(b"{\"a\":"), b"");
        assert_eq!(after_open(b""), b"");
        // A partial line longer than the block read back at a time, after whole lines that are too.
        let long = |c: u8| vec![c; 200_000];
        let mut content = long(b'a');
        content.push(b'\n');
        let whole = content.clone();
        content.extend(long(b'b'));
        assert_eq!(after_open(&content), whole);
    }

    #[test]
    fn a_trial_is_seen_once_per_host_task_and_side_at_any_index() {
        use crate::episode::Side;
        use crate::test_support::sample_episode;
        let at = |task: &str, side: Side, host: &str, trial: u32| {
            let mut e = sample_episode(task, side, true);
            e.host = host.into();
            e.trial = trial;
            e
        };
        let mut seen = SeenTrials::default();
        for trial in [
            0,
            5,
            63,
            64,
            4_000,
            DENSE_TRIALS - 1,
            DENSE_TRIALS,
            u32::MAX,
        ] {
            let e = at("t", Side::Baseline, "h", trial);
            assert!(seen.insert(&e), "trial {trial} is new");
            assert!(!seen.insert(&e), "trial {trial} is seen");
            // The same index elsewhere is another trial.
            assert!(seen.insert(&at("t", Side::Candidate, "h", trial)));
            assert!(seen.insert(&at("u", Side::Baseline, "h", trial)));
            assert!(seen.insert(&at("t", Side::Baseline, "g", trial)));
        }
        assert!(seen.insert(&at("t", Side::Baseline, "h", 6)));
        // Indexes past the dense range are kept by their hash, not as bits.
        assert_eq!(seen.sparse.len(), 2 * 4);
        assert_eq!(seen.dense.len(), 4);
    }
}
