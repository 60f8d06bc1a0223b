//! What `mcpeval init` writes of the model tasks: the kept ones (`DIR/tasks/models.yaml`), the
//! rejected ones with their reasons (`DIR/rejected.yaml`), and the report's section on both.

use std::collections::BTreeMap;

use super::model_tasks::ModelOutcome;
use super::models::{ModelDraft, Purpose};
use super::write::Files;

/// Who verified, in words: the simulator is named as such.
fn verifier_words(m: &ModelOutcome) -> String {
    match m.simulated {
        true => format!(
            "`{}`, mcpeval's simulated model, not a real one: run `mcpeval init --force --host \
             openai:MODEL` (or anthropic:MODEL) to keep what a real model passes",
            m.host
        ),
        false => format!("`{}`", m.host),
    }
}

fn writer_words(m: &ModelOutcome) -> String {
    match &m.writer {
        Some(w) => format!("written by the writer host `{w}`"),
        None => "templated from each tool's description and input schema (no writer host)".into(),
    }
}

/// `tasks/models.yaml`: a header (who wrote, who verified), then the kept tasks.
pub fn models_yaml(m: &ModelOutcome, server: &str) -> String {
    let mut out = format!(
        "# Model tasks drafted by `mcpeval init` from {server}, {}.\n\
         # Verified by {}: each was kept because it passed {} of its trials against this server.\n\
         # A task expects the call a request needs and the arguments it must carry; `kind: \
         no-tool`\n# tasks expect no call; `forbidden_tools` names a tool whose description \
         overlaps.\n",
        writer_words(m),
        verifier_words(m),
        keep_words(m),
    );
    for (draft, passed) in &m.kept {
        let comment = format!(
            "{}; {}; passed {}/{} trials",
            draft.purpose.words(),
            draft.origin.words(),
            passed.passed,
            passed.trials
        );
        out.push('\n');
        out.push_str(&draft.yaml(&comment));
    }
    out
}

fn keep_words(m: &ModelOutcome) -> String {
    let trials: Vec<u32> = m.kept.iter().map(|(_, p)| p.trials).collect();
    match trials.iter().max() {
        Some(n) => format!("enough (of {n})"),
        None => "enough".into(),
    }
}

/// `rejected.yaml`: each draft not kept, as a task a user may fix and move into the suite,
/// with the stage, the reason and the model's calls above it; a writer's answer that was no
/// task at all is a comment.
pub fn rejected_yaml(m: &ModelOutcome, server: &str) -> String {
    let mut out = format!(
        "# Model tasks `mcpeval init` drafted from {server} and did not keep, each with the\n\
         # reason. Verified by {}. This file is outside the suite: nothing here is run.\n\
         # Fix a task and move it into tasks/ to use it.\n",
        verifier_words(m)
    );
    if m.rejected.is_empty() {
        out.push_str("[]\n");
    }
    for r in &m.rejected {
        let mut comment = format!("rejected by {}: {}", r.stage.as_str(), r.reason);
        for call in &r.calls {
            comment.push_str(&format!("\nthe model called: {call}"));
        }
        out.push('\n');
        match &r.draft {
            Some(d) => out.push_str(&d.yaml(&format!(
                "{comment}\n{}; {}",
                d.purpose.words(),
                d.origin.words()
            ))),
            None => {
                if let Some(tool) = &r.tool {
                    comment.push_str(&format!("\nfor the tool `{tool}`"));
                }
                for line in comment.lines() {
                    out.push_str(&format!("# {line}\n"));
                }
            }
        }
    }
    out
}

/// The report's section: per tool kept and rejected, the tools with none, the cost; or, when
/// nothing was verified, how many were drafted and where they are (`unverified` of them).
pub fn report_section(files: &Files, m: &ModelOutcome, unverified: usize) -> String {
    if !m.verified {
        let mut out = format!(
            "## Model tasks\n\n{unverified} model task(s) drafted ({}) and **not verified**, \
             in `{}` (outside the suite); {} rejected before any trial (`{}`).\n",
            writer_words(m),
            files.unverified.display(),
            m.rejected.len(),
            files.rejected.display(),
        );
        for note in &m.notes {
            out.push_str(&format!("\nNote: {note}\n"));
        }
        out.push('\n');
        return out;
    }
    let kept_in = match m.kept.is_empty() {
        true => "(none kept, so no file)".to_owned(),
        false => format!("`{}`", files.models.display()),
    };
    let mut out = format!(
        "## Model tasks\n\n{} model task(s) kept in {}, {} rejected (`{}`). Drafts {}; \
         verified by {}.\n\n",
        m.kept.len(),
        kept_in,
        m.rejected.len(),
        files.rejected.display(),
        writer_words(m),
        verifier_words(m),
    );
    out.push_str("| tool | kept | rejected | kept tasks |\n| --- | --- | --- | --- |\n");
    let mut rows: BTreeMap<String, (usize, usize, Vec<String>)> = BTreeMap::new();
    for t in &m.tools {
        rows.insert(t.clone(), Default::default());
    }
    let key = |d: &ModelDraft| match (&d.tool, &d.purpose) {
        (Some(t), _) => t.clone(),
        (None, _) => "(no tool)".to_owned(),
    };
    for (d, _) in &m.kept {
        let row = rows.entry(key(d)).or_default();
        row.0 += 1;
        row.2.push(format!("`{}`", d.id));
    }
    for r in &m.rejected {
        let name = (r.draft.as_ref().map(key))
            .or_else(|| r.tool.clone())
            .unwrap_or_else(|| "(no tool)".to_owned());
        rows.entry(name).or_default().1 += 1;
    }
    for (tool, (kept, rejected, ids)) in &rows {
        out.push_str(&format!(
            "| `{tool}` | {kept} | {rejected} | {} |\n",
            ids.join(", ")
        ));
    }
    let none: Vec<String> = (m.tools.iter())
        .filter(|t| rows.get(*t).is_none_or(|r| r.0 == 0))
        .map(|t| format!("`{t}`"))
        .collect();
    out.push_str(&match none.is_empty() {
        true => "\nEvery tool has a kept model task.\n".to_owned(),
        false => format!("\nTools with no kept model task: {}.\n", none.join(", ")),
    });
    let pairs = (m.kept.iter().map(|(d, _)| d))
        .chain(m.rejected.iter().filter_map(|r| r.draft.as_ref()))
        .filter(|d| matches!(d.purpose, Purpose::Confusion { .. }))
        .count();
    if pairs > 0 {
        out.push_str(&format!(
            "{pairs} confusion-pair task(s) drafted (tools whose descriptions overlap).\n"
        ));
    }
    out.push_str(&format!(
        "\nVerification cost: {} trial(s), {} input and {} output tokens of `{}`",
        m.trials, m.input_tokens, m.output_tokens, m.host
    ));
    if m.writer.is_some() {
        out.push_str(&format!(
            "; the writer host: {} input and {} output tokens",
            m.writer_input_tokens, m.writer_output_tokens
        ));
    }
    out.push_str(".\n");
    for note in &m.notes {
        out.push_str(&format!("\nNote: {note}\n"));
    }
    out.push('\n');
    out
}
