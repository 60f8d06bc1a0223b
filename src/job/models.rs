//! Builds a host's model from its resolved config: the provider, its endpoint and key from the
//! environment variables the config names, the `[host.NAME]` request settings, and the host's
//! adaptive concurrency.

use std::sync::Arc;
use std::time::Duration;

use crate::config::{HostConfig, HostSettings, Provider, SimConfig};
use crate::host::aimd::Congestion;
use crate::host::anthropic::AnthropicModel;
use crate::host::breaker::{Breaker, DEFAULT_BREAKER_AFTER};
use crate::host::http::OverEndpoint;
use crate::host::openai::{Api, OpenAiModel};
use crate::host::retry::RetryPolicy;
use crate::host::{HostError, Model, RequestOptions};
use crate::sim::SimModel;

/// A host's model, and the concurrency controller and circuit breaker its requests run under
/// (API hosts only).
pub struct Built {
    pub model: Arc<dyn Model>,
    pub congestion: Option<Arc<Congestion>>,
    pub breaker: Option<Arc<Breaker>>,
}

/// `concurrency` is the run's: a host's adaptive limit starts there unless its
/// `max_concurrency` is lower.
pub fn build(host: &HostConfig, sim: &SimConfig, concurrency: usize) -> Result<Built, HostError> {
    let settings = &host.settings;
    let name = host.model.as_deref().unwrap_or_default();
    let headers = settings
        .expanded_headers()
        .map_err(|e| HostError::Other(e.to_string()))?;
    let headers = headers.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    let congestion = Arc::new(Congestion::new(
        settings
            .max_concurrency
            .unwrap_or(concurrency)
            .min(concurrency.max(1)),
    ));
    let retry = retry_policy(settings);
    let breaker = Arc::new(Breaker::new(
        settings.breaker_after.unwrap_or(DEFAULT_BREAKER_AFTER),
    ));
    let model: Arc<dyn Model> = match host.provider {
        Provider::Sim => {
            return Ok(Built {
                model: Arc::new(SimModel::new(sim.clone())),
                congestion: None,
                breaker: None,
            })
        }
        Provider::Openai | Provider::OpenaiResponses => {
            let model = if settings.base_url_env.is_none() && settings.api_key_env.is_none() {
                OpenAiModel::from_env(name)?
            } else {
                let (base, key) = host.env_vars();
                OpenAiModel::from_env_vars(name, base, key)?
            };
            let api = match host.provider {
                Provider::OpenaiResponses => Api::Responses,
                _ => Api::ChatCompletions,
            };
            Arc::new(
                model
                    .with_api(api)
                    .with_retry(retry)
                    .with_options(options(settings))
                    .with_tool_choice(settings.tool_choice.clone())
                    .with_extra_body(extra_body(settings))
                    .with_headers(headers)?
                    .with_congestion(congestion.clone())
                    .with_breaker(breaker.clone()),
            )
        }
        Provider::App => {
            return Err(HostError::Other(
                "an app host runs its own loop: build it with episode::app::AppHost".into(),
            ))
        }
        Provider::Anthropic => {
            let (base, key) = host.env_vars();
            let mut model = AnthropicModel::from_env_vars(name, base, key)?
                .with_retry(retry)
                .with_headers(headers)?
                .with_congestion(congestion.clone())
                .with_breaker(breaker.clone())
                .with_stream(settings.stream.unwrap_or(true))
                .with_tool_choice(settings.tool_choice.clone())
                .with_tool_search(host.profile.tool_search_variant)
                .with_extra_body(extra_body(settings));
            if let Some(budget) = settings.thinking_budget {
                // Thinking counts towards max_tokens: the default leaves the answer its own 1024.
                model = model
                    .with_thinking_budget(budget)
                    .with_max_tokens(budget + crate::host::anthropic::DEFAULT_MAX_TOKENS);
            }
            if let Some(n) = settings.max_tokens.filter(|n| *n > 0) {
                model = model.with_max_tokens(n);
            }
            if let Some(t) = settings.temperature {
                model = model.with_temperature(t);
            }
            Arc::new(model)
        }
    };
    Ok(Built {
        model,
        congestion: Some(congestion),
        breaker: Some(breaker),
    })
}

fn retry_policy(settings: &HostSettings) -> RetryPolicy {
    let mut retry = RetryPolicy::default();
    if let Some(n) = settings.max_attempts {
        retry.max_attempts = n.max(1);
    }
    if let Some(t) = settings.timeout_s {
        retry.request_timeout = Duration::from_secs_f64(t);
    }
    if let Some(t) = settings.connect_timeout_s {
        retry.connect_timeout = Duration::from_secs_f64(t);
    }
    if let Some(t) = settings.first_byte_timeout_s {
        retry.first_byte_timeout = Duration::from_secs_f64(t);
    }
    retry
}

fn extra_body(settings: &HostSettings) -> serde_json::Map<String, serde_json::Value> {
    settings
        .extra_body
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn options(settings: &HostSettings) -> RequestOptions {
    RequestOptions {
        temperature: settings.temperature,
        max_tokens: match settings.max_tokens {
            None => Some(crate::host::DEFAULT_MAX_TOKENS),
            Some(0) => None,
            Some(n) => Some(n),
        },
        send_seed: settings.seed.unwrap_or(true),
        parallel_tool_calls: settings.parallel_tool_calls,
        stream: settings.stream.unwrap_or(true),
    }
}
