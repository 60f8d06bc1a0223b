//! The contract of each demo release: tool definitions, schemas, annotations and instructions.
//!
//! This is the spec in `demo_catalogue.md` turned into data. The simulated model and the demo
//! task suite rely on these exact names and texts, so change them only together with those.

use std::sync::{Arc, LazyLock};

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{json, Value};

/// The releases the demo server can play.
pub const RELEASES: [&str; 3] = ["1.4.0", "1.5.0", "2.0.0"];

/// Name the demo server gives itself in `serverInfo`.
pub const SERVER_NAME: &str = "mcpeval-demo-tracker";

/// One release of the demo server, ordered from oldest to newest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Release {
    /// The baseline: six tools, precise descriptions.
    V1_4_0,
    /// The candidate: vaguer `search_issues`, a new `find_issues`, new instructions.
    V1_5_0,
    /// 1.5.0 with breaking contract changes, for the contract diff: `add_comment` removed,
    /// `get_issue` renamed `fetch_issue`, `search_issues` needs a `project`, `update_issue` can no
    /// longer reopen, `create_issue` titles at most 80 characters, `list_projects` without
    /// `open_issues`.
    V2_0_0,
}

/// A release name that is not one of [`RELEASES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown demo release `{0}` (valid releases: {valid})", valid = RELEASES.join(", "))]
pub struct UnknownRelease(pub String);

impl std::str::FromStr for Release {
    type Err = UnknownRelease;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "1.4.0" => Ok(Self::V1_4_0),
            "1.5.0" => Ok(Self::V1_5_0),
            "2.0.0" => Ok(Self::V2_0_0),
            other => Err(UnknownRelease(other.to_owned())),
        }
    }
}

impl Release {
    /// The version string, as in `serverInfo.version`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V1_4_0 => "1.4.0",
            Self::V1_5_0 => "1.5.0",
            Self::V2_0_0 => "2.0.0",
        }
    }
}

impl std::fmt::Display for Release {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The server `instructions` of a release. 2.0.0 keeps 1.5.0's, which still hold.
pub fn instructions(release: Release) -> &'static str {
    match release {
        Release::V1_4_0 => {
            "Issue tracker for the apollo, zephyr and hermes projects. Issues are identified by \
             number. Issues can never be deleted: close them instead. Search before creating an \
             issue to avoid duplicates."
        }
        Release::V1_5_0 | Release::V2_0_0 => {
            "Issue tracker for the apollo, zephyr and hermes projects. Use find_issues to look \
             issues up. Issues are identified by number."
        }
    }
}

/// The `ttlMs` a release's list answers advertise (SEP-2549: how long a client may keep a list
/// before asking again). 2.0.0, the breaking release, says a minute, so that the window of a
/// deploy (`run --stale-list`) has a length to show; the older releases say nothing, as servers
/// written before SEP-2549 do (in a 2026-07-28 session rmcp then sends `ttlMs: 0`).
pub fn list_ttl_ms(release: Release) -> Option<u64> {
    match release {
        Release::V1_4_0 | Release::V1_5_0 => None,
        Release::V2_0_0 => Some(60_000),
    }
}

/// The tools of a release, in the order `tools/list` returns them.
pub fn tools(release: Release) -> Vec<Tool> {
    catalogue(release).to_vec()
}

/// The tool called `name` in a release, if it has one.
pub fn tool(release: Release, name: &str) -> Option<&'static Tool> {
    catalogue(release).iter().find(|tool| tool.name == name)
}

fn catalogue(release: Release) -> &'static [Tool] {
    static V1_4_0: LazyLock<Vec<Tool>> = LazyLock::new(|| build(Release::V1_4_0));
    static V1_5_0: LazyLock<Vec<Tool>> = LazyLock::new(|| build(Release::V1_5_0));
    static V2_0_0: LazyLock<Vec<Tool>> = LazyLock::new(|| build(Release::V2_0_0));
    match release {
        Release::V1_4_0 => &V1_4_0,
        Release::V1_5_0 => &V1_5_0,
        Release::V2_0_0 => &V2_0_0,
    }
}

