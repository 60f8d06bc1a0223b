//! JSON Schema for the contract diff: the canonical form two schemas are compared in (local `$ref`s
//! resolved), a keyword-by-keyword comparison that says whether a schema now accepts more or fewer
//! values; the validity rules of the `x-mcp-header` parameter annotation are in `mcp_header.rs`.
//!
//! Key order needs no canonical form: serde_json is built here without `preserve_order` (its
//! features in this build are `std`, `alloc`, `default` and `raw_value`), so `Map` is a `BTreeMap`,
//! and its equality ignores insertion order either way.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use self::Effect::{Narrowed, Replaced, Widened};
use super::bounds::EDGE_OF_JSON_NUMBERS;
pub use super::mcp_header::header_annotations;

/// Keywords whose values are instances, not schemas: never resolved, walked or compared inside.
pub(super) const DATA_KEYWORDS: &str = "enum const default examples";

/// Keywords whose value maps names to schemas.
const SCHEMA_MAPS: &str = "properties patternProperties dependentSchemas";

/// Upper bounds: lowering one (or adding one) narrows what a schema accepts.
const MAX_KEYWORDS: &str = "maximum exclusiveMaximum maxLength maxItems maxProperties maxContains";

/// Lower bounds: raising one (or adding one) narrows what a schema accepts.
const MIN_KEYWORDS: &str = "minimum exclusiveMinimum minLength minItems minProperties minContains";

/// Keywords that change neither which values validate nor what a model reads.
const IGNORED_KEYWORDS: &str = "$comment $id $anchor $schema $defs definitions readOnly writeOnly \
    contentEncoding contentMediaType";

/// Whether `key` is one of the space-separated `keywords`.
pub(super) fn listed(keywords: &str, key: &str) -> bool {
    keywords.split_whitespace().any(|k| k == key)
}

/// How many `$ref`s one schema may expand, so a schema that reuses a definition at every level
/// cannot grow exponentially; past it a `$ref` stays as written.
const MAX_EXPANSIONS: usize = 1000;

/// The canonical form of a JSON Schema: every local `$ref` (`#`, `#/$defs/…`, `#/definitions/…`,
/// any JSON pointer into the schema) replaced by its target, with the referring object's other
/// keywords laid over it; `$schema` and the root's `$defs` / `definitions` dropped; `required` and
/// `type` arrays sorted (a one-type array becomes the bare type). A `$ref` met again while it is
/// being expanded (a recursive schema) stays a `$ref`, so recursive schemas compare by reference.
pub fn normalize(schema: &Value) -> Value {
    let mut out = Resolver::new(schema).schema(schema);
    if let Value::Object(map) = &mut out {
        map.remove("$defs");
        map.remove("definitions");
    }
    out
}

struct Resolver<'a> {
    root: &'a Value,
    /// The `$ref`s being expanded, outermost first: the cycle guard.
    stack: Vec<String>,
    expansions: usize,
}

impl<'a> Resolver<'a> {
    fn new(root: &'a Value) -> Self {
        Self {
            root,
            stack: Vec::new(),
            expansions: 0,
        }
    }

    fn schema(&mut self, node: &Value) -> Value {
        let Value::Object(map) = node else {
            return node.clone();
        };
        if let Some(Value::String(reference)) = map.get("$ref") {
            if let Some(target) = self.expand(reference) {
                let siblings = self.keywords(map, true);
                return overlay(target, siblings);
            }
        }
        Value::Object(self.keywords(map, false))
    }

    fn expand(&mut self, reference: &str) -> Option<Value> {
        if self.expansions >= MAX_EXPANSIONS || self.stack.iter().any(|r| r == reference) {
            return None;
        }
        let target = lookup(self.root, reference)?;
        self.expansions += 1;
        self.stack.push(reference.to_owned());
        let out = self.schema(target);
        self.stack.pop();
        Some(out)
    }

