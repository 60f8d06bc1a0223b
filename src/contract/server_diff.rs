//! The diff of what `server.json` and `errors.json` record: instructions, capabilities, the
//! protocol versions accepted in each era, and the answers to the error probes, each compared
//! like with like (an era with the same era, an empty capability container as nothing).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::diff::{array, present, Pair};
use super::eras::FIRST_MODERN_VERSION;
use super::model::{Change, ChangeKind as K};

/// Capabilities whose value is a map of named capabilities: empty, they offer nothing. (Any other
/// capability, `logging: {}` or `tools: {}`, is offered by being there.)
const CONTAINERS: [&str; 2] = ["experimental", "extensions"];

/// The two protocol eras, oldest first.
const ERAS: [&str; 2] = ["legacy", "modern"];

/// The probe whose answer depends on the era it is made in.
const VERSION_PROBE: &str = "unsupported_protocol_version";

pub(super) fn diff_server(b: &Value, a: &Value, out: &mut Vec<Change>) {
    let server = Pair::new("server", "instructions", b, a);
    let unplaced = |c: Change| Change { path: None, ..c };
    out.extend(
        server
            .field(K::InstructionsChanged, "instructions")
            .map(unplaced),
    );
    let capabilities = |s: &Value| present(s, "capabilities").cloned().unwrap_or_default();
    diff_capabilities(&capabilities(b), &capabilities(a), "", out);
    diff_versions(b, a, out);
}

/// Walks `capabilities`: a key (or `true`, or an array element) there before and gone after is
/// removed; the reverse is added; any other changed value is reported as removed, to be safe.
/// An empty container (`experimental: {}`) removed offers nothing: `EmptyCapabilityRemoved`.
fn diff_capabilities(b: &Value, a: &Value, path: &str, out: &mut Vec<Change>) {
    let on = |v: &Value| !matches!(v, Value::Null | Value::Bool(false));
    let shown = |v: &Value| Some(v.clone()).filter(|v| !v.is_null());
    let change = |kind, note: Option<String>| {
        let change = Change::new("server", "capabilities", kind).values(shown(b), shown(a));
        let change = if path.is_empty() {
            change
        } else {
            change.at(path)
        };
        Change { note, ..change }
    };
    let list = |from: &[Value], without: &[Value]| {
        let left: Vec<String> = from
            .iter()
            .filter(|v| !without.contains(v))
            .map(Value::to_string)
            .collect();
        (!left.is_empty()).then(|| left.join(", "))
    };
    let empty_container =
        |v: &Value| CONTAINERS.contains(&path) && v.as_object().is_some_and(|m| m.is_empty());
    match (b, a) {
        _ if b == a => {}
        (Value::Object(bm), Value::Object(am)) => {
            for key in bm.keys().chain(am.keys()).collect::<BTreeSet<_>>() {
                let at = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                let null = Value::Null;
                let (bv, av) = (bm.get(key).unwrap_or(&null), am.get(key).unwrap_or(&null));
                diff_capabilities(bv, av, &at, out);
            }
        }
        (Value::Array(bv), Value::Array(av)) => match (list(bv, av), list(av, bv)) {
            (Some(gone), _) => out.push(change(
                K::CapabilityRemoved,
                Some(format!("{gone} removed")),
            )),
            (None, Some(new)) => out.push(change(K::CapabilityAdded, Some(format!("{new} added")))),
            (None, None) => {}
        },
        _ if empty_container(b) && !on(a) => out.push(change(
            K::EmptyCapabilityRemoved,
            Some(format!("`{path}` was empty: it offered nothing")),
        )),
        _ if on(b) && !on(a) => out.push(change(K::CapabilityRemoved, None)),
        _ if !on(b) && on(a) => out.push(change(K::CapabilityAdded, None)),
        _ if on(b) => out.push(change(
            K::CapabilityRemoved,
            Some(format!("value {b} → {a}")),
        )),
        _ => {}
    }
}

fn is_legacy(version: &str) -> bool {
    version < FIRST_MODERN_VERSION
}