fn build(release: Release) -> Vec<Tool> {
    let mut tools = vec![
        list_projects(),
        search_issues(release),
        get_issue(release),
        create_issue(release),
        update_issue(release),
    ];
    if release < Release::V2_0_0 {
        tools.push(add_comment());
    }
    if release >= Release::V1_5_0 {
        tools.push(find_issues());
    }
    tools
}

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        other => unreachable!("schema literals are objects, got {other}"),
    }
}

fn define(name: &'static str, title: &str, description: &'static str, input: Value) -> Tool {
    Tool::new(name, description, object(input)).with_title(title)
}

fn read_only() -> ToolAnnotations {
    ToolAnnotations::new().read_only(true)
}

fn string(description: &str) -> Value {
    json!({ "type": "string", "description": description })
}

/// A property schema with `examples`: what a schema-only tool (`mcpeval tasks boundary`) fills.
fn example(mut property: Value, value: &str) -> Value {
    property["examples"] = json!([value]);
    property
}

fn integer(description: &str) -> Value {
    json!({ "type": "integer", "description": description })
}

fn one_of(values: &[&str], description: &str) -> Value {
    json!({ "type": "string", "enum": values, "description": description })
}

const PRIORITIES: [&str; 4] = ["low", "medium", "high", "critical"];

/// Output schema of an issue summary with the given fields, all required.
fn summary_schema(fields: &[&str]) -> Value {
    let mut properties = serde_json::Map::new();
    for field in fields {
        let schema = match *field {
            "id" => json!({ "type": "integer" }),
            "status" => json!({ "type": "string", "enum": ["open", "closed"] }),
            "priority" => json!({ "type": "string", "enum": PRIORITIES }),
            "assignee" => json!({ "type": ["string", "null"] }),
            _ => json!({ "type": "string" }),
        };
        properties.insert((*field).to_owned(), schema);
    }
    json!({ "type": "object", "properties": properties, "required": fields })
}

fn list_of_issues(fields: &[&str]) -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": { "issues": { "type": "array", "items": summary_schema(fields) } },
        "required": ["issues"],
    }))
}

fn list_projects() -> Tool {
    define(
        "list_projects",
        "List projects",
        "List every project in the tracker with its key, name and number of open issues.",
        json!({ "type": "object", "properties": {} }),
    )
    .with_raw_output_schema(object(json!({
        "type": "object",
        "properties": { "projects": { "type": "array", "items": {
            "type": "object",
            "properties": {
                "key": { "type": "string" },
                "name": { "type": "string" },
                "open_issues": { "type": "integer" },
            },
            "required": ["key", "name", "open_issues"],
        } } },
        "required": ["projects"],
    })))
    .with_annotations(read_only())
}

fn search_issues(release: Release) -> Tool {
    let (description, query) = match release {
        Release::V1_4_0 => (
            "Search issues by keywords in their title and description. Filter by project key and \
             by status (open or closed). Returns the id, title, status and priority of each match.",
            "Keywords to look for in issue titles and descriptions",
        ),
        Release::V1_5_0 | Release::V2_0_0 => ("Looks up issues.", "Query."),
    };
    // 2.0.0 no longer searches every project at once.
    let required = if release < Release::V2_0_0 {
        json!(["query"])
    } else {
        json!(["query", "project"])
    };
    define(
        "search_issues",
        "Search issues",
        description,
        json!({
            "type": "object",
            "properties": {
                "query": string(query),
                "project": example(string("Project key to search in, e.g. apollo"), "apollo"),
                "status": one_of(
                    &["open", "closed", "any"],
                    "Only return issues with this status; default any",
                ),
            },
            "required": required,
        }),
    )
    .with_raw_output_schema(list_of_issues(&["id", "title", "status", "priority"]))
    .with_annotations(read_only())
}

/// `get_issue`, called `fetch_issue` from 2.0.0 on with nothing else changed.
fn get_issue(release: Release) -> Tool {
    let name = if release < Release::V2_0_0 {
        "get_issue"
    } else {
        "fetch_issue"
    };
    let mut schema = summary_schema(&[
        "id",
        "project",
        "title",
        "description",
        "status",
        "priority",
        "assignee",
    ]);
    schema["properties"]["comments"] = json!({ "type": "array", "items": {
        "type": "object",
        "properties": { "author": { "type": "string" }, "text": { "type": "string" } },
        "required": ["author", "text"],
    } });
    schema["required"]
        .as_array_mut()
        .expect("required is an array")
        .push(json!("comments"));
    define(
        name,
        "Get issue",
        "Get the full details of one issue by its numeric id: description, status, priority, \
         assignee and comments.",
        json!({
            "type": "object",
            "properties": { "id": integer("The issue number, e.g. 42") },
            "required": ["id"],
        }),
    )
    .with_raw_output_schema(object(schema))
    .with_annotations(read_only())
}

