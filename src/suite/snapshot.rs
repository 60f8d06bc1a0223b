//! Snapshots of call tasks' answers (`result_snapshot`): where a task's stored answer lives
//! (`__snapshots__/<task file stem>/<name>.txt` beside the task file) and reading it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The folder, beside a task file, that holds the snapshots of its tasks.
pub const SNAPSHOTS_DIR: &str = "__snapshots__";

/// `result_snapshot: true` (named after the task) or `result_snapshot: NAME`: the answer's text
/// must equal a stored file, which only `mcpeval run --update-snapshots` writes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SnapshotRef {
    /// The snapshot's name: the task's id, or the name given.
    pub name: String,
    /// The file: `__snapshots__/<task file stem>/<name>.txt` beside the task file.
    #[serde(skip)]
    pub file: PathBuf,
    /// Where `result_snapshot` is written in the task file (line, column).
    #[serde(skip)]
    pub at: (usize, usize),
    /// What the file held when the suite was loaded.
    #[serde(skip)]
    pub stored: Stored,
}

/// A snapshot's stored text, as the run compares with it.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Stored {
    /// No file yet: a normal run refuses to start.
    #[default]
    Missing,
    Text(String),
    /// This run writes it (`--update-snapshots`): nothing is compared.
    Updating,
}

/// The snapshot file of `name` for a task of `task_file`.
pub fn snapshot_file(task_file: &Path, name: &str) -> PathBuf {
    let stem = task_file
        .file_stem()
        .map_or_else(|| "tasks".into(), |s| s.to_string_lossy().into_owned());
    let dir = task_file.parent().unwrap_or_else(|| Path::new(""));
    dir.join(SNAPSHOTS_DIR)
        .join(stem)
        .join(format!("{name}.txt"))
}

/// Fills in a snapshot reference of task `id` in `task_file`: its name (the task's id unless
/// one was given), its file and what the file holds. `Err`: the file exists but cannot be read.
pub(crate) fn attach(
    snapshot: &mut SnapshotRef,
    task_file: &Path,
    id: &str,
) -> std::io::Result<()> {
    if snapshot.name.is_empty() {
        snapshot.name = id.to_owned();
    }
    snapshot.file = snapshot_file(task_file, &snapshot.name);
    snapshot.stored = match std::fs::read_to_string(&snapshot.file) {
        Ok(text) => Stored::Text(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Stored::Missing,
        Err(e) => return Err(e),
    };
    Ok(())
}

/// Whether `name` can name a snapshot file: letters, digits, `.`, `_` and `-`, not starting
/// with a dot.
pub(crate) fn is_file_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_live_beside_the_task_file_under_its_stem() {
        let file = snapshot_file(Path::new("tasks/api/calls.yaml"), "get-issue");
        assert_eq!(
            file,
            Path::new("tasks/api/__snapshots__/calls/get-issue.txt")
        );
    }

    #[test]
    fn names_are_plain_file_names() {
        assert!(is_file_name("get-issue.v2"));
        assert!(!is_file_name("../x"));
        assert!(!is_file_name(".hidden"));
        assert!(!is_file_name("a/b"));
        assert!(!is_file_name(""));
    }

    #[test]
    fn a_missing_file_is_missing_and_a_present_one_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let task_file = dir.path().join("calls.yaml");
        let mut snapshot = SnapshotRef::default();
        attach(&mut snapshot, &task_file, "t").unwrap();
        assert_eq!(snapshot.name, "t");
        assert_eq!(snapshot.stored, Stored::Missing);
        std::fs::create_dir_all(snapshot.file.parent().unwrap()).unwrap();
        std::fs::write(&snapshot.file, "hello\n").unwrap();
        attach(&mut snapshot, &task_file, "t").unwrap();
        assert_eq!(snapshot.stored, Stored::Text("hello\n".into()));
    }
}
