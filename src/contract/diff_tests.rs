//! Tests of the diff engine: one minimal before/after pair per kind, schema comparison (nested
//! paths, `$ref`s, key order), rename detection, the `x-mcp-header` rules, and property tests of
//! the classification.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::diff;
use crate::contract::model::{Change, ChangeKind as K, Snapshot};
use crate::contract::schema::{header_annotations, normalize};

/// (breaks clients, affects models)
type Flags = (bool, bool);
const BOTH: Flags = (true, true);
const BREAKS: Flags = (true, false);
const AFFECTS: Flags = (false, true);
const NEITHER: Flags = (false, false);

/// The path of the one parameter of [`param`].
const P: Option<&str> = Some("inputSchema.properties.p");

fn tools(list: Value) -> Snapshot {
    let tools = list.as_array().expect("an array of tools").clone();
    Snapshot {
        tools,
        ..Snapshot::default()
    }
}

/// A tool `t` whose input schema has these `properties` and `required`.
fn params(properties: Value, required: Value) -> Snapshot {
    let schema = json!({"type": "object", "properties": properties, "required": required});
    tools(json!([{"name": "t", "inputSchema": schema}]))
}

/// A tool `t` with one optional parameter `p` of this schema.
fn param(schema: Value) -> Snapshot {
    params(json!({ "p": schema }), json!([]))
}

/// A tool `t` with `fields` besides its name and an empty input schema.
fn tool(fields: Value) -> Snapshot {
    let mut tool = json!({"name": "t", "inputSchema": {"type": "object"}});
    tool.as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    tools(json!([tool]))
}

