//! The console's closing verdict table: per task and host, baseline against candidate, the
//! gated verdict coloured when stdout is a terminal (an inconclusive one says which kind it
//! is), then the suite rows and the outcome.

use std::fmt::Write;

use console::Style;

use super::format;
use crate::analysis::{Comparison, Outcome, Row, SUITE};
use crate::analysis::{Scope, Verdict};
use crate::config::Metric;

/// The table as text; `color` adds ANSI colours (the caller decides from the terminal).
pub fn verdict_table(c: &Comparison, color: bool) -> String {
    let paint = |v: Verdict, text: &str| -> String {
        let style = match v {
            Verdict::Regression => Style::new().red().bold(),
            Verdict::Improvement => Style::new().green(),
            Verdict::Inconclusive => Style::new().yellow(),
            Verdict::NoChange => Style::new().dim(),
        };
        style.force_styling(color).apply_to(text).to_string()
    };
    let task_w = c
        .tasks
        .iter()
        .map(|t| t.task_id.len())
        .max()
        .unwrap_or(4)
        .max(5);
    let host_w = c
        .tasks
        .iter()
        .map(|t| t.host.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:task_w$}  {:host_w$}  {:>21}  {:>13}  {:>17}  verdict (gated metrics)",
        "task", "host", "success  base → cand", "calls  b → c", "tokens  b → c"
    );
    for t in &c.tasks {
        let verdict = c.task_verdict(t);
        let means = |m: Metric, w: usize| {
            c.task_rows(&t.task_id, &t.host)
                .find(|r| r.metric == m)
                .map_or("–".into(), |r| {
                    format!(
                        "{:>w$} → {:<w$}",
                        format::value(m, r.baseline_mean),
                        format::value(m, r.candidate_mean)
                    )
                })
        };
        let _ = writeln!(
            out,
            "{:task_w$}  {:host_w$}  {:>10} → {:<8}  {:>13}  {:>17}  {}",
            t.task_id,
            t.host,
            format::successes(&t.baseline),
            format::successes(&t.candidate),
            means(Metric::ToolCalls, 5),
            means(Metric::TotalTokens, 7),
            paint(verdict.verdict, &format::task_verdict_words(c, t))
        );
    }
    // The whole suite's gated rows, and a part's (set, kind) when it moved.
    for r in c.rows.iter().filter(|r| {
        r.task_id == SUITE
            && r.gated
            && r.tested()
            && (r.scope == Scope::Suite
                || matches!(r.verdict, Verdict::Regression | Verdict::Improvement))
    }) {
        let _ = writeln!(
            out,
            "{:<14} {:<13} {:>8} → {:<8} Δ {:<9} {:<18} p_adj {:<8} {}",
            r.scope.as_str(),
            r.metric.as_str(),
            format::value(r.metric, r.baseline_mean),
            format::value(r.metric, r.candidate_mean),
            format::delta(r.metric, r.delta),
            format::interval(r),
            format::p(r.p_adjusted),
            paint(r.verdict, &format::verdict_words(r, c.level.family_alpha))
        );
    }
    let regressions: Vec<&Row> = c.gated_regressions().collect();
    let line = match c.outcome() {
        Outcome::InfraFailure => Style::new()
            .red()
            .bold()
            .force_styling(color)
            .apply_to(format!(
            "INFRASTRUCTURE FAILURE: {} of {} episodes ({}) had infrastructure errors (limit {})",
            c.infra_errors,
            c.episodes,
            format::percent(c.infra_share()),
            format::percent(c.stats.max_infra_share)
        )),
        Outcome::Regression => Style::new()
            .red()
            .bold()
            .force_styling(color)
            .apply_to(format!(
                "REGRESSION: {} gated {} regressed",
                regressions.len(),
                if regressions.len() == 1 {
                    "row"
                } else {
                    "rows"
                }
            )),
        Outcome::Pass => Style::new()
            .green()
            .bold()
            .force_styling(color)
            .apply_to("NO REGRESSION on the gated metrics".to_owned()),
    };
    let _ = writeln!(out, "{line}");
    out
}
