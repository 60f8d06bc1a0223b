//! Reading Claude Code's `--output-format stream-json --verbose` transcript back into a
//! `TrialOutput`: `system/init` (version, MCP server status), `assistant` messages (text and
//! `tool_use`), `user` messages (`tool_result`), and the final `result` (turns, usage, cost,
//! permission denials).

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;

use super::process::Finished;
use super::stream::{arguments_text, called_tool, opening};
use crate::episode::{recorded_result, AppFacts, ToolCallRecord, TrialOutput};
use crate::host::{Message, ToolCallRequest};

/// The transcript read into the episode's record. A crash, a timeout, a stream without a
/// `result` event, an API error or a server that did not connect is an infrastructure error
/// carrying the tail of the app's stderr.
pub fn parse_stream(finished: &Finished, label: &str, prompt: &str) -> TrialOutput {
    let mut reader = Reader::new(label, prompt);
    for (at, line) in &finished.lines {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        reader.event(&event, *at);
    }
    let (mut out, saw_result) = reader.finish();
    finished.mark_failure(&mut out, "claude-code", saw_result, "result", "");
    out
}

/// A `tool_use` waiting for its result.
struct Pending {
    record: usize,
    at: Duration,
}

struct Reader<'a> {
    label: &'a str,
    out: TrialOutput,
    facts: AppFacts,
    /// Assistant message ids seen (Claude Code prints one event per content block).
    turns: Vec<String>,
    pending: HashMap<String, Pending>,
    /// Every `tool_use` id and its record.
    ids: HashMap<String, usize>,
    /// The last assistant message's text (the answer, if no tool call follows).
    last_text: Option<String>,
    saw_result: bool,
}

impl<'a> Reader<'a> {
    fn new(label: &'a str, prompt: &str) -> Self {
        let out = opening(prompt);
        Self {
            label,
            out,
            facts: AppFacts {
                app: "claude-code".into(),
                ..AppFacts::default()
            },
            turns: Vec::new(),
            pending: HashMap::new(),
            ids: HashMap::new(),
            last_text: None,
            saw_result: false,
        }
    }

