//! The `[nightly]` table of a run config: what `mcpeval nightly` runs and where it keeps the
//! history.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ConfigError;

/// `[nightly]` as written; every key optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NightlyFile {
    /// `true`: run the whole suite every night instead of the tasks the contract diff triggers
    /// (then a night with no contract change still runs, and drift is checked every night).
    pub whole_suite: Option<bool>,
    /// The history file (default: `<out_dir>/history.parquet`, i.e. `results/history.parquet`).
    pub history: Option<PathBuf>,
    /// `true`: run the triggered tasks although the candidate's contract breaks clients (as
    /// `mcpeval nightly --allow-breaking`); else such a night stops before its trials.
    pub allow_breaking: Option<bool>,
}

/// `[nightly]` resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct NightlySettings {
    pub whole_suite: bool,
    pub history: PathBuf,
    pub allow_breaking: bool,
}

impl NightlyFile {
    /// Reads the `[nightly]` table of the config file at `path`. The whole file is checked, as a
    /// run checks it, so every problem of it is reported at once; each names the file.
    pub fn read(path: &Path) -> Result<Option<Self>, ConfigError> {
        Ok(super::check::read_config(path)?.nightly)
    }

    /// Fills in the defaults; `out_dir` is the run config's.
    pub fn resolve(self, out_dir: &Path) -> NightlySettings {
        NightlySettings {
            whole_suite: self.whole_suite.unwrap_or(false),
            history: self
                .history
                .unwrap_or_else(|| out_dir.join("history.parquet")),
            allow_breaking: self.allow_breaking.unwrap_or(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nightly_table_is_read_with_defaults_and_typos_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.toml");
        std::fs::write(
            &path,
            "trials = 2\n[nightly]\nwhole_suite = true\nallow_breaking = true\n",
        )
        .unwrap();
        let settings = NightlyFile::read(&path)
            .unwrap()
            .unwrap()
            .resolve(Path::new("out"));
        assert!(settings.whole_suite && settings.allow_breaking);
        assert_eq!(settings.history, Path::new("out/history.parquet"));
        std::fs::write(&path, "[nightly]\nwhole_suit = true\n").unwrap();
        let err = NightlyFile::read(&path).unwrap_err().to_string();
        assert!(
            err.contains("n.toml") && err.contains("whole_suit"),
            "{err}"
        );
        // With its position and the key meant.
        assert!(
            err.contains(
                "n.toml:2:1: unknown key `whole_suit` in [nightly] (did you mean \
                          `whole_suite`?)"
            ),
            "{err}"
        );
        std::fs::write(&path, "trials = 2\n").unwrap();
        assert_eq!(NightlyFile::read(&path).unwrap(), None);
    }
}
