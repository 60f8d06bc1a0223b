//! Run configuration: server specs, hosts, trials and thresholds, layered and resolved once. It
//! owns every settings type it parses (host profiles, app hosts, the sim's knobs, budgets and
//! prices, `[nightly]`); the modules that act on them import `config`, never the reverse.

mod app;
mod budget;
mod check;
mod check_stages;
mod file;
mod host_request;
mod nightly;
mod profile;
mod resolve;
mod server;
mod shape;
mod sim;
mod stats;
mod token_limit;
mod writes;

pub use app::{AppKind, AppSettings, DEFAULT_TIMEOUT_S};
pub use budget::{Budget, Price};
pub use check_stages::{explicit_server_label, CheckFile, CONFORMANCE_PACKAGE};
pub use file::{AuthFile, ConfigFile, HostFile, Isolation, ProfileFile, ServerFile};
pub use host_request::{check_extra_body, ToolChoice};
pub use nightly::{NightlyFile, NightlySettings};
pub use profile::{
    Exposed, HostProfile, SearchVariant, ToolNaming, ToolOrder, ToolSearch, DEFAULT_TOOL_SEARCH_K,
};
pub use resolve::{
    checked_renames, config_targets, env_reference, expand_value, resolve, resolve_server,
    ConfigError, ConfigTargets, HostConfig, HostSettings, InvalidSetting, Overrides, Provider,
    RunConfig, UnsetVar, UnsetVariable, DEFAULT_CONFIG, DEMO_CONFIG,
};
pub use resolve::{
    config_allows_writes, overlay_over, resolve_extra_host, with_write_flags, WriteFlags, NO_HOST,
};
pub use server::{ClientProfile, ProtocolEra, ServerSpec, Transport, BASE_HEADERS_ENV};
pub use sim::SimConfig;
pub use stats::{Metric, StatsConfig, StatsFile};
pub use token_limit::TokenIncrease;
pub use writes::{placeholders_in, SandboxFile, SandboxPath, ServerState};
