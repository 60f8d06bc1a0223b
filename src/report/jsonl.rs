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
    let path: PathBuf = dir.join(EPISODES_JSONL);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read `{}`", path.display())),
    };
    let mut seen = std::collections::HashSet::new();
    let mut episodes = Vec::new();
    let lines: Vec<String> = BufReader::new(file).lines().collect::<Result<_, _>>()?;
    let last = lines.len().saturating_sub(1);
    for (n, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Episode>(line) {
            Ok(e) => {
                if seen.insert(crate::runner::DoneKey::of(&e)) {
                    episodes.push(e);
                }
            }
            Err(_) if n == last => break,
            Err(e) => {
                anyhow::bail!(
                    "`{}` line {}: not an episode record: {e}",
                    path.display(),
                    n + 1
                )
            }
        }
    }
    Ok(episodes)
}
