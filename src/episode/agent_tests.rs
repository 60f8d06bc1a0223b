//! The agent loop against the in-process demo server with a scripted model: what a real host
//! does with the model's mistakes, tool errors and the turn limit.

use std::sync::Mutex;
use std::time::Duration;

use super::agent::{run_trial, TrialInput};
use super::tools::ToolView;
use crate::config::{ProtocolEra, ServerSpec};
use crate::host::{
    Completion, CompletionRequest, HostError, HostProfile, Message, Model, ToolCallRequest, Usage,
};
use crate::mcp::demo::{DemoServer, Release};
use crate::mcp::McpConnection;

/// A model that plays back a script of turns and keeps what it was sent.
struct Scripted {
    turns: Mutex<Vec<Completion>>,
    seen: Mutex<Vec<Vec<Message>>>,
}

impl Scripted {
    fn new(turns: Vec<Completion>) -> Self {
        Self {
            turns: Mutex::new(turns.into_iter().rev().collect()),
            seen: Mutex::new(Vec::new()),
        }
    }
}

#[async_trait::async_trait]
impl Model for Scripted {
    fn id(&self) -> &str {
        "scripted"
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, HostError> {
        self.seen.lock().unwrap().push(request.messages.clone());
        self.turns
            .lock()
            .unwrap()
            .pop()
            .ok_or_else(|| HostError::Other("script exhausted".into()))
    }
}

fn calls(calls: &[(&str, &str)]) -> Completion {
    Completion {
        content: None,
        tool_calls: calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| ToolCallRequest {
                id: format!("call_{i}"),
                name: (*name).into(),
                arguments: (*args).into(),
            })
            .collect(),
        usage: Usage {
            input_tokens: 100,
            output_tokens: 10,
            ..Usage::default()
        },
        model: "scripted".into(),
        ..Default::default()
    }
}

fn answer(text: &str) -> Completion {
    Completion {
        content: Some(text.into()),
        ..calls(&[])
    }
}

async fn demo_connection() -> McpConnection {
    demo_release(Release::V1_4_0).await
}

pub(super) async fn demo_release(release: Release) -> McpConnection {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = rmcp::ServiceExt::serve(DemoServer::new(release), server_io).await {
            let _ = running.waiting().await;
        }
    });
    let mut spec = ServerSpec::parse("demo", "unused").unwrap();
    spec.protocol_era = ProtocolEra::Legacy;
    McpConnection::connect_with(&spec, client_io).await.unwrap()
}

async fn play(model: &Scripted, max_turns: u32) -> super::agent::TrialOutput {
    play_as(model, max_turns, &HostProfile::default()).await
}

async fn play_as(
    model: &Scripted,
    max_turns: u32,
    profile: &HostProfile,
) -> super::agent::TrialOutput {
    let conn = demo_connection().await;
    let tools = conn.list_tools().await.unwrap();
    let view = ToolView::new(&tools, profile, &crate::episode::Offer::fixed());
    let input = TrialInput {
        prompt: "do the thing",
        max_turns,
        model,
        profile,
        seed: 1,
        context: Default::default(),
        tools: &view,
        instructions: conn.server_info().instructions.as_deref(),
        call_timeout: Duration::from_secs(10),
        turns: &[],
        stop_on_failure: false,
        kind: crate::suite::TaskKind::Tool,
        user: None,
        attach: &[],
        server_prompt: None,
    };
    let out = run_trial(&input, &conn).await;
    conn.close().await;
    out
}

