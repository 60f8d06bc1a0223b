//! Knobs that make the demo server misbehave on purpose, for testing `mcpeval check`: set from
//! `demo-server` flags or from the environment (so that `demo:` servers of a run take them too).

use rmcp::model::ProtocolVersion;

/// `--discover-versions V,V`: `server/discover` lists these versions while the server still
/// accepts every version its SDK knows (and lists those in a `-32022` error's `data.supported`):
/// the disagreement `mcpeval check`'s contract stage looks for.
pub const DISCOVER_VERSIONS_ENV: &str = "MCPEVAL_DEMO_DISCOVER_VERSIONS";
/// `--deprecated`: the server declares the `logging` capability (deprecated by the 2026-07-28
/// spec) and prints a deprecation warning on stderr at start, as the Python SDK does.
pub const DEPRECATED_ENV: &str = "MCPEVAL_DEMO_DEPRECATED";

/// `--settle-ms N`: a write (`create_issue`, `update_issue`, `add_comment`) is answered at once
/// but reads (tools, resources, prompts) see it only N ms later, as state that settles
/// asynchronously (a scaled deployment, a search index): for `after` checks with `within_ms`.
pub const SETTLE_MS_ENV: &str = "MCPEVAL_DEMO_SETTLE_MS";

/// How long a write takes to become visible to reads, when the knob is set (and not 0).
pub fn settle_delay() -> Option<std::time::Duration> {
    let ms = std::env::var(SETTLE_MS_ENV)
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()?;
    (ms > 0).then(|| std::time::Duration::from_millis(ms))
}

/// The versions `server/discover` should list, when the knob is set.
pub fn discover_versions() -> Option<Vec<ProtocolVersion>> {
    let text = std::env::var(DISCOVER_VERSIONS_ENV).ok()?;
    let versions: Vec<ProtocolVersion> = text
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .filter_map(|v| serde_json::from_value(serde_json::Value::String(v.to_owned())).ok())
        .collect();
    (!versions.is_empty()).then_some(versions)
}

/// Whether the server plays one that uses deprecated features.
pub fn deprecated() -> bool {
    std::env::var(DEPRECATED_ENV).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The warning lines a server that uses deprecated features prints at start, in the Python
/// SDK's form (`file:line: MCPDeprecationWarning: message`).
pub fn print_deprecation_warnings() {
    if deprecated() {
        eprintln!(
            "demo/server.py:88: MCPDeprecationWarning: the logging capability is deprecated \
             since protocol version 2026-07-28 and may be removed from 2027-07-28 (SEP-2577)"
        );
        eprintln!("  server.enable_logging()");
    }
}
