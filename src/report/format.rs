//! Number formatting shared by the written reports and the console: rates, means, p-values,
//! and (in `ends`) the words for every way a row ends.

pub use crate::analysis::{percent, points};
#[cfg(test)]
pub use ends::verdict_reason;
#[cfg(test)]
use ends::verdict_words;
pub use ends::{
    advises_trials, never_passed, reason, task_verdict_short, task_verdict_words, verdict_short,
    Kinds, Length,
};
use std::collections::BTreeSet;

mod ends;

use crate::analysis::adaptive::Stopped;
use crate::analysis::{Comparison, Row, SideOutcome};
use crate::config::Metric;
use crate::rundir::RunInfo;

/// A mean in the metric's own terms: rates to 3 decimals, counts to 1, tokens and latency whole.
pub fn value(metric: Metric, v: Option<f64>) -> String {
    let Some(v) = v else { return "–".into() };
    match metric {
        Metric::InputTokens
        | Metric::OutputTokens
        | Metric::TotalTokens
        | Metric::ReasoningTokens
        | Metric::LatencyMs => {
            format!("{v:.0}")
        }
        m if m.is_rate() => format!("{v:.3}"),
        _ => format!("{v:.2}"),
    }
}

/// The verdict's note on calls written as text that the hosts made (`recover_text_calls`):
/// `None` when none were.
pub fn recovered_line(c: &Comparison) -> Option<String> {
    let (recovered, calls) = c.recovered_calls()?;
    Some(format!(
        "{recovered} of {calls} tool call(s) were recovered from text (recover_text_calls): \
         the model wrote them as text and its host made them; they count as calls, and apart \
         as recovered_calls."
    ))
}

/// The verdict's note on simulated users: how many user messages differed between the sides of
/// a pair, and with `--replay-user-turns` how many candidate messages were the baseline's and
/// how many its user host wrote beyond them. `None` when no simulated user wrote a message.
pub fn simulated_users_line(c: &Comparison) -> Option<String> {
    let s = c.simulated_users()?;
    let mut line = format!(
        "Simulated users: {} of {} user turn(s) differed between the sides of a pair (each \
         side's user answers what its model said).",
        s.differing, s.compared
    );
    if s.replayed > 0 {
        line.push_str(&format!(
            " --replay-user-turns: {} candidate user turn(s) were the baseline's, sent again; {} \
             were written by the user host beyond the baseline's recorded ones.",
            s.replayed, s.written
        ));
    }
    Some(line)
}

/// A turn row's successes on one side, `passed/graded`, from its rate and count.
fn turn_successes(mean: Option<f64>, n: u32) -> String {
    let passed = mean.map_or(0, |m| (m * f64::from(n)).round() as u32);
    format!("{passed}/{n}")
}

/// One line per conversation task and host: each user turn's own success, baseline →
/// candidate, and its verdict (`turn 1 10/10 → 0/10 regression · turn 2 10/10 → 10/10 no
/// change`). Empty when the run had no conversation.
pub fn turn_lines(c: &Comparison) -> Vec<String> {
    let mut lines: Vec<(String, String, Vec<String>)> = Vec::new();
    for r in &c.turn_rows {
        let part = format!(
            "turn {} {} → {} {}",
            r.turn.unwrap_or(0),
            turn_successes(r.baseline_mean, r.n_baseline),
            turn_successes(r.candidate_mean, r.n_candidate),
            r.verdict.as_str().replace('_', " ")
        );
        match lines.last_mut() {
            Some((task, host, parts)) if *task == r.task_id && *host == r.host => parts.push(part),
            _ => lines.push((r.task_id.clone(), r.host.clone(), vec![part])),
        }
    }
    lines
        .into_iter()
        .map(|(task, host, parts)| format!("{task} ({host}): {}", parts.join(" · ")))
        .collect()
}

/// The verdict's note on the server's requests (sampling, elicitation) no task said how to
/// answer: `None` when there were none.
pub fn unprepared_line(c: &Comparison) -> Option<String> {
    let n = c.unprepared_requests()?;
    Some(format!(
        "{n} sampling or elicitation request(s) from the servers were not prepared for by their \
         task (no `sampling:` or `elicitation:`): answered \"method not found\", as a client \
         without the capability would (unprepared_requests)."
    ))
}