/// The longest `create_issue` title 2.0.0 accepts, in characters; earlier releases set no limit.
pub const TITLE_MAX_LENGTH: usize = 80;

/// The fields of the issue summary `create_issue` returns; 2.0.0 no longer echoes the priority.
pub fn created_fields(release: Release) -> &'static [&'static str] {
    if release < Release::V2_0_0 {
        &["id", "project", "title", "status", "priority"]
    } else {
        &["id", "project", "title", "status"]
    }
}

fn create_issue(release: Release) -> Tool {
    let mut title = string("One-line summary of the problem");
    if release >= Release::V2_0_0 {
        title["maxLength"] = json!(TITLE_MAX_LENGTH);
    }
    define(
        "create_issue",
        "Create issue",
        "Create (file, open, report) a new issue in a project. Returns the new issue's id.",
        json!({
            "type": "object",
            "properties": {
                "project": example(string("Project key, e.g. apollo"), "apollo"),
                "title": title,
                "description": string("Longer description of the problem"),
                "priority": one_of(&PRIORITIES, "How urgent the issue is; default medium"),
            },
            "required": ["project", "title"],
        }),
    )
    .with_raw_output_schema(object(summary_schema(created_fields(release))))
    .with_annotations(
        ToolAnnotations::new()
            .read_only(false)
            .destructive(false)
            .idempotent(false),
    )
}

fn update_issue(release: Release) -> Tool {
    // 2.0.0 can close issues but no longer reopen them.
    let (description, statuses, status) = if release < Release::V2_0_0 {
        (
            "Change an existing issue: close or reopen it, set its priority, assign it to someone \
             or rename it.",
            &["open", "closed"][..],
            "New status: closed to close the issue, open to reopen it",
        )
    } else {
        (
            "Change an existing issue: close it, set its priority, assign it to someone or rename \
             it. Closed issues cannot be reopened.",
            &["closed"][..],
            "New status: closed to close the issue",
        )
    };
    define(
        "update_issue",
        "Update issue",
        description,
        json!({
            "type": "object",
            "properties": {
                "id": integer("The issue number"),
                "status": one_of(statuses, status),
                "priority": one_of(&PRIORITIES, "New priority"),
                "assignee": string("User name to assign the issue to"),
                "title": string("New title"),
            },
            "required": ["id"],
        }),
    )
    .with_raw_output_schema(object(summary_schema(&[
        "id", "project", "title", "status", "priority", "assignee",
    ])))
    .with_annotations(
        ToolAnnotations::new()
            .destructive(release >= Release::V1_5_0)
            .idempotent(true),
    )
}

fn add_comment() -> Tool {
    define(
        "add_comment",
        "Add comment",
        "Add a comment to an issue.",
        json!({
            "type": "object",
            "properties": {
                "id": integer("The issue number"),
                "body": string("The comment text"),
            },
            "required": ["id", "body"],
        }),
    )
    .with_raw_output_schema(object(json!({
        "type": "object",
        "properties": { "id": { "type": "integer" }, "comments": { "type": "integer" } },
        "required": ["id", "comments"],
    })))
    .with_annotations(ToolAnnotations::new().destructive(false))
}

