//! Where a server keeps its state, and how trials may touch it: `[servers.NAME] state`, the
//! sandboxes copied for each server process (`--sandbox`, `[servers.NAME] sandbox`) and the
//! consent to write to the real thing (`--allow-writes`, `allow_writes = true`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::InvalidSetting;

/// Where a server's state lives. A fresh process is not fresh state: a server over a
/// repository, a database or a directory keeps its state outside the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerState {
    /// It may outlive the process (MCP says nothing either way): trials that can reach a tool
    /// not marked `readOnlyHint: true` need a sandbox or `--allow-writes`.
    #[default]
    External,
    /// Each process starts from nothing and its state dies with it (`state = "process"`).
    Process,
}

impl ServerState {
    pub fn is_external(&self) -> bool {
        *self == Self::External
    }
}

/// One path copied afresh for every start of a server's process: `{sandbox}` (no name) or
/// `{sandbox.NAME}` in the server's command, arguments, environment, working directory and in
/// the tasks becomes the copy's path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPath {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub path: PathBuf,
}

impl SandboxPath {
    /// What stands for the copy: `{sandbox}` or `{sandbox.NAME}`.
    pub fn placeholder(&self) -> String {
        match &self.name {
            Some(name) => format!("{{sandbox.{name}}}"),
            None => "{sandbox}".to_owned(),
        }
    }

    /// `--sandbox PATH` or `--sandbox NAME=PATH` (a NAME of letters, digits, `_` and `-`).
    pub fn parse_flag(text: &str) -> Result<Self, InvalidSetting> {
        match text.split_once('=') {
            Some((name, path)) if is_name(name) => Self::new(Some(name), Path::new(path)),
            _ => Self::new(None, Path::new(text)),
        }
    }

    /// A sandbox of `path` (made absolute), checked: it exists, and a git repository in it has
    /// its `.git` as a directory (a worktree's or a submodule's `.git` file points elsewhere,
    /// which a copy would share).
    pub fn new(name: Option<&str>, path: &Path) -> Result<Self, InvalidSetting> {
        let shown = path.display();
        if let Some(name) = name.filter(|n| !is_name(n)) {
            return Err(InvalidSetting(format!(
                "sandbox name `{name}`: use letters, digits, `_` and `-`"
            )));
        }
        if path.as_os_str().is_empty() {
            return Err(InvalidSetting("--sandbox: the PATH is empty".to_owned()));
        }
        let meta = std::fs::symlink_metadata(path).map_err(|e| {
            InvalidSetting(format!(
                "sandbox `{shown}`: {e} (it is copied for every server start, so it must exist)"
            ))
        })?;
        let dot_git = path.join(".git");
        if meta.is_dir() && dot_git.is_file() {
            return Err(InvalidSetting(format!(
                "sandbox `{shown}`: its `.git` is a file (a git worktree or submodule), which \
                 points at a repository outside the sandbox that every copy would share and \
                 change; pass the main repository, or a clone of it (`git clone {shown} COPY`)"
            )));
        }
        let path = std::path::absolute(path)
            .map_err(|e| InvalidSetting(format!("sandbox `{shown}`: {e}")))?;
        Ok(Self {
            name: name.map(str::to_owned),
            path,
        })
    }
}

fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `[servers.NAME] sandbox = "PATH"` or `sandbox = { repo = "PATH", db = "PATH" }`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum SandboxFile {
    One(PathBuf),
    Named(BTreeMap<String, PathBuf>),
}

impl SandboxFile {
    /// The sandboxes, paths relative to `base_dir` (the config file's folder) made whole.
    pub fn resolve(&self, base_dir: Option<&Path>) -> Result<Vec<SandboxPath>, InvalidSetting> {
        let whole = |p: &PathBuf| match base_dir {
            Some(dir) if p.is_relative() => dir.join(p),
            _ => p.clone(),
        };
        match self {
            Self::One(path) => Ok(vec![SandboxPath::new(None, &whole(path))?]),
            Self::Named(paths) => paths
                .iter()
                .map(|(name, path)| SandboxPath::new(Some(name), &whole(path)))
                .collect(),
        }
    }
}

/// Every `{sandbox}` / `{sandbox.NAME}` placeholder written in `text` (`${…}` stays the
/// environment's syntax: `${sandbox}` is no placeholder).
pub fn placeholders_in(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("{sandbox").map(|i| i + from) {
        let tail = &text[at..];
        let Some(end) = tail.find('}') else { break };
        let inner = &tail[1..end];
        let named = inner.strip_prefix("sandbox.").is_some_and(is_name);
        if (inner == "sandbox" || named) && !text[..at].ends_with('$') {
            found.push(tail[..=end].to_owned());
        }
        from = at + end + 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_name_a_path_or_a_named_path() {
        let dir = tempfile::tempdir().unwrap();
        let given = dir.path().display().to_string();
        let one = SandboxPath::parse_flag(&given).unwrap();
        assert_eq!(
            (one.name.as_deref(), one.placeholder()),
            (None, "{sandbox}".into())
        );
        let named = SandboxPath::parse_flag(&format!("repo={given}")).unwrap();
        assert_eq!(named.placeholder(), "{sandbox.repo}");
        assert_eq!(named.path, dir.path());
        let missing = SandboxPath::parse_flag("/nonexistent/xyz").unwrap_err();
        assert!(missing.0.contains("must exist"), "{missing}");
    }

    #[test]
    fn a_git_file_is_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".git"),
            "gitdir: /elsewhere/.git/worktrees/x\n",
        )
        .unwrap();
        let err = SandboxPath::new(None, dir.path()).unwrap_err();
        assert!(err.0.contains("git worktree or submodule"), "{err}");
        std::fs::remove_file(dir.path().join(".git")).unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        assert!(SandboxPath::new(None, dir.path()).is_ok());
    }

    #[test]
    fn placeholders_are_found_and_env_syntax_is_not_one() {
        assert_eq!(
            placeholders_in("--repository {sandbox} --db={sandbox.db}/x ${HOME} {sandboxes}"),
            ["{sandbox}", "{sandbox.db}"]
        );
        assert!(placeholders_in("${sandbox_dir} {sand} ${sandbox}").is_empty());
    }
}