/// A snapshot from JSON: `{"prompts": […], "resources": […], "resourceTemplates": […], …}`.
fn snapshot(v: Value) -> Snapshot {
    let list = |key: &str| {
        v.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    Snapshot {
        tools: list("tools"),
        resources: list("resources"),
        resource_templates: list("resourceTemplates"),
        prompts: list("prompts"),
        server: v.get("server").cloned().unwrap_or_default(),
        errors: v.get("errors").cloned(),
    }
}

/// Asserts that `before` → `after` is one change of this kind, path and flags, and returns it.
fn expect(
    before: &Snapshot,
    after: &Snapshot,
    kind: K,
    path: Option<&str>,
    flags: Flags,
) -> Change {
    let mut changes = diff(before, after);
    assert_eq!(changes.len(), 1, "expected one change, got {changes:#?}");
    let change = changes.remove(0);
    let flagged = (change.breaks_clients, change.affects_models);
    let found = (change.kind, change.path.as_deref(), flagged);
    assert_eq!(found, (kind, path, flags), "{change:#?}");
    change
}

#[test]
fn removals_and_additions() {
    let none = Snapshot::default();
    let one = |list: &str, item: Value| snapshot(json!({ list: [item] }));
    let tool = one("tools", json!({"name": "t"}));
    let c = expect(&tool, &none, K::ToolRemoved, None, BOTH);
    assert_eq!(c.before, Some(json!({"name": "t"})), "the removed tool");
    expect(&none, &tool, K::ToolAdded, None, AFFECTS);
    let prompt = one("prompts", json!({"name": "p"}));
    expect(&prompt, &none, K::PromptRemoved, None, BOTH);
    expect(&none, &prompt, K::PromptAdded, None, AFFECTS);
    let resource = one("resources", json!({"uri": "file:///a"}));
    expect(&resource, &none, K::ResourceRemoved, None, BREAKS);
    expect(&none, &resource, K::ResourceAdded, None, NEITHER);
    let template = one("resourceTemplates", json!({"uriTemplate": "file:///{x}"}));
    let c = expect(&template, &none, K::ResourceTemplateRemoved, None, BREAKS);
    assert_eq!(c.list, "resourceTemplates");
    expect(&none, &template, K::ResourceTemplateAdded, None, NEITHER);
}

#[test]
fn parameters_added_removed_and_required() {
    let empty = params(json!({}), json!([]));
    let optional = param(json!({"type": "string"}));
    let required = params(json!({"p": {"type": "string"}}), json!(["p"]));
    expect(&empty, &required, K::RequiredParameterAdded, P, BOTH);
    expect(&empty, &optional, K::OptionalParameterAdded, P, AFFECTS);
    expect(&optional, &required, K::ParameterMadeRequired, P, BOTH);
    expect(&required, &optional, K::ParameterMadeOptional, P, AFFECTS);
    let c = expect(&optional, &empty, K::ParameterRemoved, P, BOTH);
    assert_eq!(c.before, Some(json!({"type": "string"})));
}

/// Each line: the keyword that changes, a parameter's schema, and one that accepts fewer values.
const NARROWINGS: &str = r#"
    ["type", {"type": "number"}, {"type": "integer"}]
    ["type", {"type": ["string", "null"]}, {"type": "string"}]
    ["enum", {"type": "string"}, {"type": "string", "enum": ["a"]}]
    ["enum", {"enum": ["open", "closed"]}, {"enum": ["open"]}]
    ["maximum", {"maximum": 100}, {"maximum": 50}]
    ["exclusiveMaximum", {"exclusiveMaximum": 9}, {"exclusiveMaximum": 5}]
    ["maxLength", {}, {"maxLength": 10}]
    ["maxItems", {"maxItems": 3}, {"maxItems": 2}]
    ["maxProperties", {"maxProperties": 3}, {"maxProperties": 2}]
    ["minimum", {"minimum": 0}, {"minimum": 1}]
    ["minLength", {}, {"minLength": 1}]
    ["minItems", {"minItems": 1}, {"minItems": 2}]
    ["pattern", {}, {"pattern": "^a"}]
    ["const", {}, {"const": "x"}]
    ["additionalProperties", {"type": "object"}, {"type": "object", "additionalProperties": false}]
"#;

#[test]
fn narrowed_and_widened_types() {
    for line in NARROWINGS.lines().filter(|l| !l.trim().is_empty()) {
        let (keyword, wide, narrow): (String, Value, Value) = serde_json::from_str(line).unwrap();
        let path = format!("inputSchema.properties.p.{keyword}");
        let (wide, narrow) = (param(wide), param(narrow));
        expect(&wide, &narrow, K::TypeNarrowed, Some(&path), BOTH);
        expect(&narrow, &wide, K::TypeWidened, Some(&path), AFFECTS);
    }
    // A type or a pattern replaced by another narrows both ways.
    let ty = Some("inputSchema.properties.p.type");
    let (string, integer) = (
        param(json!({"type": "string"})),
        param(json!({"type": "integer"})),
    );
    expect(&string, &integer, K::TypeNarrowed, ty, BOTH);
    expect(&integer, &string, K::TypeNarrowed, ty, BOTH);
    let pattern = Some("inputSchema.properties.p.pattern");
    let (a, b) = (
        param(json!({"pattern": "^a"})),
        param(json!({"pattern": "^b"})),
    );
    expect(&a, &b, K::TypeNarrowed, pattern, BOTH);
    expect(&b, &a, K::TypeNarrowed, pattern, BOTH);
}

#[test]
fn notes_say_what_changed() {
    let two = param(json!({"enum": ["open", "closed"]}));
    let one = param(json!({"enum": ["open"]}));
    let path = Some("inputSchema.properties.p.enum");
    let c = expect(&two, &one, K::TypeNarrowed, path, BOTH);
    assert_eq!(c.note.as_deref(), Some("enum values removed: \"closed\""));
    let values = (Some(json!(["open", "closed"])), Some(json!(["open"])));
    assert_eq!((c.before, c.after), values);
    let (hundred, fifty) = (
        param(json!({"maximum": 100})),
        param(json!({"maximum": 50})),
    );
    let c = diff(&hundred, &fifty).remove(0);
    assert_eq!(c.note.as_deref(), Some("maximum 100 → 50"));
}

#[test]
fn output_schema_changes() {
    let out = |schema: Value| tool(json!({ "outputSchema": schema }));
    let object = |props: Value, required: Value| {
        out(json!({"type": "object", "properties": props, "required": required}))
    };
    let string = json!({"type": "string"});
    let full = object(json!({"a": string, "b": string}), json!(["a"]));
    let only_a = object(json!({"a": string}), json!(["a"]));
    let a_optional = object(json!({"a": string, "b": string}), json!([]));
    let a_integer = object(json!({"a": {"type": "integer"}, "b": string}), json!(["a"]));
    let none = tool(json!({}));
    let whole = Some("outputSchema");
    let a = Some("outputSchema.properties.a");
    let b = Some("outputSchema.properties.b");
    expect(&full, &none, K::OutputSchemaRemoved, whole, BREAKS);
    expect(&none, &full, K::OutputSchemaAdded, whole, NEITHER);
    expect(&full, &only_a, K::OutputSchemaNarrowed, b, BREAKS);
    expect(&full, &a_optional, K::OutputSchemaNarrowed, a, BREAKS);
    let a_type = Some("outputSchema.properties.a.type");
    expect(&full, &a_integer, K::OutputSchemaNarrowed, a_type, BREAKS);
    expect(&only_a, &full, K::OutputSchemaWidened, b, NEITHER);
    expect(&a_optional, &full, K::OutputSchemaWidened, a, NEITHER);
    // The refinement: what an output schema says affects no model.
    let mut described = full.clone();
    described.tools[0]["outputSchema"]["properties"]["a"]["description"] = json!("the a");
    let text = Some("outputSchema.properties.a.description");
    expect(&full, &described, K::DescriptionChanged, text, NEITHER);
}

#[test]
fn descriptions_and_titles() {
    let finds = tool(json!({"description": "Finds."}));
    let searches = tool(json!({"description": "Searches."}));
    let path = Some("description");
    let c = expect(&finds, &searches, K::DescriptionChanged, path, AFFECTS);
    assert_eq!(c.after, Some(json!("Searches.")));
    let (untitled, titled) = (tool(json!({})), tool(json!({"title": "T"})));
    expect(&untitled, &titled, K::TitleChanged, Some("title"), AFFECTS);
    let annotated = |title: &str| tool(json!({"annotations": {"title": title}}));
    let path = Some("annotations.title");
    expect(
        &annotated("A"),
        &annotated("B"),
        K::TitleChanged,
        path,
        AFFECTS,
    );
    let (p, q) = (param(json!({"title": "P"})), param(json!({"title": "Q"})));
    let path = Some("inputSchema.properties.p.title");
    expect(&p, &q, K::TitleChanged, path, AFFECTS);
}

#[test]
fn prompts_and_their_arguments() {
    let prompt = |text: &str, arguments: Value| {
        let mut prompt = json!({"name": "p", "description": text, "title": text});
        prompt["arguments"] = arguments;
        snapshot(json!({ "prompts": [prompt] }))
    };
    let described = |text: &str| prompt(text, json!([{"name": "a", "description": text}]));
    let changes = diff(&described("x"), &described("y"));
    let found: Vec<_> = changes
        .iter()
        .map(|c| (c.kind, c.path.as_deref()))
        .collect();
    let expected = [
        (K::DescriptionChanged, Some("arguments.a.description")),
        (K::DescriptionChanged, Some("description")),
        (K::TitleChanged, Some("title")),
    ];
    assert_eq!(found, expected);
    let none = prompt("x", json!([]));
    let optional = prompt("x", json!([{"name": "a"}]));
    let required = prompt("x", json!([{"name": "a", "required": true}]));
    let a = Some("arguments.a");
    expect(&none, &required, K::RequiredParameterAdded, a, BOTH);
    expect(&none, &optional, K::OptionalParameterAdded, a, AFFECTS);
    expect(&optional, &required, K::ParameterMadeRequired, a, BOTH);
    expect(&required, &none, K::ParameterRemoved, a, BOTH);
}

#[test]
fn deep_descriptions_and_defaults() {
    let state = |d: &str| param(json!({"properties": {"state": {"description": d}}}));
    let (old, new) = (state("open or closed"), state("the state"));
    let path = Some("inputSchema.properties.p.properties.state.description");
    expect(&old, &new, K::DescriptionChanged, path, AFFECTS);
    let (ten, twenty) = (param(json!({"default": 10})), param(json!({"default": 20})));
    let path = Some("inputSchema.properties.p.default");
    let c = expect(&ten, &twenty, K::DescriptionChanged, path, AFFECTS);
    assert_eq!(c.note.as_deref(), Some("default changed"));
}

#[test]
fn annotations() {
    let hinted = |hints: Value| tool(json!({ "annotations": hints }));
    let safe = hinted(json!({"destructiveHint": false}));
    let destructive = hinted(json!({"destructiveHint": true}));
    let path = Some("annotations.destructiveHint");
    let c = expect(&safe, &destructive, K::AnnotationsChanged, path, AFFECTS);
    let note = "destructiveHint false → true (absent means true)";
    assert_eq!(c.note.as_deref(), Some(note));
    // Spelling out a hint's default is no change.
    assert!(diff(&hinted(json!({})), &destructive).is_empty());
}

#[test]
fn instructions_and_capabilities() {
    let server = |facts: Value| snapshot(json!({ "server": facts }));
    let (a, b) = (
        server(json!({"instructions": "a"})),
        server(json!({"instructions": "b"})),
    );
    let c = expect(&a, &b, K::InstructionsChanged, None, AFFECTS);
    assert_eq!(
        (c.list, c.name),
        ("server".to_owned(), "instructions".to_owned())
    );
    let caps = |listing: bool, extensions: Value| {
        let tools = json!({ "listChanged": listing });
        server(json!({"capabilities": {"tools": tools, "extensions": extensions}}))
    };
    let before = caps(true, json!({"x": {}}));
    let (switched_off, no_x) = (caps(false, json!({"x": {}})), caps(true, json!({})));
    let listing = Some("tools.listChanged");
    expect(
        &before,
        &switched_off,
        K::CapabilityRemoved,
        listing,
        BREAKS,
    );
    let x = Some("extensions.x");
    expect(&before, &no_x, K::CapabilityRemoved, x, BREAKS);
    expect(&switched_off, &before, K::CapabilityAdded, listing, NEITHER);
}

#[test]
fn protocol_versions() {
    let versions = |v: Value| snapshot(json!({"server": {"supportedVersions": v}}));
    let both = versions(json!(["2025-11-25", "2026-07-28"]));
    let modern = versions(json!(["2026-07-28"]));
    // A server.json without `protocolEra` lists every version, each in its era by date; the
    // rows name the era (issue 49: they were unplaced before eras were compared apart).
    let legacy_era = Some("legacy");
    let c = expect(
        &both,
        &modern,
        K::ProtocolVersionDropped,
        legacy_era,
        BREAKS,
    );
    assert_eq!(c.before, Some(json!("2025-11-25")));
    let every = "drops every legacy version: breaks every legacy client";
    assert_eq!(c.note.as_deref(), Some(every));
    let old = versions(json!(["2025-06-18", "2025-11-25"]));
    let legacy = versions(json!(["2025-11-25"]));
    let c = expect(&old, &legacy, K::ProtocolVersionDropped, legacy_era, BREAKS);
    let note = c.note.unwrap_or_default();
    assert!(!note.contains("every"), "a legacy version is left: {note}");
    expect(&modern, &both, K::ProtocolVersionAdded, legacy_era, NEITHER);
}

#[test]
fn resource_moves_and_mime_types() {
    let resource = |uri: &str, mime: &str| {
        snapshot(json!({"resources": [{"uri": uri, "name": "readme", "mimeType": mime}]}))
    };
    let plain = resource("file:///README", "text/plain");
    let moved = resource("file:///README.md", "text/plain");
    let c = expect(&plain, &moved, K::ResourceUriChanged, Some("uri"), BREAKS);
    assert_eq!(c.after, Some(json!("file:///README.md")));
    let markdown = resource("file:///README", "text/markdown");
    let mime = Some("mimeType");
    expect(&plain, &markdown, K::MimeTypeChanged, mime, BREAKS);
    let template =
        |t: &str| snapshot(json!({"resourceTemplates": [{"uriTemplate": t, "name": "issue"}]}));
    let (issue, issues) = (template("issue://{id}"), template("issues://{id}"));
    let path = Some("uriTemplate");
    expect(&issue, &issues, K::ResourceTemplateChanged, path, BREAKS);
}

#[test]
fn error_semantics() {
    let probe = |outcome: &str, code: Value| {
        let probe = json!({"probe": "unknown_tool", "request": "tools/call of `nope`",
            "outcome": outcome, "code": code, "message": null, "data": null});
        snapshot(json!({"errors": {"probes": [probe]}}))
    };
    let error = probe("jsonrpc_error", json!(-32602));
    let is_error = probe("is_error", json!(null));
    let outcome = Some("outcome");
    let c = expect(&error, &is_error, K::ErrorSemanticsChanged, outcome, BREAKS);
    assert_eq!(c.note.as_deref(), Some("jsonrpc_error -32602 → is_error"));
    let not_found = probe("jsonrpc_error", json!(-32002));
    let code = Some("code");
    expect(&not_found, &error, K::ErrorSemanticsChanged, code, BREAKS);
    // Only probes run on both sides count.
    assert!(diff(&probe("skipped", json!(null)), &error).is_empty());
    assert!(diff(&error, &Snapshot::default()).is_empty());
}

#[test]
fn an_mcp_header_made_invalid() {
    let header = |ty: &str, name: &str| param(json!({"type": ty, "x-mcp-header": name}));
    let (region, spaced) = (header("string", "Region"), header("string", "Re gion"));
    let c = expect(&region, &spaced, K::McpHeaderInvalid, P, BOTH);
    assert!(c.note.unwrap().contains("token"), "the note says why");
    // A `number` may not be mirrored: the type change is reported, and the annotation.
    let changes = diff(&header("integer", "Limit"), &header("number", "Limit"));
    let invalid = |c: &Change| c.kind == K::McpHeaderInvalid && c.path.as_deref() == P;
    assert!(changes.iter().any(invalid));
    // Newly added and invalid; already invalid is no change.
    let (number, ratio) = (param(json!({"type": "number"})), header("number", "Ratio"));
    expect(&number, &ratio, K::McpHeaderInvalid, P, BOTH);
    assert!(diff(&ratio, &ratio.clone()).is_empty());
}

#[test]
fn header_validity_rules() {
    let opt = json!({"type": ["boolean", "null"], "x-mcp-header": "Opt"});
    let schema = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "ratio": {"type": "number", "x-mcp-header": "Ratio"},
        "bad": {"type": "string", "x-mcp-header": "Bad Name"},
        "dup": {"type": "integer", "x-mcp-header": "region"},
        "list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}},
        "nested": {"type": "object", "properties": {"opt": opt}},
    }});
    let headers = header_annotations(&schema, "inputSchema");
    let problem = |p: &str| {
        headers[&format!("inputSchema.properties.{p}")]
            .problem
            .clone()
    };
    let says = |p: &str, what: &str| assert!(problem(p).unwrap().contains(what), "{p}: {what}");
    says("region", "unique");
    says("dup", "unique");
    says("ratio", "only string, integer and boolean");
    says("bad", "token");
    says("list.items", "reachable");
    assert_eq!(problem("nested.properties.opt"), None);
}

