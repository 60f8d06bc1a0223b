//! The `openai` host: any OpenAI-compatible chat-completions endpoint.
//!
//! async-openai supplies the endpoint's configuration (base URL, `Authorization`, organization
//! and project headers); the request itself goes out through our own reqwest client, under
//! [`RetryPolicy`]. async-openai's client retries 429 and 5xx answers on its own (3 times, its own
//! backoff, `Retry-After` only as seconds and without a cap) and that cannot be switched off
//! without its `middleware` feature, so sending through it would multiply our attempts. The
//! response is read as plain JSON: typed responses reject what many compatible servers send (see
//! DEPENDENCIES.md).

mod responses;
mod responses_stream;
mod stream;
pub(crate) mod wire;

#[cfg(test)]
mod tests;

use std::fmt;
use std::time::Duration;

use async_openai::config::{Config, OpenAIConfig};
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION, CONTENT_TYPE};

use super::choice;
pub use super::http::RequestCounts;
use super::http::{JsonEndpoint, OverEndpoint};
use super::{Completion, CompletionRequest, HostError, Model, RequestOptions};
use stream::ChunkReader;
use wire::{parse_response, request_body, RequestBody, ToolNames};

/// Where requests go when `OPENAI_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// How long one request may take by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Which of OpenAI's APIs a host speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Api {
    /// `POST /chat/completions` (what OpenAI-compatible servers serve).
    #[default]
    ChatCompletions,
    /// `POST /responses`, stateless: the whole conversation as input items every turn.
    Responses,
}

/// A model behind an OpenAI-compatible endpoint (`OPENAI_BASE_URL`, `OPENAI_API_KEY`).
pub struct OpenAiModel {
    id: String,
    model: String,
    base_url: String,
    api: Api,
    /// `…/chat/completions`, with async-openai's headers: `Authorization` (marked sensitive),
    /// organization, project, and the host's extra headers.
    endpoint: JsonEndpoint,
    options: RequestOptions,
    /// `tool_choice` of the host (`[host.NAME]`), see [`crate::host::choice`].
    tool_choice: Option<crate::config::ToolChoice>,
    /// Set once the endpoint refused a streamed request (a 400) that it then answered whole:
    /// what it said. From then on answers are asked whole.
    stream_refused: std::sync::OnceLock<String>,
}

