//! Episodes folded into what the statistics need, per task × host and side: each metric's
//! values, the successes, the infrastructure errors left out and the failed grades' reasons.
//! Nothing else of an episode is kept, so a comparison's memory is a few numbers per episode.

use std::borrow::Cow;

use crate::config::Metric;
use crate::suite::{TaskKind, TaskSet};

use super::model::{SideOutcome, TaskOutcome};
use super::EpisodeFacts;

/// One metric's value per episode, exactly, in the narrowest column that holds every value so
/// far: whole numbers (successes, counts, tokens) as `u8`, `u16` or `u32`, widened at the first
/// value that does not fit; `f64` from the first value that is not a whole number in `u32`.
#[derive(Debug, Clone)]
enum Values {
    Byte(Vec<u8>),
    Short(Vec<u16>),
    Whole(Vec<u32>),
    Real(Vec<f64>),
}

impl Default for Values {
    fn default() -> Self {
        Values::Byte(Vec::new())
    }
}

/// `from` copied into a column of a wider type, with room for as many values as it had.
fn widen<T: Copy + Into<U>, U>(from: &[T], capacity: usize) -> Vec<U> {
    let mut to = Vec::with_capacity(capacity.max(from.len() + 1));
    to.extend(from.iter().map(|&x| x.into()));
    to
}

impl Values {
    fn with_capacity(capacity: usize) -> Self {
        Values::Byte(Vec::with_capacity(capacity))
    }

    /// 0 for `u8`, 1 for `u16`, 2 for `u32`, 3 for `f64`: the narrowest column that holds `v`.
    fn width_of(v: f64) -> u8 {
        match v {
            _ if v.fract() != 0.0 || !(0.0..=f64::from(u32::MAX)).contains(&v) => 3,
            _ if v <= f64::from(u8::MAX) => 0,
            _ if v <= f64::from(u16::MAX) => 1,
            _ => 2,
        }
    }

    fn width(&self) -> u8 {
        match self {
            Values::Byte(_) => 0,
            Values::Short(_) => 1,
            Values::Whole(_) => 2,
            Values::Real(_) => 3,
        }
    }

    /// Makes the column at least `width` wide, keeping its values.
    fn widen_to(&mut self, width: u8) {
        let wider = match (&*self, width) {
            (Values::Byte(b), 1) => Values::Short(widen(b, b.capacity())),
            (Values::Byte(b), 2) => Values::Whole(widen(b, b.capacity())),
            (Values::Byte(b), 3) => Values::Real(widen(b, b.capacity())),
            (Values::Short(s), 2) => Values::Whole(widen(s, s.capacity())),
            (Values::Short(s), 3) => Values::Real(widen(s, s.capacity())),
            (Values::Whole(w), 3) => Values::Real(widen(w, w.capacity())),
            _ => return,
        };
        *self = wider;
    }

    fn push(&mut self, v: f64) {
        let width = Self::width_of(v);
        if width > self.width() {
            self.widen_to(width);
        }
        // `v` fits the column now: a whole number within its type's range, or any f64.
        match self {
            Values::Byte(b) => b.push(v as u8),
            Values::Short(s) => s.push(v as u16),
            Values::Whole(w) => w.push(v as u32),
            Values::Real(r) => r.push(v),
        }
    }

    fn len(&self) -> usize {
        match self {
            Values::Byte(b) => b.len(),
            Values::Short(s) => s.len(),
            Values::Whole(w) => w.len(),
            Values::Real(r) => r.len(),
        }
    }

    fn as_f64(&self) -> Cow<'_, [f64]> {
        match self {
            Values::Byte(b) => Cow::Owned(b.iter().map(|&x| f64::from(x)).collect()),
            Values::Short(s) => Cow::Owned(s.iter().map(|&x| f64::from(x)).collect()),
            Values::Whole(w) => Cow::Owned(w.iter().map(|&x| f64::from(x)).collect()),
            Values::Real(r) => Cow::Borrowed(r),
        }
    }
}

/// Values per chunk of a [`Column`].
const CHUNK: usize = 256;

