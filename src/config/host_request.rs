//! What a `[host.NAME]` adds to every request body: `tool_choice` (whether the model must call a
//! tool) and `extra_body` (fields mcpeval has no setting for, such as vLLM's
//! `chat_template_kwargs`), checked when the config is read.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::file::HostFile;
use super::{HostSettings, InvalidSetting, Provider};

/// `tool_choice`: `auto`, `required` (Anthropic's `any`), `none`, or a tool's name. `required`
/// and a tool's name force a call only on a trial's turns before its first tool result, so that
/// the model can still answer after it; `auto` and `none` hold on every turn.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum ToolChoice {
    Auto,
    Required,
    None,
    /// This tool (the server's name, or the name the model is shown).
    Tool(String),
}

impl ToolChoice {
    /// Whether the choice makes the model call a tool (`required` or a named tool).
    pub fn forces_a_call(&self) -> bool {
        matches!(self, Self::Required | Self::Tool(_))
    }
}

impl TryFrom<String> for ToolChoice {
    type Error = InvalidSetting;
    fn try_from(value: String) -> Result<Self, InvalidSetting> {
        Ok(match value.trim() {
            "auto" => Self::Auto,
            "required" | "any" => Self::Required,
            "none" => Self::None,
            "" => {
                return Err(
                    "tool_choice is empty: give auto, required, none or a tool's name".into(),
                )
            }
            name if name.chars().any(char::is_whitespace) => {
                return Err(InvalidSetting(format!(
                    "tool_choice `{name}` is neither auto, required, none nor a tool's name"
                )))
            }
            name => Self::Tool(name.to_owned()),
        })
    }
}

impl From<ToolChoice> for String {
    fn from(choice: ToolChoice) -> String {
        choice.to_string()
    }
}

impl fmt::Display for ToolChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Required => "required",
            Self::None => "none",
            Self::Tool(name) => name,
        })
    }
}

/// Fields mcpeval sets itself, with the setting to use instead where there is one. An
/// `extra_body` naming one is refused: mcpeval's own value would win anyway.
const SET_BY_MCPEVAL: [(&str, &str); 16] = [
    ("model", "the host's `model`"),
    ("messages", ""),
    ("input", ""),
    ("system", "the host profile's `system_prompt`"),
    ("instructions", "the host profile's `system_prompt`"),
    ("tools", ""),
    ("tool_choice", "`tool_choice`"),
    ("stream", "`stream`"),
    ("stream_options", "`stream`"),
    ("temperature", "`temperature`"),
    ("max_tokens", "`max_tokens`"),
    ("max_completion_tokens", "`max_tokens`"),
    ("max_output_tokens", "`max_tokens`"),
    ("seed", "`seed`"),
    ("parallel_tool_calls", "`parallel_tool_calls`"),
    ("thinking", "`thinking_budget`"),
];

/// Last words of a key that mark it as a credential (`access_token`, `client_secret`, `apiKey`).
const CREDENTIAL_WORDS: [&str; 11] = [
    "token",
    "secret",
    "password",
    "passwd",
    "authorization",
    "auth",
    "bearer",
    "cookie",
    "credential",
    "credentials",
    "apikey",
];
/// Words before a last word `key` that make it a credential (`api_key`, `x-api-key`), unlike
/// `prompt_cache_key`.
const KEY_QUALIFIERS: [&str; 6] = ["api", "access", "secret", "private", "auth", "subscription"];

/// Checks an `extra_body` table: no field mcpeval sets itself, and nothing that looks like a
/// credential (at any depth): the table is written to run.json as it is, and credentials belong
/// in `headers` with a `"$VAR"` value. `Err` says which key and why.
pub fn check_extra_body(extra: &Map<String, Value>) -> Result<(), InvalidSetting> {
    for key in extra.keys() {
        if let Some((_, instead)) = SET_BY_MCPEVAL.iter().find(|(k, _)| k == key) {
            let instead = if instead.is_empty() {
                String::new()
            } else {
                format!(": use {instead}")
            };
            return Err(InvalidSetting(format!(
                "extra_body.{key} is a field mcpeval sets itself{instead}"
            )));
        }
    }
    match credential_key(extra, "extra_body") {
        Some(path) => Err(InvalidSetting(format!(
            "{path} looks like a credential: extra_body is written to run.json as it is; send \
             keys and tokens in `headers` with a \"$VAR\" value (read from the environment and \
             redacted)"
        ))),
        None => Ok(()),
    }
}

/// The `tool_choice` and `extra_body` of a `[host.NAME]`, checked: the choice read, the body
/// refused where [`check_extra_body`] refuses it.
pub(super) fn read(entry: &HostFile) -> Result<Option<ToolChoice>, InvalidSetting> {
    let extra_body: Map<String, Value> = entry
        .extra_body
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    check_extra_body(&extra_body)?;
    entry
        .tool_choice
        .clone()
        .map(ToolChoice::try_from)
        .transpose()
}

