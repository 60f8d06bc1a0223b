//! The entries that name a tool the candidate renamed or removed: each a finding with its file,
//! line, the entry, the tool and what became of it, and a note when the entry's server label is
//! not tied to the server under test (it is then matched by tool name alone).

use super::entry::{matches, Entry, Scope};
use super::tie::{ServerDef, Tie, UnderTest};
use crate::contract::{Change, ChangeKind};

/// The tools a diff renamed or removed, and the candidate's tool names (a pattern that still
/// matches one of them is still of use).
#[derive(Debug, Clone, Default)]
pub struct ToolChanges {
    /// (old name, new name)
    pub renamed: Vec<(String, String)>,
    pub removed: Vec<String>,
    pub candidate: Vec<String>,
}

impl ToolChanges {
    /// The renames (`tool_renamed`: `before` the old name) and removals (`tool_removed`) among
    /// a diff's `changes`, with the candidate's tool list.
    pub fn of(changes: &[Change], candidate: &[serde_json::Value]) -> Self {
        let text = |v: &Option<serde_json::Value>| v.as_ref()?.as_str().map(str::to_owned);
        let tools = changes.iter().filter(|c| c.list == "tools");
        Self {
            renamed: (tools.clone())
                .filter(|c| c.kind == ChangeKind::ToolRenamed)
                .filter_map(|c| Some((text(&c.before)?, c.name.clone())))
                .collect(),
            removed: (tools)
                .filter(|c| c.kind == ChangeKind::ToolRemoved)
                .map(|c| c.name.clone())
                .collect(),
            candidate: (candidate.iter())
                .filter_map(|t| t.get("name")?.as_str().map(str::to_owned))
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.renamed.is_empty() && self.removed.is_empty()
    }
}

/// What became of the tool an entry names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    Renamed(String),
    Removed,
}

/// An entry that names a tool the candidate renamed or removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub file: String,
    pub line: usize,
    pub entry: String,
    pub tool: String,
    pub fate: Fate,
    /// Why the match is by tool name alone, when it is.
    pub note: Option<String>,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (file, line, entry, tool) = (&self.file, self.line, &self.entry, &self.tool);
        write!(
            f,
            "{file}:{line}: `{entry}` names `{tool}`, which the candidate "
        )?;
        match &self.fate {
            Fate::Renamed(new) => write!(f, "renamed to `{new}`")?,
            Fate::Removed => write!(f, "removed")?,
        }
        match &self.note {
            Some(note) => write!(f, " ({note})"),
            None => Ok(()),
        }
    }
}

