//! Presents a server's MCP tools to a model as the host profile says, and maps names back.

use std::collections::HashMap;

use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::config::{Exposed, ToolNaming, ToolOrder, ToolSearch};
use crate::host::tool_search::{ToolIndex, SEARCH_TOOLS_PURPOSE};
use crate::host::{HostProfile, ToolSpec};

/// The tools as shown to the model, with the way back to the server's names.
#[derive(Debug, Clone, Default)]
pub struct ToolView {
    /// The tools offered with the trial's first request.
    pub specs: std::sync::Arc<[ToolSpec]>,
    to_server: HashMap<String, String>,
    /// The host's own tools among `specs` (`expose` with `resources`, `tool_search`), by the
    /// name shown.
    host_tools: HashMap<String, HostTool>,
    /// Under `tool_search = "emulated"`: the server's tools, held back until a search loads
    /// them, and their index.
    held: Option<std::sync::Arc<Held>>,
}

/// The server's tools as they would be shown, not offered until a search returns them.
#[derive(Debug)]
struct Held {
    tools: Vec<ToolSpec>,
    index: ToolIndex,
}

/// A tool the host offers itself and mcpeval answers (from the server's lists and reads), not
/// one of the server's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostTool {
    /// The server's resources and resource templates (`resources/list`,
    /// `resources/templates/list`).
    ListResources,
    /// One resource by its URI (`resources/read`).
    ReadResource,
    /// A search of the server's tools (`tool_search = "emulated"`): answered from mcpeval's
    /// index, and the tools it returns are offered from the next request on.
    SearchTools,
}

impl HostTool {
    fn spec(self, name: String, label: &str, k: usize) -> ToolSpec {
        let (description, schema) = match self {
            Self::ListResources => (
                format!(
                    "List the resources of the MCP server `{label}`: fixed resources by URI, and \
                     resource templates (URIs with {{placeholders}} to fill in). Read one with \
                     the resource-reading tool."
                ),
                serde_json::json!({"type": "object", "properties": {}}),
            ),
            Self::ReadResource => (
                format!(
                    "Read a resource of the MCP server `{label}` by its URI: a listed resource's \
                     URI, or a resource template's with its placeholders filled in."
                ),
                serde_json::json!({
                    "type": "object",
                    "properties": {"uri": {"type": "string", "description": "The resource's URI."}},
                    "required": ["uri"],
                }),
            ),
            Self::SearchTools => (
                format!(
                    "{SEARCH_TOOLS_PURPOSE} `{label}` by what they do. None of its tools can be \
                     called before a search finds it: this returns the {k} tools that match the \
                     query best (their names and descriptions), and those can be called from \
                     then on."
                ),
                serde_json::json!({
                    "type": "object",
                    "properties": {"query": {"type": "string",
                        "description": "What the tool you need does, in a few words."}},
                    "required": ["query"],
                }),
            ),
        };
        ToolSpec {
            name,
            title: None,
            description: Some(description),
            input_schema: schema,
            deferred: false,
        }
    }
}

/// What a search of the held-back tools found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Found {
    /// Every tool the query matched, best first, by its server name.
    pub ranked: Vec<String>,
    /// The first `k` of them as the model is shown them: returned, and loaded.
    pub returned: Vec<ToolSpec>,
}

/// What a trial's tool list is ordered by beside the profile: the trial's seed (`shuffle`), and
/// the name a tool has on both sides (a tool the candidate renamed keeps its old name's place).
#[derive(Debug, Clone, Copy)]
pub struct Offer<'a> {
    pub seed: u64,
    /// Tools the candidate renamed, old name → new (`[renames]`); empty on the baseline side.
    pub renamed: &'a std::collections::BTreeMap<String, String>,
}

impl Offer<'_> {
    /// The server's own order, whatever the profile says of shuffling (a view made once).
    pub fn fixed() -> Offer<'static> {
        static NONE: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
        Offer {
            seed: 0,
            renamed: &NONE,
        }
    }

    /// A trial of `seed` with no renamed tool (the baseline's side).
    pub fn seeded(seed: u64) -> Offer<'static> {
        Offer {
            seed,
            ..Offer::fixed()
        }
    }

    /// The name both sides know `name` by.
    fn shared<'n>(&'n self, name: &'n str) -> &'n str {
        self.renamed
            .iter()
            .find(|(_, new)| new.as_str() == name)
            .map_or(name, |(old, _)| old.as_str())
    }
}

/// The tools in the order `order` lists them: `shuffle` sorts by a hash of each tool's shared
/// name under the seed, a permutation of the union of both sides' names that each side's list
/// follows, so the tools both sides have keep one relative order in a pair.
fn ordered<'t>(
    tools: &'t [rmcp::model::Tool],
    order: ToolOrder,
    offer: &Offer<'_>,
) -> Vec<&'t rmcp::model::Tool> {
    let mut out: Vec<&rmcp::model::Tool> = tools.iter().collect();
    match order {
        ToolOrder::Server => {}
        ToolOrder::Reverse => out.reverse(),
        ToolOrder::Shuffle => out.sort_by_cached_key(|t| {
            let name = offer.shared(&t.name);
            (
                xxh3_64_with_seed(name.as_bytes(), offer.seed),
                name.to_owned(),
            )
        }),
    }
    out
}