/// One metric's values, exactly and in their order, in chunks of [`CHUNK`] values, each chunk in
/// the narrowest type that holds its own values (see [`Values`]). A column grows a chunk at a
/// time: a single vector would grow by copying what it holds into a block twice as large, and
/// since every task's columns fill at the same pace, they all did so at once (at 73,728 demo
/// episodes, a run's memory jumped by twice the comparison's values, and its holes stayed).
#[derive(Debug, Default, Clone)]
struct Column {
    chunks: Vec<Values>,
}

impl Column {
    fn push(&mut self, v: f64) {
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() < CHUNK => chunk.push(v),
            // The first chunk grows as a vector does (most runs' tasks have a few trials); the
            // next ones are made at their full size.
            last => {
                let mut chunk = match last {
                    Some(_) => Values::with_capacity(CHUNK),
                    None => Values::default(),
                };
                chunk.push(v);
                self.chunks.push(chunk);
            }
        }
    }

    fn len(&self) -> usize {
        match self.chunks.as_slice() {
            [] => 0,
            [.., last] => (self.chunks.len() - 1) * CHUNK + last.len(),
        }
    }

    fn as_f64(&self) -> Cow<'_, [f64]> {
        match self.chunks.as_slice() {
            [one] => one.as_f64(),
            chunks => {
                let mut all = Vec::with_capacity(self.len());
                for chunk in chunks {
                    all.extend_from_slice(&chunk.as_f64());
                }
                Cow::Owned(all)
            }
        }
    }
}

/// Distinct grade explanations kept per side of a task × host.
const MAX_FAILURES: usize = 100;

/// The entry that counts the failed trials whose explanation came after the first
/// [`MAX_FAILURES`] distinct ones.
pub(super) const OTHER_FAILURES: &str = "(other explanations)";

/// The usable episodes of one side of one task × host.
#[derive(Debug, Default, Clone)]
pub(super) struct SideValues {
    /// One column per metric of [`Metric::TESTED`], in that order.
    values: [Column; Metric::TESTED.len()],
    successes: u64,
    /// Episodes that called at least one tool.
    called: u64,
    pub infra: u32,
    /// Trials whose own server failed, counted as failures of this side (see [`Cell::settled`]).
    pub server_errors: u32,
    /// Tool calls written as text that the host made (`recover_text_calls`).
    recovered_calls: u32,
    /// Distinct grade explanations of failed trials, in order of first appearance, with counts.
    failures: Vec<(String, u32)>,
    /// A conversation's user turns: per turn, the trials whose turn passed and those graded.
    turns: Vec<(u32, u32)>,
    /// A conversation's user messages per trial (hashes), to count those that differ between
    /// the sides of a pair.
    messages: std::collections::BTreeMap<u32, Vec<u64>>,
    /// User messages a simulated user wrote, and those that were the baseline's, replayed.
    written: u32,
    replayed: u32,
    /// Under tool search: the episodes whose search ranked a tool of the task within k, of
    /// those that record it (`found_at_k`).
    found: (u64, u64),
}

impl SideValues {
    pub fn len(&self) -> usize {
        self.values[0].len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn successes(&self) -> u64 {
        self.successes
    }

    pub fn called(&self) -> u64 {
        self.called
    }

    /// (episodes that found the task's tool within k, episodes that record it): tool search.
    pub fn found_at_k(&self) -> (u64, u64) {
        self.found
    }

    /// The values of a tested metric ([`Metric::TESTED`]), in the order the episodes came.
    pub fn metric(&self, metric: Metric) -> Cow<'_, [f64]> {
        let i = Metric::TESTED
            .iter()
            .position(|m| *m == metric)
            .expect("only tested metrics have per-episode values");
        self.values[i].as_f64()
    }

    /// Per user turn of a conversation: (trials whose turn passed, trials that graded it).
    pub fn turn_counts(&self) -> &[(u32, u32)] {
        &self.turns
    }

