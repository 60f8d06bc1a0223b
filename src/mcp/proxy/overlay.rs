//! The overlay file: changes put over a server's lists (descriptions, titles, parameter
//! descriptions, annotations, instructions, a tool renamed or hidden; a resource, resource
//! template or prompt described anew or hidden; `null` removes a key the base has), read with
//! file:line errors, checked against the base's lists, and applied to them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rmcp::model::{Prompt, Resource, ResourceTemplate, Tool, ToolAnnotations};
use serde::Deserialize;
use serde_saphyr::Spanned;

/// The only version of the format.
pub const VERSION: u32 = 1;

/// A problem with an overlay file, with the file and (when known) the line.
#[derive(Debug, thiserror::Error)]
pub enum OverlayError {
    #[error("cannot read overlay file `{}`: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        line: u64,
        message: String,
    },
}

/// A key of the file: absent (`None`: the base's value stays), `null` (`Some(None)`: the key is
/// removed) or a value.
pub type Set<T> = Option<Option<T>>;

/// Reads a key that is present: `null` is `Some(None)`, so that absent and `null` differ.
fn present<'de, D, T>(d: D) -> Result<Set<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// The changes of one tool.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolChange {
    #[serde(default, deserialize_with = "present")]
    pub description: Set<String>,
    #[serde(default, deserialize_with = "present")]
    pub title: Set<String>,
    /// Parameter name → its new description (`null`: the parameter has none).
    #[serde(default)]
    pub params: BTreeMap<String, Option<String>>,
    /// Merged into the tool's annotations (a key given here replaces the base's).
    pub annotations: Option<AnnotationChange>,
    /// The name the tool is listed and called under; calls reach the base under its old name.
    pub rename: Option<String>,
    /// Leave the tool out of the list (a call to it is an unknown tool).
    #[serde(default)]
    pub hide: bool,
}

/// The annotation keys of MCP's `ToolAnnotations`; unknown keys are errors.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AnnotationChange {
    #[serde(default, deserialize_with = "present")]
    pub title: Set<String>,
    #[serde(default, deserialize_with = "present")]
    pub read_only_hint: Set<bool>,
    #[serde(default, deserialize_with = "present")]
    pub destructive_hint: Set<bool>,
    #[serde(default, deserialize_with = "present")]
    pub idempotent_hint: Set<bool>,
    #[serde(default, deserialize_with = "present")]
    pub open_world_hint: Set<bool>,
}

/// The changes of one prompt.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptChange {
    #[serde(default, deserialize_with = "present")]
    pub description: Set<String>,
    /// Leave the prompt out of the list (getting it is an unknown prompt).
    #[serde(default)]
    pub hide: bool,
}

/// The changes of one resource (keyed by its `uri`) or resource template (by its
/// `uriTemplate`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceChange {
    #[serde(default, deserialize_with = "present")]
    pub description: Set<String>,
    #[serde(default, deserialize_with = "present")]
    pub title: Set<String>,
    /// Leave it out of the list; reading it (a URI of a hidden template) is "resource not
    /// found", as from a server without it.
    #[serde(default)]
    pub hide: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OverlayFile {
    overlay: Spanned<u32>,
    #[serde(default, deserialize_with = "present")]
    instructions: Set<String>,
    #[serde(default)]
    tools: BTreeMap<String, Spanned<ToolChange>>,
    #[serde(default)]
    prompts: BTreeMap<String, Spanned<PromptChange>>,
    #[serde(default)]
    resources: BTreeMap<String, Spanned<ResourceChange>>,
    #[serde(default, rename = "resourceTemplates")]
    resource_templates: BTreeMap<String, Spanned<ResourceChange>>,
}

/// An overlay as read: empty (a bridge) when no file is given or the file is empty.
#[derive(Debug, Clone, Default)]
pub struct Overlay {
    path: Option<PathBuf>,
    /// `Some(None)`: the server has no instructions.
    pub instructions: Set<String>,
    /// Tool name (as the base lists it) → its changes and the line they start on.
    pub tools: BTreeMap<String, (ToolChange, u64)>,
    pub prompts: BTreeMap<String, (PromptChange, u64)>,
    /// Resource URI → its changes and their line.
    pub resources: BTreeMap<String, (ResourceChange, u64)>,
    /// Resource template (`uriTemplate`) → its changes and their line.
    pub resource_templates: BTreeMap<String, (ResourceChange, u64)>,
}

