//! What `explain` writes: `explain/attribution.csv` and `.json`, `explain/summary.md`, and the
//! terminal's one line per explained task.

use std::path::Path;

use polars_core::prelude::*;
use serde::Serialize;

use super::attribute::{Attributed, Row};
use crate::rundir::{col, write_csv};

pub const ATTRIBUTION_CSV: &str = "attribution.csv";
pub const ATTRIBUTION_JSON: &str = "attribution.json";

/// Everything `explain` found, as `attribution.json` keeps it.
#[derive(Debug, Clone, Serialize)]
pub struct Attribution {
    /// The run explained.
    pub run_id: String,
    /// The diff whose changes were tried.
    pub diff: String,
    /// The trial budget, the trials run for it and the trials taken from earlier invocations.
    pub budget: u64,
    pub trials_spent: u64,
    /// One line per set of trials tried (`01-instructions: 4 task(s) × 1 host × 10 trials`).
    pub tried: Vec<String>,
    /// One line per change the budget left untried.
    pub skipped: Vec<String>,
    pub rows: Vec<Row>,
    /// The call tasks that regressed, left to the diff: no model chose their calls.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub call_tasks: Vec<String>,
}

/// The line on the call tasks a run regressed on, if any: `explain` leaves them to the diff.
pub fn calls_line(call_tasks: &[String]) -> Option<String> {
    const NAMED: usize = 3;
    let named: Vec<&str> = call_tasks.iter().take(NAMED).map(String::as_str).collect();
    let more = match call_tasks.len().saturating_sub(NAMED) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    (!call_tasks.is_empty()).then(|| {
        format!(
            "{} call task(s) regressed ({}{more}): their results are the server's answers, not \
             a model's choice, so no revert is tried on them; the diff's changes to error \
             semantics and schemas are what to read.",
            call_tasks.len(),
            named.join(", ")
        )
    })
}

/// Writes `dir/explain/attribution.csv`, `attribution.json` and `summary.md`.
pub fn write(dir: &Path, attribution: &Attribution) -> anyhow::Result<()> {
    let out = dir.join("explain");
    std::fs::create_dir_all(&out)?;
    write_csv(&mut frame(&attribution.rows)?, &out.join(ATTRIBUTION_CSV))?;
    let mut json = serde_json::to_string_pretty(attribution)?;
    json.push('\n');
    std::fs::write(out.join(ATTRIBUTION_JSON), json)?;
    std::fs::write(out.join("summary.md"), summary(attribution))?;
    let why = format!(
        "{}\n`explain/summary.md` has every change tried, `explain/attribution.csv` every row.\n",
        section(attribution)
    );
    std::fs::write(out.join(crate::report::WHY_MD), why)?;
    crate::report::refresh_sections(dir)
}

fn frame(rows: &[Row]) -> PolarsResult<DataFrame> {
    macro_rules! field {
        ($f:expr) => {
            rows.iter().map($f).collect::<Vec<_>>()
        };
    }
    DataFrame::new_infer_height(vec![
        col("task_id", field!(|r| r.task_id.as_str())),
        col("host", field!(|r| r.host.as_str())),
        col("metric", field!(|r| r.metric.as_str())),
        col("list", field!(|r| r.list.as_str())),
        col("name", field!(|r| r.name.as_str())),
        col("path", field!(|r| r.path.as_deref())),
        col("kind", field!(|r| r.kind.as_str())),
        col("tried", field!(|r| r.tried)),
        col("baseline", field!(|r| r.baseline)),
        col("baseline_trials", field!(|r| r.baseline_trials)),
        col("candidate", field!(|r| r.candidate)),
        col("candidate_trials", field!(|r| r.candidate_trials)),
        col("reverted", field!(|r| r.reverted)),
        col("reverted_trials", field!(|r| r.reverted_trials)),
        col("p", field!(|r| r.p)),
        col("p_holm", field!(|r| r.p_holm)),
        col("verdict", field!(|r| r.verdict.as_str())),
        col("together_with", field!(|r| r.together_with.join("; "))),
        col("reason", field!(|r| r.reason.as_str())),
        col("overlay", field!(|r| r.overlay.as_deref())),
    ])
}

