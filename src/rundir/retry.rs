//! Trials that ended as infrastructure errors, set aside when a run is resumed: their episode
//! lines move from `episodes.jsonl` to `retried.jsonl` (and their transcripts to
//! `retried-transcripts.jsonl`), so that the resumed run runs them again and each trial keeps one
//! record, while nothing recorded is thrown away.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::jsonl::{EPISODES_JSONL, TRANSCRIPTS_JSONL};
use crate::episode::{Episode, Side};

/// Episodes set aside by resumes of the run, oldest first: trials that ended as infrastructure
/// errors.
pub const RETRIED_JSONL: &str = "retried.jsonl";
/// The transcripts of the episodes in [`RETRIED_JSONL`].
pub const RETRIED_TRANSCRIPTS_JSONL: &str = "retried-transcripts.jsonl";

/// A trial across invocations: host, task, trial index and side.
type TrialId = (String, String, u32, Side);

fn id_of(e: &Episode) -> TrialId {
    (e.host.clone(), e.task_id.clone(), e.trial, e.side)
}

/// Moves the episodes that ended as infrastructure errors out of `episodes.jsonl` (into
/// `retried.jsonl`, appended) and the transcripts of their trials out of `transcripts.jsonl`
/// (into `retried-transcripts.jsonl`); a trial that also has a record without one keeps it.
/// Each file is rewritten whole and renamed into place, so a run killed meanwhile leaves either
/// the old file or the new one. Returns how many episodes were set aside.
pub fn set_aside_infra_errors(dir: &Path) -> anyhow::Result<usize> {
    let episodes = dir.join(EPISODES_JSONL);
    let mut kept_ids = HashSet::new();
    let mut aside_ids = HashSet::new();
    let aside = split_lines(&episodes, dir.join(RETRIED_JSONL), |line| {
        let Ok(e) = serde_json::from_str::<Episode>(line) else {
            // Not an episode this build reads (a partial last line): left where it is.
            return false;
        };
        let infra = e.infra_error.is_some();
        match infra {
            true => aside_ids.insert(id_of(&e)),
            false => kept_ids.insert(id_of(&e)),
        };
        infra
    })?;
    if aside == 0 {
        return Ok(0);
    }
    // Transcripts of trials left without an episode go with their episodes.
    let rerun: HashSet<TrialId> = aside_ids.difference(&kept_ids).cloned().collect();
    split_lines(
        &dir.join(TRANSCRIPTS_JSONL),
        dir.join(RETRIED_TRANSCRIPTS_JSONL),
        |line| transcript_id(line).is_some_and(|id| rerun.contains(&id)),
    )?;
    Ok(aside)
}

