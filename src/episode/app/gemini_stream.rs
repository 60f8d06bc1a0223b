//! Reading Gemini CLI's `--output-format stream-json` events back into a `TrialOutput`: `init`
//! (the model), `message` (the assistant's text, in deltas), `tool_use` / `tool_result` (the
//! call under `mcp_<label>_<tool>`, its parameters, its status and output or error), `error`
//! (warnings) and the final `result` (status, token stats).
//!
//! Gemini CLI reports no model turns, no cost and no version in this stream: turns are counted
//! as the steps it shows (text or calls after the previous step's results), the version is what
//! `gemini --version` said when the host was built.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;

use super::process::Finished;
use super::stream::{arguments_text, called_tool, opening};
use crate::episode::{recorded_result, AppFacts, ToolCallRecord, TrialOutput};
use crate::host::wire::gemini_tool_error_text;
use crate::host::{Message, ToolCallRequest};

/// What Gemini CLI 0.61 answers, headless, for a call its policy says to ask about.
const CONFIRMATION_REFUSED: &str = "requires user confirmation, which is not supported";

/// What Gemini CLI prints on stderr (and nowhere else) when a configured MCP server failed to
/// connect or to list its tools; the trial then goes on without them.
const MCP_ISSUES: &str = "MCP issues detected";

/// The `error.type` of the `result` Gemini CLI ends with at `model.maxSessionTurns`.
const TURN_LIMIT: &str = "FatalTurnLimitedError";

/// The events read into the episode's record. A crash, a timeout, a stream without a `result`,
/// a `result` with an error other than the turn limit (the model API's errors), or a server
/// that did not connect is an infrastructure error carrying the tail of the app's stderr.
pub fn parse_stream(
    finished: &Finished,
    label: &str,
    prompt: &str,
    version: Option<&str>,
) -> TrialOutput {
    let mut reader = Reader::new(label, prompt);
    reader.facts.version = version.map(|v| v.trim().to_owned());
    for (at, line) in &finished.lines {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        reader.event(&event, *at);
    }
    let (mut out, ended) = reader.finish();
    if out.infra_error.is_none() && finished.stderr_tail.contains(MCP_ISSUES) {
        out.infra_error = Some(format!(
            "could not use the server: `{MCP_ISSUES}` (Gemini CLI goes on without a server \
             that fails to start)"
        ));
    }
    finished.mark_failure(&mut out, "gemini-cli", ended, "result", "");
    out
}

struct Reader<'a> {
    label: &'a str,
    out: TrialOutput,
    facts: AppFacts,
    /// `tool_id` → (record index, when it was called) for calls without a result yet.
    pending: HashMap<String, (usize, Duration)>,
    /// Whether the last event closed a step (a tool result), so the next text or call is a
    /// new turn.
    step_done: bool,
    /// The text of the current assistant step (the answer, if no call follows).
    last_text: Option<String>,
    ended: bool,
}

impl<'a> Reader<'a> {
    fn new(label: &'a str, prompt: &str) -> Self {
        Self {
            label,
            out: opening(prompt),
            facts: AppFacts {
                app: "gemini-cli".into(),
                ..AppFacts::default()
            },
            pending: HashMap::new(),
            step_done: true,
            last_text: None,
            ended: false,
        }
    }