/// The versions a server supports: `supportedVersions`, else the one `protocolVersion`.
fn listed_versions(server: &Value) -> BTreeSet<&str> {
    let mut out: BTreeSet<&str> = array(server, "supportedVersions")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if out.is_empty() {
        out.extend(present(server, "protocolVersion").and_then(Value::as_str));
    }
    out
}

/// What one side records each era accepts; `None` for an era it does not record.
struct Eras<'a> {
    legacy: Option<BTreeSet<&'a str>>,
    modern: Option<BTreeSet<&'a str>>,
}

impl<'a> Eras<'a> {
    /// `acceptedVersions` when the snapshot has it. An older mcpeval snapshot records only its
    /// session's era (`protocolEra`), in `supportedVersions`; a `server.json` without either (a
    /// hand-written one) is taken as listing every version it supports, each in its era by date.
    fn of(server: &'a Value) -> Self {
        let strings = |v: &'a Value| v.as_array().map(|l| l.iter().filter_map(Value::as_str));
        if let Some(accepted) = present(server, "acceptedVersions") {
            let era = |e: &str| accepted.get(e).and_then(strings).map(Iterator::collect);
            return Self {
                legacy: era("legacy"),
                modern: era("modern"),
            };
        }
        let listed = listed_versions(server);
        let (legacy, modern): (BTreeSet<&str>, BTreeSet<&str>) =
            listed.into_iter().partition(|v| is_legacy(v));
        match present(server, "protocolEra").and_then(Value::as_str) {
            Some("legacy") => Self {
                legacy: Some(legacy),
                modern: None,
            },
            Some("modern") => Self {
                legacy: None,
                modern: Some(modern),
            },
            _ => Self {
                legacy: Some(legacy),
                modern: Some(modern),
            },
        }
    }

    fn era(&self, era: &str) -> Option<&BTreeSet<&'a str>> {
        match era {
            "legacy" => self.legacy.as_ref(),
            _ => self.modern.as_ref(),
        }
    }
}

/// The versions accepted in each era, compared era by era: one the baseline accepted in an era
/// and the candidate refuses in it is dropped (breaking); one the candidate newly accepts,
/// whichever era, is added. An era one side does not record (a snapshot from before
/// `acceptedVersions`) is not compared, and says so in one informational row.
fn diff_versions(b: &Value, a: &Value, out: &mut Vec<Change>) {
    let (before, after) = (Eras::of(b), Eras::of(a));
    let change = |kind, era: &str| Change::new("server", "acceptedVersions", kind).at(era);
    let list = |set: Option<&BTreeSet<&str>>| set.map(|s| json!(s));
    for era in ERAS {
        let (was, is) = match (before.era(era), after.era(era)) {
            (Some(was), Some(is)) => (was, is),
            (None, None) => continue,
            (was, is) => {
                if was.or(is).is_some_and(|s| !s.is_empty()) {
                    let note = not_compared(era, was.is_none());
                    let row = change(K::ProtocolVersionsNotCompared, era);
                    out.push(row.values(list(was), list(is)).note(note));
                }
                continue;
            }
        };
        for version in was.difference(is) {
            let dropped = change(K::ProtocolVersionDropped, era).values(Some(json!(version)), None);
            let note = match (era, is.is_empty()) {
                ("legacy", true) => "drops every legacy version: breaks every legacy client".into(),
                (_, true) => format!("no longer speaks the {era} era"),
                _ => format!("refused in the {era} era"),
            };
            out.push(dropped.note(note));
        }
        for version in is.difference(was) {
            let added = change(K::ProtocolVersionAdded, era).values(None, Some(json!(version)));
            let note = match was.is_empty() {
                true => format!("now speaks the {era} era"),
                false => format!("accepted in the {era} era"),
            };
            out.push(added.note(note));
        }
    }
}

fn not_compared(era: &str, baseline_lacks: bool) -> String {
    let (side, other) = match baseline_lacks {
        true => ("baseline", "candidate"),
        false => ("candidate", "baseline"),
    };
    format!(
        "the {side}'s snapshot does not record the {era} era (it predates `acceptedVersions`), so \
         the {other}'s {era} versions are not compared; snapshot both sides again to compare \
         both eras"
    )
}

