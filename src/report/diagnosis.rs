//! The words for why a run may have measured nothing ([`Diagnosis`]), shown before its verdict:
//! on the console, in summary.md's first block, in junit.xml and in report.html.

use crate::analysis::diagnosis::{NeverPassed, ReplayGaps, SilentHost};
use crate::analysis::Diagnosis;

/// Tasks named per finding on the console (summary.md names them all).
const CONSOLE_TASKS: usize = 5;

/// One finding: a headline and the tasks or excerpts behind it.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub headline: String,
    pub details: Vec<Detail>,
}

/// What a finding names (a task with its counts, a side) and what it says of it (the error).
#[derive(Debug, Clone, PartialEq)]
pub struct Detail {
    pub what: String,
    pub says: String,
}

impl Detail {
    fn new(what: String, says: &str) -> Self {
        Self {
            what,
            says: first_line(says, 300),
        }
    }

    /// `what: says`, or `what` alone.
    fn line(&self) -> String {
        match self.says.is_empty() {
            true => self.what.clone(),
            false => format!("{}: {}", self.what, self.says),
        }
    }
}

/// Every finding of a diagnosis, in the order a reader should fix them: the servers' setup, the
/// host, the servers that failed, the tasks.
pub fn findings(d: &Diagnosis) -> Vec<Finding> {
    let mut out = Vec::new();
    if !d.baseline_failed.is_empty() {
        out.push(Finding {
            headline: format!(
                "the baseline failed every trial of {} of {} tasks: check the servers' setup \
                 (an `improvement` there only says the candidate passed where the baseline could not)",
                d.baseline_failed.len(),
                d.tasks
            ),
            details: d.baseline_failed.iter().map(task_line).collect(),
        });
    }
    for h in &d.silent_hosts {
        out.push(host_finding(h));
    }
    if !d.server_failures.is_empty() {
        let trials: u32 = d.server_failures.iter().map(|f| f.trials).sum();
        let mut sides: Vec<&str> = d.server_failures.iter().map(|f| f.side.as_str()).collect();
        sides.dedup();
        out.push(Finding {
            headline: format!(
                "the {} server failed during {trials} trial(s): counted as that side's failures",
                sides.join(" and the ")
            ),
            details: (d.server_failures.iter())
                .map(|f| {
                    Detail::new(
                        format!(
                            "{} ({}): {} of {} trials",
                            f.task_id, f.host, f.trials, f.of
                        ),
                        &f.error,
                    )
                })
                .collect(),
        });
    }
    if !d.infra.is_empty() {
        let count: u64 = d.infra.iter().map(|i| i.count).sum();
        out.push(Finding {
            headline: format!(
                "{count} trial(s) ended in an infrastructure error (neither server's doing alone: \
                 the model provider, the network, or both servers): left out of the statistics"
            ),
            details: (d.infra.iter())
                .map(|i| {
                    Detail::new(
                        format!(
                            "{} side, host {}: {} trial(s), the first",
                            i.side, i.host, i.count
                        ),
                        &i.first,
                    )
                })
                .collect(),
        });
    }
    if !d.replay_gaps.is_empty() {
        out.push(replay_finding(&d.replay_gaps));
    }
    if !d.both_failed.is_empty() {
        out.push(Finding {
            headline: format!(
                "{} task(s) failed every trial on both sides: check the task or the host",
                d.both_failed.len()
            ),
            details: d.both_failed.iter().map(task_line).collect(),
        });
    }
    out
}

/// How much of a replayed run was not replayed: the calls its cassettes did not hold.
fn replay_finding(gaps: &[ReplayGaps]) -> Finding {
    let unmatched: u64 = gaps.iter().map(|g| g.unmatched).sum();
    let calls: u64 = gaps.iter().map(|g| g.calls).sum();
    Finding {
        headline: format!(
            "{unmatched} of {calls} tool call(s) had no recorded answer in the replayed \
             cassette: answered by the server's `unmatched` policy (an error that says so by \
             default), not by the recording"
        ),
        details: (gaps.iter())
            .map(|g| {
                Detail::new(
                    format!(
                        "{} side, host {}: {} of {} call(s)",
                        g.side, g.host, g.unmatched, g.calls
                    ),
                    "",
                )
            })
            .collect(),
    }
}

