//! The agent loop of one trial: the model and the server's tools take turns until the model answers.

use std::time::{Duration, Instant};

use super::conversation::{grade_calls, Author, UserTurnRecord};
use super::record::ToolCallRecord;
use super::tools::{system_prompt, HostTool, ToolView};
use crate::error::chain;
use crate::host::{
    Completion, CompletionRequest, HostProfile, Message, Model, ToolCallRequest, Usage,
};
use crate::mcp::{CallOutcome, McpConnection};

/// A tool result longer than this is cut in the stored record (the model still gets all of it).
const RECORDED_RESULT_CHARS: usize = 4000;

/// What one trial needs besides the server connection.
pub struct TrialInput<'a> {
    pub prompt: &'a str,
    pub max_turns: u32,
    pub model: &'a dyn Model,
    pub profile: &'a HostProfile,
    pub seed: u64,
    /// Task, side and trial index, passed to the model with every request (the response cache
    /// keys on them).
    pub context: crate::host::RequestContext,
    pub tools: &'a ToolView,
    pub instructions: Option<&'a str>,
    pub call_timeout: Duration,
    /// A conversation's scripted user turns (`turns:`), each graded on its own; empty for a task
    /// of one message (`prompt`, within `max_turns`).
    pub turns: &'a [crate::suite::UserTurn],
    /// Stop the conversation at its first failed turn.
    pub stop_on_failure: bool,
    /// The task's kind, which each turn's grade takes into account (`no-tool`: no call).
    pub kind: crate::suite::TaskKind,
    /// A simulated user who carries the conversation on after `prompt` (`user:`).
    pub user: Option<super::UserPlayer<'a>>,
    /// Resources put into the first user message (`attach:`).
    pub attach: &'a [String],
    /// The server prompt whose messages open the conversation instead of `prompt`.
    pub server_prompt: Option<&'a crate::suite::ServerPrompt>,
}

/// What one trial did. `infra_error` is set when the model's provider or the server failed: the
/// trial then says nothing about the model and is left out of the statistics.
#[derive(Debug, Clone, Default)]
pub struct TrialOutput {
    pub turns: u32,
    pub calls: Vec<ToolCallRecord>,
    pub usage: Usage,
    pub model: Option<String>,
    pub final_answer: Option<String>,
    pub hit_max_turns: bool,
    pub messages: Vec<Message>,
    pub infra_error: Option<String>,
    /// Set with `infra_error` when the side's server caused it: what the server was asked when it
    /// failed (`tools/call `x``, `start`, `setup call `y``). Such a trial, after its last attempt,
    /// is the side's failure (`server_error`), not an infrastructure error.
    pub server_failed: Option<String>,
    pub latency_ms: f64,
    /// Requests to the model that failed and were retried before an answer came (one line each).
    pub request_retries: Vec<String>,
    /// What an app host reported besides (app hosts only).
    pub app: Option<super::AppFacts>,
    /// The first model turn (1-based) whose answer stopped at the output cap.
    pub truncated_turn: Option<u32>,
    /// The last turn's streamed answer was still going at the request timeout: the trial ended
    /// with what it had produced.
    pub timed_out: bool,
    /// How each model turn's answer arrived, in order.
    pub model_turns: Vec<super::ModelTurn>,
    /// A turn's provider sent no token counts (a streamed answer cut at the timeout, whose usage
    /// came never): that turn's tokens are estimated (see [`estimate_usage`]).
    pub tokens_estimated: bool,
    /// The grade a `kind: call` trial came with (its checks need the whole answer, which the
    /// record does not keep); `None` for a model's trial, graded from the record.
    pub grade: Option<crate::grade::Grade>,
    /// The `expect.after` checks of the state the trial left, graded with the trial.
    pub after: Vec<crate::grade::Check>,
    /// The answers that wrote a tool call as text instead of making it (see
    /// [`super::text_calls`]), and the calls among them that could not be recovered.
    pub text_calls: super::TextToolCalls,
    /// The tools the model was offered, by their server names in the order it saw them, joined
    /// by `,` (empty where mcpeval does not list them: call tasks, app hosts).
    pub tools_offered: String,
    /// A conversation's user messages and what followed each (empty for one message).
    pub user_turns: Vec<UserTurnRecord>,
    /// The checks of each user turn's own `expect`, tagged with their turn.
    pub turn_checks: Vec<crate::grade::Check>,
    /// The server's own requests during the trial (sampling, elicitation) and their answers.
    pub asks: Vec<crate::mcp::AskRecord>,
    /// The host's requests for what it shows besides tools (resource tools' calls, attachments,
    /// the server prompt), in order: not among `calls`, which are the server's tools'.
    pub host_calls: Vec<ToolCallRecord>,
    /// The trial could not start as its task says (its server prompt was refused): it fails
    /// with this reason, no model turn taken.
    pub opening_failure: Option<String>,
    /// The searches for tools the model made (`tool_search`); `None` without tool search.
    pub tool_search: Option<super::search::SearchLog>,
}

