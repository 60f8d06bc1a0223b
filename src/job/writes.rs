//! The write gate: before any trial, a suite that can reach a tool that may change state, on a
//! server whose state may outlive its process, is refused unless the server runs on sandbox
//! copies or the user consented (`--allow-writes`). Also checks that `{sandbox}` placeholders
//! and sandboxes go together.

use std::collections::BTreeSet;

use super::JobError;
use crate::config::{placeholders_in, RunConfig, ServerSpec};
use crate::contract::writes::{process_state, state_changing};
use crate::episode::Side;
use crate::mcp::sandbox::{placeholders_of, tree_size, LARGE_TREE_BYTES};
use crate::suite::{Suite, Task};

/// A suite refused before its first trial, or placeholders without sandboxes (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(
        "the suite can call tools that may change the real state of the {side} server \
         `{server}`: {tools}\n  ({how}; a tool counts as read-only only when annotated \
         readOnlyHint: true)\n  A fresh process is not fresh state: a server over a \
         repository, a database or a directory keeps its state outside the process.\n  \
         - run each server process on a copy: --sandbox PATH (or [servers.NAME] sandbox = \
         \"PATH\"), with {{sandbox}} in the server's command where PATH goes (and in the \
         tasks)\n  - or let the trials write to it: --allow-writes (allow_writes = true in the \
         config)\n  - or, for a server that keeps nothing beyond its process: [servers.NAME] \
         state = \"process\""
    )]
    Refused {
        side: Side,
        server: String,
        tools: String,
        how: String,
    },
    #[error(transparent)]
    Placeholder(#[from] SandboxMismatch),
}

/// A `{sandbox}` with no sandbox given, or a sandbox no `{sandbox}` names (exit 2).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct SandboxMismatch(pub String);

impl crate::error::Coded for WriteError {
    fn exit(&self) -> crate::error::Exit {
        crate::error::Exit::Usage
    }
}

/// The tasks as they reach one side's server.
pub struct SideTasks<'a> {
    pub side: Side,
    pub spec: &'a ServerSpec,
    pub tools: &'a [rmcp::model::Tool],
    pub tasks: Vec<&'a Task>,
}

/// What the gate lets through and says about it: lines for the run's header.
#[derive(Debug, Default)]
pub struct Allowed {
    pub notes: Vec<String>,
}

/// The gate over both sides. `allow_writes` is the user's consent. The placeholders are
/// checked before, by [`check_sandboxes`], before any server starts.
pub fn gate(sides: &[SideTasks<'_>], allow_writes: bool) -> Result<Allowed, WriteError> {
    let mut allowed = Allowed::default();
    for side in sides {
        if !side.spec.sandboxes.is_empty() {
            allowed.notes.push(sandbox_note(side));
            continue;
        }
        let reachable = reachable(side);
        if reachable.tools.is_empty() || process_state(side.spec).is_some() {
            continue;
        }
        let tools = reachable
            .tools
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        if !allow_writes {
            return Err(WriteError::Refused {
                side: side.side,
                server: side.spec.display(),
                tools,
                how: reachable.how.join("; "),
            });
        }
        allowed.notes.push(format!(
            "allow-writes: trials may change the real state of the {} server `{}` (tools not \
             marked read-only: {tools})",
            side.side,
            side.spec.display()
        ));
    }
    Ok(allowed)
}

/// Checks, before any server starts, that each side's `{sandbox}` placeholders (in its spec and
/// the tasks) and its sandboxes go together.
pub fn check_sandboxes(config: &RunConfig, tasks: &[Task]) -> Result<(), WriteError> {
    for (side, spec) in [
        (Side::Baseline, &config.baseline),
        (Side::Candidate, &config.candidate),
    ] {
        check_placeholders(&SideTasks {
            side,
            spec,
            tools: &[],
            tasks: tasks.iter().collect(),
        })?;
    }
    Ok(())
}

/// The gate for a run's config and tasks (candidate tasks renamed as the run grades them).
pub fn gate_run(
    config: &RunConfig,
    suite: &Suite,
    tools: [&[rmcp::model::Tool]; 2],
) -> Result<Allowed, WriteError> {
    let renamed = suite.renamed_for_candidate(&config.renames);
    let sides = both_sides(config, suite, renamed.as_deref(), tools, true);
    gate(&sides, config.allow_writes)
}

/// Each side's spec, tools and tasks as it sees them (the candidate's renamed, when `renamed`);
/// the baseline left out when there is no baseline server.
fn both_sides<'a>(
    config: &'a RunConfig,
    suite: &'a Suite,
    renamed: Option<&'a [Task]>,
    tools: [&'a [rmcp::model::Tool]; 2],
    with_baseline: bool,
) -> Vec<SideTasks<'a>> {
    let candidate = SideTasks {
        side: Side::Candidate,
        spec: &config.candidate,
        tools: tools[1],
        tasks: renamed.unwrap_or(&suite.tasks).iter().collect(),
    };
    let baseline = with_baseline.then(|| SideTasks {
        side: Side::Baseline,
        spec: &config.baseline,
        tools: tools[0],
        tasks: suite.tasks.iter().collect(),
    });
    baseline.into_iter().chain([candidate]).collect()
}

