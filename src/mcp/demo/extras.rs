//! The demo server's resources and prompts: the same lists in every release; what changes in
//! 2.0.0 is how they answer (a missing resource's error code in the legacy era, an issue without
//! its priority, a prompt's text).

use rmcp::model::{
    GetPromptResult, Prompt, PromptArgument, PromptMessage, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, Role,
};
use rmcp::ErrorData;
use serde_json::Value;

use super::catalogue::Release;
use super::data::Tracker;

/// The projects, as a resource.
pub const PROJECTS_URI: &str = "tracker://projects";
/// One issue, as a resource: `tracker://issues/{id}`.
const ISSUE_PREFIX: &str = "tracker://issues/";
/// The prompt that asks a model to triage one issue.
pub const TRIAGE_PROMPT: &str = "triage_issue";

pub fn resources() -> Vec<Resource> {
    vec![Resource::new(PROJECTS_URI, "projects")
        .with_description("Every project with its key, name and number of open issues.")
        .with_mime_type("application/json")]
}

pub fn resource_templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(format!("{ISSUE_PREFIX}{{id}}"), "issue")
            .with_description("One issue with all its fields and comments, by number.")
            .with_mime_type("application/json"),
    ]
}

pub fn prompts() -> Vec<Prompt> {
    let id = PromptArgument::new("id")
        .with_description("The issue's number.")
        .with_required(true);
    vec![Prompt::new(
        TRIAGE_PROMPT,
        Some("Asks for a triage of one issue: its priority, its owner and the next step."),
        Some(vec![id]),
    )]
}

/// The code of "no such resource": -32002 in 1.x, as SDKs answered before 2026-07-28; -32602
/// (invalid params) in 2.0.0, as SEP-2164 settled it. (rmcp itself turns -32002 into -32602
/// for a peer of the 2026-07-28 era, so 1.x answers -32602 there too.)
fn not_found(release: Release, uri: &str) -> ErrorData {
    let message = format!("resource `{uri}` not found");
    let data = Some(serde_json::json!({ "uri": uri }));
    match release {
        Release::V2_0_0 => ErrorData::invalid_params(message, data),
        _ => ErrorData::resource_not_found(message, data),
    }
}

/// `resources/read`.
pub fn read(
    release: Release,
    tracker: &Tracker,
    uri: &str,
) -> Result<ReadResourceResult, ErrorData> {
    let value: Value = if uri == PROJECTS_URI {
        tracker.list_projects()
    } else {
        let id = uri
            .strip_prefix(ISSUE_PREFIX)
            .and_then(|id| id.parse::<i64>().ok())
            .ok_or_else(|| not_found(release, uri))?;
        let mut issue = tracker.get(id).map_err(|_| not_found(release, uri))?;
        if release == Release::V2_0_0 {
            // 2.0.0's issues have no priority.
            issue.as_object_mut().map(|o| o.remove("priority"));
        }
        issue
    };
    let contents =
        ResourceContents::text(value.to_string(), uri).with_mime_type("application/json");
    Ok(ReadResourceResult::new(vec![contents]))
}

/// `prompts/get`: a missing argument or issue is invalid params (-32602) in every release. 2.0.0
/// no longer asks about a priority (its issues have none).
pub fn prompt(
    release: Release,
    tracker: &Tracker,
    name: &str,
    args: Option<&rmcp::model::JsonObject>,
) -> Result<GetPromptResult, ErrorData> {
    if name != TRIAGE_PROMPT {
        let message = format!("unknown prompt `{name}`; available prompts: {TRIAGE_PROMPT}");
        return Err(ErrorData::invalid_params(message, None));
    }
    let id = args
        .and_then(|a| a.get("id"))
        .and_then(|v| match v {
            Value::String(s) => s.trim().parse::<i64>().ok(),
            Value::Number(n) => n.as_i64(),
            _ => None,
        })
        .ok_or_else(|| {
            ErrorData::invalid_params("argument `id` (an issue number) is required", None)
        })?;
    let issue = tracker
        .get(id)
        .map_err(|e| ErrorData::invalid_params(e.0, None))?;
    let title = issue["title"].as_str().unwrap_or_default();
    let ask = match release {
        Release::V2_0_0 => "say who should own it and what the next step is",
        _ => "suggest its priority (low, medium, high or urgent), who should own it and what the next step is",
    };
    let text = format!("Triage issue #{id} \"{title}\": {ask}.\n\nThe issue:\n{issue}");
    Ok(
        GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description(format!("Triage of issue #{id}")),
    )
}
