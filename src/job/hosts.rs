//! The models of a run: its hosts and the judges its tasks name, built from the config, put
//! behind the response cache and the rate limits.

use std::sync::Arc;

use super::{JobError, Note};
use crate::config::RunConfig;
use crate::episode::{Driver, DIRECT_HOST};
use crate::host::cache::{CachedModel, ResponseCache};
use crate::host::limit::{Limits, RateLimited};
use crate::host::Model;
use crate::runner::HostRuntime;

/// The run's hosts, each with what drives its trials. A host that cannot be built is a usage
/// error before the run.
pub fn build_hosts(config: &RunConfig) -> Result<Vec<HostRuntime>, JobError> {
    config
        .hosts
        .iter()
        .map(|h| {
            if let Some(app) = &h.app {
                return build_app(h, app);
            }
            let built =
                super::models::build(h, &config.sim, config.concurrency).map_err(|source| {
                    JobError::Host {
                        host: h.name.clone(),
                        source,
                    }
                })?;
            Ok(HostRuntime {
                config: h.clone(),
                driver: Driver::Agent(built.model),
                congestion: built.congestion,
                breaker: built.breaker,
            })
        })
        .collect()
}

/// The host of the `kind: call` tasks, when the suite has any: mcpeval sends their requests
/// itself, so their episodes name no model. It comes last, after the model hosts.
pub fn add_direct_host(
    hosts: &mut Vec<HostRuntime>,
    suite: &crate::suite::Suite,
) -> Result<(), JobError> {
    if suite.tasks.iter().all(|t| t.kind.has_model()) {
        return Ok(());
    }
    if hosts.iter().any(|h| h.config.name == DIRECT_HOST) {
        return Err(JobError::ReservedHost(DIRECT_HOST.to_owned()));
    }
    let config = crate::config::HostConfig {
        name: DIRECT_HOST.to_owned(),
        provider: crate::config::Provider::Sim,
        model: None,
        profile: Default::default(),
        rpm: None,
        tpm: None,
        settings: Default::default(),
        app: None,
    };
    hosts.push(HostRuntime {
        config,
        driver: Driver::Direct,
        congestion: None,
        breaker: None,
    });
    Ok(())
}

/// An app host: its program found and its version asked now, so that a missing app is a usage
/// error before the run. It has no model of mcpeval's: the runner hands it whole trials.
fn build_app(
    h: &crate::config::HostConfig,
    app: &crate::config::AppSettings,
) -> Result<HostRuntime, JobError> {
    let (base, key) = h.env_vars();
    let host = crate::episode::app::AppHost::build(app.clone(), h.model.clone(), base, key)
        .map_err(|source| JobError::App {
            host: h.name.clone(),
            source,
        })?;
    Ok(HostRuntime {
        config: h.clone(),
        driver: Driver::App(Arc::new(host)),
        congestion: None,
        breaker: None,
    })
}

/// The judge models the tasks name (`judge.host`), each built once, like the run's hosts. A judge
/// host that cannot be built (unknown name, missing API key) is a usage error before the run.
/// Also returns the judge hosts' secrets (header values, API keys), to be redacted like the run's.
pub type Judges = std::collections::BTreeMap<String, Arc<dyn Model>>;

pub fn build_judges(
    config: &RunConfig,
    suite: &crate::suite::Suite,
    notes: &mut Vec<Note>,
) -> Result<(Judges, Vec<String>), JobError> {
    let mut judges = Judges::new();
    let mut secrets = Vec::new();
    for task in &suite.tasks {
        let Some(spec) = &task.expect.judge else {
            continue;
        };
        if judges.contains_key(&spec.host) {
            continue;
        }
        let judge = |source: JobError| JobError::Judge {
            host: spec.host.clone(),
            task: task.id.clone(),
            file: task.source.clone(),
            source: Box::new(source),
        };
        let host =
            crate::config::resolve_extra_host(config, &spec.host).map_err(|e| judge(e.into()))?;
        let model = named_model(config, host, &mut secrets)
            .map_err(judge)?
            .map_err(|host| judge(JobError::AppJudge { host }))?;
        if model.is_simulated() {
            // `file:line:col: warning: …` as every warning about a task (column 1: the task).
            notes.push(Note::warn(format!(
                "{}:1: warning: judge host `{}` of task `{}` is the simulated model, which \
                 cannot judge: every judged trial will be an infrastructure error",
                task.source, spec.host, task.id
            )));
        }
        judges.insert(spec.host.clone(), model);
    }
    Ok((judges, secrets))
}

