//! Counting the tokens of a turn its provider did not count (a streamed answer cut at the
//! timeout): with the sim's own counter for the simulated model, so its figures do not move, and
//! with a real BPE tokenizer (`o200k_base`, OpenAI's current one) for every other provider. For
//! Anthropic, Gemini and open models `o200k_base` is an approximation (they do not publish their
//! tokenizers); see docs/tokens.md.

use serde_json::json;

use crate::contract::tokens::{list_text, Encoding};
use crate::host::{Message, ToolCallRequest, ToolSpec};

/// Tokens a chat format adds per message (role and separators), as OpenAI's cookbook counts
/// them.
const MESSAGE_OVERHEAD: u64 = 3;

/// Which counter estimates a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counter {
    /// The sim's own tokenizer (`host::tokens`): what the simulated model reports.
    Sim,
    /// `o200k_base`.
    Real,
}

impl Counter {
    pub fn of(simulated: bool) -> Self {
        match simulated {
            true => Self::Sim,
            false => Self::Real,
        }
    }

    pub fn text(self, text: &str) -> u64 {
        match self {
            Self::Sim => crate::host::tokens::count_text(text),
            Self::Real => Encoding::O200k.count(text),
        }
    }

    /// Tokens of what a turn produced: text and tool calls.
    pub fn output(self, content: Option<&str>, calls: &[ToolCallRequest]) -> u64 {
        match self {
            Self::Sim => crate::host::tokens::count_output(content, calls),
            Self::Real => content.map_or(0, |c| self.text(c)) + self.calls(calls),
        }
    }

    /// Tokens of a request: its messages and tool specs (the tools as the OpenAI chat `tools`
    /// array, as `tokens.json` counts them).
    pub fn input(self, messages: &[Message], tools: &[ToolSpec]) -> u64 {
        if self == Self::Sim {
            return crate::host::tokens::count_input(messages, tools);
        }
        let messages: u64 = (messages.iter())
            .map(|m| {
                MESSAGE_OVERHEAD
                    + match m {
                        Message::System { content } | Message::User { content } => {
                            self.text(content)
                        }
                        Message::Assistant {
                            content,
                            tool_calls,
                            ..
                        } => {
                            content.as_deref().map_or(0, |c| self.text(c)) + self.calls(tool_calls)
                        }
                        Message::Tool {
                            tool_call_id,
                            content,
                        } => self.text(tool_call_id) + self.text(content),
                    }
            })
            .sum();
        let tools: Vec<serde_json::Value> = (tools.iter())
            .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema}))
            .collect();
        messages + self.text(&list_text(&tools))
    }

    fn calls(self, calls: &[ToolCallRequest]) -> u64 {
        (calls.iter())
            .map(|c| MESSAGE_OVERHEAD + self.text(&c.name) + self.text(&c.arguments))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sim_keeps_its_counter_and_real_providers_get_o200k() {
        let text = "Looks up issues by keyword.";
        assert_eq!(
            Counter::Sim.text(text),
            crate::host::tokens::count_text(text)
        );
        assert_eq!(Counter::Real.text(text), Encoding::O200k.count(text));
        let messages = [Message::User {
            content: text.to_owned(),
        }];
        let tool = ToolSpec {
            name: "search".into(),
            title: None,
            description: Some(text.into()),
            input_schema: json!({"type": "object"}),
            deferred: false,
        };
        let bare = Counter::Real.input(&messages, &[]);
        assert_eq!(bare, MESSAGE_OVERHEAD + Counter::Real.text(text));
        let with_tool = Counter::Real.input(&messages, std::slice::from_ref(&tool));
        let entry = r#"[{"type":"function","function":{"name":"search","description":"Looks up issues by keyword.","parameters":{"type":"object"}}}]"#;
        assert_eq!(with_tool, bare + Encoding::O200k.count(entry));
        assert_eq!(
            Counter::Sim.input(&messages, std::slice::from_ref(&tool)),
            crate::host::tokens::count_input(&messages, &[tool])
        );
    }
}
