//! The drafted config's word on the server's state (`DIR/mcpeval.toml`): how `mcpeval check`
//! may reach the tools that may change it, so that the check the workflow runs is not refused
//! by the write gate: a `sandbox`, `state = "process"`, or `allow_writes = true` with what it
//! risks; or, when init called no such tool, why none is needed yet and the choices.

use std::path::Path;

use super::ci_workflow::{relative, slashed};
use super::guard::{Guard, Safety};
use crate::config::ServerSpec;

/// The config's lines on the state: top-level ones (before any table) and those of each
/// `[servers.*]` table; what is left to do, if anything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StateLines {
    pub top: String,
    pub server: String,
    pub todo: Option<String>,
}

/// The lines for `guard`'s server; `dir` is the config's folder, `root` the repository's.
pub fn state_lines(guard: &Guard, spec: &ServerSpec, dir: &Path, root: &Path) -> StateLines {
    let tools = guard.tools().join(", ");
    match &guard.safety {
        Safety::Sandboxed(_) => sandbox_lines(spec, dir, root),
        Safety::Exempt(why) => StateLines {
            server: format!(
                "# {why}: the server keeps no state beyond its process, so trials may call\n\
                 # every tool.\nstate = \"process\"\n"
            ),
            ..StateLines::default()
        },
        Safety::Consented => StateLines {
            top: format!(
                "# `mcpeval init --allow-writes`: trials may call the tools that may change the\n\
                 # server's state ({tools}: not annotated readOnlyHint: true), and what they\n\
                 # change is real: in CI the runner's checkout, thrown away after the job; run\n\
                 # locally, whatever the server's command points at (a repository, a database).\n\
                 # A sandbox is safer: in [servers.server], sandbox = \"PATH\" with {{sandbox}} where\n\
                 # PATH goes in `command`, and this line removed.\nallow_writes = true\n"
            ),
            ..StateLines::default()
        },
        Safety::ReadOnly if guard.state_changing.is_empty() => StateLines {
            top: format!("{}\n", CHOICES.replace("{head}", ALL_READ_ONLY)),
            ..StateLines::default()
        },
        Safety::ReadOnly => StateLines {
            top: format!(
                "{}\n",
                CHOICES.replace(
                    "{head}",
                    &format!(
                        "# Tools that may change the server's state (not annotated readOnlyHint:\n\
                         # true): {tools}. `mcpeval init` called none of them, so this suite\n\
                         # reaches none and `check` runs as it is."
                    )
                )
            ),
            ..StateLines::default()
        },
    }
}

const ALL_READ_ONLY: &str =
    "# Every tool is annotated readOnlyHint: true, so `check` calls them freely.";

/// The three ways to let `check` reach a tool that may change state, commented out.
const CHOICES: &str = "{head}\n\
# A suite that reaches a tool that may change state (a model task: a model is offered every\n\
# tool) is refused (exit 2) until one of these is set:\n\
# - in [servers.server] and [servers.base-branch]: sandbox = \"PATH\", with {sandbox} where\n\
#   PATH goes in `command`: each server process runs on a fresh copy of PATH;\n\
# - in both: state = \"process\", if the server keeps nothing beyond its process;\n\
# - here: allow_writes = true (trials change the real state: in CI the runner's, locally\n\
#   yours).";

/// `sandbox = "PATH"` (or `{ NAME = "PATH" }`), relative to the config when the sandbox is in
/// the repository; one outside it is written as it is, with a to-do: CI cannot see it.
fn sandbox_lines(spec: &ServerSpec, dir: &Path, root: &Path) -> StateLines {
    let q = |s: &str| toml::Value::String(s.to_owned()).to_string();
    let mut outside = Vec::new();
    let mut shown = |path: &Path| match path.starts_with(root) {
        true => slashed(&relative(dir, path)),
        false => {
            outside.push(path.display().to_string());
            path.display().to_string()
        }
    };
    let value = match spec.sandboxes.as_slice() {
        [one] if one.name.is_none() => q(&shown(&one.path)),
        many => {
            let pairs: Vec<String> = (many.iter())
                .map(|s| {
                    format!(
                        "{} = {}",
                        s.name.as_deref().unwrap_or("sandbox"),
                        q(&shown(&s.path))
                    )
                })
                .collect();
            format!("{{ {} }}", pairs.join(", "))
        }
    };
    let todo = (!outside.is_empty()).then(|| {
        format!(
            "the sandbox {} is outside the repository, so CI has no such path: commit a small \
             fixture (or a script that makes one before the check) and point `sandbox` in the \
             config at it",
            outside.join(", ")
        )
    });
    StateLines {
        server: format!(
            "# Each server process runs on a fresh copy of this path ({{sandbox}} in `command` is\n\
             # the copy's), removed when it ends: trials never change the original.\nsandbox = {value}\n"
        ),
        todo,
        ..StateLines::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SandboxPath;

    fn guard(safety: Safety, writes: bool) -> Guard {
        let state_changing = match writes {
            true => vec![(
                "git_commit".into(),
                "not annotated readOnlyHint: true".into(),
            )],
            false => Vec::new(),
        };
        Guard {
            safety,
            state_changing,
        }
    }

    /// The lines as they sit in a config: top-level ones, then a server table.
    fn parsed(lines: &StateLines) -> toml::Value {
        let text = format!(
            "{}\n[servers.server]\ncommand = \"x\"\n{}",
            lines.top, lines.server
        );
        toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    #[test]
    fn each_way_of_handling_the_state_is_a_setting_check_reads() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("mcpeval");
        let data = root.path().join("fixtures").join("repo");
        std::fs::create_dir_all(&data).unwrap();
        let mut spec = ServerSpec::parse("s", "srv --repository {sandbox}").unwrap();
        spec.sandboxes = vec![SandboxPath::new(None, &data).unwrap()];
        let sandboxed = guard(Safety::Sandboxed(spec.sandboxes.clone()), true);
        let lines = state_lines(&sandboxed, &spec, &dir, root.path());
        assert_eq!(
            parsed(&lines)["servers"]["server"]["sandbox"].as_str(),
            Some("../fixtures/repo")
        );
        assert_eq!(lines.todo, None);
        let elsewhere = tempfile::tempdir().unwrap();
        let outside = state_lines(&sandboxed, &spec, &dir, elsewhere.path());
        assert!(outside.todo.unwrap().contains("outside the repository"));

        let exempt = state_lines(
            &guard(Safety::Exempt("the embedded demo server"), true),
            &spec,
            &dir,
            root.path(),
        );
        assert_eq!(
            parsed(&exempt)["servers"]["server"]["state"].as_str(),
            Some("process")
        );
        let consent = state_lines(&guard(Safety::Consented, true), &spec, &dir, root.path());
        assert_eq!(parsed(&consent)["allow_writes"].as_bool(), Some(true));
        assert!(
            consent.top.contains("what they\n# change is real"),
            "{}",
            consent.top
        );
        for writes in [true, false] {
            let none = state_lines(&guard(Safety::ReadOnly, writes), &spec, &dir, root.path());
            let value = parsed(&none);
            assert!(
                value.get("allow_writes").is_none()
                    && value["servers"]["server"].get("sandbox").is_none()
            );
            assert!(
                none.top.contains("# - here: allow_writes = true"),
                "{}",
                none.top
            );
            assert_eq!(none.top.contains("git_commit"), writes, "{}", none.top);
        }
    }
}
