//! A `kind: call` task's trial: mcpeval sends its one request (a tool call, a resource read or a
//! prompt) to the side's server itself, no model involved, and grades the answer exactly.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{recorded_result, ToolCallRecord, TrialOutput};
use crate::grade::{grade_call, CallAnswer, Check};
use crate::mcp::{CallOutcome, McpConnection};
use crate::suite::{AfterCheck, CallSpec, FixtureCall, Stored, Task};

/// The host name (and model) of call tasks' episodes: no model runs them.
pub const DIRECT_HOST: &str = "direct";

/// The request a call task sends, as said in a server error: `tools/call `x``.
fn request_words(call: &CallSpec) -> String {
    match call {
        CallSpec::Tool { name, .. } => format!("tools/call `{name}`"),
        CallSpec::Resource { uri } => format!("resources/read `{uri}`"),
        CallSpec::Prompt { name, .. } => format!("prompts/get `{name}`"),
    }
}

impl FixtureError {
    /// What the server was asked when it could not answer (`setup call `x``); `None` for a call
    /// it answered with an error.
    pub fn unreachable_call(&self) -> Option<String> {
        match self {
            FixtureError::Unreachable { stage, tool, .. } => Some(format!("{stage} call `{tool}`")),
            FixtureError::Failed { .. } => None,
        }
    }
}

/// Sends the task's request and grades the answer. A server that cannot be reached or dies is an
/// infrastructure error; every answer, error or not, is graded.
pub async fn run_call(
    task: &Task,
    server: &McpConnection,
    tools: &[rmcp::model::Tool],
    timeout: Duration,
) -> TrialOutput {
    let mut out = TrialOutput {
        model: Some(DIRECT_HOST.to_owned()),
        ..TrialOutput::default()
    };
    let Some(call) = &task.call else {
        out.infra_error = Some(format!("task `{}` has no request to send", task.id));
        return out;
    };
    let started = Instant::now();
    let outcome = match call {
        CallSpec::Tool { name, args } => server.call_tool(name, Some(args.clone()), timeout).await,
        CallSpec::Resource { uri } => server.read_resource(uri).await,
        CallSpec::Prompt { name, args } => server.get_prompt(name, args, timeout).await,
    };
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    out.latency_ms = latency_ms;
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            out.infra_error = Some(crate::error::chain(&e));
            out.server_failed = Some(request_words(call));
            return out;
        }
    };
    let text = answer_text(call, &outcome, timeout);
    let output_schema = match call {
        CallSpec::Tool { name, .. } => output_schema(tools, name),
        _ => None,
    };
    let answer = CallAnswer {
        outcome: &outcome,
        text: &text,
        latency_ms,
        output_schema: output_schema.as_ref(),
    };
    out.grade = Some(grade_call(&task.call_expect, &answer));
    // A run that writes the task's snapshot keeps the whole answer for it (the call's record
    // keeps only its start).
    if let Some(Stored::Updating) = task.call_expect.result_snapshot.as_ref().map(|s| &s.stored) {
        out.final_answer = Some(text.clone());
    }
    let (is_error, error_code, error_kind) = match &outcome {
        CallOutcome::Result { is_error, .. } => (*is_error, None, is_error.then_some("tool")),
        CallOutcome::ProtocolError { code, .. } => (true, Some(*code), Some("protocol")),
        CallOutcome::Timeout => (true, None, Some("timeout")),
    };
    out.calls.push(ToolCallRecord {
        index: 0,
        tool: call.label(),
        arguments: call.arguments_json(),
        is_error,
        error_code,
        error_kind: error_kind.map(str::to_owned),
        latency_ms,
        result: recorded_result(&text),
        replay_unmatched: matches!(
            outcome,
            CallOutcome::Result {
                replay_unmatched: true,
                ..
            }
        ),
        recovered: false,
        user_turn: 1,
    });
    out
}

/// The `outputSchema` of the tool `name` as the server lists it, if it declares one.
fn output_schema(tools: &[rmcp::model::Tool], name: &str) -> Option<Value> {
    tools
        .iter()
        .find(|t| t.name == name)
        .and_then(|t| t.output_schema.as_ref())
        .map(|s| Value::Object((**s).clone()))
}

/// The answer as text: a tool's result text; a resource's contents (text, or blobs as JSON); a
/// prompt's messages; an error's `Error CODE: message`.
pub fn answer_text(call: &CallSpec, outcome: &CallOutcome, timeout: Duration) -> String {
    match outcome {
        CallOutcome::Result {
            text, structured, ..
        } => {
            let joined = match (call, structured) {
                (CallSpec::Resource { .. }, Some(result)) => texts(&result["contents"], |c| {
                    c.get("text").and_then(Value::as_str).map(str::to_owned)
                }),
                (CallSpec::Prompt { .. }, Some(result)) => texts(&result["messages"], |m| {
                    m.pointer("/content/text")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                }),
                _ => None,
            };
            joined.unwrap_or_else(|| text.clone())
        }
        CallOutcome::ProtocolError { code, message, .. } => format!("Error {code}: {message}"),
        CallOutcome::Timeout => format!("no answer within {} ms", timeout.as_millis()),
    }
}

