//! The sampling models the tasks name (`sampling: {host: HOST}`), each built once like a judge:
//! a host that cannot be resolved or built stops the run before its first trial (exit 2), with
//! the place of the `host` that names it. `sim` needs no model: it answers a fixed text.

use super::hosts::{build_hosts, rate_limited, Judges};
use super::JobError;
use crate::config::RunConfig;
use crate::episode::Driver;

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
        secrets.extend(resolved.settings.secret_values());
        let one = RunConfig {
            hosts: vec![resolved],
            ..config.clone()
        };
        for h in rate_limited(build_hosts(&one).map_err(failed)?) {
            match h.driver {
                Driver::Agent(model) => drop(samplers.insert(host.to_owned(), model)),
                Driver::App(app) => {
                    return Err(failed(JobError::AppSampler { host: app.id() }));
                }
                Driver::Direct => {}
            }
        }
    }
    Ok((samplers, secrets))
}
