//! Words for every way a row ends, from its verdict, the adaptive rule's `stopped` column and
//! the counts: in full (summary.md, junit.xml, report.html) and short (the console's table).
//! "Too few trials to tell" is said only where more trials can help.

use crate::analysis::adaptive::Stopped;
use crate::analysis::{significant, Comparison, Row, Scope, TaskOutcome, TestName, Verdict};
use crate::config::Metric;

use super::{change, margin_words, needed};

/// How a row that is neither a regression nor an improvement ended, where its verdict alone
/// could mislead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The task passed no trial on either side: more trials cannot help (`call`: a call task,
    /// which has no host to blame).
    NeverPassed { call: bool },
    /// The baseline passed no trial: no drop of the success rate can be seen.
    BaselineNeverPassed,
    /// Significant, but by no more than the margin.
    Changed,
    /// The adaptive rule stopped it at this many trials: more would very unlikely show a
    /// regression.
    Futile(u32),
    /// The adaptive rule settled it early at this many trials, its interval clear of the
    /// margin.
    Settled(u32),
    /// The run's trial budget gave it no look after this many trials.
    Budget(u32),
    /// It ran all `max_trials` (this many) without settling.
    MaxTrials(u32),
    /// Not significant, the interval too wide: too few trials to tell.
    TooFew,
}

/// How words are wanted: in full, or short for the console's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    Full,
    Short,
}

impl End {
    /// Whether more trials could settle the row (the only ends that advise them).
    pub fn more_trials_help(self) -> bool {
        matches!(self, End::Budget(_) | End::MaxTrials(_) | End::TooFew)
    }

    /// Ends that hold for the whole task, the same for each of its rows.
    fn of_task(self) -> bool {
        matches!(
            self,
            End::NeverPassed { .. }
                | End::Futile(_)
                | End::Settled(_)
                | End::Budget(_)
                | End::MaxTrials(_)
        )
    }

    /// The words, except for [`End::Changed`] (which needs the row: see [`reason`]).
    fn words(self, row: &Row, length: Length) -> String {
        let full = length == Length::Full;
        match self {
            End::NeverPassed { call } if full => format!(
                "never passed on either side: check the task or the {}",
                if call { "servers" } else { "host" }
            ),
            End::NeverPassed { .. } => "never passed on either side".into(),
            End::BaselineNeverPassed if full => {
                "the baseline passed no trial, so no drop can be seen: check the servers' setup"
                    .into()
            }
            End::BaselineNeverPassed => "the baseline never passed".into(),
            End::Changed if full => changed_words(row),
            End::Changed => "within the margin".into(),
            End::Futile(n) if full => format!(
                "no sign of a regression; stopped at {n} trials, where more would very unlikely \
                 show one"
            ),
            End::Futile(n) => format!("futile at {n}"),
            End::Settled(n) if full => format!(
                "settled at {n} trials: the interval ruled out a change as large as the margin"
            ),
            End::Settled(n) => format!("settled at {n}"),
            End::Budget(n) if full => format!("budget ran out at {n} trials ({})", needed(row)),
            End::Budget(n) => format!("budget ran out at {n} trials"),
            End::MaxTrials(n) if full => format!(
                "ran all {n} trials (max_trials) without settling: too few trials to tell ({})",
                needed(row)
            ),
            End::MaxTrials(n) => format!("too few trials at max {n}"),
            End::TooFew if full => format!("too few trials to tell ({})", needed(row)),
            End::TooFew => "too few trials to tell".into(),
        }
    }
}

/// "changed by +189 (+8.2 %), within the 10 % margin (230)", and for an inconclusive row
/// ", though the interval reaches +343 (+14.9 %)".
fn changed_words(row: &Row) -> String {
    let within = format!(
        "changed by {}, within {}",
        change(row, row.delta.unwrap_or(0.0)),
        margin_words(row)
    );
    if row.verdict != Verdict::Inconclusive {
        return within;
    }
    let worst = if row.metric.higher_is_better() {
        row.ci_low
    } else {
        row.ci_high
    };
    match worst {
        Some(w) => format!("{within}, though the interval reaches {}", change(row, w)),
        None => within,
    }
}

/// A success task row that passed no trial on either side.
fn never_passed_row(row: &Row) -> bool {
    row.metric == Metric::Success
        && row.scope == Scope::Task
        && row.baseline_mean == Some(0.0)
        && row.candidate_mean == Some(0.0)
}

/// Whether a task passed no trial on either side, both sides having run.
pub fn never_passed(t: &TaskOutcome) -> bool {
    t.baseline.n > 0 && t.candidate.n > 0 && t.baseline.successes + t.candidate.successes == 0
}

