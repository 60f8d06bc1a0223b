//! What `mcpeval sim-server` can play besides faults, for tests of what a host sends and of what
//! a run makes of a model's text: a log of the request bodies it received (`--record-requests
//! FILE`), and a model that writes its tool calls as text (`--tool-calls-as-text`), as local
//! models and endpoints without a tool-call parser do.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use serde_json::Value;

use crate::host::Completion;

impl super::AppState {
    /// The sim's answer to `request`, as this server plays it.
    pub(super) fn respond(&self, request: &crate::host::CompletionRequest) -> Completion {
        let mut completion = self.sim.respond(request);
        if self.tool_calls_as_text {
            calls_as_text(&mut completion);
        }
        completion
    }
}

/// Appends each request body received, one JSON line each, to a file.
#[derive(Debug)]
pub struct RequestLog(Mutex<File>);

impl RequestLog {
    /// Creates (or empties) `path`, then appends to it: a reader may empty it between runs.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        File::create(path)?;
        let file = std::fs::OpenOptions::new().append(true).open(path)?;
        Ok(Self(Mutex::new(file)))
    }

    /// The log at `path` (`--record-requests`), if one is asked for.
    pub fn at(path: Option<&Path>) -> anyhow::Result<Option<Self>> {
        use anyhow::Context;
        path.map(|p| Self::create(p).with_context(|| format!("cannot create {}", p.display())))
            .transpose()
    }

    /// Writes `body` as one line: compact JSON, or the text as a JSON string when it is none.
    pub fn record(&self, body: &[u8]) {
        let line = match serde_json::from_slice::<Value>(body) {
            Ok(value) => value.to_string(),
            Err(_) => Value::String(String::from_utf8_lossy(body).into_owned()).to_string(),
        };
        let mut file = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // A test double: a line that cannot be written shows as a line missing from the log.
        let _ = writeln!(file, "{line}");
        let _ = file.flush();
    }
}

/// The answer with its tool calls written into the text instead, each as a Markdown JSON block
/// (```json {"name": …, "arguments": …}```) after what the model said, and no structured call.
pub fn calls_as_text(completion: &mut Completion) {
    if completion.tool_calls.is_empty() {
        return;
    }
    let blocks = completion.tool_calls.drain(..).map(|call| {
        let arguments =
            serde_json::from_str::<Value>(&call.arguments).unwrap_or(Value::String(call.arguments));
        // Name first, as models write it (a JSON object would sort its keys).
        let name = Value::String(call.name);
        format!("```json\n{{\"name\": {name}, \"arguments\": {arguments}}}\n```")
    });
    let said = completion.content.take().filter(|c| !c.trim().is_empty());
    let text: Vec<String> = said.into_iter().chain(blocks).collect();
    completion.content = Some(text.join("\n"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::ToolCallRequest;

    #[test]
    fn tool_calls_become_json_blocks_in_the_text() {
        let mut completion = Completion {
            content: Some("Let me look.".into()),
            tool_calls: vec![ToolCallRequest {
                id: "c1".into(),
                name: "get_issue".into(),
                arguments: r#"{"id": 3}"#.into(),
            }],
            ..Default::default()
        };
        calls_as_text(&mut completion);
        assert!(completion.tool_calls.is_empty());
        assert_eq!(
            completion.content.as_deref(),
            Some(
                "Let me look.\n```json\n{\"name\": \"get_issue\", \"arguments\": {\"id\":3}}\n```"
            )
        );
    }

    #[test]
    fn the_log_has_one_line_per_request() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("requests.jsonl");
        let log = RequestLog::create(&path).unwrap();
        log.record(
            br#"{"model": "sim",
            "tool_choice": "required"}"#,
        );
        log.record(b"not json");
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                r#"{"model":"sim","tool_choice":"required"}"#,
                r#""not json""#
            ]
        );
    }
}
