//! The TOML files among host settings: Codex's `[mcp_servers.NAME]` (`enabled_tools`,
//! `disabled_tools`, and the entry's `command`/`args`/`url`) and mcpeval's own `[host.NAME]`
//! (`[hosts.NAME]`) `allowed_tools`. The parser keeps each value's span, so an entry's line is
//! that of its own string.

use toml::de::{DeArray, DeTable, DeValue};

use super::entry::{Entry, Scope};
use super::files::{Found, Kind, SettingsFile};
use super::tie::ServerDef;

/// Reads a Codex config or mcpeval's config into `found`.
pub fn read(file: &SettingsFile, text: &str, found: &mut Found) {
    let root = match DeTable::parse(text) {
        Ok(root) => root.into_inner(),
        Err(e) => {
            let at = (e.span()).map_or(String::new(), |s| {
                format!(" at line {}", line(text, s.start))
            });
            let message = e.message().lines().next().unwrap_or("").trim().to_owned();
            return found.warn(&file.shown, format_args!("not valid TOML{at}: {message}"));
        }
    };
    match file.kind {
        Some(Kind::Mcpeval) => mcpeval(&root, &file.shown, text, found),
        _ => codex(&root, &file.shown, text, found),
    }
}

/// The 1-based line of byte offset `at`.
fn line(text: &str, at: usize) -> usize {
    let at = at.min(text.len());
    text.as_bytes()[..at]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn table<'a, 'i>(parent: &'a DeTable<'i>, key: &str) -> Option<&'a DeTable<'i>> {
    match parent.get(key).map(|v| v.get_ref()) {
        Some(DeValue::Table(t)) => Some(t),
        _ => None,
    }
}

fn array<'a, 'i>(parent: &'a DeTable<'i>, key: &str) -> Option<&'a DeArray<'i>> {
    match parent.get(key).map(|v| v.get_ref()) {
        Some(DeValue::Array(a)) => Some(a),
        _ => None,
    }
}

fn string<'a>(parent: &'a DeTable<'_>, key: &str) -> Option<&'a str> {
    match parent.get(key).map(|v| v.get_ref()) {
        Some(DeValue::String(s)) => Some(s.as_ref()),
        _ => None,
    }
}

/// Each string of an array with its line; other values are skipped.
fn strings<'a>(text: &str, array: Option<&'a DeArray<'_>>) -> Vec<(usize, &'a str)> {
    (array.map(|a| &a[..]).unwrap_or_default().iter())
        .filter_map(|item| match item.get_ref() {
            DeValue::String(s) => Some((line(text, item.span().start), s.as_ref())),
            _ => None,
        })
        .collect()
}

/// `[mcp_servers.NAME] enabled_tools` and `disabled_tools`, and each server entry.
fn codex(root: &DeTable<'_>, file: &str, text: &str, found: &mut Found) {
    let Some(servers) = table(root, "mcp_servers") else {
        return;
    };
    for (name, value) in servers {
        let DeValue::Table(server) = value.get_ref() else {
            continue;
        };
        let label: &str = name.get_ref();
        for list in ["enabled_tools", "disabled_tools"] {
            for (line, tool) in strings(text, array(server, list)) {
                let scope = Scope::Label(label.to_owned());
                found.entries.push(Entry::plain(file, line, tool, scope));
            }
        }
        let command = string(server, "command").map(|c| {
            std::iter::once(c.to_owned())
                .chain(
                    strings(text, array(server, "args"))
                        .into_iter()
                        .map(|(_, a)| a.to_owned()),
                )
                .collect()
        });
        found.servers.push(ServerDef {
            label: label.to_owned(),
            file: file.to_owned(),
            command,
            url: string(server, "url").map(str::to_owned),
        });
    }
}

/// `[host.NAME]` and `[hosts.NAME]` `allowed_tools`: bare names of the server under test.
fn mcpeval(root: &DeTable<'_>, file: &str, text: &str, found: &mut Found) {
    for key in ["host", "hosts"] {
        let Some(hosts) = table(root, key) else {
            continue;
        };
        for (_, host) in hosts {
            let DeValue::Table(host) = host.get_ref() else {
                continue;
            };
            for (line, tool) in strings(text, array(host, "allowed_tools")) {
                found
                    .entries
                    .push(Entry::plain(file, line, tool, Scope::Own));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::files::read_text;
    use super::*;

    fn read(kind: Kind, text: &str) -> Found {
        let file = SettingsFile {
            path: "f.toml".into(),
            shown: "f.toml".to_owned(),
            kind: Some(kind),
        };
        let mut found = Found::default();
        read_text(&file, text, &mut found);
        found
    }

    #[test]
    fn codex_tool_lists_and_server_entries_are_read_with_their_lines() {
        let text = "model = \"o3\"\n\n[mcp_servers.tracker]\ncommand = \"node\"\n\
                    args = [\"build/index.js\"]\nenabled_tools = [\n  \"get_issue\",\n  \
                    \"search_issues\",\n]\ndisabled_tools = [\"add_comment\"]\n\n\
                    [mcp_servers.web]\nurl = \"http://127.0.0.1:3000/mcp\"\n";
        let found = read(Kind::Codex, text);
        assert!(found.warnings.is_empty(), "{:?}", found.warnings);
        let lines: Vec<(usize, &str)> = (found.entries.iter())
            .map(|e| (e.line, e.text.as_str()))
            .collect();
        assert_eq!(
            lines,
            [(7, "get_issue"), (8, "search_issues"), (10, "add_comment")]
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
    fn mcpeval_s_own_allowed_tools_name_the_server_under_test() {
        let text = "[host.cc]\napp = \"claude-code\"\nallowed_tools = [\"get_issue\", \"*\"]\n\
                    [hosts.cx]\napp = \"codex\"\nallowed_tools = [\n  \"add_comment\"\n]\n";
        let found = read(Kind::Mcpeval, text);
        let got: Vec<(usize, &str, Option<&str>, &Scope)> = (found.entries.iter())
            .map(|e| (e.line, e.text.as_str(), e.tool.as_deref(), &e.scope))
            .collect();
        assert_eq!(
            got,
            [
                (3, "get_issue", Some("get_issue"), &Scope::Own),
                (3, "*", None, &Scope::Own),
                (7, "add_comment", Some("add_comment"), &Scope::Own),
            ]
        );
    }

    #[test]
    fn a_broken_codex_config_is_a_one_line_warning_with_its_line() {
        let found = read(Kind::Codex, "[mcp_servers.x]\nenabled_tools = [\"a\"\n");
        assert_eq!(found.warnings.len(), 1);
        let warning = &found.warnings[0];
        assert!(
            warning.starts_with("f.toml: not valid TOML at line 2: ") && !warning.contains('\n'),
            "{warning}"
        );
        assert!(found.read.is_empty());
    }
}
