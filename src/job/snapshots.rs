//! `result_snapshot` in a run: a normal run refuses to start while a snapshot is missing (so CI
//! never passes having compared nothing); `mcpeval run --update-snapshots` compares none and
//! writes each from the baseline's answer once the trials are done.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::episode::Side;
use crate::grade::{same_text, short_diff};
use crate::runner::{EventSink, RunEvent, RunEventKind};
use crate::suite::{Diagnostic, Stored, Suite, SuiteError};

/// Readies the suite's snapshots for a run: with `update`, every one is to be written (nothing
/// is compared); without, a missing one stops the run before its first trial (exit 2), naming
/// the file and the flag that writes it.
pub fn prepare(suite: &mut Suite, update: bool) -> Result<(), SuiteError> {
    let mut missing = Vec::new();
    for task in &mut suite.tasks {
        let Some(snapshot) = &mut task.call_expect.result_snapshot else {
            continue;
        };
        if update {
            snapshot.stored = Stored::Updating;
        } else if snapshot.stored == Stored::Missing {
            let file = task.source.rsplit_once(':').map_or("", |(file, _)| file);
            missing.push(Diagnostic {
                file: PathBuf::from(file),
                line: snapshot.at.0,
                column: snapshot.at.1,
                message: format!(
                    "task `{}`: no snapshot `{}` yet: run `mcpeval run --update-snapshots` to \
                     write it from the baseline's answer",
                    task.id,
                    snapshot.file.display()
                ),
            });
        }
    }
    match missing.is_empty() {
        true => Ok(()),
        false => Err(SuiteError::Invalid(missing)),
    }
}

/// The baseline's answers of a run with `--update-snapshots`, written to their snapshot files
/// when the run's events end. Clones share what they hold: keep one to read [`Self::notes`].
#[derive(Clone, Default)]
pub struct SnapshotWriter {
    book: Arc<Mutex<Book>>,
}

#[derive(Default)]
struct Book {
    /// The snapshot file of each task that has one.
    files: BTreeMap<String, PathBuf>,
    /// Per file, the baseline's answers: (trial, task, text).
    answers: BTreeMap<PathBuf, Vec<(u32, String, String)>>,
    /// What was written, or why not.
    notes: Vec<String>,
}

impl SnapshotWriter {
    /// A writer of the snapshots of `suite`'s tasks.
    pub fn new(suite: &Suite) -> Self {
        let files = (suite.tasks.iter())
            .filter_map(|t| {
                let snapshot = t.call_expect.result_snapshot.as_ref()?;
                Some((t.id.clone(), snapshot.file.clone()))
            })
            .collect();
        let book = Book {
            files,
            ..Book::default()
        };
        Self {
            book: Arc::new(Mutex::new(book)),
        }
    }

    /// One line per snapshot: written, unchanged, or why it was not written.
    pub fn notes(&self) -> Vec<String> {
        self.book
            .lock()
            .map(|b| b.notes.clone())
            .unwrap_or_default()
    }
}

impl EventSink for SnapshotWriter {
    fn handle(&mut self, event: &RunEvent) -> anyhow::Result<()> {
        let RunEventKind::TrialFinished { episode, .. } = &event.kind else {
            return Ok(());
        };
        let (Side::Baseline, Some(text), None) =
            (episode.side, &episode.final_answer, &episode.infra_error)
        else {
            return Ok(());
        };
        let mut book = self.book.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        if let Some(file) = book.files.get(&episode.task_id).cloned() {
            let answer = (episode.trial, episode.task_id.clone(), text.clone());
            book.answers.entry(file).or_default().push(answer);
        }
        Ok(())
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        let mut book = self.book.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        let mut files: Vec<PathBuf> = book.files.values().cloned().collect();
        files.sort();
        files.dedup();
        for file in files {
            let mut answers = book.answers.remove(&file).unwrap_or_default();
            answers.sort();
            let note = write_one(&file, &answers);
            book.notes.push(note);
        }
        Ok(())
    }
}

/// Writes `file` from the first of the baseline's `answers` when they all agree; the line says
/// what was done.
fn write_one(file: &Path, answers: &[(u32, String, String)]) -> String {
    let shown = file.display();
    let Some((trial, task, text)) = answers.first() else {
        return format!(
            "warning: snapshot `{shown}` not written: the baseline gave no answer (its trials \
             failed or did not run)"
        );
    };
    if let Some((other, _, differs)) = answers.iter().find(|(_, _, t)| !same_text(text, t)) {
        return format!(
            "warning: snapshot `{shown}` not written: the baseline's trials answered \
             differently (trial {trial} against trial {other}: {}); a snapshot needs an answer \
             that repeats",
            short_diff(text, differs, 2)
        );
    }
    if let Ok(old) = std::fs::read_to_string(file) {
        if old == format!("{}\n", text.trim_end()) {
            return format!("snapshot `{shown}` unchanged");
        }
    }
    let written = file
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(file, format!("{}\n", text.trim_end())));
    match written {
        Ok(()) => format!(
            "wrote snapshot `{shown}` from the baseline's answer (task `{task}`, trial {trial})"
        ),
        Err(e) => format!("error: cannot write snapshot `{shown}`: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(trial: u32, text: &str) -> (u32, String, String) {
        (trial, "t".to_owned(), text.to_owned())
    }

    #[test]
    fn agreeing_answers_are_written_once_and_then_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("__snapshots__/calls/t.txt");
        let answers = [answer(0, "a\nb\n\n"), answer(1, "a\nb")];
        let note = write_one(&file, &answers);
        assert!(note.starts_with("wrote snapshot"), "{note}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "a\nb\n");
        assert!(write_one(&file, &answers).ends_with("unchanged"));
    }

    #[test]
    fn disagreeing_or_missing_answers_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.txt");
        let note = write_one(&file, &[answer(0, "a"), answer(1, "b")]);
        assert!(
            note.contains("answered differently (trial 0 against trial 1: -1 \"a\", +1 \"b\")"),
            "{note}"
        );
        assert!(write_one(&file, &[]).contains("the baseline gave no answer"));
        assert!(!file.exists());
    }
}
