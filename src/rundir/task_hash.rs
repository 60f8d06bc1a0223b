//! The hashes of each task's definition that `run.json` keeps (`task_hashes`, and one per part
//! in `task_part_hashes`), so that `mcpeval compare RUN --against RUN2` can tell when two runs
//! ran different tasks under one id, and which parts of them differ.

use std::collections::BTreeMap;

use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64;

use super::shard::write_canonical;
use crate::suite::Task;

/// The hash of a task's definition (16 hex digits of xxh3 over its canonical JSON: keys sorted,
/// without `id` and the file it came from, empty and unset values left out) and of each of its
/// top-level parts (`prompt`, `expect`, `call`, …; 8 hex digits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskHash {
    pub whole: String,
    pub parts: BTreeMap<String, String>,
}

/// The hashes of `task`'s definition.
pub fn task_hash(task: &Task) -> TaskHash {
    let mut value = serde_json::to_value(task).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.remove("id");
        map.remove("source");
        // A `false` at the top (a flag a newer mcpeval adds with a default) means the same as
        // no key, so a task hashes alike across versions that differ only by such a flag.
        map.retain(|_, v| *v != Value::Bool(false));
    }
    let value = without_empty(value);
    let hash = |v: &Value| {
        let mut text = String::new();
        write_canonical(v, &mut text);
        xxh3_64(text.as_bytes())
    };
    let parts = match &value {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| (k.clone(), format!("{:08x}", hash(v) >> 32)))
            .collect(),
        _ => BTreeMap::new(),
    };
    TaskHash {
        whole: format!("{:016x}", hash(&value)),
        parts,
    }
}

/// `value` with unset (`null`) values and empty lists and objects left out of every object:
/// an empty list of checks means what no list means.
fn without_empty(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, without_empty(v)))
                .filter(|(_, v)| !is_empty(v))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_empty).collect()),
        other => other,
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

/// `run.json`'s `task_hashes` and `task_part_hashes` of `tasks`.
pub fn task_hashes(tasks: &[Task]) -> (TaskHashes, BTreeMap<String, TaskHashes>) {
    let (mut wholes, mut parts) = (BTreeMap::new(), BTreeMap::new());
    for task in tasks {
        let hash = task_hash(task);
        wholes.insert(task.id.clone(), hash.whole);
        parts.insert(task.id.clone(), hash.parts);
    }
    (wholes, parts)
}

/// Hex hashes by name (a task id, or a part of a task).
pub type TaskHashes = BTreeMap<String, String>;

/// How the definition of one task differs between two runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedTask {
    pub id: String,
    /// The parts whose hashes differ or that only one run's task has; empty when the runs did
    /// not record parts.
    pub parts: Vec<String>,
}

/// The tasks both runs hold whose definitions differ, in id order. `None` when either run
/// recorded no hashes (made by an mcpeval before they were recorded).
pub fn changed_tasks(ours: &super::RunInfo, theirs: &super::RunInfo) -> Option<Vec<ChangedTask>> {
    if ours.task_hashes.is_empty() || theirs.task_hashes.is_empty() {
        return None;
    }
    let no_parts = BTreeMap::new();
    let parts_of = |info: &super::RunInfo, id: &str| {
        info.task_part_hashes
            .get(id)
            .cloned()
            .unwrap_or_else(|| no_parts.clone())
    };
    let mut changed = Vec::new();
    for (id, hash) in &ours.task_hashes {
        match theirs.task_hashes.get(id) {
            Some(other) if other != hash => {
                let (a, b) = (parts_of(ours, id), parts_of(theirs, id));
                let mut parts: Vec<String> = a
                    .keys()
                    .chain(b.keys())
                    .filter(|k| a.get(*k) != b.get(*k))
                    .cloned()
                    .collect();
                parts.sort();
                parts.dedup();
                changed.push(ChangedTask {
                    id: id.clone(),
                    parts,
                });
            }
            _ => {}
        }
    }
    Some(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(prompt: &str) -> Task {
        let yaml = format!(
            "- id: t\n  prompt: {prompt:?}\n  expect:\n    calls: [{{tool: get_issue, args: {{id: 3}}}}]\n"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.yaml");
        std::fs::write(&path, yaml).unwrap();
        crate::suite::load_suite(&[path]).unwrap().tasks.remove(0)
    }

    #[test]
    fn the_hash_follows_the_definition_not_where_it_was_written() {
        let a = task("Show issue 3");
        let mut moved = a.clone();
        moved.source = "elsewhere.yaml:40".into();
        assert_eq!(task_hash(&a), task_hash(&moved));
        let b = task("Show issue 4");
        let (ha, hb) = (task_hash(&a), task_hash(&b));
        assert_ne!(ha.whole, hb.whole);
        assert_eq!(ha.whole.len(), 16);
        let differing: Vec<&String> = ha
            .parts
            .keys()
            .filter(|k| ha.parts.get(*k) != hb.parts.get(*k))
            .collect();
        assert_eq!(differing, ["prompt"]);
    }

    #[test]
    fn an_expectation_changed_is_a_changed_part() {
        let a = task("Show issue 3");
        let mut b = a.clone();
        b.expect.forbidden_tools.push("delete_issue".into());
        let (ha, hb) = (task_hash(&a), task_hash(&b));
        assert_ne!(ha.whole, hb.whole);
        assert_ne!(ha.parts["expect"], hb.parts["expect"]);
        assert_eq!(ha.parts["prompt"], hb.parts["prompt"]);
    }

    #[test]
    fn runs_without_hashes_cannot_be_compared_and_changes_name_their_parts() {
        let mut ours = crate::test_support::sample_info();
        let mut theirs = ours.clone();
        assert_eq!(changed_tasks(&ours, &theirs), None);
        for (info, prompt) in [(&mut ours, "Show issue 3"), (&mut theirs, "Show issue 4")] {
            let h = task_hash(&task(prompt));
            info.task_hashes.insert("t".into(), h.whole);
            info.task_part_hashes.insert("t".into(), h.parts);
            let same = task_hash(&task("Same"));
            info.task_hashes.insert("u".into(), same.whole);
        }
        let changed = changed_tasks(&ours, &theirs).unwrap();
        assert_eq!(
            changed,
            [ChangedTask {
                id: "t".into(),
                parts: vec!["prompt".into()]
            }]
        );
    }
}
