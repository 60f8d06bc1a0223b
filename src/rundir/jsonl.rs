//! The run directory's append-only JSONL files: every finished episode is on disk at once.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::episode::Episode;
use crate::runner::{EventSink, RunEvent, RunEventKind};

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

/// Opens for appending, first cutting a partial last line left by a killed run.
fn open_append(path: &Path) -> anyhow::Result<File> {
    let mut file = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open `{}`", path.display()))?;
    let len = file.metadata()?.len();
    if len > 0 {
        let mut content = Vec::with_capacity(len as usize);
        file.seek(SeekFrom::Start(0))?;
        file.read_to_end(&mut content)?;
        if content.last() != Some(&b'\n') {
            let keep = content
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            file.set_len(keep as u64)?;
        }
    }
    Ok(file)
}

impl EventSink for EpisodeWriter {
    fn handle(&mut self, event: &RunEvent) -> anyhow::Result<()> {
        if let RunEventKind::TrialFinished {
            episode,
            transcript,
        } = &event.kind
        {
            let mut line = serde_json::to_vec(episode.as_ref())?;
            line.push(b'\n');
            self.episodes.write_all(&line)?;
            let mut line = serde_json::to_vec(transcript.as_ref())?;
            line.push(b'\n');
            self.transcripts.write_all(&line)?;
        }
        Ok(())
    }

    fn finish(&mut self) -> anyhow::Result<()> {
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
/// [`read_episodes`] returns, in the same order, in constant memory (16 bytes per trial remember
/// which trials were seen). Returns how many episodes were handed over.
pub fn scan_episodes(dir: &Path, mut each: impl FnMut(Episode)) -> anyhow::Result<usize> {
    let path: PathBuf = dir.join(EPISODES_JSONL);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e).with_context(|| format!("cannot read `{}`", path.display())),
    };
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut seen = std::collections::HashSet::new();
    let (mut line, mut number, mut handed) = (String::new(), 0usize, 0usize);
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
        number += 1;
        if line.trim().is_empty() {
            continue;
        }
        if let Some((n, e)) = bad.take() {
            anyhow::bail!("`{}` line {n}: not an episode record: {e}", path.display());
        }
        match serde_json::from_str::<Episode>(&line) {
            Ok(e) => {
                if seen.insert(trial_key(&e)) {
                    handed += 1;
                    each(e);
                }
            }
            Err(e) => bad = Some((number, e)),
        }
    }
    Ok(handed)
}

/// A trial's identity (host, task, side, trial index) as a 128-bit hash.
fn trial_key(e: &Episode) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for part in [e.host.as_bytes(), &[0xff], e.task_id.as_bytes(), &[0xff]] {
        h.update(part);
    }
    h.update(e.side.as_str().as_bytes());
    h.update(&e.trial.to_le_bytes());
    h.digest128()
}