impl ToolView {
    /// The tools as `profile` shows them in a trial `offer` describes: ordered, then cut at
    /// `max_tools`, named and titled.
    pub fn new(tools: &[rmcp::model::Tool], profile: &HostProfile, offer: &Offer<'_>) -> Self {
        let mut to_server = HashMap::with_capacity(tools.len());
        let shown = match profile.exposes(Exposed::Tools) {
            true => profile.max_tools.unwrap_or(usize::MAX),
            false => 0,
        };
        let mut specs: Vec<ToolSpec> = ordered(tools, profile.tool_order, offer)
            .into_iter()
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
                    deferred: false,
                }
            })
            .collect();
        let mut held = None;
        match profile.tool_search {
            None => {}
            Some(ToolSearch::Native) => specs.iter_mut().for_each(|s| s.deferred = true),
            Some(ToolSearch::Emulated) => {
                let tools = std::mem::take(&mut specs);
                let index = ToolIndex::new(&tools);
                held = Some(std::sync::Arc::new(Held { tools, index }));
            }
        }
        let mut host_tools = HashMap::new();
        let mut wanted = Vec::new();
        if held.is_some() {
            wanted.push((HostTool::SearchTools, &profile.search_tools_tool));
        }
        if profile.exposes(Exposed::Resources) {
            wanted.push((HostTool::ListResources, &profile.list_resources_tool));
            wanted.push((HostTool::ReadResource, &profile.read_resource_tool));
        }
        for (tool, name) in wanted {
            let name = free_name(name, |n| to_server.contains_key(n));
            let label = &profile.server_label;
            specs.push(tool.spec(name.clone(), label, profile.tool_search_k));
            host_tools.insert(name, tool);
        }
        Self {
            specs: specs.into(),
            to_server,
            host_tools,
            held,
        }
    }

    /// Searches the tools held back for `query` (`tool_search = "emulated"`): every match by
    /// server name, best first, and the first `k` as shown. `None` when no tool is held back.
    pub fn search(&self, query: &str, k: usize) -> Option<Found> {
        let held = self.held.as_ref()?;
        let order = held.index.rank(query);
        let shown = |i: usize| &held.tools[i];
        let ranked = (order.iter())
            .map(|&i| self.server_name(&shown(i).name).unwrap_or(&shown(i).name))
            .map(str::to_owned)
            .collect();
        let returned = order.iter().take(k).map(|&i| shown(i).clone()).collect();
        Some(Found { ranked, returned })
    }

    /// The host tool the model called by this name, if it is one.
    pub fn host_tool(&self, shown: &str) -> Option<HostTool> {
        self.host_tools.get(shown).copied()
    }

    /// The offered tools' server names in the order the model saw them, joined by `,` (the
    /// episode's `tools_offered`); under emulated tool search, the tools a search could load.
    pub fn offered(&self) -> String {
        let held = self.held.as_ref().map(|h| h.tools.as_slice());
        let names: Vec<&str> = (held.unwrap_or(&self.specs).iter())
            .filter(|s| !self.host_tools.contains_key(&s.name))
            .map(|s| self.server_name(&s.name).unwrap_or(&s.name))
            .collect();
        names.join(",")
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

    /// The name the model was shown of a tool it wrote a call of as text: written as shown, by
    /// the server's name, or host-style (`mcp__SERVER__TOOL`, whatever the server's label).
    pub fn shown_name(&self, written: &str) -> Option<&str> {
        if let Some((shown, _)) = self.to_server.get_key_value(written) {
            return Some(shown);
        }
        let by_server = |name: &str| {
            self.to_server
                .iter()
                .find(|(_, server)| server.as_str() == name)
                .map(|(shown, _)| shown.as_str())
        };
        by_server(written).or_else(|| super::text_calls::host_style(written).and_then(by_server))
    }
}

