//! The JSON files among host settings: Claude Code's `permissions`, Gemini CLI's `mcpServers`,
//! VS Code's tool sets, and the server entries of `.mcp.json` and `.vscode/mcp.json`.
//!
//! They are parsed into jsonc-parser's tree, which keeps each string's place in the file: an
//! entry's line is that of its own string, however often the same text occurs elsewhere. Files
//! the host reads as plain JSON are checked with serde_json first, so a comment in them is the
//! warning the host would give.

use jsonc_parser::ast::{Array, Object, Value};
use jsonc_parser::{parse_to_ast, CollectOptions, ParseOptions};

use super::entry::{Entry, Scope};
use super::files::{Found, Kind, SettingsFile};
use super::tie::ServerDef;

/// Reads a JSON (`strict`) or JSON-with-comments file into `found`.
pub fn read(file: &SettingsFile, text: &str, strict: bool, found: &mut Found) {
    if strict {
        if let Err(e) = serde_json::from_str::<serde_json::Value>(text) {
            return found.warn(&file.shown, format_args!("not valid JSON: {e}"));
        }
    }
    let parsed = parse_to_ast(text, &CollectOptions::default(), &ParseOptions::default());
    let root = match parsed {
        Ok(parsed) => parsed.value,
        Err(e) => return found.warn(&file.shown, format_args!("not valid JSON: {e}")),
    };
    let Some(Value::Object(root)) = root else {
        return found.warn(&file.shown, "not a JSON object");
    };
    let at = Place {
        file: &file.shown,
        text,
    };
    match file.kind.unwrap_or_else(|| by_contents(&root)) {
        Kind::ClaudeCode => claude(&root, &at, found),
        Kind::GeminiCli => gemini(&root, &at, found),
        Kind::McpJson => servers(root.get_object("mcpServers"), &at, found),
        Kind::VsCodeMcp => servers(root.get_object("servers"), &at, found),
        // The TOML kinds never reach here.
        Kind::VsCodeToolSets | Kind::Codex | Kind::Mcpeval => tool_sets(&root, &at, found),
    }
}

/// The kind of a file of no known place: Claude Code's settings have `permissions`, Gemini
/// CLI's `mcpServers`; anything else is read as VS Code tool sets.
fn by_contents(root: &Object) -> Kind {
    if root.get("permissions").is_some() {
        Kind::ClaudeCode
    } else if root.get("mcpServers").is_some() {
        Kind::GeminiCli
    } else {
        Kind::VsCodeToolSets
    }
}

/// A file's name as shown and its text, to turn a string's offset into its line.
struct Place<'a> {
    file: &'a str,
    text: &'a str,
}

impl Place<'_> {
    /// The 1-based line of byte offset `at`.
    fn line(&self, at: usize) -> usize {
        let at = at.min(self.text.len());
        self.text.as_bytes()[..at]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    /// Each string of an array with its line; other values are skipped.
    fn strings<'b>(&self, array: Option<&'b Array<'b>>) -> Vec<(usize, &'b str)> {
        (array
            .map(|a| a.elements.as_slice())
            .unwrap_or_default()
            .iter())
        .filter_map(Value::as_string_lit)
        .map(|s| (self.line(s.range.start), s.value.as_ref()))
        .collect()
    }
}

/// `permissions.allow`, `deny` and `ask`: the rules about MCP tools (`mcp__…`).
fn claude(root: &Object, at: &Place, found: &mut Found) {
    let Some(permissions) = root.get_object("permissions") else {
        return;
    };
    for list in ["allow", "deny", "ask"] {
        for (line, text) in at.strings(permissions.get_array(list)) {
            found.entries.extend(Entry::claude(at.file, line, text));
        }
    }
}

/// `mcpServers.NAME.includeTools` and `excludeTools`, and each server entry.
fn gemini(root: &Object, at: &Place, found: &mut Found) {
    let Some(servers) = root.get_object("mcpServers") else {
        return;
    };
    for prop in &servers.properties {
        let Value::Object(server) = &prop.value else {
            continue;
        };
        let label = prop.name.as_str();
        for list in ["includeTools", "excludeTools"] {
            for (line, text) in at.strings(server.get_array(list)) {
                let scope = Scope::Label(label.to_owned());
                found.entries.push(Entry::plain(at.file, line, text, scope));
            }
        }
    }
    self::servers(Some(servers), at, found);
}

/// Each tool set's `tools`.
fn tool_sets(root: &Object, at: &Place, found: &mut Found) {
    for prop in &root.properties {
        let Value::Object(set) = &prop.value else {
            continue;
        };
        for (line, text) in at.strings(set.get_array("tools")) {
            found.entries.push(Entry::vscode(at.file, line, text));
        }
    }
}

