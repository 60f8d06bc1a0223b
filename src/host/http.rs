//! One JSON endpoint of a model provider: POST a request body under the retry policy and the
//! host's adaptive concurrency, read the answer as JSON, and turn failures into `HostError`s that
//! never carry a secret. Shared by the openai and anthropic hosts.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use serde_json::Value;

use super::aimd::{Congestion, Signal};
use super::breaker::{lasting_transport, Breaker, Lasting};
use super::lenient::excerpt_text;
use super::retry::{parse_retry_after, retryable_status, Attempt, Exhausted, RetryPolicy};
use super::{Completion, HostError, Timing};

/// A provider endpoint: where requests go, with which headers, retried how.
pub struct JsonEndpoint {
    url: String,
    /// Sent with every request; secrets in it are marked sensitive.
    headers: HeaderMap,
    http: reqwest::Client,
    retry: RetryPolicy,
    congestion: Option<Arc<Congestion>>,
    /// Opens when the host's requests keep failing for one lasting reason: later ones are not
    /// sent.
    breaker: Option<Arc<Breaker>>,
    /// Values taken out of every error text (the key and secret header values), in case a proxy
    /// echoes the request.
    secrets: Vec<String>,
    counts: Counts,
    /// `[host.NAME] extra_body`: fields merged into every request body.
    extra_body: Option<Arc<serde_json::Map<String, Value>>>,
}

/// Requests sent and retried over an endpoint's lifetime.
#[derive(Debug, Default)]
struct Counts {
    attempts: AtomicU64,
    retries: AtomicU64,
}

/// How many HTTP requests a model sent and how many of them were retries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounts {
    pub attempts: u64,
    pub retries: u64,
}

/// A JSON answer, and one line for each attempt that failed before it.
#[derive(Debug)]
struct Posted {
    value: Value,
    retried: Vec<String>,
    /// How the answer arrived.
    timing: Timing,
    /// A streamed answer was cut at the request timeout: `value` holds what came before.
    timed_out: bool,
}

/// The answer of one attempt that succeeded.
#[derive(Debug)]
struct Answer {
    value: Value,
    timing: Timing,
    timed_out: bool,
}

/// A streamed event that ends the answer as a failure of the provider's (retried).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// An event whose data is not JSON (`what`: the API's name for its events).
    #[error("unreadable {what} ({reason}): {excerpt}")]
    Unreadable {
        what: &'static str,
        reason: String,
        excerpt: String,
    },
    /// The provider reported an error in the middle of the answer.
    #[error("error event: {0}")]
    Provider(String),
}

/// Reads a streamed answer one server-sent event at a time into the body the provider would
/// have sent unstreamed, so that one parser reads both.
pub trait StreamReader: Send {
    /// Takes one event (`event` is its type, empty when the server named none). `Ok(true)` when
    /// it carried output (text, reasoning or a tool call); `Err` for an error event, the
    /// provider failing mid-answer (retried).
    fn event(&mut self, event: &str, data: &str) -> Result<bool, StreamError>;
    /// The answer read so far, as an unstreamed body.
    fn finish(&mut self) -> Value;
    /// Whether the answer's end came (a finish reason, a stop event): a stream that closes
    /// before it is an answer cut in the middle.
    fn ended(&self) -> bool;
}

