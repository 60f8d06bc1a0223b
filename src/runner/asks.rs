//! A trial's answers to its server's own requests (sampling, elicitation): the plan it installs
//! on the connection it leases, a host's model lent as the sampling model, and what the record
//! of the requests adds to the episode (counts, tokens, the checks of `expect.sampled`,
//! `expect.elicited` and of misfit answers).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::episode::TrialOutput;
use crate::grade::{asks as ask_graders, Check, Grade};
use crate::host::{CompletionRequest, Message, Model, RequestContext};
use crate::mcp::{AskPlan, McpConnection, Sampled, Sampler, SamplingFailed, SamplingRequest};
use crate::suite::Task;

/// Models by the host spec a task names.
type Models = BTreeMap<String, Arc<dyn Model>>;

/// A host's model answering sampling requests; its tokens are counted apart from the task's.
pub struct ModelSampler {
    pub model: Arc<dyn Model>,
    pub context: RequestContext,
    pub seed: u64,
}

#[async_trait::async_trait]
impl Sampler for ModelSampler {
    async fn sample(&self, request: &SamplingRequest) -> Result<Sampled, SamplingFailed> {
        let mut messages = Vec::new();
        if let Some(system) = &request.system {
            messages.push(Message::System {
                content: system.clone(),
            });
        }
        for (role, text) in &request.messages {
            messages.push(match role.as_str() {
                "assistant" => Message::Assistant {
                    content: Some(text.clone()),
                    tool_calls: Vec::new(),
                    reasoning: None,
                    server_blocks: Vec::new(),
                },
                _ => Message::User {
                    content: text.clone(),
                },
            });
        }
        let completion = CompletionRequest {
            messages,
            tools: Vec::new().into(),
            seed: self.seed,
            context: self.context.clone(),
        };
        let answer = (self.model.complete(&completion).await).map_err(|e| {
            SamplingFailed(format!(
                "model `{}`: {}",
                self.model.id(),
                crate::error::chain(&e)
            ))
        })?;
        Ok(Sampled {
            text: answer.content.unwrap_or_default(),
            model: answer.model,
            input_tokens: answer.usage.input_tokens,
            output_tokens: answer.usage.output_tokens,
        })
    }
}

/// How a trial of `task` answers: its `sampling` and `elicitation`, and the model of
/// `sampling: {host}` from `samplers` (by host spec).
pub fn plan_of(
    task: &Task,
    (samplers, users): (&Models, &Models),
    context: RequestContext,
    seed: u64,
) -> AskPlan {
    // `elicitation: {user: true}`: the trial's simulated user fills out the form.
    let user = task.user.as_ref().and_then(|spec| {
        let model = users.get(&spec.host)?.clone();
        Some(Arc::new(super::elicited::UserElicitor {
            spec: spec.clone(),
            model,
            context: context.clone(),
            seed,
        }) as Arc<dyn crate::mcp::ElicitedUser>)
    });
    let sampler = task.asks.sampling_host().and_then(|host| {
        let model = samplers.get(host)?.clone();
        Some(Arc::new(ModelSampler {
            model,
            context,
            seed,
        }) as Arc<dyn Sampler>)
    });
    AskPlan {
        sampling: task.asks.sampling.clone(),
        elicitation: task.asks.elicitation.clone(),
        sampler,
        user,
    }
}

/// Runs `trial` with the task's plan installed on `connection` (holding its turn when the
/// plan answers anything), then puts the record of the requests into its output.
pub async fn with_asks<F>(connection: &McpConnection, plan: AskPlan, trial: F) -> TrialOutput
where
    F: std::future::Future<Output = TrialOutput>,
{
    let turn = match plan.is_empty() {
        true => None,
        false => Some(connection.ask_turn().await),
    };
    connection.install_asks(plan);
    let mut output = trial.await;
    output.asks = connection.take_asks();
    drop(turn);
    if output.infra_error.is_none() {
        if let Some(failed) = output.asks.iter().find_map(|a| a.failed.clone()) {
            output.infra_error = Some(format!("sampling: {failed}"));
        }
    }
    output
}

/// The checks of the requests added to a trial's grade: a misfit elicitation answer, then the
/// task's `expect.sampled` and `expect.elicited`.
pub fn grade_asks(task: &Task, output: &TrialOutput, grade: &mut Grade) {
    let checks: Vec<Check> = ask_graders::checks(&task.asks.expect, &output.asks);
    if checks.is_empty() {
        return;
    }
    grade.checks.extend(checks);
    grade.success = grade.checks.iter().all(|c| c.passed);
}