struct Reachable {
    tools: BTreeSet<String>,
    how: Vec<String>,
}

/// The state-changing tools the tasks can reach: every one the server lists when a model is
/// offered the list, and those the call tasks and fixtures call.
fn reachable(side: &SideTasks<'_>) -> Reachable {
    let writes: BTreeSet<String> = state_changing(side.tools).into_iter().collect();
    let mut found = Reachable {
        tools: BTreeSet::new(),
        how: Vec::new(),
    };
    if let Some(task) = side.tasks.iter().find(|t| t.kind.has_model()) {
        found.tools.extend(writes.iter().cloned());
        if !writes.is_empty() {
            found.how.push(format!(
                "model tasks are offered every tool, e.g. `{}` ({})",
                task.id, task.source
            ));
        }
    }
    for task in &side.tasks {
        for tool in task.tools_called().filter(|t| writes.contains(*t)) {
            found.tools.insert(tool.to_owned());
            if found.how.len() < 4 {
                found.how.push(format!(
                    "task `{}` ({}) calls `{tool}`",
                    task.id, task.source
                ));
            }
        }
    }
    found
}

/// `{sandbox}` with no sandbox given, a sandbox no placeholder names, or a placeholder naming
/// no sandbox: each is a mistake that would run on the real data or on nothing.
fn check_placeholders(side: &SideTasks<'_>) -> Result<(), WriteError> {
    let who = format!("the {} server", side.side);
    Ok(placeholders_match(&who, side.spec, &side.tasks)?)
}

/// Whether `spec`'s sandboxes and the placeholders in its command, env, cwd and in `tasks`
/// go together; the mistake in words otherwise. `who` names the server (`the baseline server`).
pub fn placeholders_match(
    who: &str,
    spec: &ServerSpec,
    tasks: &[&Task],
) -> Result<(), SandboxMismatch> {
    let in_spec = placeholders_of(spec);
    let mut in_tasks: Vec<(String, &Task)> = Vec::new();
    for task in tasks {
        let text = serde_json::to_string(task).unwrap_or_default();
        in_tasks.extend(placeholders_in(&text).into_iter().map(|p| (p, *task)));
    }
    let given: BTreeSet<String> = spec.sandboxes.iter().map(|s| s.placeholder()).collect();
    for (placeholder, place) in &in_spec {
        if !given.contains(placeholder) {
            return Err(unknown(placeholder, &format!("{who}'s {place}"), &given));
        }
    }
    for (placeholder, task) in &in_tasks {
        if !given.contains(placeholder) {
            let place = format!("task `{}` ({})", task.id, task.source);
            return Err(unknown(placeholder, &place, &given));
        }
    }
    let unused = given.iter().find(|placeholder| {
        !in_spec.contains_key(*placeholder) && !in_tasks.iter().any(|(p, _)| p == *placeholder)
    });
    match unused {
        Some(placeholder) => Err(SandboxMismatch(format!(
            "a sandbox is given for {who} `{}`, but `{placeholder}` is written nowhere: put it \
             in the server's command (or env, or cwd) where the path goes, e.g. `--repository \
             {placeholder}`, or the server runs on the real data",
            spec.display()
        ))),
        None => Ok(()),
    }
}