fn task_line(t: &NeverPassed) -> Detail {
    Detail::new(
        format!(
            "{} ({}): {}/{} → {}/{}",
            t.task_id, t.host, t.baseline.0, t.baseline.1, t.candidate.0, t.candidate.1
        ),
        &t.failure,
    )
}

fn host_finding(h: &SilentHost) -> Finding {
    let mut headline = match h.with_calls {
        0 => format!(
            "host `{}` made no structured tool call in {} trial(s) of tool tasks",
            h.host, h.tool_trials
        ),
        _ => format!("host `{}` wrote tool calls as text", h.host),
    };
    if h.text_calls > 0 {
        headline.push_str(&format!(
            "; {} trial(s) wrote a tool call as text instead of calling it",
            h.text_calls
        ));
        headline.push_str(&match h.recovered {
            0 => " (`--recover-text-calls` makes such calls as if the model had: docs/hosts.md#recovered-text-calls)".to_owned(),
            n => format!(
                " ({n} of {} call(s) were recovered from text and made: recover_text_calls)",
                h.calls
            ),
        });
    }
    headline.push_str(
        ": the usual causes are the endpoint's tool-call parser, its chat template or \
         `tool_choice` (see docs/hosts.md)",
    );
    Finding {
        headline,
        details: h
            .excerpt
            .iter()
            .map(|e| Detail::new("e.g.".into(), e))
            .collect(),
    }
}

/// The first line of `text`, cut to `max` characters with `…`.
fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    match line.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

/// The console's lines: each finding with up to [`CONSOLE_TASKS`] of its details, what a
/// detail names on one line and what it says on the next, each cut to fit 120 columns.
pub fn console_lines(d: &Diagnosis) -> Vec<String> {
    let mut lines = Vec::new();
    for f in findings(d) {
        lines.push(format!("note: {}", f.headline));
        for detail in f.details.iter().take(CONSOLE_TASKS) {
            lines.push(format!("  {}", first_line(&detail.what, 116)));
            if !detail.says.is_empty() {
                lines.push(format!("    {}", first_line(&detail.says, 114)));
            }
        }
        if f.details.len() > CONSOLE_TASKS {
            lines.push(format!(
                "  … and {} more (summary.md)",
                f.details.len() - CONSOLE_TASKS
            ));
        }
    }
    lines
}

/// summary.md's block: every finding with every detail; empty when there is nothing to say.
pub fn markdown(d: &Diagnosis) -> String {
    let mut out = String::new();
    for f in findings(d) {
        out.push_str(&format!("**{}**\n\n", capitalised(&f.headline)));
        for detail in &f.details {
            let says = match detail.says.is_empty() {
                true => String::new(),
                false => format!(": `{}`", detail.says.replace('`', "'")),
            };
            out.push_str(&format!("- {}{says}\n", detail.what));
        }
        if !f.details.is_empty() {
            out.push('\n');
        }
    }
    out
}

/// Each finding's headline alone: for a stage line that says why its verdict may mean little.
pub fn headlines(d: &Diagnosis) -> Vec<String> {
    findings(d).into_iter().map(|f| f.headline).collect()
}

