//! The files that hold host settings: which host each one is for (by where it is, else by what
//! it holds), the ones `check` looks for in a folder by default, and reading them all into the
//! entries that name tools, the server entries that tie labels, and a warning per file that
//! does not parse.

use std::path::{Path, PathBuf};

use super::entry::Entry;
use super::tie::ServerDef;
use super::{json, toml_files};

/// Which host's settings a file holds, and so where its entries are and how they name tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `.claude/settings.json`, `.claude/settings.local.json`: `permissions.allow|deny|ask`.
    ClaudeCode,
    /// `.gemini/settings.json`: `mcpServers.NAME.includeTools|excludeTools`.
    GeminiCli,
    /// `.codex/config.toml`: `[mcp_servers.NAME] enabled_tools|disabled_tools`.
    Codex,
    /// `.vscode/*.toolsets.jsonc`: each tool set's `tools`.
    VsCodeToolSets,
    /// mcpeval's own config: `[host.NAME] allowed_tools`.
    Mcpeval,
    /// `.mcp.json` (Claude Code's project servers): server entries only.
    McpJson,
    /// `.vscode/mcp.json`: server entries only.
    VsCodeMcp,
}

impl Kind {
    /// The kind a file's place says, when it says one: a `*.toolsets.jsonc`, a file in a
    /// `.claude`, `.gemini` or `.codex` folder, `.mcp.json`, a `mcp.json` in `.vscode`.
    pub fn of_path(path: &Path) -> Option<Self> {
        let name = path.file_name()?.to_string_lossy();
        let folder = (path.parent())
            .and_then(Path::file_name)
            .map(|f| f.to_string_lossy().into_owned());
        if name.ends_with(".toolsets.jsonc") {
            return Some(Self::VsCodeToolSets);
        }
        match (folder.as_deref(), name.as_ref()) {
            (_, ".mcp.json") => Some(Self::McpJson),
            (Some(".vscode"), "mcp.json") => Some(Self::VsCodeMcp),
            (Some(".claude"), _) => Some(Self::ClaudeCode),
            (Some(".gemini"), _) => Some(Self::GeminiCli),
            (Some(".codex"), _) => Some(Self::Codex),
            _ => None,
        }
    }

    /// Whether the host reads the file as plain JSON (a comment in it is an error there).
    fn strict_json(self) -> bool {
        matches!(self, Self::ClaudeCode | Self::McpJson)
    }
}

/// One file to read: its path, how findings show it, and its kind (`None`: by what it holds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsFile {
    pub path: PathBuf,
    pub shown: String,
    pub kind: Option<Kind>,
}

impl SettingsFile {
    /// A file named by the user (`--host-settings`, `[check] host_settings`), shown as given.
    pub fn given(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            shown: path.display().to_string(),
            kind: Kind::of_path(path),
        }
    }

    /// A file of a known kind, shown as given.
    pub fn of_kind(path: &Path, kind: Kind) -> Self {
        Self {
            kind: Some(kind),
            ..Self::given(path)
        }
    }
}

/// The host settings files `check` reads in `dir` when none are named, those that exist, shown
/// relative to `dir`: `.claude/settings.json`, `.claude/settings.local.json`,
/// `.gemini/settings.json`, `.codex/config.toml`, `.vscode/*.toolsets.jsonc` (in name order).
pub fn defaults(dir: &Path) -> Vec<SettingsFile> {
    let mut found = existing(
        dir,
        &[
            (".claude/settings.json", Kind::ClaudeCode),
            (".claude/settings.local.json", Kind::ClaudeCode),
            (".gemini/settings.json", Kind::GeminiCli),
            (".codex/config.toml", Kind::Codex),
        ],
    );
    let mut sets: Vec<String> = std::fs::read_dir(dir.join(".vscode"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".toolsets.jsonc"))
        .collect();
    sets.sort();
    found.extend(sets.iter().map(|name| SettingsFile {
        path: dir.join(".vscode").join(name),
        shown: format!(".vscode/{name}"),
        kind: Some(Kind::VsCodeToolSets),
    }));
    found
}

/// The hosts' MCP configurations in `dir` that exist, read for their server entries only:
/// `.mcp.json`, `.vscode/mcp.json`.
pub fn server_files(dir: &Path) -> Vec<SettingsFile> {
    existing(
        dir,
        &[
            (".mcp.json", Kind::McpJson),
            (".vscode/mcp.json", Kind::VsCodeMcp),
        ],
    )
}

