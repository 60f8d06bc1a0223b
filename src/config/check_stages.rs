//! The `[check]` table of a run config: what `mcpeval check` compares the candidate with and
//! how strict each stage is. `mcpeval check`'s flags override it.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{ClientProfile, ConfigError};

/// The conformance suite mcpeval runs when nothing else is configured: pinned, since `latest`
/// lacks `--requirements`.
pub const CONFORMANCE_PACKAGE: &str = "@modelcontextprotocol/conformance@0.2.0-alpha.12";

/// `[check]` as written; every key optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckFile {
    /// A snapshot directory kept in the repository (as `mcpeval snapshot` writes it) that the
    /// candidate's contract is diffed against, instead of a live baseline server's.
    pub baseline_snapshot: Option<PathBuf>,
    /// The conformance suite's expected-failures YAML kept in the repository.
    pub expected_failures: Option<PathBuf>,
    /// The requirement sets to run the conformance suite for [default: those of `2025-11-25`
    /// and `2026-07-28` the candidate supports].
    pub requirements: Option<Vec<String>>,
    /// The protocol versions the candidate must list in `supportedVersions`, exactly.
    pub protocol_versions: Option<Vec<String>>,
    /// Fail the deprecations stage on a deprecated feature or warning the baseline did not have
    /// [default: false: reported only].
    pub fail_on_new_deprecations: Option<bool>,
    /// Fail the smoke stage on a description-safety finding the baseline did not have
    /// [default: false: reported only].
    pub fail_on_description_risks: Option<bool>,
    /// The command that runs the conformance suite (split like a shell would, never run by
    /// one) [default: env MCPEVAL_CONFORMANCE, else `npx --yes
    /// @modelcontextprotocol/conformance@0.2.0-alpha.12`].
    pub conformance: Option<String>,
    /// For a stdio candidate with an HTTP entry point of its own: a command that serves it over
    /// Streamable HTTP at `http_url`, for the conformance suite (which speaks HTTP only), checked
    /// to be the candidate [default: none: mcpeval bridges the stdio candidate to HTTP].
    pub http_command: Option<String>,
    pub http_url: Option<String>,
    /// The client profiles to snapshot the contract with [default: ["bare"]].
    pub client_profiles: Option<Vec<ClientProfile>>,
    /// `[auth.NAME]` profiles to snapshot the contract with too, each diffed against the stored
    /// snapshot's `NAME/` folder.
    pub auth_profiles: Option<Vec<String>>,
    /// Skip the evaluation when the contract stage finds a change that breaks clients.
    pub stop_on_breaking: Option<bool>,
    /// Fail the contract stage when the tool list's `o200k_base` tokens grow past this: a per
    /// cent (`"10%"`) or a number of tokens [default: none: reported only].
    pub max_tool_tokens_increase: Option<super::TokenIncrease>,
    /// Host settings files whose entries name tools (Claude Code's, Gemini CLI's, Codex's,
    /// VS Code tool sets), checked against the candidate's renames and removals [default: those
    /// found in the current directory].
    pub host_settings: Option<Vec<PathBuf>>,
}

impl CheckFile {
    /// Reads the `[check]` table of the config file at `path`, checking the whole file as a run
    /// does; paths in it are taken relative to the file's folder.
    pub fn read(path: &Path) -> Result<Option<Self>, ConfigError> {
        let table = super::check::read_config(path)?.check;
        let base = path.parent().unwrap_or(Path::new(""));
        Ok(table.map(|mut t| {
            let listed = t.host_settings.iter_mut().flatten();
            for p in [&mut t.baseline_snapshot, &mut t.expected_failures]
                .into_iter()
                .flatten()
                .chain(listed)
            {
                if p.is_relative() {
                    *p = base.join(&*p);
                }
            }
            t
        }))
    }
}

/// The server label the config file at `path` sets in `[profile] server_label`, if it sets one:
/// the label of the server under test in hosts' settings (`mcp__LABEL__TOOL`).
pub fn explicit_server_label(path: &Path) -> Result<Option<String>, ConfigError> {
    let file = super::check::read_config(path)?;
    Ok(file.profile.and_then(|p| p.server_label))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_table_is_read_with_paths_from_the_file_and_typos_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "[profile]\nserver_label = \"demo\"\n[check]\nbaseline_snapshot = \"contract\"\n\
             client_profiles = [\"bare\", \"full\"]\nhost_settings = [\".claude/settings.json\"]\n",
        )
        .unwrap();
        let table = CheckFile::read(&path).unwrap().unwrap();
        assert_eq!(table.baseline_snapshot, Some(dir.path().join("contract")));
        assert_eq!(
            table.host_settings,
            Some(vec![dir.path().join(".claude/settings.json")])
        );
        assert_eq!(
            explicit_server_label(&path).unwrap().as_deref(),
            Some("demo")
        );
        assert_eq!(
            table.client_profiles,
            Some(vec![ClientProfile::Bare, ClientProfile::Full])
        );
        std::fs::write(&path, "[check]\nexpected_failure = \"x\"\n").unwrap();
        let err = CheckFile::read(&path).unwrap_err().to_string();
        assert!(
            err.contains("unknown key `expected_failure` in [check]")
                && err.contains("expected_failures"),
            "{err}"
        );
    }
}
