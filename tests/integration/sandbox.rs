//! The write gate and sandboxes through the real binary: a suite that can reach a tool not
//! annotated `readOnlyHint: true`, on a server whose state outlives its process, is refused
//! (exit 2) unless each process runs on a fresh copy (`--sandbox`) or the user consents
//! (`--allow-writes`); with a sandbox the trials write to copies and the original's bytes stay.
//! Servers: a stdlib Python server over a directory (tests/fixtures/servers/dir_writer.py) and
//! PyPI's mcp-server-git in two releases (scripts/install-real-servers).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

const WRITER: &str = "tests/fixtures/servers/dir_writer.py";

/// A model task that writes, one that only reads, and a call task that writes and names the
/// data's directory (`{D}`: `{sandbox}`, or the real path) in its arguments and its expected
/// answer.
const NOTES_SUITE: &str = r#"
- id: write-hello
  prompt: Write a note named hello.txt with the text hi
  expect:
    calls:
      - tool: write_note
        args: {name: hello.txt}
- id: list
  prompt: List the notes
  expect:
    calls:
      - tool: list_notes
- id: call-write
  kind: call
  call:
    tool: write_note
    args: {name: from-call.txt, text: "made in {D}"}
  expect:
    is_error: false
    result_contains: ["wrote from-call.txt in {D}"]
    after:
      - call: {tool: read_note, args: {name: from-call.txt}}
        expect: {result_contains: ["made in {D}"]}
"#;

/// Every file under `dir` with its bytes: what "unchanged" is held to.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    files_under(dir)
        .into_iter()
        .map(|f| {
            (
                f.strip_prefix(dir).unwrap().to_path_buf(),
                std::fs::read(&f).unwrap(),
            )
        })
        .collect()
}

struct Notes {
    _root: tempfile::TempDir,
    data: PathBuf,
    /// The suite naming the real directory.
    suite: PathBuf,
    /// The suite naming `{sandbox}`.
    sandboxed: PathBuf,
    /// The temporary directory the runs' sandboxes go to (TMPDIR), to see them removed.
    tmp: PathBuf,
}

fn notes() -> Notes {
    let root = temp_dir();
    let data = root.path().join("notes");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("old.txt"), "kept as it was").unwrap();
    let suite = root.path().join("suite.yaml");
    std::fs::write(&suite, NOTES_SUITE.replace("{D}", data.to_str().unwrap())).unwrap();
    let sandboxed = root.path().join("sandboxed.yaml");
    std::fs::write(&sandboxed, NOTES_SUITE.replace("{D}", "{sandbox}")).unwrap();
    let tmp = root.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    Notes {
        data,
        suite,
        sandboxed,
        tmp,
        _root: root,
    }
}

fn writer(dir: &str) -> String {
    format!("python3 {} {dir}", repo_path(WRITER).display())
}

fn run(notes: &Notes, server: &str, out: &Path, extra: &[&str]) -> Output {
    let suite = match server.contains("{sandbox") {
        true => &notes.sandboxed,
        false => &notes.suite,
    };
    Command::new(bin())
        .args(["run", "--baseline", server, "--candidate", server])
        .args(["--suite", suite.to_str().unwrap(), "--host", "sim"])
        .args(["--trials", "2", "--out", out.to_str().unwrap()])
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("TMPDIR", &notes.tmp)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("mcpeval runs")
}

#[test]
fn a_suite_that_can_write_to_a_directory_is_refused_before_any_trial() {
    let notes = notes();
    let before = tree(&notes.data);
    let out = notes.data.parent().unwrap().join("run");
    let server = writer(notes.data.to_str().unwrap());
    let refused = run(&notes, &server, &out, &[]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("write_note"), "{err}");
    assert!(
        !err.contains("list_notes"),
        "a read-only tool is named: {err}"
    );
    for way in ["--sandbox PATH", "--allow-writes", "state = \"process\""] {
        assert!(err.contains(way), "no `{way}` in: {err}");
    }
    assert_eq!(tree(&notes.data), before, "the refused run wrote");
    assert!(!out.join("episodes.jsonl").exists(), "a trial ran");
}

