//! Presents a server's MCP tools to a model as the host profile says, and maps names back.

use std::collections::HashMap;

use crate::config::ToolNaming;
use crate::host::{HostProfile, ToolSpec};

/// The tools as shown to the model, with the way back to the server's names.
#[derive(Debug, Clone, Default)]
pub struct ToolView {
    pub specs: std::sync::Arc<[ToolSpec]>,
    to_server: HashMap<String, String>,
}

impl ToolView {
    pub fn new(tools: &[rmcp::model::Tool], profile: &HostProfile) -> Self {
        let mut to_server = HashMap::with_capacity(tools.len());
        let shown = profile.max_tools.unwrap_or(usize::MAX);
        let specs = tools
            .iter()
            .take(shown)
            .map(|tool| {
                let shown = match profile.tool_naming {
                    ToolNaming::Bare => tool.name.to_string(),
                    ToolNaming::Prefixed => format!("mcp__{}__{}", profile.server_label, tool.name),
                };
                to_server.insert(shown.clone(), tool.name.to_string());
                let title = tool
                    .title
                    .clone()
                    .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()));
                ToolSpec {
                    name: shown,
                    title: if profile.pass_title { title } else { None },
                    description: tool.description.as_ref().map(|d| d.to_string()),
                    input_schema: serde_json::Value::Object((*tool.input_schema).clone()),
                }
            })
            .collect();
        Self { specs, to_server }
    }

    /// Every tool's name as the model was shown it and as the server names it.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.to_server
            .iter()
            .flat_map(|(shown, server)| [shown.as_str(), server.as_str()])
    }

    /// The server's name of a tool the model called, if the model called a tool that exists.
    pub fn server_name(&self, shown: &str) -> Option<&str> {
        self.to_server.get(shown).map(String::as_str)
    }
}

/// The system prompt: the host's own, then the server's instructions if the profile passes them.
pub fn system_prompt(profile: &HostProfile, instructions: Option<&str>) -> String {
    match instructions.filter(|i| profile.pass_instructions && !i.trim().is_empty()) {
        Some(i) => format!("{}\n\n{}", profile.system_prompt, i.trim()),
        None => profile.system_prompt.clone(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn tool(name: &str) -> rmcp::model::Tool {
        let schema = serde_json::json!({"type": "object"});
        let mut t = rmcp::model::Tool::new(
            name.to_owned(),
            "does things",
            Arc::new(schema.as_object().unwrap().clone()),
        );
        t.title = Some("Things".into());
        t
    }

    #[test]
    fn prefixed_names_map_back_and_titles_follow_the_profile() {
        let profile = HostProfile {
            tool_naming: ToolNaming::Prefixed,
            pass_title: false,
            server_label: "tracker".into(),
            ..HostProfile::default()
        };
        let view = ToolView::new(&[tool("get_issue")], &profile);
        assert_eq!(view.specs[0].name, "mcp__tracker__get_issue");
        assert_eq!(view.specs[0].title, None);
        assert_eq!(
            view.server_name("mcp__tracker__get_issue"),
            Some("get_issue")
        );
        assert_eq!(view.server_name("get_issue"), None);
    }

    #[test]
    fn a_tool_limit_shows_the_first_tools_only() {
        let tools = [tool("a"), tool("b"), tool("c")];
        let profile = HostProfile {
            max_tools: Some(2),
            ..HostProfile::default()
        };
        let view = ToolView::new(&tools, &profile);
        let names: Vec<&str> = view.specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(
            view.server_name("c"),
            None,
            "a hidden tool cannot be called"
        );
    }

    #[test]
    fn instructions_join_the_system_prompt_only_when_passed() {
        let mut profile = HostProfile::default();
        assert!(system_prompt(&profile, Some("Never delete.")).ends_with("Never delete."));
        profile.pass_instructions = false;
        assert_eq!(
            system_prompt(&profile, Some("Never delete.")),
            profile.system_prompt
        );
    }
}
