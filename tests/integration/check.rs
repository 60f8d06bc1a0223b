//! `mcpeval check` through the binary against the demo servers: the stages, their verdicts and
//! reasons in check.json, summary.md and junit.xml; the contract per client profile and the
//! protocol-version checks; deprecations from a server that uses a deprecated feature; the real
//! MCP conformance suite over HTTP against an expected-failures file (a new failure, a stale
//! entry, an unknown scenario, `--write-baseline`); a stage skipped with its reason; host
//! settings that name a tool the candidate renamed, at their file and line.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common;

use common::*;

/// The conformance suite's launcher that `scripts/install-conformance` writes (scripts/test runs
/// it): Node 24 from PyPI and the pinned npm package.
fn conformance() -> String {
    let path = repo_path("target/conformance/bin/mcp-conformance");
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-conformance (scripts/test does)",
        path.display()
    );
    path.display().to_string()
}

/// `mcpeval check ARGS --out OUT` from the repository root, with `env` set.
fn check(out: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = std::process::Command::new(bin());
    command
        .arg("check")
        .args(args)
        .args(["--out", out.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("MCPEVAL_CONFORMANCE")
        .env_remove("MCPEVAL_DEMO_DISCOVER_VERSIONS")
        .env_remove("MCPEVAL_DEMO_DEPRECATED");
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("mcpeval runs")
}

/// check.json's stages: name → (status, reason).
fn stages(out: &Path) -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(out.join("check.json")).expect("check.json");
    let record: Value = serde_json::from_str(&text).unwrap();
    record["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let field = |k: &str| s[k].as_str().unwrap().to_owned();
            (field("name"), field("status"), field("reason"))
        })
        .collect()
}

fn stage(out: &Path, name: &str) -> (String, String) {
    let found = stages(out);
    let (_, status, reason) = found
        .iter()
        .find(|(n, _, _)| n == name)
        .unwrap_or_else(|| panic!("no stage {name} in {found:?}"));
    (status.clone(), reason.clone())
}

fn summary(out: &Path) -> String {
    std::fs::read_to_string(out.join("summary.md")).expect("summary.md")
}

fn demo_command(release: &str, extra: &str) -> String {
    format!("{} demo-server --release {release} {extra}", bin())
        .trim()
        .to_owned()
}

