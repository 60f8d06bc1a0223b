//! The model-graded check (`judge:`) through the real binary: the sim host is the model under
//! test, and a mock OpenAI-compatible judge on 127.0.0.1 grades what the transcript shows.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use assert_cmd::Command;
use axum::Json;
use common::*;
use mcpeval::episode::{Episode, Side};
use serde_json::{json, Value};

/// What every judge answer reports as its usage, so that the judge columns are known.
const JUDGE_INPUT: u64 = 1234;
const JUDGE_OUTPUT: u64 = 56;
const KEY: &str = "sk-judge-planted-key-7f3e";

/// The suite: each rubric names the word the final answer must contain; `GARBAGE` asks the mock
/// for an answer with no verdict.
const JUDGED: &str = r#"
- id: greeting
  prompt: Hello! How are you today?
  kind: no-tool
  expect:
    judge: {rubric: "The answer must contain: Hello", host: "openai:judge-model"}
- id: capital-of-france
  prompt: What is the capital of France?
  kind: no-tool
  expect:
    judge: {rubric: "The answer must contain: Paris", host: "openai:judge-model"}
- id: show-issue-3
  prompt: Show me issue 3
  expect:
    calls: [{tool: get_issue}]
    judge: {rubric: "The answer must contain: found", host: "openai:judge-model"}
- id: list-projects
  prompt: List all projects
  expect:
    max_tool_calls: 5
    judge: {rubric: "GARBAGE", host: "openai:judge-model"}
"#;

/// The text between `<tag>` and `</tag>` in the judge's prompt.
fn section<'a>(text: &'a str, tag: &str) -> &'a str {
    let open = format!("<{tag}>\n");
    let close = format!("\n</{tag}>");
    let start = text.find(&open).map_or(0, |at| at + open.len());
    let end = text[start..]
        .find(&close)
        .map_or(text.len(), |at| start + at);
    &text[start..end]
}

/// The judge: passes a trial when its final answer contains the rubric's word.
async fn complete(
    axum::extract::State(prompts): axum::extract::State<Arc<Mutex<Vec<String>>>>,
    Json(body): Json<Value>,
) -> Json<Value> {
    let prompt = body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    prompts.lock().unwrap().push(prompt.clone());
    let rubric = section(&prompt, "rubric");
    let content = if rubric.contains("GARBAGE") {
        "I would rather not grade this one.".to_owned()
    } else {
        let word = rubric.rsplit(": ").next().unwrap_or_default();
        let answer = section(&prompt, "final_answer");
        let (verdict, reasoning) = if answer.contains(word) {
            ("PASS", format!("the answer says {word}"))
        } else {
            ("fail", format!("the answer lacks {word}"))
        };
        let object = json!({"verdict": verdict, "reasoning": reasoning});
        format!("Here is my grade:\n```json\n{object}\n```")
    };
    Json(json!({
        "id": "chatcmpl-judge", "object": "chat.completion", "created": 0,
        "model": "judge-model-2026",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": JUDGE_INPUT, "completion_tokens": JUDGE_OUTPUT,
                  "total_tokens": JUDGE_INPUT + JUDGE_OUTPUT}
    }))
}

/// Starts the mock judge on a runtime of its own; it serves until the runtime is dropped.
fn start_judge() -> (tokio::runtime::Runtime, String, Arc<Mutex<Vec<String>>>) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let prompts = Arc::new(Mutex::new(Vec::new()));
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(complete))
        .with_state(prompts.clone());
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move { axum::serve(listener, app).await });
    (runtime, format!("http://{addr}/v1"), prompts)
}

/// `mcpeval run` of the demo servers with the sim host on the suite `tasks` (written to `dir`),
/// `trials` trials per side, into `dir/name`.
fn run(dir: &Path, name: &str, tasks: &str, trials: &str) -> Command {
    let suite = dir.join(format!("{name}.yaml"));
    std::fs::write(&suite, tasks).unwrap();
    let mut cmd = Command::cargo_bin("mcpeval").unwrap();
    cmd.args([
        "run",
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        "demo:1.5.0",
    ])
    .args(["--host", "sim", "--trials", trials, "--suite"])
    .arg(&suite)
    .arg("--out")
    .arg(dir.join(name))
    .current_dir(env!("CARGO_MANIFEST_DIR"))
    .env_remove("OPENAI_API_KEY")
    .env_remove("OPENAI_BASE_URL")
    .env_remove("GITHUB_STEP_SUMMARY");
    cmd
}