impl fmt::Debug for OpenAiModel {
    // By hand: the endpoint's headers hold the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("id", &self.id)
            .field("base_url", &self.base_url)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl OverEndpoint for OpenAiModel {
    fn endpoint(&self) -> &JsonEndpoint {
        &self.endpoint
    }

    fn endpoint_mut(&mut self) -> &mut JsonEndpoint {
        &mut self.endpoint
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
            .with_api_key(key.clone());
        if !org_from_env {
            config = config.with_org_id("").with_project_id("");
        }
        let mut headers = config.headers();
        if let Some(auth) = headers.get_mut(AUTHORIZATION) {
            auth.set_sensitive(true);
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let secrets = if key.is_empty() {
            Vec::new()
        } else {
            vec![key]
        };
        Ok(Self {
            id: format!("openai:{model}"),
            model: model.to_owned(),
            endpoint: JsonEndpoint::new(config.url("/chat/completions"), headers, secrets)?,
            base_url,
            api: Api::ChatCompletions,
            options: RequestOptions::default(),
            tool_choice: None,
            stream_refused: std::sync::OnceLock::new(),
        })
    }

    /// Speaks `api` (default chat completions); the Responses API host is named
    /// `openai-responses:MODEL`.
    pub fn with_api(mut self, api: Api) -> Self {
        self.api = api;
        let (id, path) = match api {
            Api::ChatCompletions => (format!("openai:{}", self.model), "/chat/completions"),
            Api::Responses => (format!("openai-responses:{}", self.model), "/responses"),
        };
        self.id = id;
        self.endpoint.set_url(format!("{}{path}", self.base_url));
        self
    }

    /// Reads the endpoint and key from the variables a `[host.NAME]` names (default
    /// `OPENAI_BASE_URL`, `OPENAI_API_KEY`).
    pub fn from_env_vars(
        model: &str,
        base_url_var: &str,
        key_var: &str,
    ) -> Result<Self, HostError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let base_url = var(base_url_var);
        let key = var(key_var);
        if key.is_none() && base_url.is_none() {
            return Err(HostError::MissingEnv(key_var.to_owned()));
        }
        Self::from_settings(model, base_url, key)
    }

    /// Sends these settings with every request.
    pub fn with_options(mut self, options: RequestOptions) -> Self {
        self.options = options;
        self
    }

    /// Sends this `tool_choice` (in the API's form) with every request that offers tools.
    pub fn with_tool_choice(mut self, choice: Option<crate::config::ToolChoice>) -> Self {
        self.tool_choice = choice;
        self
    }

    /// The provider's model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The endpoint, without `/chat/completions`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// OpenAI's own endpoint, whose reasoning models take the cap as `max_completion_tokens`.
    fn is_openai(&self) -> bool {
        self.base_url == DEFAULT_BASE_URL
    }
}

#[async_trait::async_trait]
impl Model for OpenAiModel {
    fn id(&self) -> &str {
        &self.id
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, HostError> {
        if self.api == Api::Responses {
            return self.respond(request).await;
        }
        let names = ToolNames::new(request.tools.iter().map(|t| t.name.as_str()));
        let stream = self.options.stream && self.stream_refused.get().is_none();
        let send = |stream: bool| {
            let mut body = request_body(&self.model, request, &names);
            let options = RequestOptions {
                stream,
                ..self.options
            };
            apply_options(&mut body, &options, self.is_openai());
            body.tool_choice = choice::for_request(self.tool_choice.as_ref(), request)
                .map(|c| wire::tool_choice(c, &names));
            let names = &names;
            async move {
                self.endpoint
                    .complete(
                        &body,
                        &HeaderMap::new(),
                        stream,
                        ChunkReader::default,
                        |value| parse_response(value, names, &self.model),
                    )
                    .await
            }
        };
        match send(stream).await {
            // Some gateways and mock servers refuse `stream: true` with a 400: asked whole, the
            // same request tells whether that was the reason.
            Err(refused) if stream && refused.http_status() == Some(400) => match send(false).await
            {
                Ok(answer) => {
                    let _ = self.stream_refused.set(format!(
                        "the endpoint refused a streamed request ({}); answers are asked whole \
                         from then on",
                        crate::error::chain(&refused)
                    ));
                    Ok(answer)
                }
                Err(_) => Err(refused),
            },
            answer => answer,
        }
    }

    fn notes(&self) -> Vec<String> {
        self.stream_refused.get().cloned().into_iter().collect()
    }
}

impl OpenAiModel {
    /// One turn over the Responses API. The trial's seed goes in the `x-mcpeval-seed` header
    /// (the API takes no seed; `mcpeval sim-server` reads it, OpenAI ignores it).
    async fn respond(&self, request: &CompletionRequest) -> Result<Completion, HostError> {
        let names = ToolNames::new(request.tools.iter().map(|t| t.name.as_str()));
        let mut body = responses::request_body(&self.model, request, &names);
        let options = &self.options;
        body.temperature = options.temperature;
        body.max_output_tokens = options.max_tokens;
        body.stream = options.stream;
        if body.has_tools() {
            body.parallel_tool_calls = options.parallel_tool_calls;
        }
        body.tool_choice = choice::for_request(self.tool_choice.as_ref(), request)
            .map(|c| responses::tool_choice(c, &names));
        let mut headers = HeaderMap::new();
        if options.send_seed {
            headers.insert(crate::host::SEED_HEADER, HeaderValue::from(request.seed));
        }
        self.endpoint
            .complete(
                &body,
                &headers,
                options.stream,
                responses_stream::EventReader::default,
                |value| responses::parse_response(value, &names, &self.model),
            )
            .await
    }
}

/// The host's settings, as chat-completions names them. `parallel_tool_calls` is only sent with
/// tools (OpenAI rejects it otherwise). The cap is `max_completion_tokens` at OpenAI's own
/// endpoint and `max_tokens` elsewhere (what llama.cpp, vLLM, Ollama and proxies read).
fn apply_options(body: &mut RequestBody<'_>, options: &RequestOptions, openai: bool) {
    if !options.send_seed {
        body.seed = None;
    }
    body.temperature = options.temperature;
    if openai {
        body.max_completion_tokens = options.max_tokens;
    } else {
        body.max_tokens = options.max_tokens;
    }
    if body.has_tools() {
        body.parallel_tool_calls = options.parallel_tool_calls;
    }
    if options.stream {
        body.stream = true;
        body.stream_options = Some(serde_json::json!({"include_usage": true}));
    }
}
