//! Hosts: the `Model` trait that the agent loop drives, the chat types it speaks, and the providers.

pub mod aimd;
pub mod anthropic;
pub mod breaker;
pub mod cache;
mod choice;
pub mod http;
mod lenient;
pub mod limit;
mod names;
pub mod openai;
pub mod retry;
pub(crate) mod tokens;
pub mod tool_search;
pub mod wire;

use serde::{Deserialize, Serialize};

pub use crate::config::HostProfile;

/// The header that carries a trial's seed to `mcpeval sim-server` (a real API ignores it): host
/// applications take no seed of their own.
pub const SEED_HEADER: &str = "x-mcpeval-seed";

/// A tool as the model is shown it (after the host profile has renamed it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model sees and calls (bare or `mcp__<server>__<tool>`).
    pub name: String,
    /// The human-readable title, when the host profile passes titles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments (an object schema).
    pub input_schema: serde_json::Value,
    /// Held back until the provider's own tool search finds it (`tool_search = "native"`:
    /// Anthropic's `defer_loading: true`); a provider without one never gets such a tool.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deferred: bool,
}

/// A tool call as the model made it. `arguments` is the raw text the model produced: it may not
/// be valid JSON, and the agent loop records that as the model's error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// One message of a chat exchange, in the OpenAI chat-completions shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCallRequest>,
        /// The model's reasoning before this answer, where the provider returned it: kept in
        /// the transcript, and sent back only where the API asks for it (Anthropic's signed
        /// `thinking` blocks).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<Reasoning>,
        /// The blocks of the provider's own tools in this answer, as they came (Anthropic's
        /// `server_tool_use` and `tool_search_tool_result` of its tool search): sent back
        /// unchanged to the provider that made them, ignored by any other.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        server_blocks: Vec<serde_json::Value>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

impl Message {
    /// The system messages' texts joined by blank lines (for APIs that take the system prompt
    /// apart from the conversation); `None` when there are none with text.
    pub fn system_text(messages: &[Message]) -> Option<String> {
        let system: Vec<&str> = messages
            .iter()
            .filter_map(|m| match m {
                Message::System { content } if !content.trim().is_empty() => Some(content.as_str()),
                _ => None,
            })
            .collect();
        (!system.is_empty()).then(|| system.join("\n\n"))
    }
}

/// A model's reasoning for one answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    /// The reasoning text (or the provider's summary of it).
    pub text: String,
    /// Anthropic's signature of a `thinking` block, which must come back unchanged with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Anthropic's `redacted_thinking` blocks (encrypted reasoning), sent back as they came.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<String>,
}

/// What the agent loop asks of a model for one turn.
#[derive(Debug, Clone, Default)]
pub struct CompletionRequest {
    pub messages: Vec<Message>,
    pub tools: std::sync::Arc<[ToolSpec]>,
    /// The trial's seed: the same on both sides (common random numbers). Providers that accept a
    /// seed pass it on; the sim host derives all its randomness from it.
    pub seed: u64,
    /// Which trial asks (never sent to the provider): the response cache keys on it, so that
    /// trials stay independent samples rather than one cached answer repeated.
    pub context: RequestContext,
}

/// The trial a request belongs to. Empty for requests outside a trial (tests, the judge's own
/// context is set by the grader).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RequestContext {
    pub task_id: String,
    /// `baseline` or `candidate`; empty outside a trial.
    pub side: String,
    pub trial: u32,
}

/// Token usage of one model turn, as the provider reported it (or the sim counted it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's prompt cache, where it reports them apart
    /// (Anthropic's `cache_read_input_tokens`, which `input_tokens` does not include).
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's prompt cache (Anthropic's
    /// `cache_creation_input_tokens`, also not included in `input_tokens`).
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Output tokens spent on reasoning, part of `output_tokens`: as the provider reported them
    /// (OpenAI's `completion_tokens_details.reasoning_tokens`), or counted from the reasoning
    /// text where it reports only the text (llama.cpp's and vLLM's `reasoning_content`,
    /// Anthropic's `thinking` blocks).
    #[serde(default)]
    pub reasoning_tokens: u64,
}

