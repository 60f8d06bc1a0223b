//! The writer host of `mcpeval init --writer-host`: an LLM asked for the model tasks of each
//! tool, its answers checked before any trial.
//!
//! One request per tool asks for [`PER_TOOL`] requests the tool serves (and confusion requests
//! for a tool that could be mistaken for it), one request for the whole server asks for
//! near-miss and general no-tool requests (prompts in `writer_prompt.rs`, answers read by
//! `writer_parse.rs`). What cannot be a task is rejected at stage `writer`, with the reason:
//! an answer that is not the JSON asked for, a request that names its tool, arguments the
//! input schema refuses, a provider that failed for that tool. Nothing here aborts `init`.

use futures::stream::{self, StreamExt};
use rmcp::model::Tool;
use serde_json::Value;

use super::draft::slug;
use super::models::{refuse, Drafts, ExpectedCall, ModelDraft, Origin, Purpose, Rejected, Stage};
use super::writer_parse::{self as parse, Written};
use super::writer_prompt;
use crate::host::{Completion, CompletionRequest, HostError, Message, Model, RequestContext};

/// Requests asked for per tool (the first this many of an answer are kept; confusion requests
/// come on top, at most [`MAX_CONFUSIONS`]).
pub const PER_TOOL: usize = 3;
const MAX_CONFUSIONS: usize = 2;
/// No-tool requests asked for the whole server: near misses in its domain, general ones.
pub const NEAR_MISSES: usize = 2;
pub const GENERAL: usize = 1;
/// Writer requests in flight at once (the host's rate limits apply beneath).
const IN_FLIGHT: usize = 4;

/// Asks `model` (named `host` in the files) for model tasks of `tools`; what it writes that
/// cannot be a task is in `Drafts::rejected`, with the reason. (The simulated model cannot
/// write: `model_tasks` drafts from templates instead, and says so.)
pub async fn draft(
    model: &dyn Model,
    host: &str,
    tools: &[rmcp::model::Tool],
    instructions: Option<&str>,
) -> Drafts {
    let writer = Writer { model, host, tools };
    let asks = tools.iter().enumerate().map(|(i, tool)| {
        let messages = writer_prompt::tool_messages(tool, tools, instructions, PER_TOOL);
        writer.ask(messages, format!("init-writer:{}", tool.name), i as u64)
    });
    let server_messages = writer_prompt::server_messages(tools, instructions, NEAR_MISSES, GENERAL);
    let server_ask = writer.ask(
        server_messages,
        "init-writer:no-tool".into(),
        tools.len() as u64,
    );
    let (answers, server_answer): (Vec<_>, _) =
        futures::join!(stream::iter(asks).buffered(IN_FLIGHT).collect(), server_ask);
    let mut drafts = Drafts::default();
    for (tool, answer) in tools.iter().zip(answers) {
        if let Some(text) = writer.answer(answer, Some(tool.name.as_ref()), &mut drafts) {
            writer.take_tool(tool, &text, &mut drafts);
        }
    }
    if let Some(text) = writer.answer(server_answer, None, &mut drafts) {
        writer.take_server(&text, &mut drafts);
    }
    drafts
}

struct Writer<'a> {
    model: &'a dyn Model,
    host: &'a str,
    tools: &'a [Tool],
}

