//! Tests of the diff's like-with-like rules (issue 49): protocol versions compared era by era,
//! the unsupported-version probe compared in one era, empty capability containers, and bounds at
//! the edge of JSON numbers; with the real breaking changes of the same releases kept breaking.

use serde_json::{json, Value};

use super::diff;
use crate::contract::model::{Change, ChangeKind as K, Snapshot};

const ALL_LEGACY: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
const MODERN: &str = "2026-07-28";

fn server(facts: Value) -> Snapshot {
    Snapshot {
        server: facts,
        ..Snapshot::default()
    }
}

/// A snapshot as mcpeval now writes it: the session's era and what each era accepts.
fn accepting(session: &str, legacy: &[&str], modern: &[&str]) -> Snapshot {
    let supported = if session == "modern" { modern } else { legacy };
    server(
        json!({"protocolEra": session, "supportedVersions": supported,
        "acceptedVersions": {"legacy": legacy, "modern": modern}}),
    )
}

/// A snapshot from before `acceptedVersions`: the session era's versions only.
fn older(session: &str, supported: &[&str]) -> Snapshot {
    server(json!({"protocolEra": session, "supportedVersions": supported}))
}

fn breaking(changes: &[Change]) -> Vec<&Change> {
    changes.iter().filter(|c| c.breaks_clients).collect()
}

fn of_kind(changes: &[Change], kind: K) -> Vec<&Change> {
    changes.iter().filter(|c| c.kind == kind).collect()
}

#[test]
fn a_release_that_adds_the_modern_era_drops_no_legacy_version() {
    // The Python SDK's 0.6.2 → 2026.10.19: snapshotted legacy, then modern, and the new release
    // still answers a legacy `initialize` for all four versions.
    let old = accepting("legacy", &ALL_LEGACY, &[]);
    let new = accepting("modern", &ALL_LEGACY, &[MODERN]);
    let changes = diff(&old, &new);
    assert!(breaking(&changes).is_empty(), "{changes:#?}");
    let [added] = of_kind(&changes, K::ProtocolVersionAdded)[..] else {
        panic!("one version added: {changes:#?}");
    };
    assert_eq!(
        (added.path.as_deref(), added.after.as_ref()),
        (Some("modern"), Some(&json!(MODERN)))
    );
    assert!(added
        .note
        .as_deref()
        .unwrap()
        .contains("now speaks the modern era"));
    assert_eq!(changes.len(), 1, "{changes:#?}");
    // The other way, the modern era is what the candidate no longer speaks.
    let back = diff(&new, &old);
    let [dropped] = breaking(&back)[..] else {
        panic!("{back:#?}");
    };
    assert_eq!(dropped.kind, K::ProtocolVersionDropped);
    assert_eq!(dropped.path.as_deref(), Some("modern"));
}

#[test]
fn a_legacy_server_that_stops_accepting_a_version_is_reported() {
    let old = accepting("legacy", &ALL_LEGACY, &[]);
    let new = accepting("legacy", &ALL_LEGACY[1..], &[]);
    let changes = diff(&old, &new);
    let [dropped] = &changes[..] else {
        panic!("{changes:#?}");
    };
    assert_eq!(dropped.kind, K::ProtocolVersionDropped);
    assert!(dropped.breaks_clients);
    assert_eq!(dropped.before, Some(json!("2024-11-05")));
    assert_eq!(dropped.path.as_deref(), Some("legacy"));
    // Dropping the last legacy version says what it breaks, even when the modern era is new.
    let modern_only = accepting("modern", &[], &[MODERN]);
    let changes = diff(&old, &modern_only);
    assert_eq!(breaking(&changes).len(), 4, "{changes:#?}");
    let every = "drops every legacy version: breaks every legacy client";
    assert!(breaking(&changes)
        .iter()
        .all(|c| c.note.as_deref() == Some(every)));
    // Older snapshots of the same era still compare that era.
    let changes = diff(
        &older("legacy", &ALL_LEGACY),
        &older("legacy", &ALL_LEGACY[2..]),
    );
    assert_eq!(breaking(&changes).len(), 2, "{changes:#?}");
}

#[test]
fn older_snapshots_compare_only_the_era_both_record_and_say_so() {
    // Before `acceptedVersions`: one side legacy, the other modern, nothing comparable.
    let changes = diff(&older("legacy", &ALL_LEGACY), &older("modern", &[MODERN]));
    assert!(breaking(&changes).is_empty(), "{changes:#?}");
    let rows = of_kind(&changes, K::ProtocolVersionsNotCompared);
    assert_eq!(rows.len(), 2, "one per era: {changes:#?}");
    assert_eq!(changes.len(), 2, "{changes:#?}");
    let legacy = rows.iter().find(|c| c.path.as_deref() == Some("legacy"));
    let note = legacy.and_then(|c| c.note.as_deref()).unwrap();
    assert!(
        note.contains("candidate's snapshot does not record the legacy era"),
        "{note}"
    );
    // An older baseline against a new candidate: the legacy era is compared, the modern is not.
    let new = accepting("modern", &ALL_LEGACY[1..], &[MODERN]);
    let changes = diff(&older("legacy", &ALL_LEGACY), &new);
    let [dropped] = breaking(&changes)[..] else {
        panic!("{changes:#?}");
    };
    assert_eq!(dropped.before, Some(json!("2024-11-05")));
    let rows = of_kind(&changes, K::ProtocolVersionsNotCompared);
    assert_eq!(rows.len(), 1, "{changes:#?}");
    assert_eq!(rows[0].path.as_deref(), Some("modern"));
    assert!(!rows[0].breaks_clients && !rows[0].affects_models);
}

