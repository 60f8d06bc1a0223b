//! How the sim searches for tools (`tool_search`): it knows mcpeval's search tool by its
//! description, searches once per request before anything else, and writes its query as a model
//! does: the user's request, with the other everyday words for the action it asks for ("find"
//! also as "search", "look up", …), since a tool's description may use any of them.

use super::lexicon::verb_words;
use super::request::Utterance;
use crate::host::tool_search::SEARCH_TOOLS_PURPOSE;
use crate::host::{Message, ToolSpec};

/// The query the sim searches with for `request` (the user's message).
pub(crate) fn search_query(request: &str) -> String {
    let utterance = Utterance::parse(request);
    let said = request.to_lowercase();
    let mut query = request.trim().to_owned();
    for word in verb_words(utterance.verb_concepts()) {
        if !said
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| w == word)
        {
            query.push(' ');
            query.push_str(word);
        }
    }
    query
}

/// The position of mcpeval's search tool among the tools offered, if it is one of them.
pub(super) fn search_tool(tools: &[ToolSpec]) -> Option<usize> {
    tools.iter().position(|t| {
        (t.description.as_deref()).is_some_and(|d| d.starts_with(SEARCH_TOOLS_PURPOSE))
    })
}

/// Whether a call to `name` was made since the user's message.
pub(super) fn searched(since_user: &[Message], name: &str) -> bool {
    since_user.iter().any(|m| match m {
        Message::Assistant { tool_calls, .. } => tool_calls.iter().any(|c| c.name == name),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::CompletionRequest;
    use crate::sim::{SimConfig, SimModel};

    fn spec(name: &str, description: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            input_schema: serde_json::json!({"type": "object",
                "properties": {"id": {"type": "integer", "description": "The issue number"}},
                "required": ["id"]}),
            deferred: false,
        }
    }

    #[test]
    fn given_the_search_tool_the_sim_searches_first_then_calls_what_it_loaded() {
        let finder = spec(
            "find_tools",
            &format!("{SEARCH_TOOLS_PURPOSE} `tracker` by what they do."),
        );
        let sim = SimModel::new(SimConfig::default());
        let mut request = CompletionRequest {
            messages: vec![Message::User {
                content: "Show me issue 3".into(),
            }],
            tools: vec![finder.clone()].into(),
            seed: 3,
            ..Default::default()
        };
        let first = sim.respond(&request);
        assert_eq!(
            first.tool_calls[0].name, "find_tools",
            "known by its description"
        );
        let query: serde_json::Value =
            serde_json::from_str(&first.tool_calls[0].arguments).unwrap();
        assert!(query["query"]
            .as_str()
            .unwrap()
            .starts_with("Show me issue 3"));
        request.messages.push(Message::Assistant {
            content: None,
            tool_calls: first.tool_calls.clone(),
            reasoning: None,
            server_blocks: Vec::new(),
        });
        request.messages.push(Message::Tool {
            tool_call_id: first.tool_calls[0].id.clone(),
            content: r#"{"tools":[{"name":"get_issue"}]}"#.into(),
        });
        request.tools = vec![
            finder.clone(),
            spec("get_issue", "Get one issue by its id."),
        ]
        .into();
        let second = sim.respond(&request);
        assert_eq!(second.tool_calls[0].name, "get_issue", "{second:?}");
        // Loaded nothing that fits: it answers, and does not search again.
        request.tools = vec![finder.clone()].into();
        let third = sim.respond(&request);
        assert!(third.tool_calls.is_empty(), "{third:?}");
        // A greeting needs no tool: no search.
        let hello = CompletionRequest {
            messages: vec![Message::User {
                content: "Hello!".into(),
            }],
            tools: vec![finder].into(),
            ..Default::default()
        };
        assert!(sim.respond(&hello).tool_calls.is_empty());
    }

    #[test]
    fn the_query_is_the_request_with_the_other_words_for_its_action() {
        let q = search_query("Find open issues about login in project apollo");
        assert!(
            q.starts_with("Find open issues about login in project apollo "),
            "{q}"
        );
        assert!(q.contains(" search") && q.contains(" lookup"), "{q}");
        assert!(!q.contains(" find"), "a word said is not repeated: {q}");
        // A question asks to be told: the words for "get".
        let q = search_query("Which projects are in the tracker?");
        assert!(
            q.starts_with("Which projects are in the tracker? get show"),
            "{q}"
        );
        assert_eq!(search_query("  hello "), "hello");
    }
}
