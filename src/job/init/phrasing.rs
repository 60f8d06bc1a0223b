//! The requests of templated model tasks (`mcpeval init` without a writer host): a request a
//! user would write, made from a tool's description (its leading verb said another way, so the
//! request does not name the tool; "A tool for X" as "Help me with X") and the values it
//! carries. `None` where the description gives no request to make.

use serde_json::{Map, Value};

use super::templates::name_words;

/// How many requests a tool gets.
const PER_TOOL: usize = 3;

/// Verbs a tool name or description starts with, and how a user would say them instead.
const VERBS: &[(&str, &str)] = &[
    ("search", "look for"),
    ("find", "look up"),
    ("lookup", "look up"),
    ("look", "look"),
    ("query", "look up"),
    ("get", "show me"),
    ("fetch", "bring me"),
    ("retrieve", "bring me"),
    ("read", "show me the contents of"),
    ("list", "show me"),
    ("show", "give me"),
    ("describe", "tell me about"),
    ("create", "make"),
    ("add", "post"),
    ("update", "change"),
    ("edit", "change"),
    ("modify", "change"),
    ("set", "change"),
    ("write", "save"),
    ("delete", "get rid of"),
    ("remove", "get rid of"),
    ("move", "relocate"),
    ("rename", "give a new name to"),
    ("send", "deliver"),
    ("run", "start"),
    ("execute", "carry out"),
    ("check", "verify"),
    ("count", "tell me how many"),
    ("calculate", "work out"),
    ("compute", "work out"),
    ("convert", "turn"),
    ("echo", "repeat back"),
];

/// Up to three requests for `tool` carrying `args`, none naming it; none when its description
/// says no request (see [`request_of`]).
pub fn phrasings(tool: &rmcp::model::Tool, args: &Map<String, Value>) -> Vec<String> {
    let Some((say, rest)) = request_of(tool) else {
        return Vec::new();
    };
    let values = values_clause(args);
    let mut out = Vec::new();
    let lead = |s: &str| match say.is_empty() {
        true => s.to_owned(),
        false => format!("{say} {s}"),
    };
    let words = name_words(&tool.name);
    let name_verb = words.first().is_some_and(|w| known_verb(w).is_some());
    if !rest.is_empty() {
        out.push(capital(&format!("{}{values}.", lead(&rest))));
        out.push(format!("Could you {}{values}?", lower_first(&lead(&rest))));
    }
    // "Show me the issues, please": only where the name is a verb and its things.
    if words.len() > 1 && name_verb && !say.is_empty() && !say.ends_with("with") {
        let things = words[1..].join(" ");
        out.push(capital(&format!("{say} the {things}{values}, please.")));
    }
    if rest.is_empty() && out.is_empty() && name_verb {
        out.push(capital(&format!("{}{values}.", lead(&words.join(" ")))));
    }
    out.truncate(PER_TOOL);
    out
}

/// What a user would ask for, from the description's first sentence: its verb said another way
/// and the rest (`Search issues by title` → `look for`, `issues by title`); a verb in the third
/// person made plain (`Switches branches` → `switch branches`); a tool described as a thing
/// (`A detailed tool for dynamic problem-solving`) as `help me with` what it is for. `None`:
/// the description is no request (a noun phrase of another kind, or nothing at all).
pub fn request_of(tool: &rmcp::model::Tool) -> Option<(String, String)> {
    let description = tool.description.as_deref().unwrap_or_default();
    let sentence = first_sentence(description);
    let (verb, rest) = split_verb(&sentence, &tool.name);
    let rest = rest.trim().trim_end_matches('.').to_owned();
    if !verb.is_empty() {
        return Some((say_verb(&verb), rest));
    }
    if rest.is_empty() {
        return None;
    }
    let mut words = rest.splitn(2, ' ');
    let first = words.next().unwrap_or_default().to_ascii_lowercase();
    let after = words.next().unwrap_or_default().to_owned();
    if ["a", "an", "the", "this"].contains(&first.as_str()) {
        return tool_for(&after);
    }
    if let Some(plain) = third_person(&first, &after) {
        let after = plain_after_and(&after);
        return Some((String::new(), format!("{plain} {after}").trim().to_owned()));
    }
    // An imperative we do not know ("Summarize the page"): as it is, if it reads like one.
    let imperative = !first.ends_with("ing") && !first.ends_with("ed");
    (imperative && !after.is_empty()).then(|| (String::new(), lower_first(&rest)))
}