    /// The bare server tool name for `mcp__<label>__<tool>`; `None` for the app's own tools.
    fn server_tool<'n>(&self, name: &'n str) -> Option<&'n str> {
        name.strip_prefix("mcp__")?
            .strip_prefix(self.label)?
            .strip_prefix("__")
    }

    fn event(&mut self, event: &Value, at: Duration) {
        match event.get("type").and_then(Value::as_str) {
            Some("system") => self.system(event),
            Some("assistant") if event.get("parent_tool_use_id").is_none_or(Value::is_null) => {
                self.assistant(event, at)
            }
            Some("user") if event.get("parent_tool_use_id").is_none_or(Value::is_null) => {
                self.user(event, at)
            }
            Some("result") => self.result(event),
            _ => {}
        }
    }

    fn system(&mut self, event: &Value) {
        if event.get("subtype").and_then(Value::as_str) != Some("init") {
            return;
        }
        if let Some(v) = event.get("claude_code_version").and_then(Value::as_str) {
            self.facts.version = Some(v.to_owned());
        }
        let servers = event.get("mcp_servers").and_then(Value::as_array);
        for server in servers.into_iter().flatten() {
            let name = server.get("name").and_then(Value::as_str).unwrap_or("");
            let status = server.get("status").and_then(Value::as_str).unwrap_or("");
            if name == self.label && status != "connected" {
                self.out.infra_error = Some(format!(
                    "could not use the server: MCP server `{name}` is `{status}`"
                ));
            }
        }
    }

    fn assistant(&mut self, event: &Value, at: Duration) {
        let message = event.get("message").unwrap_or(&Value::Null);
        let id = message.get("id").and_then(Value::as_str).unwrap_or("");
        if !self.turns.iter().any(|t| t == id) {
            self.turns.push(id.to_owned());
            if self.out.model.is_none() {
                self.out.model = message
                    .get("model")
                    .and_then(Value::as_str)
                    .map(|m| format!("claude-code:{m}"));
            }
        }
        let blocks = message.get("content").and_then(Value::as_array);
        let mut text = String::new();
        let mut calls = Vec::new();
        for block in blocks.into_iter().flatten() {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    text.push_str(block.get("text").and_then(Value::as_str).unwrap_or(""))
                }
                Some("tool_use") => calls.push(self.tool_use(block, at)),
                _ => {}
            }
        }
        if !calls.is_empty() {
            self.last_text = None;
        } else if !text.is_empty() {
            self.last_text = Some(text.clone());
        }
        self.out.messages.push(Message::Assistant {
            content: Some(text).filter(|t| !t.is_empty()),
            tool_calls: calls,
            reasoning: None,
            server_blocks: Vec::new(),
        });
    }

    fn tool_use(&mut self, block: &Value, at: Duration) -> ToolCallRequest {
        let id = block.get("id").and_then(Value::as_str).unwrap_or("");
        let name = block.get("name").and_then(Value::as_str).unwrap_or("");
        let arguments = arguments_text(block.get("input"));
        let bare = self.server_tool(name);
        let tool = called_tool(&mut self.facts, bare, name);
        self.ids.insert(id.to_owned(), self.out.calls.len());
        self.pending.insert(
            id.to_owned(),
            Pending {
                record: self.out.calls.len(),
                at,
            },
        );
        self.out.calls.push(ToolCallRecord::made(
            self.out.calls.len() as u32,
            &tool,
            &arguments,
        ));
        ToolCallRequest {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments,
        }
    }

    fn user(&mut self, event: &Value, at: Duration) {
        let blocks = event
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array);
        for block in blocks.into_iter().flatten() {
            if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                continue;
            }
            let id = block
                .get("tool_use_id")
                .and_then(Value::as_str)
                .unwrap_or("");
            let text = result_text(block.get("content"));
            let is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
            if let Some(p) = self.pending.remove(id) {
                let record = &mut self.out.calls[p.record];
                record.is_error = is_error;
                record.error_kind = is_error.then(|| "tool".to_owned());
                record.latency_ms = at.saturating_sub(p.at).as_secs_f64() * 1000.0;
                record.result = recorded_result(&text);
                record.replay_unmatched = ToolCallRecord::says_no_record(record.is_error, &text);
            }
            self.out.messages.push(Message::Tool {
                tool_call_id: id.to_owned(),
                content: text,
            });
        }
    }

    fn result(&mut self, event: &Value) {
        self.saw_result = true;
        let subtype = event.get("subtype").and_then(Value::as_str).unwrap_or("");
        let num_turns = event
            .get("num_turns")
            .and_then(Value::as_u64)
            .map(|n| n as u32);
        self.facts.num_turns = num_turns;
        self.facts.cost_usd = event.get("total_cost_usd").and_then(Value::as_f64);
        let usage = event.get("usage").unwrap_or(&Value::Null);
        let count = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        self.out.usage.input_tokens = count("input_tokens");
        self.out.usage.output_tokens = count("output_tokens");
        self.out.usage.cache_read_tokens = count("cache_read_input_tokens");
        self.out.usage.cache_write_tokens = count("cache_creation_input_tokens");
        let denials = event.get("permission_denials").and_then(Value::as_array);
        for denial in denials.into_iter().flatten() {
            let name = denial
                .get("tool_name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let id = denial
                .get("tool_use_id")
                .and_then(Value::as_str)
                .unwrap_or("");
            let bare = self.server_tool(name).unwrap_or(name).to_owned();
            self.facts.permission_denials.push(bare);
            if let Some(call) = self.call_of(id) {
                call.is_error = true;
                call.error_kind = Some("permission".into());
            }
        }
        let is_error = event.get("is_error").and_then(Value::as_bool) == Some(true);
        match subtype {
            "error_max_turns" => self.out.hit_max_turns = true,
            "success" if !is_error => {
                self.out.final_answer = event
                    .get("result")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or_else(|| self.last_text.clone());
            }
            _ => {
                let text = event
                    .get("result")
                    .and_then(Value::as_str)
                    .or_else(|| event.get("error").and_then(Value::as_str))
                    .unwrap_or("no message");
                self.out.infra_error = Some(format!("ended with `{subtype}`: {text}"));
            }
        }
    }

    /// The record of the call with this `tool_use` id.
    fn call_of(&mut self, id: &str) -> Option<&mut ToolCallRecord> {
        let at = *self.ids.get(id)?;
        self.out.calls.get_mut(at)
    }

    /// The output, and whether a `result` event came.
    fn finish(mut self) -> (TrialOutput, bool) {
        self.out.turns = self.turns.len() as u32;
        self.out.app = Some(self.facts);
        (self.out, self.saw_result)
    }
}

