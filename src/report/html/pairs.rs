//! A baseline transcript and the candidate transcript of the same trial side by side in
//! `report.html`, message by message, with the first message where they differ marked.

use std::fmt::Write;

use super::text::{escape, escape_truncated, inline, shorten};
use super::transcripts::{Pair, TrialFacts};
use crate::episode::Transcript;
use crate::host::{Message, ToolCallRequest};

/// Longest tool result shown, in characters (the rest is in `transcripts.jsonl`).
pub const TOOL_RESULT_CHARS: usize = 1_500;
/// Longest message text or tool arguments shown.
pub const TEXT_CHARS: usize = 4_000;

/// Whether two messages say the same. Tool-call ids are left out: providers make them up.
fn same(a: &Message, b: &Message) -> bool {
    let calls = |x: &[ToolCallRequest], y: &[ToolCallRequest]| {
        x.len() == y.len()
            && x.iter()
                .zip(y)
                .all(|(p, q)| p.name == q.name && p.arguments == q.arguments)
    };
    match (a, b) {
        (Message::System { content: x }, Message::System { content: y })
        | (Message::User { content: x }, Message::User { content: y })
        | (Message::Tool { content: x, .. }, Message::Tool { content: y, .. }) => x == y,
        (
            Message::Assistant {
                content: x,
                tool_calls: xc,
                ..
            },
            Message::Assistant {
                content: y,
                tool_calls: yc,
                ..
            },
        ) => x == y && calls(xc, yc),
        _ => false,
    }
}

/// The index of the first message of the exchange where two transcripts differ (one ending
/// before the other counts), or `None` when they are the same. System prompts are left out:
/// they carry the server's instructions, which differ whenever the instructions changed, and
/// are marked on their own.
pub fn first_divergence(a: &[Message], b: &[Message]) -> Option<usize> {
    (0..a.len().max(b.len())).find(|&i| match (a.get(i), b.get(i)) {
        (Some(Message::System { .. }), Some(Message::System { .. })) => false,
        (Some(x), Some(y)) => !same(x, y),
        _ => true,
    })
}

/// The trial pairs of one task: a chooser when there are several, then each pair.
pub fn render(out: &mut String, task_index: usize, pairs: &[Pair]) {
    if pairs.len() > 1 {
        let _ = write!(
            out,
            "<p class=\"chooser\"><label>Trial pair: <select class=\"trial-select\" \
             data-task=\"{task_index}\">"
        );
        for p in pairs {
            let _ = write!(
                out,
                "<option value=\"{}\">trial {}{}</option>",
                p.trial,
                p.trial,
                p.pick
                    .map_or(String::new(), |k| format!(" · {}", k.label()))
            );
        }
        out.push_str("</select></label></p>\n");
    }
    for (n, p) in pairs.iter().enumerate() {
        let _ = writeln!(
            out,
            "<div class=\"pair\" data-task=\"{task_index}\" data-trial=\"{}\"{}>",
            p.trial,
            if n == 0 { "" } else { " data-alt=\"1\"" }
        );
        pair(out, p);
        out.push_str("</div>\n");
    }
}

fn pair(out: &mut String, p: &Pair) {
    let _ = writeln!(
        out,
        "<h4>Trial {}{}</h4>",
        p.trial,
        p.pick
            .map_or(String::new(), |k| format!(": {}", escape(k.label())))
    );
    out.push_str("<div class=\"sides\">\n");
    for (side, name) in ["baseline", "candidate"].iter().enumerate() {
        facts(out, name, p.facts[side].as_ref());
    }
    out.push_str("</div>\n");
    let [Some(a), Some(b)] = &p.transcripts else {
        let missing: Vec<&str> = ["baseline", "candidate"]
            .iter()
            .zip(&p.transcripts)
            .filter(|(_, t)| t.is_none())
            .map(|(n, _)| *n)
            .collect();
        let _ = writeln!(
            out,
            "<p class=\"note\">No {} transcript of this trial in transcripts.jsonl.</p>",
            missing.join(" or ")
        );
        return;
    };
    exchange(out, a, b);
}

/// The trial's outcome on one side, above its column.
fn facts(out: &mut String, side: &str, f: Option<&TrialFacts>) {
    let Some(f) = f else {
        let _ = writeln!(
            out,
            "<div class=\"side-facts\"><b>{side}</b>: no record</div>"
        );
        return;
    };
    let (class, outcome) = if f.success {
        ("pass", "passed")
    } else {
        ("fail", "failed")
    };
    let why = f.grade.failure_summary();
    let _ =
        writeln!(
        out,
        "<div class=\"side-facts {side}\"><b>{side}</b> <span class=\"badge {class}\">{outcome}\
         </span> {} tool {}, {} tokens{}</div>",
        f.tool_calls,
        if f.tool_calls == 1 { "call" } else { "calls" },
        f.total_tokens,
        if f.success || why.is_empty() {
            String::new()
        } else {
            format!("<div class=\"why\">{}</div>", inline(&shorten(&why, TEXT_CHARS)))
        }
    );
}