#[test]
fn an_undecidable_rewrite_is_one_breaking_schema_change() {
    let before = param(json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}));
    let after = param(json!({"anyOf": [{"type": "string"}, {"type": "boolean"}]}));
    let path = Some("inputSchema.properties.p.anyOf");
    let c = expect(&before, &after, K::SchemaChanged, path, BOTH);
    assert!(c.note.unwrap().contains("could not be decided"));
}

#[test]
fn deep_changes_are_reported_at_their_full_path() {
    let filter = |states: Value| param(json!({"properties": {"state": {"enum": states}}}));
    let (both, open) = (filter(json!(["open", "closed"])), filter(json!(["open"])));
    let path = Some("inputSchema.properties.p.properties.state.enum");
    expect(&both, &open, K::TypeNarrowed, path, BOTH);
    let tags = |ty: &str| param(json!({"type": "array", "items": {"type": ty}}));
    let path = Some("inputSchema.properties.p.items.type");
    expect(
        &tags("string"),
        &tags("integer"),
        K::TypeNarrowed,
        path,
        BOTH,
    );
    let extra = |ty: &str| param(json!({"additionalProperties": {"type": ty}}));
    let path = Some("inputSchema.properties.p.additionalProperties.type");
    expect(
        &extra("integer"),
        &extra("number"),
        K::TypeWidened,
        path,
        AFFECTS,
    );
}

