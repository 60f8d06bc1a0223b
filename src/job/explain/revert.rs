//! One change of a diff undone on the candidate: the overlay that takes it back (only the keys of
//! that change), or why no overlay can.

use serde_json::{json, Map, Value};

use crate::contract::{Change, ChangeKind};

/// What undoing one change on the candidate takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Undo {
    /// An overlay over the candidate (an `overlay: 1` file's keys) that takes the change back.
    Overlay(Value),
    /// No overlay takes it back: why, in words.
    NotTried(String),
}

/// How early a change is tried when the budget cannot try them all: the instructions and added
/// tools first (they reach every task), then the changes of a task's own tools.
pub fn priority(change: &Change) -> u8 {
    match change.kind {
        ChangeKind::InstructionsChanged | ChangeKind::ToolAdded => 0,
        _ => 1,
    }
}

/// The overlay that undoes `change` on the candidate, or why none can.
pub fn undo(change: &Change) -> Undo {
    let before = || change.before.clone().unwrap_or(Value::Null);
    let tool = |keys: Value| json!({"overlay": 1, "tools": {change.name.as_str(): keys}});
    let path = change.path.as_deref().unwrap_or("");
    match (change.list.as_str(), change.kind) {
        ("server", ChangeKind::InstructionsChanged) => {
            Undo::Overlay(json!({"overlay": 1, "instructions": before()}))
        }
        ("tools", ChangeKind::ToolAdded) => Undo::Overlay(tool(json!({"hide": true}))),
        ("tools", ChangeKind::ToolRenamed) => {
            match change.before.as_ref().and_then(Value::as_str) {
                Some(old) => Undo::Overlay(tool(json!({"rename": old}))),
                None => Undo::NotTried("the diff does not name the tool's old name".into()),
            }
        }
        ("tools", ChangeKind::DescriptionChanged | ChangeKind::TitleChanged) => {
            text_undo(path, before(), &tool)
        }
        ("tools", ChangeKind::AnnotationsChanged) => annotations_undo(path, before(), &tool),
        ("prompts" | "resources" | "resourceTemplates", kind) => shown_undo(change, kind),
        (_, kind) => Undo::NotTried(format!(
            "a {} changes what the server lists or accepts: an overlay cannot undo it on the \
             candidate",
            kind.as_str()
        )),
    }
}

/// A resource's, template's or prompt's change (what a host shows with `expose`): a new
/// description or title is set back, an added one hidden; what the candidate dropped or moved
/// an overlay cannot bring back.
fn shown_undo(change: &Change, kind: ChangeKind) -> Undo {
    let keys = |keys: Value| {
        let mut overlay = json!({"overlay": 1});
        overlay[change.list.as_str()] = json!({ change.name.as_str(): keys });
        Undo::Overlay(overlay)
    };
    let before = change.before.clone().unwrap_or(Value::Null);
    match (kind, change.path.as_deref()) {
        (ChangeKind::DescriptionChanged, Some("description")) => {
            keys(json!({"description": before}))
        }
        (ChangeKind::TitleChanged, Some("title")) if change.list != "prompts" => {
            keys(json!({"title": before}))
        }
        (
            ChangeKind::PromptAdded | ChangeKind::ResourceAdded | ChangeKind::ResourceTemplateAdded,
            _,
        ) => keys(json!({"hide": true})),
        _ => Undo::NotTried(format!(
            "a {} of {} `{}` is not one an overlay undoes (it sets a description or title, or \
             hides what was added)",
            kind.as_str(),
            change.list,
            change.name
        )),
    }
}

/// A description or title: of the tool, of a top-level parameter, or the annotations' title.
fn text_undo(path: &str, before: Value, tool: &dyn Fn(Value) -> Value) -> Undo {
    match path {
        "description" => Undo::Overlay(tool(json!({"description": before}))),
        "title" => Undo::Overlay(tool(json!({"title": before}))),
        "annotations.title" => Undo::Overlay(tool(json!({"annotations": {"title": before}}))),
        _ => match param_of(path) {
            Some(param) => Undo::Overlay(tool(json!({"params": {param: before}}))),
            None => Undo::NotTried(format!(
                "`{path}` is not a description an overlay sets (a tool's, its title, or a \
                 top-level parameter's)"
            )),
        },
    }
}

/// `inputSchema.properties.P.description` → `P` (a top-level parameter only).
fn param_of(path: &str) -> Option<&str> {
    let param = path
        .strip_prefix("inputSchema.properties.")?
        .strip_suffix(".description")?;
    (!param.contains('.')).then_some(param)
}

/// An annotation hint (`annotations.destructiveHint`), or the whole annotations object.
fn annotations_undo(path: &str, before: Value, tool: &dyn Fn(Value) -> Value) -> Undo {
    const KEYS: [&str; 5] = [
        "title",
        "readOnlyHint",
        "destructiveHint",
        "idempotentHint",
        "openWorldHint",
    ];
    if let Some(key) = path.strip_prefix("annotations.") {
        return match KEYS.contains(&key) {
            true => Undo::Overlay(tool(json!({"annotations": {key: before}}))),
            false => Undo::NotTried(format!("annotation `{key}` is not one an overlay sets")),
        };
    }
    // The whole object: every key the overlay knows set to the baseline's (absent → null).
    let mut keys = Map::new();
    for key in KEYS {
        keys.insert(key.into(), before.get(key).cloned().unwrap_or(Value::Null));
    }
    Undo::Overlay(tool(json!({"annotations": keys})))
}

