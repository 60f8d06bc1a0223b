//! Run configuration: server specs, hosts, trials and thresholds, layered and resolved once.

mod file;
mod resolve;
mod server;
mod stats;

pub use file::{AuthFile, ConfigFile, HostFile, Isolation, ProfileFile, ServerFile};
pub use resolve::resolve_extra_host;
pub use resolve::{
    env_reference, expand_value, resolve, resolve_server, ConfigError, HostConfig, HostSettings,
    Overrides, Provider, RunConfig, DEFAULT_CONFIG, DEMO_CONFIG,
};
pub use server::{ProtocolEra, ServerSpec, Transport};
pub use stats::{Metric, StatsConfig, StatsFile};
