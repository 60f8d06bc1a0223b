//! `mcpeval init` and a server's real state, through the binary. Over a server that writes to a
//! directory given on its command line (tests/fixtures/servers/dir_writer.py), init calls only
//! its tools annotated `readOnlyHint: true` and leaves the directory's bytes as they were: the
//! rest is drafted unverified, and the output, the report and the files say which tools were
//! not called and why. With `--sandbox DIR` and `{sandbox}` in the command it verifies on
//! copies (the directory unchanged, no copy left behind), and the drafted config's `check` runs
//! on copies too; with `--allow-writes` it writes, and the config says what that risks. Over
//! PyPI's mcp-server-git (scripts/install-real-servers), unannotated and annotated: after `init`
//! the commit count, branches, HEAD and index of a scratch repository are unchanged, sandbox or
//! not.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

const WRITER: &str = "tests/fixtures/servers/dir_writer.py";

/// A scratch folder: the server's data, a private TMPDIR (to see sandbox copies removed) and
/// room for init's output.
struct Scratch {
    root: tempfile::TempDir,
    data: PathBuf,
    tmp: PathBuf,
}

impl Scratch {
    fn new() -> Self {
        let root = temp_dir();
        let data = root.path().join("notes");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join("old.txt"), "kept as it was").unwrap();
        let tmp = root.path().join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        Self { root, data, tmp }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    /// `mcpeval ARGS` from the repository's root, its temporary files in `tmp`.
    fn mcpeval(&self, args: &[&str]) -> Output {
        Command::new(bin())
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("TMPDIR", &self.tmp)
            .env_remove("OPENAI_API_KEY")
            .env_remove("GITHUB_STEP_SUMMARY")
            .output()
            .expect("mcpeval runs")
    }

    /// The sandbox copies left in `tmp`.
    fn copies_left(&self) -> Vec<String> {
        (std::fs::read_dir(&self.tmp).unwrap())
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("mcpeval-sandbox-"))
            .collect()
    }
}

/// Every file under `dir` with its bytes: what "unchanged" is held to.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    (files_under(dir).into_iter())
        .map(|f| {
            let bytes = std::fs::read(&f).unwrap();
            (f.strip_prefix(dir).unwrap().to_path_buf(), bytes)
        })
        .collect()
}

fn writer(dir: &str) -> String {
    format!("python3 {} {dir}", repo_path(WRITER).display())
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `mcpeval init --server SERVER --out OUT EXTRA…`, one verification trial per model task.
fn init(s: &Scratch, server: &str, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["init", "--server", server, "--out", out.to_str().unwrap()];
    args.extend(["--verify-trials", "1"]);
    args.extend(extra);
    s.mcpeval(&args)
}

/// `check` as the drafted config has it, the server as both sides, the simulated model.
fn check(s: &Scratch, out: &Path, stages: &str) -> Output {
    let config = out.join("mcpeval.toml");
    let run = s.path("check");
    s.mcpeval(&[
        "check",
        "--config",
        config.to_str().unwrap(),
        "--baseline",
        "server",
        "--stages",
        stages,
        "--all",
        "--host",
        "sim",
        "--out",
        run.to_str().unwrap(),
    ])
}

#[test]
fn init_calls_no_write_tool_and_leaves_the_directory_as_it_was() {
    let s = Scratch::new();
    let before = tree(&s.data);
    let out = s.path("suite");
    let server = writer(s.data.to_str().unwrap());
    let made = init(&s, &server, &out, &["--include-writes"]);
    let said = text(&made);
    assert_eq!(made.status.code(), Some(0), "{said}");
    assert_eq!(tree(&s.data), before, "init changed the directory: {said}");
    // Which tool was not called, why, and how to have it verified.
    assert!(
        said.contains(
            "not called: tool `write_note` (not annotated readOnlyHint: true): the server's state \
             may outlive its process"
        ),
        "{said}"
    );
    assert!(
        said.contains("--sandbox PATH") && said.contains("--allow-writes"),
        "{said}"
    );
    assert!(!said.contains("not called: tool `list_notes`"), "{said}");
    let report = read(&out.join("init-report.md"));
    assert!(report.contains("## The server's state"), "{report}");
    assert!(
        report.contains("- `write_note`: not annotated readOnlyHint: true"),
        "{report}"
    );
    // The read-only tools' call tasks are verified as ever; the write tool's is drafted
    // unverified, outside the suite, and so are the model tasks (a model may pick write_note).
    let calls = read(&out.join("tasks/calls.yaml"));
    assert!(calls.contains("- id: call-list-notes\n"), "{calls}");
    assert!(!calls.contains("- id: call-write-note\n"), "{calls}");
    assert!(calls.contains("#   call-write-note\n"), "{calls}");
    let unverified = read(&out.join("unverified.yaml"));
    assert!(
        unverified.contains("- id: call-write-note\n  kind: call\n"),
        "{unverified}"
    );
    assert!(
        unverified.contains("# unverified model task"),
        "{unverified}"
    );
    assert!(
        unverified.contains("      - tool: write_note\n"),
        "{unverified}"
    );
    assert!(!out.join("tasks/models.yaml").exists(), "nothing verified");
    assert!(
        said.contains("model task(s) drafted, not verified -> "),
        "{said}"
    );
    // The config names the ways forward and sets none: the drafted suite reaches no tool that
    // may change state, so its check is not refused.
    let config = read(&out.join("mcpeval.toml"));
    assert!(config.contains("# - here: allow_writes = true"), "{config}");
    let parsed: toml::Value = toml::from_str(&config).unwrap();
    assert!(parsed.get("allow_writes").is_none(), "{config}");
    let checked = check(&s, &out, "smoke");
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked));
    assert_eq!(tree(&s.data), before, "check changed the directory");
}

