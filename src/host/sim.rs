//! The sim host: an embedded, deterministic, seedable stand-in for a model.

use serde::{Deserialize, Serialize};

use super::{Completion, CompletionRequest, HostError, Model};

/// Knobs of the simulated model (config section `[sim]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// Softmax temperature over tool scores: higher means more random tool choice.
    pub temperature: f64,
    /// Below this best score the sim answers without calling a tool.
    pub call_threshold: f64,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            temperature: 0.35,
            call_threshold: 1.0,
        }
    }
}

/// The simulated model.
pub struct SimModel {
    config: SimConfig,
}

impl SimModel {
    pub fn new(config: SimConfig) -> Self {
        Self { config }
    }
}

#[async_trait::async_trait]
impl Model for SimModel {
    fn id(&self) -> &str {
        "sim"
    }

    fn is_simulated(&self) -> bool {
        true
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, HostError> {
        let _ = (request, &self.config);
        todo!("sim model")
    }
}
