//! The `openai` host: any OpenAI-compatible chat-completions endpoint, through async-openai.

use super::{Completion, CompletionRequest, HostError, Model};

/// A model behind an OpenAI-compatible endpoint (`OPENAI_BASE_URL`, `OPENAI_API_KEY`).
pub struct OpenAiModel {
    id: String,
}

impl OpenAiModel {
    /// `model` is the provider's model name (`gpt-4.1-mini`). Reads the endpoint and key from the
    /// environment only.
    pub fn from_env(model: &str) -> Result<Self, HostError> {
        Ok(Self {
            id: format!("openai:{model}"),
        })
    }
}

#[async_trait::async_trait]
impl Model for OpenAiModel {
    fn id(&self) -> &str {
        &self.id
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, HostError> {
        let _ = request;
        todo!("openai host")
    }
}