/// One probe's answer: (probe, era, request, outcome, code).
type Probe<'a> = (&'a str, Option<&'a str>, &'a str, &'a str, Option<i64>);

/// An `errors.json` of these probes.
fn probes(list: &[Probe]) -> Snapshot {
    let probes: Vec<Value> = list
        .iter()
        .map(|(probe, era, request, outcome, code)| {
            json!({"probe": probe, "era": era, "request": request, "outcome": outcome,
                "code": code})
        })
        .collect();
    Snapshot {
        errors: Some(json!({ "probes": probes })),
        ..Snapshot::default()
    }
}

const VERSION: &str = "unsupported_protocol_version";
const INITIALIZE: &str = "initialize with protocol version 1900-01-01";
const IN_META: &str = "tools/list with protocol version 1900-01-01 in _meta";

#[test]
fn the_unsupported_version_probe_is_compared_in_one_era() {
    let legacy = Some("legacy");
    let modern = Some("modern");
    let old = probes(&[(VERSION, legacy, INITIALIZE, "result", None)]);
    // The new release answers in both eras: its modern -32022 is not compared with the old
    // release's legacy answer, its legacy answer is.
    let new = probes(&[
        (VERSION, modern, IN_META, "jsonrpc_error", Some(-32022)),
        (VERSION, legacy, INITIALIZE, "result", None),
    ]);
    assert!(diff(&old, &new).is_empty(), "{:#?}", diff(&old, &new));
    let refusing = probes(&[(VERSION, legacy, INITIALIZE, "jsonrpc_error", Some(-32602))]);
    let changes = diff(&old, &refusing);
    let [c] = &changes[..] else {
        panic!("{changes:#?}");
    };
    assert_eq!(c.kind, K::ErrorSemanticsChanged);
    assert!(c.breaks_clients);
    let note = c.note.as_deref().unwrap();
    assert_eq!(
        note,
        "result → jsonrpc_error -32602 (both in the legacy era)"
    );
    // Older snapshots record no era: the request says which.
    let untagged = |request, outcome, code| probes(&[(VERSION, None, request, outcome, code)]);
    let (old, new) = (
        untagged(INITIALIZE, "result", None),
        untagged(IN_META, "jsonrpc_error", Some(-32022)),
    );
    assert!(diff(&old, &new).is_empty(), "{:#?}", diff(&old, &new));
}

#[test]
fn the_other_probes_still_compare_across_sessions() {
    // The SDK's own change of error semantics is real in both eras, and stays breaking.
    let old = probes(&[
        (
            "unknown_tool",
            Some("legacy"),
            "tools/call",
            "is_error",
            None,
        ),
        (
            "unknown_resource",
            Some("legacy"),
            "resources/read",
            "jsonrpc_error",
            Some(-32601),
        ),
    ]);
    let new = probes(&[
        (
            "unknown_tool",
            Some("modern"),
            "tools/call",
            "jsonrpc_error",
            Some(-32602),
        ),
        (
            "unknown_resource",
            Some("modern"),
            "resources/read",
            "jsonrpc_error",
            Some(-32602),
        ),
    ]);
    let changes = diff(&old, &new);
    assert_eq!(breaking(&changes).len(), 2, "{changes:#?}");
    let tool = changes.iter().find(|c| c.name == "unknown_tool").unwrap();
    let note = tool.note.as_deref().unwrap();
    assert!(
        note.starts_with("is_error → jsonrpc_error -32602"),
        "{note}"
    );
    assert!(
        note.contains("a legacy session, then a modern one"),
        "{note}"
    );
    let resource = changes
        .iter()
        .find(|c| c.name == "unknown_resource")
        .unwrap();
    assert_eq!(resource.path.as_deref(), Some("code"));
}

#[test]
fn probes_made_in_both_eras_compare_the_era_both_sides_speak() {
    let tool = |era, outcome, code| ("unknown_tool", Some(era), "tools/call", outcome, code);
    // The baseline speaks legacy only; the candidate answers legacy as the baseline did, and
    // modern otherwise: nothing changed for any client the baseline had.
    let old = probes(&[tool("legacy", "is_error", None)]);
    let new = probes(&[
        tool("modern", "jsonrpc_error", Some(-32602)),
        tool("legacy", "is_error", None),
    ]);
    assert!(diff(&old, &new).is_empty(), "{:#?}", diff(&old, &new));
    // Both speak both eras; the modern answer changed: one row, in that era.
    let both = probes(&[
        tool("modern", "is_error", None),
        tool("legacy", "is_error", None),
    ]);
    let changes = diff(&both, &new);
    let [c] = &changes[..] else {
        panic!("{changes:#?}");
    };
    let note = c.note.as_deref().unwrap();
    assert_eq!(
        note,
        "is_error → jsonrpc_error -32602 (both in the modern era)"
    );
    // An older baseline's probes carry no era: they are its session's (`protocolEra`).
    let older = Snapshot {
        server: json!({"protocolEra": "legacy"}),
        ..probes(&[("unknown_tool", None, "tools/call", "is_error", None)])
    };
    let new = Snapshot {
        server: json!({"protocolEra": "modern"}),
        ..new
    };
    assert!(diff(&older, &new).is_empty(), "{:#?}", diff(&older, &new));
}

