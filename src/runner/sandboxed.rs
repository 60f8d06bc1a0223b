//! A trial on sandbox copies: the task's `{sandbox}` placeholders become this trial's copies
//! before it runs, and the copies' paths become placeholders again in what it recorded, so that
//! two trials (whose copies differ) grade and compare alike.

use crate::episode::TrialOutput;
use crate::mcp::sandbox::SandboxCopies;
use crate::suite::{ArgMatcher, FixtureCall, Task};

/// `task` with its placeholders replaced by `copies`' paths: the prompt, the request of a call
/// task, its fixtures and `after` calls, and the texts and arguments it expects.
pub fn task_on(copies: &SandboxCopies, task: &Task) -> Task {
    let mut task = task.clone();
    let text = |s: &mut String| *s = copies.substitute(s);
    text(&mut task.prompt);
    if let Some(call) = &mut task.call {
        let mut value = serde_json::to_value(&*call).unwrap_or_default();
        copies.substitute_json(&mut value);
        if let Ok(substituted) = serde_json::from_value(value) {
            *call = substituted;
        }
    }
    let fixtures = task.setup.iter_mut().chain(task.teardown.iter_mut());
    for fixture in fixtures.chain(task.after.iter_mut().map(|a| &mut a.call)) {
        fixture_on(copies, fixture);
    }
    for after in &mut task.after {
        after.expect.result_contains.iter_mut().for_each(text);
        after.expect.result_not_contains.iter_mut().for_each(text);
    }
    task.call_expect.result_contains.iter_mut().for_each(text);
    task.call_expect
        .result_not_contains
        .iter_mut()
        .for_each(text);
    for turn in &mut task.turns {
        text(&mut turn.prompt);
    }
    if let Some(user) = &mut task.user {
        text(&mut user.goal);
        if let Some(done) = &mut user.done_when {
            expect_on(copies, done);
        }
    }
    let turns = task.turns.iter_mut().filter_map(|t| t.expect.as_mut());
    for expect in std::iter::once(&mut task.expect).chain(turns) {
        expect_on(copies, expect);
    }
    task
}

/// The texts and arguments one `expect` (the task's or a turn's) expects, on the copies.
fn expect_on(copies: &SandboxCopies, expect: &mut crate::suite::Expectations) {
    let text = |s: &mut String| *s = copies.substitute(s);
    expect.answer_contains.iter_mut().for_each(text);
    expect.answer_not_contains.iter_mut().for_each(text);
    for call in &mut expect.calls {
        for matcher in call.args.values_mut() {
            match matcher {
                ArgMatcher::Literal(value) | ArgMatcher::Exact { exact: value } => {
                    copies.substitute_json(value)
                }
                ArgMatcher::Regex { .. } | ArgMatcher::Any { .. } => {}
            }
        }
    }
}

fn fixture_on(copies: &SandboxCopies, fixture: &mut FixtureCall) {
    for value in fixture.args.values_mut() {
        copies.substitute_json(value);
    }
}

/// What a trial recorded with the copies' paths put back as placeholders: its calls' arguments
/// and results, the answer, the conversation, its grade and its errors.
pub fn map_back(copies: &SandboxCopies, output: &mut TrialOutput) {
    let text = |s: &mut String| *s = copies.map_back(s);
    for call in &mut output.calls {
        text(&mut call.arguments);
        text(&mut call.result);
    }
    output.final_answer.iter_mut().for_each(text);
    output.infra_error.iter_mut().for_each(text);
    for message in &mut output.messages {
        let Ok(mut value) = serde_json::to_value(&*message) else {
            continue;
        };
        copies.map_back_json(&mut value);
        if let Ok(mapped) = serde_json::from_value(value) {
            *message = mapped;
        }
    }
    for turn in &mut output.user_turns {
        text(&mut turn.message);
        turn.answer.iter_mut().for_each(text);
    }
    let checks = output.grade.iter_mut().flat_map(|g| g.checks.iter_mut());
    let checks = checks.chain(output.turn_checks.iter_mut());
    for check in checks.chain(output.after.iter_mut()) {
        text(&mut check.explanation);
    }
}
