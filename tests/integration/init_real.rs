//! `mcpeval init`'s drafts over published servers (scripts/install-real-servers), through the
//! binary: over PyPI's mcp-server-time 2026.10.19, whose parameters give their values in their
//! descriptions (`e.g. 'America/New_York'`, `(HH:MM)`), the call tasks carry real time zones
//! and answer without an error, every tool gets a model task, no argument is a one-letter
//! placeholder, and the drafted config does not give the base branch the installed program the
//! candidate runs; over mcp-server-git 2026.10.19, `repo_path` is the `--repository` init
//! started it with, and a call refused on a value init drafted is not kept but named.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

/// The installed mcp-server-time release; missing is a failure, never a skip.
fn time_server() -> PathBuf {
    let path = repo_path("target/real-servers/time-2026.10.19/bin/mcp-server-time");
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-real-servers (scripts/test does)",
        path.display()
    );
    path
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `[servers.NAME]` of `command` in the legacy era (a Python server that starts slowly on a
/// busy machine must not meet the era probe's fixed wait, which is not what these tests are
/// about), written to `dir/servers.toml`.
fn config(dir: &Path, name: &str, command: &str) -> PathBuf {
    let text = format!(
        "[servers.{name}]\ncommand = {}\nprotocol_era = \"legacy\"\n",
        toml::Value::String(command.to_owned())
    );
    let path = dir.join("servers.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `mcpeval init --config CONFIG --server NAME --out OUT EXTRA…`, one trial per model task, run
/// in `dir` (a git repository of its own, so the workflow goes there).
fn init(dir: &Path, config: &Path, name: &str, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "init",
        "--config",
        config.to_str().unwrap(),
        "--server",
        name,
    ];
    args.extend(["--out", out.to_str().unwrap(), "--verify-trials", "1"]);
    args.extend(extra);
    Command::new(bin())
        .args(&args)
        .current_dir(dir)
        .env_remove("OPENAI_API_KEY")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("mcpeval runs")
}

/// The `call:` mappings of a task file, each as JSON.
fn calls(yaml: &str) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    let mut id = String::new();
    for line in yaml.lines() {
        if let Some(rest) = line.strip_prefix("- id: ") {
            id = rest.to_owned();
        }
        if let Some(call) = line.trim_start().strip_prefix("call: ") {
            out.push((id.clone(), serde_json::from_str(call).unwrap()));
        }
    }
    out
}

/// Every string in `value` (a regex's text without its `(?i)` and escapes).
fn strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => out.push(s.trim_start_matches("(?i)").replace('\\', "")),
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// The task whose id is `id`, up to the next one.
fn task<'a>(yaml: &'a str, id: &str) -> &'a str {
    let at = yaml
        .find(&format!("- id: {id}\n"))
        .unwrap_or_else(|| panic!("no task {id}: {yaml}"));
    let rest = &yaml[at..];
    let end = rest[1..].find("\n- id: ").map_or(rest.len(), |e| e + 1);
    &rest[..end]
}