#[test]
fn the_demo_pair_passes_the_contract_and_the_evaluation_flags_the_regression() {
    let dir = temp_dir();
    let out = dir.path().join("check");
    // No Node on PATH, so the conformance stage is skipped here whatever the machine has (a
    // stdio candidate is bridged to HTTP since issue 39).
    let no_node = dir.path().join("no-node");
    std::fs::create_dir_all(&no_node).unwrap();
    let no_node = [("PATH", no_node.to_str().unwrap())];
    let output = check(
        &out,
        &["--baseline", "demo:1.4.0", "--candidate", "demo:1.5.0"],
        &no_node,
    );
    // No suite given: no call task, no evaluation.
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let (status, reason) = stage(&out, "evaluation");
    assert_eq!(status, "skipped");
    assert!(reason.contains("no task suite"), "{reason}");
    // Issue 38 (item 6): the skip also says how to get a suite, not only that there is none.
    assert!(reason.contains("mcpeval init --server"), "{reason}");

    let out = dir.path().join("with-suite");
    let output = check(
        &out,
        &[
            "--baseline",
            "demo:1.4.0",
            "--candidate",
            "demo:1.5.0",
            "--suite",
            "tasks/demo",
        ],
        &no_node,
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let names: Vec<String> = stages(&out).into_iter().map(|(n, _, _)| n).collect();
    assert_eq!(
        names,
        [
            "smoke",
            "contract",
            "conformance",
            "deprecations",
            "evaluation"
        ]
    );
    let (status, reason) = stage(&out, "contract");
    assert_eq!(status, "passed");
    assert!(
        reason.starts_with("0 change(s) break clients, 5 affect models"),
        "{reason}"
    );
    // Issue 39 changed this by design: a stdio candidate is bridged to HTTP, so what skips the
    // stage is the missing Node, no longer the stdio transport.
    let (status, reason) = stage(&out, "conformance");
    assert_eq!(status, "skipped");
    assert!(reason.contains("Node is not installed"), "{reason}");
    let (status, reason) = stage(&out, "evaluation");
    assert_eq!(status, "failed", "{reason}");
    assert!(reason.contains("search-crash-zephyr"), "{reason}");
    assert!(out.join("evaluation/comparison.csv").exists());
    assert!(out.join("contract/candidate/diff.json").exists());
    let page = summary(&out);
    let lines: Vec<&str> = page.lines().collect();
    assert_eq!(lines[0], "# mcpeval check: failed");
    assert!(lines[4].starts_with("- smoke: passed"), "{page}");
    assert!(lines[5].starts_with("- contract: passed"), "{page}");
    assert!(
        page.contains("**Verdict: failed** (exit 1): evaluation failed."),
        "{page}"
    );
    // The evaluation's tool-choice shift (issue 50), information beside the verdicts: the
    // lookup tasks' first calls went to `find_issues`; `show-issue-3`'s held.
    assert!(
        page.contains("- tool choice: `search-crash-zephyr` · `sim`: find_issues took "),
        "{page}"
    );
    assert!(!page.contains("tool choice: `show-issue-3`"), "{page}");
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<testsuite ").count(), 5, "{junit}");
    // In GitHub Actions the summary goes to the step summary too, once.
    let step = dir.path().join("step-summary.md");
    let out = dir.path().join("step");
    let output = check(
        &out,
        &[
            "--baseline",
            "demo:1.4.0",
            "--candidate",
            "demo:1.5.0",
            "--stages",
            "smoke,contract",
        ],
        &[("GITHUB_STEP_SUMMARY", step.to_str().unwrap())],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let step = std::fs::read_to_string(&step).unwrap();
    assert_eq!(step.matches("# mcpeval check: passed").count(), 1, "{step}");
    assert!(junit.contains("<testsuite name=\"evaluation\""), "{junit}");
}

#[test]
fn a_breaking_candidate_fails_the_contract_and_is_still_evaluated_unless_told_to_stop() {
    let dir = temp_dir();
    let out = dir.path().join("check");
    let pair = [
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        "demo:2.0.0",
        "--suite",
        "tasks/demo",
        "--suite",
        "examples/tasks/calls.yaml",
    ];
    let output = check(&out, &pair, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let (status, reason) = stage(&out, "contract");
    assert_eq!(status, "failed");
    // Seven since issue 49: the error probes are made in both eras, and 2.0.0's legacy-era
    // code for a missing resource (-32002 → -32602) is seen besides the six in the lists.
    assert!(reason.starts_with("7 change(s) break clients"), "{reason}");
    assert!(
        summary(&out).contains("tool_renamed `fetch_issue` name (tools): breaks clients"),
        "{}",
        summary(&out)
    );
    // The smoke stage ran the call tasks on both sides: the rename is a regression there.
    let (status, reason) = stage(&out, "smoke");
    assert_eq!(status, "failed");
    assert!(
        reason.contains("9 call task(s), 5 regression(s)"),
        "{reason}"
    );
    assert!(out.join("smoke/calls/comparison.csv").exists());
    let (status, _) = stage(&out, "evaluation");
    assert_ne!(status, "skipped", "the marked tasks are evaluated");

    let out = dir.path().join("stop");
    let mut args = pair.to_vec();
    args.extend(["--stop-on-breaking", "--stages", "contract,evaluation"]);
    let output = check(&out, &args, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert_eq!(stages(&out).len(), 2);
    let (status, reason) = stage(&out, "evaluation");
    assert_eq!(status, "skipped");
    assert!(reason.contains("--stop-on-breaking"), "{reason}");
}

#[test]
fn supported_versions_are_checked_against_the_config_and_the_32022_error() {
    let dir = temp_dir();
    let out = dir.path().join("check");
    let candidate = demo_command("1.5.0", "--discover-versions 2026-07-28");
    let output = check(
        &out,
        &[
            "--baseline",
            "demo:1.4.0",
            "--candidate",
            &candidate,
            "--stages",
            "contract",
            "--protocol-versions",
            "2025-11-25,2026-07-28",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let page = summary(&out);
    assert!(page.contains("supportedVersions: 2026-07-28"), "{page}");
    assert!(
        page.contains(
            "supportedVersions is [2026-07-28], the config expects [2025-11-25, 2026-07-28]"
        ),
        "{page}"
    );
    assert!(
        page.contains("the -32022 error's data.supported is [2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28], supportedVersions is [2026-07-28]"),
        "{page}"
    );
    // The same release without the fault passes both checks.
    let out = dir.path().join("honest");
    let output = check(
        &out,
        &[
            "--baseline",
            "demo:1.4.0",
            "--candidate",
            "demo:1.5.0",
            "--stages",
            "contract",
            "--protocol-versions",
            "2024-11-05,2025-03-26,2025-06-18,2025-11-25,2026-07-28",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(summary(&out).contains("names the same versions"));
}

#[test]
fn the_client_profile_is_recorded_and_a_diff_across_profiles_is_refused() {
    let dir = temp_dir();
    let (bare, full) = (dir.path().join("bare"), dir.path().join("full"));
    snapshot("demo:1.4.0", &bare, &[]);
    snapshot("demo:1.4.0", &full, &["--client-profile", "full"]);
    let server: Value =
        serde_json::from_str(&std::fs::read_to_string(full.join("server.json")).unwrap()).unwrap();
    assert_eq!(server["clientProfile"], "full");
    assert_eq!(server["requestedEra"], "auto");
    assert!(
        server["clientCapabilities"]["sampling"].is_object(),
        "{server}"
    );
    assert!(
        server["clientCapabilities"]["roots"].is_object(),
        "{server}"
    );
    let output = mcpeval(&["diff", bare.to_str().unwrap(), full.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(
        message.contains("different client profiles")
            && message.contains("`bare`")
            && message.contains("`full`"),
        "{message}"
    );
    // The check diffs each profile against the stored snapshot's folder of that profile.
    let stored = dir.path().join("stored");
    let out = dir.path().join("check");
    let output = check(
        &out,
        &[
            "--baseline",
            "demo:1.4.0",
            "--candidate",
            "demo:1.5.0",
            "--baseline-snapshot",
            stored.to_str().unwrap(),
            "--client-profile",
            "bare",
            "--client-profile",
            "full",
            "--write-baseline",
            "--stages",
            "contract",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(stored.join("tools.json").exists());
    assert!(stored.join("client-full/server.json").exists());
    let page = summary(&out);
    assert!(
        page.contains("- client profile `bare`: 5 change(s)"),
        "{page}"
    );
    assert!(
        page.contains("- client profile `full`: 5 change(s)"),
        "{page}"
    );
}

#[test]
fn deprecated_features_and_warnings_are_reported_and_fail_only_when_asked() {
    let dir = temp_dir();
    let candidate = demo_command("1.5.0", "--deprecated");
    let args = [
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        candidate.as_str(),
        "--stages",
        "smoke,deprecations",
    ];
    let out = dir.path().join("reported");
    let output = check(&out, &args, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let (status, reason) = stage(&out, "deprecations");
    assert_eq!(status, "passed");
    assert!(
        reason.starts_with("1 deprecated feature(s), 2 new"),
        "{reason}"
    );
    let page = summary(&out);
    assert!(
        page.contains("**new** logging: the server declares the `logging` capability (deprecated in 2026-07-28, removable from 2027-07-28; SEP-2577)"),
        "{page}"
    );
    assert!(
        page.contains(
            "**new** MCPDeprecationWarning (SEP-2577): the logging capability is deprecated"
        ),
        "{page}"
    );
    assert!(page.contains("1 time(s) (baseline: 0)"), "{page}");

    let out = dir.path().join("strict");
    let mut strict = args.to_vec();
    strict.push("--fail-on-new-deprecations");
    let output = check(&out, &strict, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert_eq!(stage(&out, "deprecations").0, "failed");
}

#[test]
fn the_conformance_suite_is_judged_against_the_expected_failures_file() {
    let launcher = conformance();
    let base = spawn_listening(
        &["demo-server", "--release", "1.4.0", "--http", "127.0.0.1:0"],
        true,
    );
    let cand = spawn_listening(
        &["demo-server", "--release", "1.5.0", "--http", "127.0.0.1:0"],
        true,
    );
    let (base_url, cand_url) = (
        format!("http://{}/mcp", base.addr),
        format!("http://{}/mcp", cand.addr),
    );
    let dir = temp_dir();
    let expected = dir.path().join("expected-failures.yml");
    let env = [("MCPEVAL_CONFORMANCE", launcher.as_str())];
    let run = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut args = vec![
            "--baseline",
            base_url.as_str(),
            "--candidate",
            cand_url.as_str(),
            "--stages",
            "conformance",
            "--expected-failures",
            expected.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let output = check(&out, &args, &env);
        (output, out)
    };

    // Refreshed from the baseline, the file lists the demo's failures: the candidate passes.
    let (output, out) = run("write", &["--write-baseline"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let (status, reason) = stage(&out, "conformance");
    assert_eq!(status, "passed", "{reason}");
    assert!(
        reason.contains("0 new failure(s), 0 stale entries"),
        "{reason}"
    );
    assert!(reason.ends_with("over 2025-11-25, 2026-07-28"), "{reason}");
    let written = std::fs::read_to_string(&expected).unwrap();
    assert!(
        written.contains("\"2025-11-25\":\n  server:\n"),
        "{written}"
    );
    assert!(
        written.contains("- \"tools-call-simple-text:tools-call-simple-text\""),
        "{written}"
    );
    assert!(out.join("conformance/candidate/2026-07-28").is_dir());
    let (output, _) = run("again", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));

    // One listed failure taken out of the file (from the first set's section): it is a new
    // failure there.
    let fewer = written.replacen(
        "    - \"tools-call-simple-text:tools-call-simple-text\"\n",
        "",
        1,
    );
    std::fs::write(&expected, &fewer).unwrap();
    let (output, out) = run("new", &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let (status, reason) = stage(&out, "conformance");
    assert_eq!(status, "failed");
    assert!(reason.starts_with("1 new failure(s), 0 stale"), "{reason}");
    assert!(
        summary(&out).contains("new failure `tools-call-simple-text:tools-call-simple-text`"),
        "{}",
        summary(&out)
    );

    // A listed scenario that passes is stale.
    std::fs::write(&expected, format!("server:\n  - tools-list\n{written}")).unwrap();
    let (output, out) = run("stale", &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let (_, reason) = stage(&out, "conformance");
    assert!(reason.starts_with("0 new failure(s), 2 stale"), "{reason}");
    assert!(summary(&out).contains("stale entry `tools-list` passes now"));

    // An entry that names no scenario is refused before the suite runs.
    std::fs::write(&expected, "server:\n  - tool-list\n").unwrap();
    let (output, out) = run("unknown", &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let (status, reason) = stage(&out, "conformance");
    assert_eq!(status, "failed");
    assert!(
        reason.contains("`server` entry `tool-list` names no scenario")
            && reason.contains("did you mean `tools-list`?"),
        "{reason}"
    );
    assert!(!out.join("conformance/candidate").exists());
}

#[test]
fn a_stdio_candidate_is_served_over_http_for_the_conformance_suite() {
    let launcher = conformance();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = temp_dir();
    let config = dir.path().join("mcpeval.toml");
    let serve = format!(
        "{} demo-server --release 1.5.0 --http 127.0.0.1:{port}",
        bin()
    );
    std::fs::write(
        &config,
        format!(
            "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.5.0\"\n[check]\n\
             http_command = {serve:?}\nhttp_url = \"http://127.0.0.1:{port}/mcp\"\n\
             requirements = [\"2025-11-25\"]\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("check");
    let output = check(
        &out,
        &[
            "--config",
            config.to_str().unwrap(),
            "--stages",
            "conformance",
        ],
        &[("MCPEVAL_CONFORMANCE", launcher.as_str())],
    );
    // Without an expected-failures file every failing check of the demo counts.
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let (status, reason) = stage(&out, "conformance");
    assert_eq!(status, "failed");
    assert!(
        reason.starts_with("23 new failure(s)") && reason.ends_with("over 2025-11-25"),
        "{reason}"
    );
    // The server it started is gone.
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[test]
fn the_conformance_stage_is_skipped_with_its_reason_without_node() {
    let server = spawn_listening(
        &["demo-server", "--release", "1.5.0", "--http", "127.0.0.1:0"],
        true,
    );
    let url = format!("http://{}/mcp", server.addr);
    let dir = temp_dir();
    let out = dir.path().join("check");
    // A PATH without node on it: the default route (npx of the pinned package) cannot run.
    let empty = dir.path().join("no-node");
    std::fs::create_dir_all(&empty).unwrap();
    let output = check(
        &out,
        &[
            "--baseline",
            &url,
            "--candidate",
            &url,
            "--stages",
            "conformance",
            "--allow-skipped",
        ],
        &[("PATH", empty.to_str().unwrap())],
    );
    // Issue 36 changed this by design: a stage named in --stages that is skipped exits 3
    // ("could not be done") unless --allow-skipped, which this test passes (check_trust.rs
    // tests both).
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let (status, reason) = stage(&out, "conformance");
    assert_eq!(status, "skipped");
    assert!(
        reason.contains("Node is not installed") && reason.contains("Node ≥ 22"),
        "{reason}"
    );
}

#[test]
fn sigterm_stops_the_check_and_keeps_the_stages_that_ran() {
    use std::io::{BufRead, BufReader};
    let dir = temp_dir();
    let out = dir.path().join("check");
    // A candidate that never answers the handshake keeps the smoke stage busy.
    let mut child = std::process::Command::new(bin())
        .args([
            "check",
            "--baseline",
            "demo:1.4.0",
            "--candidate",
            "sleep 60",
        ])
        .args(["--stages", "contract,smoke,deprecations"])
        .args(["--out", out.to_str().unwrap()])
        .env_remove("GITHUB_STEP_SUMMARY")
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("check: smoke…") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("the smoke stage started");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let found = stages(&out);
    // The stages run in their order: smoke first; the contract never started.
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "smoke");
    assert_eq!(found[0].1, "error");
    assert!(found[0].2.starts_with("interrupted"), "{found:?}");
    assert!(summary(&out).starts_with("# mcpeval check: error"));
}

#[test]
fn each_auth_profile_is_snapshotted_and_diffed_in_its_own_folder() {
    let dir = temp_dir();
    let config = dir.path().join("mcpeval.toml");
    std::fs::write(
        &config,
        "baseline = \"demo:1.4.0\"\ncandidate = \"demo:2.0.0\"\n\
         [auth.admin]\nenv = { TRACKER_TOKEN = \"admin-token\" }\n\
         [check]\nauth_profiles = [\"admin\"]\n",
    )
    .unwrap();
    let out = dir.path().join("check");
    let output = check(
        &out,
        &["--config", config.to_str().unwrap(), "--stages", "contract"],
        &[],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(out.join("contract/candidate/admin/tools.json").exists());
    assert!(out.join("contract/candidate/admin/diff.json").exists());
    assert!(out.join("contract/baseline/admin/tools.json").exists());
    let page = summary(&out);
    // 14 since issue 49: 2.0.0's legacy-era code for a missing resource is seen too.
    assert!(
        page.contains("- client profile `bare`: 14 change(s)"),
        "{page}"
    );
    assert!(
        page.contains("- client profile `bare`, auth `admin`: 14 change(s)"),
        "{page}"
    );
    // The token is a secret: it is written nowhere.
    for file in files_under(&out) {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("admin-token"),
            "{} holds the token",
            file.display()
        );
    }
}

#[test]
fn host_settings_naming_a_renamed_or_removed_tool_fail_the_contract_at_their_line() {
    // A project as a user has it: Claude Code's settings found in the current directory, the
    // label `demo` tied to the server under test by the config.
    let dir = temp_dir();
    let project = dir.path();
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    std::fs::write(
        project.join(".claude/settings.json"),
        "{\n  \"permissions\": {\n    \"allow\": [\n      \"Bash(cargo test)\",\n      \
         \"mcp__demo__get_issue\",\n      \"mcp__demo__*\"\n    ]\n  }\n}\n",
    )
    .unwrap();
    std::fs::write(
        project.join("mcpeval.toml"),
        "[profile]\nserver_label = \"demo\"\n",
    )
    .unwrap();
    let check_here = |name: &str, baseline: &str, candidate: &str, extra: &[&str]| {
        let out = project.join(name);
        let output = std::process::Command::new(bin())
            .args(["check", "--config", "mcpeval.toml", "--stages", "contract"])
            .args(["--baseline", baseline, "--candidate", candidate])
            .args(extra)
            .args(["--out", out.to_str().unwrap()])
            .current_dir(project)
            .env_remove("GITHUB_STEP_SUMMARY")
            .output()
            .expect("mcpeval runs");
        (output, out)
    };

    // 2.0.0 renames get_issue to fetch_issue (and removes add_comment).
    let (output, out) = check_here("breaking", "demo:1.5.0", "demo:2.0.0", &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let (status, reason) = stage(&out, "contract");
    assert_eq!(status, "failed");
    assert!(
        reason.contains("1 host setting(s) name a renamed or removed tool"),
        "{reason}"
    );
    let finding = ".claude/settings.json:5: `mcp__demo__get_issue` names `get_issue`, which the \
                   candidate renamed to `fetch_issue`";
    let page = summary(&out);
    assert!(page.contains(&format!("  - {finding}\n")), "{page}");
    // Only the entry naming the tool: the whole server's pattern still matches.
    assert_eq!(page.matches("` names `").count(), 1, "{page}");
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(
        junit.contains("name=\"host settings: .claude/settings.json:5\""),
        "{junit}"
    );

    // 1.5.0 renames and removes nothing: the same entry is fine.
    let (output, out) = check_here("compatible", "demo:1.4.0", "demo:1.5.0", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let page = summary(&out);
    assert!(
        page.contains(
            "- host settings (.claude/settings.json, mcpeval.toml): 2 entries name tools; none \
             names a tool the candidate renamed or removed"
        ),
        "{page}"
    );

    // A file named that is not there is the user's mistake, before any stage runs.
    let missing = ["--host-settings", "gone/settings.json"];
    let (output, out) = check_here("missing", "demo:1.5.0", "demo:2.0.0", &missing);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("host settings file `gone/settings.json` does not exist"),
        "{}",
        text(&output)
    );
    assert!(!out.join("check.json").exists());
}
