//! What a comparison reads of one episode, borrowed from a stored episode or a table row.

use std::borrow::Cow;

use super::Episode;
use crate::config::Metric;
use crate::suite::{TaskKind, TaskSet};

/// What a comparison reads of one episode: the same whether it comes from `episodes.jsonl` or
/// from a row of `episodes.parquet`.
#[derive(Debug, Clone)]
pub struct EpisodeFacts<'a> {
    pub host: &'a str,
    pub task_id: &'a str,
    /// The trial's index (adaptive runs replay their looks in trial order).
    pub trial: u32,
    pub model: &'a str,
    pub kind: TaskKind,
    pub set: TaskSet,
    pub infra_error: bool,
    /// The infrastructure error's or the server error's text, when the episode has one.
    pub error_text: Option<&'a str>,
    /// The side's own server failed during the trial (`Episode::server_error`): a failure of the
    /// side, unless the other side's server failed on the same task too.
    pub server_error: bool,
    /// Answers that wrote a tool call as text, and the first one's excerpt (`None` from tables).
    pub text_tool_calls: u32,
    /// Tool calls a replay server answered "no recorded answer" (its cassette lacked them).
    pub replay_unmatched: u32,
    /// Tool calls written as text that the host made (`recover_text_calls`), of `tool_calls`.
    pub recovered_calls: u32,
    pub text_tool_call: Option<&'a str>,
    pub success: bool,
    pub tool_calls: u32,
    pub tool_errors: u32,
    pub turns: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    pub reasoning_tokens: u64,
    pub judge_input_tokens: u64,
    pub judge_output_tokens: u64,
    pub latency_ms: f64,
    /// An answer stopped at the output cap, or was cut at the timeout (read as false from
    /// tables written before these columns).
    pub truncated: bool,
    pub timed_out: bool,
    /// The first model turn's time to first token (streamed answers).
    pub ttft_ms: Option<f64>,
    /// Why the grade failed (`Grade::failure_summary`, the tables' `grade_failures`); read only
    /// for a failed episode.
    pub failure: Cow<'a, str>,
    /// A conversation's user turns: each turn's own grade, its message's hash, who wrote them
    /// (empty for a task of one message).
    pub turns_of_user: super::TurnFacts,
    /// The server's requests the task did not say how to answer (`sampling:`, `elicitation:`),
    /// answered "method not found" (read as 0 from tables written before the column).
    pub unprepared_requests: u32,
    /// Whether a search for tools ranked one of the task's within k (`tool_search`); `None`
    /// without tool search or for a task that expects no tool.
    pub found_at_k: Option<bool>,
}

/// A server error's first line (without the stderr tail that follows it), as a failure's reason.
pub fn server_error_line(error: &str) -> &str {
    error.lines().next().unwrap_or(error)
}

impl<'a> EpisodeFacts<'a> {
    pub fn of(e: &'a Episode) -> Self {
        Self {
            host: &e.host,
            task_id: &e.task_id,
            trial: e.trial,
            model: &e.model,
            kind: e.kind,
            set: e.set,
            infra_error: e.infra_error.is_some(),
            error_text: e.infra_error.as_deref().or(e.server_error.as_deref()),
            server_error: e.server_error.is_some(),
            text_tool_calls: e.text_calls.count,
            replay_unmatched: e.replay_unmatched(),
            recovered_calls: e.recovered_calls(),
            text_tool_call: e.text_calls.first.as_deref(),
            success: e.success,
            tool_calls: e.tool_calls,
            tool_errors: e.tool_errors,
            turns: e.turns,
            input_tokens: e.input_tokens,
            output_tokens: e.output_tokens,
            total_tokens: e.total_tokens,
            reasoning_tokens: e.reasoning_tokens,
            judge_input_tokens: e.judge_input_tokens,
            judge_output_tokens: e.judge_output_tokens,
            latency_ms: e.latency_ms,
            truncated: e.truncated,
            timed_out: e.timed_out,
            ttft_ms: e.ttft_ms,
            turns_of_user: super::TurnFacts::of(&e.user_turns),
            failure: match &e.server_error {
                _ if e.success => Cow::Borrowed(""),
                Some(error) => Cow::Borrowed(server_error_line(error)),
                None => Cow::Owned(e.grade.failure_summary()),
            },
            unprepared_requests: e.unprepared_requests,
            found_at_k: e.tool_search.as_ref().and_then(|s| s.found_at_k),
        }
    }

    /// The episode's value of a per-episode metric ([`Metric::TESTED`]).
    pub fn value(&self, metric: Metric) -> f64 {
        match metric {
            Metric::Success => f64::from(u8::from(self.success)),
            Metric::ToolCalls => f64::from(self.tool_calls),
            Metric::ToolErrors => f64::from(self.tool_errors),
            Metric::InputTokens => self.input_tokens as f64,
            Metric::OutputTokens => self.output_tokens as f64,
            Metric::TotalTokens => self.total_tokens as f64,
            Metric::ReasoningTokens => self.reasoning_tokens as f64,
            Metric::Turns => f64::from(self.turns),
            Metric::LatencyMs => self.latency_ms,
            Metric::PassAtK
            | Metric::PassHatK
            | Metric::FalseCallRate
            | Metric::MissedCallRate
            | Metric::FoundAtK => {
                unreachable!("only the tested metrics are kept per episode")
            }
        }
    }
}
