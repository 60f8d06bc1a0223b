//! `junit.xml`: one testcase per task × host and one for each host's suite rows; a gated
//! regression is a failure carrying why, and every testcase's output says its verdict in the
//! words of summary.md.

use std::fmt::Write;

use super::export::Report;
use super::format;
use crate::analysis::Scope;
use crate::analysis::Verdict;
use crate::analysis::{Comparison, Row, TaskOutcome, SUITE};
use crate::config::Metric;

/// Renders the JUnit XML report (the common Jenkins/GitLab/GitHub schema).
pub fn junit(report: &Report) -> String {
    let c = report.comparison;
    let failed = |t: &TaskOutcome| regressions(c, t).next().is_some();
    let mut hosts: Vec<&str> = c.tasks.iter().map(|t| t.host.as_str()).collect();
    hosts.dedup();
    let suite_failed = |host: &str| suite_regressions(c, host).next().is_some();
    let total_failures = c.tasks.iter().filter(|t| failed(t)).count()
        + hosts.iter().filter(|h| suite_failed(h)).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"mcpeval\" tests=\"{}\" failures=\"{}\" errors=\"0\">",
        c.tasks.len() + hosts.len(),
        total_failures
    );
    for host in hosts {
        let tasks: Vec<&TaskOutcome> = c.tasks.iter().filter(|t| t.host == host).collect();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\">",
            escape(&format!("mcpeval.{host}")),
            tasks.len() + 1,
            tasks.iter().filter(|t| failed(t)).count() + usize::from(suite_failed(host))
        );
        properties(&mut out, report, host);
        for t in tasks {
            testcase(&mut out, c, t);
        }
        suite_testcase(&mut out, c, host);
        let _ = writeln!(out, "  </testsuite>");
    }
    out.push_str("</testsuites>\n");
    out
}

fn regressions<'a>(c: &'a Comparison, t: &'a TaskOutcome) -> impl Iterator<Item = &'a Row> {
    c.task_rows(&t.task_id, &t.host)
        .filter(|r| r.gated && r.verdict == Verdict::Regression)
}

fn suite_regressions<'a>(c: &'a Comparison, host: &'a str) -> impl Iterator<Item = &'a Row> {
    c.suite_rows(host)
        .filter(|r| r.gated && r.verdict == Verdict::Regression)
}

/// The testcase `suite` of a host: a failure when a gated suite row (any scope) regressed.
fn suite_testcase(out: &mut String, c: &Comparison, host: &str) {
    let _ = writeln!(
        out,
        "    <testcase classname=\"{}\" name=\"suite\">",
        escape(&format!("mcpeval.{host}"))
    );
    let regressed: Vec<&Row> = suite_regressions(c, host).collect();
    if !regressed.is_empty() {
        let lines: Vec<String> = regressed
            .iter()
            .map(|r| format!("{}: {}", r.scope, describe(r)))
            .collect();
        let _ = writeln!(
            out,
            "      <failure type=\"regression\" message=\"{}\">{}</failure>",
            attr(&format!("regression: {}", lines.join("; "))),
            escape(&lines.join("\n"))
        );
    }
    let details: Vec<String> = c
        .suite_rows(host)
        .filter(|r| r.tested())
        .map(|r| format!("{} {}: {}{}", r.scope, r.verdict, describe(r), why(c, r)))
        .collect();
    let _ = writeln!(
        out,
        "      <system-out>{}</system-out>",
        escape(&details.join("\n"))
    );
    let _ = writeln!(out, "    </testcase>");
}

