//! The reports of one `mcpeval check`: summary.md (a line per stage and the verdict, then each
//! stage's section) and junit.xml (a testsuite per stage), rendered from its `check.json`.

use std::fmt::Write as _;

use super::junit::escape;
use crate::error::Exit;
use crate::rundir::{CheckRecord, Reported, StageRecord, StageStatus};

/// Which server is which: `BASELINE → CANDIDATE`, each its spec; once the servers' reported
/// names and versions are known and the specs differ, each name and version with its spec
/// beside (`mcp-time 1.30.0 (…/time-0.6.2/bin/mcp-server-time) → …`).
pub fn sides(record: &CheckRecord) -> String {
    use crate::contract::versions::headed;
    let (b, c) = (&record.baseline, &record.candidate);
    let side = |reported: &Option<Reported>, own: &str, other: &str| {
        let reported = reported.as_ref();
        headed(
            reported.map(|r| (r.name.as_str(), r.version.as_str())),
            own,
            other,
        )
    };
    format!(
        "{} → {}",
        side(&record.baseline_reported, b, c),
        side(&record.candidate_reported, c, b)
    )
}

/// summary.md of a check.
pub fn check_summary(record: &CheckRecord) -> String {
    let verdict = record.verdict();
    let mut out = format!(
        "# mcpeval check: {}\n\n{}\n\n",
        verdict.word(),
        sides(record)
    );
    for stage in &record.stages {
        let _ = writeln!(out, "- {}", stage_line(stage));
    }
    let failed: Vec<&str> = names(record, StageStatus::Failed);
    let errors: Vec<&str> = names(record, StageStatus::Error);
    let _ = write!(
        out,
        "\n**Verdict: {}** (exit {})",
        verdict.word(),
        record_exit(record).code()
    );
    if !failed.is_empty() {
        let _ = write!(out, ": {} failed", failed.join(", "));
    }
    if !errors.is_empty() {
        let _ = write!(
            out,
            "{} {} could not be done",
            if failed.is_empty() { ":" } else { ";" },
            errors.join(", ")
        );
    }
    if record.interrupted {
        out.push_str(
            "; interrupted (Ctrl-C, SIGTERM or SIGHUP): finish it with `mcpeval check --resume DIR`",
        );
    }
    if record.simulated() {
        out.push_str(
            ". The evaluation's verdicts come from the simulated model (`sim`), which only runs \
             the demo: it does not judge a server",
        );
    }
    out.push_str(".\n");
    for stage in &record.stages {
        let _ = write!(out, "\n## {}\n\n", stage.name);
        if stage.lines.is_empty() {
            let _ = writeln!(out, "{}", stage.reason);
        }
        for line in &stage.lines {
            let _ = writeln!(out, "{line}");
        }
        if let Some(dir) = &stage.output {
            let _ = writeln!(out, "\nRaw output: `{dir}`");
        }
    }
    out
}

/// One line of a stage: `contract: failed (0.4 s): 3 changes break clients`; a verdict of the
/// simulated model says so: `evaluation: failed (simulated model, 9.1 s): …`.
pub fn stage_line(stage: &StageRecord) -> String {
    format!(
        "{}: {} ({}{:.1} s): {}",
        stage.name,
        stage.status.word(),
        if stage.simulated {
            "simulated model, "
        } else {
            ""
        },
        stage.seconds,
        stage.reason
    )
}

fn names(record: &CheckRecord, status: StageStatus) -> Vec<&str> {
    (record.stages.iter())
        .filter(|s| s.status == status)
        .map(|s| s.name.as_str())
        .collect()
}

/// The exit code a check ended with: its verdict's, or 130 when it was interrupted.
pub fn record_exit(record: &CheckRecord) -> Exit {
    match record.interrupted {
        true => Exit::Interrupted,
        false => exit(record.verdict()),
    }
}

/// The exit code a check's verdict means.
pub fn exit(verdict: StageStatus) -> Exit {
    match verdict {
        StageStatus::Passed | StageStatus::Skipped => Exit::Ok,
        StageStatus::Failed => Exit::Regression,
        StageStatus::Error => Exit::Infra,
    }
}