/// The model's answer for one turn: text, tool calls, or both.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
    pub usage: Usage,
    /// The model that answered, as the provider named it.
    pub model: String,
    /// The model's reasoning, where the provider returns it (`reasoning_content`, Anthropic's
    /// `thinking` blocks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// The blocks of the provider's own tools (see `Message::Assistant`), to send back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_blocks: Vec<serde_json::Value>,
    /// The searches the provider's tool search made for this answer, in order, each the tools
    /// it returned best first (by the names the model is shown).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub searches: Vec<tool_search::Search>,
    /// The answer stopped at the output cap (`finish_reason: "length"`, Anthropic's
    /// `stop_reason: "max_tokens"`): what came back is all the model said.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// A streamed answer was still going when the request's `timeout` came: what came back is
    /// what the model had produced by then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// How the answer arrived (the attempt that gave it). Not stored in the response cache.
    #[serde(skip)]
    pub timing: Timing,
    /// One line for each attempt of this request that failed before the answer came (429s,
    /// 5xx, timeouts): kept in the episode's record. Not stored in the response cache.
    #[serde(skip)]
    pub retried: Vec<String>,
}

/// How one answer arrived, measured on the attempt that gave it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timing {
    /// From sending the request to the first output (a text, reasoning or tool-call delta) of
    /// a streamed answer; `None` when the answer was not streamed.
    pub ttft_ms: Option<f64>,
    /// From sending the request to the end of the answer.
    pub total_ms: f64,
}

impl Timing {
    /// Output tokens per second after the first one arrived (streamed answers of at least two
    /// tokens only).
    pub fn output_rate(&self, output_tokens: u64) -> Option<f64> {
        let ttft = self.ttft_ms?;
        let generating = (self.total_ms - ttft) / 1000.0;
        (output_tokens >= 2 && generating > 0.0).then(|| (output_tokens - 1) as f64 / generating)
    }
}

/// The output cap of one model turn of an OpenAI-compatible host unless `[host.NAME]` sets
/// `max_tokens`: enough for tool calls and an answer, and for a reasoning model's reasoning
/// besides, while a model that rambles stops within minutes even at a few tokens per second.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Request settings of a host (`[host.NAME]`), passed to the provider as its API names them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestOptions {
    pub temperature: Option<f64>,
    /// The output cap of one turn; `None` sends none (no limit but the model's own).
    pub max_tokens: Option<u32>,
    /// Send the trial's seed (providers that take one).
    pub send_seed: bool,
    pub parallel_tool_calls: Option<bool>,
    /// Ask for the answer as a stream of events: the first byte then tells a provider that
    /// answers slowly from one that does not answer, and a generation cut at the timeout keeps
    /// what it produced.
    pub stream: bool,
}

impl Default for RequestOptions {
    fn default() -> Self {
        Self {
            temperature: None,
            max_tokens: Some(DEFAULT_MAX_TOKENS),
            send_seed: true,
            parallel_tool_calls: None,
            stream: true,
        }
    }
}

/// A failure to get a completion: always an infrastructure error of the trial, never the model's.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("request to `{endpoint}` failed")]
    Request {
        endpoint: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("provider answered with something that is not a chat completion: {0}")]
    BadResponse(String),
    #[error("missing environment variable `{0}`")]
    MissingEnv(String),
    #[error("{0}")]
    Other(String),
}

/// A language model (real or simulated) that answers one chat turn at a time.
#[async_trait::async_trait]
pub trait Model: Send + Sync {
    /// Provider and model, as shown in results: `sim`, `openai:gpt-4.1-mini`.
    fn id(&self) -> &str;
    /// True for the embedded simulator, so that output can say so.
    fn is_simulated(&self) -> bool {
        false
    }
    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, HostError>;
    /// What the host had to change on the way, one line each, for the end of the run and
    /// `run.json` (an endpoint that refused streaming, say). None by default.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}
