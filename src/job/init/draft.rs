//! `mcpeval init`, the orchestration: connect to the live server, list what it offers, send
//! every drafted request twice, draw call tasks from what both answers share, verify them with
//! the grader `mcpeval run` uses, and write the files and the report.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::args_from_schema::{required, valid_args, wrong_type_args};
use super::calls::{expect, Answer, Expect, Probe};
use super::write::{self, Drafted, Files, LeftOut, Report};
use crate::config::ServerSpec;
use crate::error::{Coded, Exit};
use crate::mcp::{McpConnection, McpError};
use crate::suite::CallSpec;

/// The name of a tool no server should list: the unknown-tool probe calls it.
const UNKNOWN_TOOL: &str = "mcpeval_no_such_tool";
/// How many listed resources get a task at most.
const MAX_RESOURCES: usize = 20;
/// Name beginnings that mark a tool as writing, when its annotations do not say it is
/// read-only.
const WRITE_VERBS: &[&str] = &[
    "create", "delete", "update", "write", "remove", "set", "add", "insert", "edit", "modify",
    "patch", "put", "post", "send", "upload", "move", "rename", "drop", "clear", "reset", "append",
    "close", "archive", "destroy", "kill", "purge", "publish", "execute", "run",
];

/// The writing verbs that mark a tool as writing even when they are its whole name.
const DESTROYING_VERBS: &[&str] = &[
    "delete", "remove", "drop", "clear", "reset", "destroy", "kill", "purge", "write",
];

/// What `mcpeval init` was asked to do, resolved.
#[derive(Debug, Clone)]
pub struct InitRequest {
    pub server: ServerSpec,
    /// The server as the user gave it (`demo:1.4.0`, a command line, a URL), for the files.
    pub label: String,
    /// The directory the suite and the report go to.
    pub out: PathBuf,
    /// Draft calls of the tools that write too.
    pub include_writes: bool,
    /// Overwrite files a previous `init` wrote.
    pub force: bool,
    /// How long one request may take (the server spec's call timeout).
    pub timeout: Duration,
    /// The config file the server and hosts may name.
    pub config: Option<PathBuf>,
    /// The host that verifies the model tasks (`sim` by default).
    pub host: String,
    /// The host that writes the model tasks; `None`: templates.
    pub writer_host: Option<String>,
    /// Trials per model task in verification.
    pub verify_trials: u32,
    /// The share of trials a model task must pass to be kept.
    pub keep_at: f64,
    /// Draft call tasks only.
    pub no_models: bool,
    /// Write no CI file (`mcpeval.toml`, the contract snapshot, the workflow).
    pub no_ci: bool,
    /// Draft only for the tools the suite in `out` does not cover yet, into new files.
    pub update: bool,
    /// Draft only for these tools (`None`: all); `--update` narrows it to the uncovered ones.
    pub only_tools: Option<BTreeSet<String>>,
}

/// What `init` did: the files written and the report's facts.
#[derive(Debug)]
pub struct InitOutcome {
    pub files: Files,
    pub report: Report,
}

/// What keeps `init` from writing its files.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error("`{}` exists: pass --force to overwrite it", path.display())]
    Exists { path: PathBuf },
    #[error("server `{server}` could not be reached")]
    Unreachable {
        server: String,
        #[source]
        source: McpError,
    },
    #[error("model tasks")]
    Models(#[source] super::model_tasks::ModelStageError),
    #[error("cannot write `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Ci(#[from] super::ci::CiError),
}

impl Coded for InitError {
    fn exit(&self) -> Exit {
        match self {
            InitError::Exists { .. } | InitError::Models(_) => Exit::Usage,
            InitError::Unreachable { .. } | InitError::Write { .. } => Exit::Infra,
            InitError::Ci(e) => e.exit(),
        }
    }
}

