//! The graders of what a host showed besides tools: the resources a trial read
//! (`resources_read`, `resources_not_read`) and the server prompts it started from
//! (`prompts_used`, `prompts_not_used`), from the trial's host calls.

use super::{check, Check};
use crate::suite::{glob_matches, Expectations};

/// One request the host made for the trial: its label (`resource:URI`, `prompt:NAME`,
/// `resources/list`) and whether the server refused it.
#[derive(Debug, Clone, Copy)]
pub struct HostRequest<'a> {
    pub label: &'a str,
    pub is_error: bool,
}

/// The checks of `expect`'s exposure graders over the trial's host calls (a read counts when
/// the server answered it, whether the model asked for it or the task attached it), and a
/// failed check when the trial could not start from its server prompt.
pub fn exposure_checks(
    expect: &Expectations,
    host_calls: &[HostRequest<'_>],
    opening_failure: Option<&str>,
) -> Vec<Check> {
    let answered = |prefix: &str| -> Vec<&str> {
        (host_calls.iter())
            .filter(|c| !c.is_error)
            .filter_map(|c| c.label.strip_prefix(prefix))
            .collect()
    };
    let (read, used) = (answered("resource:"), answered("prompt:"));
    let mut checks = Vec::new();
    if let Some(why) = opening_failure {
        checks.push(check(
            "server_prompt",
            false,
            format!("the trial could not start: {why}"),
        ));
    }
    if !expect.resources_read.is_empty() {
        checks.push(all_found(
            "resources_read",
            &expect.resources_read,
            &read,
            "resource",
        ));
    }
    if !expect.resources_not_read.is_empty() {
        checks.push(none_found(
            "resources_not_read",
            &expect.resources_not_read,
            &read,
            "resource",
        ));
    }
    if !expect.prompts_used.is_empty() {
        checks.push(all_found(
            "prompts_used",
            &expect.prompts_used,
            &used,
            "prompt",
        ));
    }
    if !expect.prompts_not_used.is_empty() {
        checks.push(none_found(
            "prompts_not_used",
            &expect.prompts_not_used,
            &used,
            "prompt",
        ));
    }
    checks
}

/// Each of `wanted` (a name, or a pattern with `*`) matches something in `got`.
fn all_found(grader: &str, wanted: &[String], got: &[&str], what: &str) -> Check {
    let missing: Vec<String> = (wanted.iter())
        .filter(|w| !got.iter().any(|g| glob_matches(w, g)))
        .map(|w| format!("`{w}`"))
        .collect();
    match missing.is_empty() {
        true => check(
            grader,
            true,
            format!("every expected {what} was read: {}", listed(got)),
        ),
        false => check(
            grader,
            false,
            format!(
                "no {what} matched {} (got {})",
                missing.join(", "),
                listed(got)
            ),
        ),
    }
}

/// None of `forbidden` matches anything in `got`.
fn none_found(grader: &str, forbidden: &[String], got: &[&str], what: &str) -> Check {
    let found: Vec<String> = (got.iter())
        .filter(|g| forbidden.iter().any(|f| glob_matches(f, g)))
        .map(|g| format!("`{g}`"))
        .collect();
    match found.is_empty() {
        true => check(
            grader,
            true,
            format!("no forbidden {what} (got {})", listed(got)),
        ),
        false => check(
            grader,
            false,
            format!("forbidden {what} {}", found.join(", ")),
        ),
    }
}

fn listed(got: &[&str]) -> String {
    match got.is_empty() {
        true => "none".to_owned(),
        false => got
            .iter()
            .map(|g| format!("`{g}`"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host_call(label: &str, is_error: bool) -> HostRequest<'_> {
        HostRequest { label, is_error }
    }

    #[test]
    fn reads_count_when_answered_and_prompts_when_used() {
        let expect = Expectations {
            resources_read: vec!["tracker://issues/*".into()],
            resources_not_read: vec!["tracker://projects".into()],
            prompts_used: vec!["triage_issue".into()],
            ..Expectations::default()
        };
        let calls = [
            host_call("resources/list", false),
            host_call("resource:tracker://issues/5", false),
            host_call("prompt:triage_issue", false),
        ];
        let checks = exposure_checks(&expect, &calls, None);
        assert_eq!(checks.len(), 3);
        assert!(checks.iter().all(|c| c.passed), "{checks:?}");
        // A read the server refused is no read; a forbidden one fails.
        let calls = [
            host_call("resource:tracker://issues/5", true),
            host_call("resource:tracker://projects", false),
        ];
        let checks = exposure_checks(&expect, &calls, Some("server prompt `x`: Error -32602"));
        let failed: Vec<&str> = (checks.iter().filter(|c| !c.passed))
            .map(|c| c.grader.as_str())
            .collect();
        assert_eq!(
            failed,
            [
                "server_prompt",
                "resources_read",
                "resources_not_read",
                "prompts_used"
            ]
        );
        assert!(
            checks[1].explanation.contains("`tracker://issues/*`"),
            "{checks:?}"
        );
    }
}
