//! Reading Codex CLI's `exec --json` events back into a `TrialOutput`: `item.started` /
//! `item.completed` of type `mcp_tool_call` (server, bare tool name, arguments, result or error,
//! status), `agent_message` (the answer), the app's own tools (`command_execution`, …),
//! `turn.completed` (usage) and `turn.failed` / `error`.
//!
//! Codex reports neither model turns nor its version nor a cost in this stream: turns are
//! counted as the steps it shows (a message, or calls started while none was running), the
//! version is what `codex --version` said when the host was built.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;

use super::process::Finished;
use super::stream::{arguments_text, opening};
use crate::episode::{recorded_result, AppFacts, ToolCallRecord, TrialOutput};
use crate::host::{Message, ToolCallRequest};

/// What Codex 0.171 answers for a call its approval policy refuses.
const APPROVAL_REFUSED: &str = "requires approval, but approval policy is never";

/// The events read into the episode's record. A crash, a timeout, a stream without
/// `turn.completed` (Codex exits 1 without one when a `required` server does not start) or a
/// failed turn (the model API's error) is an infrastructure error carrying the tail of the
/// app's stderr.
pub fn parse_events(
    finished: &Finished,
    label: &str,
    prompt: &str,
    version: Option<&str>,
    model: Option<&str>,
) -> TrialOutput {
    let mut reader = Reader::new(label, prompt);
    reader.facts.version = version.map(|v| v.trim_start_matches("codex-cli ").trim().to_owned());
    reader.out.model = Some(match model {
        Some(m) => format!("codex:{m}"),
        None => "codex".to_owned(),
    });
    for (at, line) in &finished.lines {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        reader.event(&event, *at);
    }
    let (mut out, completed) = reader.finish();
    finished.mark_failure(
        &mut out,
        "codex",
        completed,
        "turn.completed",
        " (Codex has no turn limit: the timeout bounds a trial)",
    );
    out
}

struct Reader<'a> {
    label: &'a str,
    out: TrialOutput,
    facts: AppFacts,
    /// Item id → (record index, when it started) for calls still running.
    pending: HashMap<String, (usize, Duration)>,
    /// Item id → record index, for every call seen.
    ids: HashMap<String, usize>,
    last_text: Option<String>,
    completed: bool,
}

impl<'a> Reader<'a> {
    fn new(label: &'a str, prompt: &str) -> Self {
        Self {
            label,
            out: opening(prompt),
            facts: AppFacts {
                app: "codex".into(),
                ..AppFacts::default()
            },
            pending: HashMap::new(),
            ids: HashMap::new(),
            last_text: None,
            completed: false,
        }
    }

    fn event(&mut self, event: &Value, at: Duration) {
        let item = event.get("item").unwrap_or(&Value::Null);
        match event.get("type").and_then(Value::as_str) {
            Some("item.started") => self.started(item, at),
            Some("item.completed") => self.item_completed(item, at),
            Some("turn.completed") => self.turn_completed(event),
            Some("turn.failed") => {
                let message = event
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("no message");
                self.out.infra_error = Some(format!("turn failed: {message}"));
            }
            Some("error") => {
                let message = event
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no message");
                self.out.infra_error = Some(format!("stream error: {message}"));
            }
            _ => {}
        }
    }

    fn is_call(item: &Value) -> bool {
        item.get("type").and_then(Value::as_str) == Some("mcp_tool_call")
    }

    fn started(&mut self, item: &Value, at: Duration) {
        if Self::is_call(item) {
            self.call(item, at);
        }
    }

