//! The `anthropic` host: a model behind Anthropic's Messages API (`POST /v1/messages`), over
//! reqwest.
//!
//! Our conversation is OpenAI-shaped; `wire` maps it onto Anthropic's content blocks and reads the
//! answer back leniently. The key travels in one header marked sensitive and is never part of an
//! error, a log line or a result.

mod stream;
pub(crate) mod wire;

#[cfg(test)]
mod search_tests;
#[cfg(test)]
mod tests;

use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE};

use super::http::{JsonEndpoint, OverEndpoint};
use super::{Completion, CompletionRequest, HostError, Model};
use stream::EventReader;
use wire::{parse_response, request_body, Settings, ToolNames};

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
    thinking_budget: Option<u32>,
    stream: bool,
    /// `tool_choice` of the host (`[host.NAME]`), see [`crate::host::choice`].
    tool_choice: Option<crate::config::ToolChoice>,
    /// The tool-search tool sent with deferred tools (`tool_search_variant`).
    tool_search: crate::config::SearchVariant,
    /// `…/v1/messages`, with the key in `x-api-key` (marked sensitive, and taken out of every
    /// error text), under the retry policy.
    endpoint: JsonEndpoint,
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

impl OverEndpoint for AnthropicModel {
    fn endpoint(&self) -> &JsonEndpoint {
        &self.endpoint
    }

    fn endpoint_mut(&mut self) -> &mut JsonEndpoint {
        &mut self.endpoint
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

    /// Reads the endpoint and key from the variables a `[host.NAME]` names (default
    /// `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`).
    pub fn from_env_vars(
        model: &str,
        base_url_var: &str,
        key_var: &str,
    ) -> Result<Self, HostError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let api_key = var(key_var).ok_or_else(|| HostError::MissingEnv(key_var.to_owned()))?;
        Self::from_settings(model, var(base_url_var), Some(api_key))
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
        let endpoint = JsonEndpoint::new(
            format!("{base_url}/v1/messages"),
            headers,
            vec![api_key.to_owned()],
        )?;
        Ok(Self {
            id: format!("anthropic:{model}"),
            model: model.to_owned(),
            base_url,
            max_tokens: DEFAULT_MAX_TOKENS,
            temperature: None,
            thinking_budget: None,
            stream: true,
            tool_choice: None,
            tool_search: crate::config::SearchVariant::Bm25,
            endpoint,
        })
    }

    /// Sets `max_tokens` of every request (default 1024).
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Turns on extended thinking with this `budget_tokens` (at least 1024, below
    /// `max_tokens`, as the API requires).
    pub fn with_thinking_budget(mut self, budget: u32) -> Self {
        self.thinking_budget = Some(budget);
        self
    }

    /// Whether answers are asked for as a stream of events (default yes).
    pub fn with_stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Sends `temperature` with every request (by default none is sent: the API's default).
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sends this `tool_choice` (`{"type": "auto" | "any" | "none" | "tool"}`) with every request
    /// that offers tools.
    pub fn with_tool_choice(mut self, choice: Option<crate::config::ToolChoice>) -> Self {
        self.tool_choice = choice;
        self
    }

    /// Which of Anthropic's tool-search tools a request with deferred tools carries
    /// (`tool_search = "native"`; bm25 by default).
    pub fn with_tool_search(mut self, variant: crate::config::SearchVariant) -> Self {
        self.tool_search = variant;
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
}

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
            thinking_budget: self.thinking_budget,
            stream: self.stream,
            tool_choice: super::choice::for_request(self.tool_choice.as_ref(), request),
            tool_search: self.tool_search,
        };
        let mut headers = HeaderMap::new();
        if wire::searches(request) {
            let beta = super::tool_search::NATIVE_BETA;
            headers.insert("anthropic-beta", HeaderValue::from_static(beta));
        }
        self.endpoint
            .complete(
                &request_body(settings, request, &names),
                &headers,
                self.stream,
                EventReader::default,
                |value| parse_response(value, &names, &self.model),
            )
            .await
    }
}