/// Runs the loop: system prompt, task prompt, then model ↔ tools until the model answers without
/// calling a tool or `max_turns` model turns have been taken. A conversation (`turns`) does so
/// for each user message in turn, in one growing exchange.
pub async fn run_trial(input: &TrialInput<'_>, server: &McpConnection) -> TrialOutput {
    let started = Instant::now();
    // The conversation lives in the request and grows there turn by turn (no copy per turn); it
    // moves into the output at the end.
    let mut request = CompletionRequest {
        messages: vec![Message::System {
            content: system_prompt(input.profile, input.instructions),
        }],
        tools: input.tools.specs.clone(),
        seed: input.seed,
        context: input.context.clone(),
    };
    let mut out = TrialOutput {
        tool_search: input.profile.tool_search.map(|_| Default::default()),
        ..TrialOutput::default()
    };
    let opening = super::exposed::opening(
        input.prompt,
        input.attach,
        input.server_prompt,
        server,
        input.call_timeout,
    )
    .await;
    let opening = match opening {
        Ok(opening) => opening,
        Err(e) => {
            let what = match input.server_prompt {
                Some(p) => format!("prompts/get `{}`", p.name),
                None => "resources/read (attach)".to_owned(),
            };
            out.server_failed = Some(what);
            out.infra_error = Some(chain(&e));
            out.messages = request.messages;
            return out;
        }
    };
    out.host_calls = opening.records;
    if let Some(failure) = opening.failure {
        out.opening_failure = Some(failure);
    } else if let Some(user) = &input.user {
        converse_with(
            user,
            opening.messages,
            input,
            server,
            &mut request,
            &mut out,
        )
        .await;
    } else if input.turns.is_empty() {
        request.messages.extend(opening.messages);
        take_turns(input, server, &mut request, &mut out, input.max_turns).await;
    } else {
        converse(opening.messages, input, server, &mut request, &mut out).await;
    }
    out.messages = std::mem::take(&mut request.messages);
    out.text_calls.recovered = out.calls.iter().filter(|c| c.recovered).count() as u32;
    out.latency_ms = ms(started.elapsed());
    out
}

/// The scripted user turns, one after the other: each turn's message, the model's loop within
/// its `max_turns`, then its grade. A turn after a failed one still runs unless
/// `stop_on_failure`; after an infrastructure error none does.
async fn converse(
    opening: Vec<Message>,
    input: &TrialInput<'_>,
    server: &McpConnection,
    request: &mut CompletionRequest,
    out: &mut TrialOutput,
) {
    let mut stopped = false;
    let mut opening = Some(opening);
    for (i, turn) in input.turns.iter().enumerate() {
        let number = i as u32 + 1;
        if stopped || out.infra_error.is_some() {
            let first = out.calls.len() as u32;
            let mut record = UserTurnRecord::skipped(number, &turn.prompt, first);
            // A graded turn that never ran did not do what it asks.
            record.success = turn.expect.as_ref().map(|_| false);
            out.user_turns.push(record);
            continue;
        }
        let limit = turn.max_turns;
        let messages = opening.take().unwrap_or_else(|| user_message(&turn.prompt));
        let mut record = user_turn(input, server, request, out, number, messages, limit).await;
        record.hit_max_turns = out.hit_max_turns && record.answer.is_none();
        if let (Some(expect), None) = (&turn.expect, &out.infra_error) {
            let grade = grade_calls(
                input.kind,
                expect,
                record.calls(&out.calls),
                record.answer.as_deref(),
                record.latency_ms,
            );
            record.success = Some(grade.success);
            stopped = !grade.success && input.stop_on_failure;
            out.turn_checks
                .extend(grade.checks.into_iter().map(|mut c| {
                    c.turn = Some(number);
                    c
                }));
        }
        out.user_turns.push(record);
    }
}

