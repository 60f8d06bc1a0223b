//! Boundary tasks from a diff: for each input schema a candidate narrowed, call tasks with values
//! the baseline's schema accepts and the candidate's refuses, and values on the border of both.
//! Every value is checked against both schemas (JSON Schema, by the `jsonschema` crate); the
//! other arguments are filled from the schema alone (examples, defaults, enums, formats, bounds).

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use super::model::{Change, ChangeKind, Diff};

/// How many breaking values, and border values, one narrowed parameter gets at most.
const MAX_BREAKING: usize = 3;
const MAX_BORDER: usize = 1;
/// The name of an argument no schema declares (for `additionalProperties: false`).
const EXTRA_ARGUMENT: &str = "mcpeval_extra";

/// One generated call task.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundaryTask {
    pub id: String,
    pub tool: String,
    pub args: Map<String, Value>,
    /// The change it tests and why the value was chosen, for the task's comment.
    pub why: String,
    /// Valid under the baseline's schema and not the candidate's (else: valid under both).
    pub breaking: bool,
}

/// The boundary tasks of every input-schema narrowing in `diff`, and what could not be done.
/// `baseline` and `candidate` are the snapshots' `tools.json` lists.
pub fn boundary_tasks(
    diff: &Diff,
    baseline: &[Value],
    candidate: &[Value],
) -> (Vec<BoundaryTask>, Vec<String>) {
    let mut tasks: Vec<BoundaryTask> = Vec::new();
    let mut notes = Vec::new();
    let mut done: BTreeSet<(String, String)> = BTreeSet::new();
    for change in diff.changes.iter().filter(|c| narrows_input(c)) {
        let Some(param) = parameter(change) else {
            notes.push(format!(
                "{} `{}` {}: not a parameter of the input schema",
                kind_name(change.kind),
                change.name,
                change.path.as_deref().unwrap_or("")
            ));
            continue;
        };
        if !done.insert((change.name.clone(), param.clone())) {
            continue;
        }
        let find = |tools: &[Value]| {
            tools
                .iter()
                .find(|t| t["name"] == change.name.as_str())
                .map(|t| t["inputSchema"].clone())
        };
        let (Some(old), Some(new)) = (find(baseline), find(candidate)) else {
            notes.push(format!(
                "tool `{}`: not in both snapshots' tools.json",
                change.name
            ));
            continue;
        };
        let made = for_parameter(&change.name, &param, &old, &new, change);
        if made.is_empty() {
            notes.push(format!(
                "tool `{}` parameter `{param}` ({}): no value found that the baseline's schema \
                 accepts and the candidate's refuses",
                change.name,
                kind_name(change.kind)
            ));
        }
        tasks.extend(made);
    }
    let mut ids = BTreeSet::new();
    for task in &mut tasks {
        let mut id = task.id.clone();
        let mut n = 2;
        while !ids.insert(id.clone()) {
            id = format!("{}-{n}", task.id);
            n += 1;
        }
        task.id = id;
    }
    (tasks, notes)
}

/// Whether a change narrows what a tool's input schema accepts.
fn narrows_input(change: &Change) -> bool {
    change.list == "tools"
        && change
            .path
            .as_deref()
            .is_some_and(|p| p.starts_with("inputSchema"))
        && matches!(
            change.kind,
            ChangeKind::TypeNarrowed
                | ChangeKind::RequiredParameterAdded
                | ChangeKind::ParameterMadeRequired
        )
}

/// The top-level parameter a change is about (`inputSchema.properties.title.maxLength` →
/// `title`); `*` for the schema as a whole (`additionalProperties`).
fn parameter(change: &Change) -> Option<String> {
    let path = change.path.as_deref()?;
    let rest = path.strip_prefix("inputSchema")?.trim_start_matches('.');
    if let Some(props) = rest.strip_prefix("properties.") {
        return props.split('.').next().map(str::to_owned);
    }
    if rest.starts_with("additionalProperties") || rest.starts_with("required") {
        return Some("*".to_owned());
    }
    None
}

/// The kind as the diff writes it (`type_narrowed`).
fn kind_name(kind: ChangeKind) -> String {
    match serde_json::to_value(kind) {
        Ok(Value::String(s)) => s,
        _ => format!("{kind:?}"),
    }
}

/// A task id's part made from a name or URI: lower case, `-` between words.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        match c {
            'a'..='z' | '0'..='9' => out.push(c),
            'A'..='Z' => out.push(c.to_ascii_lowercase()),
            _ if !out.ends_with('-') => out.push('-'),
            _ => {}
        }
    }
    out.trim_matches('-').to_owned()
}

