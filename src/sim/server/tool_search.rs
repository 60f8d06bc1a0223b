//! Anthropic's tool-search tool as `mcpeval sim-server` runs it on `/v1/messages`: a request that
//! carries `tool_search_tool_bm25_20251119` (or the regex variant) with tools marked
//! `defer_loading: true` gets what the API gives. The search runs first, once per user message,
//! with the query the sim would write for the request; its `server_tool_use` and
//! `tool_search_tool_result` blocks (with a `tool_reference` per tool found) open the answer; and
//! only the tools not deferred and those a search of the conversation found can be called.
//!
//! A request the API would refuse is refused with a 400 that says why: deferred tools without a
//! search tool, a search tool without the beta header, a deferred search tool, a reference to a
//! tool the request does not have.

use std::collections::BTreeSet;

use axum::http::HeaderMap;
use serde_json::{json, Value};

use super::BadRequest;
use crate::host::tool_search::{
    content_words, ToolIndex, NATIVE_BETA, NATIVE_BM25_NAME, NATIVE_BM25_TYPE, NATIVE_REGEX_NAME,
    NATIVE_REGEX_TYPE,
};
use crate::host::{CompletionRequest, Message, ToolSpec};

/// Tools one search returns at most (the API returns three to five).
pub(super) const RETURNED: usize = 5;

/// The tool-search tool a request carries, and what its conversation has found so far.
#[derive(Debug)]
pub(super) struct NativeSearch {
    regex: bool,
    name: String,
    /// Tools named by a `tool_reference` of an earlier search in the conversation.
    found: BTreeSet<String>,
    /// Whether a search was made since the user's last message.
    searched: bool,
}

/// The request's tool search, checked as the API checks it; `None` when it carries none.
pub(super) fn read(
    body: &Value,
    headers: &HeaderMap,
    tools: &[ToolSpec],
) -> Result<Option<NativeSearch>, BadRequest> {
    let listed = body.get("tools").and_then(Value::as_array);
    let search = (listed.into_iter().flatten()).find(|t| {
        t.get("type")
            .and_then(Value::as_str)
            .is_some_and(is_search_type)
    });
    let Some(search) = search else {
        if tools.iter().any(|t| t.deferred) {
            return Err("tools with `defer_loading: true` need a tool search tool \
                        (tool_search_tool_bm25_20251119 or tool_search_tool_regex_20251119)"
                .into());
        }
        return Ok(None);
    };
    let kind = search["type"].as_str().unwrap_or_default();
    let regex = kind == NATIVE_REGEX_TYPE;
    let expected = if regex {
        NATIVE_REGEX_NAME
    } else {
        NATIVE_BM25_NAME
    };
    let name = search
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if name != expected {
        return Err(BadRequest(format!(
            "the tool `{kind}` must be named `{expected}`, not `{name}`"
        )));
    }
    if search.get("defer_loading").and_then(Value::as_bool) == Some(true) {
        return Err("the tool search tool itself cannot have `defer_loading: true`".into());
    }
    let beta = (headers.get_all("anthropic-beta").iter())
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|b| b.trim() == NATIVE_BETA);
    if !beta {
        return Err(BadRequest(format!(
            "the tool search tool needs the `anthropic-beta: {NATIVE_BETA}` header"
        )));
    }
    let messages = body.get("messages").and_then(Value::as_array);
    let messages = messages.map(Vec::as_slice).unwrap_or_default();
    let found = references(messages);
    if let Some(unknown) = found.iter().find(|f| !tools.iter().any(|t| &t.name == *f)) {
        return Err(BadRequest(format!(
            "a tool_reference names `{unknown}`, which is not among the request's tools"
        )));
    }
    Ok(Some(NativeSearch {
        regex,
        name: name.to_owned(),
        found,
        searched: searched_since_user(messages),
    }))
}

fn is_search_type(kind: &str) -> bool {
    kind == NATIVE_BM25_TYPE || kind == NATIVE_REGEX_TYPE
}

