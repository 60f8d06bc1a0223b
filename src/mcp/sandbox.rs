//! Sandboxes: a fresh copy of the user's data (a directory, a git repository, one file) for every
//! start of a server's process, so that no trial changes the real thing. `{sandbox}` (or
//! `{sandbox.NAME}`) in the server's command line, environment and working directory becomes
//! the copy's path; the copy is removed when the process's connection is dropped, unless the
//! spec keeps it (`--keep-sandboxes`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::config::{ServerSpec, Transport};

/// A tree over this many bytes warns before a run: it is copied for every server start.
pub const LARGE_TREE_BYTES: u64 = 100 * 1024 * 1024;

/// A sandbox that could not be made.
#[derive(Debug, thiserror::Error)]
#[error("cannot copy sandbox `{path}` to `{to}`: {source}")]
pub struct SandboxError {
    pub path: PathBuf,
    pub to: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// The copies made for one server process: each placeholder and the path that stands for it.
/// Dropping it removes them (unless kept).
pub struct SandboxCopies {
    pairs: Vec<(String, PathBuf)>,
    dirs: Vec<tempfile::TempDir>,
}

impl std::fmt::Debug for SandboxCopies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxCopies")
            .field("pairs", &self.pairs)
            .finish()
    }
}

/// What copying a sandbox costs, as measured on the copies this process made.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CopyStats {
    pub copies: u64,
    pub files: u64,
    pub bytes: u64,
    /// The time of all copies.
    pub total: Duration,
    /// Whether the filesystem cloned the files (copy-on-write) rather than copying their bytes.
    pub cloned: bool,
}

static STATS: Mutex<CopyStats> = Mutex::new(CopyStats {
    copies: 0,
    files: 0,
    bytes: 0,
    total: Duration::ZERO,
    cloned: false,
});

/// The copies this process has made so far, and what they cost.
pub fn copy_stats() -> CopyStats {
    *STATS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where the kept copies go: the system's temporary directory.
pub fn sandbox_root() -> PathBuf {
    std::env::temp_dir()
}

impl SandboxCopies {
    /// Copies each of `spec`'s sandboxes into a fresh temporary directory (`None` when it has
    /// none). The copy keeps the original's last name (`repo`, `data.db`).
    pub fn make(spec: &ServerSpec) -> Result<Option<Self>, SandboxError> {
        if spec.sandboxes.is_empty() {
            return Ok(None);
        }
        let mut copies = Self {
            pairs: Vec::new(),
            dirs: Vec::new(),
        };
        for sandbox in &spec.sandboxes {
            let failed = |to: &Path, source| SandboxError {
                path: sandbox.path.clone(),
                to: to.to_path_buf(),
                source,
            };
            let dir = tempfile::Builder::new()
                .prefix("mcpeval-sandbox-")
                .tempdir_in(sandbox_root())
                .map_err(|e| failed(&sandbox_root(), e))?;
            let name = sandbox.path.file_name().unwrap_or("sandbox".as_ref());
            // The resolved path (a temporary directory behind a symbolic link, as on macOS):
            // servers that resolve their paths answer with this one.
            let base = dir
                .path()
                .canonicalize()
                .unwrap_or(dir.path().to_path_buf());
            let to = base.join(name);
            let started = Instant::now();
            let copied = copy_path(&sandbox.path, &to).map_err(|e| failed(&to, e))?;
            record(copied, started.elapsed());
            copies.pairs.push((sandbox.placeholder(), to));
            copies.dirs.push(dir);
        }
        if spec.keep_sandboxes {
            for dir in std::mem::take(&mut copies.dirs) {
                let _ = dir.keep();
            }
        }
        Ok(Some(copies))
    }

    /// Each placeholder and its copy's path.
    pub fn pairs(&self) -> &[(String, PathBuf)] {
        &self.pairs
    }

    /// `text` with each placeholder replaced by its copy's path.
    pub fn substitute(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for (placeholder, path) in &self.pairs {
            if text.contains(placeholder.as_str()) {
                text = text.replace(placeholder.as_str(), &path.to_string_lossy());
            }
        }
        text
    }

    /// `text` with each copy's path put back as its placeholder, so that two trials' records,
    /// whose copies differ, compare.
    pub fn map_back(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for (placeholder, path) in &self.pairs {
            let path = path.to_string_lossy();
            if text.contains(path.as_ref()) {
                text = text.replace(path.as_ref(), placeholder);
            }
        }
        text
    }

    /// Every string inside `value` mapped back.
    pub fn map_back_json(&self, value: &mut serde_json::Value) {
        walk_strings(value, &|s| self.map_back(s));
    }

    /// Every string inside `value` substituted.
    pub fn substitute_json(&self, value: &mut serde_json::Value) {
        walk_strings(value, &|s| self.substitute(s));
    }

    /// `spec`'s transport, env and cwd with the placeholders replaced. The words of a spec
    /// that is split again (an overlay's or a replay's `--base`) get the path quoted.
    pub fn apply(&self, spec: &ServerSpec) -> ServerSpec {
        let mut spec = spec.clone();
        if let Transport::Stdio { program, args } = &mut spec.transport {
            *program = self.substitute(program);
            let mut quoted = false;
            for arg in args.iter_mut() {
                *arg = match quoted {
                    true => self.substitute_quoted(arg),
                    false => self.substitute(arg),
                };
                quoted = arg == "--base";
            }
        }
        for value in spec.env.values_mut() {
            *value = self.substitute(value);
        }
        spec.cwd = spec
            .cwd
            .as_ref()
            .map(|c| PathBuf::from(self.substitute(&c.to_string_lossy())));
        spec
    }

    fn substitute_quoted(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for (placeholder, path) in &self.pairs {
            let path = path.to_string_lossy();
            let quoted = shlex::try_quote(&path).unwrap_or(path.clone());
            text = text.replace(placeholder.as_str(), &quoted);
        }
        text
    }
}

fn walk_strings(value: &mut serde_json::Value, change: &dyn Fn(&str) -> String) {
    match value {
        serde_json::Value::String(s) => *s = change(s),
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| walk_strings(v, change)),
        serde_json::Value::Object(map) => map.values_mut().for_each(|v| walk_strings(v, change)),
        _ => {}
    }
}