/// The tasks of one narrowed parameter: candidate values checked against both schemas.
fn for_parameter(
    tool: &str,
    param: &str,
    old: &Value,
    new: &Value,
    change: &Change,
) -> Vec<BoundaryTask> {
    let (Ok(old_check), Ok(new_check)) = (
        jsonschema::validator_for(old),
        jsonschema::validator_for(new),
    ) else {
        return Vec::new();
    };
    let base = filled_args(old, new);
    let mut tries: Vec<(String, Map<String, Value>)> = Vec::new();
    if param == "*" {
        let mut extra = base.clone();
        extra.insert(EXTRA_ARGUMENT.into(), json!("x"));
        tries.push((
            format!("an argument `{EXTRA_ARGUMENT}` no schema declares"),
            extra,
        ));
    } else {
        let mut without = base.clone();
        without.remove(param);
        tries.push((format!("without `{param}`"), without));
        let old_prop = &old["properties"][param];
        let new_prop = &new["properties"][param];
        for value in probe_values(old_prop, new_prop) {
            let mut args = base.clone();
            let shown = describe_value(&value);
            args.insert(param.to_owned(), value);
            tries.push((format!("`{param}` = {shown}"), args));
        }
    }
    let (mut breaking, mut border) = (Vec::new(), Vec::new());
    let mut seen = BTreeSet::new();
    for (what, args) in tries {
        let instance = Value::Object(args.clone());
        if !seen.insert(instance.to_string()) || !old_check.is_valid(&instance) {
            continue;
        }
        let kind = kind_name(change.kind);
        let note = change.note.as_deref().unwrap_or_default();
        let (list, is_breaking, label) = match new_check.is_valid(&instance) {
            false => (&mut breaking, true, "refused"),
            true => (&mut border, false, "border"),
        };
        let max = if is_breaking {
            MAX_BREAKING
        } else {
            MAX_BORDER
        };
        // The border is only worth a task where a bound is (lengths, numbers, enum values).
        if list.len() >= max || (!is_breaking && what.starts_with("without")) {
            continue;
        }
        let n = list.len() + 1;
        list.push(BoundaryTask {
            id: format!("boundary-{}-{}-{label}-{n}", slug(tool), slug(param)),
            tool: tool.to_owned(),
            args,
            why: format!(
                "{kind} `{tool}`.{param}{}: {what}, which the baseline's schema accepts and the \
                 candidate's {}",
                if note.is_empty() {
                    String::new()
                } else {
                    format!(" ({note})")
                },
                if is_breaking {
                    "refuses"
                } else {
                    "accepts too"
                }
            ),
            breaking: is_breaking,
        });
    }
    breaking.extend(border);
    breaking
}

fn describe_value(value: &Value) -> String {
    match value {
        Value::String(s) if s.chars().count() > 24 => {
            format!("a string of {} characters", s.chars().count())
        }
        other => other.to_string(),
    }
}

/// Values worth trying for a parameter narrowed from `old` to `new`: each enum value, each side
/// of every length and number bound, strings that may miss a new pattern, and a value of each
/// JSON type (for a changed type).
fn probe_values(old: &Value, new: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for schema in [old, new] {
        if let Some(values) = schema["enum"].as_array() {
            out.extend(values.iter().cloned());
        }
        if let Some(c) = schema.get("const") {
            out.push(c.clone());
        }
    }
    let integer = [old, new].iter().any(|s| is_type(s, "integer"));
    for schema in [old, new] {
        for key in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
            if let Some(b) = schema[key].as_f64() {
                let step = if integer { 1.0 } else { 0.5 };
                for v in [b, b + step, b - step] {
                    out.push(number(v, integer));
                }
            }
        }
        for key in ["minLength", "maxLength"] {
            if let Some(n) = schema[key].as_u64() {
                for len in [n, n + 1, n.saturating_sub(1)] {
                    out.push(Value::String(text_of_length(len as usize)));
                }
            }
        }
        for key in ["minItems", "maxItems"] {
            if let Some(n) = schema[key].as_u64() {
                let item = fill(&schema["items"]);
                for len in [n, n + 1, n.saturating_sub(1)] {
                    out.push(Value::Array(vec![item.clone(); len as usize]));
                }
            }
        }
    }
    // Strings that a new or changed pattern may refuse.
    if new.get("pattern").is_some() || new.get("format").is_some() {
        out.push(fill(old));
        for s in ["", "x", "X", "0", "mcpeval boundary value", "-1", "a b"] {
            out.push(json!(s));
        }
    }
    // A changed type: one value of each JSON type.
    if old.get("type") != new.get("type") {
        out.extend([
            json!(1),
            json!(1.5),
            json!("1"),
            json!(true),
            Value::Null,
            json!([]),
            json!({}),
        ]);
    }
    out
}

