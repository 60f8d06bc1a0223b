//! What a comparison is made of: its rows, the tasks' outcomes, what the run could detect, and
//! the run's outcome.

use std::collections::BTreeMap;

use serde::Serialize;

use super::EpisodeFacts;
use crate::analysis::verdict::{Level, Scope, TestName, Verdict};
use crate::config::{Metric, StatsConfig};
use crate::episode::Side;
use crate::suite::{TaskKind, TaskSet};

/// The `task_id` of suite-level rows.
pub const SUITE: &str = "*";
/// Planning advice looks no further than this many trials per side.
pub const MAX_PLANNED_TRIALS: u64 = 400;

/// One row of `comparison.parquet`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub task_id: String,
    pub host: String,
    pub metric: Metric,
    /// Episodes counted on each side (infrastructure errors left out).
    pub n_baseline: u32,
    pub n_candidate: u32,
    pub baseline_mean: Option<f64>,
    pub candidate_mean: Option<f64>,
    /// Candidate minus baseline (suite rows: the Mantel–Haenszel risk difference for rates, the
    /// mean of the per-task deltas for counts).
    pub delta: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub test: TestName,
    pub p_value: Option<f64>,
    pub p_adjusted: Option<f64>,
    pub verdict: Verdict,
    /// Whether a regression of this row fails the run.
    pub gated: bool,
    /// The margin in the metric's units (rates: absolute; counts: relative × baseline mean).
    pub margin: Option<f64>,
    /// k of a pass@k / pass^k row.
    pub k: Option<u32>,
    /// For an inconclusive task row: trials per side that would detect a change of the margin
    /// with the configured power (null when it cannot be estimated or exceeds
    /// [`MAX_PLANNED_TRIALS`]).
    pub trials_needed: Option<u64>,
    /// `task` for a task row; `suite`, `set:…` or `kind:…` for a suite row.
    pub scope: Scope,
    /// Count metrics: the ratio of the pooled means minus 1 (0.35 = 35 % more).
    pub relative_change: Option<f64>,
    /// The smallest change in the bad direction (in the metric's units, as `margin`) that this
    /// row flags as a regression with the configured power at its own level and trial counts;
    /// null when no change could be flagged.
    pub mde: Option<f64>,
    /// An adaptive run's task rows: trials per side the task ran to (its last look decided).
    pub trials_run: Option<u32>,
    /// An adaptive run's task rows: why the task stopped (null while it still runs).
    pub stopped: Option<crate::analysis::adaptive::Stopped>,
    /// A turn row's user turn (1-based; `scope = turn`); null for the other rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
}

impl Row {
    /// Whether a test ran (both sides had episodes and the metric has a test), or the row was
    /// compared exactly (a `kind: call` task with episodes on both sides, or on the candidate
    /// alone for a task on a tool only the candidate lists).
    pub fn tested(&self) -> bool {
        self.p_value.is_some()
            || (self.test == TestName::Exact && self.n_baseline > 0 && self.n_candidate > 0)
            || (self.test == TestName::CandidateOnly && self.n_candidate > 0)
    }

    /// Whether this is a suite row (any scope).
    pub fn is_suite(&self) -> bool {
        self.task_id == SUITE
    }

    /// Whether the row goes into `history.parquet`: task rows and the whole suite's rows (the
    /// parts of a suite, its sets and kinds, are left to each run's comparison).
    pub fn in_history(&self) -> bool {
        matches!(self.scope, Scope::Task | Scope::Suite)
    }
}

/// Outcomes of one side of one task, for the written reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SideOutcome {
    pub n: u32,
    pub successes: u32,
    pub infra_errors: u32,
    /// Trials whose own server failed (it exited or closed its transport during a call, on this
    /// side only): counted in `n` as failures.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub server_errors: u32,
    /// Tool calls the model wrote as text that its host made (`recover_text_calls`), counted
    /// among the side's calls.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub recovered_calls: u32,
    /// User messages a simulated user wrote (`user:`), and messages that were the baseline's,
    /// sent again (`--replay-user-turns`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub user_written: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub user_replayed: u32,
    /// Under tool search: (trials whose search ranked the task's tool within k, trials that
    /// recorded it); absent without tool search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_at_k: Option<(u32, u32)>,
    /// Distinct grade explanations of failed trials, with how many trials gave each, most first.
    pub failures: Vec<(String, u32)>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One task × host: both sides' outcomes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskOutcome {
    pub task_id: String,
    pub host: String,
    pub kind: TaskKind,
    pub set: TaskSet,
    pub baseline: SideOutcome,
    pub candidate: SideOutcome,
    /// A conversation: its user messages that differed between the sides of a pair, of those
    /// compared (see `Cell::differing_user_turns`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_turns: Option<(u32, u32)>,
}