impl Writer<'_> {
    async fn ask(
        &self,
        messages: Vec<Message>,
        task_id: String,
        seed: u64,
    ) -> Result<Completion, HostError> {
        let request = CompletionRequest {
            messages,
            tools: Vec::new().into(),
            seed,
            context: RequestContext {
                task_id,
                ..RequestContext::default()
            },
        };
        self.model.complete(&request).await
    }

    /// The answer's text, its tokens counted; a provider's failure is a note and a rejected
    /// entry for what was asked (`tool`, or the no-tool requests).
    fn answer(
        &self,
        answer: Result<Completion, HostError>,
        tool: Option<&str>,
        drafts: &mut Drafts,
    ) -> Option<String> {
        let completion = match answer {
            Ok(completion) => completion,
            Err(e) => {
                let why = crate::error::chain(&e);
                let what = match tool {
                    Some(tool) => format!("`{tool}`"),
                    None => "the no-tool requests".to_owned(),
                };
                drafts.notes.push(format!(
                    "the writer host `{}` failed for {what}: {why}",
                    self.host
                ));
                reject(drafts, None, tool, format!("the writer host failed: {why}"));
                return None;
            }
        };
        drafts.writer_input_tokens += completion.usage.input_tokens
            + completion.usage.cache_read_tokens
            + completion.usage.cache_write_tokens;
        drafts.writer_output_tokens += completion.usage.output_tokens;
        let text = completion.content.unwrap_or_default();
        // Said first, so that a rejection's excerpt shows why the JSON is unfinished.
        Some(match completion.truncated {
            true => format!("(the answer stopped at the output cap) {text}"),
            false => text,
        })
    }

    /// The requests written for `tool`: each a draft, or rejected with the reason.
    fn take_tool(&self, tool: &Tool, text: &str, drafts: &mut Drafts) {
        let name = tool.name.to_string();
        let (requests, confusions) = match parse::tool_answer(text) {
            Ok(answer) => answer,
            Err(e) => return reject(drafts, None, Some(&name), e.to_string()),
        };
        if requests.is_empty() && confusions.is_empty() {
            let why = format!("the writer wrote no request for `{name}`");
            return reject(drafts, None, Some(&name), why);
        }
        let kept = (requests.into_iter().take(PER_TOOL))
            .chain(confusions.into_iter().take(MAX_CONFUSIONS));
        for (n, item) in kept.enumerate() {
            let written = match item {
                Ok(written) => written,
                Err(why) => {
                    reject(drafts, None, Some(&name), why);
                    continue;
                }
            };
            let draft = self.serves(tool, n + 1, written);
            match self.refused(&draft) {
                Some(why) => reject(drafts, Some(draft), Some(&name), why),
                None => drafts.drafts.push(with_matchers(draft, tool)),
            }
        }
    }

    /// A draft of `written`, a request `tool` serves, its expected arguments as written.
    fn serves(&self, tool: &Tool, n: usize, written: Written) -> ModelDraft {
        let name = tool.name.to_string();
        let (id, purpose, forbidden) = match written.other {
            Some(other) => (
                format!("model-{}-not-{}-w{n}", slug(&name), slug(&other)),
                Purpose::Confusion {
                    other: other.clone(),
                },
                vec![other],
            ),
            None => (
                format!("model-{}-w{n}", slug(&name)),
                Purpose::Serves,
                vec![],
            ),
        };
        ModelDraft {
            id,
            tool: Some(name.clone()),
            prompt: written.prompt,
            call: Some(ExpectedCall {
                tool: name,
                args: written.args,
                is_error: Some(false),
            }),
            forbidden,
            purpose,
            origin: Origin::Writer(self.host.to_owned()),
            first_turn: None,
        }
    }

    /// Why `draft` cannot be a task: [`refuse`]'s reasons, or a confusion request whose other
    /// tool is not another one the server lists.
    fn refused(&self, draft: &ModelDraft) -> Option<String> {
        if let Purpose::Confusion { other } = &draft.purpose {
            if draft.tool.as_deref() == Some(other.as_str()) {
                return Some(format!(
                    "the tool it must not call, `{other}`, is its own tool"
                ));
            }
            if !self.tools.iter().any(|t| t.name == other.as_str()) {
                return Some(format!(
                    "the tool it must not call, `{other}`, is not one the server lists"
                ));
            }
        }
        refuse(draft, self.tools)
    }

    /// The no-tool requests written for the whole server.
    fn take_server(&self, text: &str, drafts: &mut Drafts) {
        let (near, general) = match parse::server_answer(text) {
            Ok(answer) => answer,
            Err(e) => return reject(drafts, None, None, e.to_string()),
        };
        let kinds = [
            (near, NEAR_MISSES, "near-miss", Purpose::NearMiss),
            (general, GENERAL, "general", Purpose::NoToolGeneral),
        ];
        for (items, most, words, purpose) in kinds {
            for (n, item) in items.into_iter().take(most).enumerate() {
                let written = match item {
                    Ok(written) => written,
                    Err(why) => {
                        reject(drafts, None, None, why);
                        continue;
                    }
                };
                let draft = ModelDraft {
                    id: format!("model-no-tool-{words}-w{}", n + 1),
                    tool: None,
                    prompt: written.prompt,
                    call: None,
                    forbidden: vec![],
                    purpose: purpose.clone(),
                    origin: Origin::Writer(self.host.to_owned()),
                    first_turn: None,
                };
                match refuse(&draft, self.tools) {
                    Some(why) => reject(drafts, Some(draft), None, why),
                    None => drafts.drafts.push(draft),
                }
            }
        }
    }
}

/// `draft` with its expected arguments as the task format matches them (checked as written).
fn with_matchers(mut draft: ModelDraft, tool: &Tool) -> ModelDraft {
    let schema = Value::Object((*tool.input_schema).clone());
    if let Some(call) = &mut draft.call {
        call.args = parse::expected_args(&call.args, &schema);
    }
    draft
}

fn reject(drafts: &mut Drafts, draft: Option<ModelDraft>, tool: Option<&str>, reason: String) {
    drafts.rejected.push(Rejected {
        draft,
        tool: tool.map(str::to_owned),
        stage: Stage::Writer,
        reason,
        calls: vec![],
    });
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