/// A tool result's text: a string, or the text blocks of an array (Claude Code passes MCP
/// content through).
fn result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEARCH: &str =
        include_str!("../../../tests/fixtures/apps/claude-code/stream-search.jsonl");
    const DENIED: &str =
        include_str!("../../../tests/fixtures/apps/claude-code/stream-denied.jsonl");

    fn finished(stream: &str) -> Finished {
        Finished {
            lines: stream
                .lines()
                .enumerate()
                .map(|(i, l)| (Duration::from_millis(10 * i as u64), l.to_owned()))
                .collect(),
            stderr_tail: "some stderr".into(),
            status: None,
            timed_out: false,
            elapsed: Duration::from_millis(500),
        }
    }

    #[test]
    fn a_real_transcript_reads_into_bare_tool_calls_tokens_and_an_answer() {
        let out = parse_stream(&finished(SEARCH), "tracker", "Search issues");
        assert_eq!(out.infra_error, None);
        assert_eq!(out.calls.len(), 1);
        let call = &out.calls[0];
        assert_eq!(call.tool, "search_issues");
        assert_eq!(
            serde_json::from_str::<Value>(&call.arguments).unwrap(),
            serde_json::json!({"project": "zephyr", "query": "crash"})
        );
        assert!(!call.is_error);
        assert!(
            call.result.contains("App crashes when uploading"),
            "{}",
            call.result
        );
        assert_eq!(out.turns, 2);
        assert!(out.usage.input_tokens > 10_000, "{:?}", out.usage);
        assert!(out.usage.output_tokens > 0);
        assert!(out
            .final_answer
            .as_deref()
            .unwrap()
            .contains("Here is what I found"));
        assert!(!out.hit_max_turns);
        assert_eq!(out.model.as_deref(), Some("claude-code:sim"));
        let app = out.app.unwrap();
        assert_eq!(app.version.as_deref(), Some("2.1.332"));
        assert!(app.cost_usd.unwrap() > 0.0);
        assert!(app.permission_denials.is_empty());
        // The prompt, the call, its result, the answer.
        assert_eq!(out.messages.len(), 4);
    }

    #[test]
    fn refused_calls_are_permission_denials_not_infrastructure_errors() {
        let out = parse_stream(&finished(DENIED), "tracker", "Search issues");
        assert_eq!(out.infra_error, None);
        assert_eq!(out.calls.len(), 2);
        for call in &out.calls {
            assert_eq!(call.tool, "search_issues");
            assert!(call.is_error);
            assert_eq!(call.error_kind.as_deref(), Some("permission"));
        }
        let app = out.app.unwrap();
        assert_eq!(app.permission_denials, ["search_issues", "search_issues"]);
        assert!(out.final_answer.unwrap().contains("haven't granted"));
    }

    #[test]
    fn a_cut_stream_a_timeout_and_a_failed_server_are_infrastructure_errors() {
        let cut: String = SEARCH.lines().take(3).collect::<Vec<_>>().join("\n");
        let error = parse_stream(&finished(&cut), "tracker", "p")
            .infra_error
            .unwrap();
        assert!(error.contains("no `result` event"), "{error}");
        assert!(
            error.ends_with("--- app stderr ---\nsome stderr"),
            "{error}"
        );
        let mut hung = finished(&cut);
        hung.timed_out = true;
        let error = parse_stream(&hung, "tracker", "p").infra_error.unwrap();
        assert!(error.contains("timeout"), "{error}");
        let failed = SEARCH.replacen(r#""status":"connected""#, r#""status":"failed""#, 1);
        let error = parse_stream(&finished(&failed), "tracker", "p")
            .infra_error
            .unwrap();
        assert!(error.contains("`tracker` is `failed`"), "{error}");
        let garbage = parse_stream(&finished("not json\n{]"), "tracker", "p");
        assert!(garbage.infra_error.unwrap().contains("no `result` event"));
    }
}
