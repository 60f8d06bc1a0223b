//! Conversations through the agent loop: the same user messages on both sides of a paired
//! trial, each turn graded on its own, and a failed turn's effect with and without
//! `stop_on_failure`.

use std::time::Duration;

use super::agent::{run_trial, TrialInput, TrialOutput};
use super::agent_tests::demo_release;
use super::tools::ToolView;
use super::{Author, UserPlayer};
use crate::host::{Completion, CompletionRequest, HostError, Model};
use crate::host::{HostProfile, Message};
use crate::mcp::demo::Release;
use crate::sim::SimModel;
use crate::suite::{Expectations, ExpectedCall, SimulatedUser, TaskKind, UserTurn};

/// The vague first message of the simulated users' conversations.
const FIRST: &str = "Hi, I need some help with the tracker";

fn expect_call(tool: &str) -> Expectations {
    let call: ExpectedCall = serde_json::from_value(serde_json::json!({"tool": tool})).unwrap();
    Expectations {
        calls: vec![call],
        ..Expectations::default()
    }
}

fn turns() -> Vec<UserTurn> {
    vec![
        UserTurn {
            prompt: "Find open issues about login in project apollo".into(),
            expect: Some(expect_call("search_issues")),
            max_turns: 4,
        },
        UserTurn {
            prompt: "Close the first issue you found".into(),
            expect: Some(expect_call("update_issue")),
            max_turns: 4,
        },
    ]
}

async fn converse(release: Release, turns: &[UserTurn], stop_on_failure: bool) -> TrialOutput {
    converse_as(release, turns, stop_on_failure, None).await
}

async fn converse_as(
    release: Release,
    turns: &[UserTurn],
    stop_on_failure: bool,
    user: Option<UserPlayer<'_>>,
) -> TrialOutput {
    let conn = demo_release(release).await;
    let tools = conn.list_tools().await.unwrap();
    let profile = HostProfile::default();
    let view = ToolView::new(&tools, &profile, &crate::episode::Offer::fixed());
    let model = SimModel::default();
    let input = TrialInput {
        prompt: turns.first().map_or(FIRST, |t| t.prompt.as_str()),
        max_turns: 8,
        model: &model,
        profile: &profile,
        seed: 7,
        context: Default::default(),
        tools: &view,
        instructions: conn.server_info().instructions.as_deref(),
        call_timeout: Duration::from_secs(10),
        turns,
        stop_on_failure,
        kind: TaskKind::Tool,
        user,
        attach: &[],
        server_prompt: None,
    };
    let out = run_trial(&input, &conn).await;
    conn.close().await;
    out
}

fn user_messages(out: &TrialOutput) -> Vec<&str> {
    (out.messages.iter())
        .filter_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn both_sides_of_a_pair_get_the_same_user_messages_and_each_turn_its_grade() {
    let turns = turns();
    let baseline = converse(Release::V1_4_0, &turns, false).await;
    let candidate = converse(Release::V1_5_0, &turns, false).await;
    let scripted: Vec<&str> = turns.iter().map(|t| t.prompt.as_str()).collect();
    assert_eq!(user_messages(&baseline), scripted);
    assert_eq!(user_messages(&candidate), scripted);
    for out in [&baseline, &candidate] {
        assert!(out.infra_error.is_none(), "{:?}", out.infra_error);
        assert_eq!(out.user_turns.len(), 2);
        assert!(out
            .user_turns
            .iter()
            .all(|t| t.ran && t.by == Author::Script));
        // Each call is tagged with its turn, and each turn's slice holds its own calls.
        for t in &out.user_turns {
            assert!(t.calls(&out.calls).iter().all(|c| c.user_turn == t.turn));
            assert!(t.answer.is_some(), "turn {} ended on an answer", t.turn);
        }
        let models: u32 = out.user_turns.iter().map(|t| t.model_turns).sum();
        assert_eq!(models, out.turns, "model turns add up over the user turns");
        let input: u64 = out.user_turns.iter().map(|t| t.input_tokens).sum();
        assert_eq!(input, out.usage.input_tokens);
    }
    // 1.4.0 searches with search_issues; 1.5.0's find_issues takes the first turn, and the
    // second turn still closes the issue the first found.
    let success = |out: &TrialOutput| -> Vec<Option<bool>> {
        out.user_turns.iter().map(|t| t.success).collect()
    };
    assert_eq!(success(&baseline), [Some(true), Some(true)]);
    assert_eq!(success(&candidate), [Some(false), Some(true)]);
    let failed: Vec<_> = candidate.turn_checks.iter().filter(|c| !c.passed).collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].turn, Some(1));
    assert!(failed[0].explanation.contains("find_issues"), "{failed:?}");
    // The id of "the first issue you found" came from turn 1's result: issue 1.
    let closed = &baseline.user_turns[1].calls(&baseline.calls)[0];
    assert_eq!(closed.tool, "update_issue");
    let args: serde_json::Value = serde_json::from_str(&closed.arguments).unwrap();
    assert_eq!(args["id"], 1, "{args}");
}

