//! The diff engine: compares a baseline and a candidate [`Snapshot`] and classifies every change by
//! whether it breaks clients and whether it affects models.
//!
//! One refinement of `ChangeKind::flags`: a `DescriptionChanged`, `TitleChanged` or `SchemaChanged`
//! inside a tool's `outputSchema` affects no model (models read tools' input schemas, not their
//! output schemas), so its `affects_models` is false.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::declared;
use super::model::{Change, ChangeKind as K, Snapshot};
use super::schema::{self, Effect, Finding};
use super::server_diff;

/// The tool annotation hints and the value the spec gives each when it is absent.
const HINTS: [(&str, bool); 4] = [
    ("readOnlyHint", false),
    ("destructiveHint", true),
    ("idempotentHint", false),
    ("openWorldHint", true),
];

/// Every change from `baseline` to `candidate`, classified; breaking changes first, then by list,
/// name and path (then kind and values, so the order is total).
///
/// Schemas are compared in normalized form (local `$ref`s resolved, `$schema`
/// ignored). A tool removed and another added with equal input and output schemas, each the only
/// match of the other, is one `ToolRenamed` under the new name (`before` the old name, `after`
/// the new). A resource (template) removed and another added with the same `name`, each the only
/// one with that name, is one `ResourceUriChanged` (`ResourceTemplateChanged`).
pub fn diff(baseline: &Snapshot, candidate: &Snapshot) -> Vec<Change> {
    let (b, a) = (baseline, candidate);
    let mut out = Vec::new();
    diff_tools(&b.tools, &a.tools, &mut out);
    diff_prompts(&b.prompts, &a.prompts, &mut out);
    let moved = (K::ResourceUriChanged, K::ResourceTemplateChanged);
    diff_located(&RESOURCES, moved.0, &b.resources, &a.resources, &mut out);
    let (before, after) = (&b.resource_templates, &a.resource_templates);
    diff_located(&TEMPLATES, moved.1, before, after, &mut out);
    // A side without server.json (another tool's snapshot) has no facts to compare.
    if !b.server.is_null() && !a.server.is_null() {
        server_diff::diff_server(&b.server, &a.server, &mut out);
    }
    if let (Some(b), Some(a)) = (&b.errors, &a.errors) {
        let sessions = (
            session_era(&baseline.server),
            session_era(&candidate.server),
        );
        server_diff::diff_errors((b, a), sessions, &mut out);
    }
    out.sort_by_cached_key(|c| {
        let show = |v: &Option<Value>| v.as_ref().map(Value::to_string);
        let place = (c.list.clone(), c.name.clone(), c.path.clone(), c.kind);
        (!c.breaks_clients, place, show(&c.before), show(&c.after))
    });
    out
}

/// The era a snapshot's session was in (`server.json`'s `protocolEra`).
fn session_era(server: &Value) -> Option<&str> {
    present(server, "protocolEra").and_then(Value::as_str)
}

/// How a list keys its items and names their removal and addition.
struct Listing {
    list: &'static str,
    key: &'static str,
    removed: K,
    added: K,
}

const TOOLS: Listing = Listing {
    list: "tools",
    key: "name",
    removed: K::ToolRemoved,
    added: K::ToolAdded,
};

const PROMPTS: Listing = Listing {
    list: "prompts",
    key: "name",
    removed: K::PromptRemoved,
    added: K::PromptAdded,
};

const RESOURCES: Listing = Listing {
    list: "resources",
    key: "uri",
    removed: K::ResourceRemoved,
    added: K::ResourceAdded,
};

const TEMPLATES: Listing = Listing {
    list: "resourceTemplates",
    key: "uriTemplate",
    removed: K::ResourceTemplateRemoved,
    added: K::ResourceTemplateAdded,
};

/// The array at `key`, or none.
pub(super) fn array<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The items of a list by the string at `key`; an item without one is left out.
fn by_key<'a>(items: &'a [Value], key: &str) -> BTreeMap<&'a str, &'a Value> {
    let keyed = items
        .iter()
        .map(|item| Some((item.get(key)?.as_str()?, item)));
    keyed.flatten().collect()
}

/// The value at a dotted path; JSON `null` counts as absent.
pub(super) fn present<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    let found = path.split('.').try_fold(value, |v, key| v.get(key));
    found.filter(|v| !v.is_null())
}

/// One item of a list on both sides, under one name.
#[derive(Clone, Copy)]
pub(super) struct Pair<'a> {
    list: &'static str,
    name: &'a str,
    b: &'a Value,
    a: &'a Value,
}