impl TaskOutcome {
    /// A regression-set task whose baseline passed every trial and whose candidate failed one.
    pub fn broke(&self) -> bool {
        self.set == TaskSet::Regression
            && self.baseline.n > 0
            && self.baseline.successes == self.baseline.n
            && self.candidate.n > 0
            && self.candidate.successes < self.candidate.n
    }
}

/// The smallest success drops the run could detect, per task and for the whole suite.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Detectable {
    /// The median trials per side of the host's tasks.
    pub trials: u64,
    /// The per-task level after correction in the worst case (family level / tasks).
    pub alpha: f64,
    pub power: f64,
    /// The baseline rate of the per-task figure (the regression set's expectation, 100 %).
    pub baseline_rate: f64,
    /// `None`: not even a drop to 0 % is detected with that power.
    pub drop: Option<f64>,
    /// The whole-suite success row's `mde`: a drop of every task's rate by this much is flagged
    /// with `power` (`None`: none is).
    pub suite_drop: Option<f64>,
    /// The level of that row in the worst case of the correction (family level / gated suite
    /// rows).
    pub suite_alpha: Option<f64>,
}

/// What the run as a whole comes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// No gated regression (exit 0).
    Pass,
    /// A gated metric regressed (exit 1).
    Regression,
    /// Too many infrastructure errors to trust the statistics (exit 3).
    InfraFailure,
}

impl Outcome {
    /// The documented exit code of this outcome.
    pub fn exit(self) -> crate::error::Exit {
        match self {
            Self::Pass => crate::error::Exit::Ok,
            Self::Regression => crate::error::Exit::Regression,
            Self::InfraFailure => crate::error::Exit::Infra,
        }
    }
}

/// The comparison of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub rows: Vec<Row>,
    pub tasks: Vec<TaskOutcome>,
    pub stats: StatsConfig,
    pub level: Level,
    pub episodes: usize,
    pub infra_errors: usize,
    /// Per host.
    pub detectable: Vec<(String, Detectable)>,
    /// What each host and side used, over every episode (infrastructure errors included).
    pub usage: Vec<UsageTotal>,
    /// The rows of conversations' user turns (`scope = turn`), kept apart from `rows`: they
    /// explain a task's row and gate nothing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub turn_rows: Vec<Row>,
}

/// Requests and tokens of one host and side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageTotal {
    pub host: String,
    pub side: Side,
    /// The model as the provider named it (the last episode's).
    pub model: String,
    pub episodes: u64,
    /// Model requests: one per agent turn.
    pub requests: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// A task judge's calls (one per judged episode) and tokens, apart from the model's.
    pub judge_requests: u64,
    pub judge_input_tokens: u64,
    pub judge_output_tokens: u64,
    /// Output tokens spent on reasoning (part of `output_tokens`).
    pub reasoning_tokens: u64,
    /// Episodes with an answer stopped at the output cap, and cut at the timeout.
    pub truncated: u64,
    pub timed_out: u64,
    /// The first turns' times to first token: their sum and count (streamed answers).
    pub ttft_ms_sum: f64,
    pub ttft_episodes: u64,
    /// Trials of `kind: tool` tasks that ran (no infrastructure error), and how many of them
    /// made at least one structured tool call.
    pub tool_task_trials: u64,
    pub tool_task_trials_with_calls: u64,
    /// Trials whose answers wrote a tool call as text, and the first one's excerpt.
    pub text_call_trials: u64,
    pub text_call: Option<String>,
    /// Tool calls made, and how many of them a
    /// replay server had no recorded answer for (`replay:` servers).
    pub tool_calls: u64,
    pub replay_unmatched: u64,
    /// Of `tool_calls`, those the model wrote as text that the host made (`recover_text_calls`).
    pub recovered_calls: u64,
    /// Infrastructure errors, and the first one's text.
    pub infra_errors: u64,
    pub infra_error: Option<String>,
    /// The server's requests the tasks did not say how to answer (answered "method not found").
    pub unprepared_requests: u64,
}

