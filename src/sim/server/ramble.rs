//! The rambling model of `sim-server --ramble-rate`: an answer with no end, one token per
//! `--token-ms`, that stops only at the request's output cap. Streamed, it comes token by token
//! (a slow model still answering); unstreamed, it comes whole once the cap is reached, or never.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// What a rambling model says, token after token.
pub(super) const TOKEN: &str = "more ";

/// The API a rambling answer is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Api {
    Chat,
    Messages,
    Responses,
}

/// The request's output cap: `max_completion_tokens` or `max_tokens` (chat), `max_tokens`
/// (messages), `max_output_tokens` (responses).
fn cap(api: Api, request: &Value) -> Option<u64> {
    let keys: &[&str] = match api {
        Api::Chat => &["max_completion_tokens", "max_tokens"],
        Api::Messages => &["max_tokens"],
        Api::Responses => &["max_output_tokens"],
    };
    keys.iter()
        .find_map(|k| request.get(*k).and_then(Value::as_u64))
}

/// Answers `request` by rambling. `stop` ends an endless answer when the server shuts down.
pub(super) async fn ramble(
    api: Api,
    request: &Value,
    stream: bool,
    input_tokens: u64,
    interval: Duration,
    stop: CancellationToken,
) -> Response {
    let cap = cap(api, request);
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .unwrap_or("sim")
        .to_owned();
    let writer = Writer {
        api,
        model,
        input_tokens,
    };
    if !stream {
        return whole(writer, cap, interval, stop).await;
    }
    let head = writer.head();
    let tokens = futures::stream::unfold(0u64, move |sent| {
        let stop = stop.clone();
        async move {
            if cap.is_some_and(|c| sent >= c) {
                return None;
            }
            tokio::select! {
                () = tokio::time::sleep(interval) => Some((sent + 1, sent + 1)),
                () = stop.cancelled() => None,
            }
        }
    });
    let events = futures::stream::StreamExt::flat_map(tokens, move |n| {
        let mut out = writer.token();
        if cap == Some(n) {
            out.push_str(&writer.tail(n));
        }
        futures::stream::iter([Ok::<_, Infallible>(Bytes::from(out))])
    });
    let body = futures::stream::StreamExt::chain(
        futures::stream::iter([Ok::<_, Infallible>(Bytes::from(head))]),
        events,
    );
    let mut response = Body::from_stream(body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    response
}

/// An unstreamed ramble: the whole capped answer after `cap × interval`; without a cap, no
/// answer until the server stops (then a 503).
async fn whole(
    writer: Writer,
    cap: Option<u64>,
    interval: Duration,
    stop: CancellationToken,
) -> Response {
    let Some(n) = cap else {
        stop.cancelled().await;
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let wait = interval.saturating_mul(n.min(u64::from(u32::MAX)) as u32);
    tokio::select! {
        () = tokio::time::sleep(wait) => {}
        () = stop.cancelled() => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
    }
    let mut response = writer.body(n).to_string().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Writes a rambling answer's events in one API's format.
#[derive(Debug, Clone)]
struct Writer {
    api: Api,
    model: String,
    input_tokens: u64,
}

impl Writer {
    fn head(&self) -> String {
        match self.api {
            Api::Chat => {
                data(&self.chunk(json!({"role": "assistant", "content": ""}), Value::Null))
            }
            Api::Messages => {
                let start = json!({"type": "message_start", "message": {
                    "id": "msg_sim_ramble", "type": "message", "role": "assistant",
                    "model": self.model, "content": [], "stop_reason": null,
                    "usage": {"input_tokens": self.input_tokens, "output_tokens": 0}}});
                let block = json!({"type": "content_block_start", "index": 0,
                                   "content_block": {"type": "text", "text": ""}});
                event("message_start", &start) + &event("content_block_start", &block)
            }
            Api::Responses => {
                let mut start = self.response(0);
                start["status"] = json!("in_progress");
                start["output"] = json!([]);
                start["usage"] = Value::Null;
                let item = json!({"type": "message", "role": "assistant", "content": []});
                event(
                    "response.created",
                    &json!({"type": "response.created", "response": start}),
                ) + &event(
                    "response.output_item.added",
                    &json!({"type": "response.output_item.added", "output_index": 0,
                            "item": item}),
                )
            }
        }
    }

    fn token(&self) -> String {
        match self.api {
            Api::Chat => data(&self.chunk(json!({"content": TOKEN}), Value::Null)),
            Api::Messages => event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": TOKEN}}),
            ),
            Api::Responses => event(
                "response.output_text.delta",
                &json!({"type": "response.output_text.delta", "output_index": 0,
                        "content_index": 0, "delta": TOKEN}),
            ),
        }
    }

    /// The end of an answer cut at the cap after `n` tokens.
    fn tail(&self, n: u64) -> String {
        match self.api {
            Api::Chat => {
                let mut usage = self.chunk(Value::Null, Value::Null);
                usage["choices"] = json!([]);
                usage["usage"] = self.chat_usage(n);
                data(&self.chunk(json!({}), json!("length"))) + &data(&usage) + "data: [DONE]\n\n"
            }
            Api::Messages => {
                event(
                    "content_block_stop",
                    &json!({"type": "content_block_stop", "index": 0}),
                ) + &event(
                    "message_delta",
                    &json!({"type": "message_delta",
                                "delta": {"stop_reason": "max_tokens", "stop_sequence": null},
                                "usage": {"output_tokens": n}}),
                ) + &event("message_stop", &json!({"type": "message_stop"}))
            }
            Api::Responses => event(
                "response.incomplete",
                &json!({"type": "response.incomplete", "response": self.response(n)}),
            ),
        }
    }

    /// The whole answer cut at the cap after `n` tokens, unstreamed.
    fn body(&self, n: u64) -> Value {
        let text = TOKEN.repeat(n as usize);
        match self.api {
            Api::Chat => json!({
                "id": "chatcmpl-sim-ramble", "object": "chat.completion", "model": self.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "length"}],
                "usage": self.chat_usage(n),
            }),
            Api::Messages => json!({
                "id": "msg_sim_ramble", "type": "message", "role": "assistant",
                "model": self.model, "content": [{"type": "text", "text": text}],
                "stop_reason": "max_tokens", "stop_sequence": null,
                "usage": {"input_tokens": self.input_tokens, "output_tokens": n},
            }),
            Api::Responses => self.response(n),
        }
    }

    /// A Responses API response cut at the cap after `n` tokens.
    fn response(&self, n: u64) -> Value {
        json!({
            "id": "resp_sim_ramble", "object": "response", "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"}, "model": self.model,
            "output": [{"type": "message", "role": "assistant", "status": "incomplete",
                        "content": [{"type": "output_text", "text": TOKEN.repeat(n as usize),
                                     "annotations": []}]}],
            "usage": {"input_tokens": self.input_tokens, "output_tokens": n,
                      "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": self.input_tokens + n},
        })
    }

    fn chunk(&self, delta: Value, finish: Value) -> Value {
        json!({"id": "chatcmpl-sim-ramble", "object": "chat.completion.chunk",
               "model": self.model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    }

    fn chat_usage(&self, n: u64) -> Value {
        json!({"prompt_tokens": self.input_tokens, "completion_tokens": n,
               "total_tokens": self.input_tokens + n})
    }
}

fn data(chunk: &Value) -> String {
    format!("data: {chunk}\n\n")
}

fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}