/// The two message lists in aligned rows, with the divergence marked.
fn exchange(out: &mut String, a: &Transcript, b: &Transcript) {
    let diverged = first_divergence(&a.messages, &b.messages);
    out.push_str("<div class=\"exchange\">\n");
    for i in 0..a.messages.len().max(b.messages.len()) {
        let (x, y) = (a.messages.get(i), b.messages.get(i));
        if diverged == Some(i) {
            out.push_str(
                "<div class=\"diverged\">▼ diverged here: the first message of the \
                 exchange that differs</div>\n",
            );
        }
        let differs = match (x, y) {
            (Some(x), Some(y)) => !same(x, y),
            _ => true,
        };
        for m in [x, y] {
            message(out, m, differs, diverged.is_some_and(|d| i >= d));
        }
    }
    if diverged.is_none() {
        out.push_str("<div class=\"same\">The two transcripts do not differ.</div>\n");
    }
    out.push_str("</div>\n");
}

fn message(out: &mut String, m: Option<&Message>, differs: bool, after: bool) {
    let Some(m) = m else {
        out.push_str("<div class=\"msg none\">(no message)</div>\n");
        return;
    };
    let (role, body) = match m {
        Message::System { content } => ("system", pre(content, TEXT_CHARS)),
        Message::User { content } => ("user", pre(content, TEXT_CHARS)),
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let mut body = content
                .as_deref()
                .map_or(String::new(), |c| pre(c, TEXT_CHARS));
            for call in tool_calls {
                let _ = write!(
                    body,
                    "<div class=\"call\">→ <code>{}</code>{}</div>",
                    escape(&call.name),
                    pre(&call.arguments, TEXT_CHARS)
                );
            }
            ("assistant", body)
        }
        Message::Tool { content, .. } => ("tool", pre(content, TOOL_RESULT_CHARS)),
    };
    let mark = match (role, differs) {
        ("system", true) => " <span class=\"badge differs\">differs</span>",
        _ => "",
    };
    let _ = writeln!(
        out,
        "<div class=\"msg {role}{}{}\"><div class=\"role\">{role}{mark}</div>{body}</div>",
        if differs { " differs" } else { "" },
        if after { " after" } else { "" }
    );
}

fn pre(text: &str, max: usize) -> String {
    format!("<pre>{}</pre>", escape_truncated(text, max))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::episode::Side;

    fn call(id: &str, name: &str, args: &str) -> Message {
        Message::Assistant {
            reasoning: None,
            content: None,
            tool_calls: vec![ToolCallRequest {
                id: id.into(),
                name: name.into(),
                arguments: args.into(),
            }],
            server_blocks: Vec::new(),
        }
    }

    fn user(text: &str) -> Message {
        Message::User {
            content: text.into(),
        }
    }

    fn system(text: &str) -> Message {
        Message::System {
            content: text.into(),
        }
    }

    fn result(text: &str) -> Message {
        Message::Tool {
            tool_call_id: "x".into(),
            content: text.into(),
        }
    }

    #[test]
    fn divergence_is_the_first_differing_message_of_the_exchange() {
        let a = vec![
            system("v1"),
            user("q"),
            call("c1", "get", "{}"),
            result("r"),
        ];
        // Other call ids and another system prompt: not a divergence.
        let b = vec![
            system("v2"),
            user("q"),
            call("c9", "get", "{}"),
            result("r"),
        ];
        assert_eq!(first_divergence(&a, &b), None);
        let c = vec![
            system("v1"),
            user("q"),
            call("c1", "find", "{}"),
            result("r"),
        ];
        assert_eq!(first_divergence(&a, &c), Some(2));
        let d = vec![system("v1"), user("q"), call("c1", "get", "{\"id\":1}")];
        assert_eq!(first_divergence(&a, &d), Some(2), "other arguments");
        assert_eq!(
            first_divergence(&a, &a[..3]),
            Some(3),
            "one side stops early"
        );
        assert_eq!(first_divergence(&a[..1], &a), Some(1));
        assert_eq!(first_divergence(&[], &[]), None);
    }

    fn transcript(side: Side, messages: Vec<Message>) -> Transcript {
        Transcript {
            run_id: "r".into(),
            task_id: "t".into(),
            side,
            host: "sim".into(),
            trial: 0,
            seed: 1,
            tools: Vec::new().into(),
            messages,
            judge: None,
        }
    }

    #[test]
    fn a_script_in_a_tool_result_comes_out_inert_and_the_divergence_is_marked() {
        let evil = "<script>alert(1)</script><img src=x onerror=alert(2)>";
        let a = transcript(Side::Baseline, vec![system("v1"), user("q"), result("ok")]);
        let b = transcript(
            Side::Candidate,
            vec![
                system("v2"),
                user("q"),
                result(evil),
                call("c", "<b>", "\"<i>\""),
            ],
        );
        let mut out = String::new();
        exchange(&mut out, &a, &b);
        assert!(!out.contains("<script"), "{out}");
        assert!(!out.contains("<img"), "{out}");
        assert!(!out.contains("<b>") && !out.contains("<i>"), "{out}");
        assert!(
            out.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{out}"
        );
        assert!(out.contains("&lt;img src=x onerror=alert(2)&gt;"), "{out}");
        assert_eq!(out.matches("diverged here").count(), 1);
        let marker = out.find("diverged here").unwrap();
        assert!(
            out[..marker].contains("<pre>q</pre>") && out[marker..].contains("&lt;script"),
            "the marker stands between the common prefix and the first difference: {out}"
        );
        assert!(
            out[..marker].contains("badge differs"),
            "the system prompts differ"
        );
    }

    #[test]
    fn long_tool_results_are_cut() {
        let long = "x".repeat(TOOL_RESULT_CHARS + 500);
        let mut out = String::new();
        message(&mut out, Some(&result(&long)), false, false);
        assert!(out.contains("(500 more characters"), "{out}");
        assert!(out.len() < TOOL_RESULT_CHARS + 300);
    }
}