/// Drafts, verifies and writes the call tasks of the server `request` names.
pub async fn init(request: &InitRequest) -> Result<InitOutcome, InitError> {
    let files = super::ci::files(request)?;
    let unreachable = |source| InitError::Unreachable {
        server: request.server.display(),
        source,
    };
    let conn = McpConnection::connect(&request.server)
        .await
        .map_err(unreachable)?;
    let listed = Listed::read(&conn).await.map_err(unreachable)?;
    super::ci::refuse_existing(request, &files)?;
    let mut report = Report::new(&request.label, conn.server_info());
    let (only, update) = super::ci_update::scope(request, &files, &listed.tools)?;
    if update.as_ref().is_some_and(|u| u.new.is_empty()) {
        report.ci.update = update;
        return Ok(InitOutcome { files, report });
    }
    let instructions = conn.server_info().instructions.clone();
    let probes = probes(
        &listed,
        request.include_writes,
        only.as_ref(),
        &mut report.left_out,
    );
    let first = ask_all(&request.server, Some(conn), &probes, request.timeout)
        .await
        .map_err(unreachable)?;
    let second = ask_all(&request.server, None, &probes, request.timeout)
        .await
        .map_err(unreachable)?;
    let mut drafted = Vec::new();
    for ((probe, a), b) in probes.iter().zip(&first).zip(&second) {
        let schema = output_schema(&listed.tools, &probe.request);
        let (a, b) = match (a, b) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => {
                let why = format!("the server failed on it: {}", crate::error::chain(e));
                report.left_out.push(LeftOut::new(&probe.id, why));
                continue;
            }
        };
        match expect(&probe.request, a, b, schema.as_ref()) {
            Ok(expect) => drafted.push(Drafted {
                probe: probe.clone(),
                expect,
                answer: short(&a.text, 100),
            }),
            Err(why) => report
                .left_out
                .push(LeftOut::new(&probe.id, why.to_string())),
        }
    }
    let drafted = match drafted.is_empty() {
        true => drafted,
        false => verify(request, &listed, drafted, &mut report).await?,
    };
    report.refused_everything = refused_everything(&drafted);
    report.drafted = drafted;
    if !request.no_models {
        let texts: Vec<&str> = (first.iter().flatten()).map(|a| a.text.as_str()).collect();
        let paths = super::model_tasks::known_paths(&request.server, &texts);
        let tools = super::ci_update::in_scope(&listed.tools, only.as_ref());
        let mut outcome =
            super::model_tasks::model_tasks(request, &tools, instructions.as_deref(), &paths)
                .await
                .map_err(InitError::Models)?;
        if let Some(update) = &update {
            super::ci_update::keep_new(&mut outcome, update);
        }
        report.models = Some(outcome);
    }
    if super::ci_update::nothing_new(update.as_ref(), &report) {
        report.ci.update = update;
        return Ok(InitOutcome { files, report });
    }
    report.ci = super::ci::write(request, &files, &report.server).await?;
    report.ci.update = update;
    write::write_all(&files, &report)
        .map_err(|(path, source)| InitError::Write { path, source })?;
    Ok(InitOutcome { files, report })
}

/// What the server lists.
struct Listed {
    tools: Vec<rmcp::model::Tool>,
    resources: Vec<rmcp::model::Resource>,
    templates: usize,
    prompts: Vec<rmcp::model::Prompt>,
}

impl Listed {
    async fn read(conn: &McpConnection) -> Result<Self, McpError> {
        let mut tools = conn.list_tools().await?;
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        let mut resources = conn.list_resources().await?;
        resources.sort_by(|a, b| a.uri.cmp(&b.uri));
        let templates = conn.list_resource_templates().await?.len();
        let mut prompts = conn.list_prompts().await?;
        prompts.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Self {
            tools,
            resources,
            templates,
            prompts,
        })
    }
}

/// Why a tool counts as writing: its annotations, or its name; `None` for a tool that only
/// reads (annotated `readOnlyHint: true`, or neither annotated nor named as writing).
pub fn writes(tool: &rmcp::model::Tool) -> Option<String> {
    let hints = tool.annotations.as_ref();
    if hints.and_then(|h| h.read_only_hint) == Some(true) {
        return None;
    }
    if hints.and_then(|h| h.destructive_hint) == Some(true) {
        return Some("annotated destructiveHint: true".into());
    }
    if hints.and_then(|h| h.read_only_hint) == Some(false) {
        return Some("annotated readOnlyHint: false".into());
    }
    let first = tool.name.split(['_', '-', '.']).next().unwrap_or_default();
    let verb = first.to_ascii_lowercase();
    let verb = WRITE_VERBS
        .iter()
        .find(|v| verb == **v || (first.len() > v.len() && camel_start(&tool.name, v)))?;
    // A verb with nothing after it (`add` of two numbers, `run`) names no thing it changes;
    // only the verbs that destroy count then.
    if tool.name.len() == verb.len() && !DESTROYING_VERBS.contains(verb) {
        return None;
    }
    Some(format!("its name starts with `{verb}`"))
}