impl fmt::Debug for JsonEndpoint {
    // By hand: the headers and secrets hold the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonEndpoint")
            .field("url", &self.url)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl JsonEndpoint {
    /// `secrets` are removed from error texts (values shorter than 4 characters are ignored).
    pub fn new(url: String, headers: HeaderMap, secrets: Vec<String>) -> Result<Self, HostError> {
        let retry = RetryPolicy::default();
        Ok(Self {
            url,
            headers,
            http: client(&retry)?,
            retry,
            congestion: None,
            breaker: None,
            secrets: secrets.into_iter().filter(|s| s.len() >= 4).collect(),
            counts: Counts::default(),
            extra_body: None,
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn set_url(&mut self, url: String) {
        self.url = url;
    }

    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    pub fn set_retry(&mut self, retry: RetryPolicy) {
        if retry.connect_timeout != self.retry.connect_timeout {
            // Cannot fail: the default client built with the same settings.
            if let Ok(http) = client(&retry) {
                self.http = http;
            }
        }
        self.retry = retry;
    }

    /// Adds headers to every request. Their values are marked sensitive and taken out of error
    /// texts: configured headers often carry tokens.
    pub fn add_headers<'a>(
        &mut self,
        extra: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<(), HostError> {
        for (name, value) in extra {
            let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                HostError::Other(format!("`{name}` is not a valid HTTP header name"))
            })?;
            let mut value_ = HeaderValue::from_str(value).map_err(|_| {
                HostError::Other(format!(
                    "the value of header `{name}` cannot be sent in an HTTP header"
                ))
            })?;
            value_.set_sensitive(true);
            self.headers.insert(header, value_);
            if value.len() >= 4 {
                self.secrets.push(value.to_owned());
            }
        }
        Ok(())
    }

    /// Puts every attempt under `congestion` (shared by all of the host's requests).
    pub fn set_congestion(&mut self, congestion: Arc<Congestion>) {
        self.congestion = Some(congestion);
    }

    /// Puts every attempt under `breaker` (shared by all of the host's requests).
    pub fn set_breaker(&mut self, breaker: Arc<Breaker>) {
        self.breaker = Some(breaker);
    }

    pub fn request_counts(&self) -> RequestCounts {
        RequestCounts {
            attempts: self.counts.attempts.load(Ordering::Relaxed),
            retries: self.counts.retries.load(Ordering::Relaxed),
        }
    }

    /// Sends `body`, with `headers` besides the endpoint's, until an attempt succeeds, fails for
    /// good, or the attempts run out.
    async fn post(&self, body: &[u8], headers: &HeaderMap) -> Result<Posted, HostError> {
        let outcome = self
            .retry
            .run_keeping(|number| self.attempt(number, self.send(body, headers)))
            .await;
        self.posted(outcome)
    }

    /// As [`post`](Self::post), for a request that asks for a streamed answer: each attempt reads
    /// the events into a fresh reader from `reader`. An attempt that gets no byte within
    /// `first_byte_timeout` is retried; an answer still streaming at `request_timeout` ends there,
    /// with what came so far (`timed_out`). A server that answers with plain JSON instead is read
    /// as [`post`](Self::post) reads it.
    async fn post_streamed<R: StreamReader>(
        &self,
        body: &[u8],
        headers: &HeaderMap,
        reader: impl Fn() -> R,
    ) -> Result<Posted, HostError> {
        let outcome = self
            .retry
            .run_keeping(|number| self.attempt(number, self.send_streamed(body, headers, reader())))
            .await;
        self.posted(outcome)
    }

    /// The endpoint's headers and a request's own.
    /// The endpoint's headers with a request's own: a request header the host sets too is
    /// joined to the host's value as a list (`anthropic-beta: the-hosts,advanced-tool-use-…`),
    /// so neither beta is lost.
    fn headers_with(&self, extra: &HeaderMap) -> HeaderMap {
        let mut headers = self.headers.clone();
        for (name, value) in extra {
            let joined = (headers.get(name))
                .and_then(|had| Some((had.to_str().ok()?, value.to_str().ok()?)))
                .filter(|(had, new)| !had.split(',').any(|v| v.trim() == *new))
                .and_then(|(had, new)| HeaderValue::from_str(&format!("{had},{new}")).ok());
            match joined {
                Some(joined) => headers.insert(name, joined),
                None if headers.contains_key(name) => continue,
                None => headers.insert(name, value.clone()),
            };
        }
        headers
    }

    /// One model turn over this endpoint: `body` serialized and sent with `headers` (streamed into
    /// fresh readers from `reader` when `stream`), the answer read by `parse` (its error texts
    /// freed of secrets), and the completion told how it arrived: the retried attempts, the
    /// timing, a cut at the timeout.
    pub async fn complete<R: StreamReader>(
        &self,
        body: &impl serde::Serialize,
        headers: &HeaderMap,
        stream: bool,
        reader: impl Fn() -> R,
        parse: impl FnOnce(&Value) -> Result<Completion, HostError>,
    ) -> Result<Completion, HostError> {
        let body = self
            .body_bytes(body)
            .map_err(|e| HostError::Other(format!("cannot serialize the request: {e}")))?;
        let posted = if stream {
            self.post_streamed(&body, headers, reader).await?
        } else {
            self.post(&body, headers).await?
        };
        let mut completion = parse(&posted.value).map_err(|e| match e {
            HostError::BadResponse(m) => HostError::BadResponse(self.redact(&m)),
            other => other,
        })?;
        completion.retried = posted.retried;
        completion.timing = posted.timing;
        completion.timed_out = posted.timed_out;
        Ok(completion)
    }

    /// `body` as JSON bytes, with the `extra_body` fields merged in: at the top level, where the
    /// body has no field of that name (mcpeval's own fields win).
    fn body_bytes(&self, body: &impl serde::Serialize) -> serde_json::Result<Vec<u8>> {
        let Some(extra) = self.extra_body.as_deref().filter(|e| !e.is_empty()) else {
            return serde_json::to_vec(body);
        };
        let mut value = serde_json::to_value(body)?;
        if let Value::Object(fields) = &mut value {
            for (key, extra) in extra {
                fields.entry(key.clone()).or_insert_with(|| extra.clone());
            }
        }
        serde_json::to_vec(&value)
    }

    /// Merges these fields into every request body (see [`Self::complete`]).
    pub fn set_extra_body(&mut self, extra: serde_json::Map<String, Value>) {
        self.extra_body = (!extra.is_empty()).then(|| Arc::new(extra));
    }

    fn posted(
        &self,
        outcome: Result<(Answer, Vec<Failure>), Exhausted<Failure>>,
    ) -> Result<Posted, HostError> {
        match outcome {
            Ok((answer, failed)) => Ok(Posted {
                value: answer.value,
                retried: failed.iter().map(Failure::summary).collect(),
                timing: answer.timing,
                timed_out: answer.timed_out,
            }),
            Err(exhausted) => Err(self.host_error(exhausted)),
        }
    }

    /// Text from the provider, safe to keep: short, on one line, without secrets.
    fn clean(&self, text: &str) -> String {
        self.redact(&excerpt_text(text))
    }

    fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "[REDACTED]");
            }
        }
        out
    }

    /// One attempt: wait for a slot, send, then sort the outcome into done, worth retrying, or
    /// final.
    async fn attempt(
        &self,
        number: u32,
        send: impl std::future::Future<Output = Attempt<Answer, Failure>>,
    ) -> Attempt<Answer, Failure> {
        if let Some(opened) = self.breaker.as_ref().and_then(|b| b.opened()) {
            return Attempt::Fatal(Failure::Open(format!(
                "not sent: the host stopped, {opened}"
            )));
        }
        let slot = match &self.congestion {
            Some(c) => Some(c.acquire().await),
            None => None,
        };
        self.counts.attempts.fetch_add(1, Ordering::Relaxed);
        if number > 1 {
            self.counts.retries.fetch_add(1, Ordering::Relaxed);
        }
        let outcome = send.await;
        if let Some(slot) = slot {
            let throttled = matches!(
                &outcome,
                Attempt::Retryable { error: Failure::Status(s), .. } if s.status == 429 || s.status == 529
            );
            slot.finish(if throttled {
                Signal::Throttled
            } else {
                Signal::Answered
            });
        }
        let Some(breaker) = &self.breaker else {
            return outcome;
        };
        let lasting = match &outcome {
            Attempt::Done(_) => None,
            Attempt::Retryable { error, .. } | Attempt::Fatal(error) => error.lasting(),
        };
        match outcome {
            // Open now: another attempt would not be sent.
            Attempt::Retryable { error, .. } if breaker.record(lasting, &self.url) => {
                Attempt::Fatal(error)
            }
            outcome => {
                breaker.record(lasting, &self.url);
                outcome
            }
        }
    }

    async fn send(&self, body: &[u8], headers: &HeaderMap) -> Attempt<Answer, Failure> {
        let started = Instant::now();
        let sent = self
            .http
            .post(&self.url)
            .headers(self.headers_with(headers))
            .timeout(self.retry.request_timeout)
            .body(body.to_vec())
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) => return transport(e),
        };
        let (status, retry_after) = status_of(&response);
        let bytes = match response.bytes().await {
            Ok(bytes) => bytes,
            Err(e) => return transport(e),
        };
        self.whole(status, retry_after, &bytes, started)
    }

    /// One attempt of a streamed request. The first byte must come within
    /// `first_byte_timeout`, the whole answer within `request_timeout` (else it is cut there).
    async fn send_streamed<R: StreamReader>(
        &self,
        body: &[u8],
        headers: &HeaderMap,
        mut reader: R,
    ) -> Attempt<Answer, Failure> {
        use tokio::time::timeout_at;
        let started = Instant::now();
        let now = tokio::time::Instant::now();
        let deadline = now + self.retry.request_timeout;
        let first_byte = self
            .retry
            .first_byte_timeout
            .min(self.retry.request_timeout);
        let first_deadline = now + first_byte;
        let silent = || Attempt::Retryable {
            error: Failure::Silent(format!(
                "no answer within {} s (first_byte_timeout)",
                seconds(first_byte)
            )),
            retry_after: None,
        };
        let request = self
            .http
            .post(&self.url)
            .headers(self.headers_with(headers))
            .body(body.to_vec())
            .send();
        let response = match timeout_at(first_deadline, request).await {
            Err(_) => return silent(),
            Ok(Err(e)) => return transport(e),
            Ok(Ok(response)) => response,
        };
        let (status, retry_after) = status_of(&response);
        let is_events = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !(200..300).contains(&status) {
            return self
                .read_whole(response, status, retry_after, deadline, started)
                .await;
        }
        let mut body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>> =
            Box::pin(response.bytes_stream());
        if !is_events {
            // A gateway may relabel a stream (`application/json` over `data:` lines, as buffering
            // proxies do): the body's first bytes tell. A whole JSON answer may take until the
            // request's deadline.
            let first = match timeout_at(deadline, body.next()).await {
                Err(_) => return self.unfinished(),
                Ok(Some(Err(e))) => return transport(e),
                Ok(None) => bytes::Bytes::new(),
                Ok(Some(Ok(first))) => first,
            };
            if !looks_like_events(&first) {
                let mut whole = first.to_vec();
                loop {
                    match timeout_at(deadline, body.next()).await {
                        Err(_) => return self.unfinished(),
                        Ok(Some(Err(e))) => return transport(e),
                        Ok(Some(Ok(more))) => whole.extend_from_slice(&more),
                        Ok(None) => break,
                    }
                }
                return self.whole(status, retry_after, &whole, started);
            }
            body = Box::pin(futures::stream::once(async move { Ok(first) }).chain(body));
        }
        let mut events = body.eventsource();
        let mut ttft_ms = None;
        let mut first = true;
        let mut timed_out = false;
        loop {
            let until = if first { first_deadline } else { deadline };
            let event = match timeout_at(until, events.next()).await {
                Err(_) if first => return silent(),
                Err(_) => {
                    timed_out = true;
                    break;
                }
                Ok(None) if reader.ended() => break,
                // Not retried here, as an unreadable whole body is not: the runner retries the
                // trial.
                Ok(None) => {
                    return Attempt::Fatal(Failure::Unparsable(format!(
                        "unparsable body (the stream closed before the answer ended): {}",
                        self.clean(&reader.finish().to_string())
                    )))
                }
                Ok(Some(Err(e))) => {
                    return Attempt::Retryable {
                        error: Failure::Silent(format!("the answer broke off: {e}")),
                        retry_after: None,
                    }
                }
                Ok(Some(Ok(event))) => event,
            };
            first = false;
            match event.data.trim() {
                // The chat-completions end mark: the answer is over, finish reason or not.
                "[DONE]" => break,
                // A keep-alive without data: the provider is there, nothing more.
                "" => continue,
                _ => {}
            }
            match reader.event(&event.event, &event.data) {
                Ok(true) if ttft_ms.is_none() => ttft_ms = Some(ms(started.elapsed())),
                Ok(_) => {}
                Err(message) => {
                    return Attempt::Retryable {
                        error: Failure::Silent(self.clean(&message.to_string())),
                        retry_after: None,
                    }
                }
            }
        }
        Attempt::Done(Answer {
            value: reader.finish(),
            timing: Timing {
                ttft_ms,
                total_ms: ms(started.elapsed()),
            },
            timed_out,
        })
    }

    /// Reads a whole (unstreamed) answer by `deadline` and sorts it.
    async fn read_whole(
        &self,
        response: reqwest::Response,
        status: u16,
        retry_after: Option<Duration>,
        deadline: tokio::time::Instant,
        started: Instant,
    ) -> Attempt<Answer, Failure> {
        match tokio::time::timeout_at(deadline, response.bytes()).await {
            Err(_) => self.unfinished(),
            Ok(Err(e)) => transport(e),
            Ok(Ok(bytes)) => self.whole(status, retry_after, &bytes, started),
        }
    }

    /// A whole answer that had not ended by the request's timeout (retried).
    fn unfinished(&self) -> Attempt<Answer, Failure> {
        Attempt::Retryable {
            error: Failure::Silent(format!(
                "the answer did not end within {} s (timeout_s)",
                seconds(self.retry.request_timeout)
            )),
            retry_after: None,
        }
    }

    /// Sorts a whole answer into done, worth retrying, or final.
    fn whole(
        &self,
        status: u16,
        retry_after: Option<Duration>,
        bytes: &[u8],
        started: Instant,
    ) -> Attempt<Answer, Failure> {
        if (200..300).contains(&status) {
            return match serde_json::from_slice(bytes) {
                Ok(value) => Attempt::Done(Answer {
                    value,
                    timing: Timing {
                        ttft_ms: None,
                        total_ms: ms(started.elapsed()),
                    },
                    timed_out: false,
                }),
                // Not retried here: an answer that arrived but cannot be read is an
                // infrastructure error of the trial, and the runner retries the trial.
                Err(e) => Attempt::Fatal(Failure::Unparsable(format!(
                    "unparsable body ({e}): {}",
                    self.clean(&String::from_utf8_lossy(bytes))
                ))),
            };
        }
        let error = HttpStatus::read(status, bytes, |t| self.clean(t));
        // OpenAI answers 429 both for a rate limit (wait and retry) and for an exhausted quota
        // (retrying cannot help).
        if retryable_status(status) && !error.is_insufficient_quota() {
            Attempt::Retryable {
                error: Failure::Status(error),
                retry_after,
            }
        } else {
            Attempt::Fatal(Failure::Status(error))
        }
    }

    fn host_error(&self, exhausted: Exhausted<Failure>) -> HostError {
        let Exhausted { mut errors } = exhausted;
        let Some(last) = errors.pop() else {
            return HostError::Other("no attempt was made".into());
        };
        let earlier: Vec<String> = errors.iter().map(Failure::summary).collect();
        let source: Box<dyn std::error::Error + Send + Sync> = match last {
            Failure::Unparsable(text) if earlier.is_empty() => {
                return HostError::BadResponse(text);
            }
            Failure::Unparsable(text) => {
                return HostError::BadResponse(format!(
                    "{text} (attempt {}; earlier: {})",
                    earlier.len() + 1,
                    earlier.join("; ")
                ));
            }
            Failure::Status(status) => Box::new(status),
            Failure::Transport(e) => Box::new(e),
            Failure::Silent(text) | Failure::Open(text) => text.into(),
        };
        let source = if earlier.is_empty() {
            source
        } else {
            Box::new(Attempts {
                earlier,
                last: source,
            })
        };
        HostError::Request {
            endpoint: self.url.clone(),
            source,
        }
    }
}