/// A mean as the tables show it: `7/10` for a rate with its trials, else the number.
fn shown(mean: Option<f64>, trials: u32, metric: crate::config::Metric) -> String {
    match (mean, metric) {
        (Some(m), crate::config::Metric::Success) => {
            format!("{}/{trials}", (m * f64::from(trials)).round())
        }
        (Some(m), _) => format!("{m:.1} over {trials}"),
        (None, _) => "–".to_owned(),
    }
}

fn p_text(p: Option<f64>) -> String {
    crate::report::format_p(p)
}

/// One line per explained target and metric, for the terminal and the summaries:
/// `delete-issue-4: explained by instructions_changed (reverted 10/10 vs candidate 0/10, …)`.
pub fn lines(rows: &[Row]) -> Vec<String> {
    let mut keys: Vec<(&str, &str, crate::config::Metric)> = Vec::new();
    for r in rows {
        let key = (r.task_id.as_str(), r.host.as_str(), r.metric);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let hosts: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.host.as_str()).collect();
    // One line per task and host, on its first metric (success where it regressed); the other
    // metrics are named after it.
    let mut primary: Vec<(&str, &str, crate::config::Metric)> = Vec::new();
    for &(t, h, m) in &keys {
        if !primary.iter().any(|(pt, ph, _)| *pt == t && *ph == h) {
            primary.push((t, h, m));
        }
    }
    let others = |task: &str, host: &str, first: crate::config::Metric| -> Vec<&str> {
        (keys.iter())
            .filter(|(t, h, m)| *t == task && *h == host && *m != first)
            .map(|(_, _, m)| m.as_str())
            .collect()
    };
    primary
        .into_iter()
        .map(|(task, host, metric)| {
            let of: Vec<&Row> = (rows.iter())
                .filter(|r| r.task_id == task && r.host == host && r.metric == metric)
                .collect();
            let on = match hosts.len() {
                1 => String::new(),
                _ => format!(" on {host}"),
            };
            let what = match metric {
                crate::config::Metric::Success => String::new(),
                m => format!(" ({})", m.as_str()),
            };
            let also = match others(task, host, metric).as_slice() {
                [] => String::new(),
                more => format!(" [also regressed: {}: attribution.csv]", more.join(", ")),
            };
            format!("{task}{on}{what}: {}{also}", verdict_words(&of))
        })
        .collect()
}

/// What one target's rows come to, in words.
fn verdict_words(rows: &[&Row]) -> String {
    let said = |r: &Row| {
        let done = match r.tried == "reversed_order" {
            true => "reversed",
            false => "reverted",
        };
        format!(
            "{} ({done} {} vs candidate {}, p_holm {})",
            r.change_label(),
            shown(r.reverted, r.reverted_trials, r.metric),
            shown(r.candidate, r.candidate_trials, r.metric),
            p_text(r.p_holm)
        )
    };
    let of = |v: Attributed| -> Vec<&Row> {
        let mut found: Vec<&Row> = rows.iter().copied().filter(|r| r.verdict == v).collect();
        found.sort_by(|a, b| (b.reverted.unwrap_or(0.0)).total_cmp(&a.reverted.unwrap_or(0.0)));
        found
    };
    // At most this many changes named per task; attribution.csv has them all.
    const NAMED: usize = 3;
    let named = |rows: &[&Row]| {
        let mut all: Vec<String> = rows.iter().take(NAMED).map(|r| said(r)).collect();
        if rows.len() > NAMED {
            all.push(format!("{} more (attribution.csv)", rows.len() - NAMED));
        }
        all.join("; and by ")
    };
    let explains = of(Attributed::Explains);
    if !explains.is_empty() {
        let combined = explains.iter().any(|r| r.tried == "only_this");
        let how = if combined {
            "explained in combination by"
        } else {
            "explained by"
        };
        return format!("{how} {}", named(&explains));
    }
    let partly = of(Attributed::Partly);
    if !partly.is_empty() {
        return format!("partly explained by {}", named(&partly));
    }
    let tried = rows.iter().filter(|r| r.tried != "none").count();
    let skipped = (rows.iter())
        .filter(|r| r.reason.starts_with("skipped"))
        .count();
    match (tried, skipped) {
        (0, 0) => "no change of the diff could be undone on it".to_owned(),
        (0, _) => format!("nothing tried: {skipped} change(s) skipped for the budget"),
        _ => format!(
            "no single change explains it ({tried} tried{})",
            match skipped {
                0 => String::new(),
                n => format!(", {n} skipped for the budget"),
            }
        ),
    }
}

