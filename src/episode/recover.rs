//! Tool calls a model wrote as text, made into the structured calls the agent loop executes
//! when its host recovers them (`recover_text_calls`): what is made, what could not be, and
//! what the answer said besides.

use super::text_calls::WrittenCall;
use super::tools::ToolView;
use crate::host::ToolCallRequest;

/// Openers of a call block left at the end of what an answer said before its first call.
const OPENERS: [&str; 8] = [
    "```json",
    "```JSON",
    "```",
    "<tool_call>",
    "<function_calls>",
    "<tools>",
    "[TOOL_CALLS]",
    "<|python_tag|>",
];

/// The calls of one answer, as the loop makes them.
#[derive(Debug, Default, PartialEq)]
pub struct Recovered {
    /// Structured calls, in the order written, by the names the model was shown.
    pub calls: Vec<ToolCallRequest>,
    /// Calls whose arguments did not parse: not made.
    pub unparsed: u32,
    /// What the answer said before its first call (`None`: nothing), the text of the assistant
    /// turn that carries the calls in structured form.
    pub said: Option<String>,
}

/// Makes the calls `written` in `answer` (turn `turn`) into structured calls of `tools`.
pub fn recover(answer: &str, written: &[WrittenCall], tools: &ToolView, turn: u32) -> Recovered {
    let mut out = Recovered::default();
    for call in written {
        let shown = tools.shown_name(&call.name);
        match (shown, &call.arguments) {
            (Some(shown), Some(arguments)) => out.calls.push(ToolCallRequest {
                id: format!("text_call_{turn}_{}", out.calls.len() + 1),
                name: shown.to_owned(),
                arguments: serde_json::Value::Object(arguments.clone()).to_string(),
            }),
            _ => out.unparsed += 1,
        }
    }
    if let Some(first) = written.first().filter(|_| !out.calls.is_empty()) {
        out.said = said_before(&answer[..first.span.start]);
    }
    out
}

/// The text before a first call, without the opener of the block the call is in.
fn said_before(text: &str) -> Option<String> {
    let mut said = text.trim_end();
    loop {
        let before = said.len();
        for opener in OPENERS {
            said = said.strip_suffix(opener).unwrap_or(said).trim_end();
        }
        if said.len() == before {
            break;
        }
    }
    let said = said.trim();
    (!said.is_empty()).then(|| said.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HostProfile;
    use crate::episode::text_calls::read_calls;
    use crate::episode::tools::Offer;

    fn view() -> ToolView {
        let tool = |name: &str| {
            rmcp::model::Tool::new(
                name.to_owned(),
                format!("{name} tool"),
                std::sync::Arc::new(serde_json::Map::new()),
            )
        };
        ToolView::new(
            &[tool("list_projects"), tool("get_issue")],
            &HostProfile::default(),
            &Offer::fixed(),
        )
    }

    fn recovered(answer: &str) -> Recovered {
        let view = view();
        let names: Vec<&str> = view.names().collect();
        recover(answer, &read_calls(answer, &names), &view, 2)
    }

    #[test]
    fn calls_in_a_json_block_become_structured_calls_after_what_was_said() {
        let got = recovered(
            "Let me look.\n```json\n{\"name\": \"get_issue\", \"arguments\": {\"id\": 3}}\n```",
        );
        assert_eq!(
            got.calls,
            vec![ToolCallRequest {
                id: "text_call_2_1".into(),
                name: "get_issue".into(),
                arguments: r#"{"id":3}"#.into(),
            }]
        );
        assert_eq!(
            (got.unparsed, got.said.as_deref()),
            (0, Some("Let me look."))
        );
    }

    #[test]
    fn several_calls_keep_their_order_and_unparsed_ones_are_counted() {
        let got = recovered(
            "<tool_call>\n{\"name\": \"list_projects\", \"arguments\": {}}\n</tool_call>\n\
             <tool_call>\n{\"name\": \"mcp__tracker__get_issue\", \"arguments\": {\"id\": 1}}\n\
             </tool_call>\n<tool_call>\n{\"name\": \"get_issue\", \"arguments\": {\"id\": \n",
        );
        let names: Vec<&str> = got.calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["list_projects", "get_issue"]);
        assert_eq!(got.calls[1].id, "text_call_2_2");
        assert_eq!(got.unparsed, 1);
        assert_eq!(got.said, None, "nothing was said before the first call");
    }

    #[test]
    fn an_answer_with_only_unparsed_calls_makes_none_and_keeps_its_text() {
        let got = recovered("I will call [get_issue(id=3)]");
        assert_eq!(got.calls, vec![]);
        let got = recovered("[get_issue(id=3)]");
        assert_eq!((got.calls.len(), got.unparsed, got.said), (0, 1, None));
    }
}
