//! Tool search over a server's tools: a BM25 index (the `bm25` crate) of each tool's name (split
//! at `_`, `-` and case changes), title and description. mcpeval's `search_tools` host tool
//! (`tool_search = "emulated"`) ranks with it, and so does `mcpeval sim-server` where it stands
//! in for Anthropic's tool-search tool (`native`).
//!
//! Under tool search a description is first a search key: a rewrite whose words no request uses
//! can push a tool out of the few a search returns, which a run with every tool in the prompt
//! never shows.

use bm25::{Document, SearchEngine, SearchEngineBuilder, Tokenizer};
use rust_stemmers::{Algorithm, Stemmer};

use super::ToolSpec;

/// The type of Anthropic's BM25 tool-search tool, and the name it is sent under.
pub const NATIVE_BM25_TYPE: &str = "tool_search_tool_bm25_20251119";
pub const NATIVE_BM25_NAME: &str = "tool_search_tool_bm25";
/// The regular-expression variant.
pub const NATIVE_REGEX_TYPE: &str = "tool_search_tool_regex_20251119";
pub const NATIVE_REGEX_NAME: &str = "tool_search_tool_regex";
/// The beta that Anthropic's API needs for its tool-search tool (`anthropic-beta`).
pub const NATIVE_BETA: &str = "advanced-tool-use-2025-11-20";

/// How mcpeval's own search tool begins its description: the sim knows the tool by it, whatever
/// the profile names the tool (`search_tools_tool`).
pub const SEARCH_TOOLS_PURPOSE: &str = "Search the tools of the MCP server";

/// Words that carry no content in a request or a description: left out of the index and the
/// query alike, so that "the" and "of" rank nothing.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "by", "can",
    "do", "does", "e", "each", "eg", "for", "from", "g", "has", "have", "how", "i", "ie", "if",
    "in", "into", "is", "it", "its", "me", "my", "no", "not", "of", "on", "one", "or", "our",
    "please", "so", "some", "such", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "to", "us", "was", "we", "were", "what", "when", "where",
    "which", "who", "whose", "will", "with", "would", "you", "your",
];

