//! How a check shows the runs it starts (the smoke stage's call tasks, the evaluation): their
//! progress and notes on stderr as a stage's work, and no verdict of their own: the check's
//! stage lines and its last line are the only verdicts on its console.

use crate::job::{Face, Finished, Note, RunJob};
use crate::runner::EventSink;

/// The check's face over the command line's, for a run inside a check.
pub(super) struct Nested<'a>(pub &'a dyn Face);

impl Face for Nested<'_> {
    fn notes(&self, notes: &[Note]) {
        // What a nested run decided (the trigger's selection, the diff's table) is the stage's
        // work, not the check's result: stderr, with the progress.
        let moved: Vec<Note> = notes
            .iter()
            .map(|note| match note {
                Note::Text(text) => Note::warn(text.trim_end().to_owned()),
                Note::Warn(line) => Note::warn(line.clone()),
            })
            .collect();
        self.0.notes(&moved);
    }

    fn starting(&self, job: &RunJob) {
        self.0.starting(job);
    }

    fn sinks(&self) -> Vec<Box<dyn EventSink>> {
        self.0.sinks()
    }

    /// Nothing: the stage's line says what the run came to.
    fn finished(&self, _finished: &Finished) {}
}