/// A delta with its sign.
pub fn delta(metric: Metric, v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(v) if v >= 0.0 => format!("+{}", value(metric, Some(v))),
        Some(v) => value(metric, Some(v)),
    }
}

/// `[low, high]`, or `–`.
pub fn interval(row: &Row) -> String {
    match (row.ci_low, row.ci_high) {
        (Some(l), Some(h)) => format!(
            "[{}, {}]",
            value(row.metric, Some(l)),
            value(row.metric, Some(h))
        ),
        _ => "–".into(),
    }
}

/// A row's `mde` in its own terms: `28 points` for a rate, `+0.45 (+35 %)` for a count; `–`
/// when no change could be flagged.
pub fn mde(row: &Row) -> String {
    let Some(d) = row.mde else {
        return "–".into();
    };
    if row.metric.is_rate() {
        return format!("{} points", points(d));
    }
    match row.baseline_mean.filter(|b| *b > 0.0) {
        Some(base) => format!("{} (+{})", delta(row.metric, Some(d)), percent(d / base)),
        None => delta(row.metric, Some(d)),
    }
}

/// A change in the metric's own terms, with its sign: `-4 pts` for a rate, `+146 (+5.7 %)` for
/// a count (the share of the baseline mean, when it is positive).
pub fn change(row: &Row, v: f64) -> String {
    let sign = if v >= 0.0 { "+" } else { "-" };
    if row.metric.is_rate() {
        return format!("{sign}{} pts", points(v.abs()));
    }
    match row.baseline_mean.filter(|b| *b > 0.0) {
        Some(base) => format!(
            "{} ({sign}{})",
            delta(row.metric, Some(v)),
            percent((v / base).abs())
        ),
        None => delta(row.metric, Some(v)),
    }
}

/// A row's margin: `the 10-pt margin` for a rate, `the 25 % margin (0.50)` for a count.
fn margin_words(row: &Row) -> String {
    let Some(m) = row.margin else {
        return "the margin".into();
    };
    if row.metric.is_rate() {
        return format!("the {}-pt margin", points(m));
    }
    match row.baseline_mean.filter(|b| *b > 0.0) {
        Some(base) => format!(
            "the {} margin ({})",
            percent(m / base),
            value(row.metric, Some(m))
        ),
        None => "a zero margin (the baseline mean is 0)".into(),
    }
}

/// The smallest change a row flags with the configured power, or why there is none: "would
/// need a drop of ≥ 28 pts to see", "would need a rise of ≥ +0.24, i.e. +30.5 %, to see", "not
/// even a drop to 0 % would be seen".
fn needed(row: &Row) -> String {
    let direction = if row.metric.higher_is_better() {
        "drop"
    } else {
        "rise"
    };
    match row.mde {
        Some(d) if row.metric.is_rate() => {
            format!("would need a {direction} of ≥ {} pts to see", points(d))
        }
        Some(d) => match row.baseline_mean.filter(|b| *b > 0.0) {
            Some(base) => format!(
                "would need a {direction} of ≥ {}, i.e. +{}, to see",
                delta(row.metric, Some(d)),
                percent(d / base)
            ),
            None => format!(
                "would need a {direction} of ≥ {} to see",
                delta(row.metric, Some(d))
            ),
        },
        None if row.metric == Metric::Success => "not even a drop to 0 % would be seen".into(),
        None if !row.metric.is_rate() && row.baseline_mean == Some(0.0) => {
            "no estimate of what it would see: the baseline mean is 0".into()
        }
        None => format!("no {direction} would be seen at these trials"),
    }
}

/// How many of a run's selected tasks ran, how many the adaptive trial budget stopped, and
/// which never ran (none for a shard of several: the others ran elsewhere).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskCounts {
    pub selected: usize,
    pub ran: usize,
    pub budget_stopped: usize,
    pub never_ran: Vec<String>,
    /// The run had a trial budget.
    pub budgeted: bool,
}

