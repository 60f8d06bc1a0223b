//! Replay: a proxy's calls answered from a recorded cassette (`replay:CASSETTE+SPEC`): the
//! lists come from the live base, each `tools/call`, `resources/read` and `prompts/get` from the
//! cassette by the matcher's order rule; an unmatched request is answered as the policy says
//! (an error that says so, the nearest recorded one, or the live base).

use std::path::Path;
use std::sync::Mutex;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorCode, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult,
};
use rmcp::ErrorData;
use serde::de::DeserializeOwned;

use crate::cassette::{
    Answer, Ask, Cassette, CassetteError, Matcher, Reply, Request, Session, Unmatched,
};

/// The cassette a proxy replays, indexed once and kept for the process's life (a `serve`
/// process replays one cassette), so each session's counts can borrow it.
#[derive(Clone, Copy)]
pub struct Replay {
    matcher: &'static Matcher,
}

impl Replay {
    /// Reads `path` (refused with `file:line` when it is no cassette of a known version).
    pub fn read(path: &Path, policy: Unmatched) -> Result<Self, CassetteError> {
        let cassette = Cassette::read(path)?;
        Ok(Self {
            matcher: Box::leak(Box::new(Matcher::new(cassette, policy))),
        })
    }

    /// The cassette itself (its handshake and lists, for a cassette served alone).
    pub fn cassette(self) -> &'static Cassette {
        self.matcher.cassette()
    }

    /// A new session's view: its own count of each request.
    pub fn session(self) -> ReplaySession {
        ReplaySession(Mutex::new(self.matcher.session()))
    }
}

/// One client session's counts of the requests it made.
pub struct ReplaySession(Mutex<Session<'static>>);

/// What the cassette says to a request: an answer, or "ask the live base".
pub enum Replayed<T> {
    Answer(Result<T, ErrorData>),
    Live,
}

/// The `_meta` key of a tool result the cassette did not hold (answered by the `unmatched`
/// policy: an error, the nearest recorded call, or the live base), value `"unmatched"`: a run
/// counts these calls per episode.
pub const UNMATCHED_META: &str = "mcpeval/replay";

/// Marks a tool result as not replayed from the cassette ([`UNMATCHED_META`]).
pub fn mark_unmatched(response: CallToolResponse) -> CallToolResponse {
    match response {
        CallToolResponse::Complete(mut result) => {
            let meta = result.meta.get_or_insert_with(Default::default);
            meta.insert(UNMATCHED_META.into(), "unmatched".into());
            CallToolResponse::Complete(result)
        }
        other => other,
    }
}

impl ReplaySession {
    /// The answer (none: ask the live base), and whether the cassette did not hold the request.
    fn answer(&self, request: &Request) -> (Option<Answer>, bool) {
        let mut session = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let reply = session.answer(request);
        let unmatched = !reply.matched();
        let answer = match reply {
            Reply::Recorded(answer) | Reply::Nearest(answer) => Some(answer.clone()),
            Reply::NoRecord(answer) => Some(answer),
            Reply::Live => None,
        };
        (answer, unmatched)
    }

    /// How many of this session's requests the cassette did not hold.
    pub fn unmatched(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).unmatched()
    }

    /// The recorded answer to a call, and whether the cassette did not hold it (the answer is
    /// then the policy's, to be marked with [`mark_unmatched`]).
    pub fn call_tool(&self, params: &CallToolRequestParams) -> (Replayed<CallToolResponse>, bool) {
        let (_, replayed, unmatched) = self.call_tool_asking(params);
        (replayed, unmatched)
    }

    /// As [`call_tool`](Self::call_tool), with the requests the server made of the client
    /// while it answered, to be asked again first ([`super::asked::ask_again`]).
    pub fn call_tool_asking(
        &self,
        params: &CallToolRequestParams,
    ) -> (Vec<Ask>, Replayed<CallToolResponse>, bool) {
        let request = Request::tool(&params.name, params.arguments.clone());
        let (answer, unmatched) = self.answer(&request);
        let asks = match &answer {
            Some(Answer::Asked(asked)) => asked.asks.clone(),
            _ => Vec::new(),
        };
        let replayed =
            Self::replayed::<CallToolResult, _>(&request, answer, CallToolResponse::Complete);
        (asks, replayed, unmatched)
    }

    pub fn read_resource(
        &self,
        params: &ReadResourceRequestParams,
    ) -> Replayed<ReadResourceResponse> {
        let request = Request::resource(&params.uri);
        let (answer, _) = self.answer(&request);
        Self::replayed::<ReadResourceResult, _>(&request, answer, ReadResourceResponse::Complete)
    }

    pub fn get_prompt(&self, params: &GetPromptRequestParams) -> Replayed<GetPromptResponse> {
        let args: std::collections::BTreeMap<String, String> = (params.arguments.iter())
            .flatten()
            .map(|(k, v)| {
                let text = v
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string());
                (k.clone(), text)
            })
            .collect();
        let request = Request::prompt(&params.name, &args);
        let (answer, _) = self.answer(&request);
        Self::replayed::<GetPromptResult, _>(&request, answer, GetPromptResponse::Complete)
    }

    fn replayed<R: DeserializeOwned, T>(
        request: &Request,
        answer: Option<Answer>,
        wrap: impl FnOnce(R) -> T,
    ) -> Replayed<T> {
        let Some(answer) = answer else {
            return Replayed::Live;
        };
        Replayed::Answer(match answer.last().clone() {
            // `last` is never `Asked`.
            Answer::Asked(_) => Err(ErrorData::internal_error("mcpeval replay: no answer", None)),
            Answer::Result(value) => serde_json::from_value::<R>(value).map(wrap).map_err(|e| {
                ErrorData::internal_error(
                    format!(
                        "mcpeval replay: the cassette's answer to {} is not such a result: {e}",
                        request.describe()
                    ),
                    None,
                )
            }),
            Answer::Error(error) => Err(ErrorData::new(
                ErrorCode(error.code as i32),
                error.message,
                error.data,
            )),
        })
    }
}