/// A second verb joined by `and` (or `or`) as the first one is said: "… and optionally extracts
/// its contents" → "… and optionally extract its contents".
fn plain_after_and(text: &str) -> String {
    let words: Vec<&str> = text.split(' ').collect();
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    for (i, word) in words.iter().enumerate() {
        let joined = |at: usize| at > 0 && ["and", "or"].contains(&words[at - 1]);
        // `and VERBs` or `and ADVERB-ly VERBs`.
        let after_and = joined(i) || (i > 1 && words[i - 1].ends_with("ly") && joined(i - 1));
        let rest = words.get(i + 1..).map(|w| w.join(" ")).unwrap_or_default();
        match (after_and, third_person(word, &rest)) {
            (true, Some(plain)) => out.push(plain),
            _ => out.push((*word).to_owned()),
        }
    }
    out.join(" ")
}

/// `[detailed] tool for X` → `help me with X`; `… tool to X` → `X`; `… tool that Xs …` → `X …`.
fn tool_for(text: &str) -> Option<(String, String)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let at = words.iter().position(|w| {
        let w = w.to_ascii_lowercase();
        ["tool", "utility", "server", "function", "helper", "service"].contains(&w.as_str())
    })?;
    let (link, rest) = (words.get(at + 1)?, words.get(at + 2..)?.join(" "));
    match link.to_ascii_lowercase().as_str() {
        "for" if !rest.is_empty() => Some(("help me with".into(), rest)),
        "to" if !rest.is_empty() => Some((String::new(), rest)),
        "that" | "which" => {
            let mut w = rest.splitn(2, ' ');
            let verb = w.next().unwrap_or_default().to_ascii_lowercase();
            let after = w.next().unwrap_or_default().to_owned();
            let plain = third_person(&verb, &after)?;
            match known_verb(&plain) {
                Some(say) => Some((say.to_owned(), after)),
                None => Some((String::new(), format!("{plain} {after}"))),
            }
        }
        _ => None,
    }
}

/// A verb in the third person made plain (`switches` → `switch`, `records` → `record`,
/// `applies` → `apply`); `None` for a word that does not look like one, or one a noun phrase
/// follows with `of` (`Details of the issue`).
fn third_person(word: &str, after: &str) -> Option<String> {
    if word.len() < 4 || !word.ends_with('s') || word.ends_with("ss") || word.ends_with("us") {
        return None;
    }
    if after.is_empty() || after.starts_with("of ") || after.starts_with("for ") {
        return None;
    }
    let plain = if let Some(stem) = word.strip_suffix("ies") {
        format!("{stem}y")
    } else if ["ches", "shes", "sses", "xes", "zes"]
        .iter()
        .any(|e| word.ends_with(e))
    {
        word[..word.len() - 2].to_owned()
    } else {
        word[..word.len() - 1].to_owned()
    };
    Some(plain)
}

/// How a user says a verb of [`VERBS`] (by itself or in the third person).
fn known_verb(word: &str) -> Option<&'static str> {
    let base = word.trim_end_matches('s');
    (VERBS.iter())
        .find(|(v, _)| *v == word || *v == base)
        .map(|(_, say)| *say)
}

/// `, with project "apollo" and id 42` (strings quoted, so a model copies them verbatim).
fn values_clause(args: &Map<String, Value>) -> String {
    let parts: Vec<String> = (args.iter())
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| {
            let words = name_words(k).join(" ");
            match v {
                Value::String(s) => format!("{words} \"{s}\""),
                other => format!("{words} {other}"),
            }
        })
        .collect();
    if parts.is_empty() {
        return String::new();
    }
    format!(", with {}", parts.join(" and "))
}