impl TaskCounts {
    pub fn of(info: &RunInfo, c: &Comparison) -> Self {
        let ran: BTreeSet<&str> = (c.tasks.iter())
            .filter(|t| t.baseline.n + t.candidate.n > 0)
            .map(|t| t.task_id.as_str())
            .collect();
        let budget: BTreeSet<&str> = (c.rows.iter())
            .filter(|r| !r.is_suite() && r.stopped == Some(Stopped::Budget))
            .map(|r| r.task_id.as_str())
            .collect();
        let partial = info.shard.is_some_and(|s| s.count > 1);
        let never_ran = (info.tasks.iter())
            .filter(|t| !partial && !ran.contains(t.as_str()))
            .cloned()
            .collect();
        Self {
            selected: info.tasks.len(),
            ran: info
                .tasks
                .iter()
                .filter(|t| ran.contains(t.as_str()))
                .count(),
            budget_stopped: budget.len(),
            never_ran,
            budgeted: c.stats.trial_budget.is_some(),
        }
    }

    /// Why tasks never ran, when the budget is the likely cause: ` (the trial budget ran out
    /// before their first look)`; else empty.
    pub fn never_ran_cause(&self) -> &'static str {
        match self.budgeted && !self.never_ran.is_empty() {
            true => " (the trial budget ran out before their first look)",
            false => "",
        }
    }

    /// Whether some task did not run to its end: stopped by the budget, or never run.
    pub fn short(&self) -> bool {
        self.budget_stopped > 0 || !self.never_ran.is_empty()
    }

    /// `18 selected: 4 ran (2 of them stopped by the trial budget), 14 never ran`.
    pub fn words(&self) -> String {
        let mut text = format!("{} selected: {} ran", self.selected, self.ran);
        if self.budget_stopped > 0 {
            text.push_str(&format!(
                " ({} of them stopped by the trial budget)",
                self.budget_stopped
            ));
        }
        text.push_str(&format!(", {} never ran", self.never_ran.len()));
        text
    }
}

#[cfg(test)]
mod task_count_tests {
    use super::*;
    use crate::analysis::Collector;
    use crate::episode::Side;
    use crate::test_support::{sample_episode, sample_info};

    #[test]
    fn tasks_that_never_ran_are_counted_and_named() {
        let mut info = sample_info();
        info.tasks = vec!["a".into(), "b".into(), "c".into()];
        let mut collector = Collector::default();
        for side in Side::BOTH {
            collector.add(side, &sample_episode("a", side, true));
        }
        let c = collector.comparison(&info.config.stats, 1).unwrap();
        let counts = TaskCounts::of(&info, &c);
        assert_eq!(
            (counts.selected, counts.ran, counts.budget_stopped),
            (3, 1, 0)
        );
        assert_eq!(counts.never_ran, ["b", "c"]);
        assert!(counts.short());
        assert_eq!(counts.words(), "3 selected: 1 ran, 2 never ran");
        // A shard of several runs a part of the tasks: the others are not "never run".
        info.shard = Some("1/2".parse().unwrap());
        assert!(TaskCounts::of(&info, &c).never_ran.is_empty());
    }
}

/// A p-value: three decimals, or scientific notation below 0.001.
pub fn p(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(v) if v != 0.0 && v < 1e-3 => format!("{v:.1e}"),
        Some(v) => format!("{v:.3}"),
    }
}

