//! The `openai` host: any OpenAI-compatible chat-completions endpoint, through async-openai.
//!
//! Requests go through async-openai's `byot` path and the response is read as plain JSON: the
//! crate's typed responses reject what many compatible servers send (see DEPENDENCIES.md).

pub(crate) mod wire;

#[cfg(test)]
mod tests;

use std::fmt;
use std::time::Duration;

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::Client;
use serde_json::Value;

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
    config: OpenAIConfig,
    client: Client<OpenAIConfig>,
}

impl fmt::Debug for OpenAiModel {
    // By hand: the config holds the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("id", &self.id)
            .field("base_url", &self.base_url)
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
        let client = Client::build(http_client(DEFAULT_TIMEOUT)?, config.clone());
        Ok(Self {
            id: format!("openai:{model}"),
            model: model.to_owned(),
            base_url,
            config,
            client,
        })
    }

    /// Sets how long one request may take (default 120 s).
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, HostError> {
        self.client = Client::build(http_client(timeout)?, self.config.clone());
        Ok(self)
    }

    /// The provider's model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The endpoint, without `/chat/completions`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    fn error(&self, e: OpenAIError) -> HostError {
        match e {
            OpenAIError::ApiError(api) => HostError::Request {
                endpoint: self.endpoint(),
                source: Box::new(HttpStatus {
                    status: api.status_code.as_u16(),
                    body: excerpt_text(&api.api_error.to_string()),
                }),
            },
            OpenAIError::Reqwest(e) => HostError::Request {
                endpoint: self.endpoint(),
                source: Box::new(e.without_url()),
            },
            OpenAIError::JSONDeserialize(e, body) => {
                HostError::BadResponse(format!("unparsable body ({e}): {}", excerpt_text(&body)))
            }
            other => HostError::Other(excerpt_text(&other.to_string())),
        }
    }
}

fn http_client(timeout: Duration) -> Result<reqwest::Client, HostError> {
    reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|e| HostError::Other(format!("cannot build the HTTP client: {e}")))
}

/// A non-2xx answer: the status and a short excerpt of the body (never the headers).
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
impl Model for OpenAiModel {
    fn id(&self) -> &str {
        &self.id
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, HostError> {
        let names = ToolNames::new(request.tools.iter().map(|t| t.name.as_str()));
        let body = request_body(&self.model, request, &names);
        let response: Value = self
            .client
            .chat()
            .create_byot::<Value, Value>(body)
            .await
            .map_err(|e| self.error(e))?;
        parse_response(&response, &names, &self.model)
    }
}
