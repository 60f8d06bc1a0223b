//! The demo server's MCP handler: `tools/list`, `tools/call` and server info, per release.
//!
//! Written by hand rather than with rmcp's tool macros because the releases expose different
//! tool sets and texts from one catalogue. rmcp answers both lifecycles (`initialize` and
//! `server/discover`) from [`ServerHandler::get_info`] and the default supported versions.

use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;

use super::args::Args;
use super::catalogue::{
    created_fields, instructions, list_ttl_ms, tool, tools, Release, SERVER_NAME,
};
use super::data::{Changes, ToolError, Tracker};
use super::extras;
use super::quirks;
use super::settle::State;

/// One demo server: a release and the tracker state it serves.
///
/// Clones share the state. Over stdio there is one server per process, so the state is fresh per
/// process. Over HTTP every session (and, for the stateless 2026-07-28 era, every request) gets a
/// clone, so all clients of one HTTP server process share one tracker.
#[derive(Debug, Clone)]
pub struct DemoServer {
    release: Release,
    state: Arc<Mutex<State>>,
}

impl DemoServer {
    /// A server for `release` with the seed data (its writes settling after the delay that
    /// `MCPEVAL_DEMO_SETTLE_MS` sets, if any).
    pub fn new(release: Release) -> Self {
        Self {
            release,
            state: Arc::new(Mutex::new(State::new(quirks::settle_delay()))),
        }
    }

