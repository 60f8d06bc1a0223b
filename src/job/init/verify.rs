//! Verification of drafted model tasks: each runs against the server through the verifying
//! host for `--verify-trials` trials, on a fresh server each as a run's trial (on fresh sandbox
//! copies where the server has them), graded as `mcpeval run` grades it, and is kept when it
//! passes `--keep-at` of them; the others are rejected with the reason and the model's calls.
//! Only called where the guard lets a model reach every tool (src/job/init/guard.rs).

use futures::StreamExt;

use super::model_tasks::{BuiltHost, ModelOutcome, Passed};
use super::models::{ModelDraft, Rejected, Stage};
use super::InitRequest;
use crate::episode::{run_trial, TrialInput, TrialOutput};
use crate::runner::{grade_output, trial_seed, Server};
use crate::suite::Task;

/// How many drafts verify at once (each runs its trials one after another).
const PARALLEL: usize = 4;

/// What one draft's trials gave.
struct Tried {
    passed: u32,
    trials: u32,
    /// The first failing trial's reason, and every failing trial's calls.
    reason: Option<String>,
    calls: Vec<String>,
    input_tokens: u64,
    output_tokens: u64,
}

/// Runs every draft and sorts it into kept and rejected, in the drafts' order.
pub async fn verify(
    request: &InitRequest,
    host: &BuiltHost,
    tools: &[rmcp::model::Tool],
    drafts: Vec<ModelDraft>,
) -> ModelOutcome {
    let mut outcome = ModelOutcome::default();
    let tasks: Vec<(ModelDraft, Result<Task, NotATask>)> = (drafts.into_iter())
        .map(|d| {
            let task = as_task(&d);
            (d, task)
        })
        .collect();
    let tried: Vec<Option<Tried>> = futures::stream::iter(tasks.iter())
        .map(|(draft, task)| async move {
            let task = task.as_ref().ok()?;
            Some(try_task(request, host, draft, task).await)
        })
        .buffered(PARALLEL)
        .collect()
        .await;
    let need = (request.keep_at * f64::from(request.verify_trials) - 1e-9).ceil() as u32;
    for ((draft, task), tried) in tasks.into_iter().zip(tried) {
        let tried = match (task, tried) {
            (Err(why), _) => {
                outcome
                    .rejected
                    .push(rejected(draft, why.to_string(), Vec::new()));
                continue;
            }
            (Ok(_), None) => continue,
            (Ok(_), Some(tried)) => tried,
        };
        outcome.trials += u64::from(tried.trials);
        outcome.input_tokens += tried.input_tokens;
        outcome.output_tokens += tried.output_tokens;
        let passed = Passed {
            passed: tried.passed,
            trials: tried.trials,
        };
        if tried.passed >= need.max(1) {
            outcome.kept.push((draft, passed));
        } else {
            let why = format!(
                "passed {}/{} trials (needs {}): {}",
                tried.passed,
                tried.trials,
                need.max(1),
                tried.reason.unwrap_or_default()
            );
            outcome.rejected.push(rejected(draft, why, tried.calls));
        }
    }
    let _ = tools;
    outcome
}

fn rejected(draft: ModelDraft, reason: String, calls: Vec<String>) -> Rejected {
    Rejected {
        tool: draft.tool.clone(),
        draft: Some(draft),
        stage: Stage::Verification,
        reason,
        calls,
    }
}

/// A draft the suite loader does not take (a bug of the drafting, said rather than written).
#[derive(Debug, thiserror::Error)]
#[error("the draft does not load as a task: {0}")]
struct NotATask(String);

/// The draft as the suite loader reads it (so it is graded exactly as the written file will be).
fn as_task(draft: &ModelDraft) -> Result<Task, NotATask> {
    let text = draft.yaml("");
    let suite = crate::suite::load_sources(&[("draft.yaml".into(), text)])
        .map_err(|e| NotATask(crate::error::chain(&e)))?;
    (suite.tasks.into_iter().next()).ok_or_else(|| NotATask("no task in it".into()))
}