/// A simulated user's conversation: the task's `prompt`, then after each answer the user's
/// next message (the baseline's, replayed, while there are any), until `done_when` holds, the
/// user ends it, or it has `max_turns` user messages. A user model that fails makes the trial
/// an infrastructure error.
async fn converse_with(
    user: &super::UserPlayer<'_>,
    opening: Vec<Message>,
    input: &TrialInput<'_>,
    server: &McpConnection,
    request: &mut CompletionRequest,
    out: &mut TrialOutput,
) {
    let spec = user.spec;
    let (mut messages, mut by) = (opening, Author::Script);
    for number in 1..=spec.max_turns {
        let limit = input.max_turns;
        let sent = std::mem::take(&mut messages);
        let mut record = user_turn(input, server, request, out, number, sent, limit).await;
        record.by = by;
        record.hit_max_turns = out.hit_max_turns && record.answer.is_none();
        let made_call = record.tool_calls > 0;
        out.user_turns.push(record);
        if out.infra_error.is_some() || number == spec.max_turns {
            return;
        }
        if let Some(done) = &spec.done_when {
            let answer = out.final_answer.as_deref();
            let latency = out.user_turns.iter().map(|t| t.latency_ms).sum();
            if grade_calls(input.kind, done, &out.calls, answer, latency).success {
                return;
            }
        }
        if let Some(replayed) = user.replay.get(number as usize) {
            (messages, by) = (user_message(replayed), Author::Replay);
            continue;
        }
        let reply = user.reply(&out.user_turns, made_call, input.seed, &input.context);
        let (said, usage) = match reply.await {
            Ok(super::Reply::Says(text, usage)) => (Some(text), usage),
            Ok(super::Reply::Done(usage)) => (None, usage),
            Err(e) => {
                let host = user.model.id();
                out.infra_error = Some(format!("simulated user `{host}`: {}", chain(&e)));
                return;
            }
        };
        // The user model's tokens after this turn's answer: for its next message, or its end.
        if let Some(last) = out.user_turns.last_mut() {
            (last.user_input_tokens, last.user_output_tokens) =
                (usage.input_tokens, usage.output_tokens);
        }
        match said {
            Some(text) => (messages, by) = (user_message(&text), Author::User),
            None => return,
        }
    }
}

/// A user's message, as the conversation gets it.
fn user_message(text: &str) -> Vec<Message> {
    vec![Message::User {
        content: text.to_owned(),
    }]
}

/// One user message (or a server prompt's messages) and the model's loop that answers it,
/// within `max_turns` model turns; the calls made are tagged with the turn.
async fn user_turn(
    input: &TrialInput<'_>,
    server: &McpConnection,
    request: &mut CompletionRequest,
    out: &mut TrialOutput,
    number: u32,
    messages: Vec<Message>,
    max_turns: u32,
) -> UserTurnRecord {
    let started = Instant::now();
    let (first, model_turns, usage) = (out.calls.len(), out.turns, out.usage);
    let first_host = out.host_calls.len();
    out.final_answer = None;
    let users: Vec<&str> = (messages.iter())
        .filter_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    let message = users.join("\n\n");
    request.messages.extend(messages);
    let hit_before = std::mem::take(&mut out.hit_max_turns);
    take_turns(input, server, request, out, out.turns + max_turns).await;
    let hit = out.hit_max_turns;
    out.hit_max_turns |= hit_before;
    for call in (out.calls[first..].iter_mut()).chain(&mut out.host_calls[first_host..]) {
        call.user_turn = number;
    }
    UserTurnRecord {
        turn: number,
        by: Author::Script,
        message,
        success: None,
        ran: true,
        tool_calls: (out.calls.len() - first) as u32,
        first_call: first as u32,
        model_turns: out.turns - model_turns,
        input_tokens: out.usage.input_tokens - usage.input_tokens,
        output_tokens: out.usage.output_tokens - usage.output_tokens,
        latency_ms: ms(started.elapsed()),
        answer: out.final_answer.clone(),
        hit_max_turns: hit,
        user_input_tokens: 0,
        user_output_tokens: 0,
    }
}

