//! A conversation's user turns: the record of each user message and what followed it, and the
//! grade of one turn from its own calls and answer.

use serde::{Deserialize, Serialize};

use super::record::ToolCallRecord;
use crate::grade::{Grade, Observed, ObservedCall};
use crate::suite::{Expectations, TaskKind};

/// Who wrote a user message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Author {
    /// The task's `turns:` (or its `prompt`, the first message of a simulated user's task).
    Script,
    /// A simulated user's model.
    User,
    /// The baseline trial's recorded message, sent again (`--replay-user-turns`).
    Replay,
}

/// One user message of a conversation and what followed it, until the model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserTurnRecord {
    /// 1-based.
    pub turn: u32,
    pub by: Author,
    /// The user's message.
    pub message: String,
    /// Whether the turn's own `expect` passed; `None` when the turn has none or did not run.
    pub success: Option<bool>,
    /// `false` when an earlier turn failed and the task says `stop_on_failure: true`.
    pub ran: bool,
    /// The tool calls made in the turn: how many, and the index of the first in the episode's.
    pub tool_calls: u32,
    pub first_call: u32,
    /// Model turns taken in the turn.
    pub model_turns: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub latency_ms: f64,
    /// The model's answer that ended the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The turn ended at its `max_turns` rather than on an answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hit_max_turns: bool,
    /// The simulated user's model's tokens for writing this message (apart from the model's).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub user_input_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub user_output_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl UserTurnRecord {
    /// A turn that did not run (`stop_on_failure` after a failed one).
    pub fn skipped(turn: u32, message: &str, first_call: u32) -> Self {
        Self {
            turn,
            by: Author::Script,
            message: message.to_owned(),
            success: None,
            ran: false,
            tool_calls: 0,
            first_call,
            model_turns: 0,
            input_tokens: 0,
            output_tokens: 0,
            latency_ms: 0.0,
            answer: None,
            hit_max_turns: false,
            user_input_tokens: 0,
            user_output_tokens: 0,
        }
    }

    /// The turn's calls among the episode's.
    pub fn calls<'c>(&self, all: &'c [ToolCallRecord]) -> &'c [ToolCallRecord] {
        let start = (self.first_call as usize).min(all.len());
        let end = (start + self.tool_calls as usize).min(all.len());
        &all[start..end]
    }
}

/// The user messages a conversation sent, in order (a turn left unrun by `stop_on_failure`
/// sent none): what `--replay-user-turns` hands a candidate trial.
pub fn messages_sent(turns: &[UserTurnRecord]) -> impl Iterator<Item = &str> {
    turns.iter().filter(|t| t.ran).map(|t| t.message.as_str())
}

/// Grades calls and an answer against one set of graders, as the run records them (the calls'
/// arguments parsed from their JSON text; a call whose arguments are not JSON matches no `args`).
pub fn grade_calls(
    kind: TaskKind,
    expect: &Expectations,
    calls: &[ToolCallRecord],
    answer: Option<&str>,
    latency_ms: f64,
) -> Grade {
    let parsed: Vec<Option<serde_json::Value>> = calls
        .iter()
        .map(|c| serde_json::from_str(&c.arguments).ok())
        .collect();
    let observed = Observed {
        calls: calls
            .iter()
            .zip(&parsed)
            .map(|(c, args)| ObservedCall {
                tool: &c.tool,
                arguments: args.as_ref(),
                result: &c.result,
                is_error: c.is_error,
            })
            .collect(),
        answer,
        latency_ms: Some(latency_ms),
    };
    crate::grade::grade_expect(kind, expect, &observed)
}

/// The user turns' values of a conversation's episodes as `episodes.parquet` keeps them: the
/// list as JSON text (`None` for a task of one prompt).
pub fn user_turns_json(turns: &[UserTurnRecord]) -> Option<String> {
    (!turns.is_empty()).then(|| serde_json::to_string(turns).unwrap_or_default())
}

/// What a comparison reads of a conversation's user turns: each turn's success (`None` where
/// the turn was not graded on its own), a hash of each user message (to count the turns that
/// differ between the sides of a pair), and how many messages a simulated user wrote and how
/// many were the baseline's, replayed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnFacts {
    pub successes: Vec<Option<bool>>,
    pub messages: Vec<u64>,
    pub written: u32,
    pub replayed: u32,
}

impl TurnFacts {
    pub fn of(turns: &[UserTurnRecord]) -> Self {
        let by = |a: Author| turns.iter().filter(|t| t.by == a).count() as u32;
        Self {
            successes: turns.iter().map(|t| t.success).collect(),
            messages: messages_sent(turns)
                .map(|m| xxhash_rust::xxh3::xxh3_64(m.as_bytes()))
                .collect(),
            written: by(Author::User),
            replayed: by(Author::Replay),
        }
    }

    /// From the episode table's `user_turns` JSON text; unreadable text reads as no turns.
    pub fn of_json(json: &str) -> Self {
        serde_json::from_str::<Vec<UserTurnRecord>>(json)
            .map(|turns| Self::of(&turns))
            .unwrap_or_default()
    }
}