fn properties(out: &mut String, report: &Report, host: &str) {
    let c = report.comparison;
    let mut props = vec![
        ("run_id".to_owned(), report.info.run_id.clone()),
        (
            "baseline".to_owned(),
            report.baseline_info().baseline.spec.clone(),
        ),
        ("candidate".to_owned(), report.info.candidate.spec.clone()),
        ("trials".to_owned(), report.info.trials.to_string()),
        (
            "outcome".to_owned(),
            format!("{:?}", c.outcome()).to_lowercase(),
        ),
    ];
    let diagnosis = super::diagnosis::text(&crate::analysis::Diagnosis::of(c));
    if !diagnosis.is_empty() {
        props.push(("diagnosis".to_owned(), diagnosis.trim_end().to_owned()));
    }
    for r in c
        .rows
        .iter()
        .filter(|r| r.host == host && r.task_id == SUITE && r.scope == Scope::Suite && r.tested())
    {
        props.push((
            r.metric.as_str().to_owned(),
            format!(
                "{} → {} ({}, p_adj {})",
                format::value(r.metric, r.baseline_mean),
                format::value(r.metric, r.candidate_mean),
                r.verdict,
                format::p(r.p_adjusted)
            ),
        ));
    }
    let _ = writeln!(out, "    <properties>");
    for (name, value) in props {
        let _ = writeln!(
            out,
            "      <property name=\"{}\" value=\"{}\"/>",
            escape(&name),
            escape(&value)
        );
    }
    let _ = writeln!(out, "    </properties>");
}

fn testcase(out: &mut String, c: &Comparison, t: &TaskOutcome) {
    let _ = write!(
        out,
        "    <testcase classname=\"{}\" name=\"{}\"",
        escape(&format!("mcpeval.{}", t.host)),
        escape(&t.task_id)
    );
    let rows: Vec<&Row> = c
        .task_rows(&t.task_id, &t.host)
        .filter(|r| r.tested())
        .collect();
    let regressed: Vec<&Row> = regressions(c, t).collect();
    let _ = writeln!(out, ">");
    if !regressed.is_empty() {
        let message = regressed
            .iter()
            .map(|r| describe(r))
            .collect::<Vec<_>>()
            .join("; ");
        let mut body = format!(
            "success {} → {}\n",
            format::successes(&t.baseline),
            format::successes(&t.candidate)
        );
        for r in &regressed {
            let _ = writeln!(body, "regression: {}", describe(r));
        }
        // The failed trials explain a success regression; for a count metric they would not.
        if regressed.iter().any(|r| r.metric == Metric::Success) {
            for (why, n) in &t.candidate.failures {
                let _ = writeln!(body, "candidate, {n} trial(s): {why}");
            }
        }
        let _ = writeln!(
            out,
            "      <failure type=\"regression\" message=\"{}\">{}</failure>",
            attr(&format!("regression: {message}")),
            escape(body.trim_end())
        );
    }
    // The task's verdict in the words summary.md uses, then each row with its own.
    let mut details = format!("verdict: {}\n", format::task_verdict_words(c, t));
    if crate::analysis::Diagnosis::baseline_never_passed(t) {
        let side = match t.candidate.n > 0 && t.candidate.successes == 0 {
            true => "both sides failed every trial: check the task or the host",
            false => "the baseline failed every trial: check the servers' setup",
        };
        let why = t.baseline.failures.first().map_or("", |(w, _)| w.as_str());
        let _ = writeln!(details, "note: {side}; baseline: {why}");
    }
    for r in &rows {
        let _ = writeln!(details, "{}: {}{}", r.verdict, describe(r), why(c, r));
    }
    let _ = writeln!(
        out,
        "      <system-out>{}</system-out>",
        escape(details.trim_end())
    );
    let _ = writeln!(out, "    </testcase>");
}

/// What a row's verdict means, as summary.md says it: ` — too few trials to tell (…)`; empty
/// where the verdict says it all.
fn why(c: &Comparison, r: &Row) -> String {
    format::reason(c, r, format::Length::Full).map_or_else(String::new, |w| format!(" — {w}"))
}

fn describe(r: &Row) -> String {
    format!(
        "{} {} → {} (delta {}, CI {}, {} p_adj {})",
        r.metric,
        format::value(r.metric, r.baseline_mean),
        format::value(r.metric, r.candidate_mean),
        format::delta(r.metric, r.delta),
        format::interval(r),
        r.test.as_str(),
        format::p(r.p_adjusted)
    )
}

/// Escapes text for an XML element or attribute, dropping characters XML 1.0 cannot hold.
/// Attribute values are written on one line (see [`attr`]).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' => out.push(ch),
            '\r' => {}
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// Escapes an attribute value, its line breaks turned into spaces.
fn attr(s: &str) -> String {
    escape(&s.replace(['\n', '\t'], " "))
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_markup_and_drops_control_characters() {
        assert_eq!(escape("a<b & \"c\"\u{1}"), "a&lt;b &amp; &quot;c&quot;");
    }
}
