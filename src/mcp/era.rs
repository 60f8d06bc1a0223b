//! The protocol era of each server given in `auto`, learned at its first connection and
//! remembered for the rest of the command, so that later starts skip the probe.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use crate::config::{ProtocolEra, ServerSpec};

/// Eras learned in this process, by [`era_key`].
static KNOWN: LazyLock<Mutex<HashMap<String, ProtocolEra>>> = LazyLock::new(Default::default);

/// The identity of a server for the eras learned: its name, transport (program and arguments,
/// or URL), environment and working directory, as given to `connect` (before anything in them
/// is substituted per process).
pub(super) fn era_key(spec: &ServerSpec) -> String {
    serde_json::json!([spec.name, spec.transport, spec.env, spec.cwd]).to_string()
}

/// The era `spec` is to be reached in: the one given, or for `auto` the one learned at an
/// earlier connection of the same server in this process (`auto` when none is known yet).
pub(super) fn effective(spec: &ServerSpec) -> ProtocolEra {
    match spec.protocol_era {
        ProtocolEra::Auto => known()
            .get(&era_key(spec))
            .copied()
            .unwrap_or(ProtocolEra::Auto),
        given => given,
    }
}

/// Remembers the era a connection of `spec` in `auto` completed its handshake in.
pub(super) fn learn(spec: &ServerSpec, era: ProtocolEra) {
    if spec.protocol_era == ProtocolEra::Auto && era != ProtocolEra::Auto {
        known().insert(era_key(spec), era);
    }
}

fn known() -> std::sync::MutexGuard<'static, HashMap<String, ProtocolEra>> {
    KNOWN.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_era_is_learned_per_server_as_given_and_only_in_auto() {
        let spec = ServerSpec::parse("era-key-test", "some-server --flag").unwrap();
        assert_eq!(effective(&spec), ProtocolEra::Auto);
        learn(&spec, ProtocolEra::Legacy);
        assert_eq!(effective(&spec), ProtocolEra::Legacy);
        // Another environment is another server; an era given is never replaced.
        let mut other = spec.clone();
        other.env.insert("X".into(), "1".into());
        assert_eq!(effective(&other), ProtocolEra::Auto);
        let mut modern = spec.clone();
        modern.protocol_era = ProtocolEra::Modern;
        assert_eq!(effective(&modern), ProtocolEra::Modern);
        learn(&modern, ProtocolEra::Legacy);
        other.protocol_era = ProtocolEra::Modern;
        assert_eq!(effective(&other), ProtocolEra::Modern);
        // Timeouts and the client profile are not part of the identity.
        let mut slower = spec.clone();
        slower.startup_timeout *= 2;
        assert_eq!(effective(&slower), ProtocolEra::Legacy);
    }
}