/// junit.xml of a check: a testsuite per stage, a testcase per item it checked; a skipped
/// stage is one skipped testcase, a stage that could not be done one errored testcase.
pub fn check_junit(record: &CheckRecord) -> String {
    let failures = |s: &StageRecord| s.cases.iter().filter(|c| c.failure.is_some()).count();
    let total: usize = record.stages.iter().map(failures).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"mcpeval check\" failures=\"{total}\">"
    );
    for stage in &record.stages {
        let name = escape(&stage.name);
        let (tests, skipped, errors) = match stage.status {
            StageStatus::Skipped => (1, 1, 0),
            StageStatus::Error => (1, 0, 1),
            _ => (stage.cases.len().max(1), 0, 0),
        };
        let _ = writeln!(
            out,
            "  <testsuite name=\"{name}\" tests=\"{tests}\" failures=\"{}\" errors=\"{errors}\" \
             skipped=\"{skipped}\" time=\"{:.3}\">",
            failures(stage),
            stage.seconds
        );
        match stage.status {
            StageStatus::Skipped => {
                let _ = writeln!(
                    out,
                    "    <testcase classname=\"{name}\" name=\"{name}\"><skipped message=\"{}\"/></testcase>",
                    escape(&stage.reason)
                );
            }
            StageStatus::Error => {
                let _ = writeln!(
                    out,
                    "    <testcase classname=\"{name}\" name=\"{name}\"><error message=\"{}\"/></testcase>",
                    escape(&stage.reason)
                );
            }
            _ if stage.cases.is_empty() => {
                let _ = writeln!(out, "    <testcase classname=\"{name}\" name=\"{name}\"/>");
            }
            _ => {
                for case in &stage.cases {
                    let case_name = escape(&case.name);
                    match &case.failure {
                        None => {
                            let _ = writeln!(
                                out,
                                "    <testcase classname=\"{name}\" name=\"{case_name}\"/>"
                            );
                        }
                        Some(why) => {
                            let why = match stage.simulated {
                                true => format!("{why} (simulated model)"),
                                false => why.clone(),
                            };
                            let _ = writeln!(
                                out,
                                "    <testcase classname=\"{name}\" name=\"{case_name}\">\
                                 <failure message=\"{}\"/></testcase>",
                                escape(&why)
                            );
                        }
                    }
                }
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rundir::Case;

    fn record() -> CheckRecord {
        let stage = |name: &str, status, reason: &str, cases| StageRecord {
            name: name.into(),
            status,
            reason: reason.into(),
            seconds: 1.25,
            lines: vec![format!("{name} details")],
            cases,
            output: None,
            simulated: false,
        };
        CheckRecord {
            format_version: 1,
            baseline: "demo:1.4.0".into(),
            candidate: "demo:2.0.0".into(),
            baseline_reported: None,
            candidate_reported: None,
            stages: vec![
                stage(
                    "contract",
                    StageStatus::Failed,
                    "2 changes break clients",
                    vec![
                        Case::failed("tool_removed get_issue", "removed <x>"),
                        Case::passed("tool_added fetch_issue"),
                    ],
                ),
                stage(
                    "conformance",
                    StageStatus::Skipped,
                    "Node 20 is older than 22",
                    vec![],
                ),
            ],
            interrupted: false,
            args: vec![],
        }
    }

    #[test]
    fn the_summary_opens_with_a_line_per_stage_and_the_verdict() {
        let text = check_summary(&record());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "# mcpeval check: failed");
        assert_eq!(
            lines[4],
            "- contract: failed (1.2 s): 2 changes break clients"
        );
        assert_eq!(
            lines[5],
            "- conformance: skipped (1.2 s): Node 20 is older than 22"
        );
        assert_eq!(lines[7], "**Verdict: failed** (exit 1): contract failed.");
        assert!(text.contains("## conformance\n\nconformance details"));
    }

    #[test]
    fn a_simulated_verdict_and_an_interruption_are_said_in_every_line() {
        let mut record = record();
        record.stages[0].simulated = true;
        record.interrupted = true;
        let text = check_summary(&record);
        assert!(
            text.contains("- contract: failed (simulated model, 1.2 s): 2 changes break clients"),
            "{text}"
        );
        assert!(
            text.contains("**Verdict: failed** (exit 130): contract failed; interrupted"),
            "{text}"
        );
        assert!(text.contains("simulated model (`sim`)"), "{text}");
        assert_eq!(record_exit(&record), Exit::Interrupted);
        let xml = check_junit(&record);
        assert!(
            xml.contains("<failure message=\"removed &lt;x&gt; (simulated model)\"/>"),
            "{xml}"
        );
    }

    #[test]
    fn junit_has_a_testsuite_per_stage() {
        let xml = check_junit(&record());
        assert_eq!(xml.matches("<testsuite ").count(), 2);
        assert!(xml.contains("<testsuites name=\"mcpeval check\" failures=\"1\">"));
        assert!(xml.contains("<failure message=\"removed &lt;x&gt;\"/>"));
        assert!(xml.contains("<skipped message=\"Node 20 is older than 22\"/>"));
    }
}