/// The model's loop: turns of model ↔ tools until it answers without a call, or until the
/// trial has taken `limit` model turns in all.
async fn take_turns(
    input: &TrialInput<'_>,
    server: &McpConnection,
    request: &mut CompletionRequest,
    out: &mut TrialOutput,
    limit: u32,
) {
    // The last turn whose provider counted its tokens: its counts, and how many messages its
    // request had.
    let mut counted: Option<(Usage, usize)> = None;
    // Every name a call written as text may use: as shown, and the server's.
    let names: Vec<&str> = input.tools.names().collect();
    loop {
        if out.turns >= limit {
            out.hit_max_turns = true;
            return;
        }
        let mut completion = match input.model.complete(request).await {
            Ok(c) => c,
            Err(e) => {
                out.infra_error = Some(format!("model `{}`: {}", input.model.id(), chain(&e)));
                return;
            }
        };
        if is_uncounted(&completion) {
            let counter = super::tokens::Counter::of(input.model.is_simulated());
            completion.usage = estimate_usage(&completion, request, counted.as_ref(), counter);
            out.tokens_estimated = true;
        } else {
            counted = Some((completion.usage, request.messages.len()));
        }
        out.turns += 1;
        add_usage(&mut out.usage, &completion.usage);
        out.request_retries.extend(completion.retried);
        if out.model.is_none() {
            out.model = Some(completion.model);
        }
        // Models that measure nothing (the in-process sim) add no per-turn line.
        if completion.timing != crate::host::Timing::default() || completion.truncated {
            out.model_turns.push(super::ModelTurn::of(
                out.turns,
                &completion.timing,
                &completion.usage,
                completion.truncated,
                completion.timed_out,
            ));
        }
        if completion.truncated && out.truncated_turn.is_none() {
            out.truncated_turn = Some(out.turns);
        }
        // A generation cut at the timeout is the model's last word: calls it had begun are not
        // made (their arguments may be cut), and what it said is its answer.
        out.timed_out = completion.timed_out;
        let mut calls = if completion.timed_out {
            Vec::new()
        } else {
            completion.tool_calls
        };
        let mut content = completion.content;
        let recovers = calls.is_empty() && !completion.timed_out;
        let made = (content.as_deref())
            .and_then(|answer| written_calls(input, &names, out, answer, recovers));
        let recovered = made.is_some();
        if let Some(made) = made {
            (calls, content) = (made.calls, made.said);
        }
        if calls.is_empty() {
            out.final_answer = Some(content.clone().unwrap_or_default());
        }
        note_searches(input, out, &calls, completion.searches);
        request.messages.push(Message::Assistant {
            content,
            tool_calls: calls.clone(),
            reasoning: completion.reasoning,
            server_blocks: completion.server_blocks,
        });
        if calls.is_empty() {
            return;
        }
        for call in &calls {
            if !answer_call(input, server, request, out, call, recovered).await {
                return;
            }
        }
    }
}

/// Counts a turn's searches for tools (`tool_search`): the provider's own, from its answer, and
/// the turn itself when every call it made was a search.
fn note_searches(
    input: &TrialInput<'_>,
    out: &mut TrialOutput,
    calls: &[ToolCallRequest],
    provider: Vec<crate::host::tool_search::Search>,
) {
    let Some(log) = &mut out.tool_search else {
        return;
    };
    super::search::provider_searches(input.tools, provider, log);
    let searching =
        |c: &ToolCallRequest| input.tools.host_tool(&c.name) == Some(HostTool::SearchTools);
    log.search_turns += u32::from(!calls.is_empty() && calls.iter().all(searching));
}

