//! promptfoo's `providers` and `evaluateOptions` as the `mcpeval run` flags to use: the host for
//! each provider id (with `config.model` where the id names no model), the MCP servers as
//! `--baseline`/`--candidate` (two providers that differ only in their server are an A/B pair),
//! and `repeat` as `--trials`.
//!
//! The ids: promptfoo's site/docs/providers/openai.md, anthropic.md, claude-agent-sdk.md and
//! ollama.md (github.com/promptfoo/promptfoo).

use serde_json::{Map, Value};

/// One provider of the config.
struct Provider {
    id: String,
    label: Option<String>,
    config: Map<String, Value>,
    /// Its MCP servers as mcpeval server specs (a command line, or a URL).
    servers: Vec<String>,
}

impl Provider {
    fn of(value: &Value) -> Option<Self> {
        let (id, object) = match value {
            Value::String(id) => (id.clone(), None),
            Value::Object(p) => (p.get("id").and_then(Value::as_str)?.to_owned(), Some(p)),
            _ => return None,
        };
        let label = object
            .and_then(|p| p.get("label"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let config = object
            .and_then(|p| p.get("config"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let servers = servers(config.get("mcp"));
        Some(Self {
            id,
            label,
            config,
            servers,
        })
    }

    /// `` `label` (`id`) `` or `` `id` ``.
    fn name(&self) -> String {
        match &self.label {
            Some(label) => format!("`{label}` (`{}`)", self.id),
            None => format!("`{}`", self.id),
        }
    }

    /// Its config without the MCP servers, and with their names made one word (an allowlist
    /// such as `mcp__v2-10-0__*` names the server): what an A/B pair shares.
    fn without_servers(&self) -> String {
        let mut config = self.config.clone();
        let names = server_names(config.remove("mcp").as_ref());
        let mut text = Value::Object(config).to_string();
        for name in names.iter().filter(|n| !n.is_empty()) {
            text = replace_word(&text, name, "\u{0}server\u{0}");
        }
        text
    }
}

/// `text` with each `word` that stands alone (no letter, digit or `-` on either side: `mcp__a__*`
/// but not `allowed` for `a`) replaced by `with`.
fn replace_word(text: &str, word: &str, with: &str) -> String {
    let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '-');
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(word) {
        let before = rest[..at]
            .chars()
            .next_back()
            .or_else(|| out.chars().next_back());
        let after = rest[at + word.len()..].chars().next();
        out.push_str(&rest[..at]);
        if part(before) || part(after) {
            out.push_str(word);
        } else {
            out.push_str(with);
        }
        rest = &rest[at + word.len()..];
    }
    out.push_str(rest);
    out
}

/// The server entries of a provider's `config.mcp` (`servers` or `server`).
fn server_entries(mcp: Option<&Value>) -> Vec<Value> {
    match mcp.and_then(|m| m.get("servers").or_else(|| m.get("server"))) {
        Some(Value::Array(all)) => all.clone(),
        Some(one) => vec![one.clone()],
        None => Vec::new(),
    }
}

/// The `name`s of a provider's MCP servers.
fn server_names(mcp: Option<&Value>) -> Vec<String> {
    server_entries(mcp)
        .iter()
        .filter_map(|s| s.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// The MCP servers of a provider's `config.mcp`, as server specs.
fn servers(mcp: Option<&Value>) -> Vec<String> {
    server_entries(mcp)
        .iter()
        .filter_map(|server| {
            if let Some(url) = server.get("url").and_then(Value::as_str) {
                return Some(url.to_owned());
            }
            let command = server.get("command").and_then(Value::as_str)?;
            let args: Vec<&str> = server
                .get("args")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let words = std::iter::once(command).chain(args);
            Some(shlex::try_join(words).unwrap_or_else(|_| command.to_owned()))
        })
        .collect()
}

/// An mcpeval host for a promptfoo provider, and what differs in how it runs a trial.
#[derive(Debug, PartialEq)]
pub(super) struct Host {
    pub spec: String,
    pub caveat: Option<String>,
}

/// Why no mcpeval host fits a provider (said in its note).
#[derive(Debug, PartialEq)]
pub(super) struct NoHost(pub String);

/// The mcpeval host for a provider id (its `config.model` where the id names none), or why
/// there is none.
pub(super) fn host_of(id: &str, config: &Map<String, Value>) -> Result<Host, NoHost> {
    let model = config.get("model").and_then(Value::as_str);
    let plain = |spec: String| Ok(Host { spec, caveat: None });
    let parts: Vec<&str> = id.splitn(3, ':').collect();
    match parts.as_slice() {
        ["anthropic", "claude-agent-sdk" | "claude-code"] => match model {
            Some(model) => Ok(Host {
                spec: format!("anthropic:{model}"),
                caveat: Some(format!(
                    "`{id}` runs the Claude Agent SDK's own agent loop (Claude Code's, with its \
                     built-in tools unless an allowlist leaves them out); `--host \
                     anthropic:{model}` runs mcpeval's loop with the server's tools only \
                     (`--host claude-code:{model}` runs Claude Code itself: docs/app-hosts.md)"
                )),
            }),
            None => Err(NoHost(format!(
                "`{id}` without `config.model`: choose a model (`--host anthropic:MODEL`)"
            ))),
        },
        ["openai", "chat", model] => plain(format!("openai:{model}")),
        ["openai", "responses", model] => plain(format!("openai-responses:{model}")),
        ["anthropic", "messages", model] => plain(format!("anthropic:{model}")),
        ["openai" | "anthropic", kind, _] => Err(NoHost(format!(
            "`{id}`: a `{kind}` provider has no mcpeval host (they take chat, responses or \
             messages models)"
        ))),
        [provider @ ("openai" | "anthropic"), model] => plain(format!("{provider}:{model}")),
        ["ollama", "chat", model] | ["ollama", model] => Ok(Host {
            spec: format!("openai:{model}"),
            caveat: Some(
                "Ollama serves the OpenAI API: set OPENAI_BASE_URL=http://127.0.0.1:11434/v1"
                    .to_owned(),
            ),
        }),
        _ => Err(NoHost(format!(
            "`{id}`: no mcpeval host fits; choose one with --host (docs/hosts.md)"
        ))),
    }
}

/// Notes for `mcpeval run` from `providers` and `evaluateOptions.repeat`.
pub(super) fn notes(providers: Option<&Value>, options: Option<&Value>, notes: &mut Vec<String>) {
    let list: Vec<Provider> = match providers {
        Some(Value::Array(list)) => list.iter().filter_map(Provider::of).collect(),
        Some(one) => Provider::of(one).into_iter().collect(),
        None => Vec::new(),
    };
    let repeat = options
        .and_then(|o| o.get("repeat"))
        .and_then(Value::as_u64)
        .filter(|n| *n > 1);
    let trials = repeat.map(|n| format!(" --trials {n}")).unwrap_or_default();
    let hosts: Vec<Result<Host, NoHost>> = list.iter().map(|p| host_of(&p.id, &p.config)).collect();
    let mut out: Vec<String> = Vec::new();
    let push = |out: &mut Vec<String>, note: String| {
        if !out.contains(&note) {
            out.push(note);
        }
    };
    if let Some(pair) = a_b_pair(&list, &hosts, &trials) {
        notes.extend(pair);
        return;
    }
    for (provider, host) in list.iter().zip(&hosts) {
        match host {
            Ok(host) => {
                push(
                    &mut out,
                    format!(
                        "provider {}: `mcpeval run --host {}{trials}`",
                        provider.name(),
                        host.spec
                    ),
                );
                if let Some(caveat) = &host.caveat {
                    push(&mut out, caveat.clone());
                }
            }
            Err(NoHost(why)) => push(&mut out, format!("provider {}: {why}", provider.name())),
        }
        for spec in &provider.servers {
            push(
                &mut out,
                format!(
                "MCP server of {}: pass it to `mcpeval run` as --baseline {spec:?} (and the new \
                 version as --candidate)",
                provider.name()
            ),
            );
        }
    }
    if let Some(n) = repeat.filter(|_| !out.iter().any(|n| n.contains("--trials"))) {
        push(
            &mut out,
            format!("`evaluateOptions.repeat: {n}`: run with `--trials {n}`"),
        );
    }
    notes.extend(out);
}

/// Two providers on one host that differ only in their one MCP server: the note of the A/B run
/// (the first server the baseline, the second the candidate), and the host's caveat.
fn a_b_pair(
    list: &[Provider],
    hosts: &[Result<Host, NoHost>],
    trials: &str,
) -> Option<Vec<String>> {
    let ([a, b], [Ok(host), Ok(other)]) = (list, hosts) else {
        return None;
    };
    let one_each = a.servers.len() == 1 && b.servers.len() == 1;
    let pair = host == other
        && one_each
        && a.servers != b.servers
        && a.without_servers() == b.without_servers();
    if !pair {
        return None;
    }
    let mut notes = vec![format!(
        "providers {} and {} differ only in their MCP server: `mcpeval run --host {} --baseline \
         {:?} --candidate {:?}{trials}`",
        a.name(),
        b.name(),
        host.spec,
        a.servers[0],
        b.servers[0]
    )];
    notes.extend(host.caveat.clone());
    Some(notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::import::source::parse;

    fn host(id: &str, model: Option<&str>) -> Result<String, NoHost> {
        let mut config = Map::new();
        if let Some(model) = model {
            config.insert("model".into(), Value::from(model));
        }
        host_of(id, &config).map(|h| h.spec)
    }

    #[test]
    fn provider_ids_map_to_hosts() {
        for (id, model, spec) in [
            ("openai:gpt-4.1", None, "openai:gpt-4.1"),
            ("openai:chat:gpt-4.1", None, "openai:gpt-4.1"),
            ("openai:responses:gpt-5", None, "openai-responses:gpt-5"),
            ("anthropic:messages:claude-x", None, "anthropic:claude-x"),
            ("anthropic:claude-x", None, "anthropic:claude-x"),
            (
                "anthropic:claude-agent-sdk",
                Some("claude-sonnet-4-6"),
                "anthropic:claude-sonnet-4-6",
            ),
            ("ollama:chat:llama3.1", None, "openai:llama3.1"),
        ] {
            assert_eq!(host(id, model).as_deref(), Ok(spec), "{id}");
        }
        assert!(host("anthropic:claude-agent-sdk", None)
            .unwrap_err()
            .0
            .contains("without `config.model`"));
        assert!(host("openai:embedding:text-3", None)
            .unwrap_err()
            .0
            .contains("`embedding`"));
        assert!(host("google:gemini-2.0-flash", None).is_err());
        assert!(host("mcp", None).is_err());
    }

    fn notes_of(yaml: &str) -> Vec<String> {
        let root = parse(yaml).unwrap();
        let mut out = Vec::new();
        notes(root.get("providers"), root.get("evaluateOptions"), &mut out);
        out
    }

    #[test]
    fn server_names_are_replaced_where_they_stand_alone() {
        assert_eq!(
            replace_word("mcp__a__* allowed a-b a", "a", "S"),
            "mcp__S__* allowed a-b S"
        );
    }

    #[test]
    fn an_a_b_pair_is_one_note_with_the_trials() {
        let pair = r#"
evaluateOptions: {repeat: 10}
providers:
  - id: anthropic:claude-agent-sdk
    label: old
    config:
      model: m
      custom_allowed_tools: ['mcp__a__*']
      mcp: {servers: [{name: a, command: node, args: [old/main.js]}]}
  - id: anthropic:claude-agent-sdk
    label: new
    config:
      model: m
      custom_allowed_tools: ['mcp__b__*']
      mcp: {servers: [{name: b, command: node, args: [main.js]}]}
"#;
        let notes = notes_of(pair);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert_eq!(
            notes[0],
            "providers `old` (`anthropic:claude-agent-sdk`) and `new` (`anthropic:claude-agent-sdk`) \
             differ only in their MCP server: `mcpeval run --host anthropic:m --baseline \
             \"node old/main.js\" --candidate \"node main.js\" --trials 10`"
        );
        assert!(notes[1].contains("Agent SDK"), "{notes:?}");
        // Two models against one server are no A/B pair of servers.
        let models = pair.replace(
            "      model: m\n      custom_allowed_tools: ['mcp__b__*']",
            "      model: n\n      custom_allowed_tools: ['mcp__b__*']",
        );
        let notes = notes_of(&models);
        assert!(
            notes.iter().all(|n| !n.contains("differ only")),
            "{notes:?}"
        );
        assert!(
            notes
                .iter()
                .any(|n| n.contains("--host anthropic:n --trials 10")),
            "{notes:?}"
        );
    }
}
