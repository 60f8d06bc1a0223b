//! The tool-choice shift in words: summary.md's "Tool choice" section (report.html shows it too)
//! and one line per shifted task for `mcpeval check`'s summary. Information, not a gate.

use std::fmt::Write;

use super::export::Report;
use super::format;
use crate::analysis::tool_shift::{CallTally, TaskShift, ToolShiftFacts};
use crate::analysis::Comparison;
use crate::config::Metric;

/// The section's title in summary.md (report.html takes the section by it).
pub const TOOL_CHOICE: &str = "Tool choice";

/// Each side's calls of a task, all of them: `all calls: baseline search_issues 10, get_issue 10
/// · candidate find_issues 10, get_issue 10`.
pub fn all_calls(calls: &[CallTally; 2]) -> String {
    let side = |name: &str, tally: &CallTally| {
        let ranked = tally.ranked();
        if ranked.is_empty() {
            return format!("{name} no tool call");
        }
        let tools: Vec<String> = ranked.iter().map(|(t, n)| format!("{t} {n}")).collect();
        format!("{name} {}", tools.join(", "))
    };
    format!(
        "all calls: {} · {}",
        side("baseline", &calls[0]),
        side("candidate", &calls[1])
    )
}

/// A shift in words with its adjusted p: `find_issues took 10 of search_issues' 10 first calls
/// (p_holm 4.3e-5)`.
pub fn shift_words(shift: &TaskShift) -> String {
    let moved = shift
        .words()
        .unwrap_or_else(|| "the first calls' mix changed".to_owned());
    format!("{moved} (p_holm {})", format::p(Some(shift.p_holm)))
}

/// One line per shifted task: `` `find-open-login-apollo` · `sim`: find_issues took 10 of
/// search_issues' 10 first calls (p_holm 4.3e-5) ``; none when no task shifted.
pub fn lines(facts: &ToolShiftFacts) -> Vec<String> {
    (facts.shifted())
        .map(|s| format!("`{}` · `{}`: {}", s.task_id, s.host, shift_words(s)))
        .collect()
}

/// summary.md's "Tool choice" section: each shifted task with its success beside (a shift is
/// shown also where success held) and both sides' calls. Nothing when no task shifted, or when
/// the report has no shift (the live reports during a run).
pub fn markdown(out: &mut String, report: &Report) {
    let Some(facts) = report.tool_shift else {
        return;
    };
    let shifted: Vec<&TaskShift> = facts.shifted().collect();
    if shifted.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "## {TOOL_CHOICE}\n\nThe first tool the model called moved on {} task(s): the \
         Fisher–Freeman–Halton test of the paired trials' first tools, Holm across each host's \
         tasks. Information, not a gate: it changes no verdict and not the exit code. Beside it \
         every call of each side, descriptive only; `tool_shift.csv` has every task's table.\n",
        shifted.len()
    );
    for s in shifted {
        let mut line = format!("- `{}` · `{}`: {}", s.task_id, s.host, shift_words(s));
        if let Some(success) = success(report.comparison, s) {
            let _ = write!(line, "; {success}");
        }
        if let Some(calls) = facts.calls_of(&s.task_id, &s.host) {
            let _ = write!(line, "; {}", all_calls(calls));
        }
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(out);
}

/// `success 9/10 → 1/10, inconclusive`: the task's success and its success row's verdict.
fn success(c: &Comparison, s: &TaskShift) -> Option<String> {
    let t = (c.tasks.iter()).find(|t| t.task_id == s.task_id && t.host == s.host)?;
    let row = c
        .task_rows(&t.task_id, &t.host)
        .find(|r| r.metric == Metric::Success);
    Some(format!(
        "success {} → {}, {}",
        format::successes(&t.baseline),
        format::successes(&t.candidate),
        row.map_or("untested", |r| r.verdict.as_str())
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn tally(episodes: &[&str]) -> CallTally {
        let mut t = CallTally::default();
        for calls in episodes {
            t.add(calls);
        }
        t
    }

    #[test]
    fn all_calls_name_each_side_s_tools_most_called_first() {
        let baseline = tally(&["search_issues,get_issue"; 10]);
        let candidate = tally(&["find_issues,get_issue"; 10]);
        assert_eq!(
            all_calls(&[baseline, candidate]),
            "all calls: baseline search_issues 10, get_issue 10 · candidate find_issues 10, \
             get_issue 10"
        );
        let mut refunds = vec!["list_projects,search_issues,search_issues"; 9];
        refunds.push("search_issues");
        assert_eq!(
            all_calls(&[tally(&["", ""]), tally(&refunds)]),
            "all calls: baseline no tool call · candidate search_issues 19, list_projects 9"
        );
    }

    #[test]
    fn only_shifted_tasks_have_a_line() {
        let shift = |task: &str, shifted: bool, p_holm: f64| TaskShift {
            task_id: task.into(),
            host: "sim".into(),
            pairs: BTreeMap::from([(("search_issues".into(), "find_issues".into()), 10)]),
            p: p_holm / 2.0,
            p_holm,
            shifted,
        };
        let facts = ToolShiftFacts {
            shifts: vec![shift("lookup", true, 4.3e-5), shift("show", false, 0.2)],
            calls: BTreeMap::new(),
        };
        assert_eq!(
            lines(&facts),
            [
                "`lookup` · `sim`: find_issues took 10 of search_issues' 10 first calls (p_holm \
              4.3e-5)"
            ]
        );
        assert!(lines(&ToolShiftFacts::default()).is_empty());
    }
}
