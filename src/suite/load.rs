//! Loads `tasks/<suite>/*.yaml` into tasks and reports every problem with file, line and column.

use std::collections::hash_map::{Entry, HashMap};
use std::path::{Path, PathBuf};

use super::check::Checker;
use super::defaults::{self, for_file, is_defaults_file, Defaults};
use super::foreign;
use super::raw;
use super::task::Task;
use super::validate::{self, Checked};

/// A loaded, validated suite.
#[derive(Debug, Clone)]
pub struct Suite {
    /// The directories or files it was loaded from.
    pub sources: Vec<PathBuf>,
    pub tasks: Vec<Task>,
}

impl Suite {
    /// The tasks as the candidate side grades them when it renamed tools (`old → new`, see
    /// [`Task::renamed`]); `None` when nothing was renamed and both sides share the tasks.
    pub fn renamed_for_candidate(
        &self,
        renames: &std::collections::BTreeMap<String, String>,
    ) -> Option<Vec<Task>> {
        (!renames.is_empty()).then(|| self.tasks.iter().map(|t| t.renamed(renames)).collect())
    }
}

/// One problem found in a task file. `line` and `column` are 1-based, in characters; both are 0
/// when the problem concerns a whole file or directory (then `Display` shows no position).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let file = self.file.display();
        match (self.file.as_os_str().is_empty(), self.line) {
            (true, _) => write!(f, "{}", self.message),
            (false, 0) => write!(f, "{file}: {}", self.message),
            (false, _) => write!(f, "{file}:{}:{}: {}", self.line, self.column, self.message),
        }
    }
}

/// Why a suite could not be loaded: every diagnostic found, not just the first.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("cannot read `{path}`")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} problem(s) in task files:\n{}", .0.len(), .0.iter().map(|d| format!("  {d}")).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<Diagnostic>),
}

impl crate::error::Coded for SuiteError {
    fn exit(&self) -> crate::error::Exit {
        match self {
            Self::Io { .. } | Self::Invalid(_) => crate::error::Exit::Usage,
        }
    }
}

/// Loads the tasks of every `*.yaml`/`*.yml` file under the given directories or files.
///
/// Directories are searched recursively (hidden entries and symlinked directories are skipped)
/// and their files read in sorted order; a file named directly is read whatever its extension.
/// Task ids must be unique across all of them.
pub fn load_suite(paths: &[PathBuf]) -> Result<Suite, SuiteError> {
    let mut diagnostics = Vec::new();
    if paths.is_empty() {
        diagnostics.push(whole(Path::new(""), "no task suite given"));
    }
    let mut files = Vec::new();
    for file in task_files(paths, &mut diagnostics)? {
        let bytes = std::fs::read(&file).map_err(|source| SuiteError::Io {
            path: file.clone(),
            source,
        })?;
        files.push((file, bytes));
    }
    build(paths.to_vec(), &files, diagnostics)
}

/// Loads tasks from files held in memory (path for messages, contents): the embedded demo suite.
pub fn load_sources(sources: &[(PathBuf, String)]) -> Result<Suite, SuiteError> {
    let files: Vec<(PathBuf, Vec<u8>)> = sources
        .iter()
        .map(|(path, text)| (path.clone(), text.as_bytes().to_vec()))
        .collect();
    let paths = sources.iter().map(|(path, _)| path.clone()).collect();
    build(paths, &files, Vec::new())
}

/// Validates every file and checks ids across them; any problem fails the whole suite.
fn build(
    sources: Vec<PathBuf>,
    files: &[(PathBuf, Vec<u8>)],
    mut diagnostics: Vec<Diagnostic>,
) -> Result<Suite, SuiteError> {
    let mut first_seen: HashMap<String, String> = HashMap::new();
    let mut tasks = Vec::new();
    // `defaults.yaml` files first: what the task files at and below their directory take.
    let mut defaults = Vec::new();
    for (file, bytes) in files.iter().filter(|(f, _)| is_defaults_file(f)) {
        let (parsed, found) = check_defaults(file, bytes);
        diagnostics.extend(found);
        if let (Some(parsed), Some(dir)) = (parsed, file.parent()) {
            defaults.push((dir.to_path_buf(), parsed));
        }
    }
    for (file, bytes) in files.iter().filter(|(f, _)| !is_defaults_file(f)) {
        let (checked, mut found) = check_bytes_with(file, bytes, &for_file(file, &defaults));
        for Checked { id, task } in checked {
            if let Some((id, line, column)) = id {
                match first_seen.entry(id) {
                    Entry::Occupied(first) => found.push(Diagnostic {
                        file: file.clone(),
                        line,
                        column,
                        message: format!(
                            "duplicate id `{}` (first defined at {})",
                            first.key(),
                            first.get()
                        ),
                    }),
                    Entry::Vacant(slot) => drop(slot.insert(format!("{}:{line}", file.display()))),
                }
            }
            tasks.extend(task);
        }
        found.sort_by_key(|d| (d.line, d.column));
        diagnostics.extend(found);
    }
    if !diagnostics.is_empty() {
        return Err(SuiteError::Invalid(diagnostics));
    }
    Ok(Suite { sources, tasks })
}

