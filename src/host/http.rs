//! One JSON endpoint of a model provider: POST a request body under the retry policy and the
//! host's adaptive concurrency, read the answer as JSON, and turn failures into `HostError`s that
//! never carry a secret. Shared by the openai and anthropic hosts.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use serde_json::Value;

use super::aimd::{Congestion, Signal};
use super::lenient::excerpt_text;
use super::retry::{parse_retry_after, retryable_status, Attempt, Exhausted, RetryPolicy};
use super::HostError;

/// A provider endpoint: where requests go, with which headers, retried how.
pub struct JsonEndpoint {
    url: String,
    /// Sent with every request; secrets in it are marked sensitive.
    headers: HeaderMap,
    http: reqwest::Client,
    retry: RetryPolicy,
    congestion: Option<Arc<Congestion>>,
    /// Values taken out of every error text (the key and secret header values), in case a proxy
    /// echoes the request.
    secrets: Vec<String>,
    counts: Counts,
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
pub struct Posted {
    pub value: Value,
    pub retried: Vec<String>,
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
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| HostError::Other(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            url,
            headers,
            http,
            retry: RetryPolicy::default(),
            congestion: None,
            secrets: secrets.into_iter().filter(|s| s.len() >= 4).collect(),
            counts: Counts::default(),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    pub fn set_retry(&mut self, retry: RetryPolicy) {
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

    pub fn request_counts(&self) -> RequestCounts {
        RequestCounts {
            attempts: self.counts.attempts.load(Ordering::Relaxed),
            retries: self.counts.retries.load(Ordering::Relaxed),
        }
    }

    /// Sends `body` until an attempt succeeds, fails for good, or the attempts run out.
    pub async fn post(&self, body: &[u8]) -> Result<Posted, HostError> {
        match self
            .retry
            .run_keeping(|number| self.attempt(number, body))
            .await
        {
            Ok((value, failed)) => Ok(Posted {
                value,
                retried: failed.iter().map(Failure::summary).collect(),
            }),
            Err(exhausted) => Err(self.host_error(exhausted)),
        }
    }

    /// Text from the provider, safe to keep: short, on one line, without secrets.
    pub fn clean(&self, text: &str) -> String {
        self.redact(&excerpt_text(text))
    }

    pub fn redact(&self, text: &str) -> String {
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
    async fn attempt(&self, number: u32, body: &[u8]) -> Attempt<Value, Failure> {
        let slot = match &self.congestion {
            Some(c) => Some(c.acquire().await),
            None => None,
        };
        self.counts.attempts.fetch_add(1, Ordering::Relaxed);
        if number > 1 {
            self.counts.retries.fetch_add(1, Ordering::Relaxed);
        }
        let outcome = self.send(body).await;
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
        outcome
    }

    async fn send(&self, body: &[u8]) -> Attempt<Value, Failure> {
        let sent = self
            .http
            .post(&self.url)
            .headers(self.headers.clone())
            .timeout(self.retry.request_timeout)
            .body(body.to_vec())
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) => return transport(e),
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        let bytes = match response.bytes().await {
            Ok(bytes) => bytes,
            Err(e) => return transport(e),
        };
        if (200..300).contains(&status) {
            return match serde_json::from_slice(&bytes) {
                Ok(value) => Attempt::Done(value),
                // Not retried here: an answer that arrived but cannot be read is an
                // infrastructure error of the trial, and the runner retries the trial.
                Err(e) => Attempt::Fatal(Failure::Unparsable(format!(
                    "unparsable body ({e}): {}",
                    self.clean(&String::from_utf8_lossy(&bytes))
                ))),
            };
        }
        let error = HttpStatus::read(status, &bytes, |t| self.clean(t));
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
}

impl Failure {
    /// One line, for the list of earlier attempts.
    fn summary(&self) -> String {
        match self {
            Failure::Status(s) => s.to_string(),
            Failure::Transport(e) => crate::episode::chain(e),
            Failure::Unparsable(text) => text.clone(),
        }
    }
}

/// A transport failure: timeouts and failures to connect, send or read are worth another
/// attempt; a request that could not be built (a bad URL) is not.
fn transport(e: reqwest::Error) -> Attempt<Value, Failure> {
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
