//! Which server labels are the server under test: a label set in mcpeval's config (`[profile]
//! server_label`), or a server entry of a host's MCP configuration (`.mcp.json`,
//! `.vscode/mcp.json`, Gemini CLI's `mcpServers`, Codex's `[mcp_servers]`) whose command or URL
//! is the baseline's or the candidate's as the check runs it.

use super::entry::normalized;

/// A server entry of a host's MCP configuration: its label and how the host starts or reaches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerDef {
    pub label: String,
    /// The file it is in, as shown.
    pub file: String,
    /// The command and its arguments (a stdio server).
    pub command: Option<Vec<String>>,
    /// The URL (a Streamable HTTP or SSE server).
    pub url: Option<String>,
}

/// The server under test as the check runs it: the baseline's and the candidate's command lines
/// and URLs, and the label the config gives it explicitly.
#[derive(Debug, Clone, Default)]
pub struct UnderTest {
    /// `[profile] server_label`, when the config sets it.
    pub label: Option<String>,
    pub commands: Vec<Vec<String>>,
    pub urls: Vec<String>,
}

/// How a label relates to the server under test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tie {
    /// The config's label, or a server entry that runs the server under test.
    Tied,
    /// Only server entries that run something else: another server's tools.
    Other,
    /// Nothing says which server it is: its entries are matched by tool name.
    Unknown,
}

impl UnderTest {
    /// How `label` relates to the server under test, given the server entries found.
    pub fn tie(&self, label: &str, defs: &[ServerDef]) -> Tie {
        let label = normalized(label);
        if self.label.as_deref().map(normalized).as_deref() == Some(label.as_str()) {
            return Tie::Tied;
        }
        let named: Vec<&ServerDef> = (defs.iter())
            .filter(|d| normalized(&d.label) == label)
            .collect();
        if named.iter().any(|d| self.runs(d)) {
            Tie::Tied
        } else if named.iter().any(|d| d.command.is_some() || d.url.is_some()) {
            Tie::Other
        } else {
            Tie::Unknown
        }
    }

    /// Whether a server entry starts or reaches the server under test.
    fn runs(&self, def: &ServerDef) -> bool {
        let by_command = (def.command.as_ref())
            .is_some_and(|argv| self.commands.iter().any(|own| same_command(own, argv)));
        let by_url =
            (def.url.as_deref()).is_some_and(|url| self.urls.iter().any(|own| same_url(own, url)));
        by_command || by_url
    }
}

/// The same command line: the same arguments, and the same program, or one given by name and
/// the other by a path to a file of that name (`node`, `/usr/bin/node`). A command written as one
/// string with its arguments (`"node build/index.js"`) is split as a shell would.
fn same_command(own: &[String], def: &[String]) -> bool {
    let split;
    let def = match def {
        [one] if one.contains(char::is_whitespace) => {
            split = shlex::split(one).unwrap_or_else(|| vec![one.clone()]);
            &split[..]
        }
        _ => def,
    };
    let (Some((a, a_args)), Some((b, b_args))) = (own.split_first(), def.split_first()) else {
        return false;
    };
    let file = |p: &str| {
        std::path::Path::new(p)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
    };
    let bare = |p: &str| !p.contains('/');
    let same_program = a == b || ((bare(a) || bare(b)) && file(a) == file(b));
    same_program && a_args == b_args
}

/// The same URL, but for a trailing `/`.
fn same_url(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(label: &str, command: Option<&[&str]>, url: Option<&str>) -> ServerDef {
        ServerDef {
            label: label.to_owned(),
            file: ".mcp.json".to_owned(),
            command: command.map(|c| c.iter().map(|s| s.to_string()).collect()),
            url: url.map(str::to_owned),
        }
    }

    fn under_test() -> UnderTest {
        UnderTest {
            label: None,
            commands: vec![vec!["/usr/bin/node".into(), "build/index.js".into()]],
            urls: vec!["http://127.0.0.1:3000/mcp".into()],
        }
    }

    #[test]
    fn an_entry_running_the_server_ties_its_label() {
        let defs = [
            def("tracker", Some(&["node", "build/index.js"]), None),
            def("github", Some(&["npx", "-y", "gh-mcp"]), None),
            def("remote", None, Some("http://127.0.0.1:3000/mcp/")),
            def("one-string", Some(&["node build/index.js"]), None),
        ];
        let own = under_test();
        assert_eq!(own.tie("tracker", &defs), Tie::Tied);
        assert_eq!(own.tie("remote", &defs), Tie::Tied);
        assert_eq!(own.tie("one-string", &defs), Tie::Tied);
        assert_eq!(own.tie("github", &defs), Tie::Other);
        assert_eq!(own.tie("nowhere", &defs), Tie::Unknown);
    }

    #[test]
    fn the_configured_label_ties_and_labels_compare_as_hosts_write_them() {
        let own = UnderTest {
            label: Some("my tracker".into()),
            ..UnderTest::default()
        };
        assert_eq!(own.tie("my_tracker", &[]), Tie::Tied);
        // Another program with the same arguments is another server.
        let defs = [def("x", Some(&["python", "build/index.js"]), None)];
        assert_eq!(under_test().tie("x", &defs), Tie::Other);
        // Two different paths to programs of one name are two programs.
        let defs = [def("y", Some(&["/opt/node", "build/index.js"]), None)];
        assert_eq!(under_test().tie("y", &defs), Tie::Other);
    }
}