impl Overlay {
    /// Reads and parses `path`: an empty file is an overlay with no change.
    pub fn read(path: &Path) -> Result<Self, OverlayError> {
        let text = std::fs::read_to_string(path).map_err(|source| OverlayError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Parses the text of the file at `path` (named in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Self, OverlayError> {
        let invalid = |line: u64, message: String| OverlayError::Invalid {
            path: path.to_path_buf(),
            line: line.max(1),
            message,
        };
        if text.lines().all(|l| {
            let l = l.trim();
            l.is_empty() || l.starts_with('#') || l == "---"
        }) {
            return Ok(Self {
                path: Some(path.to_path_buf()),
                ..Self::default()
            });
        }
        let file: OverlayFile = serde_saphyr::from_str(text).map_err(|e| {
            let line = e.location().map_or(1, |l| l.line());
            let e = e.without_snippet();
            invalid(line, format!("invalid overlay: {e}"))
        })?;
        if file.overlay.value != VERSION {
            return Err(invalid(
                file.overlay.defined.line(),
                format!(
                    "unsupported overlay version {} (this mcpeval reads `overlay: {VERSION}`)",
                    file.overlay.value
                ),
            ));
        }
        let mut renamed: BTreeMap<&str, &str> = BTreeMap::new();
        for (name, change) in &file.tools {
            if let Some(new) = &change.value.rename {
                if new.trim().is_empty() {
                    return Err(invalid(
                        change.defined.line(),
                        format!("tool `{name}`: `rename` is empty"),
                    ));
                }
                if let Some(other) = renamed.insert(new, name) {
                    return Err(invalid(
                        change.defined.line(),
                        format!("tools `{other}` and `{name}` are both renamed to `{new}`"),
                    ));
                }
            }
        }
        Ok(Self {
            path: Some(path.to_path_buf()),
            instructions: file.instructions,
            tools: (file.tools.into_iter())
                .map(|(k, v)| (k, (v.value, v.defined.line())))
                .collect(),
            prompts: (file.prompts.into_iter())
                .map(|(k, v)| (k, (v.value, v.defined.line())))
                .collect(),
            resources: (file.resources.into_iter())
                .map(|(k, v)| (k, (v.value, v.defined.line())))
                .collect(),
            resource_templates: (file.resource_templates.into_iter())
                .map(|(k, v)| (k, (v.value, v.defined.line())))
                .collect(),
        })
    }

    /// True when the overlay changes nothing (the server is bridged as it is).
    pub fn is_empty(&self) -> bool {
        self.instructions.is_none()
            && self.tools.is_empty()
            && self.prompts.is_empty()
            && self.resources.is_empty()
            && self.resource_templates.is_empty()
    }

    fn invalid(&self, line: u64, message: String) -> OverlayError {
        OverlayError::Invalid {
            path: self.path.clone().unwrap_or_default(),
            line: line.max(1),
            message,
        }
    }

    /// Checks the overlay's resources and resource templates against the base's lists: each
    /// one it names is listed.
    pub fn check_resources(
        &self,
        resources: &[Resource],
        templates: &[ResourceTemplate],
    ) -> Result<(), OverlayError> {
        for (uri, (_, line)) in &self.resources {
            if !resources.iter().any(|r| r.uri == *uri) {
                let listed: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
                let message = format!(
                    "resource `{uri}` is not listed by the base server (it lists: {})",
                    listed.join(", ")
                );
                return Err(self.invalid(*line, message));
            }
        }
        for (template, (_, line)) in &self.resource_templates {
            if !templates.iter().any(|t| t.uri_template == *template) {
                let listed: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
                let message = format!(
                    "resource template `{template}` is not listed by the base server (it lists: {})",
                    listed.join(", ")
                );
                return Err(self.invalid(*line, message));
            }
        }
        Ok(())
    }

    /// Checks the overlay against the base's lists: every tool, parameter and prompt it names
    /// exists, and no new name collides with a tool the base lists.
    pub fn check(&self, tools: &[Tool], prompts: &[Prompt]) -> Result<(), OverlayError> {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        for (name, (change, line)) in &self.tools {
            let Some(tool) = tools.iter().find(|t| t.name == *name) else {
                return Err(self.invalid(
                    *line,
                    format!(
                        "tool `{name}` is not listed by the base server (it lists: {})",
                        names.join(", ")
                    ),
                ));
            };
            let properties = tool
                .input_schema
                .get("properties")
                .and_then(|p| p.as_object());
            for param in change.params.keys() {
                if !properties.is_some_and(|p| p.contains_key(param)) {
                    let known: Vec<&String> =
                        properties.into_iter().flat_map(|p| p.keys()).collect();
                    return Err(self.invalid(
                        *line,
                        format!(
                            "tool `{name}` has no parameter `{param}` (its parameters: {})",
                            known
                                .iter()
                                .map(|k| k.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                }
            }
            if let Some(new) = &change.rename {
                let taken = names.contains(&new.as_str())
                    && self
                        .tools
                        .get(new.as_str())
                        .is_none_or(|(c, _)| c.rename.is_none());
                if taken {
                    return Err(self.invalid(
                        *line,
                        format!("tool `{name}` cannot be renamed to `{new}`: the base lists a tool of that name"),
                    ));
                }
            }
        }
        for (name, (_, line)) in &self.prompts {
            if !prompts.iter().any(|p| p.name == *name) {
                return Err(self.invalid(
                    *line,
                    format!("prompt `{name}` is not listed by the base server"),
                ));
            }
        }
        Ok(())
    }

    /// The base's tools as the overlay shows them.
    pub fn tools(&self, tools: Vec<Tool>) -> Vec<Tool> {
        tools
            .into_iter()
            .filter_map(|tool| match self.tools.get(tool.name.as_ref()) {
                Some((change, _)) => change.apply(tool),
                None => Some(tool),
            })
            .collect()
    }

    /// The base's prompts as the overlay shows them.
    pub fn prompts(&self, prompts: Vec<Prompt>) -> Vec<Prompt> {
        prompts
            .into_iter()
            .filter(|p| !self.hides_prompt(&p.name))
            .map(|mut prompt| {
                if let Some((change, _)) = self.prompts.get(&prompt.name) {
                    if let Some(description) = &change.description {
                        prompt.description = description.clone();
                    }
                }
                prompt
            })
            .collect()
    }

    /// Whether the overlay hides the prompt `name`.
    pub fn hides_prompt(&self, name: &str) -> bool {
        self.prompts.get(name).is_some_and(|(c, _)| c.hide)
    }

    /// The base's resources as the overlay shows them.
    pub fn resources(&self, resources: Vec<Resource>) -> Vec<Resource> {
        (resources.into_iter())
            .filter_map(|mut r| match self.resources.get(&r.uri) {
                Some((change, _)) if change.hide => None,
                Some((change, _)) => {
                    if let Some(description) = &change.description {
                        r.description = description.clone();
                    }
                    if let Some(title) = &change.title {
                        r.title = title.clone();
                    }
                    Some(r)
                }
                None => Some(r),
            })
            .collect()
    }

    /// The base's resource templates as the overlay shows them.
    pub fn resource_templates(&self, templates: Vec<ResourceTemplate>) -> Vec<ResourceTemplate> {
        (templates.into_iter())
            .filter_map(|mut t| match self.resource_templates.get(&t.uri_template) {
                Some((change, _)) if change.hide => None,
                Some((change, _)) => {
                    if let Some(description) = &change.description {
                        t.description = description.clone();
                    }
                    if let Some(title) = &change.title {
                        t.title = title.clone();
                    }
                    Some(t)
                }
                None => Some(t),
            })
            .collect()
    }

    /// Whether reading `uri` is refused: it is a hidden resource, or a URI of a hidden template
    /// that no shown resource or template serves.
    pub fn hides_uri(&self, uri: &str, shown_templates: &[ResourceTemplate]) -> bool {
        if let Some((change, _)) = self.resources.get(uri) {
            return change.hide;
        }
        let hidden = (self.resource_templates.iter())
            .any(|(template, (c, _))| c.hide && uri_template_matches(template, uri));
        hidden
            && !shown_templates
                .iter()
                .any(|t| uri_template_matches(&t.uri_template, uri))
    }

    /// The name under which the base knows the tool listed as `name`, or `None` when the overlay
    /// hides it (or renamed it away, so its old name is no tool any more).
    pub fn base_name<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        if let Some((old, _)) =
            (self.tools.iter()).find(|(_, (c, _))| !c.hide && c.rename.as_deref() == Some(name))
        {
            return Some(old.as_str());
        }
        match self.tools.get(name) {
            Some((change, _)) if change.hide || change.rename.is_some() => None,
            _ => Some(name),
        }
    }
}

/// Whether `uri` is one of the URIs a URI template (RFC 6570) expands to: a `{name}` stands for
/// one path segment or more characters without `/`, `{+name}` and `{#name}` for any characters,
/// `{?…}` and `{&…}` for an optional query.
pub fn uri_template_matches(template: &str, uri: &str) -> bool {
    let mut pattern = String::from("^");
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        pattern.push_str(&regex::escape(&rest[..open]));
        let Some(close) = rest[open..].find('}') else {
            pattern.push_str(&regex::escape(&rest[open..]));
            rest = "";
            break;
        };
        let expression = &rest[open + 1..open + close];
        pattern.push_str(match expression.chars().next() {
            Some('+') | Some('#') => ".*",
            Some('?') | Some('&') => r"(?:[?&].*)?",
            Some('/') => "(?:/[^?#]*)?",
            _ => "[^/?#]+",
        });
        rest = &rest[open + close + 1..];
    }
    pattern.push_str(&regex::escape(rest));
    pattern.push('$');
    regex::Regex::new(&pattern).is_ok_and(|r| r.is_match(uri))
}

impl ToolChange {
    /// The tool with these changes, or `None` when hidden.
    fn apply(&self, mut tool: Tool) -> Option<Tool> {
        if self.hide {
            return None;
        }
        if let Some(new) = &self.rename {
            tool.name = new.clone().into();
        }
        if let Some(description) = &self.description {
            tool.description = description.clone().map(Into::into);
        }
        if let Some(title) = &self.title {
            tool.title = title.clone();
        }
        if !self.params.is_empty() {
            let mut schema = (*tool.input_schema).clone();
            if let Some(properties) = schema.get_mut("properties").and_then(|p| p.as_object_mut()) {
                for (param, description) in &self.params {
                    if let Some(serde_json::Value::Object(property)) = properties.get_mut(param) {
                        match description {
                            Some(text) => {
                                property.insert("description".into(), text.clone().into())
                            }
                            None => property.remove("description"),
                        };
                    }
                }
            }
            tool.input_schema = schema.into();
        }
        if let Some(change) = &self.annotations {
            let mut merged: ToolAnnotations = tool.annotations.take().unwrap_or_default();
            let set = |slot: &mut Option<bool>, value: Set<bool>| {
                if let Some(value) = value {
                    *slot = value;
                }
            };
            if let Some(title) = &change.title {
                merged.title = title.clone();
            }
            set(&mut merged.read_only_hint, change.read_only_hint);
            set(&mut merged.destructive_hint, change.destructive_hint);
            set(&mut merged.idempotent_hint, change.idempotent_hint);
            set(&mut merged.open_world_hint, change.open_world_hint);
            let none = serde_json::to_value(&merged)
                .is_ok_and(|v| v.as_object().is_some_and(|o| o.is_empty()));
            tool.annotations = (!none).then_some(merged);
        }
        Some(tool)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str) -> Tool {
        serde_json::from_value(json!({
            "name": name,
            "description": "old",
            "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}},
            "annotations": {"readOnlyHint": true},
        }))
        .unwrap()
    }

    fn parse(text: &str) -> Result<Overlay, OverlayError> {
        Overlay::parse(Path::new("w.yaml"), text)
    }

    #[test]
    fn changes_apply_to_the_named_tools_only() {
        let overlay = parse(
            "overlay: 1\ntools:\n  a:\n    description: new\n    title: A\n    params: {query: what to look for}\n    annotations: {destructiveHint: false}\n    rename: b2\n  c:\n    hide: true\n",
        )
        .unwrap();
        let base = vec![tool("a"), tool("b"), tool("c")];
        overlay.check(&base, &[]).unwrap();
        let shown = overlay.tools(base);
        let names: Vec<&str> = shown.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ["b2", "b"]);
        let a = serde_json::to_value(&shown[0]).unwrap();
        assert_eq!(a["description"], "new");
        assert_eq!(a["title"], "A");
        assert_eq!(
            a["inputSchema"]["properties"]["query"]["description"],
            "what to look for"
        );
        assert_eq!(
            a["annotations"],
            json!({"readOnlyHint": true, "destructiveHint": false})
        );
        assert_eq!(shown[1].description.as_deref(), Some("old"));
        assert_eq!(overlay.base_name("b2"), Some("a"));
        assert_eq!(overlay.base_name("a"), None);
        assert_eq!(overlay.base_name("c"), None);
        assert_eq!(overlay.base_name("b"), Some("b"));
    }

    #[test]
    fn bad_files_are_refused_with_file_and_line() {
        let err = parse("overlay: 2\n").unwrap_err().to_string();
        assert_eq!(
            err,
            "w.yaml:1: unsupported overlay version 2 (this mcpeval reads `overlay: 1`)"
        );
        let err = parse("overlay: 1\ntools:\n  a:\n    descripton: x\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("w.yaml:4: ") && err.contains("descripton"),
            "{err}"
        );
        let overlay = parse("overlay: 1\ntools:\n  a: {}\n  zz:\n    description: x\n").unwrap();
        let err = overlay.check(&[tool("a")], &[]).unwrap_err().to_string();
        assert!(
            err.starts_with("w.yaml:5: tool `zz` is not listed"),
            "{err}"
        );
        let overlay = parse("overlay: 1\ntools:\n  a:\n    params: {nope: x}\n").unwrap();
        let err = overlay.check(&[tool("a")], &[]).unwrap_err().to_string();
        assert!(err.contains("no parameter `nope`"), "{err}");
        let overlay = parse("overlay: 1\ntools:\n  a:\n    rename: b\n").unwrap();
        assert!(overlay.check(&[tool("a"), tool("b")], &[]).is_err());
        assert!(parse("tools: {}\n").is_err());
    }

    #[test]
    fn null_removes_what_the_base_has_and_absent_keeps_it() {
        let overlay = parse(
            "overlay: 1\ninstructions: null\ntools:\n  a:\n    description: null\n    params: {query: null}\n    annotations: {readOnlyHint: null}\n  b:\n    annotations: {destructiveHint: null}\n",
        )
        .unwrap();
        assert_eq!(overlay.instructions, Some(None));
        let mut b = tool("b");
        let mut hints = ToolAnnotations::default();
        hints.read_only_hint = Some(true);
        hints.destructive_hint = Some(false);
        b.annotations = Some(hints);
        let shown = overlay.tools(vec![tool("a"), b, tool("c")]);
        let a = serde_json::to_value(&shown[0]).unwrap();
        assert!(a.get("description").is_none(), "{a}");
        assert!(a.get("annotations").is_none(), "{a}");
        assert_eq!(
            a["inputSchema"]["properties"]["query"],
            json!({"type": "string"})
        );
        let b = serde_json::to_value(&shown[1]).unwrap();
        assert_eq!(b["annotations"], json!({"readOnlyHint": true}));
        assert_eq!(shown[2].description.as_deref(), Some("old"));
        assert_eq!(parse("overlay: 1\n").unwrap().instructions, None);
    }

    #[test]
    fn resources_templates_and_prompts_are_described_anew_or_hidden() {
        let overlay = parse(
            "overlay: 1\nresources:\n  tracker://projects:\n    description: All projects.\n\
             resourceTemplates:\n  tracker://issues/{id}:\n    hide: true\n\
             prompts:\n  triage:\n    hide: true\n",
        )
        .unwrap();
        let resources = vec![Resource::new("tracker://projects", "projects")];
        let templates = vec![ResourceTemplate::new("tracker://issues/{id}", "issue")];
        overlay.check_resources(&resources, &templates).unwrap();
        let shown = overlay.resources(resources);
        assert_eq!(shown[0].description.as_deref(), Some("All projects."));
        let shown_templates = overlay.resource_templates(templates.clone());
        assert!(shown_templates.is_empty());
        assert!(overlay.hides_uri("tracker://issues/5", &shown_templates));
        assert!(!overlay.hides_uri("tracker://projects", &shown_templates));
        let prompts = vec![Prompt::new("triage", None::<String>, None)];
        assert!(overlay.prompts(prompts).is_empty());
        assert!(overlay.hides_prompt("triage"));
        let wrong = parse("overlay: 1\nresourceTemplates:\n  x://{y}:\n    hide: true\n").unwrap();
        let err = wrong
            .check_resources(&[], &templates)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("w.yaml:4: resource template `x://{y}` is not listed"),
            "{err}"
        );
    }

    #[test]
    fn uri_templates_match_the_uris_they_expand_to() {
        assert!(uri_template_matches(
            "tracker://issues/{id}",
            "tracker://issues/5"
        ));
        assert!(!uri_template_matches(
            "tracker://issues/{id}",
            "tracker://issues/5/comments"
        ));
        assert!(!uri_template_matches(
            "tracker://issues/{id}",
            "tracker://issues/"
        ));
        assert!(uri_template_matches("file:///{+path}", "file:///a/b.txt"));
        assert!(uri_template_matches(
            "search://q{?query,page}",
            "search://q?query=x"
        ));
        assert!(uri_template_matches("a.b://{x}.json", "a.b://y.json"));
        assert!(
            !uri_template_matches("a.b://{x}.json", "aXb://y.json"),
            "literals are escaped"
        );
    }

    #[test]
    fn an_empty_file_is_a_bridge() {
        assert!(parse("").unwrap().is_empty());
        assert!(parse("# nothing\n").unwrap().is_empty());
        assert!(parse("overlay: 1\n").unwrap().is_empty());
    }
}
