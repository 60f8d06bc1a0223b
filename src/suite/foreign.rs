//! Recognises the files of other MCP eval tools (mcpchecker, promptfoo) among task files, so
//! that loading one says what it is and how to import it instead of listing unknown keys.

use std::path::Path;

use super::load::Diagnostic;
use super::raw::{Node, Value};

/// One diagnostic for a file that failed validation and is another tool's format: which one,
/// where that shows, and the `mcpeval tasks import` command that converts it. `None` when the
/// file looks like no other tool's (its own diagnostics then stand).
pub(crate) fn recognise(file: &Path, root: &Node) -> Option<Diagnostic> {
    let Value::Map(entries) = &root.value else {
        return None;
    };
    let key = |name: &str| {
        entries
            .iter()
            .find(|(k, _)| matches!(&k.value, Value::Str(s) if s == name))
    };
    let text = |name: &str| match key(name) {
        Some((
            _,
            Node {
                value: Value::Str(s),
                ..
            },
        )) => Some(s.as_str()),
        _ => None,
    };
    let (format, what, at) = if let Some(version) = text("apiVersion")
        .filter(|v| v.starts_with("mcpchecker/"))
        .map(str::to_owned)
    {
        let kind = text("kind").unwrap_or("Task");
        let what = format!("an mcpchecker {} (`apiVersion: {version}`)", noun(kind));
        ("mcpchecker", what, key("apiVersion"))
    } else if let Some(kind) = text("kind").filter(|k| matches!(*k, "Task" | "Eval")) {
        let shaped = ["metadata", "spec", "steps", "config"]
            .iter()
            .any(|k| key(k).is_some());
        if !shaped {
            return None;
        }
        let what = format!("an mcpchecker {} (`kind: {kind}`)", noun(kind));
        ("mcpchecker", what, key("kind"))
    } else {
        let named = file
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("promptfooconfig"));
        let cases = ["tests", "defaultTest", "scenarios"]
            .iter()
            .find_map(|k| key(k));
        let setup = ["prompts", "providers"].iter().find_map(|k| key(k));
        let both = key("prompts").and(key("providers"));
        let at = match (cases, setup) {
            (Some(cases), Some(_)) => Some(cases),
            (None, Some(_)) if both.is_some() || named => setup,
            (Some(cases), None) if named => Some(cases),
            _ => None,
        }?;
        let what = "a promptfoo config (`prompts`, `providers`, `tests`)".to_owned();
        ("promptfoo", what, Some(at))
    };
    let (line, column) = at.map_or((1, 1), |(k, _)| (k.line, k.column));
    let shown = file.display();
    Some(Diagnostic {
        file: file.to_path_buf(),
        line,
        column,
        message: format!(
            "this is {what}, not an mcpeval task file: convert it with `mcpeval tasks import \
             --from {format} {shown} --out DIR`"
        ),
    })
}

fn noun(kind: &str) -> &'static str {
    match kind {
        "Eval" => "eval file",
        _ => "task file",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::raw;

    fn recognised(name: &str, yaml: &str) -> Option<String> {
        let root = raw::parse(yaml).unwrap();
        recognise(Path::new(name), &root).map(|d| d.to_string())
    }

    #[test]
    fn mcpchecker_tasks_and_evals_are_recognised() {
        let task = "kind: Task\napiVersion: mcpchecker/v1alpha2\nmetadata: {name: a}\nspec:\n  prompt: {inline: hi}\n";
        let found = recognised("t.yaml", task).unwrap();
        assert!(
            found.starts_with(
                "t.yaml:2:1: this is an mcpchecker task file (`apiVersion: mcpchecker/v1alpha2`)"
            ),
            "{found}"
        );
        assert!(found.ends_with("`mcpeval tasks import --from mcpchecker t.yaml --out DIR`"));
        let legacy = "kind: Task\nmetadata: {name: a}\nsteps:\n  prompt: {inline: hi}\n";
        let found = recognised("t.yaml", legacy).unwrap();
        assert!(found.starts_with("t.yaml:1:1: this is an mcpchecker task file (`kind: Task`)"));
        let eval = "kind: Eval\nmetadata: {name: e}\nconfig: {taskSets: []}\n";
        assert!(recognised("e.yaml", eval)
            .unwrap()
            .contains("mcpchecker eval file"));
    }

    #[test]
    fn promptfoo_configs_are_recognised() {
        let config = "description: x\nprompts: ['{{q}}']\nproviders: [openai:gpt-4.1]\ntests:\n  - vars: {q: hi}\n";
        let found = recognised("c.yaml", config).unwrap();
        assert!(
            found.starts_with("c.yaml:4:1: this is a promptfoo config"),
            "{found}"
        );
        assert!(found.contains("--from promptfoo c.yaml"));
        // By its usual name even without prompts or providers.
        let tests_only = "tests:\n  - vars: {q: hi}\n";
        assert!(recognised("promptfooconfig.yaml", tests_only).is_some());
        assert!(recognised("other.yaml", tests_only).is_none());
    }

    #[test]
    fn task_files_with_mistakes_are_not_taken_for_other_formats() {
        assert!(recognised("t.yaml", "id: a\nprompt: p\nkind: tool\nexpect: {}\n").is_none());
        assert!(recognised("t.yaml", "- id: a\n  prompt: p\n").is_none());
        // `kind: Task` alone, without mcpchecker's structure, is just a wrong kind.
        assert!(recognised("t.yaml", "id: a\nprompt: p\nkind: Task\n").is_none());
    }
}
