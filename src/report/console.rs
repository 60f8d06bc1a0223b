//! The console's closing verdict table: per task and host, baseline against candidate, the
//! gated verdict in short words (coloured when stdout is a terminal), then the suite rows and
//! the outcome. Every line fits [`WIDTH`] columns: a very long task id, and words that would not
//! fit, are cut with `…` (summary.md has the full words).

use std::fmt::Write;

use console::Style;

use super::format;
use crate::analysis::{Comparison, Outcome, Row, SUITE};
use crate::analysis::{Scope, Verdict};
use crate::config::Metric;

/// The widest line of the table, in characters.
pub const WIDTH: usize = 120;
/// A task id longer than this is cut.
const MAX_TASK: usize = 40;
/// A task id is cut down to this when the verdict needs the room (a long host, wide counts).
const MIN_TASK: usize = 16;
/// The room the verdict's words keep before a task id is cut further.
const MIN_WORDS: usize = 46;
/// A host name is cut at this.
const MAX_HOST: usize = 24;

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// `s` cut to `w` characters, its last one `…` when cut.
fn cut(s: &str, w: usize) -> String {
    if chars(s) <= w {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(w.saturating_sub(1)).collect();
    if w > 0 {
        out.push('…');
    }
    out
}

fn paint(v: Verdict, text: &str, color: bool) -> String {
    let style = match v {
        Verdict::Regression => Style::new().red().bold(),
        Verdict::Improvement => Style::new().green(),
        Verdict::Inconclusive => Style::new().yellow(),
        Verdict::NoChange => Style::new().dim(),
    };
    style.force_styling(color).apply_to(text).to_string()
}

/// A column of `base → cand` pairs aligned on the arrow (`None`: no row, shown as `–`).
struct Pairs {
    header: &'static str,
    cells: Vec<Option<(String, String)>>,
}

impl Pairs {
    fn sides(&self) -> (usize, usize) {
        let side = |f: fn(&(String, String)) -> &String| {
            (self.cells.iter().flatten())
                .map(|p| chars(f(p)))
                .max()
                .unwrap_or(0)
        };
        (side(|p| &p.0), side(|p| &p.1))
    }

    fn width(&self) -> usize {
        let (l, r) = self.sides();
        (l + 3 + r).max(chars(self.header))
    }

    fn cell(&self, i: usize) -> String {
        let (l, r) = self.sides();
        let text = match &self.cells[i] {
            Some((b, c)) => format!("{b:>l$} → {c:<r$}"),
            None => "–".to_owned(),
        };
        format!("{text:>w$}", w = self.width())
    }
}

/// The table as text; `color` adds ANSI colours (the caller decides from the terminal).
pub fn verdict_table(c: &Comparison, color: bool) -> String {
    let mut out = String::new();
    task_lines(&mut out, c, color);
    for line in format::turn_lines(c) {
        let _ = writeln!(out, "  turns of {line}");
    }
    suite_lines(&mut out, c, color);
    outcome_line(&mut out, c, color);
    out
}

/// The notes under the verdict: calls recovered from text, simulated users' turns (empty when
/// neither applies).
pub fn verdict_notes(c: &Comparison) -> String {
    let notes = [
        format::recovered_line(c),
        format::unprepared_line(c),
        format::simulated_users_line(c),
    ];
    notes.into_iter().flatten().map(|l| l + "\n").collect()
}

/// One line per task and host: its trials passed, tool calls and tokens (baseline →
/// candidate), and its gated verdict in short words.
fn task_lines(out: &mut String, c: &Comparison, color: bool) {
    let means = |t: &crate::analysis::TaskOutcome, m: Metric| {
        c.task_rows(&t.task_id, &t.host)
            .find(|r| r.metric == m)
            .map(|r| {
                (
                    format::value(m, r.baseline_mean),
                    format::value(m, r.candidate_mean),
                )
            })
    };
    let mut columns = vec![
        Pairs {
            header: "success b → c",
            cells: (c.tasks.iter())
                .map(|t| {
                    Some((
                        format::successes(&t.baseline),
                        format::successes(&t.candidate),
                    ))
                })
                .collect(),
        },
        Pairs {
            header: "calls b → c",
            cells: c
                .tasks
                .iter()
                .map(|t| means(t, Metric::ToolCalls))
                .collect(),
        },
        Pairs {
            header: "tokens b → c",
            cells: (c.tasks.iter())
                .map(|t| means(t, Metric::TotalTokens))
                .collect(),
        },
    ];
    // Calls written as text that the host made, per side: only in a run that made any.
    if c.recovered_calls().is_some() {
        columns.push(Pairs {
            header: "recovered b → c",
            cells: (c.tasks.iter())
                .map(|t| {
                    let (b, c) = (t.baseline.recovered_calls, t.candidate.recovered_calls);
                    Some((b.to_string(), c.to_string()))
                })
                .collect(),
        });
    }
    // Under tool search, the trials whose search ranked the task's tool within k, per side: a
    // description that hides a tool from search reads here before it reads in success.
    if c.tasks
        .iter()
        .any(|t| t.baseline.found_at_k.or(t.candidate.found_at_k).is_some())
    {
        let found = |side: &crate::analysis::SideOutcome| match side.found_at_k {
            Some((found, n)) => format!("{found}/{n}"),
            None => "–".to_owned(),
        };
        columns.insert(
            1,
            Pairs {
                header: "found@k b → c",
                cells: (c.tasks.iter())
                    .map(|t| {
                        let any = t.baseline.found_at_k.or(t.candidate.found_at_k);
                        any.map(|_| (found(&t.baseline), found(&t.candidate)))
                    })
                    .collect(),
            },
        );
    }
    let words: Vec<String> = (c.tasks.iter())
        .map(|t| format::task_verdict_short(c, t))
        .collect();
    let widest =
        |texts: &mut dyn Iterator<Item = usize>, least: usize| texts.max().unwrap_or(0).max(least);
    let host_w = widest(&mut c.tasks.iter().map(|t| chars(&t.host)), 4).min(MAX_HOST);
    let rest = host_w + 2 + columns.iter().map(|p| p.width() + 2).sum::<usize>();
    let task_full = widest(&mut c.tasks.iter().map(|t| chars(&t.task_id)), 5);
    let words_w = widest(&mut words.iter().map(|w| chars(w)), 0);
    // A task id is cut when very long, or when the verdict would have too little room.
    let task_w = task_full.min(MAX_TASK);
    let short_of = (MIN_WORDS.min(words_w) + task_w + 2 + rest).saturating_sub(WIDTH);
    let task_w = task_w.saturating_sub(short_of).max(MIN_TASK.min(task_w));
    let room = WIDTH.saturating_sub(task_w + 2 + rest);
    let head: Vec<String> = columns
        .iter()
        .map(|p| format!("{:>w$}", p.header, w = p.width()))
        .collect();
    let _ = writeln!(
        out,
        "{:task_w$}  {:host_w$}  {}  {}",
        "task",
        "host",
        head.join("  "),
        cut("verdict (gated metrics)", room)
    );
    for (i, t) in c.tasks.iter().enumerate() {
        let cells: Vec<String> = columns.iter().map(|p| p.cell(i)).collect();
        let verdict = c.task_verdict(t).verdict;
        let _ = writeln!(
            out,
            "{:task_w$}  {:host_w$}  {}  {}",
            cut(&t.task_id, task_w),
            cut(&t.host, host_w),
            cells.join("  "),
            paint(verdict, &cut(&words[i], room), color)
        );
    }
}

/// The whole suite's gated rows, and a part's (set, kind) when it moved.
fn suite_lines(out: &mut String, c: &Comparison, color: bool) {
    let rows: Vec<&Row> = (c.rows.iter())
        .filter(|r| {
            r.task_id == SUITE
                && r.gated
                && r.tested()
                && (r.scope == Scope::Suite
                    || matches!(r.verdict, Verdict::Regression | Verdict::Improvement))
        })
        .collect();
    let texts: Vec<[String; 7]> = rows
        .iter()
        .map(|r| {
            [
                r.scope.as_str().to_owned(),
                r.metric.as_str().to_owned(),
                format::value(r.metric, r.baseline_mean),
                format::value(r.metric, r.candidate_mean),
                format::delta(r.metric, r.delta),
                format::interval(r),
                format::p(r.p_adjusted),
            ]
        })
        .collect();
    let w: Vec<usize> = (0..7)
        .map(|i| texts.iter().map(|t| chars(&t[i])).max().unwrap_or(0))
        .collect();
    for (r, [scope, metric, base, cand, delta, interval, p]) in rows.iter().zip(texts) {
        let line = format!(
            "{scope:<w0$} {metric:<w1$} {base:>w2$} → {cand:<w3$}  Δ {delta:<w4$} {interval:<w5$} \
             p_adj {p:<w6$} ",
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3],
            w4 = w[4],
            w5 = w[5],
            w6 = w[6]
        );
        let room = WIDTH.saturating_sub(chars(&line));
        let words = cut(&format::verdict_short(c, r), room);
        let _ = writeln!(out, "{line}{}", paint(r.verdict, &words, color));
    }
}

/// The run's outcome, in capitals.
fn outcome_line(out: &mut String, c: &Comparison, color: bool) {
    let regressions: Vec<&Row> = c.gated_regressions().collect();
    let bold =
        |style: Style, text: String| style.bold().force_styling(color).apply_to(text).to_string();
    let line = match c.outcome() {
        Outcome::InfraFailure => bold(
            Style::new().red(),
            format!(
                "INFRASTRUCTURE FAILURE: {} of {} episodes ({}) had infrastructure errors (limit \
                 {})",
                c.infra_errors,
                c.episodes,
                format::percent(c.infra_share()),
                format::percent(c.stats.max_infra_share)
            ),
        ),
        Outcome::Regression => bold(
            Style::new().red(),
            format!(
                "REGRESSION: {} gated {} regressed",
                regressions.len(),
                if regressions.len() == 1 {
                    "row"
                } else {
                    "rows"
                }
            ),
        ),
        Outcome::Pass => bold(
            Style::new().green(),
            "NO REGRESSION on the gated metrics".to_owned(),
        ),
    };
    let _ = writeln!(out, "{line}");
}

#[cfg(test)]
#[path = "console_tests.rs"]
mod tests;
