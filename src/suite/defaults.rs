//! `defaults.yaml`: what the tasks of a suite directory and those below it take when they do not
//! say (`max_turns`, `set`, the judge's `host`, `setup`, `teardown`, `sampling`, `elicitation`);
//! the nearest directory's file wins.

use std::path::{Path, PathBuf};

use super::asks::{Elicitation, Sampling};
use super::call::fixture_calls;
use super::check::Checker;
use super::raw::{Node, Value};
use super::task::{FixtureCall, TaskSet};

/// The file names of a defaults file.
pub(crate) const DEFAULTS_FILES: &[&str] = &["defaults.yaml", "defaults.yml"];
const KEYS: &[&str] = &[
    "max_turns",
    "set",
    "judge",
    "setup",
    "teardown",
    "sampling",
    "elicitation",
];
const JUDGE_KEYS: &[&str] = &["host"];

/// The defaults of one directory.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Defaults {
    pub max_turns: Option<u32>,
    pub set: Option<TaskSet>,
    pub judge_host: Option<String>,
    pub setup: Option<Vec<FixtureCall>>,
    pub teardown: Option<Vec<FixtureCall>>,
    /// `sampling:` and where its host is written (`file:line:col`).
    pub sampling: Option<(Sampling, Option<String>)>,
    pub elicitation: Option<Elicitation>,
}

impl Defaults {
    /// `self` with what it leaves unset taken from `outer` (a directory further up).
    fn over(&self, outer: &Defaults) -> Defaults {
        Defaults {
            max_turns: self.max_turns.or(outer.max_turns),
            set: self.set.or(outer.set),
            judge_host: self.judge_host.clone().or_else(|| outer.judge_host.clone()),
            setup: self.setup.clone().or_else(|| outer.setup.clone()),
            teardown: self.teardown.clone().or_else(|| outer.teardown.clone()),
            sampling: self.sampling.clone().or_else(|| outer.sampling.clone()),
            elicitation: (self.elicitation.clone()).or_else(|| outer.elicitation.clone()),
        }
    }
}

/// Whether `path` is a defaults file rather than a task file.
pub(crate) fn is_defaults_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| DEFAULTS_FILES.contains(&n))
}

/// Validates a defaults file: its keys directly, or under `defaults:`.
pub(crate) fn parse(checker: &mut Checker<'_>, root: &Node) -> Option<Defaults> {
    let node = match &root.value {
        Value::Map(entries) if entries.len() == 1 => match &entries[0] {
            (k, v) if k.value == Value::Str("defaults".into()) => v,
            _ => root,
        },
        _ => root,
    };
    let before = checker.count();
    let fields = checker.fields(node, "defaults", Some(KEYS))?;
    let mut defaults = Defaults::default();
    if let Some((_, v)) = fields.get("max_turns") {
        defaults.max_turns = checker.integer(v, "max_turns", 1..=100);
    }
    if let Some((_, v)) = fields.get("set") {
        let sets = [
            ("regression", TaskSet::Regression),
            ("capability", TaskSet::Capability),
        ];
        defaults.set = checker.choice(v, "set", &sets);
    }
    if let Some((_, v)) = fields.get("judge") {
        let judge = checker.fields(v, "`judge` of the defaults", Some(JUDGE_KEYS))?;
        if let Some((_, host)) = judge.get("host") {
            defaults.judge_host = checker.non_empty_string(host, "judge.host");
        }
    }
    for (name, slot) in [
        ("setup", &mut defaults.setup),
        ("teardown", &mut defaults.teardown),
    ] {
        if let Some((_, v)) = fields.get(name) {
            *slot = fixture_calls(checker, v, name);
        }
    }
    if let Some((_, v)) = fields.get("sampling") {
        defaults.sampling = super::asks::sampling(checker, v, super::validate::sampling_host);
    }
    if let Some((_, v)) = fields.get("elicitation") {
        defaults.elicitation = super::asks::elicitation(checker, v);
    }
    (checker.count() == before).then_some(defaults)
}

/// The defaults that apply to `file`: those of its directory over those of each directory above
/// it, among `found` (directory, defaults).
pub(crate) fn for_file(file: &Path, found: &[(PathBuf, Defaults)]) -> Defaults {
    let mut applicable: Vec<&(PathBuf, Defaults)> = found
        .iter()
        .filter(|(dir, _)| file.parent().is_some_and(|p| p.starts_with(dir)))
        .collect();
    // Deepest first: the nearest directory's values win.
    applicable.sort_by_key(|(dir, _)| std::cmp::Reverse(dir.components().count()));
    applicable
        .into_iter()
        .fold(Defaults::default(), |acc, (_, d)| acc.over(d))
}
