//! Tool search in a trial (`tool_search`): mcpeval's `search_tools` answered from the view's
//! index, the tools it returns loaded into the request; the provider's own searches (Anthropic's
//! tool-search tool) read from its answers; and what an episode keeps of them: the searches,
//! `found_rank` and `found_at_k`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::record::ToolCallRecord;
use super::tools::ToolView;
use crate::config::ToolSearch;
use crate::host::tool_search::Search;
use crate::host::{CompletionRequest, ToolCallRequest};

/// How a call of `search_tools` is named among the host calls.
pub const SEARCH_LABEL: &str = "tool_search";

/// A search's ranking as an episode keeps it: the first this many tools (`found_rank` is
/// computed on the whole ranking first).
const KEPT_RANKS: usize = 20;

/// The searches of one trial.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchLog {
    /// Each search's query and ranking, by the tools' server names.
    pub searches: Vec<Search>,
    /// Model turns whose every call was a search: the turns spent on finding tools (an emulated
    /// search takes a turn of its own; Anthropic's runs inside the turn that uses it).
    pub search_turns: u32,
}

/// Answers a call of the host's `search_tools`: the best `k` tools for its `query` (names and
/// descriptions), which are offered from the next request on. A call without a query is the
/// model's error; a search that finds nothing returns an empty list.
pub fn search_call(
    view: &ToolView,
    call: &ToolCallRequest,
    k: usize,
    index: u32,
    request: &mut CompletionRequest,
    log: &mut SearchLog,
) -> (ToolCallRecord, String) {
    let mut record = ToolCallRecord::made(index, SEARCH_LABEL, &call.arguments);
    let query = serde_json::from_str::<Value>(&call.arguments)
        .ok()
        .and_then(|a| a.get("query").and_then(Value::as_str).map(str::to_owned));
    let Some(query) = query.filter(|q| !q.trim().is_empty()) else {
        let reply = format!("Error: `{}` needs a `query` (a string)", call.name);
        (record.is_error, record.error_kind) = (true, Some("model".into()));
        record.result = reply.clone();
        return (record, reply);
    };
    let found = view.search(&query, k).unwrap_or_default();
    let listed: Vec<Value> = (found.returned.iter())
        .map(|t| serde_json::json!({"name": t.name, "description": t.description}))
        .collect();
    let reply = serde_json::json!({ "tools": listed }).to_string();
    record.result = super::agent::recorded_result(&reply);
    load(request, found.returned.iter().cloned());
    log.searches.push(Search {
        query,
        returned: found.returned.len(),
        ranked: found.ranked,
    });
    (record, reply)
}

/// Adds the tools not yet offered to the request's tools, after those it has.
fn load(request: &mut CompletionRequest, tools: impl Iterator<Item = crate::host::ToolSpec>) {
    let mut offered = request.tools.to_vec();
    for tool in tools {
        if !offered.iter().any(|t| t.name == tool.name) {
            offered.push(tool);
        }
    }
    request.tools = offered.into();
}

/// The provider's own searches of one answer, by the tools' server names.
pub fn provider_searches(view: &ToolView, searches: Vec<Search>, log: &mut SearchLog) {
    for mut search in searches {
        for name in &mut search.ranked {
            if let Some(server) = view.server_name(name) {
                *name = server.to_owned();
            }
        }
        log.searches.push(search);
    }
}

/// The best rank (1-based) at which any tool `expected` accepts was returned by a search of the
/// trial; `None` when no search ranked one.
pub fn found_rank(searches: &[Search], expected: impl Fn(&str) -> bool) -> Option<u32> {
    (searches.iter())
        .filter_map(|s| s.ranked.iter().position(|name| expected(name)))
        .min()
        .map(|i| i as u32 + 1)
}

/// What an episode records of its trial's tool search (`episodes.jsonl`'s `tool_search`; the
/// tables' `tool_searches`, `found_rank`, `found_at_k`, `search_turns`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSearchFacts {
    /// `native` or `emulated`.
    pub mode: String,
    /// The profile's `tool_search_k`.
    pub k: u32,
    /// The searches made, each with its query and ranking (the first 20 tools).
    pub searches: Vec<Search>,
    /// The best rank at which a search returned one of the task's expected tools (`None`:
    /// never, or the task expects none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_rank: Option<u32>,
    /// Whether that rank is within `k`; `None` for a task that expects no tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_at_k: Option<bool>,
    /// Model turns spent on searching alone.
    pub search_turns: u32,
}

