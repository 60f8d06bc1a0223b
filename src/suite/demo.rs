//! The demo suite compiled into the binary, and the loading of a run's suites with it as the
//! fallback of the embedded demo config.

use std::path::{Path, PathBuf};

use super::{load_sources, load_suite, Suite, SuiteError};

/// The demo suite, compiled in so that `mcpeval run` works from any directory.
pub const DEMO_SUITE: &[(&str, &str)] = &[
    (
        "tasks/demo/lookup.yaml",
        include_str!("../../tasks/demo/lookup.yaml"),
    ),
    (
        "tasks/demo/changes.yaml",
        include_str!("../../tasks/demo/changes.yaml"),
    ),
    (
        "tasks/demo/no_tool.yaml",
        include_str!("../../tasks/demo/no_tool.yaml"),
    ),
];

/// Loads the suites; `--suite tasks/demo` (the embedded demo config's suite, or given by a user
/// away from a checkout: `run --baseline replay:…+demo:1.4.0 --suite tasks/demo`) falls back to
/// the compiled-in copy when it is not on disk ([`is_embedded_fallback`]).
pub fn load_or_embedded(paths: &[PathBuf]) -> Result<Suite, SuiteError> {
    if is_embedded_fallback(paths) {
        let sources: Vec<(PathBuf, String)> = DEMO_SUITE
            .iter()
            .map(|(p, text)| (PathBuf::from(p), (*text).to_owned()))
            .collect();
        return load_sources(&sources);
    }
    load_suite(paths)
}

/// Whether `paths` is the demo suite's `tasks/demo` and no such folder is here: the suite is
/// then the compiled-in copy.
pub fn is_embedded_fallback(paths: &[PathBuf]) -> bool {
    let demo = Path::new("tasks/demo");
    paths == [demo] && !demo.exists()
}
