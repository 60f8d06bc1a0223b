//! One entry of a host's settings that names a tool, in that host's own form: Claude Code's
//! `mcp__LABEL__TOOL`, VS Code's `LABEL/TOOL`, or a plain tool name under a server's entry; the
//! whole server (`mcp__LABEL__*`, `mcp__LABEL`, `LABEL/*`, `*`); or a pattern with wildcards.

/// Which server an entry's tool belongs to, as the entry (or the table it sits in) says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// A server's name in the host's settings (`mcp__LABEL__…`, `mcpServers.LABEL`,
    /// `[mcp_servers.LABEL]`, `LABEL/…`): the server under test only if tied to it.
    Label(String),
    /// mcpeval's own `[host.NAME] allowed_tools`: bare names of the server under test.
    Own,
    /// No server named (a plain name in a VS Code tool set).
    Unnamed,
}

/// An entry as written, where it is, and what it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The file, as shown in findings.
    pub file: String,
    /// 1-based line of the entry's string in the file.
    pub line: usize,
    /// The entry as written (`mcp__tracker__search_issues`).
    pub text: String,
    pub scope: Scope,
    /// The tool part: a name, or a pattern with `*` / `?`; `None` names the whole server.
    pub tool: Option<String>,
}

impl Entry {
    /// An entry whose text is a bare tool name (or `*`) under a server `scope`.
    pub fn plain(file: &str, line: usize, text: &str, scope: Scope) -> Self {
        Self {
            file: file.to_owned(),
            line,
            text: text.to_owned(),
            scope,
            tool: whole_or(text),
        }
    }

    /// A Claude Code permission rule: `mcp__LABEL__TOOL`, `mcp__LABEL__*` or `mcp__LABEL` (the
    /// whole server); `None` for a rule that is not about an MCP tool (`Bash(npm test)`, `Read`).
    /// The label ends at the first `__`, as Claude Code's server names hold none.
    pub fn claude(file: &str, line: usize, text: &str) -> Option<Self> {
        let rest = text.strip_prefix("mcp__")?;
        let (label, tool) = match rest.split_once("__") {
            Some((label, tool)) => (label, whole_or(tool)),
            None => (rest, None),
        };
        if label.is_empty() {
            return None;
        }
        Some(Self {
            file: file.to_owned(),
            line,
            text: text.to_owned(),
            scope: Scope::Label(label.to_owned()),
            tool,
        })
    }

    /// A VS Code tool set member: `LABEL/TOOL`, `LABEL/*` (the whole server), or a plain name
    /// (a tool, or another tool set, of no named server).
    pub fn vscode(file: &str, line: usize, text: &str) -> Self {
        match text.split_once('/') {
            Some((label, tool)) if !label.is_empty() => Self {
                file: file.to_owned(),
                line,
                text: text.to_owned(),
                scope: Scope::Label(label.to_owned()),
                tool: whole_or(tool),
            },
            _ => Self::plain(file, line, text, Scope::Unnamed),
        }
    }

    /// The entry's tool part, when it is a pattern rather than one name.
    pub fn is_pattern(&self) -> bool {
        self.tool.as_deref().is_some_and(has_wildcard)
    }
}

/// `None` for a tool part that names every tool (empty, `*`, `**`), else the part.
fn whole_or(tool: &str) -> Option<String> {
    match tool.chars().all(|c| c == '*') {
        true => None,
        false => Some(tool.to_owned()),
    }
}

fn has_wildcard(text: &str) -> bool {
    text.contains(['*', '?'])
}

/// Whether `name` matches `pattern`: `*` any run of characters, `?` one; anything else itself.
pub fn matches(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut i, mut j) = (0, 0);
    // The last `*` seen and the name position it was tried at, to backtrack to.
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        match p.get(i) {
            Some('*') => {
                star = Some((i, j));
                i += 1;
            }
            Some(&c) if c == '?' || c == n[j] => {
                i += 1;
                j += 1;
            }
            _ => match star {
                Some((si, sj)) => {
                    star = Some((si, sj + 1));
                    i = si + 1;
                    j = sj + 1;
                }
                None => return false,
            },
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

/// A server label as Claude Code and Gemini CLI make it from a server's name: characters other
/// than letters, digits, `_` and `-` become `_`. Labels are compared in this form.
pub fn normalized(label: &str) -> String {
    label
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                true => c,
                false => '_',
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_rules_name_a_tool_the_whole_server_or_nothing() {
        let tool = |t: &str| Entry::claude("f", 1, t).map(|e| (e.scope, e.tool));
        let label = |l: &str| Scope::Label(l.to_owned());
        assert_eq!(
            tool("mcp__tracker__search_issues"),
            Some((label("tracker"), Some("search_issues".to_owned())))
        );
        assert_eq!(tool("mcp__tracker__*"), Some((label("tracker"), None)));
        assert_eq!(tool("mcp__tracker"), Some((label("tracker"), None)));
        assert_eq!(
            tool("mcp__my-server__get__raw"),
            Some((label("my-server"), Some("get__raw".to_owned())))
        );
        assert_eq!(tool("Bash(npm run test:*)"), None);
        assert_eq!(tool("Read"), None);
        assert_eq!(tool("mcp____x"), None);
    }

    #[test]
    fn vscode_members_are_qualified_or_plain() {
        let e = Entry::vscode("f", 3, "tracker/get_issue");
        assert_eq!(e.scope, Scope::Label("tracker".into()));
        assert_eq!(e.tool.as_deref(), Some("get_issue"));
        assert_eq!(Entry::vscode("f", 3, "tracker/*").tool, None);
        let plain = Entry::vscode("f", 3, "get_issue");
        assert_eq!(plain.scope, Scope::Unnamed);
        assert_eq!(plain.tool.as_deref(), Some("get_issue"));
    }

    #[test]
    fn wildcards_match_runs_and_single_characters() {
        assert!(matches("get_*", "get_issue"));
        assert!(matches("*issue*", "search_issues"));
        assert!(matches("get_issu?", "get_issue"));
        assert!(matches("a*b*c", "aXbYbZc"));
        assert!(!matches("get_*", "fetch_issue"));
        assert!(!matches("get_issu?", "get_issues"));
        assert!(matches("*", ""));
        assert!(!matches("a", ""));
        assert!(Entry::plain("f", 1, "get_*", Scope::Own).is_pattern());
        assert!(!Entry::plain("f", 1, "get_issue", Scope::Own).is_pattern());
        assert_eq!(Entry::plain("f", 1, "*", Scope::Own).tool, None);
    }

    #[test]
    fn labels_are_compared_as_the_hosts_write_them() {
        assert_eq!(normalized("my tracker.v2"), "my_tracker_v2");
        assert_eq!(normalized("demo-1_x"), "demo-1_x");
    }
}