fn is_type(schema: &Value, ty: &str) -> bool {
    match &schema["type"] {
        Value::String(t) => t == ty,
        Value::Array(ts) => ts.iter().any(|t| t == ty),
        _ => false,
    }
}

fn number(v: f64, integer: bool) -> Value {
    if integer || v.fract() == 0.0 {
        json!(v as i64)
    } else {
        json!(v)
    }
}

/// A readable text of `len` characters.
fn text_of_length(len: usize) -> String {
    const WORDS: &str = "Boundary value from mcpeval tasks boundary ";
    WORDS.chars().cycle().take(len).collect()
}

/// The arguments every task of a tool starts from: each parameter either schema requires, filled
/// from the baseline's schema (from the candidate's where only it has the parameter).
fn filled_args(old: &Value, new: &Value) -> Map<String, Value> {
    let mut names: Vec<String> = Vec::new();
    for schema in [old, new] {
        for name in schema["required"].as_array().into_iter().flatten() {
            if let Some(name) = name.as_str().filter(|n| !names.iter().any(|m| m == n)) {
                names.push(name.to_owned());
            }
        }
    }
    names
        .into_iter()
        .map(|name| {
            let prop = match old["properties"].get(&name) {
                Some(p) => p,
                None => &new["properties"][&name],
            };
            (name, fill(prop))
        })
        .collect()
}