impl UsageTotal {
    fn new(host: &str, side: Side) -> Self {
        Self {
            host: host.to_owned(),
            side,
            model: String::new(),
            episodes: 0,
            requests: 0,
            input_tokens: 0,
            output_tokens: 0,
            judge_requests: 0,
            judge_input_tokens: 0,
            judge_output_tokens: 0,
            reasoning_tokens: 0,
            truncated: 0,
            timed_out: 0,
            ttft_ms_sum: 0.0,
            ttft_episodes: 0,
            tool_task_trials: 0,
            tool_task_trials_with_calls: 0,
            text_call_trials: 0,
            text_call: None,
            tool_calls: 0,
            replay_unmatched: 0,
            recovered_calls: 0,
            infra_errors: 0,
            infra_error: None,
            unprepared_requests: 0,
        }
    }

    /// The mean time to first token of the streamed episodes.
    pub fn mean_ttft_ms(&self) -> Option<f64> {
        (self.ttft_episodes > 0).then(|| self.ttft_ms_sum / self.ttft_episodes as f64)
    }

    /// Whether anything of how the model answered is worth a line: reasoning, cut answers,
    /// first-token times.
    pub fn has_answer_facts(&self) -> bool {
        self.reasoning_tokens + self.truncated + self.timed_out + self.ttft_episodes > 0
    }

    fn add(&mut self, e: &EpisodeFacts) {
        if self.model != e.model {
            e.model.clone_into(&mut self.model);
        }
        self.episodes += 1;
        self.requests += u64::from(e.turns);
        self.input_tokens += e.input_tokens;
        self.output_tokens += e.output_tokens;
        self.judge_requests += u64::from(e.judge_input_tokens + e.judge_output_tokens > 0);
        self.judge_input_tokens += e.judge_input_tokens;
        self.judge_output_tokens += e.judge_output_tokens;
        self.reasoning_tokens += e.reasoning_tokens;
        self.truncated += u64::from(e.truncated);
        self.timed_out += u64::from(e.timed_out);
        if let Some(ttft) = e.ttft_ms {
            self.ttft_ms_sum += ttft;
            self.ttft_episodes += 1;
        }
        if e.kind == crate::suite::TaskKind::Tool && !e.infra_error {
            self.tool_task_trials += 1;
            // Structured calls: a recovered call was written as text.
            self.tool_task_trials_with_calls += u64::from(e.tool_calls > e.recovered_calls);
        }
        self.tool_calls += u64::from(e.tool_calls);
        self.replay_unmatched += u64::from(e.replay_unmatched);
        self.recovered_calls += u64::from(e.recovered_calls);
        self.unprepared_requests += u64::from(e.unprepared_requests);
        if e.infra_error {
            self.infra_errors += 1;
            if self.infra_error.is_none() {
                self.infra_error = e.error_text.map(str::to_owned);
            }
        }
        if e.text_tool_calls > 0 {
            self.text_call_trials += 1;
            if self.text_call.is_none() {
                self.text_call = e.text_tool_call.map(str::to_owned);
            }
        }
    }
}

/// Usage per host and side, kept as episodes arrive.
#[derive(Debug, Default, Clone)]
pub(super) struct Usage(BTreeMap<(String, Side), UsageTotal>);

impl Usage {
    pub(super) fn add(&mut self, side: Side, e: &EpisodeFacts) {
        if let Some(t) = self.0.get_mut(&(e.host.to_owned(), side)) {
            return t.add(e);
        }
        let mut t = UsageTotal::new(e.host, side);
        t.add(e);
        self.0.insert((e.host.to_owned(), side), t);
    }

    pub(super) fn totals(&self) -> Vec<UsageTotal> {
        self.0.values().cloned().collect()
    }
}

/// What the simulated users of a run did, summed over its conversation tasks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimulatedUsers {
    /// User messages that differed between the sides of a pair, of those compared.
    pub differing: u32,
    pub compared: u32,
    /// Candidate messages that were the baseline's, replayed (`--replay-user-turns`), and those
    /// a simulated user wrote.
    pub replayed: u32,
    pub written: u32,
}

impl Comparison {
    /// What the run's simulated users did; `None` when no user message was written by one or
    /// replayed.
    pub fn simulated_users(&self) -> Option<SimulatedUsers> {
        let mut s = SimulatedUsers::default();
        let mut any = false;
        for t in &self.tasks {
            let sides = [&t.baseline, &t.candidate];
            any |= sides.iter().any(|o| o.user_written + o.user_replayed > 0);
            if let Some((differing, compared)) = t.user_turns {
                s.differing += differing;
                s.compared += compared;
            }
            s.replayed += t.candidate.user_replayed;
            s.written += t.candidate.user_written;
        }
        any.then_some(s)
    }