    fn keywords(&mut self, map: &Map<String, Value>, skip_ref: bool) -> Map<String, Value> {
        let mut out = Map::new();
        for (key, value) in map {
            let key_str = key.as_str();
            if key_str == "$schema" || (skip_ref && key_str == "$ref") {
                continue;
            }
            let value = match value {
                // Instances stay as written; definitions are reached through `$ref`s.
                _ if listed(DATA_KEYWORDS, key_str) || listed("$defs definitions", key_str) => {
                    value.clone()
                }
                Value::Object(named) if listed(SCHEMA_MAPS, key_str) => Value::Object(
                    named
                        .iter()
                        .map(|(name, schema)| (name.clone(), self.schema(schema)))
                        .collect(),
                ),
                Value::Array(items) => Value::Array(items.iter().map(|i| self.schema(i)).collect()),
                _ => self.schema(value),
            };
            out.insert(key.clone(), value);
        }
        for key in ["required", "type"] {
            if let Some(Value::Array(items)) = out.get_mut(key) {
                items.sort_by_key(Value::to_string);
                items.dedup();
                if key == "type" && items.len() == 1 {
                    let only = items.remove(0);
                    out.insert(key.to_owned(), only);
                }
            }
        }
        out
    }
}

/// A resolved `$ref` target with the referring object's own keywords over it.
fn overlay(target: Value, siblings: Map<String, Value>) -> Value {
    match target {
        _ if siblings.is_empty() => target,
        Value::Object(mut map) => {
            map.extend(siblings);
            Value::Object(map)
        }
        boolean_schema => {
            let mut map = siblings;
            map.insert("allOf".to_owned(), Value::Array(vec![boolean_schema]));
            Value::Object(map)
        }
    }
}

/// The target of a local reference (`#` and a JSON pointer, percent-encoded as a URI fragment).
fn lookup<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let fragment = reference.strip_prefix('#')?;
    if fragment.is_empty() {
        return Some(root);
    }
    root.pointer(&percent_decode(fragment))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit));
        let hex = hex.and_then(|h| std::str::from_utf8(h).ok());
        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(byte) if bytes[i] == b'%' => {
                out.push(byte);
                i += 3;
            }
            _ => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

/// What a schema change does to the set of values the schema accepts, or what else it touches.
/// The diff turns it into a [`super::ChangeKind`] by the schema's role (input or output).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Fewer values validate (an enum value removed, a maximum lowered…).
    Narrowed,
    /// More values validate.
    Widened,
    /// Some values no longer validate and others now do (`"string"` → `"integer"`, a pattern
    /// rewritten): narrowed for a parameter, and breaking for an output too.
    Replaced,
    PropertyAdded {
        required: bool,
    },
    PropertyRemoved,
    /// A property became listed in its parent's `required`.
    MadeRequired,
    MadeOptional,
    /// Text a model reads changed: `description`, `default`, `examples`, `deprecated`.
    Description,
    Title,
    /// No rule decides it (`anyOf` rewritten…).
    Undecided,
}

/// One difference between two normalized schemas.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub effect: Effect,
    /// Dotted, from the schema's own name (`inputSchema.properties.tags.items.type`).
    pub path: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
    pub note: Option<String>,
}

/// One keyword of a schema on both sides.
#[derive(Clone, Copy)]
struct Keyword<'a> {
    key: &'a str,
    /// The keyword's dotted path.
    at: &'a str,
    b: Option<&'a Value>,
    a: Option<&'a Value>,
}

impl<'a> Keyword<'a> {
    fn new(key: &'a str, at: &'a str, b: Option<&'a Value>, a: Option<&'a Value>) -> Self {
        Self { key, at, b, a }
    }

    fn finding(&self, effect: Effect) -> Finding {
        let (before, after) = (self.b.cloned(), self.a.cloned());
        let path = self.at.to_owned();
        Finding {
            effect,
            path,
            before,
            after,
            note: None,
        }
    }

    fn noted(&self, effect: Effect, note: String) -> Finding {
        let note = Some(note);
        Finding {
            note,
            ..self.finding(effect)
        }
    }