/// The first sentence of a description, without parentheses.
fn first_sentence(text: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' if depth > 0 => depth -= 1,
            _ if depth > 0 => {}
            '.' | '\n' | '!' | '?' if !out.trim().is_empty() => break,
            _ => out.push(c),
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The description's leading verb (or the name's first word) and what follows it; a leading
/// verb that is the name's own is dropped, so the request does not say the name.
fn split_verb(sentence: &str, name: &str) -> (String, String) {
    let mut words = sentence.splitn(2, ' ');
    let first = words.next().unwrap_or_default().to_ascii_lowercase();
    let rest = words.next().unwrap_or_default().to_owned();
    let base = first.trim_end_matches('s');
    if VERBS.iter().any(|(v, _)| *v == first || *v == base) {
        let verb = VERBS.iter().find(|(v, _)| *v == first || *v == base);
        return (
            verb.map(|v| v.0).unwrap_or(base).to_owned(),
            lower_first(&rest),
        );
    }
    // Not a verb we know: the sentence as it is (an imperative, as descriptions mostly are),
    // unless it starts with the name's own verb.
    let name_verb = name_words(name).into_iter().next().unwrap_or_default();
    match first == name_verb {
        true => (name_verb, rest),
        false => (String::new(), sentence.to_owned()),
    }
}

fn say_verb(verb: &str) -> String {
    if verb.is_empty() {
        return String::new();
    }
    (VERBS.iter())
        .find(|(v, _)| *v == verb)
        .map(|(_, say)| (*say).to_owned())
        .unwrap_or_else(|| "help me with this:".to_owned())
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) if c.clone().next().is_some_and(char::is_lowercase) => {
            f.to_lowercase().chain(c).collect()
        }
        Some(f) => std::iter::once(f).chain(c).collect(),
        None => String::new(),
    }
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> rmcp::model::Tool {
        crate::test_support::listed_tool(name, description, serde_json::json!({"type": "object"}))
    }

    #[test]
    fn a_request_is_one_a_user_would_write() {
        let args = |pairs: &[(&str, &str)]| -> Map<String, Value> {
            (pairs.iter())
                .map(|(k, v)| (k.to_string(), Value::from(*v)))
                .collect()
        };
        let checkout = tool("git_checkout", "Switches branches");
        let p = phrasings(&checkout, &args(&[("branch_name", "main")]));
        assert_eq!(
            p,
            [
                "Switch branches, with branch name \"main\".",
                "Could you switch branches, with branch name \"main\"?"
            ],
            "no \"the checkout\" from a name whose first word is no verb"
        );
        let thinking = tool(
            "sequentialthinking",
            "A detailed tool for dynamic and reflective problem-solving through thoughts.\nMore.",
        );
        let p = phrasings(&thinking, &Map::new());
        assert_eq!(
            p[0],
            "Help me with dynamic and reflective problem-solving through thoughts."
        );
        assert!(p.iter().all(|p| !p.contains("A detailed tool")), "{p:?}");
        let that = tool("tz", "A tool that converts times between zones.");
        assert_eq!(
            request_of(&that),
            Some(("turn".into(), "times between zones".into()))
        );
        let null = serde_json::json!({"a": null, "b": 2})
            .as_object()
            .cloned()
            .unwrap();
        assert_eq!(values_clause(&null), ", with b 2", "a null is not said");
        assert_eq!(request_of(&tool("x", "The stations of a region.")), None);
        // mcp-server-fetch: the second verb is said as the first.
        let fetch = tool(
            "fetch",
            "Fetches a URL from the internet and optionally extracts its contents as markdown.",
        );
        assert_eq!(
            request_of(&fetch).map(|(_, rest)| rest),
            Some(
                "fetch a URL from the internet and optionally extract its contents as markdown"
                    .into()
            )
        );
        assert_eq!(request_of(&tool("x", "")), None);
    }
}