    pub fn gated_regressions(&self) -> impl Iterator<Item = &Row> {
        self.rows
            .iter()
            .filter(|r| r.gated && r.verdict == Verdict::Regression)
    }

    /// The tool calls of the run's model episodes written as text and made by their host
    /// (`recover_text_calls`), of all their calls: `None` when none were.
    pub fn recovered_calls(&self) -> Option<(u64, u64)> {
        let (recovered, calls) = (self.usage.iter()).fold((0, 0), |(r, n), u| {
            (r + u.recovered_calls, n + u.tool_calls)
        });
        (recovered > 0).then_some((recovered, calls))
    }

    /// The server's requests no task said how to answer, summed over hosts and sides; `None`
    /// when there were none.
    pub fn unprepared_requests(&self) -> Option<u64> {
        let n: u64 = self.usage.iter().map(|u| u.unprepared_requests).sum();
        (n > 0).then_some(n)
    }

    pub fn infra_share(&self) -> f64 {
        if self.episodes == 0 {
            return 0.0;
        }
        self.infra_errors as f64 / self.episodes as f64
    }

    /// Infrastructure first: with too many infra errors no verdict can be trusted.
    pub fn outcome(&self) -> Outcome {
        if self.infra_share() > self.stats.max_infra_share {
            Outcome::InfraFailure
        } else if self.gated_regressions().next().is_some() {
            Outcome::Regression
        } else {
            Outcome::Pass
        }
    }

    /// The gated verdict of one task: regression beats inconclusive beats improvement beats no
    /// change, with the metrics behind it.
    pub fn task_verdict(&self, t: &TaskOutcome) -> TaskVerdict {
        let rows: Vec<&Row> = self
            .task_rows(&t.task_id, &t.host)
            .filter(|r| r.gated && r.tested())
            .collect();
        for verdict in [
            Verdict::Regression,
            Verdict::Inconclusive,
            Verdict::Improvement,
        ] {
            let metrics: Vec<Metric> = rows
                .iter()
                .filter(|r| r.verdict == verdict)
                .map(|r| r.metric)
                .collect();
            if !metrics.is_empty() {
                return TaskVerdict { verdict, metrics };
            }
        }
        TaskVerdict {
            verdict: if rows.is_empty() {
                Verdict::Inconclusive
            } else {
                Verdict::NoChange
            },
            metrics: Vec::new(),
        }
    }

    /// The rows of one task × host.
    /// Whether the task ran on the candidate alone (a call task on a tool only the candidate
    /// lists): its row's test is `candidate_only`.
    pub fn candidate_alone(&self, t: &TaskOutcome) -> bool {
        (self.task_rows(&t.task_id, &t.host)).any(|r| r.test == TestName::CandidateOnly)
    }

    pub fn task_rows<'a>(&'a self, task: &'a str, host: &'a str) -> impl Iterator<Item = &'a Row> {
        self.rows
            .iter()
            .filter(move |r| r.task_id == task && r.host == host)
    }

    /// The suite rows of one host, scope by scope.
    /// The task rows a suite row stands for: its metric and host, tasks of its scope.
    pub fn task_rows_of<'a>(&'a self, suite: &'a Row) -> impl Iterator<Item = &'a Row> {
        let in_scope = move |task: &str| {
            (self.tasks.iter()).any(|t| {
                t.task_id == task && t.host == suite.host && suite.scope.holds(t.kind, t.set)
            })
        };
        (self.rows.iter()).filter(move |r| {
            r.scope == Scope::Task
                && r.metric == suite.metric
                && r.host == suite.host
                && in_scope(&r.task_id)
        })
    }

    pub fn suite_rows<'a>(&'a self, host: &'a str) -> impl Iterator<Item = &'a Row> {
        self.rows
            .iter()
            .filter(move |r| r.is_suite() && r.host == host)
    }
}

/// A task's gated verdict and the metrics that gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskVerdict {
    pub verdict: Verdict,
    pub metrics: Vec<Metric>,
}

impl std::fmt::Display for TaskVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.metrics.is_empty() {
            return match self.verdict {
                Verdict::Inconclusive => f.write_str("inconclusive (a side has no episodes)"),
                v => f.write_str(v.as_str()),
            };
        }
        let names: Vec<&str> = self.metrics.iter().map(|m| m.as_str()).collect();
        write!(f, "{} ({})", self.verdict, names.join(", "))
    }
}
