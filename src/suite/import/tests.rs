//! A test double for the converters' tests: the files an input names, held in memory.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use super::source::{wildcard, Sources};

/// Files by their path from the input's directory.
pub(super) struct Files(pub HashMap<PathBuf, String>);

impl Files {
    pub fn new(entries: &[(&str, &str)]) -> Self {
        Self(
            entries
                .iter()
                .map(|(path, text)| (PathBuf::from(path), (*text).to_owned()))
                .collect(),
        )
    }
}

impl Sources for Files {
    fn read(&self, path: &Path) -> io::Result<String> {
        self.0
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))
    }

    /// The files whose path matches segment by segment (no `**`).
    fn glob(&self, pattern: &str) -> io::Result<Vec<PathBuf>> {
        let wanted: Vec<&str> = pattern.split('/').collect();
        let mut found: Vec<PathBuf> = self
            .0
            .keys()
            .filter(|path| {
                let path = path.to_string_lossy();
                let parts: Vec<&str> = path.split('/').collect();
                parts.len() == wanted.len()
                    && wanted.iter().zip(&parts).all(|(w, p)| wildcard(w, p))
            })
            .cloned()
            .collect();
        found.sort();
        Ok(found)
    }
}
