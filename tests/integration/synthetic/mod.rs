//! Synthetic run directories for the `compare` tests: `run.json` and `episodes.jsonl` written from
//! Rust values (fixed ids, servers and timestamps), so reports built from them are reproducible.
#![allow(dead_code)]

pub mod draw;

use std::io::Write;
use std::path::Path;

use mcpeval::config::StatsConfig;
use mcpeval::episode::{Episode, Side, ToolCallRecord};
use mcpeval::grade::{Check, Grade};
use mcpeval::mcp::ServerInfo;
use mcpeval::rundir::{HostRecord, RunInfo, ServerRecord, EPISODES_JSONL};
use mcpeval::suite::{TaskKind, TaskSet};

/// The only host of the synthetic runs: the embedded simulator.
pub const HOST: &str = "sim";
pub const SEED: u64 = 42;
pub const STARTED_AT: &str = "2026-11-30T00:00:00Z";
pub const FINISHED_AT: &str = "2026-11-30T00:03:12Z";

/// A task as the episodes of a synthetic run see it.
#[derive(Debug, Clone)]
pub struct TaskDef {
    pub id: String,
    pub kind: TaskKind,
    pub set: TaskSet,
}

impl TaskDef {
    pub fn new(id: impl Into<String>, kind: TaskKind, set: TaskSet) -> Self {
        Self {
            id: id.into(),
            kind,
            set,
        }
    }
}

/// A passing trial with fixed, plausible values: one call of `search_issues` for a tool task,
/// no call for a no-tool task. Tests change the fields they care about.
pub fn episode(run_id: &str, task: &TaskDef, side: Side, trial: u32) -> Episode {
    let (kind, t) = (task.kind, f64::from(trial));
    let mut e = Episode {
        format_version: mcpeval::rundir::FORMAT_VERSION.to_owned(),
        run_id: run_id.to_owned(),
        task_id: task.id.clone(),
        kind,
        set: task.set,
        side,
        host: HOST.to_owned(),
        model: "sim".to_owned(),
        trial,
        seed: 1_000 + u64::from(trial),
        success: true,
        infra_error: None,
        server_error: None,
        turns: 1,
        tool_calls: 0,
        tool_errors: 0,
        protocol_errors: 0,
        input_tokens: 0,
        output_tokens: 0,
        total_tokens: 0,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        judge_input_tokens: 0,
        judge_output_tokens: 0,
        latency_ms: 800.0 + 37.0 * t,
        first_tool: None,
        tools_called: String::new(),
        final_answer: Some("Done.".to_owned()),
        hit_max_turns: false,
        reasoning_tokens: 0,
        truncated: false,
        truncated_turn: None,
        timed_out: false,
        tokens_estimated: false,
        ttft_ms: None,
        model_turns: Vec::new(),
        calls: Vec::new(),
        grade: passed(kind),
        attempts: Vec::new(),
        request_retries: Vec::new(),
        started_at: STARTED_AT.to_owned(),
        tools_offered: String::new(),
        text_calls: Default::default(),
        app: None,
        user_turns: Vec::new(),
        sampling_requests: 0,
        elicitation_requests: 0,
        unprepared_requests: 0,
        sampling_input_tokens: 0,
        sampling_output_tokens: 0,
        asks: Vec::new(),
        host_calls: Vec::new(),
        tool_search: None,
    };
    let tools: &[&str] = match kind {
        TaskKind::Tool => &["search_issues"],
        TaskKind::NoTool | TaskKind::Call => &[],
    };
    set_calls(&mut e, tools);
    set_tokens(
        &mut e,
        1_500 + 13 * u64::from(trial),
        300 + 7 * u64::from(trial),
    );
    e
}

/// The episodes of `task` on one side, trials `0..trials`.
pub fn trials(run_id: &str, task: &TaskDef, side: Side, trials: u32) -> Vec<Episode> {
    (0..trials)
        .map(|i| episode(run_id, task, side, i))
        .collect()
}

fn passed(kind: TaskKind) -> Grade {
    let check = match kind {
        TaskKind::Tool => Check {
            grader: "expected_calls".into(),
            passed: true,
            explanation: "expected `search_issues` with project=apollo, got it".into(),
            turn: None,
        },
        TaskKind::NoTool | TaskKind::Call => Check {
            grader: "no_tool".into(),
            passed: true,
            explanation: "no tool was called".into(),
            turn: None,
        },
    };
    Grade {
        success: true,
        checks: vec![check],
    }
}