/// The settings every provider over a [`JsonEndpoint`] takes the same way (bring the trait into
/// scope to call them).
pub trait OverEndpoint: Sized {
    fn endpoint(&self) -> &JsonEndpoint;
    fn endpoint_mut(&mut self) -> &mut JsonEndpoint;

    /// Sets how long one attempt may take (default 120 s).
    fn with_timeout(mut self, timeout: Duration) -> Result<Self, HostError> {
        let mut retry = *self.endpoint().retry_policy();
        retry.request_timeout = timeout;
        self.endpoint_mut().set_retry(retry);
        Ok(self)
    }

    /// Sets how requests are retried (default [`RetryPolicy::default`]: 429, 5xx, 529
    /// overloaded, timeouts and connection failures, 4 attempts, `Retry-After` honoured).
    fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.endpoint_mut().set_retry(retry);
        self
    }

    /// Adds headers to every request (values are marked sensitive: they may hold tokens).
    fn with_headers<'a>(
        mut self,
        extra: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, HostError> {
        self.endpoint_mut().add_headers(extra)?;
        Ok(self)
    }

    /// Merges these fields into every request body, where mcpeval sets no field of that name
    /// (`[host.NAME] extra_body`).
    fn with_extra_body(mut self, extra: serde_json::Map<String, Value>) -> Self {
        self.endpoint_mut().set_extra_body(extra);
        self
    }

    /// Puts every request under the host's circuit breaker.
    fn with_breaker(mut self, breaker: Arc<Breaker>) -> Self {
        self.endpoint_mut().set_breaker(breaker);
        self
    }

    /// Puts every attempt under the host's adaptive concurrency.
    fn with_congestion(mut self, congestion: Arc<Congestion>) -> Self {
        self.endpoint_mut().set_congestion(congestion);
        self
    }

    /// The retry policy in force.
    fn retry_policy(&self) -> &RetryPolicy {
        self.endpoint().retry_policy()
    }

    /// Requests sent so far and how many of them were retries.
    fn request_counts(&self) -> RequestCounts {
        self.endpoint().request_counts()
    }
}

