//! `tool_choice` of a `[host.NAME]` on one request: which turns a forcing choice holds on, and
//! the tool it names as the model is shown it. Each provider's wire module writes it its way.

use super::{CompletionRequest, Message};
use crate::config::ToolChoice;

/// The tool choice of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TurnChoice<'a> {
    Auto,
    Required,
    None,
    /// This tool, by the name the model is shown.
    Tool(&'a str),
}

/// The choice to send with `request`, or `None` to send none (no choice configured, or a
/// request without tools: providers reject a choice there). `required` and a named tool force a
/// call only until the trial's first tool result; after it the model chooses (`auto`), so that it
/// can answer. A named tool that this request does not offer (the server's name, or the name
/// the model is shown; a side without it) is `auto` too.
pub(crate) fn for_request<'a>(
    choice: Option<&ToolChoice>,
    request: &'a CompletionRequest,
) -> Option<TurnChoice<'a>> {
    let choice = choice?;
    if request.tools.is_empty() {
        return None;
    }
    let answered = request
        .messages
        .iter()
        .any(|m| matches!(m, Message::Tool { .. }));
    Some(match choice {
        ToolChoice::Auto => TurnChoice::Auto,
        ToolChoice::None => TurnChoice::None,
        _ if answered => TurnChoice::Auto,
        ToolChoice::Required => TurnChoice::Required,
        ToolChoice::Tool(name) => {
            let prefixed = format!("__{name}");
            request
                .tools
                .iter()
                .map(|t| t.name.as_str())
                .find(|shown| *shown == name || shown.ends_with(&prefixed))
                .map_or(TurnChoice::Auto, TurnChoice::Tool)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::ToolSpec;

    fn request(tools: &[&str], answered: bool) -> CompletionRequest {
        let mut messages = vec![Message::User {
            content: "list the projects".into(),
        }];
        if answered {
            messages.push(Message::Tool {
                tool_call_id: "c1".into(),
                content: "apollo".into(),
            });
        }
        CompletionRequest {
            messages,
            tools: tools
                .iter()
                .map(|n| ToolSpec {
                    name: (*n).to_owned(),
                    title: None,
                    description: None,
                    input_schema: serde_json::json!({"type": "object"}),
                    deferred: false,
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn forcing_choices_hold_until_the_first_tool_result() {
        let first = request(&["mcp__tracker__list_projects"], false);
        let later = request(&["mcp__tracker__list_projects"], true);
        let required = ToolChoice::Required;
        assert_eq!(
            for_request(Some(&required), &first),
            Some(TurnChoice::Required)
        );
        assert_eq!(for_request(Some(&required), &later), Some(TurnChoice::Auto));
        // The server's name finds the prefixed name the model is shown.
        let tool = ToolChoice::Tool("list_projects".into());
        assert_eq!(
            for_request(Some(&tool), &first),
            Some(TurnChoice::Tool("mcp__tracker__list_projects"))
        );
        assert_eq!(for_request(Some(&tool), &later), Some(TurnChoice::Auto));
        assert_eq!(
            for_request(Some(&ToolChoice::None), &later),
            Some(TurnChoice::None)
        );
    }

    #[test]
    fn no_choice_without_tools_and_auto_for_a_tool_not_offered() {
        assert_eq!(
            for_request(Some(&ToolChoice::Required), &request(&[], false)),
            None
        );
        assert_eq!(for_request(None, &request(&["a"], false)), None);
        let gone = ToolChoice::Tool("removed_tool".into());
        assert_eq!(
            for_request(Some(&gone), &request(&["a"], false)),
            Some(TurnChoice::Auto)
        );
    }
}
