//! What drives a host's trials: mcpeval's own agent loop over a [`Model`], or a host application
//! (Claude Code, Codex CLI, Gemini CLI) that runs the loop itself.

use std::sync::Arc;

use super::app::AppHost;
use crate::host::Model;

/// How a host produces an episode of a task against a server.
#[derive(Clone)]
pub enum Driver {
    /// The agent loop ([`super::run_trial`]) asks this model for each turn.
    Agent(Arc<dyn Model>),
    /// The app runs the whole trial and its event stream is read back.
    App(Arc<AppHost>),
    /// No model: mcpeval sends a `kind: call` task's one request itself ([`super::run_call`]).
    Direct,
}

impl Driver {
    /// The model as episodes name it: `sim`, `openai:gpt-4.1-mini`, `claude-code:MODEL`.
    pub fn id(&self) -> String {
        match self {
            Self::Agent(model) => model.id().to_owned(),
            Self::App(app) => app.id(),
            Self::Direct => super::DIRECT_HOST.to_owned(),
        }
    }

    /// True for the embedded simulator, so that output can say so.
    pub fn is_simulated(&self) -> bool {
        match self {
            Self::Agent(model) => model.is_simulated(),
            Self::App(_) | Self::Direct => false,
        }
    }

    /// The app host, when an app runs the trials.
    pub fn app(&self) -> Option<&AppHost> {
        match self {
            Self::Agent(_) | Self::Direct => None,
            Self::App(app) => Some(app),
        }
    }

    /// Wraps the agent loop's model (in a cache, a rate limit); an app's requests are its own.
    pub fn map_model(self, wrap: impl FnOnce(Arc<dyn Model>) -> Arc<dyn Model>) -> Self {
        match self {
            Self::Agent(model) => Self::Agent(wrap(model)),
            other => other,
        }
    }
}
