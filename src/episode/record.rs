//! The episode record: what one trial did, as stored in `episodes.jsonl` and the tables.

use serde::{Deserialize, Serialize};

use crate::grade::Grade;
use crate::suite::{TaskKind, TaskSet};

/// Which server version a trial ran against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Baseline,
    Candidate,
}

impl Side {
    pub const BOTH: [Side; 2] = [Side::Baseline, Side::Candidate];

    pub fn as_str(self) -> &'static str {
        match self {
            Side::Baseline => "baseline",
            Side::Candidate => "candidate",
        }
    }
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One tool call made during a trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// 0-based position of the call within the trial.
    pub index: u32,
    /// The server's tool name (mapped back from what the model called).
    pub tool: String,
    /// The arguments as the model sent them (JSON text, possibly invalid).
    pub arguments: String,
    pub is_error: bool,
    /// JSON-RPC error code when the call failed at the protocol level.
    pub error_code: Option<i64>,
    /// Who caused the error, when there was one: `model` (unknown tool, bad JSON), `tool`
    /// (`isError` result), `protocol` (JSON-RPC error), `timeout`, `server` (the server exited or
    /// closed its transport during the call).
    pub error_kind: Option<String>,
    pub latency_ms: f64,
    /// The result text sent back to the model (truncated in this record when very long).
    pub result: String,
    /// A replay server answered it though its cassette did not hold the call (by its
    /// `unmatched` policy: an error, the nearest recorded call, or the live base).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replay_unmatched: bool,
    /// The model wrote this call as text and its host made it (`recover_text_calls`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recovered: bool,
    /// The user turn (1-based) the call was made in: 1 for every call of a one-message task.
    #[serde(default = "first_turn", skip_serializing_if = "is_first_turn")]
    pub user_turn: u32,
}

fn first_turn() -> u32 {
    1
}

fn is_first_turn(turn: &u32) -> bool {
    *turn == 1
}

impl ToolCallRecord {
    /// A call made, its outcome to be filled in.
    pub fn made(index: u32, tool: &str, arguments: &str) -> Self {
        Self {
            is_error: false,
            error_kind: None,
            ..Self::refused(index, tool, arguments)
        }
    }

    /// A call refused before it reached the server (an unknown tool, arguments that are not an
    /// object): the model's error, its result to be filled in.
    pub fn refused(index: u32, tool: &str, arguments: &str) -> Self {
        Self {
            index,
            tool: tool.to_owned(),
            arguments: arguments.to_owned(),
            is_error: true,
            error_code: None,
            error_kind: Some("model".into()),
            latency_ms: 0.0,
            result: String::new(),
            replay_unmatched: false,
            recovered: false,
            user_turn: 1,
        }
    }

    /// Whether a result's text carries a replay server's "no recorded answer" (how a call through an
    /// app host, whose results mcpeval reads as text, is known to be unmatched).
    pub fn says_no_record(is_error: bool, result: &str) -> bool {
        is_error && result.contains(crate::cassette::NO_RECORD)
    }
}