/// How a row ended, from the row alone; `None` for a regression, an improvement, a row without
/// a test, and a no change with nothing to add. `level` is the level the row's adjusted p-value
/// was held to (its family's).
pub fn end(row: &Row, level: f64) -> Option<End> {
    row.delta?;
    if !row.tested() || matches!(row.verdict, Verdict::Regression | Verdict::Improvement) {
        return None;
    }
    if never_passed_row(row) {
        let call = row.test == TestName::Exact;
        return Some(End::NeverPassed { call });
    }
    if significant(row.p_adjusted, level) {
        return Some(End::Changed);
    }
    if row.metric == Metric::Success && row.scope == Scope::Task && row.baseline_mean == Some(0.0) {
        return Some(End::BaselineNeverPassed);
    }
    let at = row
        .trials_run
        .unwrap_or(row.n_baseline.min(row.n_candidate));
    Some(match (row.verdict, row.stopped) {
        // A no change stands on its own, unless the rule settled it early.
        (Verdict::NoChange, Some(Stopped::Futility | Stopped::NoChange)) => End::Settled(at),
        (Verdict::NoChange, _) => return None,
        (_, Some(Stopped::Futility)) => End::Futile(at),
        (_, Some(Stopped::NoChange)) => End::Settled(at),
        (_, Some(Stopped::Budget)) => End::Budget(at),
        (_, Some(Stopped::MaxTrials)) => End::MaxTrials(at),
        _ => End::TooFew,
    })
}

/// [`end`], knowing the task: every tested row of a task that passed no trial on either side
/// ended so, whatever its metric and verdict (but a regression or an improvement).
pub fn end_in(c: &Comparison, row: &Row) -> Option<End> {
    let task = (c.tasks.iter()).find(|t| t.task_id == row.task_id && t.host == row.host);
    match task {
        Some(t)
            if !row.is_suite()
                && never_passed(t)
                && row.tested()
                && !matches!(row.verdict, Verdict::Regression | Verdict::Improvement) =>
        {
            Some(End::NeverPassed {
                call: !t.kind.has_model(),
            })
        }
        _ => end(row, c.level.family_alpha),
    }
}

/// What a row's verdict means, said after the verdict itself, where the bare word could
/// mislead; `None` for a regression, an improvement, a row without a test, and a no change
/// whose test found nothing. An inconclusive row says which kind it is: changed, within the
/// margin ("changed by +189 (+8.2 %), within the 10 % margin (230), though the interval
/// reaches +343 (+14.9 %)"); stopped as futile, settled, or by the budget; never passed on
/// either side; or too few trials to tell ("too few trials to tell (would need a drop of
/// ≥ 28 pts to see)", from the row's `mde`). The reports use [`reason`], which knows the task.
#[cfg(test)]
pub fn verdict_reason(row: &Row, level: f64) -> Option<String> {
    Some(end(row, level)?.words(row, Length::Full))
}

/// [`verdict_reason`], knowing the task ([`end_in`]), in full or short.
pub fn reason(c: &Comparison, row: &Row, length: Length) -> Option<String> {
    Some(end_in(c, row)?.words(row, length))
}

/// Whether the reports may advise more trials for this row (its `trials_needed`): only where
/// more trials can help, never for a row stopped as futile or settled, nor of a task that
/// never passed.
pub fn advises_trials(c: &Comparison, row: &Row) -> bool {
    end_in(c, row).is_some_and(End::more_trials_help)
}

/// A row's verdict and, where it needs one, what it means ([`verdict_reason`]):
/// `inconclusive: too few trials to tell (would need a drop of ≥ 28 pts to see)`.
#[cfg(test)]
pub fn verdict_words(row: &Row, level: f64) -> String {
    match verdict_reason(row, level) {
        Some(why) => format!("{}: {why}", row.verdict),
        None => row.verdict.to_string(),
    }
}

/// A suite row's verdict with its short reason, for the console.
pub fn verdict_short(c: &Comparison, row: &Row) -> String {
    match reason(c, row, Length::Short) {
        Some(why) => format!("{}: {why}", row.verdict),
        None => row.verdict.to_string(),
    }
}

/// A task's gated verdict (`inconclusive (success)`) and, where it needs one, what each metric
/// behind it means: `inconclusive (success): too few trials to tell (…)`, or with more metrics
/// `…: success: …; tool_calls: …`; an end that holds for the whole task (futility, the budget,
/// never passed) once: `inconclusive (success): no sign of a regression; stopped at 10 …`.
pub fn task_verdict_words(c: &Comparison, t: &TaskOutcome) -> String {
    task_words(c, t, Length::Full)
}

/// [`task_verdict_words`] in short words, for the console; an end of the whole task without the
/// metrics: `inconclusive: futile at 10`, `inconclusive (success): too few trials to tell`.
pub fn task_verdict_short(c: &Comparison, t: &TaskOutcome) -> String {
    task_words(c, t, Length::Short)
}

