//! What `mcpeval init` may call on the live server. A tool counts as read-only only when
//! annotated `readOnlyHint: true` (MCP's default for an absent hint is that it may write; no name
//! is trusted); init calls another tool only where its effects cannot reach the user's real
//! state: the server keeps no state beyond its process, each process runs on sandbox copies, or
//! the user consented (`--allow-writes`).

use crate::config::ServerSpec;
use crate::contract::writes::{is_read_only, process_state};
pub use crate::job::writes::SandboxMismatch;

/// How the server's state is kept safe from init's calls.
#[derive(Debug, Clone, PartialEq)]
pub enum Safety {
    /// Each process runs on fresh copies (`--sandbox`) of these.
    Sandboxed(Vec<crate::config::SandboxPath>),
    /// The server's state dies with its process (the reason: the demo, `state = "process"`, a
    /// replay).
    Exempt(&'static str),
    /// `--allow-writes` (or `allow_writes = true` in the config): calls may change real state.
    Consented,
    /// None of those: only tools annotated `readOnlyHint: true` are called.
    ReadOnly,
}

/// What init may call on one server, and why not the rest.
#[derive(Debug, Clone, PartialEq)]
pub struct Guard {
    pub safety: Safety,
    /// The tools not annotated `readOnlyHint: true`, each with the words why.
    pub state_changing: Vec<(String, String)>,
}

impl Guard {
    pub fn new(spec: &ServerSpec, allow_writes: bool, tools: &[rmcp::model::Tool]) -> Self {
        let safety = if !spec.sandboxes.is_empty() {
            Safety::Sandboxed(spec.sandboxes.clone())
        } else if let Some(why) = process_state(spec) {
            Safety::Exempt(why)
        } else if allow_writes {
            Safety::Consented
        } else {
            Safety::ReadOnly
        };
        let state_changing = (tools.iter())
            .filter(|t| !is_read_only(t))
            .map(|t| (t.name.to_string(), change_words(t)))
            .collect();
        Self {
            safety,
            state_changing,
        }
    }

    /// Whether init may call `tool` on this server.
    pub fn may_call(&self, tool: &rmcp::model::Tool) -> bool {
        is_read_only(tool) || self.safety != Safety::ReadOnly
    }

    /// Whether drafted model tasks may be verified: a model is offered every tool, so it may
    /// call any of them.
    pub fn may_verify_models(&self) -> bool {
        self.state_changing.is_empty() || self.safety != Safety::ReadOnly
    }

    /// The state-changing tools, by name.
    pub fn tools(&self) -> Vec<&str> {
        self.state_changing
            .iter()
            .map(|(t, _)| t.as_str())
            .collect()
    }

    /// Why a state-changing tool is not called: the sentence the files and the report use.
    pub fn why_not() -> &'static str {
        "the server's state may outlive its process (a repository, a database, a directory), so \
         init did not call it on the live server"
    }

    /// How to have init call them after all.
    pub fn how_to() -> &'static str {
        "to verify, run `mcpeval init` again with --sandbox PATH and {sandbox} where PATH goes in \
         the server's command (each server process then runs on a fresh copy of PATH), with \
         --allow-writes (calls change the real state), or, for a server that keeps nothing \
         beyond its process, with --config FILE naming a [servers.NAME] with state = \
         \"process\" and --server NAME"
    }

    /// How the calls that may change state were handled, in words, for the report.
    pub fn words(&self) -> String {
        let tools = match self.state_changing.is_empty() {
            true => return "every tool is annotated readOnlyHint: true: init may call each".into(),
            false => self.tools().join(", "),
        };
        match &self.safety {
            Safety::Sandboxed(p) => format!(
                "tools that may change state ({tools}) were reachable on sandbox copies only \
                 ({}): every server process ran on a fresh copy, removed afterwards",
                p.iter()
                    .map(|s| s.placeholder())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Safety::Exempt(why) => format!(
                "tools that may change state ({tools}) were reachable: the server keeps no \
                 state beyond its process ({why})"
            ),
            Safety::Consented => format!(
                "--allow-writes: tools that may change state ({tools}) were reachable on the \
                 live server, and may have changed its real state"
            ),
            Safety::ReadOnly => format!(
                "tools that may change state ({tools}) were not called: {}; {}",
                Self::why_not(),
                Self::how_to()
            ),
        }
    }
}

