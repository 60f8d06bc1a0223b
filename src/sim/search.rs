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