/// `wanted`, or `host_wanted` (`host_host_wanted`, …) while a server's tool has the name: the
/// host's tool never hides one of the server's.
fn free_name(wanted: &str, taken: impl Fn(&str) -> bool) -> String {
    let mut name = wanted.to_owned();
    while taken(&name) {
        name = format!("host_{name}");
    }
    name
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
        let view = ToolView::new(&[tool("get_issue")], &profile, &Offer::fixed());
        assert_eq!(view.specs[0].name, "mcp__tracker__get_issue");
        assert_eq!(view.specs[0].title, None);
        assert_eq!(
            view.server_name("mcp__tracker__get_issue"),
            Some("get_issue")
        );
        assert_eq!(view.server_name("get_issue"), None);
    }

    #[test]
    fn exposed_resources_add_the_hosts_two_tools_apart_from_the_servers() {
        let profile = HostProfile {
            expose: vec![Exposed::Tools, Exposed::Resources],
            max_tools: Some(1),
            ..HostProfile::default()
        };
        let view = ToolView::new(
            &[tool("a"), tool("read_resource")],
            &profile,
            &Offer::fixed(),
        );
        let names: Vec<&str> = view.specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "list_resources", "read_resource"]);
        assert_eq!(
            view.host_tool("list_resources"),
            Some(HostTool::ListResources)
        );
        assert_eq!(view.offered(), "a", "the host's tools are not the server's");
        assert_eq!(view.server_name("list_resources"), None);
        // A server tool of the same name keeps its name; the host's gives way.
        let view = ToolView::new(&[tool("read_resource")], &profile, &Offer::fixed());
        let names: Vec<&str> = view.specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["read_resource", "list_resources", "host_read_resource"]
        );
        assert_eq!(
            view.host_tool("host_read_resource"),
            Some(HostTool::ReadResource)
        );
        assert_eq!(view.host_tool("read_resource"), None);
        let only = HostProfile {
            expose: vec![Exposed::Resources],
            ..HostProfile::default()
        };
        let view = ToolView::new(&[tool("a")], &only, &Offer::fixed());
        assert_eq!(
            view.offered(),
            "",
            "without `tools` no server tool is shown"
        );
        assert_eq!(view.specs.len(), 2);
    }

    #[test]
    fn a_tool_limit_shows_the_first_tools_only() {
        let tools = [tool("a"), tool("b"), tool("c")];
        let profile = HostProfile {
            max_tools: Some(2),
            ..HostProfile::default()
        };
        let view = ToolView::new(&tools, &profile, &Offer::fixed());
        let names: Vec<&str> = view.specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(view.offered(), "a,b");
        assert_eq!(
            view.server_name("c"),
            None,
            "a hidden tool cannot be called"
        );
    }

    #[test]
    fn a_name_written_as_text_maps_to_the_name_shown() {
        let tools = [tool("get_issue"), tool("list_projects")];
        let prefixed = HostProfile {
            tool_naming: ToolNaming::Prefixed,
            server_label: "tracker".into(),
            ..HostProfile::default()
        };
        let view = ToolView::new(&tools, &prefixed, &Offer::fixed());
        for written in [
            "mcp__tracker__get_issue",
            "get_issue",
            "mcp__other__get_issue",
        ] {
            assert_eq!(
                view.shown_name(written),
                Some("mcp__tracker__get_issue"),
                "{written}"
            );
        }
        assert_eq!(view.shown_name("delete_all"), None);
        let bare = ToolView::new(&tools, &HostProfile::default(), &Offer::fixed());
        assert_eq!(
            bare.shown_name("mcp__srv__list_projects"),
            Some("list_projects")
        );
        assert_eq!(bare.shown_name("list_projects"), Some("list_projects"));
    }

    fn names(view: &ToolView) -> Vec<String> {
        view.specs.iter().map(|s| s.name.clone()).collect()
    }

    #[test]
    fn reverse_cuts_after_ordering_so_the_limit_keeps_the_last_served_tools() {
        let tools = [tool("a"), tool("b"), tool("c")];
        let profile = HostProfile {
            max_tools: Some(2),
            tool_order: ToolOrder::Reverse,
            ..HostProfile::default()
        };
        let view = ToolView::new(&tools, &profile, &Offer::fixed());
        assert_eq!(names(&view), ["c", "b"]);
    }

    #[test]
    fn shuffle_keeps_shared_tools_in_one_order_on_both_sides_and_moves_them_between_trials() {
        let base: Vec<_> = ["get", "list", "search", "delete", "update", "old"]
            .into_iter()
            .map(tool)
            .collect();
        let mut cand: Vec<_> = ["find", "delete", "update", "get", "new", "list", "search"]
            .into_iter()
            .map(tool)
            .collect();
        cand.reverse();
        let profile = HostProfile {
            tool_order: ToolOrder::Shuffle,
            ..HostProfile::default()
        };
        let renamed = [("old".to_owned(), "new".to_owned())].into_iter().collect();
        let none = Default::default();
        let mut orders = std::collections::BTreeSet::new();
        for seed in 0..20u64 {
            let b = names(&ToolView::new(
                &base,
                &profile,
                &Offer {
                    seed,
                    renamed: &none,
                },
            ));
            let c = ToolView::new(
                &cand,
                &profile,
                &Offer {
                    seed,
                    renamed: &renamed,
                },
            );
            let c: Vec<String> = names(&c)
                .into_iter()
                .map(|n| if n == "new" { "old".into() } else { n })
                .filter(|n| n != "find")
                .collect();
            assert_eq!(
                b, c,
                "seed {seed}: the shared tools' order differs between sides"
            );
            orders.insert(b);
        }
        assert!(orders.len() >= 15, "20 seeds gave {} orders", orders.len());
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
