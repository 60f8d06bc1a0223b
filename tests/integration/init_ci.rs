//! `mcpeval init`'s CI files through the binary: `mcpeval.toml` (no host) that `mcpeval check
//! --config` takes, with the stored contract and, as the workflow runs it, the base branch's
//! server; the workflow for the language of the root's manifest (package.json, pyproject.toml,
//! none); the expected failures of a server over HTTP (written with Node ≥ 22, else the reason);
//! every file refused without --force; `--update` drafting only for the tools not covered yet.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::common;

use common::*;

/// `mcpeval ARGS` from the repository's root with `env` set and no conformance command.
fn mcpeval_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(bin());
    command
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("MCPEVAL_CONFORMANCE");
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("mcpeval runs")
}

/// `mcpeval init --server SERVER --out OUT --no-models EXTRA`.
fn init(server: &str, out: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut args = vec![
        "init",
        "--server",
        server,
        "--out",
        out.to_str().unwrap(),
        "--no-models",
    ];
    args.extend(extra);
    mcpeval_env(&args, env)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The workflow at `root`, parsed.
fn workflow(root: &Path) -> Value {
    let text = read(&root.join(".github/workflows/mcpeval.yml"));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("not YAML: {e}\n{text}"))
}

/// The workflow's steps.
fn steps(flow: &Value) -> Vec<Value> {
    flow["jobs"]["check"]["steps"]
        .as_array()
        .expect("jobs.check.steps")
        .clone()
}

/// The step that runs the action.
fn check_step(flow: &Value) -> Value {
    steps(flow)
        .into_iter()
        .find(|s| s["uses"].as_str() == Some("mcpeval/mcpeval@main"))
        .expect("a step uses mcpeval/mcpeval@main")
}

fn uses(flow: &Value) -> Vec<String> {
    steps(flow)
        .iter()
        .filter_map(|s| s["uses"].as_str().map(str::to_owned))
        .collect()
}

