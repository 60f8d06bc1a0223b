//! The stale-list window in words (`run --stale-list`), read from the stored episodes of each
//! side ([`read_stale_list`]) and said on the console and in summary.md: per task, the calls to
//! tools the candidate no longer lists and how it answered them, the trials that failed, and the
//! window's length from the baseline's `ttlMs` (with the candidate's, for the next deploy).

use std::fmt::Write;
use std::path::Path;

use super::export::Report;
use crate::analysis::stale_list::{GoneCalls, StaleWindow, TaskWindow, INVALID_PARAMS};
use crate::episode::Side;
use crate::rundir::{scan_episodes, RunInfo, ServerRecord};

/// Reads the baseline's episodes from `baseline_dir` and the candidate's from `candidate_dir`
/// (the same run directory but for `compare --against`), each directory once, and counts the
/// window against the candidate's tools as `info` records them; `None` for a run without
/// `--stale-list`.
pub fn read_stale_list(
    baseline_dir: &Path,
    candidate_dir: &Path,
    info: &RunInfo,
) -> anyhow::Result<Option<StaleWindow>> {
    if !info.config.stale_list {
        return Ok(None);
    }
    let mut window = StaleWindow::new(info.candidate.tools.iter().cloned());
    let sources: Vec<(&Path, Vec<Side>)> = match baseline_dir == candidate_dir {
        true => vec![(baseline_dir, Side::BOTH.to_vec())],
        false => vec![
            (baseline_dir, vec![Side::Baseline]),
            (candidate_dir, vec![Side::Candidate]),
        ],
    };
    for (dir, sides) in sources {
        scan_episodes(dir, |e| {
            if sides.contains(&e.side) {
                window.add(e.side, &e);
            }
        })?;
    }
    Ok(Some(window))
}

/// What the section is headed by: `Stale list (candidate offered 1.5.0's tools, calls answered
/// by 2.0.0)`.
pub fn heading(info: &RunInfo) -> String {
    let (base, cand) = (&info.baseline, &info.candidate);
    format!(
        "Stale list (candidate offered {}'s tools, calls answered by {})",
        label(base, cand),
        label(cand, base)
    )
}

/// The section's lines: one per task that called a tool the candidate no longer lists, how many
/// others did not, then the window's length and the candidate's own `ttlMs`.
pub fn lines(info: &RunInfo, window: &StaleWindow) -> Vec<String> {
    let named_hosts = window.hosts() > 1;
    let mut out: Vec<String> = window.hit().map(|t| task_line(t, named_hosts)).collect();
    let untouched = window.untouched();
    match (out.is_empty(), untouched) {
        (true, 0) => out.push("no model trial ran".to_owned()),
        (true, n) => out.push(format!(
            "no call went to a tool the candidate no longer lists ({n} task(s))"
        )),
        (false, 0) => {}
        (false, n) => out.push(format!(
            "{n} other task(s) made no call to a tool the candidate no longer lists"
        )),
    }
    let (base, cand) = (&info.baseline, &info.candidate);
    out.push(window_line(base.tools_ttl_ms, &label(base, cand)));
    out.push(candidate_line(cand.tools_ttl_ms, &label(cand, base)));
    out
}

/// The console's section: the heading, then its lines indented.
pub fn console(info: &RunInfo, window: &StaleWindow) -> Vec<String> {
    let mut out = vec![format!("{}:", heading(info))];
    out.extend(lines(info, window).into_iter().map(|l| format!("  {l}")));
    out
}

/// summary.md's section, after the run's facts: what the candidate side was, then the lines.
pub fn markdown(out: &mut String, report: &Report) {
    let Some(window) = report.stale_list else {
        return;
    };
    let info = report.info;
    let _ = writeln!(
        out,
        "## Stale-list window\n\n{}: the candidate side is the window of a deploy \
         (`--stale-list`). Its trials were offered the baseline's tool list, as a client whose \
         cached `tools/list` has not yet expired offers it, and every call went to the candidate \
         under the name the model used.\n",
        heading(info)
    );
    for line in lines(info, window) {
        let _ = writeln!(out, "- {line}");
    }
    out.push('\n');
}

