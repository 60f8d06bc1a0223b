//! What `mcpeval init` drafted and did not verify, and how it kept the server's state safe: the
//! tasks that would call a tool that may change state on a server whose state may outlive its
//! process (`DIR/unverified.yaml`, outside the suite), and the report's section on the state.

use super::calls::{call_json, Probe};
use super::guard::{Guard, Safety};
use super::models::ModelDraft;
use super::teardown::Teardown;
use super::write::{Files, Report};

/// A call task drafted without sending its request: it expects a result without `isError`.
#[derive(Debug, Clone)]
pub struct UnverifiedCall {
    pub probe: Probe,
    pub teardown: Option<Teardown>,
}

/// The tasks drafted and not verified.
#[derive(Debug, Clone, Default)]
pub struct Unverified {
    pub calls: Vec<UnverifiedCall>,
    pub models: Vec<(ModelDraft, Option<Teardown>)>,
}

impl Unverified {
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.models.is_empty()
    }
}

/// `unverified.yaml`: a header saying why nothing in it was run and how to verify it, then the
/// call tasks and the model tasks; `None` when there is nothing.
pub fn unverified_yaml(report: &Report) -> Option<String> {
    let tasks = &report.unverified;
    let guard = report.guard.as_ref()?;
    if tasks.is_empty() {
        return None;
    }
    let mut out = format!(
        "# Tasks `mcpeval init` drafted from {} and did NOT verify: each would\n\
         # call (or offer a model) a tool that may change the server's state: {}.\n\
         # {}.\n# This file is outside the suite: nothing here is run. To verify them, {}.\n\
         # Or review a task, run it against a scratch server, and move it into tasks/.\n",
        report.server,
        words(guard),
        capital(Guard::why_not()),
        Guard::how_to().trim_start_matches("to verify, "),
    );
    for call in &tasks.calls {
        out.push_str(&call_yaml(call));
    }
    for (draft, teardown) in &tasks.models {
        let mut comment = format!(
            "unverified model task; {}; {}",
            draft.purpose.words(),
            draft.origin.words()
        );
        if teardown.is_some() {
            comment.push_str("; the teardown undoes what the expected call makes");
        }
        out.push('\n');
        out.push_str(&draft.yaml(&comment));
        out.extend(teardown.as_ref().map(Teardown::yaml));
    }
    Some(out)
}

fn call_yaml(call: &UnverifiedCall) -> String {
    let p = &call.probe;
    let mut out =
        format!(
        "\n# unverified call task: {} (not sent: no answer to pin, so it expects only a result \
         without isError)\n- id: {}\n  kind: call\n  call: {}\n{}  expect:\n    is_error: false\n",
        p.why,
        p.id,
        call_json(&p.request),
        if p.malformed { "  malformed: true\n" } else { "" },
    );
    out.extend(call.teardown.as_ref().map(Teardown::yaml));
    out
}

/// The state-changing tools with why each counts as one: `write_note` (not annotated
/// readOnlyHint: true).
fn words(guard: &Guard) -> String {
    (guard.state_changing.iter())
        .map(|(tool, why)| format!("`{tool}` ({why})"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The report's section: how the state was handled, the tools not called, the unverified
/// tasks.
pub fn report_section(files: &Files, report: &Report) -> String {
    let Some(guard) = &report.guard else {
        return String::new();
    };
    let mut out = format!("\n## The server's state\n\n{}.\n", capital(&guard.words()));
    if guard.safety == Safety::ReadOnly && !guard.state_changing.is_empty() {
        out.push_str("\nNot called:\n\n");
        for (tool, why) in &guard.state_changing {
            out.push_str(&format!("- `{tool}`: {why}\n"));
        }
    }
    if !report.unverified.is_empty() {
        out.push_str(&format!(
            "\n{} call task(s) and {} model task(s) drafted and **not verified** -> `{}` \
             (outside the suite, never run).\n",
            report.unverified.calls.len(),
            report.unverified.models.len(),
            files.unverified.display()
        ));
    }
    out
}

/// The console's lines on the state: one saying how it was handled, one per tool not called.
pub fn console_lines(files: &Files, report: &Report) -> Vec<String> {
    let Some(guard) = &report.guard else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if guard.safety == Safety::ReadOnly {
        for (tool, why) in &guard.state_changing {
            out.push(format!(
                "not called: tool `{tool}` ({why}): {}",
                Guard::why_not()
            ));
        }
        if !guard.state_changing.is_empty() {
            out.push(Guard::how_to().to_owned());
        }
    } else if !guard.state_changing.is_empty() {
        out.push(guard.words());
    }
    if !report.unverified.is_empty() {
        out.push(format!(
            "{} call task(s) and {} model task(s) drafted, not verified -> {}",
            report.unverified.calls.len(),
            report.unverified.models.len(),
            files.unverified.display()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::init::models::{ExpectedCall, Origin, Purpose};
    use crate::suite::CallSpec;
    use serde_json::json;

    #[test]
    fn the_unverified_tasks_load_as_a_suite_with_their_teardowns() {
        let mut report = Report::new("srv", &Default::default());
        assert_eq!(unverified_yaml(&report), None, "before the listing");
        report.guard = Some(Guard {
            safety: Safety::ReadOnly,
            state_changing: vec![(
                "create_note".into(),
                "not annotated readOnlyHint: true".into(),
            )],
        });
        assert_eq!(unverified_yaml(&report), None, "nothing unverified");
        let args = json!({"name": "a", "text": "t"})
            .as_object()
            .cloned()
            .unwrap();
        let teardown = Teardown {
            tool: "delete_note".into(),
            args: json!({"name": "a"}).as_object().cloned().unwrap(),
        };
        report.unverified.calls.push(UnverifiedCall {
            probe: Probe {
                id: "call-create-note".into(),
                request: CallSpec::Tool {
                    name: "create_note".into(),
                    args: args.clone(),
                },
                why: "arguments filled from its input schema".into(),
                writes: true,
                malformed: false,
                chosen: Vec::new(),
            },
            teardown: Some(teardown.clone()),
        });
        let draft = ModelDraft {
            id: "model-create-note-1".into(),
            tool: Some("create_note".into()),
            prompt: "Make a note named \"a\" saying t.".into(),
            call: Some(ExpectedCall {
                tool: "create_note".into(),
                args,
                is_error: Some(false),
            }),
            forbidden: Vec::new(),
            purpose: Purpose::Serves,
            origin: Origin::Templated,
            first_turn: None,
        };
        report.unverified.models.push((draft, Some(teardown)));
        let text = unverified_yaml(&report).unwrap();
        assert!(text.contains("did NOT verify"), "{text}");
        assert!(
            text.contains("`create_note` (not annotated readOnlyHint: true)"),
            "{text}"
        );
        let suite = crate::suite::load_sources(&[("unverified.yaml".into(), text.clone())])
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(suite.tasks.len(), 2);
        for task in &suite.tasks {
            assert_eq!(task.teardown.len(), 1, "{text}");
            assert_eq!(task.teardown[0].tool, "delete_note");
            assert_eq!(task.teardown[0].args["name"], json!("a"));
        }
        assert_eq!(suite.tasks[0].call_expect.is_error, Some(false));
    }
}
