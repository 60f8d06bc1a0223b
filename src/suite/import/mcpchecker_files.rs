//! The files of an mcpchecker eval's task sets: the files a set's `path` or `glob` names, and
//! which of them are mcpchecker tasks. A file that is not one (another `kind`, a Kubernetes
//! manifest of several documents, text that is not YAML) is skipped with a note, as mcpchecker
//! skips it (pkg/eval/runner.go, `collectTaskConfigs`); a task that cannot be read is refused.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::source::{parse, BadInput, Sources};

/// The files a task set names (`path`, or the files its `glob` matches); `None` for a set
/// that names none (a `source`), said in `notes`.
pub(super) fn set_files(
    set: &Map<String, Value>,
    place: &str,
    sources: &dyn Sources,
    notes: &mut Vec<String>,
) -> Result<Option<Vec<PathBuf>>, BadInput> {
    if let Some(path) = set.get("path").and_then(Value::as_str) {
        return Ok(Some(vec![PathBuf::from(path)]));
    }
    if let Some(glob) = set.get("glob").and_then(Value::as_str) {
        let files = sources.glob(glob).map_err(|e| {
            BadInput::new(format!("{place}: cannot list the files of `{glob}`: {e}"))
        })?;
        if files.is_empty() {
            notes.push(format!("{place}: `{glob}` names no file"));
        }
        return Ok(Some(files));
    }
    let what = match set.get("source") {
        Some(source) => format!("tasks from the source {source}"),
        None => "no `path` or `glob`".to_owned(),
    };
    notes.push(format!(
        "{place}: {what}: not converted (import the task files themselves)"
    ));
    Ok(None)
}

/// The task in a file a set's `by` (`path` or `glob`) names; `None` for a file that is not an
/// mcpchecker task, skipped with a note.
pub(super) fn read_task(
    path: &Path,
    place: &str,
    by: &str,
    sources: &dyn Sources,
    notes: &mut Vec<String>,
) -> Result<Option<Map<String, Value>>, BadInput> {
    let shown = path.display().to_string();
    let text = sources
        .read(path)
        .map_err(|e| BadInput::new(format!("{place}: cannot read the task file `{shown}`: {e}")))?;
    match task_file(&text) {
        Ok(TaskFile::Task(object)) => Ok(Some(object)),
        Ok(TaskFile::Other(what)) => {
            notes.push(format!(
                "skipped `{shown}`, which the {by} of {place} matches: not an mcpchecker task \
                 ({what}; mcpchecker skips it too)"
            ));
            Ok(None)
        }
        Err(e) => {
            let at = e.at.map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default();
            Err(BadInput::new(format!(
                "{place}: task file `{shown}`{at}: {}",
                e.message
            )))
        }
    }
}

/// A file a task set names: an mcpchecker task, or another file (what it is).
enum TaskFile {
    Task(Map<String, Value>),
    Other(String),
}

/// Reads a file a task set names. A file of another `kind`, of none, of several YAML
/// documents none of which is a task (a Kubernetes manifest), or that is not YAML and does not
/// say `kind: Task` is another file, as mcpchecker skips it; a task that cannot be read is
/// refused.
fn task_file(text: &str) -> Result<TaskFile, BadInput> {
    let kind = |v: &Value| v.get("kind").and_then(Value::as_str).map(str::to_owned);
    let err = match parse(text) {
        Ok(root) => {
            return match (root.as_object(), kind(&root)) {
                (Some(object), Some(k)) if k == "Task" => {
                    let version = object.get("apiVersion").and_then(Value::as_str);
                    match version {
                        None | Some("mcpchecker/v1alpha1" | "mcpchecker/v1alpha2") => {
                            Ok(TaskFile::Task(object.clone()))
                        }
                        Some(other) => Err(BadInput::new(format!(
                            "an mcpchecker task of the unknown `apiVersion: {other}` (mcpchecker \
                             reads `mcpchecker/v1alpha1` and `mcpchecker/v1alpha2`)"
                        ))),
                    }
                }
                (Some(_), Some(k)) => Ok(TaskFile::Other(format!("`kind: {k}`"))),
                (Some(_), None) => Ok(TaskFile::Other("no `kind`".to_owned())),
                (None, _) => Ok(TaskFile::Other("not a mapping".to_owned())),
            }
        }
        Err(err) => err,
    };
    if let Ok(docs) = serde_saphyr::from_multiple::<Value>(text) {
        if docs.len() > 1 {
            let kinds: Vec<String> = docs
                .iter()
                .map(|d| kind(d).map_or_else(|| "no `kind`".to_owned(), |k| format!("`kind: {k}`")))
                .collect();
            if kinds.iter().any(|k| k == "`kind: Task`") {
                return Err(BadInput {
                    at: err.at,
                    message: format!(
                        "an mcpchecker task among {} YAML documents (a task file holds one task)",
                        docs.len()
                    ),
                });
            }
            return Ok(TaskFile::Other(format!(
                "{} YAML documents: {}",
                docs.len(),
                kinds.join(", ")
            )));
        }
    }
    let says_task = text.lines().any(|line| {
        let line = line.trim_end();
        line.strip_prefix("kind:")
            .is_some_and(|k| k.trim().trim_matches(['"', '\'']) == "Task")
    });
    if says_task {
        return Err(err);
    }
    let at = err
        .at
        .map(|(l, c)| format!("{l}:{c}: "))
        .unwrap_or_default();
    Ok(TaskFile::Other(format!("{at}{}", err.message)))
}
