//! The smoke stage: each side starts and answers its lists; the candidate's tool schemas have
//! no portability finding the baseline had not; its descriptions are read for risks
//! (`contract::safety`); the suite's call tasks run.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::{Ctx, Outcome, Stage, StepError, Tasks};
use crate::config::ServerSpec;
use crate::contract::portability::{findings, new_findings, Finding};
use crate::contract::safety::{self, Listing};
use crate::episode::Side;
use crate::job::added::listed;
use crate::job::{Face, RunOutcome, RunRequest, TaskKinds};
use crate::mcp::McpConnection;
use crate::rundir::{Case, StageRecord, StageStatus};

/// What one side answered.
struct Listed {
    tools: Vec<Value>,
    prompts: Vec<Value>,
    instructions: Option<String>,
    counts: [usize; 4],
}

impl Listed {
    /// A stored snapshot's lists, as the baseline (no counts: nothing was asked).
    fn stored(snapshot: crate::contract::Snapshot) -> Self {
        Self {
            instructions: (snapshot.server.get("instructions"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            counts: [0; 4],
            tools: snapshot.tools,
            prompts: snapshot.prompts,
        }
    }

    fn listing(&self) -> Listing<'_> {
        Listing {
            tools: &self.tools,
            prompts: &self.prompts,
            instructions: self.instructions.as_deref(),
        }
    }
}

/// Where the description risks are written, in the check's directory.
const RISKS_JSON: &str = "description-risks.json";

pub(super) async fn run(ctx: &mut Ctx, face: &dyn Face) -> StageRecord {
    let mut out = Outcome::new(Stage::Smoke);
    let dir = ctx.dir.join("smoke");
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return out.end(
            StageStatus::Error,
            format!("cannot create `{}`: {e}", dir.display()),
        );
    }
    out.output(&dir, &ctx.dir);
    let mut baseline = None;
    if let Some(spec) = ctx.baseline.clone() {
        match list(ctx, &spec, "baseline").await {
            Ok(listed) => {
                out.line(answered("baseline", &spec, &listed));
                baseline = Some(listed);
            }
            Err(why) => {
                out.line(format!(
                    "- baseline `{}` did not answer: {why}",
                    spec.display()
                ));
                return out.end(
                    StageStatus::Error,
                    format!("the baseline server did not answer: {why}"),
                );
            }
        }
    } else if let Some(stored) = &ctx.settings.stored {
        match crate::contract::Snapshot::read(stored) {
            Ok(snapshot) => baseline = Some(Listed::stored(snapshot)),
            Err(e) => {
                return out.end(
                    StageStatus::Error,
                    format!(
                        "cannot read the stored snapshot: {}",
                        crate::error::chain(&e)
                    ),
                )
            }
        }
    }
    let spec = ctx.candidate.clone();
    let candidate = match list(ctx, &spec, "candidate").await {
        Ok(listed) => {
            out.line(answered("candidate", &spec, &listed));
            out.case(Case::passed("candidate starts and lists"));
            listed
        }
        Err(why) => {
            out.case(Case::failed("candidate starts and lists", why.to_string()));
            out.line(format!(
                "- candidate `{}` did not answer: {why}",
                spec.display()
            ));
            return out.judged(format!("the candidate did not start or list: {why}"));
        }
    };
    let fresh = portability(baseline.as_ref(), &candidate, &mut out);
    let risks = description_risks(ctx, baseline.as_ref(), &candidate, &mut out);
    let (calls, not_run) = call_tasks(ctx, face, &mut out).await;
    let summary = format!(
        "{} tools, {fresh} new portability finding(s){risks}{calls}",
        candidate.tools.len(),
    );
    match not_run {
        true => out.end(StageStatus::Error, summary),
        false => out.judged(summary),
    }
}

const INFRA: &str = "the call tasks could not be run";

/// Lists the candidate's schema portability findings, each new one (the baseline had it not) a
/// failed case; returns how many are new.
fn portability(baseline: Option<&Listed>, candidate: &Listed, out: &mut Outcome) -> usize {
    let found = findings(&candidate.tools);
    let before: Vec<Finding> = baseline.map(|b| findings(&b.tools)).unwrap_or_default();
    let fresh = new_findings(&before, &found);
    out.line(format!(
        "- schema portability: {} finding(s) on the candidate, {} new",
        found.len(),
        fresh.len()
    ));
    for f in &found {
        let new = fresh.contains(f);
        out.line(format!(
            "  - {}`{}` {}: {}",
            if new { "**new** " } else { "" },
            f.tool,
            f.rule,
            f.message
        ));
        let name = format!("portability {} {}", f.tool, f.rule);
        out.case(match new {
            true => Case::failed(name, f.message.clone()),
            false => Case::passed(name),
        });
    }
    fresh.len()
}

fn to_json(item: &impl serde::Serialize) -> Value {
    serde_json::to_value(item).unwrap_or_default()
}