fn task_words(c: &Comparison, t: &TaskOutcome, length: Length) -> String {
    let verdict = c.task_verdict(t);
    // A call task on a tool only the candidate lists ran there alone (`job::added`).
    if c.candidate_alone(t) {
        return match length {
            Length::Full => format!(
                "{verdict}: judged on the candidate alone (it uses a tool the baseline does not \
                 list)"
            ),
            Length::Short => format!("{verdict} (candidate alone: tool added)"),
        };
    }
    // An improvement over a baseline that failed every trial says only that the candidate passed
    // where the baseline could not: most often a baseline started wrong.
    if verdict.verdict == Verdict::Improvement
        && crate::analysis::Diagnosis::baseline_never_passed(t)
    {
        return match length {
            Length::Full => {
                format!("{verdict}: the baseline failed every trial: check the servers' setup")
            }
            Length::Short => format!("{verdict}: baseline failed every trial"),
        };
    }
    if matches!(verdict.verdict, Verdict::Regression | Verdict::Improvement) {
        return verdict.to_string();
    }
    // The rows behind the verdict: an inconclusive one's metrics, or every gated row.
    let rows: Vec<&Row> = c
        .task_rows(&t.task_id, &t.host)
        .filter(|r| r.gated && r.tested())
        .filter(|r| verdict.metrics.is_empty() || verdict.metrics.contains(&r.metric))
        .collect();
    let ends: Vec<(&Row, End)> = (rows.iter())
        .filter_map(|r| Some((*r, end_in(c, r)?)))
        .collect();
    // A no change says more only when each of its rows was settled early or never passed.
    if verdict.verdict == Verdict::NoChange
        && (ends.len() != rows.len() || ends.iter().any(|(_, e)| !e.of_task()))
    {
        return verdict.to_string();
    }
    let reasons: Vec<(Metric, String)> = (ends.iter())
        .map(|(r, e)| (r.metric, e.words(r, length)))
        .collect();
    let same = reasons.windows(2).all(|w| w[0].1 == w[1].1);
    // The console leaves out the metrics where the end is the whole task's.
    let whole_task = length == Length::Short && ends.iter().all(|(_, e)| e.of_task());
    match reasons.as_slice() {
        [] => verdict.to_string(),
        [(_, why), ..] if same && whole_task => format!("{}: {why}", verdict.verdict),
        // One reason for every metric (an end of the whole task): said once.
        [(_, why), ..] if same => format!("{verdict}: {why}"),
        many => {
            let parts: Vec<String> = many.iter().map(|(m, why)| format!("{m}: {why}")).collect();
            format!("{verdict}: {}", parts.join("; "))
        }
    }
}

/// How many inconclusive rows ended which way, for the sentences that count them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kinds {
    pub too_few: usize,
    pub changed: usize,
    pub futile: usize,
    pub settled: usize,
    pub never_passed: usize,
}

impl Kinds {
    /// Counts `rows` (inconclusive, tested) by their end.
    pub fn of<'a>(c: &Comparison, rows: impl IntoIterator<Item = &'a Row>) -> Self {
        let mut k = Self::default();
        for r in rows {
            match end_in(c, r) {
                Some(End::Changed) => k.changed += 1,
                Some(End::Futile(_)) => k.futile += 1,
                Some(End::Settled(_)) => k.settled += 1,
                Some(End::NeverPassed { .. } | End::BaselineNeverPassed) => k.never_passed += 1,
                _ => k.too_few += 1,
            }
        }
        k
    }

    /// Whether only the two kinds of a fixed design are among them (too few, changed).
    pub fn fixed_only(&self) -> bool {
        self.futile + self.settled + self.never_passed == 0
    }

    /// `12 stopped as futile, 1 with too few trials to tell`.
    pub fn words(&self) -> String {
        let parts: Vec<String> = [
            (self.futile, "stopped as futile"),
            (self.settled, "settled early"),
            (self.never_passed, "where a side never passed"),
            (self.too_few, "with too few trials to tell"),
            (self.changed, "changed by less than the margin"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, words)| format!("{n} {words}"))
        .collect();
        parts.join(", ")
    }

    /// What the kinds other than a fixed design's mean, a sentence each (empty when there are
    /// none).
    pub fn notes(&self) -> String {
        let notes: Vec<&str> = [
            (
                self.futile,
                "A row stopped as futile showed no sign of a regression, and more trials would \
                 very unlikely show one.",
            ),
            (
                self.settled,
                "A row settled early ruled out a change as large as the margin at its look.",
            ),
            (
                self.never_passed,
                "Where a side never passed, more trials cannot tell: check the task, the host or \
                 the servers.",
            ),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(_, note)| note)
        .collect();
        notes.join(" ")
    }
}

#[cfg(test)]
#[path = "ends_tests.rs"]
mod tests;