/// The text of every `run:` of the workflow.
fn runs(flow: &Value) -> String {
    steps(flow)
        .iter()
        .filter_map(|s| s["run"].as_str().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_node_repository_gets_a_config_without_host_the_contract_and_a_pull_request_workflow() {
    let dir = temp_dir();
    // The layout the workflow checks out: the pull request's repository and the base branch's.
    let root = dir.path().join("candidate");
    std::fs::create_dir_all(dir.path().join("baseline")).unwrap();
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("package.json"), "{}\n").unwrap();
    let out = root.join("mcpeval");
    let made = init("demo:1.4.0", &out, &[], &[]);
    let said = text(&made);
    assert_eq!(made.status.code(), Some(0), "{said}");
    for file in [
        "contract/tools.json",
        "contract/server.json",
        "tasks/calls.yaml",
    ] {
        assert!(out.join(file).is_file(), "{file}: {said}");
    }
    // A stdio server is served over HTTP for the conformance suite: with Node ≥ 22 on PATH
    // the expected failures are written; without, the output says why.
    match out.join("contract/expected-failures.yml").exists() {
        true => assert!(said.contains("written from the baseline's"), "{said}"),
        false => assert!(
            said.contains("expected failures: not written: Node"),
            "{said}"
        ),
    }

    // The config: servers, suites, the stored contract; no host.
    let config: toml::Value = toml::from_str(&read(&out.join("mcpeval.toml"))).unwrap();
    assert!(config.get("hosts").is_none(), "{config}");
    assert_eq!(config["candidate"].as_str(), Some("server"));
    // `./`: the config's folder, even where mcpeval runs from a folder with a tasks/ of its own
    // (as this project's root, where the tests run, has).
    assert_eq!(config["suites"][0].as_str(), Some("./tasks"));
    assert_eq!(
        config["check"]["baseline_snapshot"].as_str(),
        Some("contract")
    );
    assert!(config["check"].get("expected_failures").is_none());
    assert_eq!(
        config["servers"]["server"]["command"].as_str(),
        Some("demo:1.4.0")
    );

    // The workflow: every pull request, both checkouts, Node's build, the action with the
    // config, the base branch's server, the host from a variable and the key from a secret.
    let flow = workflow(&root);
    assert!(flow["on"].get("pull_request").is_some(), "{flow}");
    let used = uses(&flow);
    assert_eq!(
        used.iter().filter(|u| *u == "actions/checkout@v6").count(),
        2
    );
    assert!(
        used.contains(&"actions/setup-node@v6".to_owned()),
        "{used:?}"
    );
    assert!(
        runs(&flow).contains("npm install && npm run build"),
        "{flow}"
    );
    let step = check_step(&flow);
    assert_eq!(
        step["with"]["config"].as_str(),
        Some("candidate/mcpeval/mcpeval.toml")
    );
    assert_eq!(step["with"]["baseline"].as_str(), Some("base-branch"));
    assert_eq!(
        step["with"]["host"].as_str(),
        Some("${{ vars.MCPEVAL_HOST }}")
    );
    assert_eq!(
        step["env"]["OPENAI_API_KEY"].as_str(),
        Some("${{ secrets.OPENAI_API_KEY }}")
    );
}

#[test]
fn check_takes_the_config_alone_and_as_the_workflow_runs_it_beside_the_base_branch() {
    let dir = temp_dir();
    let root = dir.path().join("candidate");
    std::fs::create_dir_all(dir.path().join("baseline")).unwrap();
    let out = root.join("mcpeval");
    let made = init("demo:1.4.0", &out, &[], &[]);
    assert_eq!(made.status.code(), Some(0), "{}", text(&made));
    // Alone, the stored contract is the baseline; as the workflow runs it, the base branch's
    // server runs from its checkout beside this one.
    let config = out.join("mcpeval.toml");
    let config = config.to_str().unwrap();
    let checked = dir.path().join("check");
    let alone = mcpeval_env(
        &[
            "check",
            "--config",
            config,
            "--stages",
            "smoke,contract",
            "--out",
            checked.to_str().unwrap(),
        ],
        &[],
    );
    let said = text(&alone);
    assert_eq!(alone.status.code(), Some(0), "{said}");
    assert!(
        said.contains("0 change(s) break clients, 0 affect models"),
        "{said}"
    );
    let checked = dir.path().join("check-ci");
    let as_ci = mcpeval_env(
        &[
            "check",
            "--config",
            config,
            "--baseline",
            "base-branch",
            "--stages",
            "smoke,contract",
            "--out",
            checked.to_str().unwrap(),
        ],
        &[],
    );
    let said = text(&as_ci);
    assert_eq!(as_ci.status.code(), Some(0), "{said}");
    assert!(said.contains("10 call task(s), 0 regression(s)"), "{said}");

    // The stored contract catches the next version's changes.
    let checked = dir.path().join("check-next");
    let next = mcpeval_env(
        &[
            "check",
            "--config",
            config,
            "--candidate",
            "demo:1.5.0",
            "--stages",
            "contract",
            "--out",
            checked.to_str().unwrap(),
        ],
        &[],
    );
    assert!(text(&next).contains("5 affect models"), "{}", text(&next));
}

#[test]
fn a_python_repository_gets_pip_and_one_without_a_manifest_a_build_step_to_fill_in() {
    let dir = temp_dir();
    let python = dir.path().join("py");
    std::fs::create_dir_all(&python).unwrap();
    std::fs::write(python.join("pyproject.toml"), "[project]\nname = \"x\"\n").unwrap();
    let made = init("demo:1.4.0", &python.join("mcpeval"), &[], &[]);
    assert_eq!(made.status.code(), Some(0), "{}", text(&made));
    assert!(
        text(&made).contains("Python (pyproject.toml)"),
        "{}",
        text(&made)
    );
    let flow = workflow(&python);
    assert!(uses(&flow).contains(&"actions/setup-python@v6".to_owned()));
    assert!(runs(&flow).contains("pip install"), "{flow}");
    assert!(!uses(&flow).contains(&"actions/setup-node@v6".to_owned()));

    let none = dir.path().join("none");
    let made = init("demo:1.4.0", &none.join("suite"), &[], &[]);
    assert_eq!(made.status.code(), Some(0), "{}", text(&made));
    let flow = workflow(&none);
    assert!(
        uses(&flow).iter().all(|u| !u.starts_with("actions/setup-")),
        "{flow}"
    );
    assert!(
        runs(&flow).contains("build the server in $side here"),
        "{flow}"
    );
    assert_eq!(
        check_step(&flow)["with"]["config"].as_str(),
        Some("candidate/suite/mcpeval.toml")
    );
}

#[test]
fn every_file_init_writes_is_refused_without_force() {
    let dir = temp_dir();
    let out = dir.path().join("mcpeval");
    assert_eq!(init("demo:1.4.0", &out, &[], &[]).status.code(), Some(0));
    // The suite's files gone, the CI files are what an init would overwrite.
    std::fs::remove_dir_all(out.join("tasks")).unwrap();
    std::fs::remove_file(out.join("init-report.md")).unwrap();
    let config = out.join("mcpeval.toml");
    std::fs::write(&config, "# mine\n").unwrap();
    let refused = |path: &Path| {
        let again = init("demo:1.4.0", &out, &[], &[]);
        let said = text(&again);
        assert_eq!(again.status.code(), Some(2), "{said}");
        assert!(
            said.contains(&format!("`{}` exists: pass --force", path.display())),
            "{said}"
        );
        assert!(!out.join("tasks").exists(), "nothing was written: {said}");
    };
    refused(&config);
    assert_eq!(read(&config), "# mine\n");
    std::fs::remove_file(&config).unwrap();
    refused(&out.join("contract"));
    std::fs::remove_dir_all(out.join("contract")).unwrap();
    let flow = dir.path().join(".github/workflows/mcpeval.yml");
    refused(&flow);
    // --no-ci leaves the CI files alone; --force overwrites them.
    let suite_only = init("demo:1.4.0", &out, &["--no-ci"], &[]);
    assert_eq!(suite_only.status.code(), Some(0), "{}", text(&suite_only));
    assert!(!config.exists() && out.join("tasks/calls.yaml").exists());
    std::fs::write(&flow, "# mine\n").unwrap();
    let forced = init("demo:1.4.0", &out, &["--force"], &[]);
    assert_eq!(forced.status.code(), Some(0), "{}", text(&forced));
    assert!(read(&flow).contains("mcpeval/mcpeval@main"));
    assert!(config.exists());
}

#[test]
fn update_drafts_only_for_the_tools_the_suite_does_not_cover_into_new_files() {
    let dir = temp_dir();
    let out = dir.path().join("mcpeval");
    let nothing = init("demo:1.5.0", &out, &["--update"], &[]);
    assert_eq!(nothing.status.code(), Some(2), "{}", text(&nothing));
    assert!(
        text(&nothing).contains("holds no suite"),
        "{}",
        text(&nothing)
    );

    assert_eq!(init("demo:1.4.0", &out, &[], &[]).status.code(), Some(0));
    let calls = read(&out.join("tasks/calls.yaml"));
    let config = read(&out.join("mcpeval.toml"));
    let updated = init("demo:1.5.0", &out, &["--update"], &[]);
    let said = text(&updated);
    assert_eq!(updated.status.code(), Some(0), "{said}");
    assert!(
        said.contains("covered by the suite already: get_issue, list_projects, search_issues"),
        "{said}"
    );
    let new = read(&out.join("tasks/calls-update.yaml"));
    let ids: Vec<&str> = new
        .lines()
        .filter_map(|l| l.strip_prefix("- id: "))
        .collect();
    assert!(!ids.is_empty(), "{new}");
    assert!(
        ids.iter().all(|id| id.starts_with("call-find-issues")),
        "{ids:?}"
    );
    assert_eq!(read(&out.join("tasks/calls.yaml")), calls, "untouched");
    assert_eq!(read(&out.join("mcpeval.toml")), config, "untouched");
    let report = read(&out.join("init-report-update.md"));
    assert!(report.contains("Drafted for now:"), "{report}");
    let suite = out.join("tasks");
    let checked = mcpeval_env(
        &[
            "tasks",
            "check",
            "--suite",
            suite.to_str().unwrap(),
            "--server",
            "demo:1.5.0",
        ],
        &[],
    );
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked));
    assert!(
        text(&checked).contains(", 0 warnings;"),
        "{}",
        text(&checked)
    );

    // Again: the tools left are those that write, left out; nothing new is written.
    let again = init("demo:1.5.0", &out, &["--update"], &[]);
    let said = text(&again);
    assert_eq!(again.status.code(), Some(0), "{said}");
    assert!(
        said.contains("nothing new to draft: nothing written"),
        "{said}"
    );
    assert!(!out.join("tasks/calls-update-2.yaml").exists());
    assert!(!out.join("init-report-update-2.md").exists());
}