fn unknown(placeholder: &str, place: &str, given: &BTreeSet<String>) -> SandboxMismatch {
    let hint = match given.is_empty() {
        true => "pass --sandbox PATH (or NAME=PATH for {sandbox.NAME}), or set [servers.NAME] \
                 sandbox = \"PATH\""
            .to_owned(),
        false => format!(
            "the sandboxes given: {}",
            given.iter().cloned().collect::<Vec<_>>().join(", ")
        ),
    };
    SandboxMismatch(format!(
        "`{placeholder}` in {place} names no sandbox: {hint}"
    ))
}

/// The header's line about a side's sandboxes, with a warning on a large tree.
fn sandbox_note(side: &SideTasks<'_>) -> String {
    let copied: Vec<String> = side
        .spec
        .sandboxes
        .iter()
        .map(|s| {
            let (files, bytes) = tree_size(&s.path);
            let large = match bytes > LARGE_TREE_BYTES {
                true => " — warning: a large tree, copied for every server start",
                false => "",
            };
            format!(
                "{} = {} ({files} files, {:.1} MB{large})",
                s.placeholder(),
                s.path.display(),
                bytes as f64 / 1e6
            )
        })
        .collect();
    let stats = crate::mcp::sandbox::copy_stats();
    let cost = match stats.copies {
        0 => String::new(),
        n => format!(
            "; {:.1} ms per copy ({})",
            stats.total.as_secs_f64() * 1e3 / n as f64,
            if stats.cloned {
                "cloned copy-on-write"
            } else {
                "copied byte for byte"
            }
        ),
    };
    format!(
        "sandbox: the {} server runs each process on fresh copies: {}{cost}",
        side.side,
        copied.join("; ")
    )
}

/// The gate for `mcpeval check`, before any stage: its call tasks and its evaluation reach the
/// servers as a run does. A side's tools are listed (a start, no call) only where the gate
/// could refuse: a server that may keep state, with neither a sandbox nor consent.
pub async fn gate_check(config: &RunConfig, has_baseline: bool) -> Result<Allowed, JobError> {
    let Ok(suite) = crate::suite::load_or_embedded(&config.suites) else {
        // An unreadable suite is refused on its own, with every problem it has.
        return Ok(Allowed::default());
    };
    if config.suites.is_empty() && !config.is_embedded_demo() {
        return Ok(Allowed::default());
    }
    check_sandboxes(config, &suite.tasks)?;
    let mut listed: [Vec<rmcp::model::Tool>; 2] = Default::default();
    let specs = [&config.baseline, &config.candidate];
    for (i, spec) in specs.into_iter().enumerate() {
        let needed = (i == 1 || has_baseline)
            && !config.allow_writes
            && spec.sandboxes.is_empty()
            && process_state(spec).is_none();
        if needed {
            listed[i] = list_tools(spec).await.unwrap_or_default();
        }
    }
    let renamed = suite.renamed_for_candidate(&config.renames);
    let tools = [&listed[0][..], &listed[1][..]];
    let sides = both_sides(config, &suite, renamed.as_deref(), tools, has_baseline);
    Ok(gate(&sides, config.allow_writes)?)
}