/// Several overlays' keys as one file (all but one change undone): objects merged key by key.
pub fn merged<'a>(overlays: impl IntoIterator<Item = &'a Value>) -> Value {
    let mut out = json!({"overlay": 1});
    for overlay in overlays {
        merge_into(&mut out, overlay);
    }
    out
}

fn merge_into(into: &mut Value, from: &Value) {
    match (into, from) {
        (Value::Object(into), Value::Object(from)) => {
            for (key, value) in from {
                match into.get_mut(key) {
                    Some(slot) if slot.is_object() && value.is_object() => merge_into(slot, value),
                    _ => {
                        into.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (into, from) => *into = from.clone(),
    }
}

/// The overlay as the YAML file a user can rerun by hand.
pub fn yaml(overlay: &Value) -> String {
    serde_saphyr::to_string(overlay).unwrap_or_else(|_| overlay.to_string())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::mcp::proxy::Overlay;

    fn change(list: &str, name: &str, kind: ChangeKind, path: Option<&str>) -> Change {
        let mut c = Change::new(list, name, kind);
        c.path = path.map(str::to_owned);
        c
    }

    fn overlay(undo: Undo) -> Overlay {
        let Undo::Overlay(value) = undo else {
            panic!("not undone: {undo:?}")
        };
        Overlay::parse(Path::new("r.yaml"), &yaml(&value)).expect("a valid overlay")
    }

    #[test]
    fn each_kind_of_text_change_is_undone_by_the_keys_of_its_own() {
        let mut described = change(
            "tools",
            "search_issues",
            ChangeKind::DescriptionChanged,
            Some("description"),
        );
        described.before = Some("Search issues by keywords.".into());
        let o = overlay(undo(&described));
        let (keys, _) = &o.tools["search_issues"];
        assert_eq!(
            keys.description,
            Some(Some("Search issues by keywords.".into()))
        );
        assert!(keys.title.is_none() && keys.params.is_empty() && o.instructions.is_none());
        let param = change(
            "tools",
            "search_issues",
            ChangeKind::DescriptionChanged,
            Some("inputSchema.properties.query.description"),
        );
        let o = overlay(undo(&param));
        assert_eq!(o.tools["search_issues"].0.params["query"], None);
        let nested = change(
            "tools",
            "t",
            ChangeKind::DescriptionChanged,
            Some("inputSchema.properties.filter.properties.state.description"),
        );
        assert!(matches!(undo(&nested), Undo::NotTried(_)));
        let mut instructions = change(
            "server",
            "instructions",
            ChangeKind::InstructionsChanged,
            None,
        );
        instructions.before = None;
        assert_eq!(overlay(undo(&instructions)).instructions, Some(None));
    }

    #[test]
    fn added_renamed_and_annotated_tools_are_undone_and_schema_changes_are_not() {
        let o = overlay(undo(&change(
            "tools",
            "find_issues",
            ChangeKind::ToolAdded,
            None,
        )));
        assert!(o.tools["find_issues"].0.hide);
        let mut renamed = change("tools", "fetch_issue", ChangeKind::ToolRenamed, None);
        renamed.before = Some("get_issue".into());
        let o = overlay(undo(&renamed));
        assert_eq!(
            o.tools["fetch_issue"].0.rename.as_deref(),
            Some("get_issue")
        );
        let mut hint = change(
            "tools",
            "update_issue",
            ChangeKind::AnnotationsChanged,
            Some("annotations.destructiveHint"),
        );
        hint.before = Some(false.into());
        let o = overlay(undo(&hint));
        let hints = o.tools["update_issue"].0.annotations.clone().unwrap();
        assert_eq!(hints.destructive_hint, Some(Some(false)));
        let removed = change("tools", "x", ChangeKind::ToolRemoved, None);
        assert!(matches!(undo(&removed), Undo::NotTried(why) if why.contains("tool_removed")));
        let prompt = change(
            "prompts",
            "p",
            ChangeKind::DescriptionChanged,
            Some("description"),
        );
        let o = overlay(undo(&prompt));
        assert!(o.prompts.contains_key("p"), "{o:?}");
        let template = change(
            "resourceTemplates",
            "tracker://issues/{id}",
            ChangeKind::ResourceTemplateAdded,
            None,
        );
        let o = overlay(undo(&template));
        assert!(o.resource_templates["tracker://issues/{id}"].0.hide);
        let gone = change("resources", "u", ChangeKind::ResourceRemoved, None);
        assert!(matches!(undo(&gone), Undo::NotTried(why) if why.contains("resource_removed")));
    }

    #[test]
    fn reverts_merge_into_one_file_with_every_key() {
        let a = json!({"overlay": 1, "tools": {"s": {"description": "old"}}});
        let b = json!({"overlay": 1, "tools": {"s": {"params": {"q": null}}}, "instructions": "i"});
        let m = merged([&a, &b]);
        assert_eq!(
            m,
            json!({"overlay": 1, "instructions": "i", "tools": {"s": {"description": "old", "params": {"q": null}}}})
        );
        let o = Overlay::parse(Path::new("m.yaml"), &yaml(&m)).unwrap();
        assert_eq!(o.tools["s"].0.params["q"], None);
    }
}
