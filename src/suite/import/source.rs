//! What a converter reads: its input as a JSON tree, and the files the input names (prompt
//! files, task files of an eval), through a trait so that the converters stay pure.

use std::io;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::suite::raw::{self, Node};

/// The files an input names, relative to the input file's directory.
pub trait Sources {
    /// The text of the file at `path`.
    fn read(&self, path: &Path) -> io::Result<String>;
    /// The files a glob names (`*` and `?` within a path segment, `**` any segments), sorted.
    fn glob(&self, pattern: &str) -> io::Result<Vec<PathBuf>>;

    /// The files a `file://` reference names: those its glob matches (none if it cannot be
    /// read), or the one path.
    fn files(&self, path: &str) -> Vec<PathBuf> {
        if path.contains('*') {
            self.glob(path).unwrap_or_default()
        } else {
            vec![path.into()]
        }
    }
}

/// Why an input is not the format it was said to be, or cannot be read as one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BadInput {
    /// Where, when known (1-based line and column).
    pub at: Option<(usize, usize)>,
    pub message: String,
}

impl BadInput {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            at: None,
            message: message.into(),
        }
    }
}

/// Parses YAML (or JSON) into a JSON tree; keys that are not strings are written as text.
pub fn parse(text: &str) -> Result<Value, BadInput> {
    raw::parse(text)
        .map(|root| json(&root))
        .map_err(|err| BadInput {
            at: Some((err.line, err.column)),
            message: err.message,
        })
}

fn json(node: &Node) -> Value {
    use raw::Value as Y;
    match &node.value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(*b),
        Y::Int(n) => Value::from(*n),
        Y::UInt(n) => Value::from(*n),
        Y::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        Y::Str(s) => Value::String(s.clone()),
        Y::Seq(items) => Value::Array(items.iter().map(json).collect()),
        Y::Map(entries) => {
            let mut object = serde_json::Map::new();
            for (key, value) in entries {
                let key = match json(key) {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                object.insert(key, json(value));
            }
            Value::Object(object)
        }
    }
}

/// The files next to an input file on disk.
pub struct Dir(pub PathBuf);

impl Sources for Dir {
    fn read(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(self.0.join(path))
    }

    fn glob(&self, pattern: &str) -> io::Result<Vec<PathBuf>> {
        let mut found = vec![PathBuf::new()];
        let parts: Vec<&str> = pattern.split('/').collect();
        for (i, part) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            let mut next = Vec::new();
            for base in &found {
                let dir = self.0.join(base);
                if *part == "**" {
                    next.push(base.clone());
                    descendants(&dir, base, &mut next)?;
                } else if part.contains(['*', '?']) {
                    if !dir.is_dir() {
                        continue;
                    }
                    for entry in std::fs::read_dir(&dir)? {
                        let name = entry?.file_name().to_string_lossy().into_owned();
                        if !name.starts_with('.') && wildcard(part, &name) {
                            next.push(base.join(name));
                        }
                    }
                } else if part.is_empty() && i == 0 {
                    next.push(PathBuf::from("/"));
                } else {
                    next.push(base.join(part));
                }
            }
            if last {
                next.retain(|p| self.0.join(p).is_file());
            }
            found = next;
        }
        found.sort();
        found.dedup();
        Ok(found)
    }
}

/// Every directory below `dir` (its path from the input's directory: `base/...`).
fn descendants(dir: &Path, base: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') || !entry.file_type()?.is_dir() {
            continue;
        }
        let rel = base.join(&name);
        out.push(rel.clone());
        descendants(&entry.path(), &rel, out)?;
    }
    Ok(())
}

/// Whether `name` matches the glob segment `pattern` (`*` any run, `?` one character).
pub fn wildcard(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// `dir/rel` with `.` and `a/..` folded, for naming files of an input in messages and for
/// reading a path named relative to another file.
pub fn join(dir: &Path, rel: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for part in dir.join(rel).components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_within_a_segment() {
        assert!(wildcard("*.yaml", "task.yaml"));
        assert!(wildcard("t?sk*", "task.yaml"));
        assert!(!wildcard("*.yaml", "task.yml"));
        assert!(wildcard("*", ""));
    }

    #[test]
    fn globs_find_files_relative_to_the_input() {
        let dir = tempfile::tempdir().unwrap();
        for rel in [
            "tasks/a/a.yaml",
            "tasks/b/b.yaml",
            "tasks/b/notes.md",
            "tasks/c.yaml",
        ] {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        let evals = dir.path().join("evals");
        std::fs::create_dir_all(&evals).unwrap();
        let sources = Dir(evals);
        let found = sources.glob("../tasks/*/*.yaml").unwrap();
        assert_eq!(
            found,
            [
                PathBuf::from("../tasks/a/a.yaml"),
                PathBuf::from("../tasks/b/b.yaml")
            ]
        );
        assert_eq!(sources.glob("../tasks/**/*.yaml").unwrap().len(), 3);
        assert_eq!(sources.read(Path::new("../tasks/c.yaml")).unwrap(), "x");
    }

    #[test]
    fn paths_join_without_dot_segments() {
        assert_eq!(
            join(Path::new("evals"), "../tasks/a.yaml"),
            PathBuf::from("tasks/a.yaml")
        );
        assert_eq!(
            join(Path::new("a/b"), "./c.txt"),
            PathBuf::from("a/b/c.txt")
        );
        assert_eq!(join(Path::new(""), "../x"), PathBuf::from("../x"));
    }

    #[test]
    fn bad_yaml_has_a_position() {
        let err = parse("a: [b\n").unwrap_err();
        assert!(err.at.is_some());
        assert!(err.message.starts_with("invalid YAML"), "{}", err.message);
        assert_eq!(
            parse("a: 1\nb: yes\n").unwrap(),
            serde_json::json!({"a": 1, "b": "yes"})
        );
    }
}