#[test]
fn sandboxed_trials_write_to_copies_and_the_original_is_unchanged() {
    let notes = notes();
    let before = tree(&notes.data);
    let out = notes.data.parent().unwrap().join("run");
    let sandbox = notes.data.to_str().unwrap();
    let ran = run(&notes, &writer("{sandbox}"), &out, &["--sandbox", sandbox]);
    assert_verdict(&ran);
    let stdout = String::from_utf8_lossy(&ran.stdout);
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(
        format!("{stdout}{stderr}")
            .contains("sandbox: the baseline server runs each process on fresh copies"),
        "{}",
        text(&ran)
    );
    let episodes = episodes(&out);
    let calls: Vec<_> = episodes
        .iter()
        .filter(|e| e.task_id == "call-write")
        .collect();
    assert_eq!(calls.len(), 2, "a call task's one trial a side");
    for e in &calls {
        assert!(e.success, "{:?}", e.grade);
        assert!(e.infra_error.is_none(), "{:?}", e.infra_error);
        let call = &e.calls[0];
        assert!(!call.is_error, "{}", call.result);
        // The copy's path is written back as the placeholder.
        assert_eq!(call.result, "wrote from-call.txt in {sandbox}", "{call:?}");
        assert!(
            call.arguments.contains("made in {sandbox}"),
            "{}",
            call.arguments
        );
    }
    let wrote = episodes
        .iter()
        .filter(|e| e.task_id == "write-hello")
        .flat_map(|e| &e.calls)
        .filter(|c| c.tool == "write_note" && !c.is_error)
        .count();
    assert!(wrote > 0, "no model trial wrote a note");
    assert_eq!(tree(&notes.data), before, "the original changed");
    let left: Vec<_> = std::fs::read_dir(&notes.tmp).unwrap().collect();
    assert!(left.is_empty(), "sandbox copies left behind: {left:?}");
    let transcripts = std::fs::read_to_string(out.join("transcripts.jsonl")).unwrap();
    assert!(
        !transcripts.contains(notes.tmp.to_str().unwrap()),
        "a copy's path reached the transcripts"
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("| server state |"), "{summary}");
}

#[test]
fn kept_sandboxes_stay_and_hold_what_the_trials_wrote() {
    let notes = notes();
    let out = notes.data.parent().unwrap().join("run");
    let sandbox = format!("data={}", notes.data.display());
    let named = NOTES_SUITE.replace("{D}", "{sandbox.data}");
    std::fs::write(&notes.sandboxed, named).unwrap();
    let ran = run(
        &notes,
        &writer("{sandbox.data}"),
        &out,
        &["--sandbox", &sandbox, "--keep-sandboxes"],
    );
    assert_verdict(&ran);
    let kept: Vec<PathBuf> = std::fs::read_dir(&notes.tmp)
        .unwrap()
        .map(|e| e.unwrap().path().join("notes"))
        .collect();
    assert!(!kept.is_empty(), "no copy kept");
    let written = kept
        .iter()
        .filter(|k| k.join("from-call.txt").exists())
        .count();
    assert!(
        written > 0,
        "no kept copy holds the call task's note: {kept:?}"
    );
    assert!(kept.iter().all(|k| k.join("old.txt").exists()));
    assert!(!notes.data.join("from-call.txt").exists());
}

#[test]
fn consent_runs_on_the_real_directory_and_says_so() {
    let notes = notes();
    let out = notes.data.parent().unwrap().join("run");
    let server = writer(notes.data.to_str().unwrap());
    let ran = run(&notes, &server, &out, &["--allow-writes"]);
    assert_verdict(&ran);
    assert!(
        notes.data.join("from-call.txt").exists(),
        "the consented run did not write"
    );
    assert!(
        String::from_utf8_lossy(&ran.stdout).contains("allow-writes")
            || String::from_utf8_lossy(&ran.stderr).contains("allow-writes")
    );
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(info["config"]["allow_writes"], true, "{info}");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("--allow-writes"), "{summary}");
}