    /// A new call's record (and assistant message: calls started while another runs join it).
    fn call(&mut self, item: &Value, at: Duration) -> usize {
        let id = item.get("id").and_then(Value::as_str).unwrap_or("");
        if let Some(&at) = self.ids.get(id) {
            return at;
        }
        let server = item.get("server").and_then(Value::as_str).unwrap_or("");
        let tool = item.get("tool").and_then(Value::as_str).unwrap_or("");
        let arguments = arguments_text(item.get("arguments"));
        // Another server's tool (none is configured): kept under the app's naming.
        let name = if server == self.label {
            tool.to_owned()
        } else {
            format!("mcp__{server}__{tool}")
        };
        let index = self.out.calls.len();
        self.out
            .calls
            .push(ToolCallRecord::made(index as u32, &name, &arguments));
        let request = ToolCallRequest {
            id: id.to_owned(),
            name: format!("mcp__{server}__{tool}"),
            arguments,
        };
        let joins = !self.pending.is_empty();
        match self.out.messages.last_mut() {
            Some(Message::Assistant { tool_calls, .. }) if joins => tool_calls.push(request),
            _ => {
                self.out.turns += 1;
                self.out.messages.push(Message::Assistant {
                    content: None,
                    tool_calls: vec![request],
                    reasoning: None,
                    server_blocks: Vec::new(),
                });
            }
        }
        self.ids.insert(id.to_owned(), index);
        self.pending.insert(id.to_owned(), (index, at));
        self.last_text = None;
        index
    }

    fn item_completed(&mut self, item: &Value, at: Duration) {
        match item.get("type").and_then(Value::as_str) {
            Some("mcp_tool_call") => {
                let index = self.call(item, at);
                let id = item.get("id").and_then(Value::as_str).unwrap_or("");
                let started = self.pending.remove(id).map_or(at, |(_, s)| s);
                let failed = item.get("status").and_then(Value::as_str) == Some("failed");
                let error = item
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let result = item.get("result").unwrap_or(&Value::Null);
                let is_error = failed
                    || error.is_some()
                    || result.get("is_error").and_then(Value::as_bool) == Some(true);
                let text = error.unwrap_or_else(|| result_text(result));
                // Codex's own approval gate (a tool it deems to need approval, which nobody
                // can give in `exec`): a permission denial, as Claude Code's refusals are.
                let refused = is_error && text.contains(APPROVAL_REFUSED);
                let record = &mut self.out.calls[index];
                record.is_error = is_error;
                record.error_kind = match (is_error, refused) {
                    (true, true) => Some("permission".to_owned()),
                    (true, false) => Some("tool".to_owned()),
                    _ => None,
                };
                if refused {
                    self.facts.permission_denials.push(record.tool.clone());
                }
                record.latency_ms = at.saturating_sub(started).as_secs_f64() * 1000.0;
                record.result = recorded_result(&text);
                record.replay_unmatched = ToolCallRecord::says_no_record(record.is_error, &text);
                self.out.messages.push(Message::Tool {
                    tool_call_id: id.to_owned(),
                    content: text,
                });
            }
            Some("agent_message") => {
                let text = item.get("text").and_then(Value::as_str).unwrap_or("");
                self.out.turns += 1;
                self.last_text = Some(text.to_owned());
                self.out.messages.push(Message::Assistant {
                    content: Some(text.to_owned()).filter(|t| !t.is_empty()),
                    tool_calls: Vec::new(),
                    reasoning: None,
                    server_blocks: Vec::new(),
                });
            }
            // Warnings such as "Model metadata for `sim` not found": the trial goes on.
            Some("error") => {}
            Some("reasoning" | "todo_list") | None => {}
            Some(other) => self.facts.builtin_calls.push(other.to_owned()),
        }
    }

    fn turn_completed(&mut self, event: &Value) {
        self.completed = true;
        let usage = event.get("usage").unwrap_or(&Value::Null);
        let count = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        // OpenAI's input count includes the cached part; the record keeps them apart.
        let cached = count("cached_input_tokens");
        self.out.usage.input_tokens += count("input_tokens").saturating_sub(cached);
        self.out.usage.cache_read_tokens += cached;
        self.out.usage.cache_write_tokens += count("cache_write_input_tokens");
        self.out.usage.output_tokens += count("output_tokens");
        self.out.final_answer = self.last_text.clone();
    }

    fn finish(mut self) -> (TrialOutput, bool) {
        self.out.app = Some(self.facts);
        (self.out, self.completed)
    }
}