/// `explain/summary.md`: the lines, what was tried and skipped, and the table of tried changes.
pub fn summary(a: &Attribution) -> String {
    let mut md = format!("# Why it regressed: run `{}`\n\n", a.run_id);
    md.push_str(&section(a));
    md.push_str("\n## Every change tried\n\n");
    md.push_str("| task | host | metric | change | tried | reverted | candidate | baseline | p_holm | verdict | together with |\n");
    md.push_str("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for r in a.rows.iter().filter(|r| r.tried != "none") {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.task_id,
            r.host,
            r.metric.as_str(),
            r.change_label(),
            r.tried,
            shown(r.reverted, r.reverted_trials, r.metric),
            shown(r.candidate, r.candidate_trials, r.metric),
            shown(r.baseline, r.baseline_trials, r.metric),
            p_text(r.p_holm),
            r.verdict.as_str(),
            r.together_with.join("; ")
        ));
    }
    let untried = a.rows.iter().filter(|r| r.tried == "none").count();
    md.push_str(&format!(
        "\n{untried} (task, change) pair(s) not tried: `attribution.csv` has each with its \
         reason.\n"
    ));
    md
}

/// What `--order` found, in one line: the tasks whose regression follows the tools' positions
/// (the candidate's list reversed recovers them, on each task's first regressed metric), or
/// that none does. `None` without `--order`.
pub fn order_line(rows: &[Row]) -> Option<String> {
    // Each task's first metric (the rows come in target order: success where it regressed).
    let mut reversed: Vec<&Row> = Vec::new();
    for r in rows.iter().filter(|r| r.tried == "reversed_order") {
        if !reversed
            .iter()
            .any(|f| f.task_id == r.task_id && f.host == r.host)
        {
            reversed.push(r);
        }
    }
    if reversed.is_empty() {
        return None;
    }
    let follows: Vec<String> = (reversed.iter())
        .filter(|r| matches!(r.verdict, Attributed::Explains | Attributed::Partly))
        .map(|r| {
            let what = match r.metric {
                crate::config::Metric::Success => String::new(),
                m => format!("{} ", m.as_str()),
            };
            format!(
                "{} ({what}{} reversed vs {} as served)",
                r.task_id,
                shown(r.reverted, r.reverted_trials, r.metric),
                shown(r.candidate, r.candidate_trials, r.metric)
            )
        })
        .collect();
    Some(match follows.as_slice() {
        [] => format!(
            "Tool order: the candidate's list reversed recovered none of {} task(s): their \
             regressions follow the tools' text, not their positions.",
            reversed.len()
        ),
        some => format!(
            "Tool order: {} of {} task(s) follow the tools' positions: {}.",
            some.len(),
            reversed.len(),
            some.join(", ")
        ),
    })
}

/// The "Why" section the run's own summary and report show: one line per task, the budget.
pub fn section(a: &Attribution) -> String {
    let mut md = String::new();
    for line in lines(&a.rows) {
        md.push_str(&format!("- {line}\n"));
    }
    md.push_str(&format!(
        "\nChanges of `{}` tried on the regressed tasks: {} trial(s) of a budget of {}.\n",
        a.diff, a.trials_spent, a.budget
    ));
    for t in &a.tried {
        md.push_str(&format!("- tried {t}\n"));
    }
    for s in &a.skipped {
        md.push_str(&format!("- skipped {s}\n"));
    }
    for line in [order_line(&a.rows), calls_line(&a.call_tasks)]
        .into_iter()
        .flatten()
    {
        md.push_str(&format!("\n{line}\n"));
    }
    md
}
