//! The model-task stage of `mcpeval init`: draft (by a writer host, or templates), verify
//! against the server through `--host`, and sort into kept and rejected.

use std::sync::Arc;

use super::models::{Drafts, ModelDraft, Rejected};
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

/// Drafts the model tasks of `tools` and verifies them against the server. `paths` are the
/// absolute paths the server was started with or answered with (values for path parameters).
pub async fn model_tasks(
    request: &InitRequest,
    tools: &[rmcp::model::Tool],
    instructions: Option<&str>,
    paths: &[String],
) -> Result<ModelOutcome, ModelStageError> {
    let verifier = build_host(request, &request.host)?;
    let mut notes = Vec::new();
    let tools: Vec<rmcp::model::Tool> = (tools.iter())
        .filter(|t| match destroys(t) {
            Some(why) if !request.include_writes => {
                notes.push(format!(
                    "no model task for `{}`: it writes ({why}), and verification would run it \
                     against the server; --include-writes drafts them",
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
    let drafts: Drafts = match &writer {
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
            let chosen = choose_args(request, &tools, paths).await;
            super::templates::draft(&tools, &chosen, paths)
        }
    };
    let mut outcome = super::verify::verify(request, &verifier, &tools, drafts.drafts).await;
    outcome.host = verifier.model.id().to_owned();
    outcome.simulated = verifier.model.is_simulated();
    outcome.writer = writer_spec;
    outcome.tools = tools.iter().map(|t| t.name.to_string()).collect();
    outcome.rejected.splice(0..0, drafts.rejected);
    outcome.writer_input_tokens = drafts.writer_input_tokens;
    outcome.writer_output_tokens = drafts.writer_output_tokens;
    notes.extend(drafts.notes);
    outcome.notes.splice(0..0, notes);
    Ok(outcome)
}

/// Why a tool's model tasks are left out: it writes (annotations or name) and its server does
/// not declare the writes additive (`destructiveHint: false`), so verification, which runs
/// the task against the server, could destroy or send something. `--include-writes` drafts
/// them all.
fn destroys(tool: &rmcp::model::Tool) -> Option<String> {
    let why = super::writes(tool)?;
    let hints = tool.annotations.as_ref();
    match hints.and_then(|h| h.destructive_hint) {
        Some(false) => None,
        Some(true) => Some(why),
        None => Some(format!(
            "{why}, and it is not annotated destructiveHint: false"
        )),
    }
}

/// Per tool that only reads, the first candidate argument set the server answers without an
/// error (one call each, on one connection); a tool that writes, or none answered, keeps its
/// first candidate. The paths a successful call's answer names (a listing's file names under
/// the directory it was asked about) are tried in a second round for the tools that failed.
async fn choose_args(
    request: &InitRequest,
    tools: &[rmcp::model::Tool],
    paths: &[String],
) -> super::templates::Chosen {
    let mut chosen = super::templates::Chosen::new();
    let mut paths = paths.to_vec();
    let Ok(conn) = crate::mcp::McpConnection::connect(&request.server).await else {
        return chosen;
    };
    let mut failed: Vec<&rmcp::model::Tool> = Vec::new();
    for round in 0..2 {
        let this_round: Vec<&rmcp::model::Tool> = match round {
            0 => tools.iter().collect(),
            _ => std::mem::take(&mut failed),
        };
        for tool in this_round {
            let candidates = super::templates::candidates(tool, &paths);
            chosen
                .entry(tool.name.to_string())
                .or_insert(candidates[0].clone());
            if super::writes(tool).is_some() {
                continue;
            }
            let mut found = None;
            for args in candidates.iter().take(12) {
                let answer = conn
                    .call_tool(&tool.name, Some(args.clone()), request.timeout)
                    .await;
                if let Ok(crate::mcp::CallOutcome::Result {
                    is_error: false,
                    text,
                    ..
                }) = &answer
                {
                    found = Some((args.clone(), text.clone()));
                    break;
                }
            }
            match found {
                Some((args, text)) => {
                    learn_paths(&args, &text, &mut paths);
                    chosen.insert(tool.name.to_string(), args);
                }
                None => failed.push(tool),
            }
        }
    }
    conn.close().await;
    chosen
}

/// Adds the paths an answer names: absolute ones, and names with an extension under a
/// directory the call was asked about (`[FILE] notes.txt` of a listing of `/d`: `/d/notes.txt`).
fn learn_paths(
    args: &serde_json::Map<String, serde_json::Value>,
    text: &str,
    paths: &mut Vec<String>,
) {
    let dirs: Vec<&str> = (args.values())
        .filter_map(|v| v.as_str())
        .filter(|v| v.starts_with('/'))
        .collect();
    let mut found = known_words(text);
    for dir in &dirs {
        for word in known_words(text)
            .into_iter()
            .filter(|w| !w.starts_with('/'))
        {
            let ext = word.rsplit_once('.').map(|(_, e)| e.len()).unwrap_or(0);
            if (1..=5).contains(&ext) && !word.contains("..") && !word.starts_with('.') {
                found.push(format!("{}/{word}", dir.trim_end_matches('/')));
            }
        }
    }
    for p in found.into_iter().filter(|p| p.starts_with('/')) {
        if paths.len() < 40 && !paths.contains(&p) {
            paths.push(p);
        }
    }
}

fn known_words(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || "\"',[]{}()<>".contains(c))
        .map(|w| w.trim_end_matches(['.', ':', ';']).to_owned())
        .filter(|w| w.len() > 1 && !w.contains('*'))
        .collect()
}

/// The absolute paths in the server's command line and in `texts` (the answers the call tasks
/// got), for path parameters: directories first, each once.
pub fn known_paths(spec: &crate::config::ServerSpec, texts: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let args: &[String] = match &spec.transport {
        crate::config::Transport::Stdio { args, .. } => args,
        crate::config::Transport::Http { .. } => &[],
    };
    let words = (args.iter().map(String::as_str)).chain(
        texts
            .iter()
            .flat_map(|t| t.split(|c: char| c.is_whitespace() || "\"',[]{}()<>".contains(c))),
    );
    for w in words {
        let w = w.trim_end_matches(['.', ':', ';']);
        let plain = w.len() > 1 && w.starts_with('/') && !w.starts_with("//") && !w.contains("*");
        if plain && !out.iter().any(|p| p == w) {
            out.push(w.to_owned());
        }
    }
    out.truncate(20);
    out
}