/// An MCP result's text: its text content blocks, else its structured content as JSON.
fn result_text(result: &Value) -> String {
    let texts: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect();
    if !texts.is_empty() {
        return texts.join("\n");
    }
    match result.get("structured_content") {
        None | Some(Value::Null) => String::new(),
        Some(v) => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEARCH: &str = include_str!("../../../tests/fixtures/apps/codex/exec-search.jsonl");
    const FAILED: &str = include_str!("../../../tests/fixtures/apps/codex/exec-failed.jsonl");

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

    fn parse(stream: &str) -> TrialOutput {
        parse_events(
            &finished(stream),
            "tracker",
            "Search issues",
            Some("codex-cli 0.171.0"),
            Some("sim"),
        )
    }

    #[test]
    fn a_real_transcript_reads_into_bare_tool_calls_tokens_and_an_answer() {
        let out = parse(SEARCH);
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
        assert_eq!(call.latency_ms, 10.0);
        assert_eq!(out.turns, 2);
        assert_eq!(out.usage.input_tokens, 28553);
        assert_eq!(out.usage.output_tokens, 110);
        assert_eq!(out.usage.cache_read_tokens, 0);
        assert!(out
            .final_answer
            .as_deref()
            .unwrap()
            .starts_with("Here is what I found"));
        assert!(!out.hit_max_turns);
        assert_eq!(out.model.as_deref(), Some("codex:sim"));
        let app = out.app.unwrap();
        assert_eq!(app.app, "codex");
        assert_eq!(app.version.as_deref(), Some("0.171.0"));
        assert!(app.builtin_calls.is_empty(), "{:?}", app.builtin_calls);
        // The prompt, the call, its result, the answer.
        assert_eq!(out.messages.len(), 4);
    }

    #[test]
    fn failed_calls_are_tool_errors_and_cached_tokens_are_kept_apart() {
        let out = parse(FAILED);
        assert_eq!(out.infra_error, None);
        assert_eq!(out.calls.len(), 2);
        for call in &out.calls {
            assert_eq!(call.tool, "get_issue");
            assert!(call.is_error);
            assert_eq!(call.error_kind.as_deref(), Some("tool"));
            assert!(
                call.result.starts_with("unknown issue id 99"),
                "{}",
                call.result
            );
        }
        assert_eq!(out.turns, 3);
        assert!(out.app.as_ref().unwrap().permission_denials.is_empty());
        // The text Codex gives a call its approval policy refuses (seen with demo 1.5.0's
        // update_issue): a permission denial.
        let refused = FAILED.replace(
            "unknown issue id 99; there are 12 issues, numbered 1 to 12 (use search to find an issue's number)",
            "MCP tool call requires approval, but approval policy is never",
        );
        let out = parse(&refused);
        assert_eq!(out.calls[0].error_kind.as_deref(), Some("permission"));
        assert_eq!(
            out.app.unwrap().permission_denials,
            ["get_issue", "get_issue"]
        );
        let cached = FAILED.replace(
            r#""input_tokens":42870,"cached_input_tokens":0"#,
            r#""input_tokens":42870,"cached_input_tokens":40000"#,
        );
        let out = parse(&cached);
        assert_eq!(out.usage.input_tokens, 2870);
        assert_eq!(out.usage.cache_read_tokens, 40000);
    }

    #[test]
    fn a_cut_stream_a_timeout_and_a_failed_turn_are_infrastructure_errors() {
        let cut: String = SEARCH.lines().take(4).collect::<Vec<_>>().join("\n");
        let error = parse(&cut).infra_error.unwrap();
        assert!(error.contains("no `turn.completed`"), "{error}");
        assert!(
            error.ends_with("--- app stderr ---\nsome stderr"),
            "{error}"
        );
        let mut hung = finished(&cut);
        hung.timed_out = true;
        let error = parse_events(&hung, "tracker", "p", None, None)
            .infra_error
            .unwrap();
        assert!(error.contains("timeout"), "{error}");
        let failed = format!(
            "{cut}\n{}",
            r#"{"type":"turn.failed","error":{"message":"stream disconnected"}}"#
        );
        let error = parse(&failed).infra_error.unwrap();
        assert!(
            error.contains("turn failed: stream disconnected"),
            "{error}"
        );
        assert!(parse("not json\n{]")
            .infra_error
            .unwrap()
            .contains("no `turn.completed`"));
    }
}
