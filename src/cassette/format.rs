//! The cassette format, version 1: a server's lists and its answers to requests, as JSON Lines.
//!
//! A cassette is data: nothing in it is ever run, evaluated or spawned. Line 1 is the header
//! (`{"cassette": 1, "server": {…}, "recorded_at": …}`), line 2 the handshake's instructions and
//! capabilities, then one line per list (tools, resources, resource templates, prompts), then one
//! line per distinct request with its answers in order, sorted by the request's canonical form so
//! that two recordings of one server diff line by line (docs/replay-overlay.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The version this build reads and writes.
pub const VERSION: u64 = 1;

/// Line 1: what the cassette is and which server it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    pub cassette: u64,
    pub server: ServerFacts,
    /// UTC, RFC 3339.
    pub recorded_at: String,
    /// The program that wrote it (`mcpeval 0.x.y`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_by: Option<String>,
}

/// The server as it named itself in the handshake.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerFacts {
    pub name: String,
    pub version: String,
    /// The protocol version agreed on.
    pub protocol: String,
}

/// Line 2: what the handshake said besides the server's name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Handshake {
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub capabilities: Value,
}

/// The lists a cassette holds, in the order their lines come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListKind {
    Tools,
    Resources,
    ResourceTemplates,
    Prompts,
}

impl ListKind {
    pub const ALL: [ListKind; 4] = [
        Self::Tools,
        Self::Resources,
        Self::ResourceTemplates,
        Self::Prompts,
    ];

    /// The field items are sorted by (as a contract snapshot sorts them).
    fn sort_field(self) -> &'static str {
        match self {
            Self::Tools | Self::Prompts => "name",
            Self::Resources => "uri",
            Self::ResourceTemplates => "uriTemplate",
        }
    }
}

/// A list line: `{"list": "tools", "items": [...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListLine {
    pub list: ListKind,
    pub items: Vec<Value>,
}

/// The requests a cassette answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Method {
    #[serde(rename = "tools/call")]
    ToolsCall,
    #[serde(rename = "resources/read")]
    ResourcesRead,
    #[serde(rename = "prompts/get")]
    PromptsGet,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ToolsCall => "tools/call",
            Self::ResourcesRead => "resources/read",
            Self::PromptsGet => "prompts/get",
        }
    }
}

/// One request as the cassette keys it: the method, the tool's or prompt's name or the
/// resource's uri, and the arguments (an object; absent and `{}` are the same request).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    pub method: Method,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

impl Request {
    /// A `tools/call` of `name` with `arguments` (none: `{}`).
    pub fn tool(name: &str, arguments: Option<Map<String, Value>>) -> Self {
        Self {
            method: Method::ToolsCall,
            name: Some(name.to_owned()),
            uri: None,
            arguments: Some(canonical(&Value::Object(arguments.unwrap_or_default()))),
        }
    }

    /// A `resources/read` of `uri`.
    pub fn resource(uri: &str) -> Self {
        Self {
            method: Method::ResourcesRead,
            name: None,
            uri: Some(uri.to_owned()),
            arguments: None,
        }
    }

    /// A `prompts/get` of `name` with string arguments.
    pub fn prompt(name: &str, arguments: &BTreeMap<String, String>) -> Self {
        let arguments = arguments
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        Self {
            method: Method::PromptsGet,
            name: Some(name.to_owned()),
            uri: None,
            arguments: Some(Value::Object(arguments)),
        }
    }

    /// The same request in its canonical form: `{}` arguments for a call or prompt that had
    /// none, object keys sorted all the way down.
    pub fn normalized(mut self) -> Self {
        match self.method {
            Method::ToolsCall | Method::PromptsGet => {
                let arguments = self.arguments.take().unwrap_or(Value::Object(Map::new()));
                self.arguments = Some(canonical(&arguments));
            }
            Method::ResourcesRead => {}
        }
        self
    }

