//! Host profiles (`[profile.NAME]`, a host's `profile`): how a host shows a server's tools to
//! the model.

use serde::{Deserialize, Serialize};

/// How tools are named for the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolNaming {
    /// The tool's own name.
    #[default]
    Bare,
    /// `mcp__<server>__<tool>`, as Claude Code shows MCP tools.
    Prefixed,
}

/// The order a host lists a server's tools in (`tool_order`, `--tool-order`), before
/// `max_tools` cuts the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolOrder {
    /// As the server's `tools/list` gives them.
    #[default]
    Server,
    /// The server's order reversed.
    Reverse,
    /// A permutation of both sides' tool names by the trial's seed: the tools both sides list
    /// (a renamed tool under its old name) come in the same relative order on both sides of a
    /// pair, and in another order in the next trial.
    Shuffle,
}

impl ToolOrder {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Server => "server",
            Self::Reverse => "reverse",
            Self::Shuffle => "shuffle",
        }
    }
}

impl std::str::FromStr for ToolOrder {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "server" => Ok(Self::Server),
            "reverse" => Ok(Self::Reverse),
            "shuffle" => Ok(Self::Shuffle),
            other => Err(format!(
                "unknown tool order `{other}` (expected server, reverse or shuffle)"
            )),
        }
    }
}

/// How a host presents a server to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HostProfile {
    pub tool_naming: ToolNaming,
    /// Pass each tool's `title` to the model.
    pub pass_title: bool,
    /// Put the server's `instructions` into the system prompt.
    pub pass_instructions: bool,
    /// The system prompt the host starts every trial with.
    pub system_prompt: String,
    /// The server's name in `mcp__<server>__<tool>`: the same on both sides, so that the name
    /// shown to the model does not differ between baseline and candidate.
    pub server_label: String,
    /// Show the model at most this many tools, the first of the list in `tool_order`, as hosts
    /// with a tool limit do (a new tool can then push an old one out of sight).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tools: Option<usize>,
    /// The order the tools are listed in.
    pub tool_order: ToolOrder,
    /// Make the tool calls the model writes as text instead of calling (`recover_text_calls`,
    /// `--recover-text-calls`): each is executed as if made, and counted apart.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recover_text_calls: bool,
}

impl Default for HostProfile {
    fn default() -> Self {
        Self {
            tool_naming: ToolNaming::Bare,
            pass_title: true,
            pass_instructions: true,
            system_prompt: "You are a helpful assistant with access to tools. Call a tool only \
                            when it is needed to answer; otherwise answer directly."
                .to_owned(),
            server_label: "server".to_owned(),
            max_tools: None,
            tool_order: ToolOrder::Server,
            recover_text_calls: false,
        }
    }
}
