//! Checks that check what the user meant (issue 36, item 6), through the binary and the demo
//! servers: `tasks check --config` checks against the config's servers, `compare --against`
//! warns about tasks whose definitions differ, `plan --suite` plans call tasks as a run runs
//! them, and a mistyped `[servers.NAME]` is a usage error with "did you mean".

use std::path::Path;
use std::process::Output;

use crate::common;

use common::*;

/// A task with a misspelt tool and one with an argument its tool does not know: `run` refuses
/// both before its first trial (exit 2).
const WRONG_TASKS: &str = "- id: show-issue-3
  prompt: Show me issue 3 of the tracker
  expect:
    calls: [{tool: get_isue, args: {id: 3}}]
- id: show-issue-5
  prompt: Show me issue 5 of the tracker
  expect:
    calls: [{tool: get_issue, args: {idd: 5}}]
";

/// Runs `mcpeval ARGS` in `dir` (relative paths of a config resolve there).
fn mcpeval_in(dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(bin())
        .args(args)
        .current_dir(dir)
        .env_remove("OPENAI_API_KEY")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("mcpeval runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn tasks_check_with_a_config_checks_against_its_baseline_and_candidate() {
    let dir = temp_dir();
    std::fs::write(dir.path().join("wrong.yaml"), WRONG_TASKS).unwrap();
    let config =
        "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.5.0\"\nsuites = [\"wrong.yaml\"]\n";
    std::fs::write(dir.path().join("mine.toml"), config).unwrap();
    // Before: `ok`, exit 0, for the tasks `run` then refuses.
    let checked = mcpeval_in(dir.path(), &["tasks", "check", "--config", "mine.toml"]);
    assert_eq!(checked.status.code(), Some(2), "{}", text(&checked));
    let err = stderr(&checked);
    assert!(
        err.contains(
            "expects tool `get_isue`, which neither server lists (did you mean `get_issue`?)"
        ),
        "{err}"
    );
    assert!(
        err.contains("expects argument `idd` of `get_issue`"),
        "{err}"
    );
    assert!(err.contains("2 problem(s) found"), "{err}");
    assert!(!stdout(&checked).contains("ok:"), "{}", text(&checked));
    // The run the check stands for refuses the same tasks.
    let run = mcpeval_in(
        dir.path(),
        &[
            "run",
            "--config",
            "mine.toml",
            "--trials",
            "1",
            "--out",
            "run",
        ],
    );
    assert_eq!(run.status.code(), Some(2), "{}", text(&run));
    assert!(stderr(&run).contains("`get_isue`"), "{}", text(&run));

    // --server still overrides the config's servers, and the suite flag its suites.
    let suite = repo_path("tasks/demo");
    let flagged = mcpeval_in(
        dir.path(),
        &[
            "tasks",
            "check",
            "--config",
            "mine.toml",
            "--server",
            "demo:1.5.0",
        ],
    );
    assert_eq!(flagged.status.code(), Some(2), "{}", text(&flagged));
    let demo = mcpeval_in(
        dir.path(),
        &[
            "tasks",
            "check",
            "--config",
            "mine.toml",
            "--suite",
            suite.to_str().unwrap(),
        ],
    );
    assert_eq!(demo.status.code(), Some(0), "{}", text(&demo));
    assert!(
        stdout(&demo).contains(
            "checked against the tools of `demo:1.4.0` (baseline) and `demo:1.5.0` (candidate)"
        ),
        "{}",
        text(&demo)
    );
}

#[test]
fn tasks_check_with_a_config_follows_its_renames() {
    // demo 2.0.0 renames `get_issue` to `fetch_issue`.
    let dir = temp_dir();
    let task = "- id: show-issue-3\n  prompt: Show me issue 3\n  expect:\n    calls: [{tool: get_issue, args: {id: 3}}]\n";
    std::fs::write(dir.path().join("s.yaml"), task).unwrap();
    let servers = "baseline = \"demo:1.5.0\"\ncandidate = \"demo:2.0.0\"\nsuites = [\"s.yaml\"]\n";
    std::fs::write(dir.path().join("plain.toml"), servers).unwrap();
    let renamed = format!("{servers}[renames]\nget_issue = \"fetch_issue\"\n");
    std::fs::write(dir.path().join("renamed.toml"), renamed).unwrap();
    let plain = mcpeval_in(dir.path(), &["tasks", "check", "--config", "plain.toml"]);
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain));
    assert!(
        stderr(&plain).contains("expects `get_issue`, which only the baseline lists"),
        "{}",
        text(&plain)
    );
    let followed = mcpeval_in(dir.path(), &["tasks", "check", "--config", "renamed.toml"]);
    assert_eq!(followed.status.code(), Some(0), "{}", text(&followed));
    assert!(
        !stderr(&followed).contains("only the baseline lists"),
        "{}",
        text(&followed)
    );
}