/// What one copy did.
#[derive(Debug, Clone, Copy, Default)]
struct Copied {
    files: u64,
    bytes: u64,
    cloned: bool,
}

fn record(copied: Copied, took: Duration) {
    let mut stats = STATS.lock().unwrap_or_else(|e| e.into_inner());
    stats.copies += 1;
    stats.files += copied.files;
    stats.bytes += copied.bytes;
    stats.total += took;
    stats.cloned |= copied.cloned;
}

/// Copies a file or a whole tree (symbolic links as links, permissions kept), each file cloned
/// copy-on-write where the filesystem supports it.
fn copy_path(from: &Path, to: &Path) -> std::io::Result<Copied> {
    let mut copied = Copied::default();
    for entry in walkdir::WalkDir::new(from).follow_links(false) {
        let entry = entry.map_err(std::io::Error::other)?;
        let relative = entry.path().strip_prefix(from).unwrap_or(Path::new(""));
        let target = match relative.as_os_str().is_empty() {
            true => to.to_path_buf(),
            false => to.join(relative),
        };
        let kind = entry.file_type();
        if kind.is_dir() {
            std::fs::create_dir_all(&target)?;
            let permissions = entry
                .metadata()
                .map_err(std::io::Error::other)?
                .permissions();
            std::fs::set_permissions(&target, permissions)?;
        } else if kind.is_symlink() {
            copy_link(entry.path(), &target)?;
        } else {
            let cloned = reflink_copy::reflink_or_copy(entry.path(), &target)?;
            copied.cloned |= cloned.is_none();
            copied.files += 1;
            copied.bytes += entry.metadata().map_err(std::io::Error::other)?.len();
        }
    }
    Ok(copied)
}

#[cfg(unix)]
fn copy_link(from: &Path, to: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(std::fs::read_link(from)?, to)
}

#[cfg(not(unix))]
fn copy_link(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::copy(from, to).map(|_| ())
}

/// The size of a sandbox's tree: files and bytes (for the warning on a large one).
pub fn tree_size(path: &Path) -> (u64, u64) {
    let mut files = 0;
    let mut bytes = 0;
    for entry in walkdir::WalkDir::new(path).into_iter().flatten() {
        if entry.file_type().is_file() {
            files += 1;
            bytes += entry.metadata().map(|m| m.len()).unwrap_or(0);
        }
    }
    (files, bytes)
}