/// Plain text for junit.xml's `<system-out>` and report.html: every finding and detail.
pub fn text(d: &Diagnosis) -> String {
    let mut out = String::new();
    for f in findings(d) {
        out.push_str(&f.headline);
        out.push('\n');
        for detail in &f.details {
            out.push_str("  ");
            out.push_str(&detail.line());
            out.push('\n');
        }
    }
    out
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::diagnosis::ServerFailures;
    use crate::episode::Side;

    fn never(task: &str, candidate: (u32, u32)) -> NeverPassed {
        NeverPassed {
            task_id: task.into(),
            host: "mcp".into(),
            baseline: (0, 1),
            candidate,
            failure: "is_error: expected no error, got: Error: Access denied - path outside \
                      allowed directories: /tmp/x"
                .into(),
        }
    }

    #[test]
    fn every_finding_is_worded_with_its_tasks() {
        let d = Diagnosis {
            baseline_failed: (0..8)
                .map(|i| never(&format!("read-{i}"), (1, 1)))
                .collect(),
            both_failed: vec![never("hard", (0, 1))],
            tasks: 9,
            silent_hosts: vec![SilentHost {
                host: "openai:qwen".into(),
                tool_trials: 70,
                with_calls: 0,
                text_calls: 70,
                excerpt: Some(
                    "```json {\"name\": \"list_projects\", \"arguments\": {}} ```".into(),
                ),
                calls: 0,
                recovered: 0,
            }],
            server_failures: vec![ServerFailures {
                task_id: "search".into(),
                host: "sim".into(),
                side: Side::Candidate,
                trials: 7,
                of: 7,
                error: "candidate server failed during tools/call `search`: Transport closed"
                    .into(),
            }],
            infra: vec![crate::analysis::diagnosis::InfraErrors {
                host: "openai:m".into(),
                side: Side::Baseline,
                count: 2,
                first: "model `m`: HTTP 503\nmore".into(),
            }],
            replay_gaps: vec![crate::analysis::diagnosis::ReplayGaps {
                host: "sim".into(),
                side: Side::Candidate,
                unmatched: 3,
                calls: 40,
            }],
        };
        let lines = console_lines(&d);
        assert!(lines[0].starts_with(
            "note: the baseline failed every trial of 8 of 9 tasks: check the servers' setup"
        ));
        assert_eq!(lines[1], "  read-0 (mcp): 0/1 → 1/1");
        assert!(lines[2].starts_with("    is_error: expected no error, got: Error: Access denied"));
        assert!(lines.iter().any(|l| l == "  … and 3 more (summary.md)"));
        assert!(lines.iter().any(|l| l.contains(
            "host `openai:qwen` made no structured tool call in 70 trial(s) of tool tasks; 70 \
             trial(s) wrote a tool call as text"
        )));
        assert!(lines.iter().any(|l| l.contains("list_projects")));
        assert!(lines
            .iter()
            .any(|l| l.contains("the candidate server failed during 7 trial(s)")));
        assert!(lines.iter().any(|l| l == "  search (sim): 7 of 7 trials"));
        assert!(lines
            .iter()
            .any(|l| l.starts_with("    candidate server failed during tools/call `search`")));
        assert!(lines
            .iter()
            .any(|l| l.contains("1 task(s) failed every trial on both sides: check the task")));
        // Every detail line of the console fits 120 columns.
        assert!(lines
            .iter()
            .filter(|l| l.starts_with("  "))
            .all(|l| l.chars().count() <= 120));
        assert!(lines
            .iter()
            .any(|l| l
                .contains("3 of 40 tool call(s) had no recorded answer in the replayed cassette")));
        assert!(lines
            .iter()
            .any(|l| l == "  candidate side, host sim: 3 of 40 call(s)"));
        assert!(lines.iter().any(|l| l == "  e.g."));
        let md = markdown(&d);
        assert!(md.starts_with("**The baseline failed every trial of 8 of 9 tasks"));
        assert_eq!(md.matches("\n- read-").count(), 8, "{md}");
        assert!(
            md.contains("- read-0 (mcp): 0/1 → 1/1: `is_error: expected no error"),
            "{md}"
        );
        assert!(text(&d).contains("  hard (mcp): 0/1 → 0/1: is_error"));
        assert!(lines
            .iter()
            .any(|l| l == "  baseline side, host openai:m: 2 trial(s), the first"));
        assert!(lines.iter().any(|l| l == "    model `m`: HTTP 503"));
        assert!(findings(&Diagnosis::default()).is_empty());
    }
}