/// Every entry that names a tool the candidate renamed or removed, in the entries' order.
///
/// An entry names a tool by its name, or by a pattern that matched the old name: a pattern is
/// flagged for a rename when it does not match the new name, and for a removal when it matches
/// none of the candidate's tools (a pattern that lost one of several tools still does its job).
/// An entry for the whole server names no single tool. An entry under a label that server
/// entries tie to another server is about that server's tools and is left alone.
pub fn findings(
    entries: &[Entry],
    servers: &[ServerDef],
    own: &UnderTest,
    changes: &ToolChanges,
) -> Vec<Finding> {
    let mut found = Vec::new();
    for entry in entries {
        let Some(pattern) = entry.tool.as_deref() else {
            continue;
        };
        let note = match &entry.scope {
            Scope::Own => None,
            Scope::Unnamed => Some("no server named; matched by tool name".to_owned()),
            Scope::Label(label) => match own.tie(label, servers) {
                Tie::Tied => None,
                Tie::Other => continue,
                Tie::Unknown => Some(format!(
                    "label `{label}` not tied to the server under test; matched by tool name"
                )),
            },
        };
        let finding = |tool: &str, fate: Fate| Finding {
            file: entry.file.clone(),
            line: entry.line,
            entry: entry.text.clone(),
            tool: tool.to_owned(),
            fate,
            note: note.clone(),
        };
        let pattern_is_dead = || !changes.candidate.iter().any(|t| matches(pattern, t));
        for (old, new) in &changes.renamed {
            let named = match entry.is_pattern() {
                true => matches(pattern, old) && !matches(pattern, new),
                false => pattern == old,
            };
            if named {
                found.push(finding(old, Fate::Renamed(new.clone())));
            }
        }
        for gone in &changes.removed {
            let named = match entry.is_pattern() {
                true => matches(pattern, gone) && pattern_is_dead(),
                false => pattern == gone,
            };
            if named {
                found.push(finding(gone, Fate::Removed));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The demo's 1.5.0 → 2.0.0: `get_issue` renamed `fetch_issue`, `add_comment` removed.
    fn demo_changes() -> ToolChanges {
        ToolChanges {
            renamed: vec![("get_issue".into(), "fetch_issue".into())],
            removed: vec!["add_comment".into()],
            candidate: [
                "fetch_issue",
                "search_issues",
                "create_issue",
                "list_projects",
            ]
            .map(String::from)
            .to_vec(),
        }
    }

    fn tied(label: &str) -> UnderTest {
        UnderTest {
            label: Some(label.to_owned()),
            ..UnderTest::default()
        }
    }

    fn shown(entries: &[Entry], own: &UnderTest, servers: &[ServerDef]) -> Vec<String> {
        (findings(entries, servers, own, &demo_changes()).iter())
            .map(ToString::to_string)
            .collect()
    }

    fn claude(line: usize, text: &str) -> Entry {
        Entry::claude(".claude/settings.json", line, text).unwrap()
    }

    #[test]
    fn a_tied_entry_naming_a_renamed_or_removed_tool_is_a_finding() {
        let entries = [
            claude(4, "mcp__demo__get_issue"),
            claude(5, "mcp__demo__add_comment"),
            claude(6, "mcp__demo__search_issues"),
            claude(7, "mcp__demo__*"),
            claude(8, "mcp__demo"),
        ];
        assert_eq!(
            shown(&entries, &tied("demo"), &[]),
            [
                ".claude/settings.json:4: `mcp__demo__get_issue` names `get_issue`, which the \
                 candidate renamed to `fetch_issue`",
                ".claude/settings.json:5: `mcp__demo__add_comment` names `add_comment`, which \
                 the candidate removed",
            ]
        );
    }

    #[test]
    fn an_untied_label_is_matched_by_tool_name_and_says_so() {
        let entries = [claude(2, "mcp__tracker__get_issue")];
        assert_eq!(
            shown(&entries, &UnderTest::default(), &[]),
            [
                ".claude/settings.json:2: `mcp__tracker__get_issue` names `get_issue`, which the \
              candidate renamed to `fetch_issue` (label `tracker` not tied to the server under \
              test; matched by tool name)"
            ]
        );
        // Another server's label (its entry runs something else): not this server's tool.
        let other = ServerDef {
            label: "tracker".into(),
            file: ".mcp.json".into(),
            command: Some(vec!["npx".into(), "other-server".into()]),
            url: None,
        };
        assert!(shown(
            &entries,
            &UnderTest::default(),
            std::slice::from_ref(&other)
        )
        .is_empty());
        // The same entry, when it runs the server under test, is tied.
        let own = UnderTest {
            commands: vec![vec!["npx".into(), "other-server".into()]],
            ..UnderTest::default()
        };
        let found = findings(&entries, &[other], &own, &demo_changes());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].note, None);
    }

    #[test]
    fn patterns_are_flagged_when_they_lose_the_tool() {
        let own = Scope::Own;
        let entries = [
            Entry::plain("mcpeval.toml", 3, "get_*", own.clone()),
            Entry::plain("mcpeval.toml", 4, "*_issue", own.clone()),
            Entry::plain("mcpeval.toml", 5, "add_*", own.clone()),
            Entry::plain("mcpeval.toml", 6, "*_c?mment", own.clone()),
            Entry::plain("mcpeval.toml", 7, "*", own.clone()),
            Entry::plain("mcpeval.toml", 8, "*e*", own),
        ];
        assert_eq!(
            shown(&entries, &UnderTest::default(), &[]),
            [
                "mcpeval.toml:3: `get_*` names `get_issue`, which the candidate renamed to \
                 `fetch_issue`",
                "mcpeval.toml:5: `add_*` names `add_comment`, which the candidate removed",
                "mcpeval.toml:6: `*_c?mment` names `add_comment`, which the candidate removed",
            ]
        );
    }

    #[test]
    fn plain_names_of_no_server_are_matched_by_tool_name() {
        let entries = [
            Entry::vscode(".vscode/t.toolsets.jsonc", 3, "get_issue"),
            Entry::vscode(".vscode/t.toolsets.jsonc", 4, "demo/add_comment"),
        ];
        assert_eq!(
            shown(&entries, &tied("demo"), &[]),
            [
                ".vscode/t.toolsets.jsonc:3: `get_issue` names `get_issue`, which the candidate \
                 renamed to `fetch_issue` (no server named; matched by tool name)",
                ".vscode/t.toolsets.jsonc:4: `demo/add_comment` names `add_comment`, which the \
                 candidate removed",
            ]
        );
    }

    #[test]
    fn changes_are_read_from_the_diff() {
        use serde_json::json;
        let changes = [
            Change::new("tools", "fetch_issue", ChangeKind::ToolRenamed)
                .at("name")
                .values(Some(json!("get_issue")), Some(json!("fetch_issue"))),
            Change::new("tools", "add_comment", ChangeKind::ToolRemoved),
            Change::new("prompts", "triage", ChangeKind::PromptRemoved),
            Change::new("tools", "create_issue", ChangeKind::DescriptionChanged),
        ];
        let candidate = [serde_json::json!({"name": "fetch_issue"})];
        let changes = ToolChanges::of(&changes, &candidate);
        assert_eq!(
            changes.renamed,
            [("get_issue".to_owned(), "fetch_issue".to_owned())]
        );
        assert_eq!(changes.removed, ["add_comment"]);
        assert_eq!(changes.candidate, ["fetch_issue"]);
    }
}