/// Whether a camelCase name starts with `verb` followed by a capital (`createIssue`).
fn camel_start(name: &str, verb: &str) -> bool {
    name.starts_with(verb)
        && name[verb.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_uppercase())
}

/// The requests to send: per tool kept a valid call, a missing required argument and a wrong
/// type; one unknown tool; each listed resource; each prompt. Tools left out are noted. With
/// `only`, the calls of those tools alone.
fn probes(
    listed: &Listed,
    include_writes: bool,
    only: Option<&BTreeSet<String>>,
    left_out: &mut Vec<LeftOut>,
) -> Vec<Probe> {
    let mut out = Vec::new();
    for tool in &listed.tools {
        let name = tool.name.to_string();
        if only.is_some_and(|o| !o.contains(&name)) {
            continue;
        }
        let writes = writes(tool);
        if let (Some(why), false) = (&writes, include_writes) {
            let why = format!("writes ({why}); --include-writes drafts its calls");
            left_out.push(LeftOut::tool(&name, why));
            continue;
        }
        let schema = Value::Object((*tool.input_schema).clone());
        out.extend(tool_probes(&name, &schema, writes.is_some()));
    }
    if only.is_some() {
        dedupe_ids(&mut out);
        return out;
    }
    out.push(Probe {
        id: "unknown-tool".into(),
        request: CallSpec::Tool {
            name: UNKNOWN_TOOL.into(),
            args: Default::default(),
        },
        why: format!("a tool the server does not list (`{UNKNOWN_TOOL}`)"),
        writes: false,
        malformed: true,
    });
    for resource in listed.resources.iter().take(MAX_RESOURCES) {
        out.push(Probe {
            id: format!("resource-{}", slug(&resource.uri)),
            request: CallSpec::Resource {
                uri: resource.uri.clone(),
            },
            why: format!("reads the listed resource `{}`", resource.uri),
            writes: false,
            malformed: false,
        });
    }
    if listed.resources.len() > MAX_RESOURCES {
        let n = listed.resources.len() - MAX_RESOURCES;
        let why = format!("only the first {MAX_RESOURCES} resources (by URI) get a task");
        left_out.push(LeftOut::new(&format!("{n} more resource(s)"), why));
    }
    if listed.templates > 0 {
        let what = format!("{} resource template(s)", listed.templates);
        let why = "a template needs values for its URI that its listing does not give";
        left_out.push(LeftOut::new(&what, why.into()));
    }
    out.extend(listed.prompts.iter().map(prompt_probe));
    dedupe_ids(&mut out);
    out
}

/// A tool's probes: a valid call, one without its first required argument, one with a wrong
/// type.
fn tool_probes(name: &str, schema: &Value, writes: bool) -> Vec<Probe> {
    let slug = slug(name);
    let probe = |id: String, args, why: String, malformed| Probe {
        id,
        request: CallSpec::Tool {
            name: name.to_owned(),
            args,
        },
        why,
        writes,
        malformed,
    };
    let args = valid_args(schema);
    let shown = if args.is_empty() {
        "no arguments".to_owned()
    } else {
        "arguments filled from its input schema".to_owned()
    };
    let mut out = vec![probe(format!("call-{slug}"), args.clone(), shown, false)];
    if let Some(first) = required(schema).first() {
        let mut without = args.clone();
        without.remove(*first);
        let why = format!("without `{first}`, which the input schema requires");
        out.push(probe(
            format!("call-{slug}-without-{}", self::slug(first)),
            without,
            why,
            true,
        ));
    }
    if let Some((param, wrong)) = wrong_type_args(schema) {
        let why = format!("`{param}` of the wrong type");
        out.push(probe(format!("call-{slug}-wrong-type"), wrong, why, false));
    }
    out
}

