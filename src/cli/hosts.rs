//! The models of a run: its hosts and the judges its tasks name, built from the config, put
//! behind the response cache and the rate limits; and what they report at the end of a run.

use std::sync::Arc;

use super::exit::CliError;
use super::out::outln;
use crate::config::RunConfig;
use crate::host::aimd::Congestion;
use crate::host::cache::{CachedModel, ResponseCache};
use crate::host::limit::{Limits, RateLimited};
use crate::host::Model;
use crate::runner::HostRuntime;

pub(super) fn build_hosts(config: &RunConfig) -> Result<Vec<HostRuntime>, CliError> {
    config
        .hosts
        .iter()
        .map(|h| {
            if let Some(app) = &h.app {
                return build_app(h, app);
            }
            let built =
                crate::host::build::build(h, &config.sim, config.concurrency).map_err(|e| {
                    CliError::usage(anyhow::Error::new(e).context(format!("host `{}`", h.name)))
                })?;
            Ok(HostRuntime {
                config: h.clone(),
                model: built.model,
                congestion: built.congestion,
                app: None,
            })
        })
        .collect()
}

/// An app host: its program found and its version asked now, so that a missing app is a usage
/// error before the run. It has no model of mcpeval's: the runner hands it whole trials.
fn build_app(
    h: &crate::config::HostConfig,
    app: &crate::host::app::AppSettings,
) -> Result<HostRuntime, CliError> {
    let (base, key) = h.env_vars();
    let host = crate::host::app::AppHost::build(app.clone(), h.model.clone(), base, key)
        .map_err(|e| CliError::usage(anyhow::anyhow!("host `{}`: {e}", h.name)))?;
    let name = crate::host::app::AppModelName(host.id());
    Ok(HostRuntime {
        config: h.clone(),
        model: Arc::new(name),
        congestion: None,
        app: Some(Arc::new(host)),
    })
}

/// The judge models the tasks name (`judge.host`), each built once, like the run's hosts. A judge
/// host that cannot be built (unknown name, missing API key) is a usage error before the run.
/// Also returns the judge hosts' secrets (header values, API keys), to be redacted like the run's.
pub(super) type Judges = std::collections::BTreeMap<String, Arc<dyn Model>>;

pub(super) fn build_judges(
    config: &RunConfig,
    suite: &crate::suite::Suite,
) -> Result<(Judges, Vec<String>), CliError> {
    let mut judges = Judges::new();
    let mut secrets = Vec::new();
    for task in &suite.tasks {
        let Some(spec) = &task.expect.judge else {
            continue;
        };
        if judges.contains_key(&spec.host) {
            continue;
        }
        let context = format!(
            "judge host `{}` of task `{}` ({})",
            spec.host, task.id, task.source
        );
        let host = crate::config::resolve_extra_host(config, &spec.host)
            .map_err(|e| CliError::usage(anyhow::Error::new(e).context(context.clone())))?;
        secrets.extend(host.settings.secret_values());
        let one = RunConfig {
            hosts: vec![host],
            ..config.clone()
        };
        let built = build_hosts(&one).map_err(|e| CliError {
            exit: e.exit,
            error: e.error.context(context.clone()),
        })?;
        for h in rate_limited(built) {
            if h.model.is_simulated() {
                eprintln!(
                    "warning: {context} is the simulated model, which cannot judge: every judged \
                     trial will be an infrastructure error"
                );
            }
            judges.insert(spec.host.clone(), h.model);
        }
    }
    Ok((judges, secrets))
}

/// Puts each real model behind the response cache (with `None`, --no-cache: none). The sim
/// host is deterministic and free, so it is never cached.
pub(super) fn cached(
    hosts: Vec<HostRuntime>,
    cache: Option<&Arc<ResponseCache>>,
) -> Vec<HostRuntime> {
    let Some(cache) = cache else {
        return hosts;
    };
    hosts
        .into_iter()
        .map(|mut h| {
            // App hosts make their own requests: nothing of theirs passes the cache.
            if !h.model.is_simulated() && h.app.is_none() {
                let scope = cache_scope(&h.config);
                h.model = Arc::new(CachedModel::new(h.model, cache.clone(), scope));
            }
            h
        })
        .collect()
}

/// What besides the request shapes a host's answers: the endpoint it reads from the
/// environment and its `[host.NAME]` request settings. The same model name at another endpoint
/// (a local server, another proxy) or with another temperature is not served these answers.
fn cache_scope(host: &crate::config::HostConfig) -> String {
    let s = &host.settings;
    let endpoint = std::env::var(host.env_vars().0).unwrap_or_default();
    let mut scope = serde_json::json!({
        "endpoint": endpoint.trim().trim_end_matches('/'),
        "temperature": s.temperature,
        "max_tokens": s.max_tokens,
        "seed": s.seed,
        "parallel_tool_calls": s.parallel_tool_calls,
        "headers": s.headers,
    });
    // Only when set, so that the scopes of hosts without thinking stay what they were.
    if let Some(budget) = s.thinking_budget {
        scope["thinking_budget"] = budget.into();
    }
    scope.to_string()
}

/// Puts each host with `rpm` / `tpm` behind its rate limits.
pub(super) fn rate_limited(hosts: Vec<HostRuntime>) -> Vec<HostRuntime> {
    hosts
        .into_iter()
        .map(|mut h| {
            let limits = Limits {
                requests_per_minute: h.config.rpm,
                tokens_per_minute: h.config.tpm,
            };
            if !limits.is_unlimited() {
                h.model = Arc::new(RateLimited::new(h.model, limits));
            }
            h
        })
        .collect()
}

/// Hosts whose provider throttled requests (429): how far their concurrency backed off.
pub(super) fn print_congestion(hosts: &[(String, Arc<Congestion>)]) {
    for (name, congestion) in hosts {
        let r = congestion.report();
        if r.throttled > 0 {
            outln!(
                "host {name}: {} requests throttled (429/529); concurrency backed off {} time(s), \
                 to {} at the lowest (of {}), {} at the end",
                r.throttled,
                r.decreases,
                r.lowest.floor(),
                r.max,
                r.limit.floor()
            );
        }
    }
}

/// How many model requests the response cache answered, and whether it could store the rest.
pub(super) fn print_cache_note(cache: Option<&ResponseCache>) {
    let Some(cache) = cache else {
        return;
    };
    let counts = cache.counts();
    if counts.requests() > 0 {
        outln!(
            "response cache: {} of {} model requests answered from {}",
            counts.hits,
            counts.requests(),
            cache.dir().display()
        );
    }
    if let Some(error) = cache.first_write_error() {
        eprintln!(
            "warning: {} answers could not be stored in the response cache: {error}",
            counts.write_errors
        );
    }
}