    /// Narrowed when `narrowed`, else widened.
    fn narrowed_if(&self, narrowed: bool, note: String) -> Finding {
        self.noted(if narrowed { Narrowed } else { Widened }, note)
    }

    fn undecided(&self, what: &str) -> Finding {
        let note = format!("{what} changed: could not be decided, treated as breaking");
        self.noted(Effect::Undecided, note)
    }
}

/// Every difference between two schemas already in [`normalize`]d form; `path` names the schema
/// (`inputSchema`) and starts every finding's path. Descends into `properties`, `items` and
/// `additionalProperties` (when a schema); any other sub-schema that differs is one
/// [`Effect::Undecided`] finding at its keyword.
pub fn compare(before: &Value, after: &Value, path: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    compare_at(before, after, path, &mut out);
    out
}

fn compare_at(before: &Value, after: &Value, path: &str, out: &mut Vec<Finding>) {
    if before == after {
        return;
    }
    let (Value::Object(b), Value::Object(a)) = (before, after) else {
        let whole = Keyword::new("", path, Some(before), Some(after));
        out.push(whole.undecided("a boolean or malformed schema"));
        return;
    };
    let decided = super::bounds::compare_bounds(b, a, path, out);
    for key in b.keys().chain(a.keys()).collect::<BTreeSet<_>>() {
        let at = format!("{path}.{key}");
        if b.get(key) != a.get(key) && !decided.contains(&key.as_str()) {
            compare_keyword(Keyword::new(key, &at, b.get(key), a.get(key)), out);
        }
    }
    if b.get("properties") != a.get("properties") || b.get("required") != a.get("required") {
        compare_properties(b, a, path, out);
    }
}

fn compare_keyword(k: Keyword, out: &mut Vec<Finding>) {
    let finding = match k.key {
        "properties" | "required" => None,
        "type" => compare_type(k),
        "enum" => Some(compare_enum(k)),
        "const" | "pattern" | "format" => Some(constraint(k)),
        "multipleOf" => Some(compare_multiple(k)),
        "uniqueItems" => flag(k, true),
        "nullable" => flag(k, false),
        "description" => Some(k.finding(Effect::Description)),
        "title" => Some(k.finding(Effect::Title)),
        "default" | "examples" | "deprecated" => {
            Some(k.noted(Effect::Description, format!("{} changed", k.key)))
        }
        "items" => compare_items(k, out),
        "additionalProperties" => compare_additional(k, out),
        key if listed(MAX_KEYWORDS, key) => compare_bound(k, true),
        key if listed(MIN_KEYWORDS, key) => compare_bound(k, false),
        key if key.starts_with("x-") || listed(IGNORED_KEYWORDS, key) => None,
        key => Some(k.undecided(&format!("`{key}`"))),
    };
    out.extend(finding);
}

/// `type` as a set; `None` when absent (any type).
fn type_set(value: Option<&Value>) -> Option<BTreeSet<&str>> {
    match value? {
        Value::String(one) => Some(BTreeSet::from([one.as_str()])),
        Value::Array(many) => Some(many.iter().filter_map(Value::as_str).collect()),
        _ => Some(BTreeSet::new()),
    }
}

/// Whether every value of the `inner` types is one of the `outer` types (`integer` ⊂ `number`).
fn covers(outer: &Option<BTreeSet<&str>>, inner: &Option<BTreeSet<&str>>) -> bool {
    let within = |outer: &BTreeSet<&str>, t: &str| {
        outer.contains(t) || (t == "integer" && outer.contains("number"))
    };
    match (outer, inner) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(outer), Some(inner)) => inner.iter().all(|t| within(outer, t)),
    }
}

fn compare_type(k: Keyword) -> Option<Finding> {
    let (before, after) = (type_set(k.b), type_set(k.a));
    let effect = match (covers(&after, &before), covers(&before, &after)) {
        (true, true) => return None, // the same types, written otherwise
        (true, false) => Widened,
        (false, true) => Narrowed,
        (false, false) => Replaced,
    };
    let show = |v: Option<&Value>| v.map_or("any".to_owned(), Value::to_string);
    Some(k.noted(effect, format!("type {} → {}", show(k.b), show(k.a))))
}