/// The items of a JSON list as text, each by `text_of` or else as JSON, joined by newlines.
fn texts(list: &Value, text_of: impl Fn(&Value) -> Option<String>) -> Option<String> {
    let items = list.as_array()?;
    let parts: Vec<String> = items
        .iter()
        .map(|item| text_of(item).unwrap_or_else(|| item.to_string()))
        .collect();
    Some(parts.join("\n"))
}

/// Why a fixture (a `setup`, `teardown` or `after` call) could not do its part: the trial is an
/// infrastructure error.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    #[error("{stage} call `{tool}`: {reason}")]
    Unreachable {
        stage: &'static str,
        tool: String,
        reason: String,
    },
    #[error("{stage} call `{tool}` failed: expected a result without isError, got {got}")]
    Failed {
        stage: &'static str,
        tool: String,
        got: String,
    },
}

/// Runs a task's `setup` or `teardown` calls in order; the first that does not return a result
/// without `isError` is why the trial cannot count (an infrastructure error, not the model's).
pub async fn run_fixtures(
    server: &McpConnection,
    calls: &[FixtureCall],
    stage: &'static str,
    timeout: Duration,
) -> Result<(), FixtureError> {
    for call in calls {
        let outcome = server
            .call_tool(&call.tool, Some(call.args.clone()), timeout)
            .await
            .map_err(|e| FixtureError::Unreachable {
                stage,
                tool: call.tool.clone(),
                reason: crate::error::chain(&e),
            })?;
        if !matches!(
            outcome,
            CallOutcome::Result {
                is_error: false,
                ..
            }
        ) {
            return Err(FixtureError::Failed {
                stage,
                tool: call.tool.clone(),
                got: crate::grade::call::describe(&outcome),
            });
        }
    }
    Ok(())
}

/// Makes each `expect.after` call once the trial has ended and grades its answer: one check
/// (`after`) per call. A check with `within_ms` repeats its call until the answer passes or the
/// deadline has passed, and says how many attempts it took. A server that cannot be reached is
/// an infrastructure error.
pub async fn check_after(
    server: &McpConnection,
    checks: &[AfterCheck],
    tools: &[rmcp::model::Tool],
    timeout: Duration,
) -> Result<Vec<Check>, FixtureError> {
    let mut out = Vec::with_capacity(checks.len());
    for check in checks {
        let started = Instant::now();
        let deadline = check
            .within_ms
            .map(|ms| started + Duration::from_millis(ms));
        let every = Duration::from_millis(check.every_ms.unwrap_or(AfterCheck::DEFAULT_EVERY_MS));
        let mut attempts = 1;
        let mut grade = after_attempt(server, check, tools, timeout).await?;
        while let Some(deadline) = deadline.filter(|_| !grade.success) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            tokio::time::sleep(every.min(left)).await;
            attempts += 1;
            grade = after_attempt(server, check, tools, timeout).await?;
        }
        let args = Value::Object(check.call.args.clone());
        let mut explanation = format!(
            "`{}`({args}): {}",
            check.call.tool,
            explain(&grade.checks, grade.success)
        );
        if let Some(within) = check.within_ms {
            let took = started.elapsed().as_millis();
            explanation.push_str(&match grade.success {
                true if attempts == 1 => " (on the first attempt)".to_owned(),
                true => format!(" (on attempt {attempts}, {took} ms after the first)"),
                false => format!(
                    " (still so after {attempts} attempts over {took} ms; within_ms: {within})"
                ),
            });
        }
        out.push(Check {
            grader: "after".to_owned(),
            passed: grade.success,
            explanation,
            turn: None,
        });
    }
    Ok(out)
}

/// One attempt of an `after` check: its call made and its answer graded.
async fn after_attempt(
    server: &McpConnection,
    check: &AfterCheck,
    tools: &[rmcp::model::Tool],
    timeout: Duration,
) -> Result<crate::grade::Grade, FixtureError> {
    let started = Instant::now();
    let call = &check.call;
    let outcome = server
        .call_tool(&call.tool, Some(call.args.clone()), timeout)
        .await
        .map_err(|e| FixtureError::Unreachable {
            stage: "after",
            tool: call.tool.clone(),
            reason: crate::error::chain(&e),
        })?;
    let spec = CallSpec::Tool {
        name: call.tool.clone(),
        args: call.args.clone(),
    };
    let text = answer_text(&spec, &outcome, timeout);
    let output_schema = output_schema(tools, &call.tool);
    let answer = CallAnswer {
        outcome: &outcome,
        text: &text,
        latency_ms: started.elapsed().as_secs_f64() * 1000.0,
        output_schema: output_schema.as_ref(),
    };
    Ok(grade_call(&check.expect, &answer))
}

/// The checks' explanations: the failed ones, or all when every one passed.
fn explain(checks: &[Check], passed: bool) -> String {
    let shown: Vec<String> = checks
        .iter()
        .filter(|c| passed || !c.passed)
        .map(|c| format!("{}: {}", c.grader, c.explanation))
        .collect();
    shown.join("; ")
}