/// The server entries of a `mcpServers` / `servers` object: `command` and `args`, or `url`
/// (Gemini CLI: `httpUrl`).
fn servers(servers: Option<&Object>, at: &Place, found: &mut Found) {
    for prop in servers.map(|s| s.properties.as_slice()).unwrap_or_default() {
        let Value::Object(server) = &prop.value else {
            continue;
        };
        let command = server.get_string("command").map(|c| {
            let args = at.strings(server.get_array("args"));
            std::iter::once(c.value.to_string())
                .chain(args.into_iter().map(|(_, a)| a.to_owned()))
                .collect()
        });
        let url = (server.get_string("url"))
            .or_else(|| server.get_string("httpUrl"))
            .map(|u| u.value.to_string());
        found.servers.push(ServerDef {
            label: prop.name.as_str().to_owned(),
            file: at.file.to_owned(),
            command,
            url,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::files::read_text;
    use super::*;

    fn read(shown: &str, kind: Option<Kind>, text: &str) -> Found {
        let file = SettingsFile {
            path: shown.into(),
            shown: shown.to_owned(),
            kind,
        };
        let mut found = Found::default();
        read_text(&file, text, &mut found);
        found
    }

    fn lines(found: &Found) -> Vec<(usize, &str)> {
        (found.entries.iter())
            .map(|e| (e.line, e.text.as_str()))
            .collect()
    }

    #[test]
    fn claude_rules_about_mcp_tools_are_read_with_their_lines() {
        let text = r#"{
  "permissions": {
    "allow": [
      "Bash(npm test)",
      "mcp__demo__get_issue",
      "mcp__demo__*"
    ],
    "deny": ["mcp__demo__add_comment"],
    "ask": ["mcp__demo__get_issue"]
  }
}
"#;
        let found = read(".claude/settings.json", Some(Kind::ClaudeCode), text);
        assert!(found.warnings.is_empty(), "{:?}", found.warnings);
        assert_eq!(found.read, [".claude/settings.json"]);
        // The same text twice: each at its own line.
        assert_eq!(
            lines(&found),
            [
                (5, "mcp__demo__get_issue"),
                (6, "mcp__demo__*"),
                (8, "mcp__demo__add_comment"),
                (9, "mcp__demo__get_issue"),
            ]
        );
    }

    #[test]
    fn a_comment_in_claude_settings_is_a_warning_with_the_parser_s_message() {
        let found = read(
            ".claude/settings.json",
            Some(Kind::ClaudeCode),
            "{\n  // allowed\n  \"permissions\": {}\n}\n",
        );
        assert!(found.entries.is_empty() && found.read.is_empty());
        assert_eq!(found.warnings.len(), 1);
        assert!(
            found.warnings[0].starts_with(".claude/settings.json: not valid JSON: ")
                && found.warnings[0].contains("line 2 column 3"),
            "{:?}",
            found.warnings
        );
        let found = read(".claude/settings.json", Some(Kind::ClaudeCode), "[1, 2]");
        assert_eq!(found.warnings, [".claude/settings.json: not a JSON object"]);
    }

    #[test]
    fn gemini_tool_lists_name_tools_under_their_server_entry() {
        let text = r#"{
  // Gemini CLI strips comments.
  "mcpServers": {
    "tracker": {
      "command": "node",
      "args": ["build/index.js"],
      "includeTools": ["get_issue", "search_issues"],
      "excludeTools": [
        "add_comment",
      ]
    },
    "remote": { "httpUrl": "http://127.0.0.1:3000/mcp" }
  }
}"#;
        let found = read(".gemini/settings.json", Some(Kind::GeminiCli), text);
        assert!(found.warnings.is_empty(), "{:?}", found.warnings);
        assert_eq!(
            lines(&found),
            [(7, "get_issue"), (7, "search_issues"), (9, "add_comment")]
        );
        assert_eq!(found.entries[0].scope, Scope::Label("tracker".into()));
        assert_eq!(found.servers.len(), 2);
        assert_eq!(
            found.servers[0].command.as_deref(),
            Some(&["node".to_owned(), "build/index.js".to_owned()][..])
        );
        assert_eq!(
            found.servers[1].url.as_deref(),
            Some("http://127.0.0.1:3000/mcp")
        );
    }

    #[test]
    fn vscode_tool_sets_with_comments_are_read() {
        let text =
            "// Tool sets of this workspace\n{\n  \"triage\": {\n    /* the tracker */\n    \
                    \"tools\": [\"tracker/get_issue\", \"search\", \"tracker/*\"],\n    \
                    \"description\": \"get_issue\"\n  }\n}\n";
        let found = read(".vscode/t.toolsets.jsonc", Some(Kind::VsCodeToolSets), text);
        assert!(found.warnings.is_empty(), "{:?}", found.warnings);
        assert_eq!(
            lines(&found),
            [(5, "tracker/get_issue"), (5, "search"), (5, "tracker/*")]
        );
        let broken = read(".vscode/t.toolsets.jsonc", None, "{\"a\": {\"tools\": [}");
        assert_eq!(broken.warnings.len(), 1);
        assert!(
            broken.warnings[0].starts_with(".vscode/t.toolsets.jsonc: not valid JSON: "),
            "{:?}",
            broken.warnings
        );
    }

    #[test]
    fn mcp_json_files_give_server_entries_only() {
        let text = r#"{"mcpServers": {"demo": {"command": "mcpeval", "args": ["demo-server"]}}}"#;
        let found = read(".mcp.json", Some(Kind::McpJson), text);
        assert!(found.entries.is_empty());
        assert_eq!(found.servers[0].label, "demo");
        let text = "{\"servers\": {\"web\": {\"type\": \"http\", \"url\": \"http://h/mcp\"}}}";
        let found = read(".vscode/mcp.json", Some(Kind::VsCodeMcp), text);
        assert_eq!(found.servers[0].url.as_deref(), Some("http://h/mcp"));
    }

    #[test]
    fn a_file_of_no_known_place_is_told_by_what_it_holds() {
        let claude = read(
            "ci/a.json",
            None,
            r#"{"permissions": {"allow": ["mcp__x__y"]}}"#,
        );
        assert_eq!(claude.entries[0].scope, Scope::Label("x".into()));
        let gemini = read(
            "ci/b.json",
            None,
            r#"{"mcpServers": {"x": {"includeTools": ["y"]}}}"#,
        );
        assert_eq!(gemini.entries[0].tool.as_deref(), Some("y"));
        let sets = read("ci/c.json", None, r#"{"s": {"tools": ["x/y"]}}"#);
        assert_eq!(sets.entries[0].scope, Scope::Label("x".into()));
    }
}
