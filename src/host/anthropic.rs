//! The `anthropic` host: a model behind Anthropic's Messages API (`POST /v1/messages`), over
//! reqwest.
//!
//! Our conversation is OpenAI-shaped; `wire` maps it onto Anthropic's content blocks and reads the
//! answer back leniently. The key travels in one header marked sensitive and is never part of an
//! error, a log line or a result.

pub(crate) mod wire;

#[cfg(test)]
mod tests;

use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use serde_json::Value;

use super::{Completion, CompletionRequest, HostError, Model};
use wire::{error_message, excerpt_text, parse_response, request_body, Settings, ToolNames};

/// Where requests go when `ANTHROPIC_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent with every request.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` of a request unless set otherwise.
pub const DEFAULT_MAX_TOKENS: u32 = 1024;
/// How long one request may take by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// A model behind the Messages API (`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`).
pub struct AnthropicModel {
    id: String,
    model: String,
    base_url: String,
    max_tokens: u32,
    temperature: Option<f64>,
    /// Only to take it out of error texts: it is sent from the client's default headers.
    api_key: String,
    headers: HeaderMap,
    client: reqwest::Client,
}

impl fmt::Debug for AnthropicModel {
    // By hand: the struct holds the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicModel")
            .field("id", &self.id)
            .field("base_url", &self.base_url)
            .field("max_tokens", &self.max_tokens)
            .field("temperature", &self.temperature)
            .finish_non_exhaustive()
    }
}

impl AnthropicModel {
    /// `model` is the provider's model name (`claude-sonnet-4-5`). Reads the endpoint
    /// (`ANTHROPIC_BASE_URL`, default `https://api.anthropic.com`) and the key
    /// (`ANTHROPIC_API_KEY`, required) from the environment only.
    pub fn from_env(model: &str) -> Result<Self, HostError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Self::from_settings(model, var("ANTHROPIC_BASE_URL"), var("ANTHROPIC_API_KEY"))
    }

    fn from_settings(
        model: &str,
        base_url: Option<String>,
        api_key: Option<String>,
    ) -> Result<Self, HostError> {
        let api_key = api_key.ok_or_else(|| HostError::MissingEnv("ANTHROPIC_API_KEY".into()))?;
        let base_url = base_url.unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        Self::with_base_url(model, &base_url, &api_key)
    }

    /// A model at an explicit endpoint (for tests and embedding), with no environment involved.
    /// `base_url` is the part before `/v1/messages`; a trailing `/v1` is tolerated.
    pub fn with_base_url(model: &str, base_url: &str, api_key: &str) -> Result<Self, HostError> {
        let mut key = HeaderValue::from_str(api_key)
            .ok()
            .filter(|_| api_key.bytes().all(|b| b.is_ascii_graphic()))
            .ok_or_else(|| {
                HostError::Other(
                    "the API key contains characters that cannot be sent in an HTTP header".into(),
                )
            })?;
        key.set_sensitive(true);
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", key);
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let base_url = base_url.trim_end_matches('/');
        let base_url = base_url.strip_suffix("/v1").unwrap_or(base_url).to_owned();
        Ok(Self {
            id: format!("anthropic:{model}"),
            model: model.to_owned(),
            base_url,
            max_tokens: DEFAULT_MAX_TOKENS,
            temperature: None,
            api_key: api_key.to_owned(),
            client: http_client(headers.clone(), DEFAULT_TIMEOUT)?,
            headers,
        })
    }

    /// Sets how long one request may take (default 120 s).
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, HostError> {
        self.client = http_client(self.headers.clone(), timeout)?;
        Ok(self)
    }

    /// Sets `max_tokens` of every request (default 1024).
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Sends `temperature` with every request (by default none is sent: the API's default).
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// The provider's model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The endpoint, without `/v1/messages`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    fn endpoint(&self) -> String {
        format!("{}/v1/messages", self.base_url)
    }

    fn request_error(&self, source: Box<dyn std::error::Error + Send + Sync>) -> HostError {
        HostError::Request {
            endpoint: self.endpoint(),
            source,
        }
    }

    /// Text from the provider, safe to keep: on one line, short, and without the key.
    fn clean(&self, text: &str) -> String {
        self.redact(&excerpt_text(text))
    }

    /// The text without the key, in case a proxy echoes the request headers.
    fn redact(&self, text: &str) -> String {
        if self.api_key.len() >= 4 {
            text.replace(&self.api_key, "[REDACTED]")
        } else {
            text.to_owned()
        }
    }
}

fn http_client(headers: HeaderMap, timeout: Duration) -> Result<reqwest::Client, HostError> {
    reqwest::Client::builder()
        .default_headers(headers)
        .timeout(timeout)
        .build()
        .map_err(|e| HostError::Other(format!("cannot build the HTTP client: {e}")))
}

/// A non-2xx answer: the status and the provider's message or a short excerpt of the body
/// (never the headers).
#[derive(Debug)]
struct HttpStatus {
    status: u16,
    body: String,
}

impl fmt::Display for HttpStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP {}: {}", self.status, self.body)
    }
}

impl std::error::Error for HttpStatus {}

#[async_trait::async_trait]
impl Model for AnthropicModel {
    fn id(&self) -> &str {
        &self.id
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, HostError> {
        let names = ToolNames::new(request.tools.iter().map(|t| t.name.as_str()));
        let settings = Settings {
            model: &self.model,
            max_tokens: self.max_tokens,
            temperature: self.temperature,
        };
        let body = request_body(settings, request, &names);
        let response = self
            .client
            .post(self.endpoint())
            .json(&body)
            .send()
            .await
            .map_err(|e| self.request_error(Box::new(e.without_url())))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| self.request_error(Box::new(e.without_url())))?;
        let parsed = serde_json::from_str::<Value>(&text);
        if !status.is_success() {
            // Statuses (429, 500, 529 overloaded, …) are the provider's trouble: infrastructure
            // errors that the runner retries.
            let message = parsed.as_ref().ok().and_then(error_message);
            return Err(self.request_error(Box::new(HttpStatus {
                status: status.as_u16(),
                body: self.clean(message.as_deref().unwrap_or(&text)),
            })));
        }
        let body = parsed.map_err(|e| {
            HostError::BadResponse(format!("unparsable body ({e}): {}", self.clean(&text)))
        })?;
        parse_response(&body, &names, &self.model).map_err(|e| match e {
            HostError::BadResponse(m) => HostError::BadResponse(self.redact(&m)),
            other => other,
        })
    }
}