/// Reads the candidate's descriptions, titles, parameter and prompt descriptions and
/// instructions for risks; those the baseline had on the same field are listed as such and
/// never fail; the others fail the stage with `fail_on_description_risks`. Writes them all to
/// `smoke/description-risks.json` and returns the words for the stage's summary.
fn description_risks(
    ctx: &Ctx,
    baseline: Option<&Listed>,
    candidate: &Listed,
    out: &mut Outcome,
) -> String {
    let strict = ctx.settings.fail_on_description_risks;
    let found = safety::scan(&candidate.listing());
    let before = baseline
        .map(|b| safety::scan(&b.listing()))
        .unwrap_or_default();
    let marked = safety::new_findings(&before, &found);
    let new = marked.iter().filter(|(_, new)| *new).count();
    let file = ctx.dir.join("smoke").join(RISKS_JSON);
    let rows: Vec<Value> = (marked.iter())
        .map(|(f, new)| {
            let mut row = to_json(*f);
            row["new"] = Value::Bool(*new);
            row
        })
        .collect();
    let read = safety::texts_read(&candidate.listing());
    let json = serde_json::json!({
        "failOnDescriptionRisks": strict,
        "textsRead": read,
        "new": new,
        "alsoInBaseline": found.len() - new,
        "findings": rows,
    });
    let written = serde_json::to_string_pretty(&json)
        .map_err(std::io::Error::other)
        .and_then(|text| std::fs::write(&file, text + "\n"));
    out.line(format!(
        "- description safety: {read} text(s) read on the candidate, {} finding(s), {new} new \
         (`smoke/{RISKS_JSON}`{})",
        found.len(),
        match written {
            Ok(()) => String::new(),
            Err(e) => format!(": not written: {e}"),
        }
    ));
    for (f, is_new) in &marked {
        out.line(format!(
            "  - {}{} `{}` {} at char {}: {} — `{}`{}",
            if *is_new { "**new** " } else { "" },
            f.subject(),
            f.field,
            f.rule.name(),
            f.offset,
            f.message,
            f.excerpt.replace('`', "'"),
            if *is_new {
                ""
            } else {
                " (also in the baseline)"
            }
        ));
        let name = format!("description {} {} {}", f.subject(), f.field, f.rule.name());
        out.case(match is_new & strict {
            true => Case::failed(name, f.message.clone()),
            false => Case::passed(name),
        });
    }
    match (new, strict) {
        (0, _) => String::new(),
        (_, true) => format!(", {new} new description risk(s) (fail_on_description_risks)"),
        (_, false) => format!(
            ", {new} new description risk(s) (reported only: --fail-on-description-risks fails \
             on them)"
        ),
    }
}

fn answered(side: &str, spec: &ServerSpec, listed: &Listed) -> String {
    let [t, r, rt, p] = listed.counts;
    format!(
        "- {side} `{}` answered: {t} tools, {r} resources, {rt} resource templates, {p} prompts",
        spec.display()
    )
}

/// Starts the server, lists everything, closes it and keeps what it wrote on stderr.
async fn list(ctx: &mut Ctx, spec: &ServerSpec, side: &'static str) -> Result<Listed, StepError> {
    let conn = McpConnection::connect(spec)
        .await
        .map_err(|e| crate::error::chain(&e))?;
    let listed = async {
        let tools = conn.list_tools().await?;
        let resources = conn.list_resources().await?.len();
        let templates = conn.list_resource_templates().await?.len();
        let prompts = conn.list_prompts().await?;
        let to_values = |items: Vec<Value>| -> Vec<Value> {
            items.iter().map(crate::contract::normalize).collect()
        };
        let tools = to_values(tools.iter().map(to_json).collect());
        let prompts = to_values(prompts.iter().map(to_json).collect());
        Ok::<_, crate::mcp::McpError>(Listed {
            counts: [tools.len(), resources, templates, prompts.len()],
            tools,
            prompts,
            instructions: conn.server_info().instructions.clone(),
        })
    }
    .await;
    let stderr = conn.close_reading_stderr().await;
    let _ = std::fs::write(
        ctx.dir.join("smoke").join(format!("{side}.stderr.txt")),
        &stderr,
    );
    ctx.stderr.insert(side, stderr);
    listed.map_err(|e| StepError::from(crate::error::chain(&e)))
}