/// The words of a text or a tool name, lower-cased: split at every character that is not a
/// letter or digit (`_`, `-`, `.`, spaces, punctuation) and where a lower-case letter or digit
/// is followed by an upper-case one (`searchIssues` → `search`, `issues`).
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut after_lower = false;
    for ch in text.chars() {
        if !ch.is_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            after_lower = false;
            continue;
        }
        if ch.is_uppercase() && after_lower {
            out.push(std::mem::take(&mut word));
        }
        after_lower = ch.is_lowercase() || ch.is_numeric();
        word.extend(ch.to_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// The words of a text that carry content: [`words`] without stop words ("the", "of").
pub fn content_words(text: &str) -> Vec<String> {
    (words(text).into_iter())
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .collect()
}

/// The index's tokenizer: [`content_words`], each stemmed (Snowball English), so that "issues"
/// and `get_issue` meet.
struct Terms(Stemmer);

impl Tokenizer for Terms {
    fn tokenize(&self, text: &str) -> Vec<String> {
        (content_words(text).into_iter())
            .map(|w| self.0.stem(&w).into_owned())
            .collect()
    }
}

/// The text a tool is found by: its name (without a host's `mcp__SERVER__` prefix, which every
/// tool shares), its title and its description.
fn document(tool: &ToolSpec) -> String {
    let name = bare_name(&tool.name);
    let title = tool.title.as_deref().unwrap_or_default();
    let description = tool.description.as_deref().unwrap_or_default();
    format!("{name}\n{title}\n{description}")
}

/// `mcp__server__get_issue` → `get_issue`; any other name as it is.
fn bare_name(name: &str) -> &str {
    name.strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
        .map_or(name, |(_, tool)| tool)
}

/// A BM25 index of a list of tools.
pub struct ToolIndex {
    engine: SearchEngine<u32, u32, Terms>,
    tools: usize,
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolIndex")
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

impl ToolIndex {
    /// Indexes `tools` (their position in the slice is their id in [`ToolIndex::rank`]).
    pub fn new(tools: &[ToolSpec]) -> Self {
        let documents = (tools.iter().enumerate())
            .map(|(i, tool)| Document::new(i as u32, document(tool)))
            .collect::<Vec<_>>();
        let terms = Terms(Stemmer::create(Algorithm::English));
        let engine = SearchEngineBuilder::with_tokenizer_and_documents(terms, documents).build();
        Self {
            engine,
            tools: tools.len(),
        }
    }

    /// The tools `query` matches (a BM25 score above 0), best first, as positions in the list
    /// indexed; tools of equal score in the list's order, so a ranking never depends on a hash
    /// map's. Empty when no word of the query is in any tool.
    pub fn rank(&self, query: &str) -> Vec<usize> {
        let mut found: Vec<(f32, u32)> = (self.engine.search(query, None).into_iter())
            .map(|r| (r.score, r.document.id))
            .collect();
        found.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        found.into_iter().map(|(_, id)| id as usize).collect()
    }
}

/// One search as a trial records it: what was asked, every tool the search matched best first
/// (by the names the model was shown), and how many of them it returned.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Search {
    pub query: String,
    pub ranked: Vec<String>,
    pub returned: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, title: &str, description: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            title: Some(title.into()).filter(|t: &String| !t.is_empty()),
            description: Some(description.into()),
            input_schema: serde_json::json!({"type": "object"}),
            deferred: false,
        }
    }

    #[test]
    fn names_split_at_underscores_dashes_and_case_changes() {
        assert_eq!(words("search_issues"), ["search", "issues"]);
        assert_eq!(words("get-issue"), ["get", "issue"]);
        assert_eq!(words("searchIssuesV2"), ["search", "issues", "v2"]);
        assert_eq!(words("HTTPServer.list"), ["httpserver", "list"]);
        assert_eq!(
            words("mcp__tracker__add_comment"),
            ["mcp", "tracker", "add", "comment"]
        );
        assert_eq!(
            words("Find open issues, then…"),
            ["find", "open", "issues", "then"]
        );
        assert!(words(" _-. ").is_empty());
        assert_eq!(bare_name("mcp__tracker__add_comment"), "add_comment");
        assert_eq!(bare_name("add_comment"), "add_comment");
    }

    #[test]
    fn the_tool_whose_words_the_query_uses_ranks_first_and_ties_keep_the_list_order() {
        let tools = [
            tool(
                "list_projects",
                "List projects",
                "List every project in the tracker.",
            ),
            tool(
                "search_issues",
                "Search issues",
                "Search issues by keywords.",
            ),
            tool("get_issue", "Get issue", "Get one issue by its id."),
            tool("add_comment", "", "Add a comment to an issue."),
        ];
        let index = ToolIndex::new(&tools);
        assert_eq!(index.rank("search for crash issues")[0], 1);
        assert_eq!(index.rank("Which projects are there?"), [0]);
        // Stemmed: "comments" finds `add_comment`, "issues" every tool about an issue.
        assert_eq!(index.rank("comments")[0], 3);
        assert_eq!(index.rank("issues").len(), 3);
        assert!(
            index.rank("the of and").is_empty(),
            "stop words match nothing"
        );
        assert!(index.rank("").is_empty());
        assert!(
            index.rank("zebra").is_empty(),
            "no word in any tool: nothing found"
        );
        // Two tools that read alike rank in the list's order, every time.
        let twins = [
            tool("y_tool", "", "Fetch a page."),
            tool("x_tool", "", "Fetch a page."),
        ];
        let index = ToolIndex::new(&twins);
        for _ in 0..20 {
            assert_eq!(index.rank("fetch page"), [0, 1]);
        }
    }

    #[test]
    fn a_description_rewritten_to_other_words_drops_the_tool_in_the_ranking() {
        let before = [
            tool(
                "list_projects",
                "List projects",
                "List every project with its open issues.",
            ),
            tool(
                "search_issues",
                "Search issues",
                "Search open issues of a project.",
            ),
        ];
        let mut after = before.clone();
        after[1].title = Some("Ledger scan".into());
        after[1].description = Some("Scans the ledger for entries.".into());
        let query = "Find open issues in project apollo search";
        assert_eq!(ToolIndex::new(&before).rank(query), [1, 0]);
        assert_eq!(ToolIndex::new(&after).rank(query), [0, 1]);
    }
}
