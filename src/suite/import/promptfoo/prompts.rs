//! promptfoo's prompts and vars: the templates of `prompts` (inline, `file://` text or chat
//! messages), the vars of a test, and the filling of `{{var}}`. A prompt that names the
//! built-in `_conversation` var makes its tests the turns of conversations (promptfoo's
//! site/docs/configuration/chat.md); a chat prompt with several user messages is one.

use std::path::Path;

use serde_json::{Map, Value};

use crate::suite::import::source::{parse, BadInput, Sources};

/// One prompt template, with its label when it has one.
pub(super) struct Prompt {
    pub label: Option<String>,
    /// The last user message's template (the whole text when it is not a chat prompt).
    pub template: Option<String>,
    /// A chat prompt's earlier user messages, in order: turns before the last.
    pub earlier: Vec<String>,
    /// Whether the template names `_conversation`: its tests are turns of conversations (one
    /// per `metadata.conversationId`), as promptfoo runs them one after another.
    pub conversation: bool,
    /// Why the template is `None`, or what was dropped from it.
    pub notes: Vec<String>,
}

impl Prompt {
    fn text(label: Option<String>, template: Option<String>, notes: Vec<String>) -> Self {
        Self {
            label,
            template,
            earlier: Vec::new(),
            conversation: false,
            notes,
        }
    }
}

/// The prompt templates of `prompts` (promptfoo runs every test with each).
pub(super) fn prompts(
    value: Option<&Value>,
    sources: &dyn Sources,
    notes: &mut Vec<String>,
) -> Vec<Prompt> {
    let refs: Vec<(String, Option<String>)> = match value {
        None => {
            notes.push("no `prompts`: each test's `prompt` var is its prompt".to_owned());
            vec![("{{prompt}}".to_owned(), None)]
        }
        Some(Value::String(s)) => vec![(s.clone(), None)],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|item| match item {
                Value::String(s) => Some((s.clone(), None)),
                Value::Object(o) => {
                    let text = o
                        .get("raw")
                        .or_else(|| o.get("id"))
                        .and_then(Value::as_str)?;
                    let label = o.get("label").and_then(Value::as_str).map(str::to_owned);
                    Some((text.to_owned(), label))
                }
                _ => None,
            })
            .collect(),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().map(str::to_owned)))
            .collect(),
        Some(other) => {
            notes.push(format!("`prompts` {other} not converted"));
            Vec::new()
        }
    };
    let mut out = Vec::new();
    for (text, label) in refs {
        let Some(path) = text.strip_prefix("file://") else {
            out.push(chat(&text, label));
            continue;
        };
        for file in sources.files(path) {
            out.extend(prompt_file(&file, label.clone(), sources));
        }
    }
    if out.is_empty() {
        notes.push("no prompt converts, so no test does".to_owned());
    }
    out
}

/// A prompt file: text (split at lines `---`, as promptfoo does), or JSON/YAML chat messages;
/// code that builds a prompt does not convert.
fn prompt_file(file: &Path, label: Option<String>, sources: &dyn Sources) -> Vec<Prompt> {
    let shown = file.display();
    let ext = file
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let failed = |why: String| vec![Prompt::text(label.clone(), None, vec![why])];
    if !matches!(
        ext.as_str(),
        "" | "txt" | "md" | "json" | "yaml" | "yml" | "j2" | "jinja"
    ) {
        return failed(format!(
            "the prompt `file://{shown}` is code; it does not convert"
        ));
    }
    let text = match sources.read(file) {
        Ok(text) => text,
        Err(e) => return failed(format!("the prompt file `{shown}`: {e}")),
    };
    if matches!(ext.as_str(), "json" | "yaml" | "yml") {
        return vec![chat(&text, label)];
    }
    let parts: Vec<String> = text
        .split("\n---\n")
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    let many = parts.len() > 1;
    parts
        .into_iter()
        .enumerate()
        .map(|(i, part)| {
            let label = match (&label, many) {
                (Some(l), true) => Some(format!("{l} {}", i + 1)),
                (None, true) => Some(format!("prompt {}", i + 1)),
                (l, false) => l.clone(),
            };
            chat(&part, label)
        })
        .collect()
}

/// A template, or the last user message of a chat-format prompt (a list of `{role, content}`)
/// with its earlier user messages. A loop over `_conversation` (the earlier turns, which an
/// mcpeval conversation carries itself) is taken out first.
fn chat(text: &str, label: Option<String>) -> Prompt {
    let conversation = text.contains("_conversation");
    let stripped = without_history(text);
    let text = stripped.as_str();
    let messages = text
        .trim_start()
        .starts_with('[')
        .then(|| parse(text).ok())
        .flatten()
        .or_else(|| parse(text).ok().filter(Value::is_array));
    let Some(Value::Array(messages)) = messages else {
        let mut prompt = Prompt::text(label, Some(text.to_owned()), Vec::new());
        prompt.conversation = conversation;
        return prompt;
    };
    let Some(mut users) = user_messages(&messages) else {
        let mut prompt = Prompt::text(label, Some(text.to_owned()), Vec::new());
        prompt.conversation = conversation;
        return prompt;
    };
    let mut notes = Vec::new();
    let others: Vec<String> = (messages.iter())
        .filter_map(role_of)
        .filter(|r| r != "user")
        .collect();
    if !others.is_empty() {
        notes.push(format!(
            "the chat prompt's other messages ({}) were dropped: mcpeval sends the user's \
             messages only{}",
            others.join(", "),
            if users.len() > 1 {
                ", each a turn the model answers itself"
            } else {
                ""
            }
        ));
    }
    let last = users.pop();
    if last.is_none() {
        notes.push("the chat prompt has no user message".to_owned());
    }
    Prompt {
        label,
        template: last,
        earlier: users,
        conversation,
        notes,
    }
}