/// Answers one call of the model's turn, its result added to the conversation: a search for
/// tools from the view, another host tool from the server's lists, a server tool by the server.
/// `false` when the trial cannot go on (the server failed: an infrastructure error).
async fn answer_call(
    input: &TrialInput<'_>,
    server: &McpConnection,
    request: &mut CompletionRequest,
    out: &mut TrialOutput,
    call: &ToolCallRequest,
    recovered: bool,
) -> bool {
    let reply = |request: &mut CompletionRequest, content: String| {
        request.messages.push(Message::Tool {
            tool_call_id: call.id.clone(),
            content,
        });
    };
    if let (Some(HostTool::SearchTools), Some(log)) =
        (input.tools.host_tool(&call.name), &mut out.tool_search)
    {
        let (k, index) = (input.profile.tool_search_k, out.host_calls.len() as u32);
        let (record, text) = super::search::search_call(input.tools, call, k, index, request, log);
        out.host_calls.push(record);
        reply(request, text);
        return true;
    }
    if let Some(tool) = input.tools.host_tool(&call.name) {
        let index = out.host_calls.len() as u32;
        return match super::exposed::host_call(tool, call, server, index).await {
            Ok((record, text)) => {
                out.host_calls.push(record);
                reply(request, text);
                true
            }
            Err(e) => {
                out.server_failed = Some(format!("the host's `{}`", call.name));
                out.infra_error = Some(chain(&e));
                false
            }
        };
    }
    let offered = &request.tools;
    match execute_call(input, server, call, out.calls.len() as u32, offered).await {
        Ok((mut record, text)) => {
            record.recovered = recovered;
            out.calls.push(record);
            reply(request, text);
            true
        }
        Err(e) => {
            // The call was made and failed with the server: kept in the record, so that a side
            // whose server dies counts the call and its error.
            let tool = input.tools.server_name(&call.name).unwrap_or(&call.name);
            out.calls.push(ToolCallRecord {
                index: out.calls.len() as u32,
                tool: tool.to_owned(),
                arguments: call.arguments.clone(),
                is_error: true,
                error_code: None,
                error_kind: Some("server".into()),
                latency_ms: 0.0,
                result: chain(&e),
                replay_unmatched: false,
                recovered,
                user_turn: 1,
            });
            out.server_failed = Some(format!("tools/call `{tool}`"));
            out.infra_error = Some(chain(&e));
            false
        }
    }
}

/// Reads an answer for tool calls written as text (counted on `out`); where the host recovers
/// them (`recover_text_calls`) and `may_recover` (the turn made no structured call and was not
/// cut at the timeout), the calls made of them, with the turn's text: the turn goes on carrying
/// them in structured form, so the model sees a consistent history. `None`: none to make.
fn written_calls(
    input: &TrialInput<'_>,
    names: &[&str],
    out: &mut TrialOutput,
    answer: &str,
    may_recover: bool,
) -> Option<super::recover::Recovered> {
    let written = out.text_calls.read(answer, names);
    if !(input.profile.recover_text_calls && may_recover) || written.is_empty() {
        return None;
    }
    let made = super::recover::recover(answer, &written, input.tools, out.turns);
    out.text_calls.unparsed += made.unparsed;
    (!made.calls.is_empty()).then_some(made)
}

/// Whether a turn came back with output but without its output counted: a streamed answer cut at
/// the timeout (its usage chunk never came), or a provider that counts nothing.
fn is_uncounted(c: &Completion) -> bool {
    let said = c.content.as_deref().is_some_and(|t| !t.is_empty())
        || !c.tool_calls.is_empty()
        || c.reasoning.is_some();
    said && c.usage.output_tokens == 0
}

/// The tokens of a turn its provider did not count, estimated with `counter`: the sim's own
/// tokenizer for the simulated model (`host::tokens`: a word one token per started 4 letters,
/// any other visible character one), `o200k_base` for a real provider. Output: what came back (text, tool calls, reasoning). Input: the provider's count when it
/// sent one (Anthropic sends it first); else the last counted turn's prompt and answer as the
/// provider counted them, plus the messages added since (tool results); without a counted
/// turn, the whole request (messages and tool specs).
pub(crate) fn estimate_usage(
    c: &Completion,
    request: &CompletionRequest,
    counted: Option<&(Usage, usize)>,
    counter: super::tokens::Counter,
) -> Usage {
    let reasoning = c.reasoning.as_ref().map_or(0, |r| counter.text(&r.text));
    let output = counter.output(c.content.as_deref(), &c.tool_calls) + reasoning;
    let input = match counted {
        _ if c.usage.input_tokens > 0 => c.usage.input_tokens,
        // The previous request, its answer (the next message), then what came after it.
        Some((usage, len)) => {
            let added = request.messages.get(len + 1..).unwrap_or_default();
            usage.input_tokens + usage.output_tokens + counter.input(added, &[])
        }
        None => counter.input(&request.messages, &request.tools),
    };
    Usage {
        input_tokens: input,
        output_tokens: output,
        reasoning_tokens: reasoning,
        ..c.usage
    }
}

fn add_usage(total: &mut Usage, turn: &Usage) {
    total.input_tokens += turn.input_tokens;
    total.output_tokens += turn.output_tokens;
    total.cache_read_tokens += turn.cache_read_tokens;
    total.cache_write_tokens += turn.cache_write_tokens;
    total.reasoning_tokens += turn.reasoning_tokens;
}

