//! Finds the task suites a command names, with the embedded copy of the demo suite as fallback.

use std::path::{Path, PathBuf};

use super::exit::CliError;
use crate::suite::{load_sources, load_suite, Suite};

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

/// Loads the suites; for the embedded demo, `tasks/demo` falls back to the compiled-in copy when
/// it is not on disk.
pub fn load(paths: &[PathBuf], config_source: &str) -> Result<Suite, CliError> {
    let demo = Path::new("tasks/demo");
    if config_source == "<embedded demo>" && paths == [demo] && !demo.exists() {
        let sources: Vec<(PathBuf, String)> = DEMO_SUITE
            .iter()
            .map(|(p, text)| (PathBuf::from(p), (*text).to_owned()))
            .collect();
        return load_sources(&sources).map_err(CliError::usage);
    }
    load_suite(paths).map_err(CliError::usage)
}