/// Validates the contents of one task file: its tasks and its problems.
#[cfg(test)]
pub(crate) fn check_bytes(file: &Path, bytes: &[u8]) -> (Vec<Checked>, Vec<Diagnostic>) {
    check_bytes_with(file, bytes, &Defaults::default())
}

/// Validates a `defaults.yaml`.
fn check_defaults(file: &Path, bytes: &[u8]) -> (Option<Defaults>, Vec<Diagnostic>) {
    let mut checker = Checker::new(file);
    let text = String::from_utf8_lossy(bytes);
    let parsed = match raw::parse(&text) {
        Ok(root) => defaults::parse(&mut checker, &root),
        Err(err) => {
            checker.error_at(err.line, err.column, err.message);
            None
        }
    };
    (parsed, checker.into_diagnostics())
}

/// Validates the contents of one task file, with the defaults of its directory.
fn check_bytes_with(
    file: &Path,
    bytes: &[u8],
    defaults: &Defaults,
) -> (Vec<Checked>, Vec<Diagnostic>) {
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => {
            let valid = String::from_utf8_lossy(&bytes[..err.valid_up_to()]);
            let line = valid.matches('\n').count() + 1;
            let column = valid.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            let message = "the file is not valid UTF-8".to_owned();
            let diagnostic = Diagnostic {
                file: file.to_path_buf(),
                line,
                column,
                message,
            };
            return (Vec::new(), vec![diagnostic]);
        }
    };
    let mut checker = Checker::new(file);
    let checked = match raw::parse(text) {
        Ok(root) => {
            let checked = validate::tasks_in(&mut checker, &root, defaults);
            // Another tool's file fails on every key; one line saying what it is says more.
            if checker.count() > 0 {
                if let Some(diagnostic) = foreign::recognise(file, &root) {
                    return (Vec::new(), vec![diagnostic]);
                }
            }
            checked
        }
        Err(err) => {
            checker.error_at(err.line, err.column, err.message);
            Vec::new()
        }
    };
    (checked, checker.into_diagnostics())
}

/// The task files named by `paths`, in order, each once. Directories without any are reported.
fn task_files(
    paths: &[PathBuf],
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Vec<PathBuf>, SuiteError> {
    let mut files: Vec<PathBuf> = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|source| SuiteError::Io {
            path: path.clone(),
            source,
        })?;
        let found = if meta.is_dir() {
            let mut found = Vec::new();
            walk(path, &mut found)?;
            found.sort();
            if found.is_empty() {
                diagnostics.push(whole(
                    path,
                    "no task files (*.yaml, *.yml) in this directory",
                ));
            }
            found
        } else {
            vec![path.clone()]
        };
        for file in found {
            if !files.contains(&file) {
                files.push(file);
            }
        }
    }
    Ok(files)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), SuiteError> {
    let io = |source| SuiteError::Io {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        // `file_type` does not follow symlinks, so a symlinked directory cannot make a cycle.
        if entry.file_type().map_err(io)?.is_dir() {
            walk(&path, found)?;
        } else if is_task_file(&path) && path.is_file() {
            found.push(path);
        }
    }
    Ok(())
}

fn is_task_file(path: &Path) -> bool {
    path.extension()
        .and_then(|ext| ext.to_str())
        .is_some_and(|ext| ext.eq_ignore_ascii_case("yaml") || ext.eq_ignore_ascii_case("yml"))
}

/// A diagnostic about a whole file or directory (no position).
fn whole(path: &Path, message: &str) -> Diagnostic {
    Diagnostic {
        file: path.to_path_buf(),
        line: 0,
        column: 0,
        message: message.to_owned(),
    }
}