    /// The bare server tool name for `mcp_<label>_<tool>`; `None` for the app's own tools.
    fn server_tool<'n>(&self, name: &'n str) -> Option<&'n str> {
        name.strip_prefix("mcp_")?
            .strip_prefix(self.label)?
            .strip_prefix('_')
            .filter(|t| !t.is_empty())
    }

    fn event(&mut self, event: &Value, at: Duration) {
        match event.get("type").and_then(Value::as_str) {
            Some("init") => {
                let model = event.get("model").and_then(Value::as_str);
                self.out.model = Some(match model {
                    Some(m) => format!("gemini-cli:{m}"),
                    None => "gemini-cli".to_owned(),
                });
            }
            Some("message") if event.get("role").and_then(Value::as_str) == Some("assistant") => {
                let text = event.get("content").and_then(Value::as_str).unwrap_or("");
                self.text(text);
            }
            Some("tool_use") => self.tool_use(event, at),
            Some("tool_result") => self.tool_result(event, at),
            Some("result") => self.result(event),
            _ => {}
        }
    }

    /// The assistant message of the current step, a new one (and turn) after a step's results.
    fn step(&mut self) -> &mut Message {
        if self.step_done || !matches!(self.out.messages.last(), Some(Message::Assistant { .. })) {
            self.step_done = false;
            self.out.turns += 1;
            self.last_text = None;
            self.out.messages.push(Message::Assistant {
                content: None,
                tool_calls: Vec::new(),
                reasoning: None,
                server_blocks: Vec::new(),
            });
        }
        let last = self.out.messages.len() - 1;
        &mut self.out.messages[last]
    }

    /// A text delta: appended to the step's text.
    fn text(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        if let Message::Assistant { content, .. } = self.step() {
            let text = content.get_or_insert_with(String::new);
            text.push_str(delta);
            let text = text.clone();
            self.last_text = Some(text);
        }
    }

    fn tool_use(&mut self, event: &Value, at: Duration) {
        let id = event.get("tool_id").and_then(Value::as_str).unwrap_or("");
        let name = event.get("tool_name").and_then(Value::as_str).unwrap_or("");
        let arguments = arguments_text(event.get("parameters"));
        let bare = self.server_tool(name);
        let tool = called_tool(&mut self.facts, bare, name);
        let index = self.out.calls.len();
        self.out
            .calls
            .push(ToolCallRecord::made(index as u32, &tool, &arguments));
        self.pending.insert(id.to_owned(), (index, at));
        if let Message::Assistant { tool_calls, .. } = self.step() {
            tool_calls.push(ToolCallRequest {
                id: id.to_owned(),
                name: name.to_owned(),
                arguments,
            });
        }
        self.last_text = None;
    }

    fn tool_result(&mut self, event: &Value, at: Duration) {
        let id = event.get("tool_id").and_then(Value::as_str).unwrap_or("");
        let failed = event.get("status").and_then(Value::as_str) != Some("success");
        let output = event.get("output").and_then(Value::as_str).unwrap_or("");
        let error = event.get("error").unwrap_or(&Value::Null);
        let kind = error.get("type").and_then(Value::as_str).unwrap_or("");
        let message = error.get("message").and_then(Value::as_str);
        let text = if !failed {
            output.to_owned()
        } else if kind == "mcp_tool_error" {
            // The server's own error text is inside Gemini CLI's message.
            message
                .and_then(gemini_tool_error_text)
                .unwrap_or_else(|| message.unwrap_or(output).to_owned())
        } else {
            message.unwrap_or(output).to_owned()
        };
        let refused = failed && (kind == "policy_violation" || text.contains(CONFIRMATION_REFUSED));
        if let Some((index, started)) = self.pending.remove(id) {
            let record = &mut self.out.calls[index];
            record.is_error = failed;
            record.error_kind = match (failed, refused, kind) {
                (false, _, _) => None,
                (true, true, _) => Some("permission".into()),
                // Gemini CLI checks arguments against the schema, and names, itself.
                (true, false, "invalid_tool_params" | "tool_not_registered") => {
                    Some("model".into())
                }
                (true, false, _) => Some("tool".into()),
            };
            if refused {
                self.facts.permission_denials.push(record.tool.clone());
            }
            record.latency_ms = at.saturating_sub(started).as_secs_f64() * 1000.0;
            record.result = recorded_result(&text);
            record.replay_unmatched = ToolCallRecord::says_no_record(record.is_error, &text);
        }
        self.out.messages.push(Message::Tool {
            tool_call_id: id.to_owned(),
            content: text,
        });
        self.step_done = true;
    }

    fn result(&mut self, event: &Value) {
        self.ended = true;
        let stats = event.get("stats").unwrap_or(&Value::Null);
        let count = |k: &str| stats.get(k).and_then(Value::as_u64);
        // `input_tokens` includes the cached part, `input` is without it.
        let cached = count("cached").unwrap_or(0);
        let input = count("input")
            .unwrap_or_else(|| count("input_tokens").unwrap_or(0).saturating_sub(cached));
        self.out.usage.input_tokens = input;
        self.out.usage.cache_read_tokens = cached;
        self.out.usage.output_tokens = count("output_tokens").unwrap_or(0);
        match event.get("status").and_then(Value::as_str) {
            Some("success") => self.out.final_answer = self.last_text.clone(),
            _ => {
                let error = event.get("error").unwrap_or(&Value::Null);
                let kind = error.get("type").and_then(Value::as_str).unwrap_or("");
                if kind == TURN_LIMIT {
                    self.out.hit_max_turns = true;
                } else {
                    let message = error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("no message");
                    self.out.infra_error = Some(format!("ended with error `{kind}`: {message}"));
                }
            }
        }
    }

    fn finish(mut self) -> (TrialOutput, bool) {
        self.out.app = Some(self.facts);
        (self.out, self.ended)
    }
}

#[cfg(test)]
#[path = "gemini_stream_tests.rs"]
mod tests;