/// Replaces the trial's tool calls (one turn per call plus the answer).
pub fn set_calls(e: &mut Episode, tools: &[&str]) {
    e.calls = tools
        .iter()
        .enumerate()
        .map(|(i, tool)| ToolCallRecord {
            index: i as u32,
            tool: (*tool).to_owned(),
            arguments: r#"{"project":"apollo"}"#.to_owned(),
            is_error: false,
            error_code: None,
            error_kind: None,
            latency_ms: 12.0,
            result: "[]".to_owned(),
            replay_unmatched: false,
            recovered: false,
            user_turn: 1,
        })
        .collect();
    e.tool_calls = tools.len() as u32;
    e.turns = e.tool_calls + 1;
    e.first_tool = tools.first().map(|t| (*t).to_owned());
    e.tools_called = tools.join(",");
}

pub fn set_tokens(e: &mut Episode, input: u64, output: u64) {
    e.input_tokens = input;
    e.output_tokens = output;
    e.total_tokens = input + output;
}

/// Marks the trial failed by one grader, with its explanation.
pub fn fail(e: &mut Episode, grader: &str, explanation: &str) {
    e.success = false;
    e.grade = Grade {
        success: false,
        checks: vec![Check {
            grader: grader.to_owned(),
            passed: false,
            explanation: explanation.to_owned(),
            turn: None,
        }],
    };
}

/// Marks the trial as lost to an infrastructure error (kept in the files, out of the statistics).
pub fn infra(e: &mut Episode, why: &str) {
    e.infra_error = Some(why.to_owned());
    e.success = false;
    e.attempts = vec![why.to_owned(), why.to_owned()];
    e.grade = Grade::default();
    e.final_answer = None;
    set_calls(e, &[]);
    set_tokens(e, 0, 0);
}

fn server(release: &str) -> ServerRecord {
    ServerRecord {
        spec: format!("demo:{release}"),
        info: Some(ServerInfo {
            name: "demo-issues".into(),
            version: release.into(),
            protocol_version: "2025-11-25".into(),
            era: "legacy".into(),
            instructions: None,
        }),
        tools: vec![
            "search_issues".into(),
            "find_issues".into(),
            "create_issue".into(),
        ],
        tool_tokens: None,
        tools_ttl_ms: None,
    }
}

/// `run.json` of a completed synthetic run of `episodes` (demo 1.4.0 → 1.5.0, host `sim`).
pub fn run_info(run_id: &str, trials: u32, stats: &StatsConfig, episodes: &[Episode]) -> RunInfo {
    let mut config = mcpeval::config::resolve(&mcpeval::config::Overrides::default())
        .expect("the embedded demo config resolves");
    config.stats = stats.clone();
    config.trials = trials;
    config.seed = SEED;
    let mut tasks: Vec<String> = episodes.iter().map(|e| e.task_id.clone()).collect();
    tasks.sort();
    tasks.dedup();
    RunInfo {
        format_version: mcpeval::rundir::FORMAT_VERSION.to_owned(),
        run_id: run_id.to_owned(),
        mcpeval_version: "0.1.0".into(),
        status: mcpeval::rundir::RunStatus::Completed,
        config,
        baseline: server("1.4.0"),
        candidate: server("1.5.0"),
        hosts: vec![HostRecord {
            name: HOST.into(),
            model: "sim".into(),
            simulated: true,
            program: None,
            version: None,
            args: None,
            notes: Vec::new(),
        }],
        judges: Vec::new(),
        users: Vec::new(),
        call_trials: Default::default(),
        task_hashes: Default::default(),
        task_part_hashes: Default::default(),
        seed: SEED,
        trials,
        tasks,
        trigger: None,
        trigger_changes: Vec::new(),
        trigger_texts: Vec::new(),
        started_at: STARTED_AT.into(),
        finished_at: Some(FINISHED_AT.into()),
        git_commit: None,
        episodes: episodes.len(),
        infra_errors: episodes.iter().filter(|e| e.infra_error.is_some()).count(),
        runner_cpu_ms: None,
        config_hash: None,
        shard: None,
        merged_from: Vec::new(),
        stopped_hosts: Vec::new(),
        estimate: None,
        candidate_only_tasks: Vec::new(),
        trigger_diff: None,
    }
}

/// Writes `run.json` and `episodes.jsonl` (one serde object per line) into `dir`, creating it.
pub fn write_run(dir: &Path, info: &RunInfo, episodes: &[Episode]) {
    std::fs::create_dir_all(dir).expect("run dir");
    info.write(dir).expect("run.json written");
    let mut file = std::fs::File::create(dir.join(EPISODES_JSONL)).expect("episodes.jsonl");
    for e in episodes {
        serde_json::to_writer(&mut file, e).expect("episode serializes");
        file.write_all(b"\n").unwrap();
    }
}

/// `comparison.csv` as rows of column name → text (no field holds a comma or a quote here).
pub fn read_csv(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(path).expect("comparison.csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            assert_eq!(fields.len(), header.len(), "csv line `{l}`");
            header
                .iter()
                .zip(fields)
                .map(|(h, f)| ((*h).to_owned(), f.to_owned()))
                .collect()
        })
        .collect()
}