/// The era a probe was made in: its `era`; else (an older snapshot) the unsupported-version
/// probe's from its request (`initialize` is legacy, a request with `_meta` modern), any other's
/// the snapshot's session era (`session`, its `protocolEra`).
fn probe_era<'a>(probe: &'a Value, session: Option<&'a str>) -> Option<&'a str> {
    if let Some(era) = present(probe, "era").and_then(Value::as_str) {
        return Some(era);
    }
    let request = present(probe, "request")
        .and_then(Value::as_str)
        .unwrap_or("");
    match present(probe, "probe").and_then(Value::as_str) {
        Some(VERSION_PROBE) if request.starts_with("initialize") => Some("legacy"),
        Some(VERSION_PROBE) if request.contains("_meta") => Some("modern"),
        _ => session,
    }
}

/// The probes by name, then by era (`None`: an older snapshot's probe over its session).
type Probes<'a> = BTreeMap<&'a str, BTreeMap<Option<&'a str>, &'a Value>>;

fn keyed<'a>(probes: &'a [Value], session: Option<&'a str>) -> Probes<'a> {
    let mut out = Probes::new();
    for probe in probes {
        let Some(name) = present(probe, "probe").and_then(Value::as_str) else {
            continue;
        };
        // The first of a name and era is the one `check` reads too.
        let eras = out.entry(name).or_default();
        eras.entry(probe_era(probe, session)).or_insert(probe);
    }
    out
}

/// The pairs of one probe to compare: its answers in each era both sides made it in; else (an
/// older snapshot, or sides that share no era) the first answer of each side, except for the
/// unsupported-version probe, whose answer is the era's own.
fn pairs<'a>(
    name: &str,
    old: &BTreeMap<Option<&'a str>, &'a Value>,
    new: &BTreeMap<Option<&'a str>, &'a Value>,
) -> Vec<(Option<&'a str>, &'a Value, &'a Value)> {
    let same: Vec<_> = old
        .iter()
        .filter(|(era, _)| era.is_some())
        .filter_map(|(era, b)| Some((*era, *b, *new.get(era)?)))
        .collect();
    if !same.is_empty() || name == VERSION_PROBE {
        return same;
    }
    let first = |m: &BTreeMap<Option<&'a str>, &'a Value>| m.values().next().copied();
    match (first(old), first(new)) {
        (Some(b), Some(a)) => vec![(None, b, a)],
        _ => Vec::new(),
    }
}

/// `ErrorSemanticsChanged` for a probe whose outcome or code differs, when both snapshots ran it,
/// in the same era where both record eras. `sessions`: each side's `protocolEra`, if known.
pub(super) fn diff_errors(
    (b, a): (&Value, &Value),
    sessions: (Option<&str>, Option<&str>),
    out: &mut Vec<Change>,
) {
    let after = keyed(array(a, "probes"), sessions.1);
    let outcome = |p: &Value| {
        present(p, "outcome")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let describe = |p: &Value| match present(p, "code") {
        Some(code) => format!("{} {code}", outcome(p)),
        None => outcome(p),
    };
    for (name, olds) in keyed(array(b, "probes"), sessions.0) {
        let Some(news) = after.get(name) else {
            continue;
        };
        for (era, old, new) in pairs(name, &olds, news) {
            if outcome(old) == "skipped" || outcome(new) == "skipped" {
                continue;
            }
            let probe = Pair::new("errors", name, old, new);
            let change = probe.field(K::ErrorSemanticsChanged, "outcome");
            let change = change.or_else(|| probe.field(K::ErrorSemanticsChanged, "code"));
            let mut note = format!("{} → {}", describe(old), describe(new));
            if let Some(era) = era {
                note.push_str(&format!(" (both in the {era} era)"));
            } else if let (Some(was), Some(is)) =
                (probe_era(old, sessions.0), probe_era(new, sessions.1))
            {
                if was != is {
                    note.push_str(&format!(" (a {was} session, then a {is} one)"));
                }
            }
            out.extend(change.map(|c| c.note(note)));
        }
    }
}
