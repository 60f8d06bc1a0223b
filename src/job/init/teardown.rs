//! Teardowns for the tasks `mcpeval init` drafts and does not verify: a call of the tool that
//! undoes the task's call (`create_note` → `delete_note`), when every argument that tool requires
//! is one the task's call carries, so the teardown names the very thing the call made.

use serde_json::{Map, Value};

use super::args_from_schema::required;

/// The verbs of a call that makes something, and of one that undoes it.
const MAKES: &[&str] = &[
    "create", "add", "new", "insert", "write", "make", "post", "put", "save", "upload",
];
const UNDOES: &[&str] = &["delete", "remove", "drop", "destroy", "erase", "unlink"];

/// A derived teardown call.
#[derive(Debug, Clone, PartialEq)]
pub struct Teardown {
    pub tool: String,
    pub args: Map<String, Value>,
}

impl Teardown {
    /// The task's `teardown:` key, in YAML (flow mappings for the call).
    pub fn yaml(&self) -> String {
        let (tool, args) = (
            Value::from(self.tool.as_str()),
            Value::Object(self.args.clone()),
        );
        format!("  teardown:\n    - {{\"tool\": {tool}, \"args\": {args}}}\n")
    }
}

/// The teardown of a call of `tool` with `args`, if one of `tools` undoes it: same words but
/// the verb (`git_create_branch` → `git_delete_branch`, `addNote` → `removeNote`), requiring
/// only arguments the call carries (and at least one, to name what it made).
pub fn derive(
    tool: &str,
    args: &Map<String, Value>,
    tools: &[rmcp::model::Tool],
) -> Option<Teardown> {
    let words = crate::suite::name_words(tool);
    let at = words.iter().position(|w| MAKES.contains(&w.as_str()))?;
    let (before, after) = (&words[..at], &words[at + 1..]);
    if after.is_empty() {
        return None;
    }
    tools.iter().find_map(|undo| {
        let theirs = crate::suite::name_words(&undo.name);
        let verb = theirs.get(at)?;
        let same = theirs.len() == words.len()
            && UNDOES.contains(&verb.as_str())
            && theirs[..at] == *before
            && singular(&theirs[at + 1..]) == singular(after);
        if !same {
            return None;
        }
        let schema = Value::Object((*undo.input_schema).clone());
        let needs = required(&schema);
        if needs.is_empty() {
            return None;
        }
        let args = (needs.iter())
            .map(|k| args.get(*k).map(|v| ((*k).to_owned(), v.clone())))
            .collect::<Option<Map<String, Value>>>()?;
        Some(Teardown {
            tool: undo.name.to_string(),
            args,
        })
    })
}

fn singular(words: &[String]) -> Vec<&str> {
    words.iter().map(|w| w.trim_end_matches('s')).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, required: &[&str]) -> rmcp::model::Tool {
        let props: Map<String, Value> = (required.iter())
            .map(|r| ((*r).to_owned(), json!({"type": "string"})))
            .collect();
        let schema = json!({"type": "object", "properties": props, "required": required});
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        rmcp::model::Tool::new(name.to_owned(), "d", std::sync::Arc::new(schema))
    }

    #[test]
    fn a_create_gets_the_delete_of_the_same_thing_when_its_arguments_are_known() {
        let tools = [
            tool("create_note", &["name", "text"]),
            tool("delete_notes", &["name"]),
            tool("git_create_branch", &["repo_path", "branch_name"]),
            tool("git_delete_branch", &["repo_path", "branch_name"]),
            tool("add_comment", &["issue_id", "body"]),
            tool("delete_comment", &["comment_id"]),
        ];
        let args = |v: Value| v.as_object().cloned().unwrap();
        let got = derive(
            "create_note",
            &args(json!({"name": "a", "text": "t"})),
            &tools,
        )
        .unwrap();
        assert_eq!(
            (got.tool.as_str(), Value::Object(got.args.clone())),
            ("delete_notes", json!({"name": "a"}))
        );
        assert!(
            got.yaml()
                .contains(r#"- {"tool": "delete_notes", "args": {"name":"a"}}"#),
            "{}",
            got.yaml()
        );
        let branch = args(json!({"repo_path": "{sandbox}", "branch_name": "example"}));
        assert_eq!(
            derive("git_create_branch", &branch, &tools).unwrap().tool,
            "git_delete_branch"
        );
        // The id of a comment is only in the answer, which an unverified task never saw.
        assert_eq!(
            derive(
                "add_comment",
                &args(json!({"issue_id": "1", "body": "b"})),
                &tools
            ),
            None
        );
        assert_eq!(
            derive("delete_note", &args(json!({"name": "a"})), &tools),
            None
        );
    }
}
