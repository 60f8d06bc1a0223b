//! The model-task stage of `mcpeval init`: draft (by a writer host, or templates), verify
//! against the server through `--host`, and sort into kept and rejected.

use std::sync::Arc;

use super::guard::Guard;
use super::models::{Drafts, ModelDraft, Rejected};
use super::teardown::Teardown;
use super::values::Known;
use super::InitRequest;
use crate::config::{resolve, Overrides, RunConfig};
use crate::episode::Driver;
use crate::host::Model;

/// What the model-task stage gave.
#[derive(Debug, Clone, Default)]
pub struct ModelOutcome {
    /// The verifying host (`sim`, `openai:gpt-4.1`), and whether it is the simulator.
    pub host: String,
    pub simulated: bool,
    /// The writer host; `None`: templates.
    pub writer: Option<String>,
    /// Kept drafts with the trials they passed out of those run.
    pub kept: Vec<(ModelDraft, Passed)>,
    pub rejected: Vec<Rejected>,
    /// The tools drafted for (the server's, in order).
    pub tools: Vec<String>,
    /// Verification's cost: trials run, the verifying host's tokens.
    pub trials: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub writer_input_tokens: u64,
    pub writer_output_tokens: u64,
    pub notes: Vec<String>,
    /// The drafts not verified, each with its teardown if one is derived: the server offers a
    /// tool that may change its real state, and init may not call it ([`Guard`]).
    pub unverified: Vec<(ModelDraft, Option<Teardown>)>,
    /// Whether verification ran (else every draft is in `unverified`).
    pub verified: bool,
    /// The tools with a `TODO` stub (DIR/todo.yaml) instead of a task: templates could write
    /// no sensible request, or every drafted task was turned down.
    pub todo: Vec<super::todo::Todo>,
}

/// How a kept draft fared in verification.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Passed {
    pub passed: u32,
    pub trials: u32,
}

/// Why the model-task stage cannot start: a host that cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum ModelStageError {
    #[error("host `{host}`: {why}")]
    Host { host: String, why: String },
}

/// A host built for init: its model, with the run config it came from.
pub struct BuiltHost {
    pub model: Arc<dyn Model>,
    pub config: RunConfig,
    pub host: crate::config::HostConfig,
}

/// Builds `spec` as a run would (`sim`, `PROVIDER:MODEL`, a `[host.NAME]` of the config).
pub fn build_host(request: &InitRequest, spec: &str) -> Result<BuiltHost, ModelStageError> {
    let fail = |why: String| ModelStageError::Host {
        host: spec.to_owned(),
        why,
    };
    let over = Overrides {
        config: request.config.clone(),
        baseline: Some(request.label.clone()),
        candidate: Some(request.label.clone()),
        hosts: vec![spec.to_owned()],
        suite_optional: true,
        ..Overrides::default()
    };
    let config = resolve(&over).map_err(|e| fail(crate::error::chain(&e)))?;
    let hosts = crate::job::build_hosts(&config).map_err(|e| fail(crate::error::chain(&e)))?;
    let hosts = crate::job::rate_limited(hosts);
    let Some(runtime) = hosts.into_iter().next() else {
        return Err(fail("no host was built".into()));
    };
    match runtime.driver {
        Driver::Agent(model) => Ok(BuiltHost {
            model,
            host: runtime.config,
            config,
        }),
        _ => Err(fail(
            "an app host runs its own loop: init needs an API host (openai:MODEL, \
             anthropic:MODEL, a [host.NAME]) or sim"
                .into(),
        )),
    }
}

/// Drafts the model tasks of `tools` and verifies them against the server, where `guard` lets
/// a model reach every tool it is offered; elsewhere they are drafted unverified. `known` holds
/// the absolute paths the server was started with or answered with (values for path
/// parameters) and its command line's flags.
pub async fn model_tasks(
    request: &InitRequest,
    tools: &[rmcp::model::Tool],
    instructions: Option<&str>,
    known: &Known,
    guard: &Guard,
) -> Result<ModelOutcome, ModelStageError> {
    let verifier = build_host(request, &request.host)?;
    let mut notes = Vec::new();
    let tools: Vec<rmcp::model::Tool> = (tools.iter())
        .filter(|t| match destroys(t) {
            true if !request.include_writes => {
                notes.push(format!(
                    "no model task for `{}`: it is annotated destructiveHint: true, and a task \
                     asking for it would destroy something wherever it runs; --include-writes \
                     drafts them",
                    t.name
                ));
                false
            }
            _ => true,
        })
        .cloned()
        .collect();
    let mut writer_spec = request.writer_host.clone();
    let writer = match &request.writer_host {
        Some(spec) => Some(build_host(request, spec)?),
        None => None,
    };
    let mut drafts: Drafts = match &writer {
        Some(writer) if !writer.model.is_simulated() => {
            let spec = writer_spec.as_deref().unwrap_or_default();
            super::writer::draft(writer.model.as_ref(), spec, &tools, instructions).await
        }
        _ => {
            if let Some(spec) = writer_spec.take() {
                notes.push(format!(
                    "the writer host `{spec}` is mcpeval's simulated model, which cannot write \
                     tasks: templates drafted them instead"
                ));
            }
            let chosen = choose_args(request, &tools, known).await;
            super::templates::draft(&tools, &chosen, known)
        }
    };
    // Two turns where a tool lists what another gets by id (templated, whoever wrote the rest).
    let (talks, refused) = super::conversation::drafts(request, &tools, known, &mut notes).await;
    drafts.drafts.extend(talks);
    drafts.rejected.extend(refused);
    let mut outcome = match guard.may_verify_models() {
        true => ModelOutcome {
            verified: true,
            ..super::verify::verify(request, &verifier, &tools, drafts.drafts).await
        },
        false => unverified(guard, &tools, drafts.drafts),
    };
    outcome.host = verifier.model.id().to_owned();
    outcome.simulated = verifier.model.is_simulated();
    outcome.writer = writer_spec;
    outcome.tools = tools.iter().map(|t| t.name.to_string()).collect();
    outcome.rejected.splice(0..0, drafts.rejected);
    outcome.writer_input_tokens = drafts.writer_input_tokens;
    outcome.writer_output_tokens = drafts.writer_output_tokens;
    notes.extend(drafts.notes);
    outcome.notes.splice(0..0, notes);
    outcome.todo = drafts.todo;
    // Every tool gets a model task: one whose drafts were all turned down gets a stub.
    for tool in &tools {
        let name = tool.name.as_ref();
        let has = |d: &ModelDraft| d.tool.as_deref() == Some(name);
        let covered = outcome.kept.iter().any(|(d, _)| has(d))
            || outcome.unverified.iter().any(|(d, _)| has(d))
            || outcome.todo.iter().any(|t| t.tool == name);
        if !covered {
            let why = "every task drafted for it was turned down (see rejected.yaml for why)";
            outcome.todo.push(super::todo::Todo::new(tool, why.into()));
        }
    }
    Ok(outcome)
}