#[test]
fn refs_are_resolved() {
    let with_defs = |states: Value| {
        let schema = json!({"type": "object", "$defs": {"State": {"enum": states}},
            "properties": {"p": {"$ref": "#/$defs/State"}}});
        tools(json!([{"name": "t", "inputSchema": schema}]))
    };
    let (two, one) = (with_defs(json!(["a", "b"])), with_defs(json!(["a"])));
    let path = Some("inputSchema.properties.p.enum");
    expect(&two, &one, K::TypeNarrowed, path, BOTH);
    // Moving a definition into `$defs` changes nothing.
    assert!(diff(&param(json!({"enum": ["a", "b"]})), &two).is_empty());
    // A recursive schema neither loops nor reports itself.
    let node = json!({"type": "object", "properties": {"kid": {"$ref": "#/$defs/n"}}});
    let tree = json!({"$defs": {"n": node}, "properties": {"p": {"$ref": "#/$defs/n"}}});
    let tree = tools(json!([{"name": "t", "inputSchema": tree}]));
    assert!(diff(&tree, &tree.clone()).is_empty());
}

#[test]
fn normalization() {
    let n = json!({"$ref": "#/definitions/a~1b", "description": "n"});
    let defs = json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
        "definitions": {"a/b": {"type": "integer"}}, "properties": {"n": n}});
    let resolved = json!({"properties": {"n": {"type": "integer", "description": "n"}}});
    assert_eq!(normalize(&defs), resolved);
    let node = json!({"properties": {"kid": {"$ref": "#/$defs/n"}}});
    let tree = normalize(&json!({"$defs": {"n": node}, "$ref": "#/$defs/n"}));
    assert_eq!(tree["properties"]["kid"], json!({"$ref": "#/$defs/n"}));
    let a = normalize(&json!({"type": ["null", "string"], "required": ["b", "a"]}));
    let b = normalize(&json!({"type": ["string", "null"], "required": ["a", "b", "a"]}));
    assert_eq!(a, b);
    let single = normalize(&json!({"type": ["string"]}));
    assert_eq!(single, json!({"type": "string"}));
}