#[test]
fn a_server_over_http_gets_its_expected_failures_or_the_reason_they_are_not_written() {
    let server = spawn_listening(
        &["demo-server", "--release", "1.4.0", "--http", "127.0.0.1:0"],
        true,
    );
    let url = format!("http://{}/mcp", server.addr);
    let dir = temp_dir();
    let out = dir.path().join("mcpeval");
    let failures = out.join("contract/expected-failures.yml");
    let made = init(&url, &out, &[], &[]);
    let said = text(&made);
    assert_eq!(made.status.code(), Some(0), "{said}");
    let config = read(&out.join("mcpeval.toml"));
    // With Node ≥ 22 on PATH the suite runs; without, the report says why.
    match failures.exists() {
        true => {
            assert!(said.contains("written from the baseline's"), "{said}");
            assert!(config.contains("expected_failures = \"contract/expected-failures.yml\""));
        }
        false => {
            assert!(
                said.contains("expected failures: not written: Node"),
                "{said}"
            );
            assert!(!config.contains("expected_failures"), "{config}");
        }
    }
    assert!(config.contains(&format!("url = \"{url}\"")), "{config}");
    let flow = workflow(dir.path());
    assert!(
        steps(&flow)
            .iter()
            .any(|s| s["name"].as_str() == Some("Start the server over HTTP")),
        "{flow}"
    );
    assert!(
        check_step(&flow)["with"].get("baseline").is_none(),
        "{flow}"
    );
    assert!(said.contains("to do: edit the workflow's step"), "{said}");

    // The conformance suite this project's tests install (scripts/install-conformance).
    let launcher =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("target/conformance/bin/mcp-conformance");
    if !launcher.exists() {
        return;
    }
    let env = [("MCPEVAL_CONFORMANCE", launcher.to_str().unwrap())];
    let made = init(&url, &out, &["--force"], &env);
    let said = text(&made);
    assert_eq!(made.status.code(), Some(0), "{said}");
    assert!(said.contains("written from the baseline's"), "{said}");
    assert!(
        said.contains("the conformance stage with it: passed (0 new failure(s), 0 stale"),
        "{said}"
    );
    assert!(read(&failures).contains("\"2025-11-25\":"));
    assert!(read(&out.join("mcpeval.toml")).contains("expected_failures = "));
}