/// The draft's trials, one after another, each on a fresh server.
async fn try_task(
    request: &InitRequest,
    host: &BuiltHost,
    draft: &ModelDraft,
    task: &Task,
) -> Tried {
    let mut tried = Tried {
        passed: 0,
        trials: 0,
        reason: None,
        calls: Vec::new(),
        input_tokens: 0,
        output_tokens: 0,
    };
    for trial in 1..=request.verify_trials {
        let output = one_trial(request, host, task, trial).await;
        tried.trials += 1;
        tried.input_tokens += output.usage.input_tokens;
        tried.output_tokens += output.usage.output_tokens;
        let why = match &output.infra_error {
            Some(e) => Some(format!(
                "the trial failed outside the model: {}",
                e.lines().next().unwrap_or_default()
            )),
            None => {
                let grade = grade_output(task, &output);
                match grade.success {
                    true => None,
                    false => Some(reason(draft, &output, &grade.failure_summary())),
                }
            }
        };
        let Some(why) = why else {
            tried.passed += 1;
            continue;
        };
        tried.reason.get_or_insert(why);
        for call in &output.calls {
            let shown = format!("{} {}", call.tool, call.arguments);
            if !tried.calls.contains(&shown) {
                tried.calls.push(shown);
            }
        }
        if output.calls.is_empty() {
            let answer = (output.final_answer.as_deref())
                .map(|a| super::draft::short(a, 120))
                .unwrap_or_default();
            let shown = format!("no tool; answered: {answer}");
            if !tried.calls.contains(&shown) {
                tried.calls.push(shown);
            }
        }
    }
    tried
}

/// One trial of `task` against a fresh server.
async fn one_trial(
    request: &InitRequest,
    host: &BuiltHost,
    task: &Task,
    trial: u32,
) -> TrialOutput {
    let server = match Server::connect(&request.server, None).await {
        Ok(server) => server,
        Err(e) => {
            return TrialOutput {
                infra_error: Some(format!(
                    "the server did not start: {}",
                    crate::error::chain(&e)
                )),
                ..TrialOutput::default()
            }
        }
    };
    let seed = trial_seed(host.config.seed, &task.id, trial);
    let offer = crate::episode::Offer {
        seed,
        ..crate::episode::Offer::fixed()
    };
    let view = server.view(0, &host.host.profile, &offer);
    // On sandbox copies the prompt names this trial's copy, and the record `{sandbox}` again.
    let copies = server.connection.sandbox();
    let on_copies = copies.map(|c| crate::runner::sandboxed::task_on(c, task));
    let input = TrialInput {
        prompt: &on_copies.as_ref().unwrap_or(task).prompt,
        max_turns: task.max_turns,
        model: host.model.as_ref(),
        profile: &host.host.profile,
        seed,
        context: crate::host::RequestContext {
            task_id: task.id.clone(),
            side: "baseline".into(),
            trial,
        },
        tools: &view,
        instructions: server.info.instructions.as_deref(),
        call_timeout: request.timeout,
        turns: &on_copies.as_ref().unwrap_or(task).turns,
        stop_on_failure: task.stop_on_failure,
        kind: task.kind,
        user: None,
        attach: &task.attach,
        server_prompt: task.server_prompt.as_ref(),
    };
    let mut output = run_trial(&input, &server.connection).await;
    if let Some(copies) = copies {
        crate::runner::sandboxed::map_back(copies, &mut output);
    }
    server.connection.close().await;
    output
}

/// Why a trial failed, in the words of the issue: another tool chosen, no tool, wrong
/// arguments, a forbidden tool, a failed check.
fn reason(draft: &ModelDraft, output: &TrialOutput, summary: &str) -> String {
    let called: Vec<&str> = output.calls.iter().map(|c| c.tool.as_str()).collect();
    let Some(call) = &draft.call else {
        return match called.first() {
            Some(first) => format!("a tool was called ({first}) where none is needed"),
            None => format!("a failed check: {summary}"),
        };
    };
    if draft.first_turn.is_some() {
        // The calls of both turns are in `called`: the grade says which turn failed.
        return format!("a failed turn: {summary}");
    }
    if let Some(bad) = (draft.forbidden.iter()).find(|f| called.contains(&f.as_str())) {
        return format!("the forbidden tool `{bad}` was called");
    }
    if called.is_empty() {
        return "no tool called".into();
    }
    if !called.contains(&call.tool.as_str()) {
        return format!("another tool chosen: `{}`", called[0]);
    }
    let errors = (output.calls.iter()).any(|c| c.tool == call.tool && c.is_error);
    if errors && call.is_error == Some(false) {
        return format!("the expected tool answered with an error: {summary}");
    }
    if summary.starts_with("expected_calls") {
        return format!("wrong arguments: {summary}");
    }
    format!("a failed check: {summary}")
}
