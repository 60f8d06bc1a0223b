//! The transcripts `report.html` shows: which trials of each task to pair (the most telling
//! first), read from the run directory's `episodes.jsonl` and `transcripts.jsonl` in one pass
//! each, keeping only the chosen trials in memory.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::Deserialize;

use crate::episode::{Side, Transcript};
use crate::grade::Grade;
use crate::host::ToolSpec;
use crate::report::export::Report;
use crate::rundir::{EPISODES_JSONL, TRANSCRIPTS_JSONL};

/// Trial pairs shown per task and host, when the run has at most [`MANY_TASKS`] of them.
pub const PAIRS_PER_TASK: usize = 3;
/// Above this many task × host cells, one pair each keeps the page a sensible size.
pub const MANY_TASKS: usize = 50;

/// A task × host.
pub type Cell = (String, String);

/// What one side's episode of a trial came to (from `episodes.jsonl`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TrialFacts {
    #[serde(default)]
    pub run_id: String,
    pub task_id: String,
    pub host: String,
    pub side: Side,
    pub trial: u32,
    pub success: bool,
    pub infra_error: Option<String>,
    pub tool_calls: u32,
    pub total_tokens: u64,
    #[serde(default)]
    pub grade: Grade,
}

/// Why a trial was picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pick {
    /// The baseline passed and the candidate failed: a regression caught in the act.
    CandidateFailed,
    /// The outcomes differ the other way.
    CandidatePassed,
    /// Both sides failed.
    BothFailed,
    /// Both passed.
    BothPassed,
}

impl Pick {
    fn of(baseline: &TrialFacts, candidate: &TrialFacts) -> Self {
        match (baseline.success, candidate.success) {
            (true, false) => Pick::CandidateFailed,
            (false, true) => Pick::CandidatePassed,
            (false, false) => Pick::BothFailed,
            (true, true) => Pick::BothPassed,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Pick::CandidateFailed => "baseline passed, candidate failed",
            Pick::CandidatePassed => "baseline failed, candidate passed",
            Pick::BothFailed => "both failed",
            Pick::BothPassed => "both passed",
        }
    }
}

/// A baseline trial and the candidate trial of the same index.
#[derive(Debug, Clone, Default)]
pub struct Pair {
    pub trial: u32,
    pub pick: Option<Pick>,
    /// Indexed by side: 0 baseline, 1 candidate.
    pub facts: [Option<TrialFacts>; 2],
    pub transcripts: [Option<Transcript>; 2],
}

/// What the page shows of the run directory's transcripts.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Said on the page: a file that is missing or has unreadable lines.
    pub notes: Vec<String>,
    pub pairs: BTreeMap<Cell, Vec<Pair>>,
    /// The tools each host's model was shown, per side (the first transcript's).
    pub tools: BTreeMap<String, [Option<Vec<ToolSpec>>; 2]>,
}

fn index(side: Side) -> usize {
    match side {
        Side::Baseline => 0,
        Side::Candidate => 1,
    }
}

/// Which run each side's records must come from: with `compare --against` the baseline is
/// another run's; otherwise every record in the directory belongs to the run.
struct Runs {
    ids: Option<[String; 2]>,
}

impl Runs {
    fn of(report: &Report) -> Self {
        let (base, cand) = (&report.baseline_info().run_id, &report.info.run_id);
        Self {
            ids: (base != cand).then(|| [base.clone(), cand.clone()]),
        }
    }

    fn wants(&self, side: Side, run_id: &str) -> bool {
        self.ids
            .as_ref()
            .is_none_or(|ids| ids[index(side)] == run_id)
    }
}

/// Reads what the page needs from `dir`. Never fails: what cannot be read becomes a note.
pub fn load(dir: &Path, report: &Report) -> Loaded {
    let runs = Runs::of(report);
    let cells = report.comparison.tasks.len();
    let per_task = if cells > MANY_TASKS {
        1
    } else {
        PAIRS_PER_TASK
    };
    let mut loaded = Loaded::default();
    loaded.pairs = read_facts(
        &dir.join(EPISODES_JSONL),
        &runs,
        per_task,
        &mut loaded.notes,
    );
    read_transcripts(&dir.join(TRANSCRIPTS_JSONL), &runs, &mut loaded);
    loaded
}