    /// What is wrong with this request's shape, if anything.
    pub fn problem(&self) -> Option<String> {
        let what = self.method.as_str();
        match self.method {
            Method::ToolsCall | Method::PromptsGet if self.name.is_none() => {
                Some(format!("a {what} request needs a `name`"))
            }
            Method::ToolsCall | Method::PromptsGet if self.uri.is_some() => {
                Some(format!("a {what} request has no `uri`"))
            }
            Method::ResourcesRead if self.uri.is_none() => {
                Some(format!("a {what} request needs a `uri`"))
            }
            Method::ResourcesRead if self.name.is_some() || self.arguments.is_some() => {
                Some(format!("a {what} request has only a `uri`"))
            }
            _ => match &self.arguments {
                Some(Value::Object(_)) | None => None,
                Some(_) => Some(format!("a {what} request's `arguments` must be an object")),
            },
        }
    }

    /// The canonical key: the normalized request serialized with sorted keys. Two requests are
    /// the same request exactly when their keys are equal.
    pub fn key(&self) -> String {
        let normalized = self.clone().normalized();
        serde_json::to_string(&canonical(
            &serde_json::to_value(&normalized).unwrap_or_default(),
        ))
        .unwrap_or_default()
    }

    /// The request as the replay's messages name it: "tools/call `x` with {…}".
    pub fn describe(&self) -> String {
        let method = self.method.as_str();
        match (self.method, &self.uri, &self.name) {
            (Method::ResourcesRead, Some(uri), _) => format!("{method} `{uri}`"),
            (_, _, Some(name)) => {
                let arguments = self.arguments.as_ref().map(canonical);
                let arguments = arguments.unwrap_or(Value::Object(Map::new()));
                format!("{method} `{name}` with {arguments}")
            }
            _ => method.to_owned(),
        }
    }
}

/// A JSON-RPC error answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorAnswer {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// One answer the server gave: its result (a tool result, a resource's contents, a prompt), or
/// a JSON-RPC error; or, when it asked the client something first (sampling, elicitation),
/// those requests with the client's answers, then its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Answer {
    Result(Value),
    Error(ErrorAnswer),
    Asked(Asked),
}

/// `{"asked": {"asks": [...], "then": {"result": …}}}`: the server's requests to the client
/// while it answered, in order, and its answer after them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Asked {
    pub asks: Vec<Ask>,
    pub then: Box<Answer>,
}

/// One server-to-client request (`sampling/createMessage`, `elicitation/create`), recorded like
/// a call: its params (without `_meta`) and the client's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ask {
    pub method: String,
    pub params: Value,
    pub answer: Answer,
}

impl Answer {
    /// The server's own answer (after any requests it made first).
    pub fn last(&self) -> &Answer {
        match self {
            Answer::Asked(asked) => asked.then.last(),
            other => other,
        }
    }

    /// The answer with every JSON value in canonical form.
    fn canonical(self) -> Answer {
        match self {
            Answer::Result(value) => Answer::Result(canonical(&value)),
            Answer::Error(mut error) => {
                error.data = error.data.as_ref().map(canonical);
                Answer::Error(error)
            }
            Answer::Asked(asked) => Answer::Asked(Asked {
                asks: (asked.asks.into_iter())
                    .map(|a| Ask {
                        params: canonical(&a.params),
                        answer: a.answer.canonical(),
                        method: a.method,
                    })
                    .collect(),
                then: Box::new(asked.then.canonical()),
            }),
        }
    }

    /// Every string passed through `redact`.
    fn redacted(&mut self, redact: &dyn Fn(&str) -> String) {
        match self {
            Answer::Result(value) => *value = redact_value(value, redact),
            Answer::Error(error) => {
                error.message = redact(&error.message);
                if let Some(data) = &mut error.data {
                    *data = redact_value(data, redact);
                }
            }
            Answer::Asked(asked) => {
                for ask in &mut asked.asks {
                    ask.params = redact_value(&ask.params, redact);
                    ask.answer.redacted(redact);
                }
                asked.then.redacted(redact);
            }
        }
    }
}

impl Answer {
    /// A tool result with one text block and `isError: true`.
    pub fn tool_error(text: &str) -> Self {
        Self::Result(serde_json::json!({
            "content": [{"type": "text", "text": text}],
            "isError": true,
        }))
    }
}