/// `7/10`, with the infrastructure errors left out said as such.
pub fn successes(side: &SideOutcome) -> String {
    if side.infra_errors > 0 {
        format!(
            "{}/{} (+{} infra)",
            side.successes, side.n, side.infra_errors
        )
    } else {
        format!("{}/{}", side.successes, side.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{Scope, TestName, Verdict};

    const LEVEL: f64 = 0.01;

    /// A tested task row of `metric`: baseline mean `base`, the delta, interval, adjusted
    /// p-value, margin, mde and verdict given.
    #[allow(clippy::too_many_arguments)]
    fn row(
        metric: Metric,
        base: f64,
        delta: f64,
        ci: (f64, f64),
        p: f64,
        margin: f64,
        mde: Option<f64>,
        verdict: Verdict,
    ) -> Row {
        Row {
            task_id: "t".into(),
            host: "sim".into(),
            metric,
            n_baseline: 10,
            n_candidate: 10,
            baseline_mean: Some(base),
            candidate_mean: Some(base + delta),
            delta: Some(delta),
            ci_low: Some(ci.0),
            ci_high: Some(ci.1),
            test: TestName::FisherExact,
            p_value: Some(p),
            p_adjusted: Some(p),
            verdict,
            gated: true,
            margin: Some(margin),
            k: None,
            trials_needed: None,
            scope: Scope::Task,
            relative_change: None,
            mde,
            trials_run: None,
            stopped: None,
            turn: None,
        }
    }

    #[test]
    fn an_inconclusive_row_says_which_kind_it_is() {
        // Significant, smaller than the margin, the interval past it.
        let changed = row(
            Metric::Success,
            0.9,
            -0.04,
            (-0.13, -0.01),
            1e-4,
            0.1,
            Some(0.3),
            Verdict::Inconclusive,
        );
        assert_eq!(
            verdict_words(&changed, LEVEL),
            "inconclusive: changed by -4 pts, within the 10-pt margin, though the interval \
             reaches -13 pts"
        );
        let tokens = row(
            Metric::TotalTokens,
            2301.0,
            189.0,
            (104.0, 343.0),
            7.9e-74,
            230.1,
            Some(232.0),
            Verdict::Inconclusive,
        );
        assert_eq!(
            verdict_words(&tokens, LEVEL),
            "inconclusive: changed by +189 (+8.2 %), within the 10 % margin (230), though the \
             interval reaches +343 (+14.9 %)"
        );
        // Not significant: too few trials, with the mde, or without one.
        let few = row(
            Metric::Success,
            1.0,
            -0.2,
            (-0.5, 0.1),
            0.2,
            0.1,
            Some(0.92),
            Verdict::Inconclusive,
        );
        assert_eq!(
            verdict_words(&few, LEVEL),
            "inconclusive: too few trials to tell (would need a drop of ≥ 92 pts to see)"
        );
        let two = Row {
            n_baseline: 2,
            n_candidate: 2,
            mde: None,
            ..few.clone()
        };
        assert_eq!(
            verdict_words(&two, LEVEL),
            "inconclusive: too few trials to tell (not even a drop to 0 % would be seen)"
        );
        let calls = row(
            Metric::ToolCalls,
            0.78,
            0.06,
            (0.0, 0.17),
            0.2,
            0.195,
            Some(0.24),
            Verdict::Inconclusive,
        );
        assert_eq!(
            verdict_words(&calls, LEVEL),
            "inconclusive: too few trials to tell (would need a rise of ≥ +0.24, i.e. +30.8 %, to see)"
        );
    }

    #[test]
    fn a_significant_no_change_names_the_margin_and_the_rest_stand_alone() {
        let small = row(
            Metric::TotalTokens,
            2579.0,
            146.0,
            (146.0, 146.0),
            2.9e-4,
            644.75,
            Some(645.0),
            Verdict::NoChange,
        );
        assert_eq!(
            verdict_words(&small, LEVEL),
            "no_change: changed by +146 (+5.7 %), within the 25 % margin (645)"
        );
        let flat = row(
            Metric::ToolCalls,
            1.0,
            0.0,
            (0.0, 0.0),
            1.0,
            0.25,
            Some(1.1),
            Verdict::NoChange,
        );
        assert_eq!(verdict_words(&flat, LEVEL), "no_change");
        let broke = row(
            Metric::Success,
            1.0,
            -1.0,
            (-1.0, -0.6),
            1e-5,
            0.1,
            Some(0.92),
            Verdict::Regression,
        );
        assert_eq!(verdict_words(&broke, LEVEL), "regression");
        let untested = Row {
            p_value: None,
            p_adjusted: None,
            ..few_row()
        };
        assert_eq!(verdict_reason(&untested, LEVEL), None);
    }

    fn few_row() -> Row {
        row(
            Metric::Success,
            1.0,
            0.0,
            (-0.3, 0.3),
            1.0,
            0.1,
            Some(0.92),
            Verdict::Inconclusive,
        )
    }

    #[test]
    fn formats_by_metric() {
        assert_eq!(value(Metric::Success, Some(0.5)), "0.500");
        assert_eq!(value(Metric::TotalTokens, Some(812.4)), "812");
        assert_eq!(delta(Metric::ToolCalls, Some(1.0)), "+1.00");
        assert_eq!(delta(Metric::Success, Some(-0.25)), "-0.250");
        assert_eq!(p(Some(0.0000123)), "1.2e-5");
        assert_eq!(p(Some(0.5)), "0.500");
        assert_eq!(percent(0.1), "10 %");
        assert_eq!(percent(0.125), "12.5 %");
        assert_eq!(points(0.28), "28");
        assert_eq!(points(0.025), "2.5");
    }
}