/// Every line of a JSONL file parsed as `T`, to `each`. A partial last line (a run still
/// writing, or killed) is skipped silently; other bad lines are skipped and the first is noted.
fn each_line<T: serde::de::DeserializeOwned>(
    path: &Path,
    what: &str,
    notes: &mut Vec<String>,
    mut each: impl FnMut(T, &str),
) {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) => {
            notes.push(format!("cannot read `{}`: {e}", path.display()));
            return;
        }
    };
    let mut bad: Option<String> = None;
    let mut bad_lines = 0usize;
    let mut lines = BufReader::new(file).lines().enumerate().peekable();
    while let Some((n, line)) = lines.next() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                notes.push(format!(
                    "cannot read `{}` at line {}: {e}",
                    path.display(),
                    n + 1
                ));
                return;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<T>(&line) {
            Ok(record) => each(record, &line),
            Err(_) if lines.peek().is_none() => {}
            Err(e) => {
                bad_lines += 1;
                bad.get_or_insert_with(|| {
                    format!("`{}` line {}: not {what}: {e}", path.display(), n + 1)
                });
            }
        }
    }
    if let Some(first) = bad {
        notes.push(if bad_lines > 1 {
            format!("{first} ({} more bad lines skipped)", bad_lines - 1)
        } else {
            first
        });
    }
}

/// Picks up to `per_task` trials of each cell that ran on both sides without an infrastructure
/// error, the most telling first: a candidate failure where the baseline passed, then any other
/// difference, then failures, then the first trial.
///
/// It picks them as episode records arrive, holding per cell only the trials seen (for
/// the first-record-wins rule), the half pairs still waiting for their other side and the
/// `per_task` most telling pairs so far — not every trial's facts, so a run of a million
/// episodes costs a few bytes per trial.
struct Chooser {
    per_task: usize,
    cells: BTreeMap<Cell, CellChoice>,
}

#[derive(Default)]
struct CellChoice {
    seen: [std::collections::HashSet<u32>; 2],
    waiting: std::collections::HashMap<u32, [Option<TrialFacts>; 2]>,
    chosen: Vec<Pair>,
}

impl Chooser {
    fn new(per_task: usize) -> Self {
        Self {
            per_task,
            cells: BTreeMap::new(),
        }
    }

    fn add(&mut self, f: TrialFacts) {
        let key = (f.task_id.clone(), f.host.clone());
        let cell = self.cells.entry(key).or_default();
        let (side, trial) = (index(f.side), f.trial);
        // A trial recorded twice keeps its first record, as `read_episodes` does.
        if !cell.seen[side].insert(trial) {
            return;
        }
        let slot = cell.waiting.entry(trial).or_default();
        slot[side] = Some(f);
        if slot.iter().any(Option::is_none) {
            return;
        }
        let [b, c] = cell.waiting.remove(&trial).expect("both sides are there");
        if cell.waiting.is_empty() {
            // A map keeps its capacity: one side's trials all read before the other's (a merged
            // or synthetic run) would otherwise hold a table that size for every task.
            cell.waiting = std::collections::HashMap::new();
        }
        let (b, c) = (b.expect("checked"), c.expect("checked"));
        if b.infra_error.is_some() || c.infra_error.is_some() {
            return;
        }
        cell.chosen.push(Pair {
            trial,
            pick: Some(Pick::of(&b, &c)),
            facts: [Some(b), Some(c)],
            transcripts: [None, None],
        });
        cell.chosen.sort_by_key(|p| (p.pick, p.trial));
        cell.chosen.truncate(self.per_task);
    }

    fn finish(self) -> BTreeMap<Cell, Vec<Pair>> {
        self.cells
            .into_iter()
            .map(|(cell, choice)| (cell, choice.chosen))
            .collect()
    }
}

fn read_facts(
    path: &Path,
    runs: &Runs,
    per_task: usize,
    notes: &mut Vec<String>,
) -> BTreeMap<Cell, Vec<Pair>> {
    let mut chooser = Chooser::new(per_task);
    each_line::<TrialFacts>(path, "an episode record", notes, |f, _| {
        if runs.wants(f.side, &f.run_id) {
            chooser.add(f);
        }
    });
    chooser.finish()
}

/// The identity of a transcript line, read before the whole line is kept.
#[derive(Deserialize)]
struct Key {
    #[serde(default)]
    run_id: String,
    task_id: String,
    host: String,
    side: Side,
    trial: u32,
}

