//! Run configuration: server specs, hosts, trials and thresholds, layered and resolved once.

mod server;

pub use server::{ProtocolEra, ServerSpec, Transport};