#[test]
fn with_a_sandbox_init_verifies_on_copies_and_the_drafted_check_runs_on_copies() {
    let s = Scratch::new();
    let before = tree(&s.data);
    let out = s.path("suite");
    let data = s.data.to_str().unwrap();
    let made = init(
        &s,
        &writer("{sandbox}"),
        &out,
        &["--sandbox", data, "--include-writes"],
    );
    let said = text(&made);
    assert_eq!(made.status.code(), Some(0), "{said}");
    assert_eq!(tree(&s.data), before, "init changed the directory: {said}");
    assert_eq!(s.copies_left(), Vec::<String>::new(), "copies left behind");
    assert!(
        said.contains("were reachable on sandbox copies only ({sandbox})"),
        "{said}"
    );
    // The write tool was called, on copies: its answer names the copy, mapped back.
    let calls = read(&out.join("tasks/calls.yaml"));
    let task = (calls.split("\n- id: "))
        .find(|t| t.starts_with("call-write-note\n"))
        .unwrap_or_else(|| panic!("{calls}"));
    assert!(task.contains("is_error: false"), "{task}");
    assert!(task.contains("result_contains: [\"wrote "), "{task}");
    assert!(
        !calls.contains(data),
        "a copy's path was mapped back: {calls}"
    );
    let models = read(&out.join("tasks/models.yaml"));
    assert!(models.contains("passed 1/1 trials"), "{models}");
    assert!(!out.join("unverified.yaml").exists());
    // The config runs the server on copies of the same directory.
    let config: toml::Value = toml::from_str(&read(&out.join("mcpeval.toml"))).unwrap();
    assert_eq!(
        config["servers"]["server"]["sandbox"].as_str(),
        Some("../notes")
    );
    assert!(config.get("allow_writes").is_none(), "{config}");
    let checked = check(&s, &out, "smoke,evaluation");
    let said = text(&checked);
    assert_eq!(checked.status.code(), Some(0), "{said}");
    assert!(said.contains("evaluation: passed"), "{said}");
    assert_eq!(tree(&s.data), before, "check changed the directory");
    assert_eq!(s.copies_left(), Vec::<String>::new(), "copies left behind");
}

#[test]
fn with_consent_init_writes_to_the_directory_and_the_config_says_what_that_risks() {
    let s = Scratch::new();
    let before = tree(&s.data);
    let out = s.path("suite");
    let server = writer(s.data.to_str().unwrap());
    let args = ["--allow-writes", "--include-writes", "--no-models"];
    let made = init(&s, &server, &out, &args);
    let said = text(&made);
    assert_eq!(made.status.code(), Some(0), "{said}");
    assert!(
        said.contains("--allow-writes: tools that may change state (write_note) were reachable"),
        "{said}"
    );
    let after = tree(&s.data);
    assert!(
        after.len() > before.len(),
        "the consented calls wrote: {after:?}"
    );
    let config = read(&out.join("mcpeval.toml"));
    let parsed: toml::Value = toml::from_str(&config).unwrap();
    assert_eq!(parsed["allow_writes"].as_bool(), Some(true), "{config}");
    assert!(config.contains("what they\n# change is real"), "{config}");
}