/// Reads the episodes that resumes of the run in `dir` set aside, oldest first, handing each to
/// `each`. None when the file is absent.
pub fn scan_retried(dir: &Path, mut each: impl FnMut(Episode)) -> anyhow::Result<()> {
    let path = dir.join(RETRIED_JSONL);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("cannot read `{}`", path.display())),
    };
    for line in BufReader::new(file).lines() {
        let line = line.with_context(|| format!("cannot read `{}`", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        // A line cut by a kill while it was appended is skipped, as in `episodes.jsonl`.
        // A set-aside line is only history: one that does not read does not stop a run.
        if let Ok(e) = serde_json::from_str::<Episode>(&line) {
            each(e);
        }
    }
    Ok(())
}

/// The trial a transcript line is of, read without its messages.
fn transcript_id(line: &str) -> Option<TrialId> {
    #[derive(serde::Deserialize)]
    struct Key {
        task_id: String,
        side: Side,
        host: String,
        trial: u32,
    }
    let k: Key = serde_json::from_str(line).ok()?;
    Some((k.host, k.task_id, k.trial, k.side))
}

/// Splits the lines of `path` by `out`: those it picks are appended to `to` (made durable
/// first), the others written to a new file renamed over `path`. Returns how many moved; with
/// none, nothing is written.
fn split_lines(
    path: &Path,
    to: PathBuf,
    mut out: impl FnMut(&str) -> bool,
) -> anyhow::Result<usize> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e).with_context(|| format!("cannot read `{}`", path.display())),
    };
    let temporary = path.with_extension("jsonl.rewrite");
    let context = |what: &str, p: &Path| format!("cannot {what} `{}`", p.display());
    let mut kept =
        BufWriter::new(File::create(&temporary).with_context(|| context("write", &temporary))?);
    let mut moved: Option<BufWriter<File>> = None;
    let mut count = 0;
    let mut reader = BufReader::new(file);
    let mut line = String::new();
    loop {
        line.clear();
        let read = reader
            .read_line(&mut line)
            .with_context(|| context("read", path))?;
        if read == 0 {
            break;
        }
        if line.ends_with('\n') && out(line.trim_end()) {
            if moved.is_none() {
                let f = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&to)
                    .with_context(|| context("write", &to))?;
                moved = Some(BufWriter::new(f));
            }
            let w = moved.as_mut().expect("opened above");
            w.write_all(line.as_bytes())
                .with_context(|| context("write", &to))?;
            count += 1;
        } else {
            kept.write_all(line.as_bytes())
                .with_context(|| context("write", &temporary))?;
        }
    }
    if count == 0 {
        drop(kept);
        let _ = std::fs::remove_file(&temporary);
        return Ok(0);
    }
    if let Some(w) = moved {
        let f = w
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| context("write", &to))?;
        f.sync_data().with_context(|| context("write", &to))?;
    }
    let f = kept
        .into_inner()
        .map_err(|e| e.into_error())
        .with_context(|| context("write", &temporary))?;
    f.sync_data()
        .with_context(|| context("write", &temporary))?;
    std::fs::rename(&temporary, path).with_context(|| context("replace", path))?;
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::episode::Transcript;
    use crate::rundir::{read_episodes, EpisodeWriter};
    use crate::test_support::sample_episode;

    fn transcript(e: &Episode) -> Transcript {
        Transcript {
            run_id: "r".into(),
            task_id: e.task_id.clone(),
            side: e.side,
            host: e.host.clone(),
            trial: e.trial,
            seed: 0,
            tools: Vec::new().into(),
            messages: Vec::new(),
            judge: None,
        }
    }

    fn lines(path: &Path) -> usize {
        std::fs::read_to_string(path)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    #[test]
    fn infra_errors_move_aside_with_their_transcripts_and_the_rest_stays() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = EpisodeWriter::open(dir.path()).unwrap();
        let mut all = Vec::new();
        for (trial, infra) in [(0, false), (1, true), (2, false), (3, true)] {
            let mut e = sample_episode("t", Side::Baseline, !infra);
            e.trial = trial;
            e.infra_error = infra.then(|| "connection refused".to_owned());
            writer.append(&e, &transcript(&e)).unwrap();
            all.push(e);
        }
        // Trial 3 was also recorded whole (a duplicate line): it keeps that record.
        let mut again = all[3].clone();
        again.infra_error = None;
        writer.append(&again, &transcript(&again)).unwrap();
        drop(writer);

        assert_eq!(set_aside_infra_errors(dir.path()).unwrap(), 2);
        let left = read_episodes(dir.path()).unwrap();
        let trials: Vec<u32> = left.iter().map(|e| e.trial).collect();
        assert_eq!(trials, [0, 2, 3]);
        assert!(left.iter().all(|e| e.infra_error.is_none()));
        let mut retried = Vec::new();
        scan_retried(dir.path(), |e| retried.push(e.trial)).unwrap();
        assert_eq!(retried, [1, 3]);
        // Trial 1's transcript moved; trial 3 keeps both of its transcripts.
        assert_eq!(lines(&dir.path().join(TRANSCRIPTS_JSONL)), 4);
        assert_eq!(lines(&dir.path().join(RETRIED_TRANSCRIPTS_JSONL)), 1);
        // Again: nothing left to set aside, nothing rewritten.
        assert_eq!(set_aside_infra_errors(dir.path()).unwrap(), 0);
        assert_eq!(lines(&dir.path().join(RETRIED_JSONL)), 2);
        assert!(!dir.path().join("episodes.jsonl.rewrite").exists());
    }

    #[test]
    fn a_partial_last_line_stays_where_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let mut e = sample_episode("t", Side::Candidate, false);
        e.infra_error = Some("dns error".into());
        let mut text = serde_json::to_string(&e).unwrap();
        text.push('\n');
        text.push_str("{\"run_id\":");
        std::fs::write(dir.path().join(EPISODES_JSONL), &text).unwrap();
        assert_eq!(set_aside_infra_errors(dir.path()).unwrap(), 1);
        let left = std::fs::read_to_string(dir.path().join(EPISODES_JSONL)).unwrap();
        assert_eq!(left, "{\"run_id\":");
    }
}