#[test]
fn key_order_and_dollar_schema_are_ignored() {
    let a = r#"[{"name": "t", "inputSchema": {"type": "object",
        "properties": {"q": {"type": "string", "minLength": 1}}}}]"#;
    let b = r#"[{"inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#",
        "properties": {"q": {"minLength": 1, "type": "string"}}, "type": "object"}, "name": "t"}]"#;
    let parse = |text: &str| tools(serde_json::from_str(text).unwrap());
    assert!(diff(&parse(a), &parse(b)).is_empty());
}

#[test]
fn renames() {
    let q = json!({"properties": {"q": {"type": "string"}}, "required": ["q"]});
    let search = tools(json!([{"name": "search", "inputSchema": q}]));
    let find = tools(json!([{"name": "find", "inputSchema": q}]));
    let c = expect(&search, &find, K::ToolRenamed, Some("name"), BOTH);
    let names = (Some(json!("search")), Some(json!("find")));
    assert_eq!((c.before, c.after), names);
    let other = tools(json!([{"name": "find", "inputSchema": {"type": "object"}}]));
    let kinds: Vec<K> = diff(&search, &other).iter().map(|c| c.kind).collect();
    assert_eq!(kinds, [K::ToolRemoved, K::ToolAdded]);
}

#[test]
fn breaking_changes_come_first() {
    let before = tools(json!([{"name": "a"}, {"name": "b", "description": "x"}]));
    let after = tools(json!([{"name": "b", "description": "y"}]));
    let kinds: Vec<K> = diff(&before, &after).iter().map(|c| c.kind).collect();
    assert_eq!(kinds, [K::ToolRemoved, K::DescriptionChanged]);
}