/// Why one attempt failed.
#[derive(Debug)]
enum Failure {
    Status(HttpStatus),
    Transport(reqwest::Error),
    Unparsable(String),
    /// A streamed attempt that sent nothing in time, broke off, or carried an error event.
    Silent(String),
    /// Not sent: the host's breaker is open.
    Open(String),
}

impl Failure {
    /// One line, for the list of earlier attempts.
    fn summary(&self) -> String {
        match self {
            Failure::Status(s) => s.to_string(),
            Failure::Transport(e) => crate::error::chain(e),
            Failure::Unparsable(text) | Failure::Silent(text) | Failure::Open(text) => text.clone(),
        }
    }

    /// The lasting reason behind this failure, if it has one (see [`Breaker`]).
    fn lasting(&self) -> Option<Lasting> {
        match self {
            Failure::Transport(e) => lasting_transport(e),
            Failure::Status(s) if s.status == 401 || s.status == 403 => {
                Some(Lasting::Unauthorized(s.status))
            }
            Failure::Status(s) if s.is_insufficient_quota() => Some(Lasting::QuotaExhausted),
            _ => None,
        }
    }
}

impl super::HostError {
    /// The HTTP status the provider answered the failed request with, if it answered.
    pub fn http_status(&self) -> Option<u16> {
        let Self::Request { source, .. } = self else {
            return None;
        };
        let last = match source.downcast_ref::<Attempts>() {
            Some(attempts) => attempts.last.as_ref(),
            None => source.as_ref(),
        };
        last.downcast_ref::<HttpStatus>().map(|s| s.status)
    }
}