/// A request line: a request and every answer it had, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub request: Request,
    pub answers: Vec<Answer>,
}

/// A whole cassette in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Cassette {
    pub header: Header,
    pub handshake: Handshake,
    /// Every list, each present (empty when the server has none).
    pub lists: BTreeMap<ListKind, Vec<Value>>,
    /// The requests, sorted by their canonical key, each once.
    pub entries: Vec<Entry>,
}

/// The handshake line as it is written: `{"handshake": {…}}`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HandshakeLine {
    pub handshake: Handshake,
}

impl Cassette {
    /// A cassette of `server` with no list items and no request yet.
    pub fn new(server: ServerFacts, recorded_at: String) -> Self {
        Self {
            header: Header {
                cassette: VERSION,
                server,
                recorded_at,
                recorded_by: Some(format!("mcpeval {}", env!("CARGO_PKG_VERSION"))),
            },
            handshake: Handshake::default(),
            lists: ListKind::ALL.iter().map(|&k| (k, Vec::new())).collect(),
            entries: Vec::new(),
        }
    }

    /// Puts the cassette in its canonical form: every JSON value with sorted keys, list items
    /// sorted by name, uri or uri template, requests by method, name or uri, then canonical
    /// key; requests that became the same (after redaction, say) are merged, their distinct
    /// answers kept in order.
    pub fn normalize(&mut self) {
        self.handshake.capabilities = canonical(&self.handshake.capabilities);
        for (kind, items) in &mut self.lists {
            let field = kind.sort_field();
            let sort_key = |v: &Value| v.get(field).and_then(Value::as_str).map(str::to_owned);
            items.sort_by_key(sort_key);
            items.iter_mut().for_each(|item| *item = canonical(item));
        }
        let mut merged: BTreeMap<(Method, String, String), Entry> = BTreeMap::new();
        for entry in std::mem::take(&mut self.entries) {
            let request = entry.request.normalized();
            let target = request
                .name
                .clone()
                .or(request.uri.clone())
                .unwrap_or_default();
            let slot =
                (merged.entry((request.method, target, request.key()))).or_insert_with(|| Entry {
                    request,
                    answers: Vec::new(),
                });
            for answer in entry.answers {
                let answer = answer.canonical();
                if !slot.answers.contains(&answer) {
                    slot.answers.push(answer);
                }
            }
        }
        self.entries = merged.into_values().collect();
    }

    /// How many answers the requests hold in all.
    pub fn answers(&self) -> usize {
        self.entries.iter().map(|e| e.answers.len()).sum()
    }

    /// The cassette as JSON Lines, in canonical order (call [`normalize`](Self::normalize)
    /// first for a cassette built by hand).
    pub fn to_jsonl(&self) -> String {
        // Structs keep their fields' order (`list` before `items`, `request` before
        // `answers`); the JSON values inside are canonical already.
        fn line<T: Serialize>(out: &mut String, value: &T) {
            out.push_str(&serde_json::to_string(value).unwrap_or_default());
            out.push('\n');
        }
        let mut out = String::new();
        line(&mut out, &self.header);
        let handshake = HandshakeLine {
            handshake: self.handshake.clone(),
        };
        line(&mut out, &handshake);
        for kind in ListKind::ALL {
            let items = self.lists.get(&kind).cloned().unwrap_or_default();
            line(&mut out, &ListLine { list: kind, items });
        }
        for entry in &self.entries {
            line(&mut out, entry);
        }
        out
    }

    /// Every string the cassette holds (names, uris, arguments, answers, lists, instructions),
    /// object keys too, passed through `redact`: the secrets a run knows never reach the file.
    pub fn redact(&mut self, redact: &dyn Fn(&str) -> String) {
        let strings = |v: &mut Value| *v = redact_value(v, redact);
        if let Some(text) = &mut self.handshake.instructions {
            *text = redact(text);
        }
        strings(&mut self.handshake.capabilities);
        self.lists.values_mut().flatten().for_each(strings);
        for entry in &mut self.entries {
            let request = &mut entry.request;
            for text in [&mut request.name, &mut request.uri].into_iter().flatten() {
                *text = redact(text);
            }
            request.arguments.iter_mut().for_each(strings);
            for answer in &mut entry.answers {
                answer.redacted(redact);
            }
        }
        self.normalize();
    }
}