const TWO_TASKS: &str = "- id: show-issue-3
  prompt: Show me issue 3
  expect:
    calls: [{tool: get_issue, args: {id: 3}}]
- id: capital-of-france
  kind: no-tool
  prompt: What is the capital of France?
";

fn run_suite(dir: &Path, name: &str, suite: &str) -> std::path::PathBuf {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, suite).unwrap();
    let out_dir = dir.join(name);
    let out = mcpeval(&[
        "run",
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        "demo:1.5.0",
        "--suite",
        path.to_str().unwrap(),
        "--trials",
        "2",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_verdict(&out);
    out_dir
}

#[test]
fn compare_against_a_run_whose_task_changed_warns_per_task() {
    let dir = temp_dir();
    let ours = run_suite(dir.path(), "ours", TWO_TASKS);
    let theirs = run_suite(
        dir.path(),
        "theirs",
        &TWO_TASKS.replace("Show me issue 3", "Show me issue 4"),
    );
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ours.join("run.json")).unwrap()).unwrap();
    let hash = info["task_hashes"]["show-issue-3"].as_str().unwrap();
    assert_eq!(hash.len(), 16, "{hash}");
    assert!(info["task_part_hashes"]["show-issue-3"]["prompt"].is_string());

    let compared = mcpeval(&[
        "compare",
        ours.to_str().unwrap(),
        "--against",
        theirs.to_str().unwrap(),
    ]);
    assert!(
        matches!(compared.status.code(), Some(0 | 1)),
        "{}",
        text(&compared)
    );
    let err = stderr(&compared);
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("warning: task"))
        .collect();
    assert_eq!(warnings.len(), 1, "only the changed task: {err}");
    assert!(warnings[0].contains("task `show-issue-3` differs"), "{err}");
    assert!(warnings[0].contains("(its prompt changed)"), "{err}");

    // A run recorded before the hashes were: said once, not guessed.
    let path = theirs.join("run.json");
    let mut older: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let record = older.as_object_mut().unwrap();
    record.remove("task_hashes");
    record.remove("task_part_hashes");
    std::fs::write(&path, older.to_string()).unwrap();
    let compared = mcpeval(&[
        "compare",
        ours.to_str().unwrap(),
        "--against",
        theirs.to_str().unwrap(),
    ]);
    assert!(
        matches!(compared.status.code(), Some(0 | 1)),
        "{}",
        text(&compared)
    );
    let err = stderr(&compared);
    assert!(
        err.contains("warning: the task definitions could not be compared: run `"),
        "{err}"
    );
    assert!(!err.contains("warning: task `"), "{err}");
}

/// The number after `prefix` in the first line of `text` that holds it.
fn number_after(text: &str, prefix: &str) -> String {
    let at = text
        .find(prefix)
        .unwrap_or_else(|| panic!("no `{prefix}` in {text}"));
    text[at + prefix.len()..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '-')
        .collect()
}