impl ToolSearchFacts {
    /// The facts of a trial's searches; `expected`: whether a tool is one the task expects
    /// called (`None` for a task that expects none).
    pub fn of(
        mode: ToolSearch,
        k: usize,
        mut log: SearchLog,
        expected: Option<&dyn Fn(&str) -> bool>,
    ) -> Self {
        let found_rank = expected.and_then(|e| found_rank(&log.searches, e));
        let found_at_k = expected.map(|_| found_rank.is_some_and(|r| r as usize <= k));
        for search in &mut log.searches {
            search.ranked.truncate(KEPT_RANKS);
        }
        Self {
            mode: mode.as_str().to_owned(),
            k: k as u32,
            searches: log.searches,
            found_rank,
            found_at_k,
            search_turns: log.search_turns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::episode::{HostTool, Offer};
    use crate::host::HostProfile;

    fn view() -> ToolView {
        let tool = |name: &str, description: &str| {
            let schema = serde_json::json!({"type": "object"});
            let schema = std::sync::Arc::new(schema.as_object().unwrap().clone());
            rmcp::model::Tool::new(name.to_owned(), description.to_owned(), schema)
        };
        let tools = [
            tool("get_issue", "Get one issue by its id."),
            tool("add_comment", "Add a comment to an issue."),
            tool("list_projects", "List every project."),
        ];
        let profile = HostProfile {
            tool_search: Some(ToolSearch::Emulated),
            ..HostProfile::default()
        };
        ToolView::new(&tools, &profile, &Offer::fixed())
    }

    fn call(arguments: &str) -> ToolCallRequest {
        ToolCallRequest {
            id: "c1".into(),
            name: "search_tools".into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn emulated_search_offers_only_its_tool_until_a_search_loads_the_best_k() {
        let view = view();
        let names: Vec<&str> = view.specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["search_tools"]);
        assert_eq!(view.host_tool("search_tools"), Some(HostTool::SearchTools));
        assert_eq!(view.offered(), "get_issue,add_comment,list_projects");
        let mut request = CompletionRequest {
            tools: view.specs.clone(),
            ..Default::default()
        };
        let mut log = SearchLog::default();
        let (record, reply) = search_call(
            &view,
            &call(r#"{"query": "comment on an issue"}"#),
            1,
            0,
            &mut request,
            &mut log,
        );
        assert!(!record.is_error);
        assert_eq!(record.tool, SEARCH_LABEL);
        let reply: Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(reply["tools"][0]["name"], "add_comment");
        assert_eq!(reply["tools"].as_array().unwrap().len(), 1);
        let names: Vec<&str> = request.tools.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["search_tools", "add_comment"],
            "loaded after the offered"
        );
        assert_eq!(log.searches[0].ranked, ["add_comment", "get_issue"]);
        assert_eq!(log.searches[0].returned, 1);
        // The same tool again is not offered twice.
        search_call(
            &view,
            &call(r#"{"query": "comment"}"#),
            1,
            1,
            &mut request,
            &mut log,
        );
        assert_eq!(request.tools.len(), 2);
    }

    #[test]
    fn a_search_without_a_query_is_the_models_error_and_one_that_finds_nothing_is_empty() {
        let view = view();
        let mut request = CompletionRequest::default();
        let mut log = SearchLog::default();
        for bad in [
            "{}",
            r#"{"query": "  "}"#,
            r#"{"query": 3}"#,
            "not json",
            "",
        ] {
            let (record, reply) = search_call(&view, &call(bad), 5, 0, &mut request, &mut log);
            assert!(record.is_error, "{bad}");
            assert_eq!(record.error_kind.as_deref(), Some("model"));
            assert!(
                reply.starts_with("Error: `search_tools` needs a `query`"),
                "{reply}"
            );
        }
        assert!(log.searches.is_empty());
        let (record, reply) = search_call(
            &view,
            &call(r#"{"query": "zebra"}"#),
            5,
            0,
            &mut request,
            &mut log,
        );
        assert!(!record.is_error);
        assert_eq!(reply, r#"{"tools":[]}"#);
        assert!(request.tools.is_empty());
        assert_eq!(log.searches[0].returned, 0);
    }

    fn search(ranked: &[&str], returned: usize) -> Search {
        Search {
            query: "q".into(),
            ranked: ranked.iter().map(|s| s.to_string()).collect(),
            returned,
        }
    }

    #[test]
    fn found_rank_is_the_best_rank_of_an_expected_tool_over_all_searches() {
        let searches = [
            search(&["list_projects", "create_issue", "search_issues"], 1),
            search(&["get_issue", "search_issues"], 1),
        ];
        let is = |name: &'static str| move |t: &str| t == name;
        assert_eq!(found_rank(&searches, is("search_issues")), Some(2));
        assert_eq!(found_rank(&searches, is("list_projects")), Some(1));
        assert_eq!(found_rank(&searches, is("add_comment")), None);
        assert_eq!(found_rank(&[], is("search_issues")), None);
        let either = |t: &str| t == "create_issue" || t == "get_issue";
        assert_eq!(found_rank(&searches, either), Some(1));
    }

    #[test]
    fn found_at_k_holds_within_k_and_is_absent_without_expected_tools() {
        let log = SearchLog {
            searches: vec![search(&["list_projects", "search_issues"], 1)],
            search_turns: 1,
        };
        let wanted = |t: &str| t == "search_issues";
        let at = |k| ToolSearchFacts::of(ToolSearch::Emulated, k, log.clone(), Some(&wanted));
        assert_eq!((at(1).found_rank, at(1).found_at_k), (Some(2), Some(false)));
        assert_eq!(at(2).found_at_k, Some(true));
        let none = ToolSearchFacts::of(ToolSearch::Native, 5, log.clone(), None);
        assert_eq!((none.found_rank, none.found_at_k), (None, None));
        assert_eq!((none.mode.as_str(), none.search_turns), ("native", 1));
        let never =
            ToolSearchFacts::of(ToolSearch::Emulated, 5, SearchLog::default(), Some(&wanted));
        assert_eq!((never.found_rank, never.found_at_k), (None, Some(false)));
    }
}