#[test]
fn a_placeholder_needs_a_sandbox_and_a_sandbox_its_placeholder() {
    let s = Scratch::new();
    let data = s.data.to_str().unwrap();
    let out = s.path("suite");
    let bare = init(&s, &writer("{sandbox}"), &out, &["--no-models"]);
    assert_eq!(bare.status.code(), Some(2), "{}", text(&bare));
    assert!(
        text(&bare).contains("`{sandbox}` in the server's command names no sandbox"),
        "{}",
        text(&bare)
    );
    let unused = init(&s, &writer(data), &out, &["--no-models", "--sandbox", data]);
    assert_eq!(unused.status.code(), Some(2), "{}", text(&unused));
    assert!(
        text(&unused).contains("or the server runs on the real data"),
        "{}",
        text(&unused)
    );
    assert!(!out.exists(), "nothing written");
}

/// Commit count, branches, HEAD and the index's entries (mode, object, stage, path: what is
/// staged; a read-only `git status` may refresh the index's cached file times, which is no
/// change of state).
fn repo_state(repo: &Path) -> [String; 4] {
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(repo)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    [
        git(&["rev-list", "--count", "--all"]),
        git(&["branch", "--list", "--all"]),
        git(&["rev-parse", "HEAD"]),
        git(&["ls-files", "--stage"]),
    ]
}

/// A config naming each release over `repo` (and over `{sandbox}`) in the legacy era: a
/// Python server that starts slowly on a busy machine must not meet the era probe's fixed wait
/// (issue 48, item 2), which is not what this test is about.
fn git_config(s: &Scratch, repo: &Path) -> PathBuf {
    let mut text = String::new();
    for (name, version, over) in [
        ("old", "0.6.2", repo.to_str().unwrap()),
        ("new", "2026.10.19", repo.to_str().unwrap()),
        ("new-sandboxed", "2026.10.19", "{sandbox}"),
    ] {
        let command = format!("{} --repository {over}", git_server(version).display());
        text.push_str(&format!(
            "[servers.{name}]\ncommand = {}\nprotocol_era = \"legacy\"\n\n",
            toml::Value::String(command)
        ));
    }
    let path = s.path("git.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn init_over_mcp_server_git_leaves_the_repository_as_it_was_sandbox_or_not() {
    let s = Scratch::new();
    let repo = scratch_repo(s.root.path());
    let before = repo_state(&repo);
    let config = git_config(&s, &repo);
    let config = config.to_str().unwrap();
    for (server, version) in [("old", "0.6.2"), ("new", "2026.10.19")] {
        let out = s.path(&format!("plain-{version}"));
        let args = ["--config", config, "--include-writes", "--no-ci"];
        let made = init(&s, server, &out, &args);
        let said = text(&made);
        assert_eq!(made.status.code(), Some(0), "{version}: {said}");
        assert_eq!(
            repo_state(&repo),
            before,
            "{version} changed the repository"
        );
        for tool in ["git_commit", "git_create_branch", "git_add", "git_reset"] {
            assert!(
                said.contains(&format!("not called: tool `{tool}`")),
                "{version}: {tool}: {said}"
            );
        }
        // 0.6.2 annotates nothing: not even git_status is called; the annotated release's
        // read-only git_status is, and pinned.
        let status_called = !said.contains("not called: tool `git_status`");
        assert_eq!(status_called, version != "0.6.2", "{version}: {said}");
        assert!(!out.join("tasks/models.yaml").exists(), "{version}: {said}");
        assert!(read(&out.join("unverified.yaml")).contains("- tool: git_commit\n"));
    }
    let out = s.path("sandboxed");
    let repo_arg = repo.to_str().unwrap();
    let args = [
        "--config",
        config,
        "--sandbox",
        repo_arg,
        "--include-writes",
        "--no-ci",
    ];
    let made = init(&s, "new-sandboxed", &out, &args);
    let said = text(&made);
    assert_eq!(made.status.code(), Some(0), "{said}");
    assert_eq!(
        repo_state(&repo),
        before,
        "the sandboxed init changed the repository"
    );
    assert_eq!(s.copies_left(), Vec::<String>::new(), "copies left behind");
    assert!(said.contains("sandbox copies only"), "{said}");
    let models = read(&out.join("tasks/models.yaml"));
    assert!(models.contains("passed 1/1 trials"), "{models}");
    assert!(
        !models.contains(repo_arg),
        "the copy's path, mapped back: {models}"
    );
}
