//! The writer host with a scripted model over the demo's tools: what becomes a draft, what is
//! rejected at stage `writer` and why, the notes and the tokens.

use serde_json::json;

use super::*;
use crate::host::Usage;
use crate::mcp::demo::{instructions, tools, Release};

/// A writer that answers by the tool its prompt is about (`<tool>\nname: X`), or as the
/// server-wide prompt when there is none.
struct Scripted;

fn answer_for(prompt: &str) -> Result<&'static str, HostError> {
    let tool = (prompt.split("<tool>\nname: ").nth(1))
        .and_then(|rest| rest.lines().next())
        .unwrap_or("");
    Ok(match tool {
        "list_projects" => r#"{"requests": [{"prompt": "Which projects are in the tracker?"}]}"#,
        "search_issues" => {
            "Sure! ```json\n{\"requests\": [\
             {\"prompt\": \"Use search_issues to find login bugs\", \"args\": {\"query\": \"login\"}},\
             {\"prompt\": \"Find open issues about login in apollo\", \"args\": \
             {\"query\": \"login\", \"project\": \"apollo\", \"status\": \"open\"}}],\
             \"confusions\": [{\"other\": \"find_issues\", \"prompt\": \"Any crash reports?\", \
             \"args\": {\"query\": \"crash\"}}]}\n```"
        }
        "get_issue" => {
            r#"{"requests": [{"prompt": "Show me issue 3", "args": {"id": 3}},
                             {"prompt": "Open the issue abc", "args": {"id": "abc"}},
                             {"prompt": "Issue 4, please", "args": {"id": 4, "verbose": true}},
                             {"prompt": "Issue 5", "args": {"id": 5}}]}"#
        }
        "create_issue" => "I would rather not write tests today.",
        "update_issue" => return Err(HostError::Other("HTTP 500: the model is overloaded".into())),
        "add_comment" => r#"{"requests": []}"#,
        _ => {
            r#"{"near_misses": [{"prompt": "How should we triage bugs each week?"},
                                {"prompt": "Can I list projects by their owner?"}],
                "general": [{"prompt": "What is the capital of France?"}]}"#
        }
    })
}

#[async_trait::async_trait]
impl Model for Scripted {
    fn id(&self) -> &str {
        "openai:writer"
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, HostError> {
        let Some(Message::User { content }) = request.messages.last() else {
            return Err(HostError::Other("no user message".into()));
        };
        let answer = answer_for(content)?;
        Ok(Completion {
            content: Some(answer.to_owned()),
            usage: Usage {
                input_tokens: 100,
                output_tokens: 10,
                ..Usage::default()
            },
            ..Completion::default()
        })
    }
}

/// The rejection of `tool` whose reason contains `words`.
fn rejected<'a>(drafts: &'a Drafts, tool: Option<&str>, words: &str) -> &'a Rejected {
    (drafts.rejected.iter())
        .find(|r| r.tool.as_deref() == tool && r.reason.contains(words))
        .unwrap_or_else(|| {
            panic!(
                "no rejection of {tool:?} with {words:?}: {:#?}",
                drafts.rejected
            )
        })
}