/// A small schema: primitive leaves (sometimes with an enum, a maximum, a description, an
/// `x-mcp-header` or inside an `anyOf`), objects and arrays, at most three levels deep.
fn schema() -> impl Strategy<Value = Value> {
    let types = prop::sample::select(vec!["string", "integer", "number", "boolean"]);
    let header = prop::option::of(prop::sample::select(vec!["Region", "Bad Name"]));
    let leaf = (
        types,
        0..4usize,
        prop::option::of(1..4u8),
        any::<bool>(),
        header,
        any::<bool>(),
    );
    let leaf = leaf.prop_map(|(ty, enum_len, max, described, header, nullable)| {
        let mut s = json!({ "type": ty });
        if ty == "string" && enum_len > 0 {
            s["enum"] = json!(["x", "y", "z"][..enum_len]);
        }
        if let Some(max) = max {
            s["maximum"] = json!(max);
        }
        if described {
            s["description"] = json!("d");
        }
        if let Some(header) = header {
            s["x-mcp-header"] = json!(header);
        }
        if nullable {
            s = json!({"anyOf": [s, {"type": "null"}]});
        }
        s
    });
    leaf.prop_recursive(3, 12, 3, |inner| {
        let array = inner
            .clone()
            .prop_map(|items| json!({"type": "array", "items": items}));
        prop_oneof![object(inner), array]
    })
}