#[test]
fn an_empty_capability_container_offers_nothing() {
    let caps = |capabilities: Value| server(json!({ "capabilities": capabilities }));
    let with = caps(json!({"experimental": {}, "tools": {}}));
    let without = caps(json!({"tools": {}}));
    let changes = diff(&with, &without);
    let [c] = &changes[..] else {
        panic!("{changes:#?}");
    };
    assert_eq!(
        (c.kind, c.path.as_deref()),
        (K::EmptyCapabilityRemoved, Some("experimental"))
    );
    assert_eq!((c.breaks_clients, c.affects_models), (false, false));
    assert!(
        !diff(&without, &with)[0].breaks_clients,
        "adding one neither"
    );
    let extensions = caps(json!({"extensions": {}, "tools": {}}));
    assert_eq!(
        diff(&extensions, &without)[0].kind,
        K::EmptyCapabilityRemoved
    );
    // A named experimental capability, even an empty one, is offered by being there; so is a
    // standard capability declared as `{}`.
    let named = caps(json!({"experimental": {"x": {}}, "tools": {}}));
    let changes = diff(&named, &with);
    assert!(changes
        .iter()
        .all(|c| c.kind == K::CapabilityRemoved && c.breaks_clients));
    assert_eq!(changes[0].path.as_deref(), Some("experimental.x"));
    let changes = diff(&named, &without);
    assert_eq!(
        changes[0].kind,
        K::CapabilityRemoved,
        "a container with one in it"
    );
    let logging = caps(json!({"logging": {}, "tools": {}}));
    assert!(diff(&logging, &without)[0].breaks_clients);
    assert!(diff(&with, &caps(json!({"experimental": {}})))[0].breaks_clients);
}

/// A tool `t` with one parameter `p` of this schema.
fn param(schema: Value) -> Snapshot {
    let input = json!({"type": "object", "properties": {"p": schema}});
    Snapshot {
        tools: vec![json!({"name": "t", "inputSchema": input})],
        ..Snapshot::default()
    }
}

#[test]
fn a_bound_at_the_edge_of_json_numbers_is_no_bound() {
    let int = param(json!({"type": "integer"}));
    let edge = 9_007_199_254_740_991_i64;
    for (key, value) in [
        ("maximum", json!(edge)),
        ("minimum", json!(-edge)),
        ("exclusiveMaximum", json!(1e300)),
        ("exclusiveMinimum", json!(-1e300)),
    ] {
        let bounded = param(json!({"type": "integer", key: value}));
        assert!(diff(&int, &bounded).is_empty(), "{key}");
        assert!(diff(&bounded, &int).is_empty(), "{key}");
    }
    // zod's `.int().min(1)` from a plain integer: the minimum narrows, the maximum does not.
    let zod = param(json!({"type": "integer", "minimum": 1, "maximum": edge}));
    let changes = diff(&int, &zod);
    let [c] = &changes[..] else {
        panic!("{changes:#?}");
    };
    assert_eq!((c.kind, c.breaks_clients), (K::TypeNarrowed, true));
    assert!(c.path.as_deref().unwrap().ends_with("minimum"));
    // A real bound against the edge: lowered from it narrows, raised to it widens.
    let hundred = param(json!({"type": "integer", "maximum": 100}));
    let at_edge = param(json!({"type": "integer", "maximum": edge}));
    let narrowed = diff(&at_edge, &hundred);
    assert_eq!(narrowed[0].kind, K::TypeNarrowed, "{narrowed:#?}");
    assert!(narrowed[0].note.as_deref().unwrap().contains("no bound"));
    assert_eq!(diff(&hundred, &at_edge)[0].kind, K::TypeWidened);
    // Just inside the edge is still a bound.
    let inside = param(json!({"type": "integer", "maximum": edge - 1}));
    assert_eq!(diff(&int, &inside)[0].kind, K::TypeNarrowed);
}

#[test]
fn a_new_min_items_still_breaks() {
    // mcp-server-git's `git_add`: `files` now needs at least one item.
    let files = |extra: Value| {
        let mut schema = json!({"type": "array", "items": {"type": "string"}});
        schema
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        param(schema)
    };
    let changes = diff(&files(json!({})), &files(json!({"minItems": 1})));
    let [c] = &changes[..] else {
        panic!("{changes:#?}");
    };
    assert_eq!((c.kind, c.breaks_clients), (K::TypeNarrowed, true));
    assert_eq!(c.note.as_deref(), Some("minItems 1 added"));
}
