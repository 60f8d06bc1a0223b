//! A run's spending limits (`[budget]`) and the models' prices (`[prices.MODEL]`).

use serde::{Deserialize, Serialize};

/// `[budget]`: limits of one run (an unset limit is no limit).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Model requests (one per agent turn).
    pub max_requests: Option<u64>,
    /// Input plus output tokens.
    pub max_tokens: Option<u64>,
    /// Estimated cost in US dollars, from `[prices]`.
    pub max_cost_usd: Option<f64>,
}

impl Budget {
    pub fn is_unlimited(&self) -> bool {
        self.max_requests.is_none() && self.max_tokens.is_none() && self.max_cost_usd.is_none()
    }
}

/// `[prices.MODEL]`: US dollars per million tokens. `MODEL` is a host as shown in results
/// (`openai:gpt-4.1-mini`) or a bare model name (`gpt-4.1-mini`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
}