impl<'a> Pair<'a> {
    pub(super) fn new(list: &'static str, name: &'a str, b: &'a Value, a: &'a Value) -> Self {
        Self { list, name, b, a }
    }

    fn change(&self, kind: K) -> Change {
        Change::new(self.list, self.name, kind)
    }

    /// The change of the value at dotted `path`, if it changed.
    pub(super) fn field(&self, kind: K, path: &str) -> Option<Change> {
        let (before, after) = (present(self.b, path), present(self.a, path));
        let values = |c: Change| c.values(before.cloned(), after.cloned());
        (before != after).then(|| values(self.change(kind).at(path)))
    }
}

/// The keys of `from` that `other` lacks.
fn missing<'a>(from: &BTreeMap<&'a str, &Value>, other: &BTreeMap<&str, &Value>) -> Vec<&'a str> {
    from.keys()
        .filter(|k| !other.contains_key(*k))
        .copied()
        .collect()
}

/// Pairs each removed item with the one added item of the same key, when neither side has another
/// item with that key. `None` keys match nothing.
fn pair_unique<'a, T: PartialEq>(
    removed: &[(&'a str, Option<T>)],
    added: &[(&'a str, Option<T>)],
) -> Vec<(&'a str, &'a str)> {
    let mut pairs = Vec::new();
    for (old, key) in removed.iter().filter(|(_, key)| key.is_some()) {
        let hits: Vec<&str> = added
            .iter()
            .filter(|(_, k)| k == key)
            .map(|(n, _)| *n)
            .collect();
        let twins = removed.iter().filter(|(_, k)| k == key).count();
        if let ([new], 1) = (&hits[..], twins) {
            pairs.push((*old, *new));
        }
    }
    pairs
}

/// Removals and additions of whole items (pairs excepted), with the item as `before` / `after`.
fn removed_and_added(
    spec: &Listing,
    (b, a): (&BTreeMap<&str, &Value>, &BTreeMap<&str, &Value>),
    pairs: &[(&str, &str)],
    out: &mut Vec<Change>,
) {
    let (olds, news): (Vec<&str>, Vec<&str>) = pairs.iter().copied().unzip();
    for name in missing(b, a).into_iter().filter(|n| !olds.contains(n)) {
        out.push(Change::new(spec.list, name, spec.removed).values(Some(b[name].clone()), None));
    }
    for name in missing(a, b).into_iter().filter(|n| !news.contains(n)) {
        out.push(Change::new(spec.list, name, spec.added).values(None, Some(a[name].clone())));
    }
}

fn diff_tools(before: &[Value], after: &[Value], out: &mut Vec<Change>) {
    let (b, a) = (by_key(before, "name"), by_key(after, "name"));
    // A tool's rename key: its input and output schemas.
    let schemas = |tool: &Value| {
        Some(["inputSchema", "outputSchema"].map(|k| tool.get(k).map(schema::normalize)))
    };
    let removed: Vec<_> = missing(&b, &a)
        .into_iter()
        .map(|n| (n, schemas(b[n])))
        .collect();
    let added: Vec<_> = missing(&a, &b)
        .into_iter()
        .map(|n| (n, schemas(a[n])))
        .collect();
    let renames = pair_unique(&removed, &added);
    for (name, tool) in &b {
        if let Some(new) = a.get(name) {
            compare_tool(Pair::new("tools", name, tool, new), out);
        }
    }
    for &(old, name) in &renames {
        let note = format!("`{old}` is now `{name}` with the same schemas; calls to `{old}` fail");
        let renamed = Change::new("tools", name, K::ToolRenamed).at("name");
        out.push(
            renamed
                .values(Some(json!(old)), Some(json!(name)))
                .note(note),
        );
        compare_tool(Pair::new("tools", name, b[old], a[name]), out);
    }
    removed_and_added(&TOOLS, (&b, &a), &renames, out);
}

fn compare_tool(tool: Pair, out: &mut Vec<Change>) {
    out.extend(tool.field(K::DescriptionChanged, "description"));
    out.extend(tool.field(K::TitleChanged, "title"));
    compare_annotations(tool, out);
    let raw = |t: &'_ Value| t.get("inputSchema").cloned();
    let (before, after) = (raw(tool.b), raw(tool.a));
    if let Some(change) = declared::first_declaration(tool.name, before.as_ref(), after.as_ref()) {
        out.push(change);
    } else {
        let input =
            |s: Option<Value>| s.map_or(json!({"type": "object"}), |s| schema::normalize(&s));
        for finding in schema::compare(&input(before), &input(after), "inputSchema") {
            out.push(schema_change(tool, finding, false));
        }
    }
    match (tool.b.get("outputSchema"), tool.a.get("outputSchema")) {
        (Some(before), Some(after)) => {
            let (before, after) = (schema::normalize(before), schema::normalize(after));
            for finding in schema::compare(&before, &after, "outputSchema") {
                out.push(schema_change(tool, finding, true));
            }
        }
        (None, Some(_)) => out.extend(tool.field(K::OutputSchemaAdded, "outputSchema")),
        (Some(_), None) => out.extend(tool.field(K::OutputSchemaRemoved, "outputSchema")),
        (None, None) => {}
    }
    compare_headers(tool, out);
}

fn compare_annotations(tool: Pair, out: &mut Vec<Change>) {
    let keys = |t: &Value| {
        t.get("annotations")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let (before, after) = (keys(tool.b), keys(tool.a));
    for key in before.keys().chain(after.keys()).collect::<BTreeSet<_>>() {
        let path = format!("annotations.{key}");
        if key == "title" {
            out.extend(tool.field(K::TitleChanged, &path));
            continue;
        }
        let Some(change) = tool.field(K::AnnotationsChanged, &path) else {
            continue;
        };
        let Some(&(_, default)) = HINTS.iter().find(|(hint, _)| hint == key) else {
            out.push(change);
            continue;
        };
        let effective = |v: &Option<Value>| v.as_ref().and_then(Value::as_bool).unwrap_or(default);
        let (was, is) = (effective(&change.before), effective(&change.after));
        if was != is {
            out.push(change.note(format!("{key} {was} → {is} (absent means {default})")));
        }
    }
}

/// A schema finding as a change of the tool, by the schema's role. The client reads an output
/// schema, so what narrows the values it allows widens what a client can rely on
/// (`OutputSchemaWidened`), and the reverse breaks clients (`OutputSchemaNarrowed`).
fn schema_change(tool: Pair, finding: Finding, output: bool) -> Change {
    use Effect as E;
    let kind = match (finding.effect, output) {
        (E::Narrowed | E::Replaced, false) => K::TypeNarrowed,
        (E::Widened, false) => K::TypeWidened,
        (E::PropertyAdded { required: true }, false) => K::RequiredParameterAdded,
        (E::PropertyAdded { required: false }, false) => K::OptionalParameterAdded,
        (E::PropertyRemoved, false) => K::ParameterRemoved,
        (E::MadeRequired, false) => K::ParameterMadeRequired,
        (E::MadeOptional, false) => K::ParameterMadeOptional,
        (E::Narrowed | E::PropertyAdded { .. } | E::MadeRequired, true) => K::OutputSchemaWidened,
        (E::Widened | E::Replaced | E::PropertyRemoved | E::MadeOptional, true) => {
            K::OutputSchemaNarrowed
        }
        (E::Description, _) => K::DescriptionChanged,
        (E::Title, _) => K::TitleChanged,
        (E::Undecided, _) => K::SchemaChanged,
    };
    let surprise = |n: String| format!("{n}: the tool may return what clients do not expect");
    let note = match (finding.effect, output) {
        (E::PropertyRemoved, true) => Some("property removed (or renamed)".to_owned()),
        (E::MadeOptional, true) => Some("dropped from required: may be absent".to_owned()),
        (E::Widened, true) => finding.note.map(surprise),
        _ => finding.note,
    };
    let mut change = tool
        .change(kind)
        .at(finding.path)
        .values(finding.before, finding.after);
    change.note = note;
    let text = matches!(
        kind,
        K::DescriptionChanged | K::TitleChanged | K::SchemaChanged
    );
    change.affects_models &= !(output && text);
    change
}

/// `McpHeaderInvalid` for every `x-mcp-header` annotation that is invalid in the candidate and was
/// valid or absent at the same place in the baseline (see [`schema::header_annotations`]).
fn compare_headers(tool: Pair, out: &mut Vec<Change>) {
    let raw = |t: &Value| t.get("inputSchema").cloned().unwrap_or_default();
    let before = schema::header_annotations(&raw(tool.b), "inputSchema");
    let after = schema::header_annotations(&raw(tool.a), "inputSchema");
    let baseline_invalid = before.values().any(|h| h.problem.is_some());
    for (path, header) in &after {
        let was = before.get(path);
        let (Some(problem), false) = (&header.problem, was.is_some_and(|h| h.problem.is_some()))
        else {
            continue;
        };
        let mut note = format!("{problem}: HTTP clients must drop the tool from tools/list");
        if baseline_invalid {
            note.push_str(" (the baseline already had an invalid annotation)");
        }
        let values = (was.map(|h| h.value.clone()), Some(header.value.clone()));
        let change = tool.change(K::McpHeaderInvalid).at(path.as_str());
        out.push(change.values(values.0, values.1).note(note));
    }
}

fn diff_prompts(before: &[Value], after: &[Value], out: &mut Vec<Change>) {
    let (b, a) = (by_key(before, "name"), by_key(after, "name"));
    removed_and_added(&PROMPTS, (&b, &a), &[], out);
    for (name, prompt) in &b {
        if let Some(new) = a.get(name) {
            compare_prompt(Pair::new("prompts", name, prompt, new), out);
        }
    }
}

fn compare_prompt(prompt: Pair, out: &mut Vec<Change>) {
    out.extend(prompt.field(K::DescriptionChanged, "description"));
    out.extend(prompt.field(K::TitleChanged, "title"));
    let before = by_key(array(prompt.b, "arguments"), "name");
    let after = by_key(array(prompt.a, "arguments"), "name");
    let required = |arg: &Value| {
        arg.get("required")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    for name in before.keys().chain(after.keys()).collect::<BTreeSet<_>>() {
        let path = format!("arguments.{name}");
        let change = |kind| prompt.change(kind).at(path.as_str());
        let (old, new) = match (before.get(name), after.get(name)) {
            (Some(old), None) => {
                out.push(change(K::ParameterRemoved).values(Some((*old).clone()), None));
                continue;
            }
            (None, Some(new)) => {
                let kind = if required(new) {
                    K::RequiredParameterAdded
                } else {
                    K::OptionalParameterAdded
                };
                out.push(change(kind).values(None, Some((*new).clone())));
                continue;
            }
            (Some(old), Some(new)) => (*old, *new),
            (None, None) => continue,
        };
        if required(old) != required(new) {
            let kind = if required(new) {
                K::ParameterMadeRequired
            } else {
                K::ParameterMadeOptional
            };
            out.push(change(kind).values(Some(json!(required(old))), Some(json!(required(new)))));
        }
        let argument = Pair::new(prompt.list, prompt.name, old, new);
        for (key, kind) in [
            ("description", K::DescriptionChanged),
            ("title", K::TitleChanged),
        ] {
            let moved = |c: Change| c.at(format!("{path}.{key}"));
            out.extend(argument.field(kind, key).map(moved));
        }
    }
}

/// Resources (templates): keyed by `uri` (`uriTemplate`); one that keeps its `name` under another
/// key has moved (`moved_kind`).
fn diff_located(
    spec: &Listing,
    moved_kind: K,
    before: &[Value],
    after: &[Value],
    out: &mut Vec<Change>,
) {
    let (b, a) = (by_key(before, spec.key), by_key(after, spec.key));
    let mime = |name, b, a| Pair::new(spec.list, name, b, a).field(K::MimeTypeChanged, "mimeType");
    for (name, item) in &b {
        if let Some(new) = a.get(name) {
            out.extend(mime(name, item, new));
            // Read by a model only where a host shows resources (`expose`): the trigger decides.
            let pair = Pair::new(spec.list, name, item, new);
            for (kind, key) in [
                (K::DescriptionChanged, "description"),
                (K::TitleChanged, "title"),
            ] {
                out.extend(pair.field(kind, key).map(|mut c| {
                    c.affects_models = false;
                    c
                }));
            }
        }
    }
    let named = |n, item: &Value| (n, present(item, "name").cloned());
    let removed: Vec<_> = missing(&b, &a)
        .into_iter()
        .map(|n| named(n, b[n]))
        .collect();
    let added: Vec<_> = missing(&a, &b)
        .into_iter()
        .map(|n| named(n, a[n]))
        .collect();
    let moved = pair_unique(&removed, &added);
    for &(old, new) in &moved {
        let label = present(b[old], "name").map_or_else(String::new, Value::to_string);
        let note = format!("{label} moved from `{old}` to `{new}`");
        let change = Change::new(spec.list, old, moved_kind).at(spec.key);
        out.push(change.values(Some(json!(old)), Some(json!(new))).note(note));
        out.extend(mime(new, b[old], a[new]));
    }
    removed_and_added(spec, (&b, &a), &moved, out);
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "diff_rules_tests.rs"]
mod rules_tests;