/// Whether a body's first bytes are server-sent events (`data:`, `event:` or a `:` comment
/// line), whatever its content type says.
fn looks_like_events(first: &[u8]) -> bool {
    let start = first
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map_or(&[][..], |i| &first[i..]);
    [&b"data:"[..], b"event:", b":", b"id:", b"retry:"]
        .iter()
        .any(|p| start.starts_with(p))
}

/// The HTTP client of an endpoint: its connect timeout is the retry policy's.
fn client(retry: &RetryPolicy) -> Result<reqwest::Client, HostError> {
    crate::net::client_builder()
        .connect_timeout(retry.connect_timeout)
        .build()
        .map_err(|e| HostError::Other(format!("cannot build the HTTP client: {e}")))
}

/// The status of an answer and its `Retry-After`, read before the body.
fn status_of(response: &reqwest::Response) -> (u16, Option<Duration>) {
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, SystemTime::now()));
    (response.status().as_u16(), retry_after)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn seconds(d: Duration) -> String {
    format!("{}", d.as_secs_f64())
}

/// A transport failure: timeouts and failures to connect, send or read are worth another
/// attempt; a request that could not be built (a bad URL) is not.
fn transport(e: reqwest::Error) -> Attempt<Answer, Failure> {
    let e = e.without_url();
    if e.is_timeout() || e.is_connect() || e.is_request() || e.is_body() || e.is_decode() {
        Attempt::Retryable {
            error: Failure::Transport(e),
            retry_after: None,
        }
    } else {
        Attempt::Fatal(Failure::Transport(e))
    }
}

