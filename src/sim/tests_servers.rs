//! Tests of the sim against tool lists of real published servers (memory, time), not the demo.

use serde_json::{json, Value};

use super::tests::{only_call, play, rate, request, sim, tool};
use crate::host::ToolSpec;

fn names(description: &str) -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": description})
}

/// `@modelcontextprotocol/server-memory`'s tools, shown with the `mcp__memory__` prefix.
fn memory_tools() -> Vec<ToolSpec> {
    let entity = json!({"type": "object", "required": ["name", "entityType", "observations"],
        "properties": {
            "name": {"type": "string", "description": "The name of the entity"},
            "entityType": {"type": "string", "description": "The type of the entity"},
            "observations": names("An array of observation contents associated with the entity")}});
    let relation = json!({"type": "object", "required": ["from", "to", "relationType"],
        "properties": {
            "from": {"type": "string", "description": "The name of the entity where the relation starts"},
            "to": {"type": "string", "description": "The name of the entity where the relation ends"},
            "relationType": {"type": "string", "description": "The type of the relation"}}});
    let obj = |required: &str, prop: Value| json!({"type": "object", "required": [required], "properties": {required: prop}});
    let t = |name: &str, desc: &str, schema: Value| {
        tool(&format!("mcp__memory__{name}"), "", desc, schema)
    };
    vec![
        t(
            "create_entities",
            "Create multiple new entities in the knowledge graph",
            obj("entities", json!({"type": "array", "items": entity})),
        ),
        t(
            "create_relations",
            "Create multiple new relations between entities in the knowledge \
           graph. Relations should be in active voice",
            obj("relations", json!({"type": "array", "items": relation})),
        ),
        t(
            "add_observations",
            "Add new observations to existing entities in the knowledge graph",
            obj(
                "observations",
                json!({"type": "array", "items": {"type": "object",
              "required": ["entityName", "contents"], "properties": {
                  "entityName": {"type": "string", "description": "The name of the entity to add the observations to"},
                  "contents": names("An array of observation contents to add")}}}),
            ),
        ),
        t(
            "delete_entities",
            "Delete multiple entities and their associated relations from the \
           knowledge graph",
            obj("entityNames", names("An array of entity names to delete")),
        ),
        t(
            "read_graph",
            "Read the entire knowledge graph",
            json!({"type": "object", "properties": {}}),
        ),
        t(
            "search_nodes",
            "Search for nodes in the knowledge graph based on a query",
            obj(
                "query",
                json!({"type": "string", "description": "The search query to match \
              against entity names, types, and observation content"}),
            ),
        ),
        t(
            "open_nodes",
            "Open specific nodes in the knowledge graph by their names",
            obj("names", names("An array of entity names to retrieve")),
        ),
    ]
}

/// `mcp-server-time`'s tools.
fn time_tools() -> Vec<ToolSpec> {
    let tz = |which: &str, examples: &str| {
        json!({"type": "string", "description": format!("{which}IANA timezone name (e.g., \
               {examples}). Use 'UTC' as local timezone if no timezone provided by the user.")})
    };
    vec![
        tool(
            "get_current_time",
            "",
            "Get current time in a specific timezones",
            json!({"type": "object", "required": ["timezone"], "properties": {
                 "timezone": tz("", "'America/New_York', 'Europe/London'")}}),
        ),
        tool(
            "convert_time",
            "",
            "Convert time between timezones",
            json!({"type": "object", "required": ["source_timezone", "time", "target_timezone"],
                 "properties": {
                     "source_timezone": tz("Source ", "'America/New_York', 'Europe/London'"),
                     "time": {"type": "string", "description": "Time to convert in 24-hour format (HH:MM)"},
                     "target_timezone": tz("Target ", "'Asia/Tokyo', 'America/San_Francisco'")}}),
        ),
    ]
}

fn memory(prompt: &str, seed: u64) -> crate::host::CompletionRequest {
    request("", memory_tools(), prompt, seed)
}

