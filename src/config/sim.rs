//! The simulated model's knobs (`[sim]`), read by the config and acted on by `sim`.

use serde::{Deserialize, Serialize};

/// Knobs of the simulated model (config section `[sim]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// Softmax temperature over tool scores: higher means more random tool choice.
    pub temperature: f64,
    /// Below this best score the sim answers without calling a tool.
    pub call_threshold: f64,
    /// Weight of a request word found in the tool's name.
    pub name_weight: f64,
    /// Weight of a request word found in the tool's title.
    pub title_weight: f64,
    /// Weight of a request word found in the tool's description.
    pub description_weight: f64,
    /// Weight of a request word found in a parameter's name, description or enum values.
    pub param_weight: f64,
    /// Fraction of a field's weight that a synonym ("find" for "search") earns.
    pub synonym_factor: f64,
    /// Bonus when the request's main verb is the tool's action (three quarters for a synonym).
    pub verb_bonus: f64,
    /// Penalty when the tool does something else and another tool does what was asked.
    pub verb_penalty: f64,
    /// Penalty when the request names none of the things the tool's name says it acts on.
    pub object_penalty: f64,
    /// Bonus (or penalty) per server-instruction sentence recommending (or discouraging) a tool.
    pub instruction_boost: f64,
    /// Bonus per argument the request supplies (up to three).
    pub param_fit: f64,
    /// Penalty per required argument the request says nothing about.
    pub missing_arg_penalty: f64,
    /// After an error, switch to another tool scoring at most this much below the failed one.
    pub retry_margin: f64,
    /// Tool results are quoted in the final answer up to this many characters each.
    pub max_result_chars: usize,
    /// The share of tool choices (0 to 1, drawn from the trial's seed) in which the sim takes
    /// the earliest-listed tool scoring within `near_tie` of the best, instead of sampling: a
    /// stand-in for the published position bias (models prefer earlier-listed tools), not a
    /// measured one. 0 (the default): only exact ties follow the list's order.
    pub position_bias: f64,
    /// How far below the best score a tool still counts as a near tie for `position_bias`.
    pub near_tie: f64,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            temperature: 0.5,
            call_threshold: 2.5,
            name_weight: 3.0,
            title_weight: 2.0,
            description_weight: 1.5,
            param_weight: 0.75,
            synonym_factor: 0.5,
            verb_bonus: 2.5,
            verb_penalty: 1.5,
            object_penalty: 1.0,
            instruction_boost: 2.5,
            param_fit: 0.5,
            missing_arg_penalty: 1.5,
            retry_margin: 1.0,
            max_result_chars: 600,
            position_bias: 0.0,
            near_tie: 0.5,
        }
    }
}
