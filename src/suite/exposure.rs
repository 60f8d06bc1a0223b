//! A task's keys for what a host shows besides tools: `prompt: {server_prompt, args}` (the task
//! starts from a server prompt) and `attach: [URI]` (resources put into the first message).

use super::call::prompt_args;
use super::check::{Checker, Fields};
use super::raw::{Node, Value};
use super::task::ServerPrompt;

/// The keys of `prompt:` written as a mapping.
const SERVER_PROMPT_KEYS: &[&str] = &["server_prompt", "args"];

/// A task's `prompt`: a non-empty text, or `{server_prompt: NAME, args: {…}}` (then the text is
/// how the prompt reads, `/NAME k=v`). `None` when invalid (the problem recorded).
pub(super) fn prompt(
    checker: &mut Checker<'_>,
    value: &Node,
) -> Option<(String, Option<ServerPrompt>)> {
    if !matches!(value.value, Value::Map(_)) {
        return checker.non_empty_string(value, "prompt").map(|p| (p, None));
    }
    let fields = checker.fields(value, "`prompt`", Some(SERVER_PROMPT_KEYS))?;
    let Some((_, name)) = fields.get("server_prompt") else {
        checker.missing(&fields, "server_prompt", "`prompt`");
        return None;
    };
    let name = checker.non_empty_string(name, "prompt.server_prompt");
    let args = match fields.get("args") {
        Some((_, args)) => prompt_args(checker, args, "prompt.args"),
        None => Some(Default::default()),
    };
    let prompt = ServerPrompt {
        name: name?,
        args: args?,
    };
    Some((prompt.shown(), Some(prompt)))
}

/// `attach: [URI, …]`: non-empty URIs (as any string list), each once.
pub(super) fn attach(checker: &mut Checker<'_>, fields: &Fields<'_>) -> Option<Vec<String>> {
    let Some((_, value)) = fields.get("attach") else {
        return Some(Vec::new());
    };
    let uris = checker.string_list(value, "attach")?;
    let items = match &value.value {
        Value::Seq(items) => items.as_slice(),
        _ => &[],
    };
    let mut ok = true;
    for (i, (uri, item)) in uris.iter().zip(items).enumerate() {
        if uris[..i].contains(uri) {
            checker.error(item, format!("`{uri}` is attached twice"));
            ok = false;
        }
    }
    ok.then_some(uris)
}

/// One of `resources_read`, `resources_not_read`, `prompts_used`, `prompts_not_used`: a list of
/// non-empty texts (URIs or names, `*` for any characters).
pub(super) fn names(checker: &mut Checker<'_>, value: &Node, key: &str) -> Option<Vec<String>> {
    checker.string_list(value, key)
}

/// Whether `name` is `pattern`, where `*` in the pattern stands for any characters (none
/// included) and everything else for itself.
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::glob_matches as matches;

    #[test]
    fn patterns_match_whole_names_with_stars_for_any_text() {
        assert!(matches("tracker://issues/5", "tracker://issues/5"));
        assert!(!matches("tracker://issues/5", "tracker://issues/50"));
        assert!(matches("tracker://issues/*", "tracker://issues/50"));
        assert!(matches("*://issues/*", "tracker://issues/5"));
        assert!(!matches("tracker://issues/*", "tracker://projects"));
        assert!(matches("a*b*c", "abc"));
        assert!(!matches("a*bc", "abc-"));
        assert!(!matches("ab*b", "ab"), "the parts may not overlap");
    }
}