fn compare_enum(k: Keyword) -> Finding {
    let (before, after) = match (k.b, k.a) {
        (None, _) => return k.noted(Narrowed, "enum added".into()),
        (_, None) => return k.noted(Widened, "enum removed".into()),
        (Some(Value::Array(before)), Some(Value::Array(after))) => (before, after),
        _ => return k.undecided("a malformed enum"),
    };
    let list = |from: &[Value], without: &[Value]| {
        let left = from.iter().filter(|v| !without.contains(v));
        left.map(Value::to_string).collect::<Vec<_>>().join(", ")
    };
    let (removed, added) = (list(before, after), list(after, before));
    match (removed.is_empty(), added.is_empty()) {
        (true, _) => k.noted(Widened, format!("enum values added: {added}")),
        (false, true) => k.noted(Narrowed, format!("enum values removed: {removed}")),
        (false, false) => k.noted(
            Replaced,
            format!("enum values removed: {removed}; added: {added}"),
        ),
    }
}

/// `const`, `pattern`, `format`: adding one narrows, removing it widens, changing it replaces.
fn constraint(k: Keyword) -> Finding {
    match (k.b, k.a) {
        (None, _) => k.noted(Narrowed, format!("{} added", k.key)),
        (_, None) => k.noted(Widened, format!("{} removed", k.key)),
        (Some(x), Some(y)) => k.noted(Replaced, format!("{} {x} → {y}", k.key)),
    }
}

/// A boolean keyword whose `true` narrows (`uniqueItems`) or widens (`nullable`).
fn flag(k: Keyword, true_narrows: bool) -> Option<Finding> {
    let on = |v: Option<&Value>| v == Some(&Value::Bool(true));
    let verb = if on(k.a) { "added" } else { "removed" };
    let note = format!("{}: true {verb}", k.key);
    (on(k.b) != on(k.a)).then(|| k.narrowed_if(on(k.a) == true_narrows, note))
}

/// A bound keyword (the numeric `maximum`/`minimum` pairs are compared as ranges first, in
/// `bounds.rs`); an upper bound at or above 2^53 − 1 (a lower one at or below its negative) is
/// no bound: no client sends a number past it, so adding it narrows nothing.
fn compare_bound(k: Keyword, is_max: bool) -> Option<Finding> {
    let (x, y) = (k.b.and_then(Value::as_f64), k.a.and_then(Value::as_f64));
    if x.is_none() && k.b.is_some() || y.is_none() && k.a.is_some() {
        return flag(k, true); // draft 4's boolean `exclusiveMaximum` / `exclusiveMinimum`
    }
    let bounds = |v: &f64| match is_max {
        true => *v < EDGE_OF_JSON_NUMBERS,
        false => *v > -EDGE_OF_JSON_NUMBERS,
    };
    let key = k.key;
    let (within_x, within_y) = (x.filter(bounds), y.filter(bounds));
    if (within_x, within_y) != (x, y) {
        let show = |v: Option<&Value>| v.map_or("none".to_owned(), Value::to_string);
        let note = format!(
            "{key} {} → {} (2^53 − 1 or beyond: no bound)",
            show(k.b),
            show(k.a)
        );
        // One side is at the edge, so at most one is a real bound.
        return match (within_x, within_y) {
            (None, None) => None,
            (Some(_), _) => Some(k.narrowed_if(false, note)),
            (None, Some(_)) => Some(k.narrowed_if(true, note)),
        };
    }
    match (x, y) {
        (None, Some(y)) => Some(k.narrowed_if(true, format!("{key} {y} added"))),
        (Some(x), None) => Some(k.narrowed_if(false, format!("{key} {x} removed"))),
        (Some(x), Some(y)) if x != y => {
            let narrowed = if is_max { y < x } else { y > x };
            Some(k.narrowed_if(narrowed, format!("{key} {x} → {y}")))
        }
        _ => None,
    }
}