    /// The release this server plays.
    pub fn release(&self) -> Release {
        self.release
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the tracker half-updated in a way that
        // matters for a demo, so keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `query` on the tracker as reads see it (later than writes under a settle delay).
    fn read<T>(&self, query: impl FnOnce(&Tracker) -> T) -> T {
        query(self.state().read())
    }

    /// Runs `change` on the tracker; reads see it at once, or after the settle delay.
    fn write<T>(&self, change: impl FnOnce(&mut Tracker) -> T) -> T {
        self.state().write(change)
    }

    /// Runs one known tool on checked arguments.
    fn run(&self, name: &str, args: &Args<'_>) -> Result<Value, ToolError> {
        match name {
            "list_projects" => Ok(self.read(Tracker::list_projects)),
            "search_issues" => {
                let query = args.required_str("query")?;
                self.read(|t| t.search(query, args.str("project"), args.str("status")))
            }
            "find_issues" => {
                let text = args.required_str("text")?;
                self.read(|t| t.find(text, args.int("limit")))
            }
            // 2.0.0 renamed `get_issue`; each release lists only one of the two.
            "get_issue" | "fetch_issue" => {
                let id = args.required_int("id")?;
                self.read(|t| t.get(id))
            }
            "create_issue" => {
                let (project, title) = (args.required_str("project")?, args.required_str("title")?);
                let fields = created_fields(self.release);
                self.write(|t| {
                    t.create(
                        project,
                        title,
                        args.str("description"),
                        args.str("priority"),
                        fields,
                    )
                })
            }
            "update_issue" => {
                let changes = Changes {
                    status: args.str("status").map(str::to_owned),
                    priority: args.str("priority").map(str::to_owned),
                    assignee: args.str("assignee").map(str::to_owned),
                    title: args.str("title").map(str::to_owned),
                };
                let id = args.required_int("id")?;
                self.write(|t| t.update(id, changes))
            }
            "add_comment" => {
                let (id, body) = (args.required_int("id")?, args.required_str("body")?);
                self.write(|t| t.comment(id, body))
            }
            other => Err(ToolError(format!("tool `{other}` is not implemented"))),
        }
    }

    /// The result of calling `name`: structured content plus the same JSON as text, or an error
    /// result that tells the caller what to fix.
    pub fn call(&self, name: &str, arguments: Option<&rmcp::model::JsonObject>) -> CallToolResult {
        let Some(tool) = tool(self.release, name) else {
            return error_result(format!(
                "unknown tool `{name}`; available tools: {}",
                tool_names(self.release)
            ));
        };
        match Args::check(tool, arguments).and_then(|args| self.run(name, &args)) {
            Ok(value) => CallToolResult::structured(value),
            Err(ToolError(message)) => error_result(message),
        }
    }
}

fn error_result(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

fn tool_names(release: Release) -> String {
    let names: Vec<String> = tools(release).iter().map(|t| t.name.to_string()).collect();
    names.join(", ")
}

impl ServerHandler for DemoServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_prompts()
            .enable_resources()
            .enable_tools()
            .build();
        if quirks::deprecated() {
            capabilities.logging = Some(Default::default());
        }
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(SERVER_NAME, self.release.as_str()))
            .with_instructions(instructions(self.release))
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::DiscoverResult, ErrorData> {
        let versions = quirks::discover_versions()
            .unwrap_or_else(|| self.supported_protocol_versions().into_owned());
        Ok(rmcp::model::DiscoverResult::from_server_info(
            versions,
            self.get_info(),
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut listed = ListToolsResult::with_all_items(tools(self.release));
        listed.ttl_ms = list_ttl_ms(self.release);
        Ok(listed)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut listed = ListResourcesResult::with_all_items(extras::resources());
        listed.ttl_ms = list_ttl_ms(self.release);
        Ok(listed)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let mut listed = ListResourceTemplatesResult::with_all_items(extras::resource_templates());
        listed.ttl_ms = list_ttl_ms(self.release);
        Ok(listed)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.read(|t| extras::read(self.release, t, &request.uri))
            .map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let mut listed = ListPromptsResult::with_all_items(extras::prompts());
        listed.ttl_ms = list_ttl_ms(self.release);
        Ok(listed)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let args = request.arguments.as_ref();
        self.read(|t| extras::prompt(self.release, t, &request.name, args))
            .map(Into::into)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tool(self.release, name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        #[cfg(test)]
        if let Some(result) = test_only::call(&request).await {
            return Ok(result.into());
        }
        crash_if_asked();
        if std::env::var_os(DENY_ALL_ENV).is_some_and(|v| v == "1") {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "Error: Access denied - path outside allowed directories: {} (the demo server \
                 plays a server started on the wrong directory: {DENY_ALL_ENV}=1)",
                request.name
            ))])
            .into());
        }
        if tool(self.release, &request.name).is_none() {
            // An unknown tool is a protocol error (-32602), as the MCP spec shows.
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{}`; available tools: {}",
                    request.name,
                    tool_names(self.release)
                ),
                None,
            ));
        }
        Ok(self.call(&request.name, request.arguments.as_ref()).into())
    }
}

/// A fault for the verdicts' diagnosis: with `MCPEVAL_DEMO_DENY_ALL=1` every tool call answers
/// `isError` with an access-denied text, as a server started on the wrong directory does.
pub const DENY_ALL_ENV: &str = "MCPEVAL_DEMO_DENY_ALL";

/// Fault injection for testing hosts and runners against a server that dies mid-trial: with
/// `MCPEVAL_DEMO_CRASH_AFTER=N` in its environment the demo server answers N tool calls, then
/// exits with status 1 (and a line on stderr) when the next one arrives.
fn crash_if_asked() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let Some(limit) = std::env::var("MCPEVAL_DEMO_CRASH_AFTER")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
    else {
        return;
    };
    if CALLS.fetch_add(1, Ordering::SeqCst) >= limit {
        eprintln!(
            "demo server: crashing on purpose after {limit} tool calls (MCPEVAL_DEMO_CRASH_AFTER)"
        );
        std::process::exit(1);
    }
}

/// Hidden tools for the tests: never listed, compiled only into the test build.
#[cfg(test)]
mod test_only {
    use super::*;

    /// `__sleep {ms}` answers after a delay; `__crash` writes to stderr and exits the process.
    pub async fn call(request: &CallToolRequestParams) -> Option<CallToolResult> {
        let args = request.arguments.as_ref();
        match request.name.as_ref() {
            "__sleep" => {
                let ms = args.and_then(|a| a.get("ms")).and_then(Value::as_u64);
                tokio::time::sleep(std::time::Duration::from_millis(ms.unwrap_or(1000))).await;
                Some(CallToolResult::structured(
                    serde_json::json!({ "slept": true }),
                ))
            }
            "__crash" => {
                eprintln!("demo server: crashing on purpose");
                std::process::exit(3)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(server: &DemoServer, name: &str, args: Value) -> (bool, Value) {
        let result = server.call(name, args.as_object());
        let text = result.content[0].as_text().unwrap().text.clone();
        if result.is_error == Some(true) {
            return (true, Value::String(text));
        }
        let structured = result.structured_content.clone().unwrap();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), structured);
        (false, structured)
    }

    #[test]
    fn results_carry_structured_content_and_the_same_json_as_text() {
        let server = DemoServer::new(Release::V1_4_0);
        let (is_error, value) = call(&server, "get_issue", json!({ "id": 5 }));
        assert!(!is_error);
        assert_eq!(value["title"], "Invoice PDF shows wrong VAT rate");
    }

    #[test]
    fn release_decides_which_tools_exist() {
        let old = DemoServer::new(Release::V1_4_0);
        let (is_error, text) = call(&old, "find_issues", json!({ "text": "login" }));
        assert!(is_error);
        assert!(text
            .as_str()
            .unwrap()
            .starts_with("unknown tool `find_issues`"));
        let new = DemoServer::new(Release::V1_5_0);
        let (is_error, value) = call(&new, "find_issues", json!({ "text": "login" }));
        assert!(!is_error);
        assert_eq!(
            value["issues"][0],
            json!({ "id": 1, "title": "Login page times out on slow networks", "project": "apollo" })
        );
    }

    #[test]
    fn created_issues_carry_the_fields_of_their_release_output_schema() {
        for release in [Release::V1_4_0, Release::V1_5_0, Release::V2_0_0] {
            let server = DemoServer::new(release);
            let args = json!({ "project": "apollo", "title": "t", "priority": "low" });
            let (is_error, created) = call(&server, "create_issue", args);
            assert!(!is_error, "{created}");
            let schema = tool(release, "create_issue").unwrap().output_schema.clone();
            let properties = schema.unwrap()["properties"].as_object().unwrap().clone();
            let expected: Vec<&String> = properties.keys().collect();
            let returned: Vec<&String> = created.as_object().unwrap().keys().collect();
            assert_eq!(returned, expected, "{release}");
            assert_eq!(created.get("priority").is_some(), release < Release::V2_0_0);
        }
    }

    #[test]
    fn clones_share_state_and_new_servers_start_fresh() {
        let server = DemoServer::new(Release::V1_5_0);
        let clone = server.clone();
        let args = json!({ "project": "zephyr", "title": "Widget is blank" });
        let (_, created) = call(&server, "create_issue", args);
        let (is_error, got) = call(&clone, "get_issue", json!({ "id": created["id"] }));
        assert!(!is_error);
        assert_eq!(got["title"], "Widget is blank");
        let fresh = DemoServer::new(Release::V1_5_0);
        assert!(call(&fresh, "get_issue", json!({ "id": 13 })).0);
    }
}