fn existing(dir: &Path, files: &[(&str, Kind)]) -> Vec<SettingsFile> {
    (files.iter())
        .filter(|(name, _)| dir.join(name).is_file())
        .map(|&(name, kind)| SettingsFile {
            path: dir.join(name),
            shown: name.to_owned(),
            kind: Some(kind),
        })
        .collect()
}

/// What the files hold: the entries that name tools, the server entries, the files read and a
/// warning for each that could not be.
#[derive(Debug, Default)]
pub struct Found {
    pub entries: Vec<Entry>,
    pub servers: Vec<ServerDef>,
    /// The files read whole, as shown.
    pub read: Vec<String>,
    /// `FILE: why`, one per file that could not be read or parsed (its entries are not known).
    pub warnings: Vec<String>,
}

impl Found {
    pub fn warn(&mut self, file: &str, why: impl std::fmt::Display) {
        self.warnings.push(format!("{file}: {why}"));
    }
}

/// Reads every file; one that cannot be read or parsed is a warning, never an error.
pub fn read_all(files: &[SettingsFile]) -> Found {
    let mut found = Found::default();
    for file in files {
        match std::fs::read_to_string(&file.path) {
            Ok(text) => read_text(file, &text, &mut found),
            Err(e) => found.warn(&file.shown, format_args!("cannot read: {e}")),
        }
    }
    found
}

/// Reads one file's text by its kind: TOML for Codex and mcpeval, JSON (with comments where the
/// host allows them) for the others; a file of no known place is told by what it holds.
pub fn read_text(file: &SettingsFile, text: &str, found: &mut Found) {
    let toml = match file.kind {
        Some(kind) => matches!(kind, Kind::Codex | Kind::Mcpeval),
        None => file.path.extension().is_some_and(|e| e == "toml"),
    };
    let before = found.warnings.len();
    match toml {
        true => toml_files::read(file, text, found),
        false => json::read(file, text, file.kind.is_some_and(Kind::strict_json), found),
    }
    if found.warnings.len() == before {
        found.read.push(file.shown.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_s_place_says_its_host() {
        let kind = |p: &str| Kind::of_path(Path::new(p));
        assert_eq!(kind(".claude/settings.json"), Some(Kind::ClaudeCode));
        assert_eq!(
            kind("/repo/.claude/settings.local.json"),
            Some(Kind::ClaudeCode)
        );
        assert_eq!(kind(".gemini/settings.json"), Some(Kind::GeminiCli));
        assert_eq!(kind("x/.codex/config.toml"), Some(Kind::Codex));
        assert_eq!(
            kind(".vscode/triage.toolsets.jsonc"),
            Some(Kind::VsCodeToolSets)
        );
        assert_eq!(kind(".vscode/mcp.json"), Some(Kind::VsCodeMcp));
        assert_eq!(kind(".mcp.json"), Some(Kind::McpJson));
        assert_eq!(kind("ci/settings.json"), None);
    }

    #[test]
    fn the_default_files_are_those_that_exist_shown_relative() {
        let dir = tempfile::tempdir().unwrap();
        let at = |p: &str| {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "{}").unwrap();
        };
        at(".claude/settings.json");
        at(".vscode/b.toolsets.jsonc");
        at(".vscode/a.toolsets.jsonc");
        at(".vscode/settings.json");
        at(".mcp.json");
        let shown: Vec<String> = defaults(dir.path()).into_iter().map(|f| f.shown).collect();
        assert_eq!(
            shown,
            [
                ".claude/settings.json",
                ".vscode/a.toolsets.jsonc",
                ".vscode/b.toolsets.jsonc"
            ]
        );
        let servers: Vec<String> = (server_files(dir.path()).into_iter())
            .map(|f| f.shown)
            .collect();
        assert_eq!(servers, [".mcp.json"]);
        assert!(defaults(&dir.path().join("nowhere")).is_empty());
    }

    #[test]
    fn an_unreadable_file_is_a_warning() {
        let file = SettingsFile::given(Path::new("/nonexistent/.claude/settings.json"));
        let found = read_all(&[file]);
        assert!(found.read.is_empty());
        assert_eq!(found.warnings.len(), 1);
        assert!(
            found.warnings[0].starts_with("/nonexistent/.claude/settings.json: cannot read:"),
            "{:?}",
            found.warnings
        );
    }
}