/// Why `tool_choice` / `extra_body` cannot go with this provider, if they cannot: the sim and
/// app hosts send no request of mcpeval's, and Anthropic's extended thinking takes no forced
/// tool choice.
pub(super) fn misplaced(provider: &Provider, settings: &HostSettings) -> Option<&'static str> {
    let set = settings.tool_choice.is_some() || !settings.extra_body.is_empty();
    match provider {
        Provider::Sim | Provider::App if set => Some(
            "tool_choice and extra_body are settings of API hosts (openai, openai-responses, \
             anthropic): the sim and app hosts send no request body of mcpeval's",
        ),
        Provider::Anthropic
            if settings.thinking_budget.is_some()
                && settings
                    .tool_choice
                    .as_ref()
                    .is_some_and(|c| c.forces_a_call()) =>
        {
            Some(
                "tool_choice `required` or a tool's name cannot go with thinking_budget: \
                 Anthropic's extended thinking takes only tool_choice auto or none",
            )
        }
        _ => None,
    }
}

/// The path of the first key in `map` (or in a table inside it) that names a credential.
fn credential_key(map: &Map<String, Value>, path: &str) -> Option<String> {
    map.iter().find_map(|(key, value)| {
        let here = format!("{path}.{key}");
        if looks_like_credential(key) {
            return Some(here);
        }
        let tables: Vec<&Map<String, Value>> = match value {
            Value::Object(inner) => vec![inner],
            Value::Array(items) => items.iter().filter_map(Value::as_object).collect(),
            _ => Vec::new(),
        };
        tables.into_iter().find_map(|t| credential_key(t, &here))
    })
}

/// `api_key`, `Authorization`, `x-api-key`, `accessToken`, `client_secret`, `key`: by the key's
/// last word, so that `max_tokens`, `return_tokens_as_token_ids` or `prompt_cache_key` are not.
fn looks_like_credential(key: &str) -> bool {
    let words = words(key);
    match words.as_slice() {
        [] => false,
        [.., before, last] if last == "key" => KEY_QUALIFIERS.contains(&before.as_str()),
        [.., last] => last == "key" || CREDENTIAL_WORDS.contains(&last.as_str()),
    }
}

/// A key's words, lower-case: split at `-`, `_`, `.`, spaces and where camelCase turns upper.
fn words(key: &str) -> Vec<String> {
    let mut words = vec![String::new()];
    let mut lower_before = false;
    for c in key.chars() {
        if matches!(c, '-' | '_' | '.' | ' ') {
            words.push(String::new());
            lower_before = false;
            continue;
        }
        if c.is_uppercase() && lower_before {
            words.push(String::new());
        }
        lower_before = c.is_lowercase() || c.is_ascii_digit();
        if let Some(word) = words.last_mut() {
            word.extend(c.to_lowercase());
        }
    }
    words.retain(|w| !w.is_empty());
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn tool_choice_reads_the_words_and_tool_names() {
        let read = |s: &str| ToolChoice::try_from(s.to_owned());
        assert_eq!(read("auto"), Ok(ToolChoice::Auto));
        assert_eq!(read("required"), Ok(ToolChoice::Required));
        assert_eq!(read("any"), Ok(ToolChoice::Required));
        assert_eq!(read("none"), Ok(ToolChoice::None));
        assert_eq!(
            read("list_projects"),
            Ok(ToolChoice::Tool("list_projects".into()))
        );
        assert!(read("").is_err());
        assert!(read("list projects").unwrap_err().0.contains("neither"));
        assert_eq!(
            serde_json::to_value(ToolChoice::Tool("get_issue".into())).unwrap(),
            json!("get_issue")
        );
        assert!(ToolChoice::Required.forces_a_call() && !ToolChoice::Auto.forces_a_call());
    }

    #[test]
    fn extra_body_takes_what_mcpeval_does_not_set() {
        let ok = map(
            json!({"chat_template_kwargs": {"enable_thinking": false}, "top_k": 20,
                            "min_p": 0.05, "repetition_penalty": 1.05}),
        );
        assert_eq!(check_extra_body(&ok), Ok(()));
        let err = check_extra_body(&map(json!({"temperature": 0.2})))
            .unwrap_err()
            .0;
        assert!(err.contains("use `temperature`"), "{err}");
        let err = check_extra_body(&map(json!({"messages": []})))
            .unwrap_err()
            .0;
        assert!(
            err.contains("extra_body.messages is a field mcpeval sets"),
            "{err}"
        );
    }

    #[test]
    fn extra_body_refuses_credentials_at_any_depth() {
        for (body, path) in [
            (json!({"api_key": "sk-1"}), "extra_body.api_key"),
            (
                json!({"Authorization": "Bearer x"}),
                "extra_body.Authorization",
            ),
            (json!({"x-api-key": "k"}), "extra_body.x-api-key"),
            (
                json!({"provider": {"access_token": "t"}}),
                "extra_body.provider.access_token",
            ),
            (
                json!({"opts": [{"client_secret": "s"}]}),
                "extra_body.opts.client_secret",
            ),
            (json!({"key": "k"}), "extra_body.key"),
        ] {
            let err = check_extra_body(&map(body)).unwrap_err().0;
            assert!(err.starts_with(path) && err.contains("headers"), "{err}");
        }
        assert!(check_extra_body(&map(json!({"apiKey": "k"}))).is_err());
        // Counts of tokens, cache keys and authors are no credentials.
        let fine = json!({"max_new_tokens": 5, "author": "me", "keep_alive": "5m",
                          "top_logprobs": 2, "return_tokens_as_token_ids": true,
                          "prompt_cache_key": "run-1"});
        assert_eq!(check_extra_body(&map(fine)), Ok(()));
    }
}