/// The placeholders of every sandbox `spec` names, and where each is used in it.
pub fn placeholders_of(spec: &ServerSpec) -> BTreeMap<String, &'static str> {
    let mut found = BTreeMap::new();
    let mut look = |text: &str, place: &'static str| {
        for p in crate::config::placeholders_in(text) {
            found.entry(p).or_insert(place);
        }
    };
    if let Transport::Stdio { program, args } = &spec.transport {
        look(program, "command");
        args.iter().for_each(|a| look(a, "command"));
    }
    spec.env.values().for_each(|v| look(v, "env"));
    if let Some(cwd) = &spec.cwd {
        look(&cwd.to_string_lossy(), "cwd");
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SandboxPath;

    fn spec_over(dir: &Path, command: &str) -> ServerSpec {
        let mut spec = ServerSpec::parse("s", command).unwrap();
        spec.sandboxes = vec![SandboxPath::new(None, dir).unwrap()];
        spec
    }

    #[test]
    fn a_tree_is_copied_with_its_links_and_removed_with_the_copies() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git/objects")).unwrap();
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(repo.join("a.txt"), "hello").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("a.txt", repo.join("link")).unwrap();
        let spec = spec_over(&repo, "server --repository {sandbox} --x=y");
        let copies = SandboxCopies::make(&spec).unwrap().unwrap();
        let (placeholder, copy) = &copies.pairs()[0];
        assert_eq!(placeholder, "{sandbox}");
        assert_eq!(copy.file_name().unwrap(), "repo");
        assert_ne!(copy, &repo);
        assert_eq!(
            std::fs::read_to_string(copy.join("a.txt")).unwrap(),
            "hello"
        );
        assert!(copy.join(".git/objects").is_dir());
        #[cfg(unix)]
        assert_eq!(
            std::fs::read_link(copy.join("link")).unwrap(),
            Path::new("a.txt")
        );
        let Transport::Stdio { args, .. } = copies.apply(&spec).transport else {
            panic!("stdio")
        };
        assert_eq!(args[1], copy.to_string_lossy());
        // Writing to the copy leaves the original alone.
        std::fs::write(copy.join("a.txt"), "changed").unwrap();
        assert_eq!(
            std::fs::read_to_string(repo.join("a.txt")).unwrap(),
            "hello"
        );
        let copy = copy.clone();
        drop(copies);
        assert!(!copy.exists());
    }

    #[test]
    fn one_file_is_copied_and_kept_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("data.db");
        std::fs::write(&db, [0u8, 1, 2]).unwrap();
        let mut spec = spec_over(&db, "server --db {sandbox}");
        spec.keep_sandboxes = true;
        let copies = SandboxCopies::make(&spec).unwrap().unwrap();
        let copy = copies.pairs()[0].1.clone();
        drop(copies);
        assert_eq!(std::fs::read(&copy).unwrap(), [0u8, 1, 2]);
        std::fs::remove_dir_all(copy.parent().unwrap()).unwrap();
    }

    #[test]
    fn paths_map_back_to_placeholders_in_text_and_json() {
        let dir = tempfile::tempdir().unwrap();
        let spec = spec_over(dir.path(), "overlay-like --base 'srv {sandbox}'");
        let copies = SandboxCopies::make(&spec).unwrap().unwrap();
        let copy = copies.pairs()[0].1.to_string_lossy().into_owned();
        let prompt = copies.substitute("show the log of {sandbox}");
        assert_eq!(prompt, format!("show the log of {copy}"));
        assert_eq!(copies.map_back(&prompt), "show the log of {sandbox}");
        let mut args = serde_json::json!({"repo_path": copy, "n": [copy.clone(), 3]});
        copies.map_back_json(&mut args);
        assert_eq!(
            args,
            serde_json::json!({"repo_path": "{sandbox}", "n": ["{sandbox}", 3]})
        );
        let Transport::Stdio { args, .. } = copies.apply(&spec).transport else {
            panic!("stdio")
        };
        // The word after --base is split again: a path with a space stays one word.
        assert_eq!(shlex::split(&args[1]).unwrap()[1], copy, "{:?}", args);
    }
}