/// `get-issue-4: 10 calls to `get_issue` (gone), 10 answered -32602; 10 of 10 trials failed
/// (baseline: 0 of 10)`.
fn task_line(t: &TaskWindow, named_host: bool) -> String {
    let mut tools = t.gone.iter();
    let calls: Vec<String> = (tools.next().into_iter())
        .map(|(tool, c)| format!("{} to `{tool}`", plural(c.calls, "call")))
        .chain(tools.map(|(tool, c)| format!("{} to `{tool}`", c.calls)))
        .collect();
    let task = match named_host {
        true => format!("{} ({})", t.task_id, t.host),
        false => t.task_id.clone(),
    };
    format!(
        "{task}: {} (gone), {}; {} of {} failed (baseline: {} of {})",
        calls.join(", "),
        answers(&t.gone_total()),
        t.candidate.failed,
        plural(t.candidate.ran, "trial"),
        t.baseline.failed,
        t.baseline.ran
    )
}

/// How the candidate answered calls to gone tools: `10 answered -32602`, with the other kinds
/// of answer after it when there were any.
fn answers(c: &GoneCalls) -> String {
    let kinds = [
        (c.invalid_params, format!("answered {INVALID_PARAMS}")),
        (c.other_codes, "answered another JSON-RPC error".to_owned()),
        (c.failed, "failed otherwise (isError, no answer)".to_owned()),
        (
            c.served,
            "served (the candidate still answers the name)".to_owned(),
        ),
    ];
    let said: Vec<String> = (kinds.iter())
        .filter(|(n, _)| *n > 0)
        .map(|(n, words)| format!("{n} {words}"))
        .collect();
    said.join(", ")
}

/// `1 call`, `10 calls`.
fn plural(n: u32, word: &str) -> String {
    match n {
        1 => format!("1 {word}"),
        n => format!("{n} {word}s"),
    }
}

/// The window's length: the `ttlMs` of the list the clients hold, the baseline's.
fn window_line(ttl_ms: Option<u64>, baseline: &str) -> String {
    match ttl_ms {
        None => format!(
            "window: no ttlMs advertised: clients may cache {baseline}'s list until the next \
             list_changed or reconnect"
        ),
        Some(0) => format!(
            "window: {baseline}'s tools/list ttlMs = 0 (stale at once): a client that honours \
             it lists again before each use and has no window; these trials are a client that \
             kept the list anyway"
        ),
        Some(ms) => format!(
            "window: up to {} (the baseline's tools/list ttlMs = {ms})",
            duration(ms)
        ),
    }
}

/// The candidate's own `ttlMs`: how long clients may hold its list after this deploy.
fn candidate_line(ttl_ms: Option<u64>, candidate: &str) -> String {
    match ttl_ms {
        None => format!(
            "{candidate} advertises no ttlMs: after this deploy, clients may hold its list until \
             the next list_changed or reconnect"
        ),
        Some(0) => format!(
            "{candidate} advertises ttlMs = 0: clients list its tools again before each use"
        ),
        Some(ms) => format!(
            "{candidate} advertises ttlMs = {ms}: after this deploy, clients may hold its list up \
             to {}",
            duration(ms)
        ),
    }
}

