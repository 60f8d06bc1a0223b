//! The `openai` host: any OpenAI-compatible chat-completions endpoint.
//!
//! async-openai supplies the endpoint's configuration (base URL, `Authorization`, organization
//! and project headers); the request itself goes out through our own reqwest client, under
//! [`RetryPolicy`]. async-openai's client retries 429 and 5xx answers on its own (3 times, its own
//! backoff, `Retry-After` only as seconds and without a cap) and that cannot be switched off
//! without its `middleware` feature, so sending through it would multiply our attempts. The
//! response is read as plain JSON: typed responses reject what many compatible servers send (see
//! DEPENDENCIES.md).

pub(crate) mod wire;

#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use async_openai::config::{Config, OpenAIConfig};
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use serde_json::Value;

use super::retry::{parse_retry_after, retryable_status, Attempt, Exhausted, RetryPolicy};
use super::{Completion, CompletionRequest, HostError, Model};
use wire::{excerpt_text, parse_response, request_body, ToolNames};

/// Where requests go when `OPENAI_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// How long one request may take by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// A model behind an OpenAI-compatible endpoint (`OPENAI_BASE_URL`, `OPENAI_API_KEY`).
pub struct OpenAiModel {
    id: String,
    model: String,
    base_url: String,
    /// `…/chat/completions`.
    endpoint: String,
    /// From async-openai's config: `Authorization` (marked sensitive), organization, project.
    headers: HeaderMap,
    http: reqwest::Client,
    retry: RetryPolicy,
    counts: Counts,
}

/// Requests sent and retried by one model, over its lifetime.
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

impl fmt::Debug for OpenAiModel {
    // By hand: the headers hold the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("id", &self.id)
            .field("base_url", &self.base_url)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl OpenAiModel {
    /// `model` is the provider's model name (`gpt-4.1-mini`). Reads the endpoint and key from the
    /// environment only. A key is required for the default endpoint, optional for others (local
    /// servers often need none).
    pub fn from_env(model: &str) -> Result<Self, HostError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Self::from_settings(model, var("OPENAI_BASE_URL"), var("OPENAI_API_KEY"))
    }

    fn from_settings(
        model: &str,
        base_url: Option<String>,
        api_key: Option<String>,
    ) -> Result<Self, HostError> {
        let base_url = base_url.unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        if api_key.is_none() && base_url.trim_end_matches('/') == DEFAULT_BASE_URL {
            return Err(HostError::MissingEnv("OPENAI_API_KEY".into()));
        }
        Self::build(model, &base_url, api_key, true)
    }

    /// A model at an explicit endpoint (for tests and embedding), with no environment involved.
    pub fn with_base_url(
        model: &str,
        base_url: &str,
        api_key: Option<String>,
    ) -> Result<Self, HostError> {
        Self::build(model, base_url, api_key, false)
    }

    fn build(
        model: &str,
        base_url: &str,
        api_key: Option<String>,
        org_from_env: bool,
    ) -> Result<Self, HostError> {
        let key = api_key.unwrap_or_default();
        // async-openai would panic on a key that cannot be a header value.
        if !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(HostError::Other(
                "the API key contains characters that cannot be sent in an HTTP header".into(),
            ));
        }
        let base_url = base_url.trim_end_matches('/').to_owned();
        let mut config = OpenAIConfig::new()
            .with_api_base(&base_url)
            .with_api_key(key);
        if !org_from_env {
            config = config.with_org_id("").with_project_id("");
        }
        let mut headers = config.headers();
        if let Some(auth) = headers.get_mut(AUTHORIZATION) {
            auth.set_sensitive(true);
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| HostError::Other(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            id: format!("openai:{model}"),
            model: model.to_owned(),
            endpoint: config.url("/chat/completions"),
            base_url,
            headers,
            http,
            retry: RetryPolicy::default(),
            counts: Counts::default(),
        })
    }

    /// Sets how long one attempt may take (default 120 s).
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, HostError> {
        self.retry.request_timeout = timeout;
        Ok(self)
    }

    /// Sets how requests are retried (default [`RetryPolicy::default`]).
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The retry policy in force.
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    /// Requests sent so far and how many of them were retries.
    pub fn request_counts(&self) -> RequestCounts {
        RequestCounts {
            attempts: self.counts.attempts.load(Ordering::Relaxed),
            retries: self.counts.retries.load(Ordering::Relaxed),
        }
    }

    /// The provider's model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The endpoint, without `/chat/completions`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// One attempt: send, then sort the outcome into done, worth retrying, or final.
    async fn attempt(&self, number: u32, body: &[u8]) -> Attempt<Value, Failure> {
        self.counts.attempts.fetch_add(1, Ordering::Relaxed);
        if number > 1 {
            self.counts.retries.fetch_add(1, Ordering::Relaxed);
        }
        let sent = self
            .http
            .post(&self.endpoint)
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
                    excerpt_text(&String::from_utf8_lossy(&bytes))
                ))),
            };
        }
        let error = HttpStatus::read(status, &bytes);
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
        let last = errors.pop().expect("at least one attempt");
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
            endpoint: self.endpoint.clone(),
            source,
        }
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

/// A non-2xx answer: the status and a short excerpt of the body (never the headers).
#[derive(Debug)]
struct HttpStatus {
    status: u16,
    body: String,
    /// `error.type` or `error.code` when the body is an OpenAI error object.
    kind: Option<String>,
}

impl HttpStatus {
    fn read(status: u16, bytes: &[u8]) -> Self {
        let json: Option<Value> = serde_json::from_slice(bytes).ok();
        let error = json.as_ref().and_then(|v| v.get("error"));
        let field = |k: &str| error.and_then(|e| e.get(k)).and_then(Value::as_str);
        let body = match field("message") {
            Some(message) => excerpt_text(message),
            None => excerpt_text(&String::from_utf8_lossy(bytes)),
        };
        let kind = field("code").or_else(|| field("type")).map(str::to_owned);
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

#[async_trait::async_trait]
impl Model for OpenAiModel {
    fn id(&self) -> &str {
        &self.id
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, HostError> {
        let names = ToolNames::new(request.tools.iter().map(|t| t.name.as_str()));
        let body = serde_json::to_vec(&request_body(&self.model, request, &names))
            .map_err(|e| HostError::Other(format!("cannot serialize the request: {e}")))?;
        let response = self
            .retry
            .run(|number| self.attempt(number, &body))
            .await
            .map_err(|e| self.host_error(e))?;
        parse_response(&response, &names, &self.model)
    }
}
