//! `history.parquet` on disk: read it, and append to it atomically (temporary file, fsync,
//! rename) under a lock, so that neither a crash nor a second writer can corrupt it.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use polars_io::prelude::*;

use super::table::{from_frame, to_frame, HistoryRow};

/// Where `mcpeval nightly` appends and `mcpeval history` reads by default.
pub const DEFAULT_HISTORY: &str = "results/history.parquet";

/// The test-only fault hook: `MCPEVAL_FAULT=history-before-rename` kills the process after the
/// temporary file is written and before it is renamed over the history.
pub const FAULT_ENV: &str = "MCPEVAL_FAULT";
const FAULT_BEFORE_RENAME: &str = "history-before-rename";

/// Why the history could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The file exists but is not a readable history: never replaced, the user must look.
    #[error("cannot read history `{path}`: {message} (it is left as it is; move it away to start a new one)")]
    Read { path: PathBuf, message: String },
    #[error("cannot write history `{path}`")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl crate::error::Coded for HistoryError {
    fn exit(&self) -> crate::error::Exit {
        match self {
            Self::Read { .. } => crate::error::Exit::Usage,
            Self::Write { .. } => crate::error::Exit::Infra,
        }
    }
}

fn write_error(path: &Path) -> impl FnOnce(std::io::Error) -> HistoryError + '_ {
    move |source| HistoryError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// Every row of the history, oldest first; a file that does not exist is an empty history.
pub fn read(path: &Path) -> Result<Vec<HistoryRow>, HistoryError> {
    let error = |message: String| HistoryError::Read {
        path: path.to_path_buf(),
        message,
    };
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(error(e.to_string())),
    };
    let df = ParquetReader::new(file)
        .finish()
        .map_err(|e| error(format!("not a Parquet file: {e}")))?;
    from_frame(&df).map_err(|e| error(e.to_string()))
}

/// Appends `rows` to the history at `path` (created with its directory if missing): reads what
/// is there, writes everything to `history.parquet.tmp-<pid>` beside it, fsyncs it, renames it
/// over the history and fsyncs the directory. A crash at any point leaves the old history or
/// the new one, whole. Leftover temporary files of crashed writers are removed. Returns the
/// number of rows the history now holds.
pub fn append(path: &Path, rows: &[HistoryRow]) -> Result<usize, HistoryError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(write_error(path))?;
    let _lock = Lock::take(path)?;
    remove_leftovers(path);
    let mut all = read(path)?;
    if rows.is_empty() {
        return Ok(all.len());
    }
    all.extend_from_slice(rows);
    let mut df = to_frame(&all).map_err(|e| HistoryError::Write {
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    })?;
    let tmp = temp_path(path, std::process::id());
    let mut file = File::create(&tmp).map_err(write_error(&tmp))?;
    ParquetWriter::new(&mut file)
        .finish(&mut df)
        .map_err(|e| HistoryError::Write {
            path: tmp.clone(),
            source: std::io::Error::other(e.to_string()),
        })?;
    file.sync_all().map_err(write_error(&tmp))?;
    drop(file);
    if std::env::var(FAULT_ENV).as_deref() == Ok(FAULT_BEFORE_RENAME) {
        let _ = writeln!(
            std::io::stderr(),
            "{FAULT_ENV}={FAULT_BEFORE_RENAME}: killing mcpeval with `{}` written and not renamed",
            tmp.display()
        );
        // SAFETY: raise only sends a signal to this process; SIGKILL ends it at once, as a
        // crash or `kill -9` would: nothing after this line runs.
        unsafe {
            libc::raise(libc::SIGKILL);
        }
    }
    std::fs::rename(&tmp, path).map_err(write_error(path))?;
    // The rename is durable once the directory entry is.
    File::open(&dir)
        .and_then(|d| d.sync_all())
        .map_err(write_error(path))?;
    Ok(all.len())
}

/// `history.parquet.tmp-<pid>` beside the history.
fn temp_path(path: &Path, pid: u32) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{pid}"));
    path.with_file_name(name)
}

/// Removes `history.parquet.tmp-*` files: with the lock held, no writer is using one.
fn remove_leftovers(path: &Path) {
    let Some(dir) = path.parent() else { return };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = format!(
        "{}.tmp-",
        path.file_name().unwrap_or_default().to_string_lossy()
    );
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if let Some(pid) = name.strip_prefix(&prefix) {
            if pid.chars().all(|c| c.is_ascii_digit()) {
                let _ = writeln!(
                    std::io::stderr(),
                    "history: removing `{}`, left by a writer that did not finish",
                    entry.path().display()
                );
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// An exclusive `flock` on `history.parquet.lock`, held until dropped (and released by the
/// kernel if the process dies): two nightly processes append one after the other.
struct Lock(File);

impl Lock {
    fn take(path: &Path) -> Result<Self, HistoryError> {
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(".lock");
        let lock_path = path.with_file_name(name);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(write_error(&lock_path))?;
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: flock on a descriptor this function owns; blocking until the other
            // writer is done is what is wanted.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
                return Err(write_error(&lock_path)(std::io::Error::last_os_error()));
            }
        }
        Ok(Self(file))
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: unlocking the descriptor locked in `take`, which is still open.
            unsafe {
                libc::flock(self.0.as_raw_fd(), libc::LOCK_UN);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::table::tests::sample;
    use super::super::table::{CANDIDATE, DRIFT};
    use super::*;

    #[test]
    fn a_missing_history_is_empty_and_appends_accumulate_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("history.parquet");
        assert!(read(&path).unwrap().is_empty());
        let first = vec![sample("a", CANDIDATE, "t1", "no_change")];
        let second = vec![
            sample("b", CANDIDATE, "t1", "regression"),
            sample("b", DRIFT, "t1", "inconclusive"),
        ];
        assert_eq!(append(&path, &first).unwrap(), 1);
        assert_eq!(append(&path, &second).unwrap(), 3);
        let rows = read(&path).unwrap();
        assert_eq!(rows[0], first[0]);
        assert_eq!(&rows[1..], &second[..]);
        assert_eq!(append(&path, &[]).unwrap(), 3);
    }

    #[test]
    fn leftover_temporary_files_are_ignored_then_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.parquet");
        append(&path, &[sample("a", CANDIDATE, "t1", "no_change")]).unwrap();
        let leftover = temp_path(&path, 999_999);
        std::fs::write(&leftover, b"half a parquet file").unwrap();
        assert_eq!(read(&path).unwrap().len(), 1);
        append(&path, &[sample("b", CANDIDATE, "t1", "no_change")]).unwrap();
        assert!(!leftover.exists());
        assert_eq!(read(&path).unwrap().len(), 2);
    }

    #[test]
    fn an_unreadable_history_is_an_error_naming_it_and_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.parquet");
        std::fs::write(&path, b"not parquet").unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("history.parquet") && err.contains("not a Parquet file"));
        assert!(append(&path, &[sample("a", CANDIDATE, "t", "no_change")]).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"not parquet");
    }
}
