//! Tools, prompts, resources and templates a server marks deprecated in its own words: a title
//! or description that says "deprecated" ("DEPRECATED:", "(Deprecated)", "is deprecated"),
//! "will be removed", or opens a sentence with "use X instead"; with what to use instead when it
//! says ("use X instead", "replaced by X", "in favor of X").

use serde::Serialize;
use serde_json::Value;

use super::model::Snapshot;

/// One item a server says is deprecated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Marked {
    /// `tools`, `prompts`, `resources` or `resourceTemplates`.
    pub list: String,
    /// The name (tools, prompts), URI or URI template.
    pub name: String,
    /// The words that say so, quoted from the title or description.
    pub says: String,
    /// What to use instead, when the text names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instead: Option<String>,
}

impl Marked {
    /// `tool \`read_file\``.
    pub fn what(&self) -> String {
        let noun = match self.list.as_str() {
            "tools" => "tool",
            "prompts" => "prompt",
            "resources" => "resource",
            _ => "resource template",
        };
        format!("{noun} `{}`", self.name)
    }
}

/// Every item of the snapshot's lists whose title or description marks it deprecated.
pub fn in_lists(snapshot: &Snapshot) -> Vec<Marked> {
    let lists = [
        ("tools", "name", &snapshot.tools),
        ("prompts", "name", &snapshot.prompts),
        ("resources", "uri", &snapshot.resources),
        (
            "resourceTemplates",
            "uriTemplate",
            &snapshot.resource_templates,
        ),
    ];
    let mut out = Vec::new();
    for (list, key, items) in lists {
        for item in items.iter() {
            let Some(name) = item.get(key).and_then(Value::as_str) else {
                continue;
            };
            if let Some((says, instead)) = marked(item) {
                out.push(Marked {
                    list: list.to_owned(),
                    name: name.to_owned(),
                    says,
                    instead,
                });
            }
        }
    }
    out
}

/// Whether the baseline's lists hold the same item already marked deprecated.
pub fn was_marked(baseline: &[Marked], item: &Marked) -> bool {
    baseline
        .iter()
        .any(|b| b.list == item.list && b.name == item.name)
}

/// The texts that say so (quoted, joined) and what to use instead.
fn marked(item: &Value) -> Option<(String, Option<String>)> {
    let texts = ["title", "annotations", "description"]
        .iter()
        .filter_map(|k| match *k {
            "annotations" => item.pointer("/annotations/title"),
            k => item.get(k),
        })
        .filter_map(Value::as_str);
    let mut says = Vec::new();
    let mut instead = None;
    for text in texts {
        if !says_deprecated(text) {
            continue;
        }
        says.push(format!("\"{}\"", excerpt(text)));
        instead = instead.or_else(|| replacement(text));
    }
    (!says.is_empty()).then(|| (says.join(", "), instead))
}

fn says_deprecated(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let deprecated = lower.match_indices("deprecated").any(|(at, _)| {
        let before = lower[..at].trim_end();
        !(before.ends_with("not") || before.ends_with("non-") || before.ends_with("un"))
    });
    deprecated
        || lower.contains("will be removed")
        || sentences(&lower).any(|s| s.starts_with("use ") && s.contains(" instead"))
}

/// The sentences of a text, each trimmed (split at `.`, `:`, `;`, `!`, `(` and new lines).
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    text.split(['.', ':', ';', '!', '(', '\n']).map(str::trim)
}

/// The name after "use … instead", "replaced by", "in favor/favour of" or "superseded by".
fn replacement(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let word_after = |at: usize| -> Option<String> {
        let word = text[at..].split_whitespace().next()?;
        let word = word.trim_matches(|c: char| !(c.is_alphanumeric() || "_-/:@".contains(c)));
        let word = word.trim_end_matches([':', '/']);
        (!word.is_empty()).then(|| word.to_owned())
    };
    for lead in [
        "replaced by ",
        "in favor of ",
        "in favour of ",
        "superseded by ",
    ] {
        if let Some(at) = lower.find(lead) {
            return word_after(at + lead.len());
        }
    }
    let starts_word = |at: usize| {
        lower[..at]
            .chars()
            .last()
            .is_none_or(|c| !c.is_alphanumeric())
    };
    let (at, _) = lower.match_indices("use ").find(|(at, _)| {
        let rest = &lower[*at..];
        starts_word(*at)
            && rest
                .find(" instead")
                .is_some_and(|end| rest[..end].split_whitespace().count() <= 4)
    })?;
    word_after(at + "use ".len())
}

/// The text on one line, shortened to 80 characters.
fn excerpt(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools(list: Value) -> Snapshot {
        Snapshot {
            tools: list.as_array().unwrap().clone(),
            ..Snapshot::default()
        }
    }

    #[test]
    fn a_retitled_tool_is_marked_with_what_to_use_instead() {
        let snapshot = tools(json!([
            {"name": "read_file", "title": "Read File (Deprecated)",
             "description": "DEPRECATED: Use read_text_file instead."},
            {"name": "read_text_file", "description": "Read a file as text. Use head to limit."},
            {"name": "old", "description": "This tool will be removed in 2.0; replaced by `new`."},
        ]));
        let found = in_lists(&snapshot);
        let names: Vec<&str> = found.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["read_file", "old"], "{found:?}");
        assert_eq!(found[0].instead.as_deref(), Some("read_text_file"));
        assert_eq!(
            found[0].says,
            "\"Read File (Deprecated)\", \"DEPRECATED: Use read_text_file instead.\""
        );
        assert_eq!(found[0].what(), "tool `read_file`");
        assert_eq!(found[1].instead.as_deref(), Some("new"));
    }

    #[test]
    fn ordinary_words_mark_nothing() {
        for text in [
            "Lists packages; marks those that are not deprecated.",
            "If the file is large, use read_chunk instead.",
            "Returns the user's undeprecated settings",
        ] {
            let snapshot = tools(json!([{"name": "t", "description": text}]));
            assert!(in_lists(&snapshot).is_empty(), "{text}");
        }
        let prompt = Snapshot {
            prompts: vec![json!({"name": "p", "description": "Use summarize instead."})],
            ..Snapshot::default()
        };
        let found = in_lists(&prompt);
        assert_eq!(found.len(), 1, "a sentence that opens with it counts");
        assert_eq!(found[0].instead.as_deref(), Some("summarize"));
    }

    #[test]
    fn an_item_marked_in_the_baseline_is_not_new() {
        let base = in_lists(&tools(json!([{"name": "a", "description": "Deprecated."}])));
        let cand = in_lists(&tools(json!([
            {"name": "a", "description": "Deprecated."},
            {"name": "b", "description": "Deprecated."}
        ])));
        let new: Vec<&str> = (cand.iter())
            .filter(|m| !was_marked(&base, m))
            .map(|m| m.name.as_str())
            .collect();
        assert_eq!(new, ["b"]);
    }
}
