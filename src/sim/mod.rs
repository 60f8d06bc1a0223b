//! The sim host: an embedded, deterministic, seedable stand-in for a model.
//!
//! It reads the tool list the way a model must (names, titles, descriptions, parameters, the
//! server's instructions), samples a tool from a softmax over its scores, fills arguments from
//! the request and the schema, and counts the tokens it was sent. See docs/hosts.md, "The sim host".

mod args;
mod args_literal;
mod correct;
mod dialog;
mod extract;
mod lexicon;
mod literal;
mod params;
mod request;
mod rules;
mod score;
mod search;
mod text;

pub mod server;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_literals;
#[cfg(test)]
mod tests_servers;
#[cfg(test)]
mod tests_suite;

use crate::host::tokens;
use crate::host::{
    Completion, CompletionRequest, HostError, Message, Model, ToolCallRequest, Usage,
};
pub(crate) use dialog::looks_like_error;
use dialog::Action;
pub(crate) use search::search_query;

pub use crate::config::SimConfig;

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
