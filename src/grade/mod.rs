//! Graders: small named checks of an episode against a task's expectations; a grade explains itself.

pub mod asks;
pub mod call;
mod exposure;
mod graders;
pub mod judge;
mod matchers;
mod position;
mod snapshot;

use serde::{Deserialize, Serialize};

pub use call::{grade_call, CallAnswer};
pub use exposure::{exposure_checks, HostRequest};
pub use graders::{grade, grade_expect};
pub use judge::{JudgeRecord, Judged};
pub use snapshot::{same_text, short_diff};

/// The outcome of one grader.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// The grader's name: `expected_calls`, `forbidden_tools`, `no_tool`, `answer_contains`,
    /// `answer_not_contains`, `answer_regex`, `max_tool_calls`, `min_tool_calls`,
    /// `max_latency_ms`, `judge` (the model-graded check).
    pub grader: String,
    pub passed: bool,
    /// In words, what was expected and what happened ("expected `create_issue` with
    /// project=apollo, got `search_issues`"). Filled for passes too.
    pub explanation: String,
    /// The user turn (1-based) a conversation's check graded; `None` for a check of the whole
    /// trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
}

/// A check of the whole trial (no turn of its own).
fn check(grader: &str, passed: bool, explanation: String) -> Check {
    Check {
        grader: grader.to_owned(),
        passed,
        explanation,
        turn: None,
    }
}

/// Every grader's outcome; success means every one passed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Grade {
    pub success: bool,
    pub checks: Vec<Check>,
}

impl Grade {
    /// The explanations of the failed checks, joined: what a report shows for a failed trial.
    pub fn failure_summary(&self) -> String {
        self.checks
            .iter()
            .filter(|c| !c.passed)
            .map(|c| match c.turn {
                Some(turn) => format!("turn {turn}: {}: {}", c.grader, c.explanation),
                None => format!("{}: {}", c.grader, c.explanation),
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// What graders see of a trial: the tool calls the model made (by the server's tool names) and
/// its final answer.
#[derive(Debug, Clone, Default)]
pub struct Observed<'a> {
    pub calls: Vec<ObservedCall<'a>>,
    pub answer: Option<&'a str>,
    /// How long the trial took (`max_latency_ms`); `None` where it is not known.
    pub latency_ms: Option<f64>,
}

/// One call as graders see it. `arguments` is `None` when the model's arguments were not JSON.
#[derive(Debug, Clone, Default)]
pub struct ObservedCall<'a> {
    pub tool: &'a str,
    pub arguments: Option<&'a serde_json::Value>,
    /// The result as the model read it, and whether it was an error.
    pub result: &'a str,
    pub is_error: bool,
}