/// A side as the lines name it: the version its server reports when the other's differs, else
/// its spec.
fn label(own: &ServerRecord, other: &ServerRecord) -> String {
    let version = |s: &ServerRecord| {
        (s.info.as_ref())
            .map(|i| i.version.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    match (version(own), version(other)) {
        (Some(v), Some(o)) if v != o => v,
        (Some(v), None) => v,
        _ => own.spec.clone(),
    }
}

/// Milliseconds in the unit a person reads them in: `750 ms`, `1.5 s`, `60 s`, `5 min`, `2 h`.
fn duration(ms: u64) -> String {
    if ms < 1000 {
        return format!("{ms} ms");
    }
    if !ms.is_multiple_of(1000) {
        let seconds = format!("{:.3}", ms as f64 / 1000.0);
        return format!("{} s", seconds.trim_end_matches('0'));
    }
    let seconds = ms / 1000;
    match (seconds % 60, seconds / 60) {
        (0, minutes) if minutes >= 120 && minutes.is_multiple_of(60) => {
            format!("{} h", minutes / 60)
        }
        (0, minutes) if minutes >= 2 => format!("{minutes} min"),
        _ => format!("{seconds} s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stale_list::Trials;

    fn info(baseline_ttl: Option<u64>, candidate_ttl: Option<u64>) -> RunInfo {
        let mut info = crate::test_support::sample_info();
        for (record, version, ttl) in [
            (&mut info.baseline, "1.5.0", baseline_ttl),
            (&mut info.candidate, "2.0.0", candidate_ttl),
        ] {
            record.info = Some(crate::mcp::ServerInfo {
                version: version.into(),
                ..Default::default()
            });
            record.tools_ttl_ms = ttl;
        }
        info
    }

    fn task(gone: &[(&str, GoneCalls)], candidate_failed: u32) -> TaskWindow {
        TaskWindow {
            task_id: "get-issue-4".into(),
            host: "sim".into(),
            gone: gone.iter().map(|(t, c)| (t.to_string(), *c)).collect(),
            baseline: Trials { ran: 10, failed: 0 },
            candidate: Trials {
                ran: 10,
                failed: candidate_failed,
            },
        }
    }

    #[test]
    fn a_task_line_says_the_calls_the_answers_and_the_failed_trials() {
        let refused = GoneCalls {
            calls: 10,
            invalid_params: 10,
            ..GoneCalls::default()
        };
        assert_eq!(
            task_line(&task(&[("get_issue", refused)], 10), false),
            "get-issue-4: 10 calls to `get_issue` (gone), 10 answered -32602; 10 of 10 trials \
             failed (baseline: 0 of 10)"
        );
        let mixed = GoneCalls {
            calls: 3,
            invalid_params: 1,
            served: 2,
            ..GoneCalls::default()
        };
        let line = task_line(
            &task(&[("add_comment", mixed), ("get_issue", refused)], 4),
            true,
        );
        assert!(
            line.starts_with(
                "get-issue-4 (sim): 3 calls to `add_comment`, 10 to `get_issue` (gone), 11 \
                 answered -32602, 2 served (the candidate still answers the name); 4 of 10"
            ),
            "{line}"
        );
    }

    #[test]
    fn the_window_is_the_baseline_s_ttl_and_the_candidate_s_is_said_apart() {
        let lines = |b, c| lines(&info(b, c), &StaleWindow::default());
        let said = lines(None, Some(60_000));
        assert_eq!(
            said[1],
            "window: no ttlMs advertised: clients may cache 1.5.0's list until the next \
             list_changed or reconnect"
        );
        assert_eq!(
            said[2],
            "2.0.0 advertises ttlMs = 60000: after this deploy, clients may hold its list up to \
             60 s"
        );
        let said = lines(Some(300_000), None);
        assert_eq!(
            said[1],
            "window: up to 5 min (the baseline's tools/list ttlMs = 300000)"
        );
        assert!(
            said[2].starts_with("2.0.0 advertises no ttlMs"),
            "{}",
            said[2]
        );
        assert!(lines(Some(0), Some(0))[1].contains("ttlMs = 0 (stale at once)"));
        assert_eq!(
            heading(&info(None, None)),
            "Stale list (candidate offered 1.5.0's tools, calls answered by 2.0.0)"
        );
    }

    #[test]
    fn durations_read_in_their_own_unit() {
        assert_eq!(duration(750), "750 ms");
        assert_eq!(duration(1_500), "1.5 s");
        assert_eq!(duration(60_000), "60 s");
        assert_eq!(duration(90_000), "90 s");
        assert_eq!(duration(120_000), "2 min");
        assert_eq!(duration(7_200_000), "2 h");
        assert_eq!(duration(3_600_000), "60 min");
    }
}