#[tokio::test]
async fn stop_on_failure_leaves_the_later_turns_unrun_and_failed() {
    let turns = turns();
    let out = converse(Release::V1_5_0, &turns, true).await;
    assert_eq!(user_messages(&out), [turns[0].prompt.as_str()]);
    let second = &out.user_turns[1];
    assert!(!second.ran);
    assert_eq!(
        second.success,
        Some(false),
        "a graded turn not run did not pass"
    );
    assert_eq!(second.model_turns, 0);
    // Without it the second turn runs although the first failed.
    let out = converse(Release::V1_5_0, &turns, false).await;
    assert_eq!(user_messages(&out).len(), 2);
    assert!(out.user_turns[1].ran);
}

fn user(goal: &str, done_when: Option<Expectations>) -> SimulatedUser {
    SimulatedUser {
        host: "sim".into(),
        persona: Some("A developer in a hurry".into()),
        goal: goal.into(),
        max_turns: 3,
        done_when,
    }
}

#[tokio::test]
async fn the_sim_user_restates_its_goal_until_the_model_acts() {
    let spec = user("Show me issue 3", None);
    let sim = SimModel::default();
    let player = UserPlayer {
        spec: &spec,
        model: &sim,
        replay: &[],
    };
    let out = converse_as(Release::V1_4_0, &[], false, Some(player)).await;
    assert!(out.infra_error.is_none(), "{:?}", out.infra_error);
    assert_eq!(user_messages(&out), [FIRST, "Show me issue 3"]);
    let by: Vec<Author> = out.user_turns.iter().map(|t| t.by).collect();
    assert_eq!(by, [Author::Script, Author::User]);
    assert_eq!(
        out.user_turns[0].tool_calls, 0,
        "a vague request gets no call"
    );
    assert_eq!(out.calls.len(), 1);
    assert_eq!(
        (out.calls[0].tool.as_str(), out.calls[0].user_turn),
        ("get_issue", 2)
    );

    // With done_when, the user asks again until it holds or max_turns is reached: 1.5.0's
    // find_issues never satisfies it.
    let spec = user(
        "Find open issues about login in project apollo",
        Some(expect_call("search_issues")),
    );
    let player = |replay| UserPlayer {
        spec: &spec,
        model: &sim,
        replay,
    };
    let base = converse_as(Release::V1_4_0, &[], false, Some(player(&[]))).await;
    let cand = converse_as(Release::V1_5_0, &[], false, Some(player(&[]))).await;
    assert_eq!(base.user_turns.len(), 2);
    assert_eq!(cand.user_turns.len(), 3, "max_turns");
    // Replayed: the candidate's second message is the baseline's; the third its own.
    let recorded: Vec<String> = user_messages(&base).iter().map(|m| m.to_string()).collect();
    let replayed = converse_as(Release::V1_5_0, &[], false, Some(player(&recorded))).await;
    let by: Vec<Author> = replayed.user_turns.iter().map(|t| t.by).collect();
    assert_eq!(by, [Author::Script, Author::Replay, Author::User]);
}

/// A user model that answers from a script and keeps what it was sent.
struct Writer {
    replies: std::sync::Mutex<Vec<&'static str>>,
    seen: std::sync::Mutex<Vec<CompletionRequest>>,
}

#[async_trait::async_trait]
impl Model for Writer {
    fn id(&self) -> &str {
        "writer"
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, HostError> {
        self.seen.lock().unwrap().push(request.clone());
        let reply = self.replies.lock().unwrap().remove(0);
        Ok(Completion {
            content: Some(reply.into()),
            usage: crate::host::Usage {
                input_tokens: 50,
                output_tokens: 5,
                ..Default::default()
            },
            ..Default::default()
        })
    }
}

#[tokio::test]
async fn a_user_model_sees_only_what_a_user_sees_and_ends_with_done() {
    let spec = user("Show me issue 3", None);
    let writer = Writer {
        replies: std::sync::Mutex::new(vec!["Show me issue 3 please", "DONE."]),
        seen: Default::default(),
    };
    let player = UserPlayer {
        spec: &spec,
        model: &writer,
        replay: &[],
    };
    let out = converse_as(Release::V1_4_0, &[], false, Some(player)).await;
    assert!(out.infra_error.is_none(), "{:?}", out.infra_error);
    assert_eq!(user_messages(&out), [FIRST, "Show me issue 3 please"]);
    // Its tokens sit on the turn whose answer it read: for the next message, then for DONE.
    let tokens: Vec<(Author, u64, u64)> = (out.user_turns.iter())
        .map(|t| (t.by, t.user_input_tokens, t.user_output_tokens))
        .collect();
    assert_eq!(tokens, [(Author::Script, 50, 5), (Author::User, 50, 5)]);
    let seen = writer.seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "asked after each answer, until DONE");
    assert!(seen.iter().all(|r| r.tools.is_empty() && r.seed == 7));
    let Message::System { content: system } = &seen[0].messages[0] else {
        panic!("a system prompt first")
    };
    assert!(
        system.contains("Show me issue 3") && system.contains("in a hurry"),
        "{system}"
    );
    let Message::User { content: last } = &seen[1].messages[1] else {
        panic!("the transcript as one message")
    };
    // The model's answer is there; the tool call and its raw result are not.
    assert!(last.contains("You: Show me issue 3 please"), "{last}");
    assert!(
        !last.contains("get_issue") && !last.contains("call_"),
        "{last}"
    );
}
