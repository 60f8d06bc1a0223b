//! The sim host: an embedded, deterministic, seedable stand-in for a model.
//!
//! It reads the tool list the way a model must (names, titles, descriptions, parameters, the
//! server's instructions), samples a tool from a softmax over its scores, fills arguments from
//! the request and the schema, and counts the tokens it was sent. See `DESIGN.md`, "The sim host".

mod args;
mod correct;
mod dialog;
mod extract;
mod lexicon;
mod params;
mod request;
mod rules;
mod score;
mod text;
pub(crate) mod tokens;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_servers;
#[cfg(test)]
mod tests_suite;

use serde::{Deserialize, Serialize};

use super::{Completion, CompletionRequest, HostError, Message, Model, ToolCallRequest, Usage};
pub(crate) use dialog::looks_like_error;
use dialog::Action;

/// Knobs of the simulated model (config section `[sim]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// Softmax temperature over tool scores: higher means more random tool choice.
    pub temperature: f64,
    /// Below this best score the sim answers without calling a tool.
    pub call_threshold: f64,
    /// Weight of a request word found in the tool's name.
    pub name_weight: f64,
    /// Weight of a request word found in the tool's title.
    pub title_weight: f64,
    /// Weight of a request word found in the tool's description.
    pub description_weight: f64,
    /// Weight of a request word found in a parameter's name, description or enum values.
    pub param_weight: f64,
    /// Fraction of a field's weight that a synonym ("find" for "search") earns.
    pub synonym_factor: f64,
    /// Bonus when the request's main verb is the tool's action (three quarters for a synonym).
    pub verb_bonus: f64,
    /// Penalty when the tool does something else and another tool does what was asked.
    pub verb_penalty: f64,
    /// Penalty when the request names none of the things the tool's name says it acts on.
    pub object_penalty: f64,
    /// Bonus (or penalty) per server-instruction sentence recommending (or discouraging) a tool.
    pub instruction_boost: f64,
    /// Bonus per argument the request supplies (up to three).
    pub param_fit: f64,
    /// Penalty per required argument the request says nothing about.
    pub missing_arg_penalty: f64,
    /// After an error, switch to another tool scoring at most this much below the failed one.
    pub retry_margin: f64,
    /// Tool results are quoted in the final answer up to this many characters each.
    pub max_result_chars: usize,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            temperature: 0.5,
            call_threshold: 2.5,
            name_weight: 3.0,
            title_weight: 2.0,
            description_weight: 1.5,
            param_weight: 0.75,
            synonym_factor: 0.5,
            verb_bonus: 2.5,
            verb_penalty: 1.5,
            object_penalty: 1.0,
            instruction_boost: 2.5,
            param_fit: 0.5,
            missing_arg_penalty: 1.5,
            retry_margin: 1.0,
            max_result_chars: 600,
        }
    }
}

/// The simulated model. Stateless: one instance serves any number of concurrent trials.
#[derive(Debug, Clone, Default)]
pub struct SimModel {
    config: SimConfig,
}

impl SimModel {
    /// A sim with the given knobs (`SimConfig::default()` for the tuned defaults).
    pub fn new(config: SimConfig) -> Self {
        Self { config }
    }

    /// The knobs this sim runs with.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// Answers one turn. Pure: the same request (seed included) gives the same completion.
    pub fn respond(&self, request: &CompletionRequest) -> Completion {
        let turn = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count() as u64;
        let (content, tool_calls) = match dialog::decide(request, turn, &self.config) {
            Action::Answer(text) => (Some(text), Vec::new()),
            Action::Call { tool, arguments } => {
                let id = format!("call_{:016x}", call_id(request.seed, turn));
                let name = request.tools[tool].name.clone();
                (
                    None,
                    vec![ToolCallRequest {
                        id,
                        name,
                        arguments,
                    }],
                )
            }
        };
        let usage = Usage {
            input_tokens: tokens::count_input(&request.messages, &request.tools),
            output_tokens: tokens::count_output(content.as_deref(), &tool_calls),
            ..Usage::default()
        };
        Completion {
            content,
            tool_calls,
            usage,
            model: "sim".to_owned(),
            ..Default::default()
        }
    }
}

/// The sim's count of the input tokens of these messages and tools (what `respond` reports
/// for a request of them).
pub fn count_input_tokens(messages: &[Message], tools: &[crate::host::ToolSpec]) -> u64 {
    tokens::count_input(messages, tools)
}

fn call_id(seed: u64, turn: u64) -> u64 {
    use rand::RngCore;
    dialog::turn_rng(seed ^ 0xC0FF_EE00, turn).next_u64()
}

#[async_trait::async_trait]
impl Model for SimModel {
    fn id(&self) -> &str {
        "sim"
    }

    fn is_simulated(&self) -> bool {
        true
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, HostError> {
        Ok(self.respond(request))
    }
}