/// A non-2xx answer: the status and the provider's message or a short excerpt of the body
/// (never the headers).
#[derive(Debug)]
struct HttpStatus {
    status: u16,
    body: String,
    /// `error.type` or `error.code` when the body is an OpenAI or Anthropic error object.
    kind: Option<String>,
}

impl HttpStatus {
    /// Reads OpenAI's `{"error": {"message", "type", "code"}}` and Anthropic's
    /// `{"type": "error", "error": {"type", "message"}}` alike; anything else is excerpted.
    fn read(status: u16, bytes: &[u8], clean: impl Fn(&str) -> String) -> Self {
        let json: Option<Value> = serde_json::from_slice(bytes).ok();
        let error = json.as_ref().and_then(|v| v.get("error"));
        let field = |k: &str| error.and_then(|e| e.get(k)).and_then(Value::as_str);
        let kind = field("code").or_else(|| field("type")).map(str::to_owned);
        // Anthropic's error types say more than its messages ("overloaded_error").
        let anthropic = json
            .as_ref()
            .and_then(|v| v.get("type"))
            .and_then(Value::as_str)
            == Some("error");
        let body = match (field("message"), error.and_then(Value::as_str)) {
            (Some(message), _) => match field("type") {
                Some(t) if anthropic => clean(&format!("{t}: {message}")),
                _ => clean(message),
            },
            (None, Some(text)) => clean(text),
            (None, None) => clean(&String::from_utf8_lossy(bytes)),
        };
        Self { status, body, kind }
    }