    fn add(&mut self, e: &EpisodeFacts) {
        let values = Metric::TESTED.map(|m| e.value(m));
        self.recovered_calls += e.recovered_calls;
        if let Some(found) = e.found_at_k {
            self.found = (self.found.0 + u64::from(found), self.found.1 + 1);
        }
        let user = &e.turns_of_user;
        if self.turns.len() < user.successes.len() {
            self.turns.resize(user.successes.len(), (0, 0));
        }
        if !user.messages.is_empty() {
            self.messages.insert(e.trial, user.messages.clone());
        }
        (self.written, self.replayed) =
            (self.written + user.written, self.replayed + user.replayed);
        for (counts, success) in self.turns.iter_mut().zip(&user.successes) {
            if let Some(passed) = success {
                counts.0 += u32::from(*passed);
                counts.1 += 1;
            }
        }
        self.add_values(&values, e.success, e.tool_calls > 0, &e.failure);
    }

    /// Adds one episode's values (in [`Metric::TESTED`]'s order), success and failure reason.
    fn add_values(&mut self, values: &[f64], success: bool, called: bool, why: &str) {
        for (column, v) in self.values.iter_mut().zip(values) {
            column.push(*v);
        }
        self.successes += u64::from(success);
        self.called += u64::from(called);
        if !success {
            let known = self.failures.len() < MAX_FAILURES;
            // A real model's explanations can differ in every trial: past the first
            // MAX_FAILURES distinct ones, the rest are counted together (memory and time stay
            // bounded).
            let key = match self.failures.iter().position(|(w, _)| w == why) {
                Some(i) => Some(i),
                None if known => None,
                None => self.failures.iter().position(|(w, _)| w == OTHER_FAILURES),
            };
            match key {
                Some(i) => self.failures[i].1 += 1,
                None if known => self.failures.push((why.to_owned(), 1)),
                None => self.failures.push((OTHER_FAILURES.to_owned(), 1)),
            }
        }
    }

    fn outcome(&self) -> SideOutcome {
        let mut failures = self.failures.clone();
        failures.sort_by_key(|f| std::cmp::Reverse(f.1));
        SideOutcome {
            n: self.len() as u32,
            successes: self.successes as u32,
            infra_errors: self.infra,
            server_errors: self.server_errors,
            recovered_calls: self.recovered_calls,
            user_written: self.written,
            user_replayed: self.replayed,
            found_at_k: (self.found.1 > 0).then_some((self.found.0 as u32, self.found.1 as u32)),
            failures,
        }
    }
}

/// A trial whose own server failed, kept apart from the side's values until the cell is read:
/// whether it is the side's failure depends on the other side's trials ([`Cell::settled`]).
#[derive(Debug, Clone)]
struct ServerFailure {
    values: [f64; Metric::TESTED.len()],
    called: bool,
    why: String,
}

/// One task × host: the usable episodes of each side and the infra errors left out.
#[derive(Debug, Clone)]
pub(super) struct Cell {
    pub kind: TaskKind,
    pub set: TaskSet,
    /// Baseline, candidate.
    pub sides: [SideValues; 2],
    /// Per side, the trials whose own server failed, not yet in `sides` (see [`Cell::settled`]).
    server_failed: [Vec<ServerFailure>; 2],
}

impl Cell {
    pub fn new(e: &EpisodeFacts) -> Self {
        Self {
            kind: e.kind,
            set: e.set,
            sides: Default::default(),
            server_failed: Default::default(),
        }
    }

    /// Adds an episode of side `side` (0 baseline, 1 candidate).
    pub fn add(&mut self, side: usize, e: &EpisodeFacts) {
        if e.infra_error {
            self.sides[side].infra += 1;
        } else if e.server_error && !e.success {
            self.server_failed[side].push(ServerFailure {
                values: Metric::TESTED.map(|m| e.value(m)),
                called: e.tool_calls > 0,
                why: e.failure.to_string(),
            });
        } else {
            self.sides[side].add(e);
        }
    }

    /// Whether a trial's own server failed on one side only: those trials are that side's.
    pub fn server_failed_on(&self, side: usize) -> usize {
        self.server_failed[side].len()
    }