/// `multipleOf`: a divisor of the old one accepts more values, a multiple of it fewer.
fn compare_multiple(k: Keyword) -> Finding {
    let divides = |x: f64, y: f64| y != 0.0 && (x / y).fract().abs() < 1e-9;
    let effect = match (k.b.and_then(Value::as_f64), k.a.and_then(Value::as_f64)) {
        (Some(_), None) => Widened,
        (Some(x), Some(y)) if divides(x, y) => Widened,
        (Some(x), Some(y)) if !divides(y, x) => Replaced,
        _ => Narrowed,
    };
    let show = |v: Option<&Value>| v.map_or("none".to_owned(), Value::to_string);
    k.noted(effect, format!("multipleOf {} → {}", show(k.b), show(k.a)))
}

/// `items` as a schema (absent and `true` mean any item); the tuple form cannot be decided.
fn compare_items(k: Keyword, out: &mut Vec<Finding>) -> Option<Finding> {
    let schema = |v: Option<&Value>| match v {
        None | Some(Value::Bool(true)) => Value::Object(Map::new()),
        Some(v) => v.clone(),
    };
    let (before, after) = (schema(k.b), schema(k.a));
    if before.is_array() || after.is_array() {
        return Some(k.undecided("tuple `items`"));
    }
    compare_at(&before, &after, k.at, out);
    None
}

/// `additionalProperties`: `false` closes the object; a schema is compared as one.
fn compare_additional(k: Keyword, out: &mut Vec<Finding>) -> Option<Finding> {
    // `None` = closed; `Some` = a schema for the extra properties.
    let extra = |v: Option<&Value>| match v {
        None | Some(Value::Bool(true)) => Some(Value::Object(Map::new())),
        Some(Value::Bool(false)) => None,
        Some(schema) => Some(schema.clone()),
    };
    match (extra(k.b), extra(k.a)) {
        (None, None) => None,
        (None, Some(_)) => Some(k.narrowed_if(false, "additionalProperties: false removed".into())),
        (Some(_), None) => Some(k.narrowed_if(true, "additionalProperties: false added".into())),
        (Some(before), Some(after)) => {
            compare_at(&before, &after, k.at, out);
            None
        }
    }
}

/// A schema object.
type Schema = Map<String, Value>;

/// The strings of the array at `key`.
fn strings<'a>(schema: &'a Schema, key: &str) -> BTreeSet<&'a str> {
    let items = schema
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    items.filter_map(Value::as_str).collect()
}

fn properties(schema: &Schema) -> Option<&Schema> {
    schema.get("properties").and_then(Value::as_object)
}

/// Properties added, removed or compared, and changes of required-ness.
fn compare_properties(b: &Schema, a: &Schema, path: &str, out: &mut Vec<Finding>) {
    let empty = Map::new();
    let (bp, ap) = (
        properties(b).unwrap_or(&empty),
        properties(a).unwrap_or(&empty),
    );
    let (br, ar) = (strings(b, "required"), strings(a, "required"));
    let declared = bp.keys().chain(ap.keys()).map(String::as_str);
    let names: BTreeSet<&str> = declared
        .chain(br.iter().copied())
        .chain(ar.iter().copied())
        .collect();
    for name in names {
        let at = format!("{path}.properties.{name}");
        let k = Keyword::new(name, &at, bp.get(name), ap.get(name));
        let (was, is) = (br.contains(name), ar.contains(name));
        match (k.b, k.a) {
            (Some(_), None) => out.push(k.finding(Effect::PropertyRemoved)),
            (None, Some(_)) => out.push(k.finding(Effect::PropertyAdded { required: is })),
            (Some(before), Some(after)) => compare_at(before, after, &at, out),
            (None, None) => {}
        }
        if was != is && k.b.is_some() == k.a.is_some() {
            let effect = if is {
                Effect::MadeRequired
            } else {
                Effect::MadeOptional
            };
            let flags = [Value::Bool(was), Value::Bool(is)];
            out.push(Keyword::new(name, &at, Some(&flags[0]), Some(&flags[1])).finding(effect));
        }
    }
}
