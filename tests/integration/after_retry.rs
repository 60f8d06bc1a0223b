//! `expect.after` checks with a retry deadline (`within_ms`, `every_ms`) through the binary,
//! against a demo server whose writes settle only after a delay (`demo-server --settle-ms N`,
//! or `MCPEVAL_DEMO_SETTLE_MS` for `demo:` servers) and against the normal demo server: an after
//! check without a deadline fails on the settling server, one with a deadline passes and says
//! after how many attempts, one whose deadline is too short fails and says how long it tried;
//! on the normal server all pass. Misplaced or absurd deadlines are refused with file:line:col.

use crate::common;

use common::*;

/// `mcpeval run` of `suite` alone with the simulated model, one trial per side, from the
/// repository root; ready for more arguments and environment.
fn run_suite(
    baseline: &str,
    candidate: &str,
    suite: &std::path::Path,
    out: &std::path::Path,
) -> std::process::Command {
    let mut cmd = std::process::Command::new(bin());
    cmd.args(["run", "--baseline", baseline, "--candidate", candidate])
        .args([
            "--suite",
            suite.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(["--host", "sim", "--trials", "1", "--seed", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("GITHUB_STEP_SUMMARY");
    cmd
}

/// How long the settling server takes to show a write to reads.
const SETTLE_MS: &str = "1500";

/// Close issue 3 (a call task, no model) or a new issue (the simulated model), then check that
/// it reads as closed: at once, within 5 s, or within 200 ms.
const SUITE: &str = r#"
- id: close-no-wait
  kind: call
  call: {tool: update_issue, args: {id: 3, status: closed}}
  expect:
    is_error: false
    after:
      - call: {tool: get_issue, args: {id: 3}}
        expect: {structured: [{path: "$.status", equals: closed}]}
- id: close-within
  kind: call
  call: {tool: update_issue, args: {id: 3, status: closed}}
  expect:
    is_error: false
    after:
      - call: {tool: get_issue, args: {id: 3}}
        expect: {structured: [{path: "$.status", equals: closed}]}
        within_ms: 5000
        every_ms: 100
- id: close-too-soon
  kind: call
  call: {tool: update_issue, args: {id: 3, status: closed}}
  expect:
    is_error: false
    after:
      - call: {tool: get_issue, args: {id: 3}}
        expect: {structured: [{path: "$.status", equals: closed}]}
        within_ms: 200
        every_ms: 50
- id: model-closes-new-issue
  prompt: Close issue 13
  setup:
    - {tool: create_issue, args: {project: apollo, title: "Printer catches fire"}}
  expect:
    calls: [{tool: update_issue, args: {id: 13, status: closed}}]
    after:
      - call: {tool: get_issue, args: {id: 13}}
        expect: {structured: [{path: "$.status", equals: closed}]}
        within_ms: 5000
"#;

/// The explanation of the `after` check of `task`'s episode on `side`, and whether it passed.
fn after(eps: &[mcpeval::episode::Episode], task: &str, side: &str) -> (bool, String) {
    let e = eps
        .iter()
        .find(|e| e.task_id == task && e.side.as_str() == side)
        .unwrap_or_else(|| panic!("no episode of {task} on {side}"));
    assert!(e.infra_error.is_none(), "{task}: {:?}", e.infra_error);
    let check = e.grade.checks.iter().find(|c| c.grader == "after").unwrap();
    assert_eq!(e.success, check.passed, "{task} on {side}: {:?}", e.grade);
    (check.passed, check.explanation.clone())
}

#[test]
fn an_after_check_with_a_deadline_waits_for_state_that_settles() {
    let dir = temp_dir();
    let suite = dir.path().join("after.yaml");
    std::fs::write(&suite, SUITE).unwrap();
    let out_dir = dir.path().join("run");
    // The baseline is the normal demo server; the candidate settles its writes after a delay.
    let settling = format!(
        "{} demo-server --release 1.4.0 --settle-ms {SETTLE_MS}",
        bin()
    );
    let out = run_suite("demo:1.4.0", &settling, &suite, &out_dir)
        .output()
        .unwrap();
    assert_verdict(&out);
    let eps = episodes(&out_dir);

    // On the normal server every check passes at once.
    for task in ["close-no-wait", "close-within", "close-too-soon"] {
        let (passed, why) = after(&eps, task, "baseline");
        assert!(passed, "{task}: {why}");
    }
    let (_, why) = after(&eps, "close-within", "baseline");
    assert_eq!(
        why,
        "`get_issue`({\"id\":3}): structured: 1 path check(s) hold (on the first attempt)"
    );

    // Without a deadline the check reads the state before it settled.
    let (passed, why) = after(&eps, "close-no-wait", "candidate");
    assert!(!passed);
    assert_eq!(
        why,
        "`get_issue`({\"id\":3}): structured: `$.status` is \"open\", expected \"closed\""
    );
    // With one, it passes once the write is visible, and says after how many attempts.
    let (passed, why) = after(&eps, "close-within", "candidate");
    assert!(passed, "{why}");
    let attempts = number_after(&why, "(on attempt ");
    let waited = number_after(&why, ", ");
    assert!(attempts >= 2, "{why}");
    assert!(why.ends_with(" ms after the first)"), "{why}");
    // It waited for the write to settle (1500 ms after it, a little less after the first
    // attempt), and not to its deadline.
    assert!((300..5000).contains(&waited), "{why}");
    // A deadline shorter than the settling fails, saying how long it tried.
    let (passed, why) = after(&eps, "close-too-soon", "candidate");
    assert!(!passed);
    assert!(
        why.starts_with(
            "`get_issue`({\"id\":3}): structured: `$.status` is \"open\", expected \"closed\" \
             (still so after "
        ),
        "{why}"
    );
    assert!(why.ends_with(" ms; within_ms: 200)"), "{why}");
    assert!(number_after(&why, "still so after ") >= 2, "{why}");
    // A model's trial: the issue its setup created and it closed reads as closed in time.
    for side in ["baseline", "candidate"] {
        let (passed, why) = after(&eps, "model-closes-new-issue", side);
        assert!(passed, "{side}: {why}");
    }
}

#[test]
fn demo_servers_of_a_run_settle_writes_when_the_environment_says_so() {
    let dir = temp_dir();
    let suite = dir.path().join("after.yaml");
    let first_task: String = SUITE.split("\n- id: close-within").next().unwrap().into();
    std::fs::write(&suite, first_task).unwrap();
    let out_dir = dir.path().join("run");
    let out = run_suite("demo:1.4.0", "demo:1.4.0", &suite, &out_dir)
        .env("MCPEVAL_DEMO_SETTLE_MS", SETTLE_MS)
        .output()
        .unwrap();
    assert_verdict(&out);
    let eps = episodes(&out_dir);
    for side in ["baseline", "candidate"] {
        let (passed, why) = after(&eps, "close-no-wait", side);
        assert!(!passed, "{side}: {why}");
    }
}

/// The whole number that follows `marker` in `text`.
fn number_after(text: &str, marker: &str) -> u64 {
    let (_, rest) = text
        .rsplit_once(marker)
        .unwrap_or_else(|| panic!("no `{marker}` in {text}"));
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number after `{marker}` in {text}"))
}

/// Every misuse of a deadline, each refused where it is written.
const MISUSED: &str = r#"- id: bad-retry
  kind: call
  call: {tool: update_issue, args: {id: 3, status: closed}}
  setup:
    - {tool: get_issue, args: {id: 3}, within_ms: 100}
  expect:
    after:
      - call: {tool: get_issue, args: {id: 3}, every_ms: 50}
        expect: {is_error: false, within_ms: 10}
      - call: {tool: get_issue, args: {id: 3}}
        expect: {is_error: false}
        within_ms: -5
      - call: {tool: get_issue, args: {id: 3}}
        expect: {is_error: false}
        within_ms: 900000
      - call: {tool: get_issue, args: {id: 3}}
        expect: {is_error: false}
        every_ms: 100
      - call: {tool: get_issue, args: {id: 3}}
        expect: {is_error: false}
        within_ms: 100
        every_ms: 500
      - call: {tool: get_issue, args: {id: 3}}
        expect: {is_error: false}
        within_ms: 5s
"#;

#[test]
fn misplaced_and_absurd_deadlines_are_refused_with_their_place() {
    let dir = temp_dir();
    let suite = dir.path().join("bad.yaml");
    std::fs::write(&suite, MISUSED).unwrap();
    let path = suite.to_str().unwrap();
    let out = mcpeval(&["tasks", "check", "--suite", path]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in [
        ":5:40: `within_ms` retries an `after` check (beside its `call` and `expect`); a `setup` \
         call is made once and must succeed",
        ":8:48: `every_ms` goes beside `call` and `expect` of the `after` check, not inside `call`",
        ":9:35: `within_ms` goes beside `call` and `expect` of the `after` check, not inside \
         `expect`",
        ":12:20: `within_ms` must be at least 1, got -5",
        ":15:20: `within_ms` must be at most 600000 (ten minutes: a trial must not wait longer \
         for state to settle), got 900000",
        ":18:9: `every_ms` needs `within_ms`: without a deadline the check is made once",
        ":22:19: `every_ms` (500) is above `within_ms` (100): the check would be made once; lower \
         `every_ms` or raise `within_ms`",
        ":25:20: `within_ms` must be an integer, got a string",
    ] {
        assert!(
            stderr.contains(&format!("{path}{line}")),
            "{line}\n{stderr}"
        );
    }
    assert!(stderr.contains("8 problem(s) found"), "{stderr}");
}