    /// The cell as the statistics read it. A trial whose own server failed is a failure of its
    /// side (the release that dies on a call is the regression), unless the other side's server
    /// failed on this task too: then neither side's server is to blame alone, and those trials
    /// are left out as infrastructure errors.
    pub fn settled(&self) -> Cow<'_, Cell> {
        if self.server_failed.iter().all(Vec::is_empty) {
            return Cow::Borrowed(self);
        }
        let mut cell = self.clone();
        let both = self.server_failed.iter().all(|f| !f.is_empty());
        for (side, failed) in std::mem::take(&mut cell.server_failed)
            .into_iter()
            .enumerate()
        {
            let values = &mut cell.sides[side];
            if both {
                values.infra += failed.len() as u32;
                continue;
            }
            values.server_errors += failed.len() as u32;
            for f in failed {
                values.add_values(&f.values, false, f.called, &f.why);
            }
        }
        Cow::Owned(cell)
    }

    /// Trials of both sides whose servers failed: left out of the statistics as infrastructure
    /// errors (see [`Cell::settled`]).
    pub fn server_failed_both(&self) -> usize {
        match self.server_failed.iter().all(|f| !f.is_empty()) {
            true => self.server_failed.iter().map(Vec::len).sum(),
            false => 0,
        }
    }

    /// Whether an episode of either side searched for tools and recorded `found_at_k`.
    pub fn has_found_at_k(&self) -> bool {
        self.sides.iter().any(|s| s.found.1 > 0)
    }

    /// Whether both sides have usable episodes.
    pub fn paired(&self) -> bool {
        !self.sides[0].is_empty() && !self.sides[1].is_empty()
    }

    /// Whether a side has any episode at all, usable or not.
    pub fn has_side(&self, side: usize) -> bool {
        !self.sides[side].is_empty()
            || self.sides[side].infra > 0
            || !self.server_failed[side].is_empty()
    }

    pub fn outcome(&self, task: &str, host: &str) -> TaskOutcome {
        TaskOutcome {
            task_id: task.to_owned(),
            host: host.to_owned(),
            kind: self.kind,
            set: self.set,
            baseline: self.sides[0].outcome(),
            candidate: self.sides[1].outcome(),
            user_turns: self.differing_user_turns(),
        }
    }

    /// Over the trials run on both sides, the user messages that differ between the two
    /// conversations of a pair (another message at the same place, or one side's extra
    /// messages), and the messages compared (the longer side's count per pair); `None` when the
    /// task is no conversation.
    fn differing_user_turns(&self) -> Option<(u32, u32)> {
        let [b, c] = [&self.sides[0].messages, &self.sides[1].messages];
        let mut counts = (0, 0);
        for (trial, base) in b {
            let Some(cand) = c.get(trial) else { continue };
            let longer = base.len().max(cand.len());
            let same = base.iter().zip(cand).filter(|(x, y)| x == y).count();
            counts.0 += (longer - same) as u32;
            counts.1 += longer as u32;
        }
        (counts.1 > 0).then_some(counts)
    }
}

pub(super) fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The sample standard deviation (n − 1), 0 for fewer than two values.
pub(super) fn sd(values: &[f64]) -> f64 {
    let Some(m) = mean(values) else { return 0.0 };
    if values.len() < 2 {
        return 0.0;
    }
    let ss: f64 = values.iter().map(|v| (v - m).powi(2)).sum();
    (ss / (values.len() - 1) as f64).sqrt()
}

