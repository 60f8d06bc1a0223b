//! One turn of the sim: where the conversation stands (steps served, errors), and what to do next.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::correct::correct;
use super::request::{split_steps, Utterance};
use super::rules::Rules;
use super::score::{score_all, Scored};
use super::SimConfig;
use crate::host::{CompletionRequest, Message, ToolSpec};

/// What the sim does this turn.
#[derive(Debug, PartialEq)]
pub(super) enum Action {
    Call { tool: usize, arguments: String },
    Answer(String),
}

/// A tool call made earlier for the current request, with its result.
#[derive(Debug)]
struct PastCall<'a> {
    name: &'a str,
    arguments: &'a str,
    result: Option<&'a str>,
}

/// How far the current request has come.
#[derive(Debug, Default)]
struct Progress<'a> {
    step: usize,
    calls: usize,
    /// Failed attempts at the current step.
    failures: u32,
    last_failed: Option<PastCall<'a>>,
    /// (tool, result) of each step served.
    served: Vec<(&'a str, &'a str)>,
}

/// Seeds the turn's random numbers from the trial's seed and the turn number, so that a seed
/// replays a trial and both sides of a paired trial draw the same numbers.
pub(super) fn turn_rng(seed: u64, turn: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ turn.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Decides this turn's action.
pub(super) fn decide(request: &CompletionRequest, turn: u64, cfg: &SimConfig) -> Action {
    // Drawn first and always, whatever the path, to keep the random streams of the two sides
    // of a paired trial aligned: `u` samples the tool, `v` decides whether position does.
    let mut rng = turn_rng(request.seed, turn);
    let u: f64 = rng.random();
    let v: f64 = rng.random();
    let messages = &request.messages;
    let Some(user_at) = messages
        .iter()
        .rposition(|m| matches!(m, Message::User { .. }))
    else {
        return Action::Answer("Hello! How can I help you today?".into());
    };
    let Message::User { content: user } = &messages[user_at] else {
        unreachable!("found by rposition")
    };
    let steps = split_steps(user);
    // Under tool search the server's tools come from a search: the search is no step of the
    // request.
    let search = super::search::search_tool(&request.tools);
    let search_name = search.map(|i| request.tools[i].name.as_str());
    let progress = progress(&messages[user_at + 1..], search_name);
    let summary = || summarise(&progress.served, cfg.max_result_chars);
    if progress.failures >= 2 || progress.calls >= steps.len() * 2 + 2 {
        return Action::Answer(give_up(&progress, summary()));
    }
    let Some(step) = steps.get(progress.step) else {
        return Action::Answer(summary());
    };
    let system = system_text(messages);
    let rules = Rules::parse(&system, &request.tools);
    let utt = Utterance::parse(step);
    if let Some(rule) = rules.forbidding(&utt) {
        let why = format!("I can't do that: the server's instructions say \"{rule}\"");
        return Action::Answer(join(summary(), why));
    }
    if utt.is_greeting() && progress.served.is_empty() {
        return Action::Answer("Hello! How can I help you today?".into());
    }
    // A request to act on: the sim searches first, once per user message, with the whole
    // message (the search loads the tools for every step of it).
    let since_user = &messages[user_at + 1..];
    if let Some(tool) =
        search.filter(|_| !super::search::searched(since_user, search_name.unwrap_or_default()))
    {
        let query = super::search::search_query(user);
        let arguments = serde_json::json!({ "query": query }).to_string();
        return Action::Call { tool, arguments };
    }
    // An id for "the first one" comes from this request's last step served, else from the
    // conversation's last good result before it (an earlier user turn's).
    let prior = (progress.served.last().map(|(_, result)| *result))
        .or_else(|| earlier_result(&messages[..user_at]));
    let mut scored = score_all(&utt, &request.tools, &rules, prior, cfg);
    scored.retain(|s| Some(s.tool) != search);
    if let Some(failed) = &progress.last_failed {
        return retry(failed, &scored, &request.tools, cfg)
            .unwrap_or_else(|| Action::Answer(give_up(&progress, summary())));
    }
    match scored.first() {
        Some(best) if best.score >= cfg.call_threshold => {
            let pick = match v < cfg.position_bias {
                true => earliest_near_tie(&scored, cfg.near_tie),
                false => sample(&scored, cfg.temperature, u),
            };
            call(pick)
        }
        _ if progress.served.is_empty() => Action::Answer(
            "I can answer this directly, without using any of the available tools.".into(),
        ),
        _ => Action::Answer(summary()),
    }
}

fn call(s: &Scored) -> Action {
    Action::Call {
        tool: s.tool,
        arguments: Value::Object(s.filled.args.clone()).to_string(),
    }
}

fn system_text(messages: &[Message]) -> String {
    let parts: Vec<&str> = messages
        .iter()
        .filter_map(|m| match m {
            Message::System { content } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    parts.join("\n")
}

/// Reads the calls made since the user's message: each successful one serves a step (a search
/// for tools, `search`, serves none).
fn progress<'a>(since_user: &'a [Message], search: Option<&str>) -> Progress<'a> {
    let mut p = Progress::default();
    for (k, m) in since_user.iter().enumerate() {
        let Message::Assistant { tool_calls, .. } = m else {
            continue;
        };
        for c in tool_calls
            .iter()
            .filter(|c| Some(c.name.as_str()) != search)
        {
            let result = since_user[k + 1..].iter().find_map(|m| match m {
                Message::Tool {
                    tool_call_id,
                    content,
                } if *tool_call_id == c.id => Some(content.as_str()),
                _ => None,
            });
            p.calls += 1;
            match result {
                Some(r) if !looks_like_error(r) => {
                    p.served.push((c.name.as_str(), r));
                    p.step += 1;
                    p.failures = 0;
                    p.last_failed = None;
                }
                _ => {
                    p.failures += 1;
                    p.last_failed = Some(PastCall {
                        name: &c.name,
                        arguments: &c.arguments,
                        result,
                    });
                }
            }
        }
    }
    p
}

/// The last tool result of the conversation before the current user message that does not
/// read as an error.
fn earlier_result(before: &[Message]) -> Option<&str> {
    before.iter().rev().find_map(|m| match m {
        Message::Tool { content, .. } if !looks_like_error(content) => Some(content.as_str()),
        _ => None,
    })
}

/// Tool results carry no error flag in the chat, so the sim reads them the way a model does.
pub(crate) fn looks_like_error(text: &str) -> bool {
    let t = text.trim_start();
    let head: String = t.chars().take(300).collect::<String>().to_lowercase();
    let starts = [
        "error",
        "failed",
        "invalid",
        "unknown ",
        "mcp error",
        "exception",
    ];
    if starts.iter().any(|s| head.starts_with(s)) {
        return true;
    }
    if t.starts_with(['{', '[']) {
        if let Ok(v) = serde_json::from_str::<Value>(t) {
            return v.get("error").is_some() || v.get("isError") == Some(&Value::Bool(true));
        }
    }
    let phrases = [
        "unknown ",
        "invalid",
        "not found",
        "missing",
        "must be",
        "is required",
        "no such",
        "does not exist",
        "failed",
        "not allowed",
        "cannot ",
        "can't ",
    ];
    t.len() < 400 && phrases.iter().any(|p| head.contains(p))
}

/// The earliest-listed tool scoring within `near_tie` of the best (`[sim] position_bias`).
fn earliest_near_tie(scored: &[Scored], near_tie: f64) -> &Scored {
    let best = scored[0].score;
    scored
        .iter()
        .filter(|s| s.score >= best - near_tie)
        .min_by_key(|s| s.tool)
        .unwrap_or(&scored[0])
}

/// Samples a tool from a softmax over the scores, best first, with one uniform number.
fn sample(scored: &[Scored], temperature: f64, u: f64) -> &Scored {
    let best = scored[0].score;
    if temperature <= 0.0 || scored.len() == 1 {
        return &scored[0];
    }
    let weights: Vec<f64> = scored
        .iter()
        .map(|s| ((s.score - best) / temperature).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    let mut target = u * total;
    for (s, w) in scored.iter().zip(&weights) {
        if target < *w {
            return s;
        }
        target -= w;
    }
    &scored[0]
}

/// One more try after an error: another tool when the failed one is unknown or a close rival
/// exists, else the same tool with corrected arguments. `None`: nothing sensible to try.
fn retry(
    failed: &PastCall,
    scored: &[Scored],
    tools: &[ToolSpec],
    cfg: &SimConfig,
) -> Option<Action> {
    let failed_at = tools.iter().position(|t| t.name == failed.name);
    let failed_score = scored
        .iter()
        .find(|s| Some(s.tool) == failed_at)
        .map(|s| s.score);
    let rival = scored.iter().find(|s| {
        Some(s.tool) != failed_at
            && s.score >= cfg.call_threshold
            && failed_score.is_none_or(|f| s.score >= f - cfg.retry_margin)
    });
    let Some(tool) = failed_at else {
        return rival.map(call);
    };
    let fresh = &scored.iter().find(|s| s.tool == tool)?.filled.args;
    let error = failed.result.unwrap_or("");
    if let Some(args) = correct(failed.arguments, error, &tools[tool].input_schema, fresh) {
        let arguments = Value::Object(args).to_string();
        return Some(Action::Call { tool, arguments });
    }
    Some(rival.map(call).unwrap_or(Action::Call {
        tool,
        arguments: failed.arguments.to_owned(),
    }))
}

fn give_up(p: &Progress, summary: String) -> String {
    let why = match &p.last_failed {
        Some(f) => format!(
            "Sorry, I could not complete this: `{}` failed with: {}",
            f.name,
            trim(f.result.unwrap_or("no result"), 300)
        ),
        None => "Sorry, I could not complete this request.".to_owned(),
    };
    join(summary, why)
}

/// The results of the steps served, each trimmed, so that an answer can quote what was found.
/// Tool names stay out: hosts rename tools, and the answer should not depend on how.
fn summarise(served: &[(&str, &str)], max_chars: usize) -> String {
    match served {
        [] => String::new(),
        [(_, result)] => format!("Here is what I found:\n{}", trim(result.trim(), max_chars)),
        many => {
            let mut text = "Here is what I found:".to_owned();
            for (_, result) in many {
                text.push_str("\n- ");
                text.push_str(&trim(result.trim(), max_chars));
            }
            text
        }
    }
}

fn join(summary: String, more: String) -> String {
    if summary.is_empty() {
        more
    } else {
        format!("{summary}\n\n{more}")
    }
}

fn trim(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