fn object(property: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
    let names = prop::sample::select(vec!["p", "q", "r"]);
    let props = prop::collection::btree_map(names, property, 0..3);
    (props, any::<u8>()).prop_map(|(props, mask)| {
        let required = props
            .keys()
            .enumerate()
            .filter(|(i, _)| mask & (1 << i) != 0);
        let required: Vec<&str> = required.map(|(_, name)| *name).collect();
        json!({"type": "object", "properties": props, "required": required})
    })
}

fn tool_list() -> impl Strategy<Value = Snapshot> {
    let names = prop::sample::select(vec!["a", "b", "c", "d"]);
    let tool = (
        object(schema()),
        prop::option::of(object(schema())),
        any::<bool>(),
    );
    prop::collection::btree_map(names, tool, 0..4).prop_map(|tools| {
        let list = tools.into_iter().map(|(name, (input, output, described))| {
            let mut tool = json!({"name": name, "inputSchema": input});
            if let Some(output) = output {
                tool["outputSchema"] = output;
            }
            if described {
                tool["description"] = json!("does it");
            }
            tool
        });
        Snapshot {
            tools: list.collect(),
            ..Snapshot::default()
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_snapshot_has_no_diff_with_itself(s in tool_list()) {
        prop_assert!(diff(&s, &s).is_empty());
    }

    #[test]
    fn every_change_has_its_kinds_flags(a in tool_list(), b in tool_list()) {
        let changes = diff(&a, &b);
        for c in &changes {
            let (breaks, mut affects) = c.kind.flags();
            let in_output = c.path.as_deref().is_some_and(|p| p.starts_with("outputSchema."));
            let text = matches!(c.kind, K::DescriptionChanged | K::TitleChanged | K::SchemaChanged);
            if in_output && text {
                affects = false; // the one documented refinement
            }
            prop_assert_eq!((c.breaks_clients, c.affects_models), (breaks, affects), "{:?}", c);
        }
        prop_assert!(changes.windows(2).all(|w| w[0].breaks_clients >= w[1].breaks_clients));
    }

    #[test]
    fn removals_and_additions_mirror_each_other(a in tool_list(), b in tool_list()) {
        let count = |changes: &[Change], kind: K| changes.iter().filter(|c| c.kind == kind).count();
        let (forward, backward) = (diff(&a, &b), diff(&b, &a));
        prop_assert_eq!(count(&forward, K::ToolRemoved), count(&backward, K::ToolAdded));
        prop_assert_eq!(count(&forward, K::ToolRenamed), count(&backward, K::ToolRenamed));
    }
}
