//! Reading a cassette: every line checked for its shape, every problem named by `file:line`.
//!
//! Reading only parses JSON into data: nothing a cassette holds is run or evaluated.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::format::{
    Cassette, Entry, Handshake, HandshakeLine, Header, ListKind, ListLine, VERSION,
};

/// Why a cassette cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CassetteError {
    #[error("cannot read cassette {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write cassette {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}:{line}: not JSON: {reason}")]
    NotJson {
        file: String,
        line: usize,
        reason: String,
    },
    #[error(
        "{file}:{line}: cassette version {found} is not supported (this mcpeval reads version \
         {VERSION})"
    )]
    Version {
        file: String,
        line: usize,
        found: String,
    },
    #[error("{file}:{line}: {what}")]
    Shape {
        file: String,
        line: usize,
        what: String,
    },
}

impl Cassette {
    /// Reads and checks the cassette at `path`.
    pub fn read(path: &Path) -> Result<Self, CassetteError> {
        let text = std::fs::read_to_string(path).map_err(|source| CassetteError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Writes the cassette to `path` (through a temporary file beside it, so a reader never
    /// sees half of one).
    pub fn write(&self, path: &Path) -> Result<(), CassetteError> {
        let error = |source| CassetteError::Write {
            path: path.to_path_buf(),
            source,
        };
        let partial = path.with_extension("jsonl.partial");
        std::fs::write(&partial, self.to_jsonl()).map_err(error)?;
        std::fs::rename(&partial, path).map_err(error)
    }

    /// Parses a cassette's text; `file` names it in errors. Blank lines are skipped.
    pub fn parse(text: &str, file: &str) -> Result<Self, CassetteError> {
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, line)| (i + 1, line))
            .filter(|(_, line)| !line.trim().is_empty());
        let shape = |line: usize, what: String| CassetteError::Shape {
            file: file.to_owned(),
            line,
            what,
        };
        let Some((first, header)) = lines.next() else {
            return Err(shape(1, "empty: no cassette header".into()));
        };
        let header: Header = header_line(file, first, header)?;
        let mut cassette = Cassette::new(header.server.clone(), header.recorded_at.clone());
        cassette.header = header;
        let mut seen_lists: HashMap<ListKind, usize> = HashMap::new();
        let mut seen_requests: HashMap<String, usize> = HashMap::new();
        let mut handshake_at: Option<usize> = None;
        for (n, line) in lines {
            let value = json(file, n, line)?;
            let Some(kind) = ["handshake", "list", "request"]
                .into_iter()
                .find(|k| value.get(k).is_some())
            else {
                let what = "not a cassette line (expected a `handshake`, `list` or `request` line)";
                return Err(shape(n, what.into()));
            };
            match kind {
                "handshake" => {
                    if let Some(at) = handshake_at.replace(n) {
                        return Err(shape(
                            n,
                            format!("a second handshake line (the first: line {at})"),
                        ));
                    }
                    let line: HandshakeLine = typed(file, n, value, "handshake")?;
                    cassette.handshake = line.handshake;
                }
                "list" => {
                    let line: ListLine = typed(file, n, value, "list")?;
                    if let Some(at) = seen_lists.insert(line.list, n) {
                        let what =
                            format!("a second `{:?}` list (the first: line {at})", line.list);
                        return Err(shape(n, what.to_lowercase()));
                    }
                    cassette.lists.insert(line.list, line.items);
                }
                _ => {
                    let entry: Entry = typed(file, n, value, "request")?;
                    if let Some(problem) = entry.request.problem() {
                        return Err(shape(n, problem));
                    }
                    if entry.answers.is_empty() {
                        return Err(shape(n, "a request line with no answer".into()));
                    }
                    if let Some(at) = seen_requests.insert(entry.request.key(), n) {
                        let what = format!("this request is already recorded at line {at}");
                        return Err(shape(n, what));
                    }
                    cassette.entries.push(entry);
                }
            }
        }
        if handshake_at.is_none() {
            cassette.handshake = Handshake::default();
        }
        cassette.normalize();
        Ok(cassette)
    }
}

/// Line 1: the header, its version checked before anything else about it.
fn header_line(file: &str, n: usize, line: &str) -> Result<Header, CassetteError> {
    let value = json(file, n, line)?;
    match value.get("cassette") {
        Some(Value::Number(v)) if v.as_u64() == Some(VERSION) => typed(file, n, value, "header"),
        Some(found) => Err(CassetteError::Version {
            file: file.to_owned(),
            line: n,
            found: found.to_string(),
        }),
        None => Err(CassetteError::Shape {
            file: file.to_owned(),
            line: n,
            what: "the first line is not a cassette header (`{\"cassette\": 1, …}`)".into(),
        }),
    }
}

fn json(file: &str, line: usize, text: &str) -> Result<Value, CassetteError> {
    serde_json::from_str(text).map_err(|e| CassetteError::NotJson {
        file: file.to_owned(),
        line,
        reason: e.to_string(),
    })
}

/// `value` as a `T`, or an error that names the line and what kind of line it claimed to be.
fn typed<T: DeserializeOwned>(
    file: &str,
    line: usize,
    value: Value,
    kind: &str,
) -> Result<T, CassetteError> {
    serde_json::from_value(value).map_err(|e| CassetteError::Shape {
        file: file.to_owned(),
        line,
        what: format!("not a valid {kind} line: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::format::{Answer, Request, ServerFacts};
    use super::*;

    fn sample() -> String {
        let mut cassette = Cassette::new(
            ServerFacts {
                name: "demo".into(),
                version: "1.4.0".into(),
                protocol: "2025-11-25".into(),
            },
            "2026-01-01T00:00:00Z".into(),
        );
        cassette.handshake.instructions = Some("be nice".into());
        cassette
            .lists
            .insert(ListKind::Tools, vec![json!({"name": "get"})]);
        cassette.entries.push(Entry {
            request: Request::tool("get", json!({"id": 1}).as_object().cloned()),
            answers: vec![
                Answer::Result(json!({"content": []})),
                Answer::tool_error("gone"),
            ],
        });
        cassette.entries.push(Entry {
            request: Request::resource("demo://x"),
            answers: vec![Answer::Error(super::super::format::ErrorAnswer {
                code: -32002,
                message: "not found".into(),
                data: None,
            })],
        });
        cassette.normalize();
        cassette.to_jsonl()
    }

    #[test]
    fn a_written_cassette_reads_back_the_same() {
        let text = sample();
        let cassette = Cassette::parse(&text, "c.jsonl").unwrap();
        assert_eq!(cassette.to_jsonl(), text);
        assert_eq!((cassette.entries.len(), cassette.answers()), (2, 3));
        assert_eq!(cassette.handshake.instructions.as_deref(), Some("be nice"));
    }

    fn error(text: &str) -> String {
        Cassette::parse(text, "c.jsonl").unwrap_err().to_string()
    }

    #[test]
    fn bad_versions_and_lines_are_named_by_file_and_line() {
        let good = sample();
        assert!(good.starts_with(r#"{"cassette":1,"#));
        let v2 = good.replacen(r#"{"cassette":1"#, r#"{"cassette":2"#, 1);
        assert_eq!(
            error(&v2),
            "c.jsonl:1: cassette version 2 is not supported (this mcpeval reads version 1)"
        );
        let mut lines: Vec<String> = good.lines().map(str::to_owned).collect();
        lines[3] = "{not json".into();
        assert!(error(&lines.join("\n")).starts_with("c.jsonl:4: not JSON: "));
        lines[3] = r#"{"answers": []}"#.into();
        assert!(error(&lines.join("\n")).starts_with("c.jsonl:4: not a cassette line"));
        lines[3] = r#"{"list": "tools", "items": [], "extra": 1}"#.into();
        assert!(error(&lines.join("\n")).starts_with("c.jsonl:4: not a valid list line"));
        lines[3] = r#"{"request": {"method": "tools/call"}, "answers": [{"result": {}}]}"#.into();
        assert_eq!(
            error(&lines.join("\n")),
            "c.jsonl:4: a tools/call request needs a `name`"
        );
        lines[3] = r#"{"request": {"method": "tools/call", "name": "x"}, "answers": []}"#.into();
        assert_eq!(
            error(&lines.join("\n")),
            "c.jsonl:4: a request line with no answer"
        );
        let last = lines.last().unwrap().clone();
        lines[3] = last;
        assert!(error(&lines.join("\n")).contains("already recorded at line 4"));
        assert_eq!(error(""), "c.jsonl:1: empty: no cassette header");
        assert!(error("{\"list\": \"tools\"}").starts_with("c.jsonl:1: the first line is not"));
    }
}