/// The standard deviation of both sides' values pooled around their own means (n − 2).
pub(super) fn pooled_sd(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() + b.len();
    if n < 3 {
        return sd(a).max(sd(b));
    }
    let ss = |v: &[f64]| -> f64 {
        let m = mean(v).unwrap_or(0.0);
        v.iter().map(|x| (x - m).powi(2)).sum()
    };
    ((ss(a) + ss(b)) / (n - 2) as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_failures_are_bounded_and_the_rest_counted_together() {
        let mut side = SideValues::default();
        let facts = |failure: String| EpisodeFacts {
            host: "h",
            task_id: "t",
            trial: 0,
            model: "m",
            kind: TaskKind::Tool,
            set: TaskSet::Regression,
            infra_error: false,
            error_text: None,
            server_error: false,
            text_tool_calls: 0,
            replay_unmatched: 0,
            recovered_calls: 0,
            text_tool_call: None,
            turns_of_user: Default::default(),
            success: false,
            tool_calls: 1,
            tool_errors: 0,
            turns: 2,
            input_tokens: 10,
            output_tokens: 5,
            total_tokens: 15,
            reasoning_tokens: 0,
            judge_input_tokens: 0,
            judge_output_tokens: 0,
            latency_ms: 1.5,
            truncated: false,
            timed_out: false,
            ttft_ms: None,
            failure: failure.into(),
            unprepared_requests: 0,
            found_at_k: None,
        };
        for i in 0..MAX_FAILURES + 50 {
            side.add(&facts(format!("got `search`(q={i})")));
        }
        side.add(&facts("got `search`(q=0)".into()));
        let outcome = side.outcome();
        assert_eq!(outcome.failures.len(), MAX_FAILURES + 1);
        // Sorted by count: the 50 counted together, then the one seen twice.
        assert_eq!(outcome.failures[1], ("got `search`(q=0)".to_owned(), 2));
        let other = outcome.failures.iter().find(|(w, _)| w == OTHER_FAILURES);
        assert_eq!(other, Some(&(OTHER_FAILURES.to_owned(), 50)));
        let total: u32 = outcome.failures.iter().map(|(_, n)| n).sum();
        assert_eq!(total as usize, MAX_FAILURES + 51);
    }

    #[test]
    fn values_stay_exact_whole_or_real_in_their_order() {
        let mut v = Values::default();
        let mut all = Vec::new();
        let mut push = |v: &mut Values, xs: &[f64]| {
            for &x in xs {
                v.push(x);
                all.push(x);
            }
            assert_eq!(&*v.as_f64(), &all[..]);
            assert_eq!(v.len(), all.len());
        };
        push(&mut v, &[1.0, 0.0, 255.0]);
        assert!(matches!(v, Values::Byte(_)));
        push(&mut v, &[256.0, 7.0]);
        assert!(matches!(v, Values::Short(_)));
        push(&mut v, &[65_536.0, 4_000_000_000.0, 3.0]);
        assert!(matches!(v, Values::Whole(_)));
        // A fraction, a negative number or one past u32 turns the column into f64, keeping all.
        push(&mut v, &[582.381777, -1.0, 5_000_000_000.0, 7.0]);
        assert!(matches!(v, Values::Real(_)));
        for first in [5_000_000_000.0, 0.5, 70_000.0, 300.0] {
            let mut one = Values::default();
            one.push(first);
            one.push(2.0);
            assert_eq!(&*one.as_f64(), &[first, 2.0]);
        }
        // From u8 straight to f64.
        let mut jump = Values::default();
        jump.push(4.0);
        jump.push(0.25);
        assert!(matches!(jump, Values::Real(_)));
        assert_eq!(&*jump.as_f64(), &[4.0, 0.25]);
    }

    #[test]
    fn a_column_keeps_every_value_in_order_in_chunks_of_their_own_width() {
        let mut column = Column::default();
        assert_eq!(column.len(), 0);
        assert!(column.as_f64().is_empty());
        // Small counts, then one real value in the second chunk, then large whole numbers.
        let all: Vec<f64> = (0..3 * CHUNK + 17)
            .map(|i| match i {
                _ if i == CHUNK + 5 => 0.125,
                _ if i >= 2 * CHUNK => 70_000.0 + i as f64,
                _ => (i % 7) as f64,
            })
            .collect();
        for (i, &v) in all.iter().enumerate() {
            column.push(v);
            assert_eq!(column.len(), i + 1);
        }
        assert_eq!(&*column.as_f64(), &all[..]);
        assert_eq!(column.chunks.len(), 4);
        assert!(column.chunks[..3].iter().all(|c| c.len() == CHUNK));
        assert_eq!(column.chunks[3].len(), 17);
        // Each chunk is as narrow as its own values allow: the real value widens only its own.
        let widths: Vec<u8> = column.chunks.iter().map(Values::width).collect();
        assert_eq!(widths, [0, 3, 2, 2]);
        // A full chunk never grew past its size.
        assert!(matches!(&column.chunks[2], Values::Whole(w) if w.capacity() == CHUNK));
        // One chunk is lent as it is when it holds f64 already.
        let mut real = Column::default();
        real.push(0.5);
        assert!(matches!(real.as_f64(), Cow::Borrowed(_)));
    }
}