/// Runs the suite's call tasks (both sides) into `smoke/calls/`; says what came of it, and
/// whether they could not be run (the stage's `error`).
async fn call_tasks(ctx: &Ctx, face: &dyn Face, out: &mut Outcome) -> (String, bool) {
    let count = match &ctx.tasks {
        Tasks::NoSuite => {
            out.line("- call tasks: no task suite given (--suite)");
            return (String::new(), false);
        }
        Tasks::Counted { calls: 0, .. } => {
            out.line("- call tasks: the suite has none");
            return (String::new(), false);
        }
        Tasks::Counted {
            calls,
            expected_to_fail,
            ..
        } => (*calls, expected_to_fail.clone()),
    };
    let (count, expected_to_fail) = count;
    if ctx.baseline.is_none() {
        out.line(format!(
            "- call tasks: {count} not run: they need a baseline server, and the baseline is a \
             stored snapshot"
        ));
        return (
            format!("; {count} call task(s) not run (no baseline server)"),
            false,
        );
    }
    let calls_dir = ctx.dir.join("smoke").join("calls");
    if ctx.resume {
        // The stage runs again whole: its call tasks are cheap, and an earlier attempt's
        // episodes would keep the new run from starting.
        let _ = std::fs::remove_dir_all(&calls_dir);
    }
    let request = RunRequest {
        overrides: ctx.run_overrides(),
        out: Some(calls_dir.clone()),
        no_step_summary: true,
        kinds: TaskKinds::Calls,
        ..RunRequest::default()
    };
    match crate::job::run(&request, crate::job::Stop::default(), face).await {
        Ok(RunOutcome::Finished(finished)) => {
            let exit = finished.exit();
            let regressions = super::regressed_tasks(&finished.end.comparison);
            let alone = &finished.end.info.candidate_only_tasks;
            out.line(format!(
                "- call tasks: {count} run (`smoke/calls/`), {} on both sides: {} regression(s)",
                count - alone.len(),
                regressions.len(),
            ));
            out.lines(listed(&regressions, "  - regressed: "));
            if !alone.is_empty() {
                out.line(format!(
                    "  - {} call task(s) use tools added in the candidate: run and judged on the \
                     candidate alone",
                    alone.len()
                ));
                out.lines(listed(alone, "    - "));
            }
            let not_run = match exit {
                crate::error::Exit::Ok => {
                    out.case(Case::passed("call tasks"));
                    false
                }
                crate::error::Exit::Regression => {
                    out.case(Case::failed(
                        "call tasks",
                        format!("regressions: {}", regressions.join(", ")),
                    ));
                    false
                }
                _ => {
                    out.case(Case::failed("call tasks", INFRA));
                    true
                }
            };
            let mut summary = format!(
                "; {count} call task(s), {} regression(s)",
                regressions.len()
            );
            if !alone.is_empty() {
                summary.push_str(&format!(
                    ", {} using tools added in the candidate",
                    alone.len()
                ));
            }
            summary.push_str(&broken_baseline(&calls_dir, &expected_to_fail, out));
            (summary, not_run)
        }
        Ok(RunOutcome::Skipped(_)) => (String::new(), false),
        Err(e) => {
            out.line(format!(
                "- call tasks: not run: {}",
                crate::error::chain(&e)
            ));
            out.case(Case::failed("call tasks", INFRA));
            ("; the call tasks could not be run".into(), true)
        }
    }
}

/// The call tasks the baseline failed on every trial: each a failed case, unless the task says
/// `expected_to_fail: true`. A baseline that fails is most often a server started wrong, and the
/// candidate's answers would read as improvements. Returns the words for the stage's line.
fn broken_baseline(dir: &Path, expected_to_fail: &[String], out: &mut Outcome) -> String {
    let mut tasks: BTreeMap<String, (u32, Option<String>)> = BTreeMap::new();
    let scanned = crate::rundir::scan_episodes(dir, |e| {
        if e.side != Side::Baseline || e.kind.has_model() {
            return;
        }
        let (passed, first) = tasks.entry(e.task_id.clone()).or_default();
        match e.success && e.infra_error.is_none() {
            true => *passed += 1,
            false => {
                first.get_or_insert_with(|| first_failure(&e));
            }
        }
    });
    if let Err(e) = scanned {
        out.line(format!(
            "- call tasks: the baseline's episodes could not be read: {}",
            crate::error::chain(e.as_ref())
        ));
        return String::new();
    }
    let total = tasks.len();
    let mut broken = Vec::new();
    for (task, (passed, first)) in tasks {
        let Some(first) = first.filter(|_| passed == 0) else {
            continue;
        };
        if expected_to_fail.contains(&task) {
            out.line(format!(
                "  - {task}: the baseline failed it, as `expected_to_fail: true` says: {first}"
            ));
            continue;
        }
        out.case(Case::failed(
            format!("baseline passes {task}"),
            format!("the baseline failed every trial: {first}"),
        ));
        broken.push((task, first));
    }
    let items: Vec<String> = (broken.iter())
        .map(|(task, first)| format!("**{task}: the baseline failed every trial**: {first}"))
        .collect();
    out.lines(listed(&items, "  - "));
    let Some((first_task, first)) = broken.first() else {
        return String::new();
    };
    format!(
        "; the baseline failed {} of {total} call task(s) it ran, none marked \
         `expected_to_fail` (check the servers' setup); first failure, {first_task}: {first}",
        broken.len(),
    )
}

/// What went wrong in a failed episode, in one short line: the infrastructure error, the error
/// the server answered, or the failed checks.
fn first_failure(e: &crate::episode::Episode) -> String {
    let text = if let Some(error) = &e.infra_error {
        error.clone()
    } else if let Some(call) = e.calls.iter().find(|c| c.is_error) {
        format!("`{}` answered an error: {}", call.tool, call.result)
    } else {
        match e.grade.failure_summary() {
            s if s.is_empty() => "failed".to_owned(),
            s => s,
        }
    };
    excerpt(&text)
}

/// The first line of `text`, at most 160 characters.
fn excerpt(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    match line.char_indices().nth(160) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}