#[tokio::test]
async fn model_mistakes_are_recorded_and_sent_back_as_error_results() {
    let model = Scripted::new(vec![
        calls(&[("delete_issue", r#"{"id": 4}"#), ("get_issue", "{id: 3")]),
        calls(&[("get_issue", r#"{"id": 999}"#)]),
        calls(&[("get_issue", r#"{"id": 3}"#)]),
        answer("Issue 3 is about a crash."),
    ]);
    let out = play(&model, 8).await;
    assert_eq!(out.infra_error, None);
    assert_eq!(out.turns, 4);
    assert_eq!((out.usage.input_tokens, out.usage.output_tokens), (400, 40));
    assert_eq!(
        out.final_answer.as_deref(),
        Some("Issue 3 is about a crash.")
    );
    let kinds: Vec<Option<&str>> = out.calls.iter().map(|c| c.error_kind.as_deref()).collect();
    assert_eq!(kinds, [Some("model"), Some("model"), Some("tool"), None]);
    assert_eq!(out.calls[0].tool, "delete_issue");
    assert!(out.calls[0].result.contains("no tool named `delete_issue`"));
    assert!(out.calls[1].result.contains("not valid"));
    assert!(out.calls[3].result.contains("large photo"));
    // The model saw each error as a tool result answering its call.
    let second_turn = &model.seen.lock().unwrap()[1];
    let replies: Vec<&Message> = second_turn
        .iter()
        .filter(|m| matches!(m, Message::Tool { .. }))
        .collect();
    assert_eq!(replies.len(), 2);
    assert!(matches!(replies[0], Message::Tool { tool_call_id, content }
        if tool_call_id == "call_0" && content.contains("Available tools")));
    // Instructions reached the system prompt.
    assert!(
        matches!(&second_turn[0], Message::System { content } if content.contains("never be deleted"))
    );
}

#[tokio::test]
async fn the_loop_stops_at_max_turns_and_a_failing_model_is_an_infra_error() {
    let model = Scripted::new(vec![
        calls(&[("list_projects", "{}")]),
        calls(&[("list_projects", "")]),
        calls(&[("list_projects", "null")]),
    ]);
    let out = play(&model, 2).await;
    assert!(out.hit_max_turns);
    assert_eq!((out.turns, out.calls.len()), (2, 2));
    assert!(out.calls.iter().all(|c| !c.is_error), "{:?}", out.calls);
    assert_eq!(out.final_answer, None);

    let out = play(&Scripted::new(vec![]), 5).await;
    assert!(out.infra_error.unwrap().contains("script exhausted"));
    assert_eq!(out.turns, 0);
}

/// The answers of a model that writes its calls as text: a JSON block after a sentence, two
/// Hermes calls (one with arguments cut short), then a plain answer.
fn text_script() -> Vec<Completion> {
    vec![
        answer("Let me look.\n```json\n{\"name\": \"get_issue\", \"arguments\": {\"id\": 3}}\n```"),
        answer(
            "<tool_call>\n{\"name\": \"list_projects\", \"arguments\": {}}\n</tool_call>\n\
             <tool_call>\n{\"name\": \"get_issue\", \"arguments\": {\"id\": ",
        ),
        answer("Issue 3 is about a crash."),
    ]
}

#[tokio::test]
async fn calls_written_as_text_are_made_when_the_host_recovers_them() {
    let profile = HostProfile {
        recover_text_calls: true,
        ..HostProfile::default()
    };
    let model = Scripted::new(text_script());
    let out = play_as(&model, 8, &profile).await;
    assert_eq!(out.infra_error, None);
    assert_eq!(out.turns, 3);
    let made: Vec<(&str, &str, bool)> = (out.calls.iter())
        .map(|c| (c.tool.as_str(), c.arguments.as_str(), c.recovered))
        .collect();
    assert_eq!(
        made,
        [
            ("get_issue", r#"{"id":3}"#, true),
            ("list_projects", "{}", true)
        ]
    );
    assert!(
        out.calls[0].result.contains("large photo"),
        "{:?}",
        out.calls
    );
    assert_eq!(
        (
            out.text_calls.count,
            out.text_calls.recovered,
            out.text_calls.unparsed
        ),
        (2, 2, 1)
    );
    assert_eq!(
        out.final_answer.as_deref(),
        Some("Issue 3 is about a crash.")
    );
    // The model saw its calls in structured form, each answered by its result: what it said
    // before the first call is the turn's text, the call block is gone from it.
    let seen = model.seen.lock().unwrap().clone();
    let second = &seen[1];
    let Message::Assistant {
        content,
        tool_calls,
        ..
    } = &second[2]
    else {
        panic!("{second:?}")
    };
    assert_eq!(content.as_deref(), Some("Let me look."));
    assert_eq!(tool_calls.len(), 1);
    assert_eq!(
        (tool_calls[0].name.as_str(), tool_calls[0].id.as_str()),
        ("get_issue", "text_call_1_1")
    );
    assert!(matches!(&second[3], Message::Tool { tool_call_id, content }
        if tool_call_id == "text_call_1_1" && content.contains("large photo")));
    let third = &seen[2];
    let replies = third
        .iter()
        .filter(|m| matches!(m, Message::Tool { .. }))
        .count();
    assert_eq!(replies, 2, "the cut call was not made: {third:?}");

    // The same answers without recovery: no call, the first answer is the final one.
    let model = Scripted::new(text_script());
    let out = play(&model, 8).await;
    assert!(out.calls.is_empty());
    assert_eq!(out.turns, 1);
    assert_eq!(
        (
            out.text_calls.count,
            out.text_calls.recovered,
            out.text_calls.unparsed
        ),
        (1, 0, 0)
    );
    assert!(out.final_answer.unwrap().contains("```json"));
}