/// The record of one trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    /// The format of this line (`rundir::FORMAT_VERSION`); absent in lines of format 1.0.
    #[serde(default = "format_1_0")]
    pub format_version: String,
    pub run_id: String,
    pub task_id: String,
    pub kind: TaskKind,
    pub set: TaskSet,
    pub side: Side,
    pub host: String,
    pub model: String,
    pub trial: u32,
    pub seed: u64,
    pub success: bool,
    pub infra_error: Option<String>,
    /// The side's own server failed during the trial (it exited or closed its transport during a
    /// call, or would not start) on every attempt: "candidate server failed during tools/call
    /// `x`: …" with its stderr's tail. The trial is the side's failure (`success` false) and
    /// counts in the verdict, unless the other side's server failed on the same task too (then
    /// both are left out as infrastructure errors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_error: Option<String>,
    pub turns: u32,
    pub tool_calls: u32,
    pub tool_errors: u32,
    pub protocol_errors: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    /// Prompt-cache reads and writes summed over the turns, where the provider reports them
    /// apart from `input_tokens` (Anthropic); 0 otherwise.
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// The judge's own tokens (`judge:` tasks), kept apart: not in input/output/total tokens.
    #[serde(default)]
    pub judge_input_tokens: u64,
    #[serde(default)]
    pub judge_output_tokens: u64,
    pub latency_ms: f64,
    pub first_tool: Option<String>,
    /// Tools called, in order, joined by `,`.
    pub tools_called: String,
    pub final_answer: Option<String>,
    /// True when the loop stopped at `max_turns` rather than on an answer.
    pub hit_max_turns: bool,
    /// Output tokens spent on reasoning, summed over the turns (part of `output_tokens`).
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// A model turn stopped at the output cap (`max_tokens`): the model's outcome, graded as it
    /// came back.
    #[serde(default)]
    pub truncated: bool,
    /// The first turn (1-based) that stopped at the cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated_turn: Option<u32>,
    /// The model was still answering (streamed) at the host's `timeout_s`: the trial ended with
    /// what it had produced, graded as such. The model's outcome, not an infrastructure error.
    #[serde(default)]
    pub timed_out: bool,
    /// A model turn's provider sent no token counts (a streamed answer cut at the timeout):
    /// that turn's input and output tokens are mcpeval's estimate, not the provider's count.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tokens_estimated: bool,
    /// Time to the first token of the first model turn (streamed answers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    /// How each model turn's answer arrived.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_turns: Vec<ModelTurn>,
    pub calls: Vec<ToolCallRecord>,
    pub grade: Grade,
    /// Earlier attempts of this trial that ended in an infrastructure error, oldest first.
    #[serde(default)]
    pub attempts: Vec<String>,
    /// Requests to the model that failed (429, 5xx, timeouts) and were retried within a turn,
    /// one line each, oldest first: the provider's trouble, kept although the trial went on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub request_retries: Vec<String>,
    pub started_at: String,
    /// The tools offered to the model, by their server names in the order it saw them, joined
    /// by `,` (the host's `tool_order`, cut at `max_tools`); empty for call tasks, app hosts
    /// and records written before it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tools_offered: String,
    /// The model's answers that carried a tool call written as text instead of made (JSON or
    /// XML naming an offered tool): `text_tool_calls` (how many) and `text_tool_call` (an
    /// excerpt of the first); where the host recovers them (`recover_text_calls`),
    /// `recovered_calls` (made, among `calls`) and `unparsed_text_calls` (not made: their
    /// arguments did not parse). Each absent when 0.
    #[serde(
        flatten,
        default,
        skip_serializing_if = "super::TextToolCalls::is_empty"
    )]
    pub text_calls: super::TextToolCalls,
    /// What an app host (Claude Code, …) reported besides the loop's record; absent for API hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<AppFacts>,
    /// A conversation's user messages (`turns:`, a simulated user), one entry each, in order,
    /// with what followed each; absent for a task of one prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_turns: Vec<super::UserTurnRecord>,
    /// The server's `sampling/createMessage` requests during the trial (answered or not).
    #[serde(default)]
    pub sampling_requests: u32,
    /// Its `elicitation/create` requests.
    #[serde(default)]
    pub elicitation_requests: u32,
    /// Requests the task did not say how to answer: answered "method not found", as a client
    /// without the capability would.
    #[serde(default)]
    pub unprepared_requests: u32,
    /// The sampling model's own tokens (`sampling: {host}`), apart from the task's model's.
    #[serde(default)]
    pub sampling_input_tokens: u64,
    #[serde(default)]
    pub sampling_output_tokens: u64,
    /// Each request and its answer, in order (src/mcp/asks.rs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asks: Vec<crate::mcp::AskRecord>,
    /// The host's requests for what it showed besides tools (`expose`): its resource tools'
    /// calls (`resources/list`, `resource:URI`), attachments (`resource:URI`, with `"attached":
    /// true` in the arguments), the server prompt the trial started from (`prompt:NAME`). Not
    /// among `calls`, `tool_calls` or `tools_called`, which count the server's tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_calls: Vec<ToolCallRecord>,
    /// The trial's searches for tools, and whether they found the task's (`tool_search`);
    /// absent without tool search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_search: Option<super::ToolSearchFacts>,
}

/// How one model turn's answer arrived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelTurn {
    /// 1-based.
    pub turn: u32,
    /// Time to the first token (streamed answers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    /// From sending the request to the end of the answer (the attempt that gave it).
    pub latency_ms: f64,
    pub output_tokens: u64,
    /// Output tokens per second after the first (streamed answers of two tokens or more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
}

impl Episode {
    /// Calls a replay server answered without a recording of them.
    pub fn replay_unmatched(&self) -> u32 {
        self.calls.iter().filter(|c| c.replay_unmatched).count() as u32
    }

    /// Calls the model wrote as text that its host made (`recover_text_calls`): counted in
    /// `tool_calls` as calls, and apart here.
    pub fn recovered_calls(&self) -> u32 {
        self.text_calls.recovered
    }

    /// The searches for tools the trial made (0 without tool search).
    pub fn tool_searches(&self) -> u32 {
        self.tool_search
            .as_ref()
            .map_or(0, |s| s.searches.len() as u32)
    }
}

impl ModelTurn {
    pub fn of(
        turn: u32,
        timing: &crate::host::Timing,
        usage: &crate::host::Usage,
        truncated: bool,
        timed_out: bool,
    ) -> Self {
        Self {
            turn,
            ttft_ms: timing.ttft_ms,
            latency_ms: timing.total_ms,
            output_tokens: usage.output_tokens,
            tokens_per_s: timing.output_rate(usage.output_tokens),
            truncated,
            timed_out,
        }
    }
}

/// What an app host reports that mcpeval's own agent loop has no counterpart for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AppFacts {
    /// `claude-code`.
    pub app: String,
    /// The app's version, as it reported it for this trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The cost the app computed for the trial (US dollars, at its own prices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Tool calls the app refused by its permission rules, in order: the tool's bare name (or the
    /// app's own name for its built-in tools).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permission_denials: Vec<String>,
    /// The app's own count of turns (Claude Code's `num_turns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_turns: Option<u32>,
    /// Calls of the app's built-in tools (not the server's), by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub builtin_calls: Vec<String>,
}

/// The full message exchange of one trial, one line of `transcripts.jsonl` (secrets redacted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    pub run_id: String,
    pub task_id: String,
    pub side: Side,
    pub host: String,
    pub trial: u32,
    pub seed: u64,
    /// The tools as the model was shown them.
    pub tools: std::sync::Arc<[crate::host::ToolSpec]>,
    pub messages: Vec<crate::host::Message>,
    /// The judge's verdict, reasoning, raw answer and tokens (tasks with a `judge:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<crate::grade::JudgeRecord>,
}

/// The format of episode lines written before lines said theirs.
fn format_1_0() -> String {
    "1.0".to_owned()
}
