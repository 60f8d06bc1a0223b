//! Which tools may change a server's state, by their annotations alone, and which servers keep
//! no state beyond their process. MCP's default for a tool without `readOnlyHint` is that it may
//! write; no name is trusted (`git_log` and `git_commit` look alike to a name rule).

use crate::config::{ServerSpec, ServerState, Transport};

/// Whether the tool says it only reads (`annotations.readOnlyHint: true`).
pub fn is_read_only(tool: &rmcp::model::Tool) -> bool {
    tool.annotations
        .as_ref()
        .and_then(|a| a.read_only_hint)
        .unwrap_or(false)
}

/// The tools of `tools` that may change state (all but those annotated `readOnlyHint: true`),
/// by name.
pub fn state_changing(tools: &[rmcp::model::Tool]) -> Vec<String> {
    tools
        .iter()
        .filter(|t| !is_read_only(t))
        .map(|t| t.name.to_string())
        .collect()
}

/// Why `spec`'s state dies with its process, when it does: `state = "process"`, the embedded
/// demo, a cassette that answers every call itself, or an overlay over such a server. `None`
/// for everything else: any server may keep state outside its process, and an HTTP server's
/// state lives in the long-running process the user runs.
pub fn process_state(spec: &ServerSpec) -> Option<&'static str> {
    if spec.state == ServerState::Process {
        return Some("state = \"process\"");
    }
    let Transport::Stdio { program, args } = &spec.transport else {
        return None;
    };
    if !is_mcpeval(program) {
        return None;
    }
    match args.first().map(String::as_str) {
        Some("demo-server") if !args.iter().any(|a| a == "--http") => {
            Some("the embedded demo server")
        }
        Some("serve") => served_state(args),
        _ => None,
    }
}

/// `mcpeval serve --overlay F --base B` is as stateful as B; `--replay C` answers from the
/// cassette unless its `unmatched` policy is `live`, which passes calls on to its base.
fn served_state(args: &[String]) -> Option<&'static str> {
    let value = |flag: &str| {
        args.windows(2)
            .find(|pair| pair[0] == flag)
            .map(|pair| pair[1].as_str())
    };
    let base = value("--base");
    let base_exempt = || {
        base.and_then(|b| ServerSpec::parse("base", b).ok())
            .is_some_and(|b| process_state(&b).is_some())
    };
    if value("--overlay").is_some() {
        return base_exempt().then_some("an overlay over a server without lasting state");
    }
    if value("--replay").is_some() {
        let live = value("--unmatched") == Some("live") && base.is_some();
        return (!live || base_exempt()).then_some("a replayed cassette");
    }
    None
}

fn is_mcpeval(program: &str) -> bool {
    std::env::current_exe().is_ok_and(|exe| exe.to_string_lossy() == program)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, read_only: Option<bool>) -> rmcp::model::Tool {
        let mut value = serde_json::json!({"name": name, "inputSchema": {"type": "object"}});
        if let Some(hint) = read_only {
            value["annotations"] = serde_json::json!({"readOnlyHint": hint});
        }
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn only_a_read_only_hint_makes_a_tool_read_only() {
        let tools = [
            tool("git_log", None),
            tool("git_status", Some(true)),
            tool("git_commit", Some(false)),
            tool("list_things", None),
        ];
        assert_eq!(
            state_changing(&tools),
            ["git_log", "git_commit", "list_things"]
        );
    }

    #[test]
    fn the_demo_cassettes_and_process_state_are_exempt_http_and_commands_are_not() {
        let parse = |s: &str| ServerSpec::parse("s", s).unwrap();
        assert!(process_state(&parse("demo:1.4.0")).is_some());
        assert!(process_state(&parse("mcp-server-git --repository /r")).is_none());
        assert!(process_state(&parse("http://127.0.0.1:9/mcp")).is_none());
        let mut marked = parse("mcp-server-time");
        marked.state = ServerState::Process;
        assert!(process_state(&marked).is_some());
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("o.yaml");
        std::fs::write(&file, "x").unwrap();
        let over = |base: &str| parse(&format!("overlay:{}+{base}", file.display()));
        assert!(process_state(&over("demo:1.5.0")).is_some());
        assert!(process_state(&over("node server.js")).is_none());
        let replay = |rest: &str| parse(&format!("replay:{}{rest}", file.display()));
        assert!(process_state(&replay("")).is_some());
        assert!(process_state(&replay("+node server.js")).is_some());
        let mut live = replay("+node server.js");
        if let Transport::Stdio { args, .. } = &mut live.transport {
            args.extend(["--unmatched".into(), "live".into()]);
        }
        assert!(process_state(&live).is_none());
    }
}