    fn is_insufficient_quota(&self) -> bool {
        self.status == 429 && self.kind.as_deref() == Some("insufficient_quota")
    }
}

impl fmt::Display for HttpStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP {}: {}", self.status, self.body)
    }
}

impl std::error::Error for HttpStatus {}

/// The last of several failed attempts, with one line for each earlier one.
#[derive(Debug)]
struct Attempts {
    earlier: Vec<String>,
    last: Box<dyn std::error::Error + Send + Sync>,
}

impl fmt::Display for Attempts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Runs of the same error once, with a count (a dead endpoint fails alike every time).
        let mut runs: Vec<(&str, usize)> = Vec::new();
        for error in &self.earlier {
            match runs.last_mut() {
                Some((last, n)) if *last == error.as_str() => *n += 1,
                _ => runs.push((error, 1)),
            }
        }
        let earlier: Vec<String> = runs
            .into_iter()
            .map(|(error, n)| match n {
                1 => error.to_owned(),
                n => format!("{error} (×{n})"),
            })
            .collect();
        write!(
            f,
            "{} attempts failed (earlier: {})",
            self.earlier.len() + 1,
            earlier.join("; ")
        )
    }
}

impl std::error::Error for Attempts {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.last.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_header_the_host_sets_too_is_joined_to_its_value() {
        let mut host = HeaderMap::new();
        host.insert(
            "anthropic-beta",
            HeaderValue::from_static("files-api-2025-04-14"),
        );
        host.insert("x-other", HeaderValue::from_static("a"));
        let endpoint = JsonEndpoint::new("http://127.0.0.1:9/v1".into(), host, Vec::new()).unwrap();
        let mut extra = HeaderMap::new();
        extra.insert(
            "anthropic-beta",
            HeaderValue::from_static("advanced-tool-use-2025-11-20"),
        );
        extra.insert("x-new", HeaderValue::from_static("b"));
        let sent = endpoint.headers_with(&extra);
        assert_eq!(
            sent["anthropic-beta"],
            "files-api-2025-04-14,advanced-tool-use-2025-11-20"
        );
        assert_eq!(
            (sent["x-other"].as_ref(), sent["x-new"].as_ref()),
            (&b"a"[..], &b"b"[..])
        );
        // Already there: sent once.
        let again = JsonEndpoint::new("http://127.0.0.1:9/v1".into(), sent, Vec::new()).unwrap();
        let twice = again.headers_with(&extra);
        assert_eq!(
            twice["anthropic-beta"],
            "files-api-2025-04-14,advanced-tool-use-2025-11-20"
        );
    }

    #[test]
    fn error_bodies_of_both_providers_are_read() {
        let openai = br#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
        let s = HttpStatus::read(429, openai, excerpt_text);
        assert_eq!(s.kind.as_deref(), Some("rate_limit_exceeded"));
        assert_eq!(s.to_string(), "HTTP 429: Rate limit reached");
        let anthropic =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let s = HttpStatus::read(529, anthropic, excerpt_text);
        assert_eq!(s.to_string(), "HTTP 529: overloaded_error: Overloaded");
        let quota = br#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}"#;
        assert!(HttpStatus::read(429, quota, excerpt_text).is_insufficient_quota());
        let html = b"<html>Bad gateway</html>";
        assert_eq!(
            HttpStatus::read(502, html, excerpt_text).to_string(),
            "HTTP 502: <html>Bad gateway</html>"
        );
    }

    #[test]
    fn secrets_are_taken_out_of_error_texts() {
        let endpoint = JsonEndpoint::new(
            "http://127.0.0.1:9/v1/x".into(),
            HeaderMap::new(),
            vec!["sk-planted-secret".into(), "ab".into()],
        )
        .unwrap();
        assert_eq!(
            endpoint.clean("bad key sk-planted-secret, ab"),
            "bad key [REDACTED], ab"
        );
    }
}
