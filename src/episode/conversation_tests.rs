//! Conversations through the agent loop: the same user messages on both sides of a paired
//! trial, each turn graded on its own, and a failed turn's effect with and without
//! `stop_on_failure`.

use std::time::Duration;

use super::agent::{run_trial, TrialInput, TrialOutput};
use super::agent_tests::demo_release;
use super::tools::ToolView;
use super::Author;
use crate::host::{HostProfile, Message};
use crate::mcp::demo::Release;
use crate::sim::SimModel;
use crate::suite::{Expectations, ExpectedCall, TaskKind, UserTurn};

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
    let conn = demo_release(release).await;
    let tools = conn.list_tools().await.unwrap();
    let profile = HostProfile::default();
    let view = ToolView::new(&tools, &profile, &crate::episode::Offer::fixed());
    let model = SimModel::default();
    let input = TrialInput {
        prompt: &turns[0].prompt,
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