fn find_issues() -> Tool {
    define(
        "find_issues",
        "Find issues",
        "Find issues that match a text, across all projects. Returns issue ids and titles.",
        json!({
            "type": "object",
            "properties": {
                "text": string("Text to find in issues"),
                "limit": integer("Maximum number of results; default 10"),
            },
            "required": ["text"],
        }),
    )
    .with_raw_output_schema(list_of_issues(&["id", "title", "project"]))
    .with_annotations(read_only())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(release: Release) -> Vec<String> {
        tools(release).iter().map(|t| t.name.to_string()).collect()
    }

    #[test]
    fn releases_parse_and_unknown_ones_list_the_valid_ones() {
        for name in RELEASES {
            assert_eq!(name.parse::<Release>().unwrap().as_str(), name);
        }
        let err = "1.6.0".parse::<Release>().unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown demo release `1.6.0` (valid releases: 1.4.0, 1.5.0, 2.0.0)"
        );
    }

    #[test]
    fn release_1_5_0_adds_find_issues_and_changes_only_what_the_catalogue_says() {
        assert_eq!(
            names(Release::V1_4_0),
            [
                "list_projects",
                "search_issues",
                "get_issue",
                "create_issue",
                "update_issue",
                "add_comment"
            ]
        );
        assert_eq!(names(Release::V1_5_0).len(), 7);
        let changed = ["search_issues", "update_issue", "find_issues"];
        for tool in tools(Release::V1_5_0) {
            let before = super::tool(Release::V1_4_0, &tool.name);
            assert_eq!(
                before == Some(&tool),
                !changed.contains(&tool.name.as_ref()),
                "{}",
                tool.name
            );
        }
        let search = super::tool(Release::V1_5_0, "search_issues").unwrap();
        assert_eq!(search.description.as_deref(), Some("Looks up issues."));
        assert_eq!(
            search.input_schema["properties"]["query"]["description"],
            "Query."
        );
        let update = super::tool(Release::V1_5_0, "update_issue").unwrap();
        assert!(update.annotations.as_ref().unwrap().is_destructive());
        let before = super::tool(Release::V1_4_0, "update_issue").unwrap();
        assert!(!before.annotations.as_ref().unwrap().is_destructive());
    }

    #[test]
    fn release_2_0_0_changes_only_the_breaking_parts_of_1_5_0() {
        assert_eq!(
            names(Release::V2_0_0),
            [
                "list_projects",
                "search_issues",
                "fetch_issue",
                "create_issue",
                "update_issue",
                "find_issues"
            ]
        );
        let before = |name| super::tool(Release::V1_5_0, name).unwrap();
        let after = |name| super::tool(Release::V2_0_0, name).unwrap();
        for same in ["list_projects", "find_issues"] {
            assert_eq!(before(same), after(same), "{same}");
        }
        let mut renamed = before("get_issue").clone();
        renamed.name = "fetch_issue".into();
        assert_eq!(&renamed, after("fetch_issue"));

        let search = after("search_issues");
        assert_eq!(search.input_schema["required"], json!(["query", "project"]));
        let mut unrequired = search.clone();
        Arc::make_mut(&mut unrequired.input_schema)["required"] = json!(["query"]);
        assert_eq!(&unrequired, before("search_issues"));

        let status = &after("update_issue").input_schema["properties"]["status"];
        assert_eq!(status["enum"], json!(["closed"]));
        assert_eq!(
            before("update_issue").input_schema["properties"]["status"]["enum"],
            json!(["open", "closed"])
        );

        let create = after("create_issue");
        assert_eq!(create.input_schema["properties"]["title"]["maxLength"], 80);
        assert!(before("create_issue").input_schema["properties"]["title"]
            .get("maxLength")
            .is_none());
        let output = create.output_schema.as_ref().unwrap();
        assert!(output["properties"].get("priority").is_none());
        assert_eq!(output["required"], json!(created_fields(Release::V2_0_0)));
        assert_eq!(instructions(Release::V2_0_0), instructions(Release::V1_5_0));
    }

    #[test]
    fn every_tool_has_a_title_an_object_input_and_an_output_schema() {
        for release in [Release::V1_4_0, Release::V1_5_0, Release::V2_0_0] {
            for tool in tools(release) {
                assert!(tool.title.is_some(), "{}", tool.name);
                assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
                let output = tool.output_schema.as_ref().expect("output schema");
                assert_eq!(output["type"], "object", "{}", tool.name);
            }
        }
        assert_ne!(instructions(Release::V1_4_0), instructions(Release::V1_5_0));
        assert!(instructions(Release::V1_4_0).contains("Issues can never be deleted"));
        assert!(instructions(Release::V1_5_0).contains("Use find_issues to look issues up."));
    }
}