/// One `key = value` of a TOML table.
fn entry(toml: &toml::Value, table: &str, key: &str) -> String {
    toml["servers"][table][key]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn init_over_mcp_server_time_drafts_time_zones_and_a_model_task_for_every_tool() {
    let dir = temp_dir();
    let root = dir.path();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(git.status.success(), "{}", text(&git));
    let program = time_server();
    let config = config(root, "time", program.to_str().unwrap());
    let out = root.join("mcpeval");
    let made = init(root, &config, "time", &out, &[]);
    let said = text(&made);
    assert_eq!(made.status.code(), Some(0), "{said}");

    // Call tasks with the values the descriptions give, answered without an error.
    let yaml = read(&out.join("tasks/calls.yaml"));
    let drafted = calls(&yaml);
    let (_, convert) = (drafted.iter())
        .find(|(id, _)| id == "call-convert-time")
        .unwrap_or_else(|| panic!("{yaml}"));
    assert_eq!(
        convert["args"],
        serde_json::json!({"source_timezone": "America/New_York",
                           "target_timezone": "Asia/Tokyo", "time": "14:30"})
    );
    assert!(
        task(&yaml, "call-convert-time").contains("is_error: false"),
        "{yaml}"
    );
    let now = task(&yaml, "call-get-current-time");
    assert!(now.contains(r#""timezone":"America/New_York""#), "{now}");
    assert!(now.contains("is_error: false"), "{now}");
    assert!(!said.contains("every tool call was refused"), "{said}");

    // A model task for every tool, and the output tells verified from templated.
    let models = read(&out.join("tasks/models.yaml"));
    for tool in ["convert_time", "get_current_time"] {
        assert!(
            models.contains(&format!("      - tool: {tool}\n")),
            "{tool}: {models}"
        );
    }
    assert!(!out.join("todo.yaml").exists(), "no stub needed: {said}");
    assert!(said.contains("call task(s), verified"), "{said}");
    assert!(
        said.contains("templated and not verified by a real model"),
        "{said}"
    );
    let report = read(&out.join("init-report.md"));
    assert!(report.contains("## Verified and unverified"), "{report}");
    assert!(
        report.contains("**templated, not verified by a real model**"),
        "{report}"
    );

    // No argument anywhere is a one-letter placeholder.
    let mut all = Vec::new();
    for (_, call) in &drafted {
        strings(&call["args"], &mut all);
    }
    for line in models
        .lines()
        .filter(|l| l.trim_start().starts_with("args: "))
    {
        let args: serde_json::Value = serde_json::from_str(line.trim()[6..].trim()).unwrap();
        strings(&args, &mut all);
    }
    assert!(all.len() >= 8, "{all:?}");
    assert!(all.iter().all(|s| s.chars().count() > 1), "{all:?}");

    // The installed program is the candidate's only: the base branch's entry is a placeholder.
    let toml: toml::Value = toml::from_str(&read(&out.join("mcpeval.toml"))).unwrap();
    assert_eq!(entry(&toml, "server", "command"), program.to_str().unwrap());
    let base = entry(&toml, "base-branch", "command");
    assert_ne!(base, entry(&toml, "server", "command"));
    assert!(base.starts_with("TODO"), "{base}");
    assert!(read(&out.join("mcpeval.toml")).contains("installed\n# outside this repository"));
    assert!(
        said.contains("a program installed outside the repository"),
        "{said}"
    );
    let flow = read(&root.join(".github/workflows/mcpeval.yml"));
    assert!(flow.contains("uses: mcpeval/mcpeval@main\n"), "{flow}");
    assert!(flow.contains("install: source\n"), "{flow}");
}

#[test]
fn init_over_mcp_server_git_passes_its_repository_and_names_the_values_refused() {
    let dir = temp_dir();
    let repo = scratch_repo(dir.path());
    let command = format!(
        "{} --repository {}",
        git_server("2026.10.19").display(),
        repo.display()
    );
    let config = config(dir.path(), "git", &command);
    let out = dir.path().join("suite");
    let made = init(dir.path(), &config, "git", &out, &["--no-ci"]);
    let said = text(&made);
    assert_eq!(made.status.code(), Some(0), "{said}");
    let yaml = read(&out.join("tasks/calls.yaml"));
    let repo = repo.to_str().unwrap();
    for id in ["call-git-status", "call-git-log", "call-git-show"] {
        let t = task(&yaml, id);
        assert!(t.contains(&format!(r#""repo_path":"{repo}""#)), "{t}");
        assert!(t.contains("is_error: false"), "{t}");
    }
    assert!(task(&yaml, "call-git-show").contains(r#""revision":"HEAD""#));
    // `target` has no value init could know: the refusal of its drafted one is not pinned, and
    // the output names the tool, the argument and the value.
    assert!(!yaml.contains("- id: call-git-diff\n"), "{yaml}");
    assert!(
        said.contains(r#"refused on values init drafted: `git_diff` target = "example""#),
        "{said}"
    );
    for (id, call) in calls(&yaml) {
        let mut all = Vec::new();
        strings(&call["args"], &mut all);
        assert!(all.iter().all(|s| s.chars().count() > 1), "{id}: {all:?}");
    }
    // git_diff's model task is a TODO stub; the read-only tools' are drafted (unverified: the
    // server lists tools that write).
    let todo = read(&out.join("todo.yaml"));
    assert!(todo.contains("- tool: git_diff\n"), "{todo}");
    assert!(todo.contains("`target`"), "{todo}");
    let unverified = read(&out.join("unverified.yaml"));
    assert!(unverified.contains("- tool: git_status\n"), "{unverified}");
    assert!(unverified.contains(repo), "{unverified}");
}