/// `value` with every string and object key passed through `redact`.
fn redact_value(value: &Value, redact: &dyn Fn(&str) -> String) -> Value {
    match value {
        Value::String(s) => Value::String(redact(s)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| redact_value(v, redact)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (redact(k), redact_value(v, redact)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `value` with the keys of every object sorted, recursively (whatever map order serde_json
/// was built with).
pub fn canonical(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&map[k])))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_key_ignores_key_order_and_absent_arguments() {
        let a = Request::tool(
            "get",
            json!({"b": {"y": 1, "x": 2}, "a": 1}).as_object().cloned(),
        );
        let b = Request::tool(
            "get",
            json!({"a": 1, "b": {"x": 2, "y": 1}}).as_object().cloned(),
        );
        assert_eq!(a.key(), b.key());
        assert_eq!(
            a.key(),
            r#"{"arguments":{"a":1,"b":{"x":2,"y":1}},"method":"tools/call","name":"get"}"#
        );
        assert_eq!(
            Request::tool("x", None).key(),
            Request::tool("x", Some(Map::new())).key()
        );
        assert_ne!(
            Request::tool("x", None).key(),
            Request::tool("y", None).key()
        );
        assert_eq!(
            Request::resource("demo://a").key(),
            r#"{"method":"resources/read","uri":"demo://a"}"#
        );
    }

    #[test]
    fn normalize_sorts_and_merges_and_the_lines_come_in_order() {
        let mut cassette = Cassette::new(ServerFacts::default(), "t".into());
        cassette.lists.insert(
            ListKind::Tools,
            vec![json!({"name": "b"}), json!({"name": "a"})],
        );
        let answer = |n: i64| Answer::Result(json!({ "n": n }));
        cassette.entries = vec![
            Entry {
                request: Request::tool("z", None),
                answers: vec![answer(1)],
            },
            Entry {
                request: Request::tool("a", None),
                answers: vec![answer(1), answer(2)],
            },
            Entry {
                request: Request::tool("a", Some(Map::new())),
                answers: vec![answer(2), answer(3)],
            },
        ];
        cassette.normalize();
        assert_eq!(cassette.entries.len(), 2);
        assert_eq!(
            cassette.entries[0].answers,
            vec![answer(1), answer(2), answer(3)]
        );
        assert_eq!(cassette.answers(), 4);
        let text = cassette.to_jsonl();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2 + 4 + 2);
        assert!(
            lines[0].starts_with(r#"{"cassette":1,"server":{"#),
            "{}",
            lines[0]
        );
        assert_eq!(
            lines[1],
            r#"{"handshake":{"instructions":null,"capabilities":null}}"#
        );
        assert_eq!(
            lines[2],
            r#"{"list":"tools","items":[{"name":"a"},{"name":"b"}]}"#
        );
        let call_a = r#"{"request":{"method":"tools/call","name":"a","arguments":{}},"answers":["#;
        assert!(lines[6].starts_with(call_a), "{}", lines[6]);
        assert!(lines[7].contains(r#""name":"z""#));
    }

    #[test]
    fn redaction_reaches_every_string_and_key() {
        let mut cassette = Cassette::new(ServerFacts::default(), "t".into());
        cassette.handshake.instructions = Some("token s3cret!".into());
        cassette.entries = vec![Entry {
            request: Request::tool("get", json!({"q": "s3cret!"}).as_object().cloned()),
            answers: vec![
                Answer::Result(json!({"s3cret!": ["x s3cret! y"]})),
                Answer::Error(ErrorAnswer {
                    code: 1,
                    message: "s3cret!".into(),
                    data: None,
                }),
            ],
        }];
        cassette.redact(&|s: &str| s.replace("s3cret!", "[REDACTED]"));
        let text = cassette.to_jsonl();
        assert!(!text.contains("s3cret!"), "{text}");
        assert_eq!(text.matches("[REDACTED]").count(), 5, "{text}");
    }
}
