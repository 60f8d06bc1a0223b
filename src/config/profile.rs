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

/// What of a server a host shows its model (`expose`, `--expose`): its tools, its resources
/// (through two tools of mcpeval's, and `attach:`), its prompts (a task may start from one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Exposed {
    Tools,
    Resources,
    Prompts,
}

impl Exposed {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tools => "tools",
            Self::Resources => "resources",
            Self::Prompts => "prompts",
        }
    }
}

impl std::str::FromStr for Exposed {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "tools" => Ok(Self::Tools),
            "resources" => Ok(Self::Resources),
            "prompts" => Ok(Self::Prompts),
            other => Err(format!(
                "unknown exposure `{other}` (expected tools, resources or prompts)"
            )),
        }
    }
}

/// The names of the two tools mcpeval offers for a server's resources (`expose` with
/// `resources`): the host's tools, not the server's.
pub const LIST_RESOURCES_TOOL: &str = "list_resources";
pub const READ_RESOURCE_TOOL: &str = "read_resource";

/// How a host finds the tools it offers (`tool_search`, `--tool-search`): instead of putting every
/// definition into the prompt, the model searches for the tools it needs and only those it finds
/// are loaded, as Anthropic's tool-search tool and Claude Code's on-demand MCP tools do. Then a
/// description is first a search key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolSearch {
    /// Anthropic's own tool-search tool (`anthropic` hosts): every server tool sent with
    /// `defer_loading: true`, the search run by the API.
    Native,
    /// mcpeval's host tool `search_tools(query)` over a BM25 index of the server's tools (any
    /// API host): the tools a search returns are offered from the next request on.
    Emulated,
}

impl ToolSearch {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Emulated => "emulated",
        }
    }
}

impl std::str::FromStr for ToolSearch {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "native" => Ok(Self::Native),
            "emulated" => Ok(Self::Emulated),
            other => Err(format!(
                "unknown tool search `{other}` (expected native or emulated)"
            )),
        }
    }
}

/// Which of Anthropic's two tool-search tools a `native` search sends
/// (`tool_search_variant`): natural-language queries ranked by BM25, or regular expressions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchVariant {
    #[default]
    Bm25,
    Regex,
}

impl SearchVariant {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bm25 => "bm25",
            Self::Regex => "regex",
        }
    }
}

/// Tools a tool search returns (and, emulated, loads) at most, unless `tool_search_k` says
/// otherwise: Anthropic's search returns three to five.
pub const DEFAULT_TOOL_SEARCH_K: usize = 5;

/// The name of mcpeval's own search tool under `tool_search = "emulated"`.
pub const SEARCH_TOOLS_TOOL: &str = "search_tools";

fn tools_only(expose: &[Exposed]) -> bool {
    expose == [Exposed::Tools]
}

fn default_expose() -> Vec<Exposed> {
    vec![Exposed::Tools]
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
    /// What of the server the model is shown (`expose`): its tools by default; with
    /// `resources` two host tools that list and read its resources, with `prompts` tasks may
    /// start from its prompts.
    #[serde(default = "default_expose", skip_serializing_if = "tools_only")]
    pub expose: Vec<Exposed>,
    /// The names of the host's resource tools (`list_resources_tool`, `read_resource_tool`).
    #[serde(default = "list_resources_tool", skip_serializing_if = "is_list_tool")]
    pub list_resources_tool: String,
    #[serde(default = "read_resource_tool", skip_serializing_if = "is_read_tool")]
    pub read_resource_tool: String,
    /// How the model finds the server's tools (`tool_search`): off (every tool offered, the
    /// default), `native` or `emulated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_search: Option<ToolSearch>,
    /// The rank within which a search must return a task's tool for it to count as found
    /// (`found_at_k`); emulated, also how many tools each search returns and loads.
    #[serde(default = "tool_search_k", skip_serializing_if = "is_default_k")]
    pub tool_search_k: usize,
    /// Anthropic's tool-search tool a `native` search sends.
    #[serde(default, skip_serializing_if = "is_bm25")]
    pub tool_search_variant: SearchVariant,
    /// The name of the host's search tool under `emulated` (`search_tools_tool`).
    #[serde(default = "search_tools_tool", skip_serializing_if = "is_search_tool")]
    pub search_tools_tool: String,
}

fn tool_search_k() -> usize {
    DEFAULT_TOOL_SEARCH_K
}

fn is_default_k(k: &usize) -> bool {
    *k == DEFAULT_TOOL_SEARCH_K
}

fn is_bm25(variant: &SearchVariant) -> bool {
    *variant == SearchVariant::Bm25
}

fn search_tools_tool() -> String {
    SEARCH_TOOLS_TOOL.to_owned()
}

fn is_search_tool(name: &str) -> bool {
    name == SEARCH_TOOLS_TOOL
}

fn list_resources_tool() -> String {
    LIST_RESOURCES_TOOL.to_owned()
}

fn read_resource_tool() -> String {
    READ_RESOURCE_TOOL.to_owned()
}

fn is_list_tool(name: &str) -> bool {
    name == LIST_RESOURCES_TOOL
}

fn is_read_tool(name: &str) -> bool {
    name == READ_RESOURCE_TOOL
}

impl HostProfile {
    /// Whether the host shows the model this part of the server.
    pub fn exposes(&self, part: Exposed) -> bool {
        self.expose.contains(&part)
    }

    /// Whether it shows more than the server's tools (what only API hosts can).
    pub fn exposes_more_than_tools(&self) -> bool {
        !tools_only(&self.expose)
    }
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
            expose: default_expose(),
            list_resources_tool: list_resources_tool(),
            read_resource_tool: read_resource_tool(),
            tool_search: None,
            tool_search_k: DEFAULT_TOOL_SEARCH_K,
            tool_search_variant: SearchVariant::Bm25,
            search_tools_tool: search_tools_tool(),
        }
    }
}