/// Executes one tool call. A call to a tool not offered (unknown, or held back until a search
/// loads it) or with arguments that are not a JSON object is the model's error: it is recorded
/// and sent back as an error result, as a real host does. `Err` only when the server itself
/// failed (an infrastructure error).
async fn execute_call(
    input: &TrialInput<'_>,
    server: &McpConnection,
    call: &ToolCallRequest,
    index: u32,
    offered: &[crate::host::ToolSpec],
) -> Result<(ToolCallRecord, String), crate::mcp::McpError> {
    let mut record = ToolCallRecord::refused(index, &call.name, &call.arguments);
    let is_offered = offered.iter().any(|s| s.name == call.name);
    let Some(tool) = (input.tools.server_name(&call.name)).filter(|_| is_offered) else {
        let known: Vec<&str> = offered.iter().map(|s| s.name.as_str()).collect();
        let reply = format!(
            "Error: there is no tool named `{}`. Available tools: {}",
            call.name,
            known.join(", ")
        );
        record.result = reply.clone();
        return Ok((record, reply));
    };
    record.tool = tool.to_owned();
    let arguments = match parse_arguments(&call.arguments) {
        Ok(a) => a,
        Err(why) => {
            let reply = format!(
                "Error: the arguments of `{}` are not valid: {why}",
                call.name
            );
            record.result = reply.clone();
            return Ok((record, reply));
        }
    };
    let started = Instant::now();
    let outcome = server
        .call_tool(tool, arguments, input.call_timeout)
        .await?;
    record.latency_ms = ms(started.elapsed());
    let reply = match outcome {
        CallOutcome::Result {
            is_error,
            text,
            replay_unmatched,
            ..
        } => {
            record.is_error = is_error;
            record.replay_unmatched = replay_unmatched;
            record.error_kind = is_error.then(|| "tool".to_owned());
            text
        }
        CallOutcome::ProtocolError { code, message, .. } => {
            record.error_code = Some(code);
            record.error_kind = Some("protocol".into());
            format!("Error {code}: {message}")
        }
        CallOutcome::Timeout => {
            record.error_kind = Some("timeout".into());
            format!(
                "Error: the tool did not answer within {} ms",
                input.call_timeout.as_millis()
            )
        }
    };
    record.result = recorded_result(&reply);
    Ok((record, reply))
}

/// Arguments must be a JSON object (or empty / `null`, meaning no arguments).
fn parse_arguments(
    text: &str,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>, BadArguments> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => Ok(Some(map)),
        Ok(serde_json::Value::Null) => Ok(None),
        Ok(other) => Err(BadArguments::NotAnObject(other)),
        Err(e) => Err(BadArguments::NotJson(e)),
    }
}

/// Why a model's arguments are not a call's (the model's error, sent back to it).
#[derive(Debug, thiserror::Error)]
enum BadArguments {
    #[error("expected a JSON object, got `{0}`")]
    NotAnObject(serde_json::Value),
    #[error("not JSON ({0})")]
    NotJson(serde_json::Error),
}

/// A tool result as an episode records it: cut after [`RECORDED_RESULT_CHARS`] characters, with
/// how many bytes were left out (the agent loop's and the app hosts' records alike).
pub fn recorded_result(text: &str) -> String {
    truncate(text, RECORDED_RESULT_CHARS)
}

fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}… [{} more bytes]", &text[..cut], text.len() - cut),
        None => text.to_owned(),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_must_be_an_object() {
        assert!(parse_arguments("").unwrap().is_none());
        assert!(parse_arguments("null").unwrap().is_none());
        assert_eq!(parse_arguments(r#"{"id": 3}"#).unwrap().unwrap()["id"], 3);
        assert!(parse_arguments("[1]")
            .unwrap_err()
            .to_string()
            .contains("JSON object"));
        assert!(parse_arguments("{id: 3")
            .unwrap_err()
            .to_string()
            .contains("not JSON"));
    }

    #[test]
    fn long_results_are_cut_on_a_char_boundary() {
        let cut = truncate(&"é".repeat(10), 4);
        assert!(cut.starts_with("éééé…"), "{cut}");
        assert_eq!(truncate("short", 10), "short");
    }
}