/// The model of a host a task names (a judge's, a simulated user's, a sampling host's), resolved
/// as `host`, built like the run's hosts and behind its rate limits; its secrets go to
/// `secrets`. `Ok(Err(app))`: the spec names an app host, which answers no completion.
pub(super) fn named_model(
    config: &RunConfig,
    host: crate::config::HostConfig,
    secrets: &mut Vec<String>,
) -> Result<Result<Arc<dyn Model>, String>, JobError> {
    secrets.extend(host.settings.secret_values());
    let one = RunConfig {
        hosts: vec![host],
        ..config.clone()
    };
    let built = rate_limited(build_hosts(&one)?).into_iter().next();
    match built.map(|h| h.driver) {
        Some(Driver::Agent(model)) => Ok(Ok(model)),
        Some(Driver::App(app)) => Ok(Err(app.id())),
        Some(Driver::Direct) | None => unreachable!("build_hosts builds the one host it is given"),
    }
}

/// The models that play the simulated users the tasks name (`user.host`), each built once, at
/// temperature 0 (a paired comparison wants the same user for the same answers). A user host
/// that cannot be built is a usage error before the run, as a judge's is.
pub fn build_users(
    config: &RunConfig,
    suite: &crate::suite::Suite,
) -> Result<(Judges, Vec<String>), JobError> {
    let mut users = Judges::new();
    let mut secrets = Vec::new();
    for task in &suite.tasks {
        let Some(spec) = &task.user else {
            continue;
        };
        if users.contains_key(&spec.host) {
            continue;
        }
        let user = |source: JobError| JobError::User {
            host: spec.host.clone(),
            task: task.id.clone(),
            file: task.source.clone(),
            source: Box::new(source),
        };
        let mut host =
            crate::config::resolve_extra_host(config, &spec.host).map_err(|e| user(e.into()))?;
        host.settings.temperature = Some(0.0);
        let model = named_model(config, host, &mut secrets)
            .map_err(user)?
            .map_err(|host| user(JobError::AppUser { host }))?;
        users.insert(spec.host.clone(), model);
    }
    Ok((users, secrets))
}

/// Puts each real model behind the response cache (with `None`, --no-cache: none). The sim
/// host is deterministic and free, so it is never cached.
pub fn cached(hosts: Vec<HostRuntime>, cache: Option<&Arc<ResponseCache>>) -> Vec<HostRuntime> {
    let Some(cache) = cache else {
        return hosts;
    };
    hosts
        .into_iter()
        .map(|mut h| {
            // App hosts make their own requests: nothing of theirs passes the cache.
            if !h.driver.is_simulated() {
                let scope = cache_scope(&h.config);
                h.driver = h
                    .driver
                    .map_model(|m| Arc::new(CachedModel::new(m, cache.clone(), scope)));
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
    if let Some(choice) = &s.tool_choice {
        scope["tool_choice"] = choice.to_string().into();
    }
    if !s.extra_body.is_empty() {
        scope["extra_body"] = serde_json::json!(s.extra_body);
    }
    scope.to_string()
}

/// Puts each host with `rpm` / `tpm` behind its rate limits.
pub fn rate_limited(hosts: Vec<HostRuntime>) -> Vec<HostRuntime> {
    hosts
        .into_iter()
        .map(|mut h| {
            let limits = Limits {
                requests_per_minute: h.config.rpm,
                tokens_per_minute: h.config.tpm,
            };
            if !limits.is_unlimited() {
                h.driver = h
                    .driver
                    .map_model(|m| Arc::new(RateLimited::new(m, limits)));
            }
            h
        })
        .collect()
}