/// Why a tool may change state, by its annotations: `annotated readOnlyHint: false`,
/// `annotated destructiveHint: true`, or `not annotated readOnlyHint: true`.
pub fn change_words(tool: &rmcp::model::Tool) -> String {
    let hints = tool.annotations.as_ref();
    if hints.and_then(|h| h.read_only_hint) == Some(false) {
        "annotated readOnlyHint: false".into()
    } else if hints.and_then(|h| h.destructive_hint) == Some(true) {
        "annotated destructiveHint: true".into()
    } else {
        "not annotated readOnlyHint: true".into()
    }
}

/// `{sandbox}` with no sandbox given, or a sandbox no `{sandbox}` in the server's command, env
/// or cwd names: either would run init on the real data (or on nothing). The message says which.
pub fn check_sandboxes(spec: &ServerSpec) -> Result<(), SandboxMismatch> {
    crate::job::writes::placeholders_match("the server", spec, &[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{SandboxPath, ServerState};

    fn tool(name: &str, hints: Option<serde_json::Value>) -> rmcp::model::Tool {
        let mut value = serde_json::json!({"name": name, "inputSchema": {"type": "object"}});
        if let Some(hints) = hints {
            value["annotations"] = hints;
        }
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn only_read_only_tools_are_called_on_a_server_whose_state_may_outlive_it() {
        let tools = [
            tool("git_log", None),
            tool(
                "git_status",
                Some(serde_json::json!({"readOnlyHint": true})),
            ),
            tool(
                "git_commit",
                Some(serde_json::json!({"destructiveHint": false})),
            ),
        ];
        let spec = ServerSpec::parse("s", "mcp-server-git --repository /r").unwrap();
        let guard = Guard::new(&spec, false, &tools);
        assert_eq!(guard.safety, Safety::ReadOnly);
        assert_eq!(guard.tools(), ["git_log", "git_commit"]);
        assert!(!guard.may_call(&tools[0]), "no name is trusted");
        assert!(guard.may_call(&tools[1]));
        assert!(
            !guard.may_call(&tools[2]),
            "destructiveHint: false still writes"
        );
        assert!(!guard.may_verify_models(), "a model may pick git_commit");
        assert!(
            guard.words().contains("were not called"),
            "{}",
            guard.words()
        );
        assert_eq!(change_words(&tools[0]), "not annotated readOnlyHint: true");

        let consented = Guard::new(&spec, true, &tools);
        assert!(consented.may_call(&tools[2]) && consented.may_verify_models());
        let mut marked = spec.clone();
        marked.state = ServerState::Process;
        assert!(matches!(
            Guard::new(&marked, false, &tools).safety,
            Safety::Exempt(_)
        ));
        let read_only = Guard::new(&spec, false, &tools[1..2]);
        assert!(read_only.may_verify_models(), "nothing to reach");
    }

    #[test]
    fn a_sandbox_needs_its_placeholder_and_a_placeholder_its_sandbox() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = ServerSpec::parse("s", "srv --repository {sandbox}").unwrap();
        let err = check_sandboxes(&spec).unwrap_err().0;
        assert!(
            err.contains("names no sandbox: pass --sandbox PATH"),
            "{err}"
        );
        spec.sandboxes = vec![SandboxPath::new(None, dir.path()).unwrap()];
        check_sandboxes(&spec).unwrap();
        assert!(matches!(
            Guard::new(&spec, false, &[]).safety,
            Safety::Sandboxed(_)
        ));
        let mut plain = ServerSpec::parse("s", "srv --repository /real").unwrap();
        plain.sandboxes = spec.sandboxes.clone();
        let err = check_sandboxes(&plain).unwrap_err().0;
        assert!(err.contains("runs on the real data"), "{err}");
    }
}