/// The tools every `tool_reference` of the conversation names.
fn references(messages: &[Value]) -> BTreeSet<String> {
    (messages.iter())
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|b| b["type"] == "tool_search_tool_result")
        .filter_map(|b| {
            b.pointer("/content/tool_references")
                .and_then(Value::as_array)
        })
        .flatten()
        .filter_map(|r| r.get("tool_name").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// Whether an assistant message after the last user message with text of its own holds a search.
fn searched_since_user(messages: &[Value]) -> bool {
    let said = |m: &Value| match m.get("content") {
        Some(Value::String(_)) => true,
        Some(Value::Array(blocks)) => blocks.iter().any(|b| b["type"] == "text"),
        _ => false,
    };
    let last_user = messages
        .iter()
        .rposition(|m| m["role"] == "user" && said(m));
    (messages[last_user.map_or(0, |i| i + 1)..].iter())
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .any(|b| b["type"] == "server_tool_use")
}

impl NativeSearch {
    /// Runs the search the answer opens with, if one is due: its two blocks, and the request
    /// left with the tools the model may call (those not deferred, and those found).
    pub(super) fn run(mut self, request: &mut CompletionRequest, seed: u64) -> Vec<Value> {
        let mut blocks = Vec::new();
        if !self.searched {
            let user = request.messages.iter().rev().find_map(|m| match m {
                Message::User { content } => Some(content.as_str()),
                _ => None,
            });
            let query = crate::sim::search_query(user.unwrap_or_default());
            let deferred: Vec<ToolSpec> = (request.tools.iter())
                .filter(|t| t.deferred && !self.found.contains(&t.name))
                .cloned()
                .collect();
            let (input, found) = self.search(&query, &deferred);
            let id = format!("srvtoolu_{seed:016x}{:02}", request.messages.len());
            let references: Vec<Value> = (found.iter())
                .map(|name| json!({"type": "tool_reference", "tool_name": name}))
                .collect();
            blocks.push(
                json!({"type": "server_tool_use", "id": id, "name": self.name,
                               "input": input}),
            );
            blocks.push(json!({"type": "tool_search_tool_result", "tool_use_id": id,
                "content": {"type": "tool_search_tool_search_result",
                            "tool_references": references}}));
            self.found.extend(found);
        }
        let callable: Vec<ToolSpec> = (request.tools.iter())
            .filter(|t| !t.deferred || self.found.contains(&t.name))
            .map(|t| ToolSpec {
                deferred: false,
                ..t.clone()
            })
            .collect();
        request.tools = callable.into();
        blocks
    }

    /// The search's input (`query`, or a `pattern` of the query's words for the regex variant)
    /// and the names of the tools it returns, best first.
    fn search(&self, query: &str, deferred: &[ToolSpec]) -> (Value, Vec<String>) {
        let ranked = ToolIndex::new(deferred).rank(query);
        if !self.regex {
            let names = ranked.iter().take(RETURNED);
            let names = names.map(|&i| deferred[i].name.clone()).collect();
            return (json!({ "query": query }), names);
        }
        let words = content_words(query);
        let alternatives: Vec<String> = words.iter().map(|w| regex::escape(w)).collect();
        let pattern = format!("(?i)({})", alternatives.join("|"));
        let Ok(re) = regex::Regex::new(&pattern) else {
            return (json!({ "pattern": pattern }), Vec::new());
        };
        let matches = |t: &ToolSpec| {
            let text = format!(
                "{} {}",
                t.name,
                t.description.as_deref().unwrap_or_default()
            );
            !words.is_empty() && re.is_match(&text)
        };
        let names = (ranked.iter().map(|&i| &deferred[i]))
            .filter(|t| matches(t))
            .take(RETURNED)
            .map(|t| t.name.clone())
            .collect();
        (json!({ "pattern": pattern }), names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(beta: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(b) = beta {
            h.insert("anthropic-beta", b.parse().unwrap());
        }
        h
    }

    fn tool(name: &str, description: &str, deferred: bool) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            input_schema: json!({"type": "object"}),
            deferred,
        }
    }

    fn body(search: Value, messages: Value) -> Value {
        json!({"model": "m", "max_tokens": 9, "messages": messages,
               "tools": [search, {"name": "get_issue", "input_schema": {"type": "object"},
                                  "defer_loading": true}]})
    }

    const BM25: &str = "tool_search_tool_bm25_20251119";

    #[test]
    fn malformed_requests_are_refused_as_the_api_refuses_them() {
        let tools = [tool("get_issue", "Get one issue.", true)];
        let user = json!([{"role": "user", "content": "Show issue 3"}]);
        let ok = json!({"type": BM25, "name": "tool_search_tool_bm25"});
        let beta = headers(Some(NATIVE_BETA));
        assert!(read(&body(ok.clone(), user.clone()), &beta, &tools)
            .unwrap()
            .is_some());
        let refused = |b: &Value, h: &HeaderMap| read(b, h, &tools).unwrap_err().0;
        assert!(refused(&body(ok.clone(), user.clone()), &headers(None)).contains("beta"));
        let other_beta = headers(Some("files-api-2025-04-14, advanced-tool-use-2025-11-20"));
        assert!(read(&body(ok.clone(), user.clone()), &other_beta, &tools).is_ok());
        let misnamed = json!({"type": BM25, "name": "search"});
        assert!(refused(&body(misnamed, user.clone()), &beta).contains("must be named"));
        let deferred =
            json!({"type": BM25, "name": "tool_search_tool_bm25", "defer_loading": true});
        assert!(refused(&body(deferred, user.clone()), &beta).contains("itself"));
        let none = json!({"name": "x", "input_schema": {"type": "object"}});
        assert!(refused(&body(none, user.clone()), &beta).contains("need a tool search tool"));
        let unknown = json!([{"role": "user", "content": "Show issue 3"},
            {"role": "assistant", "content": [
                {"type": "server_tool_use", "id": "s1", "name": "tool_search_tool_bm25",
                 "input": {"query": "issue"}},
                {"type": "tool_search_tool_result", "tool_use_id": "s1", "content": {
                    "type": "tool_search_tool_search_result",
                    "tool_references": [{"type": "tool_reference", "tool_name": "nope"}]}}]}]);
        assert!(refused(&body(ok, unknown), &beta).contains("`nope`"));
    }

    #[test]
    fn a_search_opens_the_answer_once_per_request_and_its_tools_become_callable() {
        let mut request = CompletionRequest {
            messages: vec![Message::User {
                content: "Show me issue 3".into(),
            }],
            tools: vec![
                tool("get_issue", "Get one issue by its id.", true),
                tool("add_comment", "Add a comment to an issue.", true),
                tool("ping", "Check the server.", false),
            ]
            .into(),
            ..Default::default()
        };
        let search = NativeSearch {
            regex: false,
            name: "tool_search_tool_bm25".into(),
            found: BTreeSet::new(),
            searched: false,
        };
        let blocks = search.run(&mut request, 7);
        assert_eq!(blocks[0]["type"], "server_tool_use");
        assert!(blocks[0]["input"]["query"]
            .as_str()
            .unwrap()
            .contains("issue 3"));
        assert_eq!(blocks[1]["tool_use_id"], blocks[0]["id"]);
        let refs = &blocks[1]["content"]["tool_references"];
        assert_eq!(refs[0]["tool_name"], "get_issue");
        let callable: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(callable[0], "get_issue");
        assert!(callable.contains(&"ping"), "a tool not deferred stays");
        assert!(request.tools.iter().all(|t| !t.deferred));
        // Searched already: no new search, the found tools stay callable, the others do not.
        let mut again = CompletionRequest {
            tools: vec![
                tool("get_issue", "Get one issue by its id.", true),
                tool("add_comment", "Add a comment.", true),
            ]
            .into(),
            ..Default::default()
        };
        let searched = NativeSearch {
            regex: true,
            name: "tool_search_tool_regex".into(),
            found: ["get_issue".to_owned()].into(),
            searched: true,
        };
        assert!(searched.run(&mut again, 7).is_empty());
        let callable: Vec<&str> = again.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(callable, ["get_issue"]);
    }

    #[test]
    fn the_regex_variant_sends_a_pattern_of_the_querys_words() {
        let search = NativeSearch {
            regex: true,
            name: "tool_search_tool_regex".into(),
            found: BTreeSet::new(),
            searched: false,
        };
        let tools = [
            tool("get_issue", "Get one issue.", true),
            tool("ping", "Check the server.", true),
        ];
        let (input, found) = search.search("show the issue", &tools);
        assert_eq!(input["pattern"], "(?i)(show|issue)");
        assert_eq!(found, ["get_issue"]);
    }
}