/// A message's role: `{role, content}`, or promptfoo's simplified `{user: …}` markup.
fn role_of(message: &Value) -> Option<String> {
    let object = message.as_object()?;
    match object.get("role").and_then(Value::as_str) {
        Some(role) => Some(role.to_owned()),
        None if object.len() == 1 => object.keys().next().cloned(),
        None => None,
    }
}

/// The user messages' texts of a list of chat messages (`{role, content}` or `{user: …}`);
/// `None` when it is not such a list.
pub(super) fn user_messages(messages: &[Value]) -> Option<Vec<String>> {
    let mut users = Vec::new();
    for message in messages {
        let role = role_of(message)?;
        let content = message
            .get("content")
            .or_else(|| message.get(&role))
            .and_then(Value::as_str)?;
        if role == "user" {
            users.push(content.to_owned());
        }
    }
    Some(users)
}

/// The text without its `{% for … in _conversation %} … {% endfor %}` loops: the earlier turns
/// of the conversation, which mcpeval's `turns:` send themselves.
fn without_history(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("{%") {
        let Some(len) = rest[start..].find("%}") else {
            break;
        };
        let tag =
            rest[start + 2..start + len].trim_matches(|c: char| c == '-' || c.is_whitespace());
        let opens = tag.starts_with("for ") && tag.ends_with(" in _conversation");
        let end = rest[start..].find("endfor").and_then(|e| {
            let close = rest[start + e..].find("%}")?;
            Some(start + e + close + 2)
        });
        match (opens, end) {
            (true, Some(end)) => {
                out.push_str(&rest[..start]);
                rest = &rest[end..];
            }
            _ => {
                out.push_str(&rest[..start + len + 2]);
                rest = &rest[start + len + 2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The vars with `file://` values read (text files; code is not run).
pub(super) fn resolve_vars(
    vars: Map<String, Value>,
    sources: &dyn Sources,
) -> Result<Map<String, Value>, BadInput> {
    let mut out = Map::new();
    for (name, value) in vars {
        let value = match value {
            Value::String(s) if s.starts_with("file://") => {
                let path = Path::new(&s["file://".len()..]);
                let code = path.extension().is_some_and(|e| {
                    matches!(e.to_string_lossy().as_ref(), "js" | "ts" | "py" | "rb")
                });
                if code {
                    return Err(BadInput::new(format!(
                        "var `{name}` comes from code (`{s}`)"
                    )));
                }
                let text = sources
                    .read(path)
                    .map_err(|e| BadInput::new(format!("var `{name}`: cannot read `{s}`: {e}")))?;
                Value::String(text.trim_end().to_owned())
            }
            // promptfoo expands a list of strings into one test per value, and keeps any other
            // list whole (chat `messages`, say).
            Value::Array(items) if !items.first().is_some_and(Value::is_string) => {
                Value::Array(items)
            }
            Value::Array(_) => {
                return Err(BadInput::new(format!(
                    "var `{name}` is a list (promptfoo runs the test once per value): write one \
                     test per value"
                )))
            }
            other => other,
        };
        out.insert(name, value);
    }
    Ok(out)
}

/// The template expressions that could not be filled in (unknown names, filters, `{% … %}`).
#[derive(Debug, PartialEq)]
pub(super) struct Unfilled(pub Vec<String>);

/// Fills `{{ name }}` with the vars, then the templates a var's value brought in (as promptfoo
/// renders vars that hold templates); the expressions left are the error.
pub(super) fn fill(template: &str, vars: &Map<String, Value>) -> Result<String, Unfilled> {
    let once = fill_once(template, vars)?;
    if once != template && (once.contains("{{") || once.contains("{%")) {
        fill_once(&once, vars)
    } else {
        Ok(once)
    }
}

fn fill_once(template: &str, vars: &Map<String, Value>) -> Result<String, Unfilled> {
    let mut out = String::new();
    let mut left = Vec::new();
    let mut rest = template;
    while let Some(start) = [rest.find("{{"), rest.find("{%")]
        .into_iter()
        .flatten()
        .min()
    {
        let open = &rest[start..start + 2];
        let close = if open == "{{" { "}}" } else { "%}" };
        out.push_str(&rest[..start]);
        let Some(len) = rest[start..].find(close) else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let whole = &rest[start..start + len + 2];
        let inner = whole[2..whole.len() - 2].trim();
        // `dump` is JSON.stringify in promptfoo's Nunjucks.
        let (inner, dump) = match inner.split_once('|').map(|(n, f)| (n.trim(), f.trim())) {
            Some((name, "dump")) => (name, true),
            _ => (inner, false),
        };
        match vars.get(inner).filter(|_| open == "{{") {
            Some(value) if dump => out.push_str(&value.to_string()),
            Some(Value::String(s)) => out.push_str(s),
            Some(other) => out.push_str(&other.to_string()),
            None => {
                left.push(format!("`{whole}`"));
                out.push_str(whole);
            }
        }
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    if left.is_empty() {
        Ok(out)
    } else {
        Err(Unfilled(left))
    }
}

/// A value with its strings' templates filled in.
pub(super) fn fill_value(value: &Value, vars: &Map<String, Value>) -> Result<Value, Unfilled> {
    Ok(match value {
        Value::String(s) => Value::String(fill(s, vars)?),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| fill_value(i, vars))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(entries) => {
            let mut out = Map::new();
            for (k, v) in entries {
                out.insert(k.clone(), fill_value(v, vars)?);
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}