#[tokio::test]
async fn what_the_writer_writes_is_drafted_or_rejected_with_its_reason() {
    let all = tools(Release::V1_4_0);
    let drafts = draft(
        &Scripted,
        "openai:writer",
        &all,
        Some(instructions(Release::V1_4_0)),
    )
    .await;
    let ids: Vec<&str> = drafts.drafts.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "model-list-projects-w1",
            "model-search-issues-w2",
            "model-get-issue-w1",
            "model-no-tool-near-miss-w1",
            "model-no-tool-general-w1",
        ],
        "{:#?}",
        drafts.rejected
    );
    // The expected call: enum values literal, words as case-blind regexes, the result not an error.
    let search = &drafts.drafts[1];
    let call = search.call.as_ref().unwrap();
    assert_eq!(call.tool, "search_issues");
    assert_eq!(call.args["query"], json!({"regex": "(?i)login"}));
    assert_eq!(call.args["status"], json!("open"));
    assert_eq!(call.is_error, Some(false));
    assert_eq!(search.origin, Origin::Writer("openai:writer".into()));
    assert_eq!(search.purpose, Purpose::Serves);
    assert_eq!(drafts.drafts[2].call.as_ref().unwrap().args["id"], json!(3));
    assert!(drafts.drafts[3].is_no_tool());
    assert_eq!(drafts.drafts[3].purpose, Purpose::NearMiss);
    assert_eq!(drafts.drafts[4].purpose, Purpose::NoToolGeneral);

    // Each bad one: stage writer, the reason, the draft where there was one.
    assert!(drafts.rejected.iter().all(|r| r.stage == Stage::Writer));
    let named = rejected(
        &drafts,
        Some("search_issues"),
        "names the tool `search_issues`",
    );
    assert_eq!(named.draft.as_ref().unwrap().id, "model-search-issues-w1");
    rejected(
        &drafts,
        Some("search_issues"),
        "`find_issues`, is not one the server lists",
    );
    let abc = rejected(
        &drafts,
        Some("get_issue"),
        "argument `id` = \"abc\" is refused",
    );
    assert_eq!(abc.draft.as_ref().unwrap().prompt, "Open the issue abc");
    rejected(
        &drafts,
        Some("get_issue"),
        "argument `verbose` is not in the input schema",
    );
    let garbage = rejected(
        &drafts,
        Some("create_issue"),
        "not the JSON asked for: I would",
    );
    assert!(garbage.draft.is_none());
    rejected(
        &drafts,
        Some("update_issue"),
        "the writer host failed: HTTP 500",
    );
    rejected(&drafts, Some("add_comment"), "the writer wrote no request");
    rejected(&drafts, None, "names the tool `list_projects`");
    assert_eq!(drafts.rejected.len(), 8, "{:#?}", drafts.rejected);
    // The fourth request of get_issue is past the three asked for: dropped, not rejected.
    assert!(!ids.contains(&"model-get-issue-w4"));

    // One note for the failed provider; the tokens of the six answers that came.
    assert_eq!(drafts.notes.len(), 1, "{:?}", drafts.notes);
    assert!(drafts.notes[0].contains("`openai:writer` failed for `update_issue`"));
    assert_eq!(drafts.writer_input_tokens, 600);
    assert_eq!(drafts.writer_output_tokens, 60);
}

/// A writer whose every answer stopped at the output cap halfway through the JSON.
struct Cut;

#[async_trait::async_trait]
impl Model for Cut {
    fn id(&self) -> &str {
        "openai:cut"
    }

    async fn complete(&self, _: &CompletionRequest) -> Result<Completion, HostError> {
        Ok(Completion {
            content: Some(r#"{"requests": [{"prompt": "Show me iss"#.to_owned()),
            truncated: true,
            ..Completion::default()
        })
    }
}

#[tokio::test]
async fn an_answer_cut_at_the_output_cap_is_rejected_saying_so() {
    let all = tools(Release::V1_4_0);
    let get: Vec<_> = all.into_iter().filter(|t| t.name == "get_issue").collect();
    let drafts = draft(&Cut, "openai:cut", &get, None).await;
    assert!(drafts.drafts.is_empty());
    let reasons: Vec<&str> = drafts.rejected.iter().map(|r| r.reason.as_str()).collect();
    assert_eq!(
        reasons,
        [r#"the writer's answer is not the JSON asked for: (the answer stopped at the output cap) {"requests": [{"prompt": "Show me iss"#;
            2],
    );
    assert_eq!(drafts.rejected[0].tool.as_deref(), Some("get_issue"));
    assert_eq!(drafts.rejected[1].tool, None);
}