/// A server's tools, listed on a connection of their own; `None` when it does not start (the
/// smoke stage says so, as it always has).
async fn list_tools(spec: &ServerSpec) -> Option<Vec<rmcp::model::Tool>> {
    let connection = crate::mcp::McpConnection::connect(spec).await.ok()?;
    let tools = connection.list_tools().await.ok();
    connection.close().await;
    tools
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, read_only: bool) -> rmcp::model::Tool {
        let mut value = serde_json::json!({"name": name, "inputSchema": {"type": "object"}});
        if read_only {
            value["annotations"] = serde_json::json!({"readOnlyHint": true});
        }
        serde_json::from_value(value).unwrap()
    }

    fn tasks(yaml: &str) -> Vec<Task> {
        let sources = [(std::path::PathBuf::from("t.yaml"), yaml.to_owned())];
        crate::suite::load_sources(&sources).unwrap().tasks
    }

    fn gate_one(spec: &ServerSpec, tasks: &[Task], allow: bool) -> Result<Allowed, WriteError> {
        let tools = [
            tool("write", false),
            tool("read", true),
            tool("wipe", false),
        ];
        gate(
            &[SideTasks {
                side: Side::Candidate,
                spec,
                tools: &tools,
                tasks: tasks.iter().collect(),
            }],
            allow,
        )
    }

    const MODEL: &str = "- id: m\n  prompt: read it\n  expect: {calls: [{tool: read}]}\n";
    const CALL: &str = "- id: c\n  kind: call\n  call: {tool: wipe}\n  expect: {is_error: false}\n";
    const READ_CALL: &str =
        "- id: r\n  kind: call\n  call: {tool: read}\n  expect: {is_error: false}\n";

    #[test]
    fn a_model_task_reaches_every_tool_that_is_not_read_only() {
        let spec = ServerSpec::parse("s", "server --dir /data").unwrap();
        let err = gate_one(&spec, &tasks(MODEL), false)
            .unwrap_err()
            .to_string();
        assert!(err.contains(": wipe, write\n"), "{err}");
        assert!(!err.contains("read,"), "{err}");
        assert!(err.contains("model tasks are offered every tool"), "{err}");
    }

    #[test]
    fn call_tasks_reach_only_what_they_call() {
        let spec = ServerSpec::parse("s", "server --dir /data").unwrap();
        assert!(gate_one(&spec, &tasks(READ_CALL), false).is_ok());
        let err = gate_one(&spec, &tasks(CALL), false)
            .unwrap_err()
            .to_string();
        assert!(err.contains(": wipe\n  (task `c`"), "{err}");
    }

    #[test]
    fn consent_exemption_and_sandboxes_let_it_through() {
        let spec = ServerSpec::parse("s", "server --dir /data").unwrap();
        let allowed = gate_one(&spec, &tasks(MODEL), true).unwrap();
        assert!(
            allowed.notes[0].contains("allow-writes"),
            "{:?}",
            allowed.notes
        );
        let mut process = spec.clone();
        process.state = crate::config::ServerState::Process;
        assert!(gate_one(&process, &tasks(MODEL), false)
            .unwrap()
            .notes
            .is_empty());
        let dir = tempfile::tempdir().unwrap();
        let mut sandboxed = ServerSpec::parse("s", "server --dir {sandbox}").unwrap();
        sandboxed.sandboxes = vec![crate::config::SandboxPath::new(None, dir.path()).unwrap()];
        let notes = gate_one(&sandboxed, &tasks(MODEL), false).unwrap().notes;
        assert!(notes[0].contains("fresh copies"), "{notes:?}");
    }

    fn placeholders(spec: &ServerSpec, tasks: &[Task]) -> Result<(), WriteError> {
        check_placeholders(&SideTasks {
            side: Side::Candidate,
            spec,
            tools: &[],
            tasks: tasks.iter().collect(),
        })
    }

    #[test]
    fn placeholders_need_their_sandbox_and_a_sandbox_needs_a_placeholder() {
        let bare = ServerSpec::parse("s", "server --dir {sandbox}").unwrap();
        let err = placeholders(&bare, &tasks(READ_CALL))
            .unwrap_err()
            .to_string();
        assert!(err.contains("names no sandbox"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let mut unused = ServerSpec::parse("s", "server --dir /data").unwrap();
        unused.sandboxes = vec![crate::config::SandboxPath::new(None, dir.path()).unwrap()];
        let err = placeholders(&unused, &tasks(READ_CALL))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is written nowhere"), "{err}");
        let in_task = "- id: r\n  kind: call\n  call: {tool: read, args: {p: \"{sandbox}\"}}\n  \
                       expect: {is_error: false}\n";
        let err = placeholders(&bare, &tasks(&in_task.replace("{sandbox}", "{sandbox.db}")));
        assert!(err.is_err());
    }
}
