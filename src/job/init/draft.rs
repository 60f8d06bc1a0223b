//! `mcpeval init`, the orchestration: connect to the live server, list what it offers, send
//! every drafted request twice, draw call tasks from what both answers share, verify them with
//! the grader `mcpeval run` uses, and write the files and the report.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::calls::{expect, Answer, Expect, Probe};
use super::guard::Guard;
use super::probes::{probes, Listed};
use super::values::Known;
use super::write::{self, Drafted, Files, LeftOut, Report};
use crate::config::ServerSpec;
use crate::episode::TrialOutput;
use crate::error::{Coded, Exit};
use crate::mcp::{CallOutcome, McpConnection, McpError};
use crate::suite::{CallSpec, Task};

/// What `mcpeval init` was asked to do, resolved.
#[derive(Debug, Clone)]
pub struct InitRequest {
    pub server: ServerSpec,
    /// The server as the user gave it (`demo:1.4.0`, a command line, a URL), for the files.
    pub label: String,
    /// The directory the suite and the report go to.
    pub out: PathBuf,
    /// Draft calls of the tools that may change state too (verified only where init may call
    /// them: see [`super::guard`]).
    pub include_writes: bool,
    /// `--sandbox`, `--keep-sandboxes`, `--allow-writes` as given (the server spec carries the
    /// sandboxes already), for the configs resolved again: the hosts', the conformance stage's.
    pub writes: crate::config::WriteFlags,
    /// The user's consent to calls that may change the server's real state: `--allow-writes`,
    /// or `allow_writes = true` in `--config`.
    pub allow_writes: bool,
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
    /// A `{sandbox}` with no sandbox, or a sandbox no `{sandbox}` names.
    #[error(transparent)]
    Sandbox(#[from] super::guard::SandboxMismatch),
}

impl Coded for InitError {
    fn exit(&self) -> Exit {
        match self {
            InitError::Exists { .. } | InitError::Models(_) | InitError::Sandbox(_) => Exit::Usage,
            InitError::Unreachable { .. } | InitError::Write { .. } => Exit::Infra,
            InitError::Ci(e) => e.exit(),
        }
    }
}

/// Drafts, verifies and writes the call tasks and the model tasks of the server `request`
/// names, calling no tool that may change its real state ([`Guard`]).
pub async fn init(request: &InitRequest) -> Result<InitOutcome, InitError> {
    super::guard::check_sandboxes(&request.server)?;
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
    let guard = Guard::new(&request.server, request.allow_writes, &listed.tools);
    report.guard = Some(guard.clone());
    let (only, update) = super::ci_update::scope(request, &files, &listed.tools)?;
    if update.as_ref().is_some_and(|u| u.new.is_empty()) {
        report.ci.update = update;
        return Ok(InitOutcome { files, report });
    }
    let instructions = conn.server_info().instructions.clone();
    let known = Known::of(&request.server, &[]);
    let mut probes = probes(
        &listed,
        request.include_writes,
        &guard,
        only.as_ref(),
        &known,
        &mut report,
    );
    let timeout = request.timeout;
    super::settle::settle(&request.server, &listed.tools, &mut probes, &known, timeout).await;
    let texts = call_tasks(request, &listed, conn, &probes, &mut report).await?;
    if !request.no_models {
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let known = Known::of(&request.server, &texts);
        let tools = super::ci_update::in_scope(&listed.tools, only.as_ref());
        let mut outcome = super::model_tasks::model_tasks(
            request,
            &tools,
            instructions.as_deref(),
            &known,
            &guard,
        )
        .await
        .map_err(InitError::Models)?;
        if let Some(update) = &update {
            super::ci_update::keep_new(&mut outcome, update);
        }
        report.unverified.models = std::mem::take(&mut outcome.unverified);
        report.models = Some(outcome);
    }
    if super::ci_update::nothing_new(update.as_ref(), &report) {
        report.ci.update = update;
        return Ok(InitOutcome { files, report });
    }
    report.ci = super::ci::write(request, &files, &report.server, &guard).await?;
    report.ci.update = update;
    write::write_all(&files, &report)
        .map_err(|(path, source)| InitError::Write { path, source })?;
    Ok(InitOutcome { files, report })
}

/// Sends each probe twice (the first time on `conn`), draws the call tasks from what both
/// answers share and keeps those a third call passes; the first answers' texts are returned
/// (the model tasks take paths from them).
async fn call_tasks(
    request: &InitRequest,
    listed: &Listed,
    conn: McpConnection,
    probes: &[Probe],
    report: &mut Report,
) -> Result<Vec<String>, InitError> {
    let unreachable = |source| InitError::Unreachable {
        server: request.server.display(),
        source,
    };
    let first = ask_all(&request.server, Some(conn), probes, request.timeout)
        .await
        .map_err(unreachable)?;
    let second = ask_all(&request.server, None, probes, request.timeout)
        .await
        .map_err(unreachable)?;
    let mut drafted = Vec::new();
    let mut dropped_refusals = 0;
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
            Ok(expect) if refused(&expect) && !refused_on_drafted(probe, &a.text).is_empty() => {
                let named = refused_on_drafted(probe, &a.text);
                let values: Vec<String> = (named.iter())
                    .map(|(k, v)| format!("`{k}` = {v}"))
                    .collect();
                let why = format!(
                    "refused the value(s) init drafted ({}), not a behaviour worth pinning: \
                     answered {}",
                    values.join(", "),
                    short(&a.text, 100)
                );
                report.left_out.push(LeftOut::new(&probe.id, why));
                if let CallSpec::Tool { name, .. } = &probe.request {
                    (report.refused_values)
                        .extend(named.into_iter().map(|(k, v)| (name.clone(), k, v)));
                }
                dropped_refusals += 1;
            }
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
        false => verify(request, listed, drafted, report).await?,
    };
    report.refused_everything = refused_everything(&drafted, dropped_refusals);
    report.drafted = drafted;
    Ok(first.into_iter().flatten().map(|a| a.text).collect())
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

/// One request's answer; on sandbox copies, with the copy's paths put back as `{sandbox}`, so
/// that two answers (from two copies) compare and a pinned text holds on the next copy.
pub(super) async fn ask(
    conn: &McpConnection,
    call: &CallSpec,
    timeout: Duration,
) -> Result<Answer, McpError> {
    let mut outcome = match call {
        CallSpec::Tool { name, args } => {
            // A drafted value may name the sandbox copy (`{sandbox}` from the command line).
            let mut sent = Value::Object(args.clone());
            if let Some(copies) = conn.sandbox() {
                copies.substitute_json(&mut sent);
            }
            conn.call_tool(name, sent.as_object().cloned(), timeout)
                .await?
        }
        CallSpec::Resource { uri } => conn.read_resource(uri).await?,
        CallSpec::Prompt { name, args } => conn.get_prompt(name, args, timeout).await?,
    };
    if let Some(copies) = conn.sandbox() {
        match &mut outcome {
            CallOutcome::Result {
                text, structured, ..
            } => {
                *text = copies.map_back(text);
                structured.iter_mut().for_each(|s| copies.map_back_json(s));
            }
            CallOutcome::ProtocolError { message, data, .. } => {
                *message = copies.map_back(message);
                data.iter_mut().for_each(|d| copies.map_back_json(d));
            }
            CallOutcome::Timeout => {}
        }
    }
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
            false => call_on(task, &shared, &listed.tools, request.timeout).await,
            true => {
                let own = McpConnection::connect(&request.server)
                    .await
                    .map_err(unreachable)?;
                let out = call_on(task, &own, &listed.tools, request.timeout).await;
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

/// A call task's trial as `mcpeval run` makes it: on sandbox copies, the task's `{sandbox}` is
/// the copy's path, and what the trial recorded has `{sandbox}` again.
async fn call_on(
    task: &Task,
    conn: &McpConnection,
    tools: &[rmcp::model::Tool],
    timeout: Duration,
) -> TrialOutput {
    let Some(copies) = conn.sandbox() else {
        return crate::episode::run_call(task, conn, tools, timeout).await;
    };
    let task = crate::runner::sandboxed::task_on(copies, task);
    let mut output = crate::episode::run_call(&task, conn, tools, timeout).await;
    crate::runner::sandboxed::map_back(copies, &mut output);
    output
}

/// Whether the server refused every valid tool call it was sent (a server started wrong, one
/// that denies everything, or values init drafted that it refuses: `dropped` calls were refused
/// on those and not kept): the report says so.
fn refused_everything(drafted: &[Drafted], dropped: usize) -> bool {
    let valid: Vec<&Drafted> = (drafted.iter())
        .filter(|d| matches!(d.probe.request, CallSpec::Tool { .. }))
        .filter(|d| !d.probe.malformed && !d.probe.id.ends_with("-wrong-type"))
        .collect();
    (dropped > 0 || !valid.is_empty()) && valid.iter().all(|d| refused(&d.expect))
}

/// The values init chose for a valid call (`probe.chosen`) that its refusal `text` names: the
/// value itself, or the argument's name (the tool's own name taken out of the text first, so
/// `time` is not found in `convert_time`). Empty: the refusal is the server's own.
pub(super) fn refused_on_drafted(probe: &Probe, text: &str) -> Vec<(String, Value)> {
    let CallSpec::Tool { name, .. } = &probe.request else {
        return Vec::new();
    };
    if probe.malformed {
        return Vec::new();
    }
    let text = text.to_lowercase().replace(&name.to_lowercase(), " ");
    let word = |w: &str| {
        let w = regex::escape(&w.to_lowercase());
        regex::Regex::new(&format!(r"(^|[^a-z0-9_]){w}($|[^a-z0-9_])"))
            .is_ok_and(|re| re.is_match(&text))
    };
    (probe.chosen.iter())
        .filter(|(arg, value)| {
            let shown = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            word(arg) || (shown.chars().count() >= 2 && word(&shown))
        })
        .cloned()
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_refusal_is_init_s_doing_when_it_names_a_drafted_value_or_its_argument() {
        let probe = Probe {
            id: "call-convert-time".into(),
            request: CallSpec::Tool {
                name: "convert_time".into(),
                args: json!({"time": "example", "zone": "Europe/Paris"})
                    .as_object()
                    .cloned()
                    .unwrap(),
            },
            why: String::new(),
            writes: false,
            malformed: false,
            chosen: vec![("time".into(), json!("example"))],
        };
        let named = |text: &str| refused_on_drafted(&probe, text);
        assert_eq!(
            named("Invalid time: 'example'"),
            [("time".into(), json!("example"))]
        );
        assert_eq!(
            named("1 validation error: time should match HH:MM").len(),
            1
        );
        // The tool's own name holds `time`: not a mention of the argument.
        assert!(named("Error executing tool convert_time: access denied").is_empty());
        assert!(
            named("examples are not allowed here").is_empty(),
            "a whole word only"
        );
        let mut schema_given = probe.clone();
        schema_given.chosen.clear();
        assert!(refused_on_drafted(&schema_given, "Invalid time: 'example'").is_empty());
    }
}