#[test]
fn plan_counts_call_tasks_as_the_run_does() {
    let dir = temp_dir();
    let suite = dir.path().join("models.yaml");
    std::fs::write(&suite, TWO_TASKS).unwrap();
    let calls = repo_path("examples/tasks/calls.yaml");
    let run = |name: &str, trials: &str| {
        let out_dir = dir.path().join(name);
        let out = mcpeval(&[
            "run",
            "--baseline",
            "demo:1.4.0",
            "--candidate",
            "demo:2.0.0",
            "--suite",
            suite.to_str().unwrap(),
            "--suite",
            calls.to_str().unwrap(),
            "--trials",
            trials,
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
        (out, out_dir)
    };
    let (first, earlier) = run("earlier", "2");
    // The run's per-task level: α 0.05 over 5 gated families of one host, over its 2 model
    // tasks (its warning that 2 trials cannot flag a task says it).
    let run_level = "5.00e-3";
    assert!(
        stderr(&first).contains(&format!("per-task level {run_level} of 2 tasks")),
        "{}",
        text(&first)
    );

    let plan = mcpeval(&[
        "plan",
        "--suite",
        suite.to_str().unwrap(),
        "--suite",
        calls.to_str().unwrap(),
        "--drop",
        "0.8",
        "--baseline-rate",
        "1",
        "--from",
        earlier.to_str().unwrap(),
    ]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    let said = stdout(&plan);
    // Before: the level was split over the 11 tasks, calls included, and the estimate counted
    // each call task as a model task on every trial.
    assert_eq!(number_after(&said, "Per task: level "), run_level, "{said}");
    assert!(said.contains("over 2 model tasks"), "{said}");
    assert!(said.contains(", 9 call (no model"), "{said}");
    let trials = number_after(&said, "Recommended run (");
    let estimated: usize = number_after(&said, "trials per side): ").parse().unwrap();
    assert!(
        said.contains("(18 of them the call tasks' requests)"),
        "{said}"
    );

    let (_, recommended) = run("recommended", &trials);
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(recommended.join("run.json")).unwrap())
            .unwrap();
    assert_eq!(info["episodes"].as_u64(), Some(estimated as u64), "{said}");
}

#[test]
fn a_suite_of_call_tasks_alone_has_nothing_to_plan() {
    let out = mcpeval(&[
        "plan",
        "--suite",
        "examples/tasks/calls.yaml",
        "--drop",
        "0.3",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        stdout(&out).contains("9 call task(s), no model task")
            && stdout(&out).contains("18 episodes"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_mistyped_server_name_is_a_usage_error_with_did_you_mean() {
    let dir = temp_dir();
    let suite = repo_path("tasks/demo");
    let config = format!(
        "baseline = \"old\"\ncandidate = \"newx\"\nsuites = [{:?}]\nhosts = [\"sim\"]\n\
         [servers.old]\ncommand = \"demo:1.4.0\"\n[servers.new]\ncommand = \"demo:1.5.0\"\n",
        suite.to_str().unwrap()
    );
    std::fs::write(dir.path().join("mine.toml"), config).unwrap();
    let wanted = "candidate: `newx` is neither a [servers.NAME] of the config nor a program on PATH (did you mean `new`?)";
    // Before: `program newx not found`, exit 3.
    for args in [
        &["run", "--config", "mine.toml", "--out", "run"][..],
        &["check", "--config", "mine.toml", "--out", "check"][..],
        &["tasks", "check", "--config", "mine.toml"][..],
    ] {
        let out = mcpeval_in(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(stderr(&out).contains(wanted), "{args:?}: {}", text(&out));
    }
    let flag = mcpeval_in(
        dir.path(),
        &[
            "run",
            "--config",
            "mine.toml",
            "--candidate",
            "nwe",
            "--out",
            "run",
        ],
    );
    assert_eq!(flag.status.code(), Some(2), "{}", text(&flag));
    assert!(
        stderr(&flag).contains("(did you mean `new`?)"),
        "{}",
        text(&flag)
    );
    let server = mcpeval_in(
        dir.path(),
        &[
            "tasks",
            "check",
            "--config",
            "mine.toml",
            "--server",
            "olld",
        ],
    );
    assert_eq!(server.status.code(), Some(2), "{}", text(&server));
    assert!(
        stderr(&server).contains("(did you mean `old`?)"),
        "{}",
        text(&server)
    );

    // A command of several words, or a path, that does not start stays a server that failed
    // to start (exit 3).
    let words = mcpeval_in(
        dir.path(),
        &[
            "run",
            "--config",
            "mine.toml",
            "--candidate",
            "no-such-program --flag",
            "--out",
            "r2",
        ],
    );
    assert_eq!(words.status.code(), Some(3), "{}", text(&words));
    assert!(
        stderr(&words).contains("program `no-such-program` not found"),
        "{}",
        text(&words)
    );
    let path = mcpeval_in(
        dir.path(),
        &[
            "run",
            "--config",
            "mine.toml",
            "--candidate",
            "./no-such-server",
            "--out",
            "r3",
        ],
    );
    assert_eq!(path.status.code(), Some(3), "{}", text(&path));
}