/// A value a schema accepts, from the schema alone: its `examples`, `default`, `const` or first
/// `enum` value, else one made from its type, format and bounds.
pub fn fill(schema: &Value) -> Value {
    if let Some(v) = schema["examples"].as_array().and_then(|e| e.first()) {
        return v.clone();
    }
    for key in ["default", "const"] {
        if let Some(v) = schema.get(key) {
            return v.clone();
        }
    }
    if let Some(v) = schema["enum"].as_array().and_then(|e| e.first()) {
        return v.clone();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(first) = schema[key].as_array().and_then(|e| e.first()) {
            return fill(first);
        }
    }
    let ty = match &schema["type"] {
        Value::String(t) => t.as_str(),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match ty {
        "integer" | "number" => {
            let low = schema["minimum"]
                .as_f64()
                .or_else(|| schema["exclusiveMinimum"].as_f64().map(|m| m + 1.0))
                .unwrap_or(1.0);
            let high = schema["maximum"].as_f64().unwrap_or(f64::MAX);
            number(low.max(1.0f64.min(high)), ty == "integer")
        }
        "boolean" => json!(true),
        "null" => Value::Null,
        "array" => {
            let n = schema["minItems"].as_u64().unwrap_or(0) as usize;
            Value::Array(vec![fill(&schema["items"]); n])
        }
        "object" => {
            let mut map = Map::new();
            for name in schema["required"].as_array().into_iter().flatten() {
                if let Some(name) = name.as_str() {
                    map.insert(name.to_owned(), fill(&schema["properties"][name]));
                }
            }
            Value::Object(map)
        }
        _ => json!(match schema["format"].as_str() {
            Some("date") => "2026-01-01".to_owned(),
            Some("date-time") => "2026-01-01T00:00:00Z".to_owned(),
            Some("time") => "12:00:00".to_owned(),
            Some("email") => "user@example.com".to_owned(),
            Some("uri" | "url") => "https://example.com/".to_owned(),
            Some("uuid") => "123e4567-e89b-12d3-a456-426614174000".to_owned(),
            Some("ipv4") => "127.0.0.1".to_owned(),
            _ => {
                let min = schema["minLength"].as_u64().unwrap_or(1) as usize;
                text_of_length(min.max(1))
            }
        }),
    }
}

/// The tasks as a task file: each a `kind: call` task expecting what the baseline's schema
/// promises (a result without `isError`).
pub fn to_yaml(tasks: &[BoundaryTask], source: &str) -> String {
    let mut out = format!(
        "# Boundary call tasks written by `mcpeval tasks boundary` from {source}.\n\
         # Each value was checked against both input schemas: `refused` tasks send a value the\n\
         # baseline's schema accepts and the candidate's refuses, `border` tasks one both accept.\n\
         # Each expects a result without isError, as the baseline's schema promises; other\n\
         # arguments are filled from the schema (examples, defaults, enums, formats, bounds).\n"
    );
    for t in tasks {
        let call = json!({ "tool": t.tool, "args": t.args });
        out.push_str(&format!(
            "\n# {}\n- id: {}\n  kind: call\n  call: {}\n  expect: {{is_error: false}}\n",
            t.why.replace('\n', " "),
            t.id,
            call
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(changes: Value) -> Diff {
        let side = json!({"label": "x", "snapshot": "s", "serverInfo": null});
        serde_json::from_value(json!({"baseline": side, "candidate": side, "changes": changes}))
            .unwrap()
    }

    fn tool(name: &str, schema: Value) -> Value {
        json!({"name": name, "inputSchema": schema})
    }

    #[test]
    fn a_lower_max_length_gets_the_first_refused_length_and_the_border() {
        let old = json!({"type": "object", "properties": {
            "project": {"type": "string", "examples": ["apollo"]},
            "title": {"type": "string"}}, "required": ["project", "title"]});
        let mut new = old.clone();
        new["properties"]["title"]["maxLength"] = json!(80);
        let d = diff(
            json!([{"list": "tools", "name": "create", "kind": "type_narrowed",
            "path": "inputSchema.properties.title.maxLength", "after": 80,
            "breaksClients": true, "affectsModels": true}]),
        );
        let (tasks, notes) = boundary_tasks(
            &d,
            &[tool("create", old.clone())],
            &[tool("create", new.clone())],
        );
        assert!(notes.is_empty(), "{notes:?}");
        let refused: Vec<&BoundaryTask> = tasks.iter().filter(|t| t.breaking).collect();
        assert_eq!(refused.len(), 1, "{tasks:?}");
        assert_eq!(
            refused[0].args["title"].as_str().unwrap().chars().count(),
            81
        );
        assert_eq!(refused[0].args["project"], "apollo", "filled from examples");
        let border: Vec<&BoundaryTask> = tasks.iter().filter(|t| !t.breaking).collect();
        assert_eq!(border.len(), 1);
        assert_eq!(
            border[0].args["title"].as_str().unwrap().chars().count(),
            80,
            "the bound"
        );
        // Every value really is what it claims, checked by an independent validator run.
        for t in &tasks {
            let v = Value::Object(t.args.clone());
            assert!(jsonschema::is_valid(&old, &v));
            assert_eq!(jsonschema::is_valid(&new, &v), !t.breaking, "{t:?}");
        }
    }

    #[test]
    fn a_narrowed_enum_a_new_required_parameter_and_closed_objects() {
        let old = json!({"type": "object", "properties": {
            "id": {"type": "integer", "minimum": 1},
            "status": {"enum": ["open", "closed"]},
            "project": {"type": "string"}}, "required": ["id"]});
        let mut new = old.clone();
        new["properties"]["status"]["enum"] = json!(["closed"]);
        new["required"] = json!(["id", "project"]);
        new["additionalProperties"] = json!(false);
        let change = |path: &str, kind: &str| {
            json!({"list": "tools", "name": "t", "kind": kind, "path": path,
                "breaksClients": true, "affectsModels": true})
        };
        let d = diff(json!([
            change("inputSchema.properties.status.enum", "type_narrowed"),
            change("inputSchema.properties.project", "parameter_made_required"),
            change("inputSchema.additionalProperties", "type_narrowed"),
        ]));
        let (tasks, _) = boundary_tasks(&d, &[tool("t", old)], &[tool("t", new)]);
        let refused: Vec<&Map<String, Value>> = tasks
            .iter()
            .filter(|t| t.breaking)
            .map(|t| &t.args)
            .collect();
        assert!(
            refused
                .iter()
                .any(|a| a.get("status") == Some(&json!("open"))),
            "{refused:?}"
        );
        // The old schema does not require `project`: the call without it is the breaking one.
        assert!(refused
            .iter()
            .any(|a| !a.contains_key("project") && a["id"] == 1));
        assert!(refused.iter().any(|a| a.contains_key(EXTRA_ARGUMENT)));
        assert!(tasks.iter().all(|t| t.id.starts_with("boundary-t-")));
        let ids: BTreeSet<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids.len(), tasks.len(), "unique ids");
    }

    #[test]
    fn filled_values_follow_the_schema() {
        assert_eq!(
            fill(&json!({"type": "string", "format": "date"})),
            "2026-01-01"
        );
        assert_eq!(fill(&json!({"type": "integer", "minimum": 5})), 5);
        assert_eq!(fill(&json!({"enum": ["b", "a"]})), "b");
        assert_eq!(fill(&json!({"type": "string", "default": "d"})), "d");
        let obj = fill(
            &json!({"type": "object", "properties": {"n": {"type": "integer"}},
            "required": ["n"]}),
        );
        assert_eq!(obj, json!({"n": 1}));
        assert_eq!(
            fill(&json!({"type": "string", "minLength": 3}))
                .as_str()
                .unwrap()
                .len(),
            3
        );
    }
}