fn read_transcripts(path: &Path, runs: &Runs, loaded: &mut Loaded) {
    let mut notes = Vec::new();
    let pairs = &mut loaded.pairs;
    let tools = &mut loaded.tools;
    each_line::<Key>(path, "a transcript record", &mut notes, |key, line| {
        if !runs.wants(key.side, &key.run_id) {
            return;
        }
        let side = index(key.side);
        let seen_tools = tools.entry(key.host.clone()).or_default();
        let wanted = pairs
            .get_mut(&(key.task_id, key.host))
            .and_then(|ps| ps.iter_mut().find(|p| p.trial == key.trial))
            .filter(|p| p.transcripts[side].is_none());
        if wanted.is_none() && seen_tools[side].is_some() {
            return;
        }
        let Ok(mut transcript) = serde_json::from_str::<Transcript>(line) else {
            return;
        };
        // The page shows the tools once per host and side: a kept transcript needs no copy.
        let shown = std::mem::take(&mut transcript.tools).to_vec();
        if seen_tools[side].is_none() {
            seen_tools[side] = Some(shown);
        }
        if let Some(pair) = wanted {
            pair.transcripts[side] = Some(transcript);
        }
    });
    loaded.notes.extend(notes);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    type FactsByCell = BTreeMap<Cell, BTreeMap<u32, [Option<TrialFacts>; 2]>>;

    /// The pairs [`Chooser`] picks from facts laid out by cell and trial.
    fn choose(facts: FactsByCell, per_task: usize) -> BTreeMap<Cell, Vec<Pair>> {
        let mut chooser = Chooser::new(per_task);
        for (cell, trials) in facts {
            chooser.cells.entry(cell).or_default();
            for side in trials.into_values().flatten().flatten() {
                chooser.add(side);
            }
        }
        chooser.finish()
    }

    pub(crate) fn facts(task: &str, side: Side, trial: u32, success: bool) -> TrialFacts {
        TrialFacts {
            run_id: "r".into(),
            task_id: task.into(),
            host: "sim".into(),
            side,
            trial,
            success,
            infra_error: None,
            tool_calls: 1,
            total_tokens: 100,
            grade: Grade::default(),
        }
    }

    fn cell_of(rows: &[(u32, bool, bool)]) -> FactsByCell {
        let mut by = FactsByCell::new();
        for &(trial, b, c) in rows {
            let t = by
                .entry(("t".into(), "sim".into()))
                .or_default()
                .entry(trial)
                .or_default();
            t[0] = Some(facts("t", Side::Baseline, trial, b));
            t[1] = Some(facts("t", Side::Candidate, trial, c));
        }
        by
    }

    #[test]
    fn the_most_telling_trials_come_first() {
        let by = cell_of(&[
            (0, true, true),
            (1, false, false),
            (2, true, false),
            (3, false, true),
            (4, true, false),
        ]);
        let chosen = choose(by, 3);
        let trials: Vec<u32> = chosen[&("t".to_owned(), "sim".to_owned())]
            .iter()
            .map(|p| p.trial)
            .collect();
        assert_eq!(trials, vec![2, 4, 3]);
        let all_pass = choose(cell_of(&[(1, true, true), (0, true, true)]), 3);
        let pairs = &all_pass[&("t".to_owned(), "sim".to_owned())];
        assert_eq!(
            pairs[0].trial, 0,
            "without a failure, the first trial leads"
        );
        assert_eq!(pairs[0].pick, Some(Pick::BothPassed));
    }

    #[test]
    fn infra_errors_and_one_sided_trials_are_not_paired() {
        let mut by = cell_of(&[(0, true, false), (1, true, false)]);
        let trials = by.get_mut(&("t".to_owned(), "sim".to_owned())).unwrap();
        trials.get_mut(&0).unwrap()[1].as_mut().unwrap().infra_error = Some("HTTP 503".into());
        trials.get_mut(&1).unwrap()[0] = None;
        trials.insert(
            2,
            [
                Some(facts("t", Side::Baseline, 2, true)),
                Some(facts("t", Side::Candidate, 2, true)),
            ],
        );
        let chosen = choose(by, 3);
        let pairs = &chosen[&("t".to_owned(), "sim".to_owned())];
        assert_eq!(pairs.len(), 1);
        assert_eq!(pairs[0].trial, 2);
    }
}
