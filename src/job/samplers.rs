//! The sampling models the tasks name (`sampling: {host: HOST}`), each built once like a judge:
//! a host that cannot be resolved or built stops the run before its first trial (exit 2), with
//! the place of the `host` that names it. `sim` needs no model: it answers a fixed text.

use super::hosts::Judges;
use super::JobError;
use crate::config::RunConfig;

/// The models of the tasks' sampling hosts, by host spec, and their secrets (to be redacted).
pub fn build_samplers(
    config: &RunConfig,
    suite: &crate::suite::Suite,
) -> Result<(Judges, Vec<String>), JobError> {
    let mut samplers = Judges::new();
    let mut secrets = Vec::new();
    for task in &suite.tasks {
        let Some(host) = task.asks.sampling_host() else {
            continue;
        };
        if samplers.contains_key(host) {
            continue;
        }
        let failed = |source: JobError| JobError::Sampler {
            host: host.to_owned(),
            task: task.id.clone(),
            at: task
                .asks
                .host_at
                .clone()
                .unwrap_or_else(|| task.source.clone()),
            source: Box::new(source),
        };
        let resolved =
            crate::config::resolve_extra_host(config, host).map_err(|e| failed(e.into()))?;
        let model = super::hosts::named_model(config, resolved, &mut secrets)
            .map_err(failed)?
            .map_err(|host| failed(JobError::AppSampler { host }))?;
        samplers.insert(host.to_owned(), model);
    }
    Ok((samplers, secrets))
}