type Key = (String, Side, u32);

fn by_trial(eps: &[Episode]) -> BTreeMap<Key, &Episode> {
    eps.iter()
        .map(|e| ((e.task_id.clone(), e.side, e.trial), e))
        .collect()
}

fn transcripts(dir: &Path) -> BTreeMap<Key, Value> {
    let text = std::fs::read_to_string(dir.join("transcripts.jsonl")).unwrap();
    text.lines()
        .map(|line| {
            let t: Value = serde_json::from_str(line).unwrap();
            let side = serde_json::from_value(t["side"].clone()).unwrap();
            let key = (
                t["task_id"].as_str().unwrap().to_owned(),
                side,
                t["trial"].as_u64().unwrap() as u32,
            );
            (key, t)
        })
        .collect()
}

#[test]
fn the_judge_decides_success_and_its_tokens_are_kept_apart() {
    let (_runtime, url, prompts) = start_judge();
    let dir = temp_dir();
    let output = run(dir.path(), "judged", JUDGED, "2")
        .env("OPENAI_BASE_URL", &url)
        .env("OPENAI_API_KEY", KEY)
        .output()
        .unwrap();
    let log = text(&output);
    // A quarter of the episodes are infrastructure errors: more than the run allows.
    assert_eq!(output.status.code(), Some(3), "{log}");
    let judged_dir = dir.path().join("judged");
    let eps = episodes(&judged_dir);
    assert_eq!(eps.len(), 16, "{log}");
    // run.json names the judge beside the hosts.
    let info: Value =
        serde_json::from_slice(&std::fs::read(judged_dir.join("run.json")).unwrap()).unwrap();
    let judges: Vec<&str> = info["judges"]
        .as_array()
        .map(|a| a.iter().filter_map(|j| j["model"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        !judges.is_empty() && judges.iter().all(|m| m.starts_with("openai:")),
        "{}",
        info["judges"]
    );
    let transcripts = transcripts(&judged_dir);
    // summary.md counts the judge's tokens apart, per side.
    let summary = std::fs::read_to_string(judged_dir.join("summary.md")).unwrap();
    for side in [Side::Baseline, Side::Candidate] {
        let judged: Vec<&Episode> = eps
            .iter()
            .filter(|e| e.side == side && e.judge_input_tokens > 0)
            .collect();
        let input: u64 = judged.iter().map(|e| e.judge_input_tokens).sum();
        let row = format!(
            "| `sim` | {side} · judge | – | {} | {input} |",
            judged.len()
        );
        assert!(summary.contains(&row), "{row} not in {summary}");
    }

    for e in &eps {
        let t = &transcripts[&(e.task_id.clone(), e.side, e.trial)];
        let judge = &t["judge"];
        assert_eq!(judge["host"], "openai:judge-model", "{t}");
        assert_eq!(judge["model"], "judge-model-2026");
        assert_eq!(judge["usage"]["input_tokens"], JUDGE_INPUT);
        assert_eq!(e.judge_input_tokens, JUDGE_INPUT, "{}", e.task_id);
        assert_eq!(e.judge_output_tokens, JUDGE_OUTPUT);
        assert_eq!(e.total_tokens, e.input_tokens + e.output_tokens);
        let check = e.grade.checks.iter().find(|c| c.grader == "judge");
        match e.task_id.as_str() {
            "list-projects" => {
                let error = e.infra_error.as_deref().unwrap_or_default();
                assert!(
                    error.starts_with("judge `openai:judge-model`: no readable verdict"),
                    "{error}"
                );
                assert!(error.contains("I would rather not grade"), "{error}");
                assert_eq!(e.attempts.len(), 2, "judge failures are retried");
                assert!(!e.success && check.is_none());
                assert_eq!(judge["verdict"], Value::Null);
                assert_eq!(judge["raw_answer"], "I would rather not grade this one.");
            }
            task => {
                let passes = task != "capital-of-france";
                assert_eq!(e.infra_error, None, "{task}");
                assert_eq!(e.success, passes, "{task}: {:?}", e.grade);
                let check = check.unwrap_or_else(|| panic!("{task}: no judge check"));
                assert_eq!(check.passed, passes);
                let word = if passes { "says" } else { "lacks" };
                assert!(check.explanation.contains(word), "{check:?}");
                let verdict = if passes { "pass" } else { "fail" };
                assert_eq!(judge["verdict"], verdict);
                assert_eq!(
                    judge["reasoning"].as_str(),
                    Some(check.explanation.as_str())
                );
                assert!(judge["raw_answer"].as_str().unwrap().contains("```json"));
            }
        }
    }

    // The judge saw the tool calls with their arguments and results, and the final answer.
    let prompts = prompts.lock().unwrap().clone();
    let issue = prompts
        .iter()
        .find(|p| section(p, "request") == "Show me issue 3")
        .expect("the judge was asked about issue 3");
    let calls = section(issue, "tool_calls");
    assert!(calls.starts_with("1. get_issue({"), "{calls}");
    assert!(calls.contains("\nresult: "), "{calls}");
    assert!(section(issue, "final_answer").contains("found"), "{issue}");
    assert!(!transcripts.values().any(|t| t.to_string().contains(KEY)));

    // The same trials without a judge: the sim host's tokens are the same (same seeds), so the
    // judge's tokens are in no column but their own.
    let unjudged: String = JUDGED
        .lines()
        .filter(|l| !l.contains("judge:"))
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        .replace("  kind: no-tool\n  expect:\n", "  kind: no-tool\n");
    let output = run(dir.path(), "unjudged", &unjudged, "2")
        .output()
        .unwrap();
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        text(&output)
    );
    let plain = episodes(&dir.path().join("unjudged"));
    let plain = by_trial(&plain);
    for (key, e) in by_trial(&eps) {
        let p = plain[&key];
        assert_eq!(p.judge_input_tokens, 0);
        assert_eq!(
            (e.input_tokens, e.output_tokens, e.total_tokens),
            (p.input_tokens, p.output_tokens, p.total_tokens),
            "{key:?}"
        );
    }
    let csv = std::fs::read_to_string(judged_dir.join("episodes.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (input, output) = (column("judge_input_tokens"), column("judge_output_tokens"));
    for row in csv.lines().skip(1) {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells[input], JUDGE_INPUT.to_string(), "{row}");
        assert_eq!(cells[output], JUDGE_OUTPUT.to_string(), "{row}");
    }
}

const ONE_JUDGED: &str = "id: greeting\nprompt: Hello! How are you today?\nkind: no-tool\n\
    expect:\n  judge: {rubric: The answer greets the user., host: HOST}\n";

#[test]
fn a_judge_host_that_cannot_be_built_is_a_usage_error() {
    let dir = temp_dir();
    let tasks = ONE_JUDGED.replace("HOST", "openai:judge-model");
    let output = run(dir.path(), "no-key", &tasks, "1").output().unwrap();
    let log = text(&output);
    assert_eq!(output.status.code(), Some(2), "{log}");
    assert!(
        log.contains("judge host `openai:judge-model` of task `greeting`"),
        "{log}"
    );
    assert!(log.contains("OPENAI_API_KEY"), "{log}");
    assert!(!dir.path().join("no-key").exists(), "the run started");

    let tasks = ONE_JUDGED.replace("HOST", "strict-grader");
    let output = run(dir.path(), "unknown", &tasks, "1").output().unwrap();
    let log = text(&output);
    assert_eq!(output.status.code(), Some(2), "{log}");
    assert!(log.contains("judge host `strict-grader`"), "{log}");
    assert!(log.contains("unknown host `strict-grader`"), "{log}");
}

#[test]
fn the_sim_host_cannot_judge_and_says_so_as_an_infra_error() {
    let dir = temp_dir();
    let tasks = ONE_JUDGED.replace("HOST", "sim");
    let output = run(dir.path(), "sim-judge", &tasks, "1").output().unwrap();
    let log = text(&output);
    assert_eq!(output.status.code(), Some(3), "{log}");
    assert!(
        log.contains("judge host `sim` of task `greeting`") && log.contains("cannot judge"),
        "no warning: {log}"
    );
    // In the form of every warning about a task (issue 37): `file:line:col: warning: …`.
    assert!(
        log.lines().any(|l| l.contains(".yaml:")
            && l.contains(":1: warning: judge host `sim` of task `greeting`")),
        "{log}"
    );
    let eps = episodes(&dir.path().join("sim-judge"));
    assert_eq!(eps.len(), 2, "{log}");
    for e in &eps {
        let error = e.infra_error.as_deref().unwrap_or_default();
        assert!(
            error.starts_with("judge `sim`: no readable verdict"),
            "{error}"
        );
        assert!(!e.success);
    }
}