fn time(prompt: &str, seed: u64) -> crate::host::CompletionRequest {
    request("", time_tools(), prompt, seed)
}

#[test]
fn memory_server_choices_are_sensible() {
    let create = "Create an entity named 'Alice' of type person";
    let r = rate(
        |s| memory(create, s),
        "mcp__memory__create_entities",
        |a| a["entities"][0]["name"] == "Alice" && a["entities"][0]["entityType"] == "person",
    );
    assert!(r >= 0.8, "create_entities {r}");
    let search = "Search the knowledge graph for nodes about Acme";
    let r = rate(
        |s| memory(search, s),
        "mcp__memory__search_nodes",
        |a| a["query"] == "Acme",
    );
    assert!(r >= 0.8, "search_nodes {r}");
    let read = "Show me the whole knowledge graph";
    let r = rate(
        |s| memory(read, s),
        "mcp__memory__read_graph",
        |a| a == &json!({}),
    );
    assert!(r >= 0.8, "read_graph {r}");
    let delete = "Delete the entity 'Bob'";
    let r = rate(
        |s| memory(delete, s),
        "mcp__memory__delete_entities",
        |a| a == &json!({"entityNames": ["Bob"]}),
    );
    assert!(r >= 0.8, "delete_entities {r}");
    let c = sim().respond(&memory("Who wrote Hamlet?", 1));
    assert!(c.tool_calls.is_empty(), "{c:?}");
}

#[test]
fn time_server_choices_are_sensible() {
    let now = "What time is it in New York?";
    let r = rate(
        |s| time(now, s),
        "get_current_time",
        |a| a["timezone"] == "America/New_York",
    );
    assert!(r >= 0.8, "get_current_time {r}");
    let convert = "Convert 14:30 from America/New_York to Europe/London";
    let r = rate(
        |s| time(convert, s),
        "convert_time",
        |a| {
            a == &json!({"source_timezone": "America/New_York", "time": "14:30",
                     "target_timezone": "Europe/London"})
        },
    );
    assert!(r >= 0.8, "convert_time {r}");
    let c = sim().respond(&time("Tell me a joke about cats", 1));
    assert!(c.tool_calls.is_empty(), "{c:?}");
    let turns = play(
        time("What is the current time in timezone Asia/Tokyo?", 4),
        &[r#"{"timezone":"Asia/Tokyo","datetime":"2026-11-02T21:04:00+09:00","is_dst":false}"#],
    );
    assert_eq!(
        only_call(&turns[0]),
        (
            "get_current_time".to_owned(),
            json!({"timezone": "Asia/Tokyo"})
        )
    );
    assert!(turns[1]
        .content
        .as_deref()
        .unwrap()
        .contains("2026-11-02T21:04:00+09:00"));
}

#[test]
fn odd_schemas_unicode_and_no_tools() {
    let tools = vec![
        tool(
            "mcp__x__note.add",
            "",
            "Add a note to a notebook.",
            json!({"type": "object",
            "required": ["text", "tags", "pinned", "meta"], "properties": {
                "text": {"type": ["string", "null"], "description": "The note text"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "pinned": {"type": "boolean"},
                "meta": {"type": "object", "properties": {"notebook": {"type": "string"}}},
                "weird": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}),
        ),
        tool("mcp__x__noop", "", "", json!({})),
    ];
    let prompt = "Add a note “Café déjà vu — ünïcode” in notebook ideas";
    let c = sim().respond(&request("", tools.clone(), prompt, 1));
    let (name, args) = only_call(&c);
    assert_eq!(name, "mcp__x__note.add");
    assert_eq!(args["text"], "Café déjà vu — ünïcode");
    assert_eq!(
        (args["pinned"].clone(), args["tags"].clone()),
        (json!(false), json!([]))
    );
    assert_eq!(args["meta"]["notebook"], "ideas");
    let none = sim().respond(&request("Never add notes — ever.", Vec::new(), prompt, 1));
    assert!(none.tool_calls.is_empty() && none.content.is_some());
}