fn prompt_probe(prompt: &rmcp::model::Prompt) -> Probe {
    let args: BTreeMap<String, String> = (prompt.arguments.iter().flatten())
        .filter(|a| a.required == Some(true))
        .map(|a| {
            let lower = a.name.to_ascii_lowercase();
            let numeric = ["id", "number", "count", "limit", "page"]
                .iter()
                .any(|w| lower == *w || lower.ends_with(&format!("_{w}")));
            let value = if numeric { "1" } else { "example" };
            (a.name.clone(), value.to_owned())
        })
        .collect();
    let why = match args.is_empty() {
        true => "the listed prompt without arguments".to_owned(),
        false => "the listed prompt, its required arguments filled".to_owned(),
    };
    Probe {
        id: format!("prompt-{}", slug(&prompt.name)),
        request: CallSpec::Prompt {
            name: prompt.name.clone(),
            args,
        },
        why,
        writes: false,
        malformed: false,
    }
}

/// Each probe's answer, in order, or how the server failed on it: the ones that only read
/// share one connection (`conn`, or a new one; a new one after a failure); each that writes
/// gets a fresh one, as a trial of `mcpeval run` gets a fresh server.
async fn ask_all(
    spec: &ServerSpec,
    conn: Option<McpConnection>,
    probes: &[Probe],
    timeout: Duration,
) -> Result<Vec<Result<Answer, McpError>>, McpError> {
    let mut shared = match conn {
        Some(conn) => conn,
        None => McpConnection::connect(spec).await?,
    };
    let mut answers = Vec::with_capacity(probes.len());
    for probe in probes {
        let answer = match probe.writes {
            false => ask(&shared, &probe.request, timeout).await,
            true => match McpConnection::connect(spec).await {
                Ok(own) => {
                    let answer = ask(&own, &probe.request, timeout).await;
                    own.close().await;
                    answer
                }
                Err(e) => Err(e),
            },
        };
        if answer.is_err() && !probe.writes {
            shared.close().await;
            shared = McpConnection::connect(spec).await?;
        }
        answers.push(answer);
    }
    shared.close().await;
    Ok(answers)
}

async fn ask(conn: &McpConnection, call: &CallSpec, timeout: Duration) -> Result<Answer, McpError> {
    let outcome = match call {
        CallSpec::Tool { name, args } => conn.call_tool(name, Some(args.clone()), timeout).await?,
        CallSpec::Resource { uri } => conn.read_resource(uri).await?,
        CallSpec::Prompt { name, args } => conn.get_prompt(name, args, timeout).await?,
    };
    let text = crate::episode::answer_text(call, &outcome, timeout);
    Ok(Answer { outcome, text })
}

fn output_schema(tools: &[rmcp::model::Tool], call: &CallSpec) -> Option<Value> {
    let CallSpec::Tool { name, .. } = call else {
        return None;
    };
    let tool = tools.iter().find(|t| t.name == name.as_str())?;
    tool.output_schema
        .as_ref()
        .map(|s| Value::Object((**s).clone()))
}

/// The drafts that pass a third time, graded as `mcpeval run` grades them (`run_call`) on a
/// fresh connection; the others are left out with the grader's reason.
async fn verify(
    request: &InitRequest,
    listed: &Listed,
    drafted: Vec<Drafted>,
    report: &mut Report,
) -> Result<Vec<Drafted>, InitError> {
    let unreachable = |source| InitError::Unreachable {
        server: request.server.display(),
        source,
    };
    let sources = write::task_sources(&Files::under(&request.out), &drafted);
    let suite = match crate::suite::load_sources(&sources) {
        Ok(suite) => suite,
        Err(e) => {
            // A draft the loader refuses is a bug of init's; say it rather than write it.
            let why = format!(
                "the drafted task files do not load: {}",
                crate::error::chain(&e)
            );
            report.notes.push(why);
            return Ok(Vec::new());
        }
    };
    let mut shared = McpConnection::connect(&request.server)
        .await
        .map_err(unreachable)?;
    let mut kept = Vec::new();
    for draft in drafted {
        let Some(task) = suite.tasks.iter().find(|t| t.id == draft.probe.id) else {
            continue;
        };
        let output = match draft.probe.writes {
            false => crate::episode::run_call(task, &shared, &listed.tools, request.timeout).await,
            true => {
                let own = McpConnection::connect(&request.server)
                    .await
                    .map_err(unreachable)?;
                let out =
                    crate::episode::run_call(task, &own, &listed.tools, request.timeout).await;
                own.close().await;
                out
            }
        };
        if output.infra_error.is_some() && !draft.probe.writes {
            shared.close().await;
            shared = McpConnection::connect(&request.server)
                .await
                .map_err(unreachable)?;
        }
        match (&output.infra_error, &output.grade) {
            (None, Some(grade)) if grade.success => kept.push(draft),
            (Some(e), _) => report
                .left_out
                .push(LeftOut::new(&draft.probe.id, e.clone())),
            (None, grade) => {
                let why = grade
                    .as_ref()
                    .map(|g| g.failure_summary())
                    .unwrap_or_default();
                let why = format!("a third call did not pass the drafted checks: {why}");
                report.left_out.push(LeftOut::new(&draft.probe.id, why));
            }
        }
    }
    shared.close().await;
    Ok(kept)
}

