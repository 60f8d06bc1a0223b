//! `mcpeval init`: the flags turned into an init request, and what was drafted shown.

use super::args::InitArgs;
use super::out::outln;
use crate::config::{config_allows_writes, resolve_server, with_write_flags, ConfigError};
use crate::error::{Exit, Failure};
use crate::job::init::model_tasks::ModelOutcome;
use crate::job::init::{init as draft, nothing_new, state_lines, Files, InitRequest, Report};

/// Drafts the suite and prints a summary: the files, the tasks, what was left out.
pub async fn init(args: &InitArgs) -> Result<Exit, Failure> {
    let mut server = resolve_server(args.config.as_deref(), &args.server, &[])?;
    let writes = args.writes.to_flags();
    with_write_flags(&mut server, &writes).map_err(ConfigError::from)?;
    let allow_writes = writes.allow_writes || config_allows_writes(args.config.as_deref())?;
    let timeout = server.call_timeout;
    let request = InitRequest {
        server,
        label: args.server.clone(),
        out: args.out.clone(),
        include_writes: args.include_writes,
        writes,
        allow_writes,
        force: args.force,
        timeout,
        config: args.config.clone(),
        host: args.host.clone(),
        writer_host: args.writer_host.clone(),
        verify_trials: args.verify_trials,
        keep_at: args.keep_at,
        no_models: args.no_models,
        no_ci: args.no_ci,
        update: args.update,
        only_tools: None,
    };
    let done = draft(&request).await?;
    let report = &done.report;
    outln!("init: {}", report.server);
    if let Some(update) = &report.ci.update {
        outln!("covered by the suite already: {}", words(&update.covered));
        outln!("not covered yet: {}", words(&update.new));
        if nothing_new(Some(update), report) {
            for left in &report.left_out {
                outln!("left out: {}: {}", left.what, left.why);
            }
            outln!("nothing new to draft: nothing written");
            return Ok(Exit::Ok);
        }
    }
    outln!(
        "{} call task(s), verified (each passed a third call; {} malformed on purpose, for the \
         error semantics) -> {}",
        report.drafted.len(),
        report.malformed(),
        done.files.calls.display()
    );
    if let Some(m) = &report.models {
        model_lines(m, &done.files, report);
    }
    for left in &report.left_out {
        outln!("left out: {}: {}", left.what, left.why);
    }
    for line in state_lines(&done.files, report) {
        outln!("{line}");
    }
    if let Some((head, rest)) = crate::job::init::refused_words(report) {
        let head = head.to_lowercase();
        match report.refused_values.is_empty() {
            true => outln!("{head} (an error answer): the call tasks pin the refusals"),
            false => outln!("{head}{rest}"),
        }
    }
    for note in &report.notes {
        outln!("note: {note}");
    }
    ci_lines(&report.ci);
    outln!("report -> {}", done.files.report.display());
    outln!(
        "next: mcpeval tasks check --suite {} {}",
        done.files.suite().display(),
        report.server_args(&done.files)
    );
    if !report.ci.written.is_empty() {
        outln!(
            "next: mcpeval check --config {} (with --host openai:MODEL for the evaluation)",
            done.files.ci.config.display()
        );
    }
    Ok(Exit::Ok)
}

/// The model tasks' lines: kept and rejected, or drafted and not verified; the notes.
fn model_lines(m: &ModelOutcome, files: &Files, report: &Report) {
    let writer = match &m.writer {
        Some(w) => format!("written by {w}"),
        None => "templated".to_owned(),
    };
    if let Some(m) = Some(m).filter(|m| !m.verified) {
        outln!(
            "{} model task(s) drafted, not verified -> {}; {} rejected -> {} ({})",
            report.unverified.models.len(),
            files.unverified.display(),
            m.rejected.len(),
            files.rejected.display(),
            writer,
        );
        for note in &m.notes {
            outln!("note: {note}");
        }
    }
    if let Some(m) = Some(m).filter(|m| m.verified) {
        let trust = match m.simulated {
            true => format!("{writer} and not verified by a real model"),
            false => "verified".to_owned(),
        };
        outln!(
            "{} model task(s) kept, {trust} -> {}; {} rejected -> {} ({}, verified by {}{} over \
             {} trial(s))",
            m.kept.len(),
            files.models.display(),
            m.rejected.len(),
            files.rejected.display(),
            writer,
            m.host,
            if m.simulated {
                ", the simulated model"
            } else {
                ""
            },
            m.trials
        );
        let none: Vec<&str> = (m.tools.iter())
            .filter(|t| {
                !m.kept
                    .iter()
                    .any(|(d, _)| d.tool.as_deref() == Some(t.as_str()))
            })
            .map(String::as_str)
            .collect();
        if !none.is_empty() {
            outln!("no kept model task for: {}", none.join(", "));
        }
    }
    if !m.todo.is_empty() {
        let tools: Vec<&str> = m.todo.iter().map(|t| t.tool.as_str()).collect();
        outln!(
            "{} TODO stub(s) -> {}: init could not draft a sensible model task for {} (the \
             report says why): write the request and move it into {}",
            m.todo.len(),
            files.todo.display(),
            tools.join(", "),
            files.suite().display()
        );
    }
    if let Some(m) = Some(m).filter(|m| m.verified) {
        for note in &m.notes {
            outln!("note: {note}");
        }
    }
}

/// The CI files written, the expected failures, what is left to do.
fn ci_lines(ci: &crate::job::init::CiReport) {
    for (path, what) in &ci.written {
        outln!("{what} -> {}", path.display());
    }
    if let Some(failures) = &ci.expected_failures {
        outln!("expected failures: {failures}");
    }
    if let Some(todo) = &ci.todo {
        outln!("to do: {todo}");
    }
}

fn words(tools: &[String]) -> String {
    match tools.is_empty() {
        true => "none".to_owned(),
        false => tools.join(", "),
    }
}