#[test]
fn a_server_marked_process_state_runs_without_a_sandbox() {
    let notes = notes();
    let config = notes.data.parent().unwrap().join("c.toml");
    let server = writer(notes.data.to_str().unwrap()).replace('\\', "/");
    std::fs::write(
        &config,
        format!(
            "baseline = \"w\"\ncandidate = \"w\"\nhosts = [\"sim\"]\ntrials = 1\n\
             [servers.w]\ncommand = \"{server}\"\nstate = \"process\"\n"
        ),
    )
    .unwrap();
    let out = notes.data.parent().unwrap().join("run");
    let ran = Command::new(bin())
        .args(["run", "--config", config.to_str().unwrap()])
        .args(["--suite", notes.suite.to_str().unwrap(), "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_verdict(&ran);
}

#[test]
fn placeholders_and_sandboxes_must_go_together() {
    let notes = notes();
    let out = notes.data.parent().unwrap().join("run");
    let no_sandbox = run(&notes, &writer("{sandbox}"), &out, &[]);
    assert_eq!(no_sandbox.status.code(), Some(2), "{}", text(&no_sandbox));
    assert!(String::from_utf8_lossy(&no_sandbox.stderr).contains("names no sandbox"));
    let unused = run(
        &notes,
        &writer(notes.data.to_str().unwrap()),
        &out,
        &["--sandbox", notes.data.to_str().unwrap()],
    );
    assert_eq!(unused.status.code(), Some(2), "{}", text(&unused));
    assert!(
        String::from_utf8_lossy(&unused.stderr).contains("is written nowhere"),
        "{}",
        text(&unused)
    );
    let missing = run(
        &notes,
        &writer("{sandbox}"),
        &out,
        &["--sandbox", "/nonexistent/d"],
    );
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
}

#[test]
fn an_http_server_takes_no_sandbox_and_is_never_exempt() {
    let server = spawn_listening(
        &["demo-server", "--release", "1.4.0", "--http", "127.0.0.1:0"],
        true,
    );
    let url = format!("http://{}/mcp", server.addr);
    let dir = temp_dir();
    let out = dir.path().join("run");
    let refused = run_pair(&url, &url, &out, &["--trials", "1"]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("create_issue"));
    let sandboxed = run_pair(
        &url,
        &url,
        &out,
        &["--trials", "1", "--sandbox", dir.path().to_str().unwrap()],
    );
    assert_eq!(sandboxed.status.code(), Some(2), "{}", text(&sandboxed));
    assert!(String::from_utf8_lossy(&sandboxed.stderr).contains("cannot take a sandbox"));
    let allowed = run_pair(&url, &url, &out, &["--trials", "1", "--allow-writes"]);
    assert_verdict(&allowed);
}

/// Its state as the tests compare it: commit count, branches, HEAD and the index's bytes.
fn repo_state(repo: &Path) -> (String, String, String, Vec<u8>) {
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(repo)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    (
        git(&["rev-list", "--count", "--all"]),
        git(&["branch", "--list"]),
        git(&["rev-parse", "HEAD"]),
        std::fs::read(repo.join(".git/index")).unwrap(),
    )
}

const GIT_SUITE: &str = r#"
- id: status
  prompt: Show the git status of the repository at {D}
  expect:
    calls:
      - tool: git_status
        args: {repo_path: "{D}"}
- id: commit
  kind: call
  setup:
    - {tool: git_add, args: {repo_path: "{D}", files: [notes.txt]}}
  call:
    tool: git_commit
    args: {repo_path: "{D}", message: "made in a sandbox"}
  expect:
    is_error: false
    after:
      - call: {tool: git_log, args: {repo_path: "{D}"}}
        expect: {result_contains: ["made in a sandbox"]}
"#;

#[test]
fn mcp_server_git_is_refused_unannotated_or_annotated_and_sandboxed_commits_stay_in_copies() {
    let dir = temp_dir();
    let repo = scratch_repo(dir.path());
    // A change to commit, left untracked in the real repository.
    std::fs::write(repo.join("notes.txt"), "to be committed in a copy\n").unwrap();
    let before = repo_state(&repo);
    let suite = dir.path().join("git.yaml");
    std::fs::write(&suite, GIT_SUITE.replace("{D}", repo.to_str().unwrap())).unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let git_run = |server: &str, out: &str, extra: &[&str]| {
        Command::new(bin())
            .args(["run", "--baseline", server, "--candidate", server])
            .args(["--suite", suite.to_str().unwrap(), "--host", "sim"])
            .args(["--trials", "2", "--out"])
            .arg(dir.path().join(out))
            .args(extra)
            .env("TMPDIR", &tmp)
            .env_remove("GITHUB_STEP_SUMMARY")
            .output()
            .unwrap()
    };
    for version in ["0.6.2", "2026.10.19"] {
        let server = format!(
            "{} --repository {}",
            git_server(version).display(),
            repo.display()
        );
        let refused = git_run(&server, &format!("refused-{version}"), &[]);
        assert_eq!(
            refused.status.code(),
            Some(2),
            "{version}: {}",
            text(&refused)
        );
        let err = String::from_utf8_lossy(&refused.stderr);
        assert!(err.contains("git_commit"), "{version}: {err}");
        if version != "0.6.2" {
            // Annotated read-only tools are not named.
            assert!(!err.contains("git_status"), "{version}: {err}");
        }
    }
    let server = format!(
        "{} --repository {{sandbox}}",
        git_server("2026.10.19").display()
    );
    let old = format!("{} --repository {{sandbox}}", git_server("0.6.2").display());
    std::fs::write(&suite, GIT_SUITE.replace("{D}", "{sandbox}")).unwrap();
    let ran = Command::new(bin())
        .args(["run", "--baseline", &old, "--candidate", &server])
        .args(["--suite", suite.to_str().unwrap(), "--host", "sim"])
        .args(["--trials", "2", "--out"])
        .arg(dir.path().join("sandboxed"))
        .args(["--sandbox", repo.to_str().unwrap()])
        .env("TMPDIR", &tmp)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    assert_verdict(&ran);
    let episodes = episodes(&dir.path().join("sandboxed"));
    let commits: Vec<_> = episodes.iter().filter(|e| e.task_id == "commit").collect();
    assert_eq!(commits.len(), 2);
    for e in &commits {
        assert!(e.success, "{:?} {:?}", e.grade, e.infra_error);
        assert!(
            e.calls[0].arguments.contains("{sandbox}"),
            "{}",
            e.calls[0].arguments
        );
    }
    assert_eq!(repo_state(&repo), before, "the real repository changed");
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "copies left behind"
    );
}

#[test]
fn check_refuses_before_its_first_stage_and_runs_on_copies_with_a_sandbox() {
    let notes = notes();
    let before = tree(&notes.data);
    let out = notes.data.parent().unwrap().join("check");
    let check = |server: &str, suite: &Path, extra: &[&str]| {
        Command::new(bin())
            .args(["check", "--baseline", server, "--candidate", server])
            .args([
                "--suite",
                suite.to_str().unwrap(),
                "--host",
                "sim",
                "--trials",
                "2",
            ])
            .args([
                "--stages",
                "smoke,evaluation",
                "--out",
                out.to_str().unwrap(),
            ])
            .args(extra)
            .env("TMPDIR", &notes.tmp)
            .env_remove("GITHUB_STEP_SUMMARY")
            .output()
            .unwrap()
    };
    let refused = check(&writer(notes.data.to_str().unwrap()), &notes.suite, &[]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&refused.stdout),
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(all.contains("write_note"), "{all}");
    assert!(
        !all.contains("smoke…") && !all.contains("smoke:"),
        "a stage ran: {all}"
    );
    let sandbox = notes.data.to_str().unwrap();
    let ran = check(
        &writer("{sandbox}"),
        &notes.sandboxed,
        &["--sandbox", sandbox, "--all"],
    );
    assert!(matches!(ran.status.code(), Some(0 | 1)), "{}", text(&ran));
    assert_eq!(tree(&notes.data), before, "the original changed");
    assert_eq!(
        std::fs::read_dir(&notes.tmp).unwrap().count(),
        0,
        "copies left behind"
    );
}