/// Whether the server refused every valid tool call it was sent (a server started wrong, or
/// one that denies everything): the report says so.
fn refused_everything(drafted: &[Drafted]) -> bool {
    let valid: Vec<&Drafted> = (drafted.iter())
        .filter(|d| matches!(d.probe.request, CallSpec::Tool { .. }))
        .filter(|d| !d.probe.malformed && !d.probe.id.ends_with("-wrong-type"))
        .collect();
    !valid.is_empty() && valid.iter().all(|d| refused(&d.expect))
}

fn refused(expect: &Expect) -> bool {
    expect.is_error == Some(true) || expect.error_code.is_some()
}

/// The first line of an answer, cut to `max` characters (`…` when something was left out),
/// for a task's comment.
pub fn short(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut cut: String = line.chars().take(max).collect();
    if cut.len() < line.len() || text.lines().nth(1).is_some() {
        cut.push('…');
    }
    cut
}

/// A task id's part made from a name or URI ([`crate::contract::boundary::slug`]), `x` for a
/// name with no letter or digit.
pub fn slug(text: &str) -> String {
    let out = crate::contract::boundary::slug(text);
    if out.is_empty() {
        "x".to_owned()
    } else {
        out
    }
}

/// Makes the ids unique (`-2`, `-3` after a repeat).
fn dedupe_ids(probes: &mut [Probe]) {
    let mut seen = std::collections::BTreeSet::new();
    for probe in probes {
        let mut id = probe.id.clone();
        let mut n = 2;
        while !seen.insert(id.clone()) {
            id = format!("{}-{n}", probe.id);
            n += 1;
        }
        probe.id = id;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{Tool, ToolAnnotations};
    use std::sync::Arc;

    fn tool(name: &str, hints: Option<ToolAnnotations>) -> Tool {
        let mut t = Tool::new(name.to_owned(), "d", Arc::new(Default::default()));
        t.annotations = hints;
        t
    }

    #[test]
    fn annotations_and_names_mark_the_tools_that_write() {
        let ro = Some(ToolAnnotations::new().read_only(true));
        assert_eq!(
            writes(&tool("delete_everything", ro)),
            None,
            "the hint wins"
        );
        let destructive = Some(ToolAnnotations::new().destructive(true));
        assert!(writes(&tool("get", destructive))
            .unwrap()
            .contains("destructiveHint"));
        let rw = Some(ToolAnnotations::new().read_only(false));
        assert!(writes(&tool("get", rw))
            .unwrap()
            .contains("readOnlyHint: false"));
        assert!(writes(&tool("add_comment", None))
            .unwrap()
            .contains("`add`"));
        assert!(writes(&tool("createIssue", None)).is_some());
        assert_eq!(
            writes(&tool("settings", None)),
            None,
            "`set` is not a word of it"
        );
        assert_eq!(writes(&tool("search_issues", None)), None);
        assert_eq!(
            writes(&tool("add", None)),
            None,
            "adds two numbers, names no thing"
        );
        assert!(writes(&tool("delete", None)).is_some());
    }

    #[test]
    fn a_tool_gets_a_valid_call_a_missing_argument_and_a_wrong_type() {
        let schema = serde_json::json!({"type": "object",
            "properties": {"id": {"type": "integer"}}, "required": ["id"]});
        let probes = tool_probes("get_issue", &schema, false);
        let ids: Vec<&str> = probes.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "call-get-issue",
                "call-get-issue-without-id",
                "call-get-issue-wrong-type"
            ]
        );
        assert!(probes[1].malformed && !probes[0].malformed && !probes[2].malformed);
        let mut twice = vec![probes[0].clone(), probes[0].clone()];
        dedupe_ids(&mut twice);
        assert_eq!(twice[1].id, "call-get-issue-2");
    }
}