/// The drafts as they are, not run: a model offered the server's tools could call one that
/// changes its real state. Each gets a teardown where one is derived from the literal
/// arguments of its expected call.
fn unverified(guard: &Guard, tools: &[rmcp::model::Tool], drafts: Vec<ModelDraft>) -> ModelOutcome {
    let names: Vec<String> = guard.tools().iter().map(|t| format!("`{t}`")).collect();
    let note = format!(
        "no model task was verified: a model is offered every tool, and {} may change the \
         server's state, which may outlive its process (see the server's state)",
        names.join(", ")
    );
    let unverified = (drafts.into_iter())
        .map(|draft| {
            let teardown = draft.call.as_ref().and_then(|call| {
                let literal = (call.args.iter())
                    .filter(|(_, v)| !v.as_object().is_some_and(|o| o.contains_key("regex")))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                super::teardown::derive(&call.tool, &literal, tools)
            });
            (draft, teardown)
        })
        .collect();
    ModelOutcome {
        unverified,
        notes: vec![note],
        verified: false,
        ..ModelOutcome::default()
    }
}

/// Whether a tool's model tasks are left out (unless `--include-writes`): it is annotated
/// `destructiveHint: true`, so a task asking for it asks to destroy something. Its annotations
/// alone decide (no name is trusted); whether verification may run a task is the guard's
/// question, not this one.
fn destroys(tool: &rmcp::model::Tool) -> bool {
    let hints = tool.annotations.as_ref();
    !crate::contract::writes::is_read_only(tool)
        && hints.and_then(|h| h.destructive_hint) == Some(true)
}

/// Per tool annotated `readOnlyHint: true`, the first candidate argument set the server answers
/// without an error (one call each, on one connection); any other tool (it may change state),
/// or one none answered, keeps its first candidate. On sandbox copies, the copy's paths in the
/// answers and the arguments are `{sandbox}` again. The paths a successful call's answer names (a listing's file names under
/// the directory it was asked about) are tried in a second round for the tools that failed.
async fn choose_args(
    request: &InitRequest,
    tools: &[rmcp::model::Tool],
    known: &Known,
) -> super::templates::Chosen {
    let mut chosen = super::templates::Chosen::new();
    let mut known = known.clone();
    let Ok(conn) = crate::mcp::McpConnection::connect(&request.server).await else {
        return chosen;
    };
    let copies = conn.sandbox();
    let mut failed: Vec<&rmcp::model::Tool> = Vec::new();
    for round in 0..2 {
        let this_round: Vec<&rmcp::model::Tool> = match round {
            0 => tools.iter().collect(),
            _ => std::mem::take(&mut failed),
        };
        for tool in this_round {
            let candidates = super::templates::candidates(tool, &known);
            chosen
                .entry(tool.name.to_string())
                .or_insert(candidates[0].clone());
            if !crate::contract::writes::is_read_only(tool) {
                continue;
            }
            let mut found = None;
            for args in candidates.iter().take(12) {
                let mut sent = serde_json::Value::Object(args.clone());
                copies.inspect(|c| c.substitute_json(&mut sent));
                let answer = conn
                    .call_tool(&tool.name, sent.as_object().cloned(), request.timeout)
                    .await;
                if let Ok(crate::mcp::CallOutcome::Result {
                    is_error: false,
                    text,
                    ..
                }) = &answer
                {
                    let text = copies.map_or_else(|| text.clone(), |c| c.map_back(text));
                    found = Some((args.clone(), text));
                    break;
                }
            }
            match found {
                Some((args, text)) => {
                    super::paths::learn_paths(&args, &text, &mut known.paths);
                    chosen.insert(tool.name.to_string(), args);
                }
                None => failed.push(tool),
            }
        }
    }
    conn.close().await;
    chosen
}
