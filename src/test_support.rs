//! Helpers shared by the unit tests of several modules: sample episodes, run records and listed
//! tools. Test code only; no module's production code owns or imports it.

use crate::episode::{Episode, Side};
use crate::grade::{Check, Grade};
use crate::suite::{TaskKind, TaskSet};

/// An episode of `task` on `side` with the given outcome; tokens follow the tool calls.
pub(crate) fn episode(
    task: &str,
    kind: TaskKind,
    side: Side,
    trial: u32,
    success: bool,
    calls: u32,
) -> Episode {
    Episode {
        format_version: crate::rundir::FORMAT_VERSION.into(),
        reasoning_tokens: 0,
        truncated: false,
        truncated_turn: None,
        timed_out: false,
        tokens_estimated: false,
        ttft_ms: None,
        model_turns: Vec::new(),
        run_id: "r".into(),
        task_id: task.into(),
        kind,
        set: TaskSet::Regression,
        side,
        host: "sim".into(),
        model: "sim".into(),
        trial,
        seed: u64::from(trial),
        success,
        infra_error: None,
        server_error: None,
        turns: calls + 1,
        tool_calls: calls,
        tool_errors: 0,
        protocol_errors: 0,
        input_tokens: 1000 + 500 * u64::from(calls),
        output_tokens: 50,
        total_tokens: 1050 + 500 * u64::from(calls),
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        judge_input_tokens: 0,
        judge_output_tokens: 0,
        latency_ms: 10.0,
        first_tool: None,
        tools_called: String::new(),
        final_answer: None,
        hit_max_turns: false,
        calls: Vec::new(),
        grade: Grade {
            success,
            checks: vec![Check {
                grader: "expected_calls".into(),
                passed: success,
                explanation: if success { "ok" } else { "got `find_issues`" }.into(),
                turn: None,
            }],
        },
        attempts: Vec::new(),
        request_retries: Vec::new(),
        started_at: String::new(),
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
    }
}

/// A one-call tool episode of `task`, for other modules' tests.
pub(crate) fn sample_episode(task: &str, side: Side, success: bool) -> Episode {
    episode(task, TaskKind::Tool, side, 0, success, 1)
}

/// A run record of the embedded demo config, for other modules' tests.
pub(crate) fn sample_info() -> crate::rundir::RunInfo {
    let server = |spec: &str| crate::rundir::ServerRecord {
        spec: spec.into(),
        info: None,
        tools: Vec::new(),
        tool_tokens: None,
        tools_ttl_ms: None,
    };
    crate::rundir::RunInfo {
        format_version: crate::rundir::FORMAT_VERSION.into(),
        run_id: "20261130T000000Z-test00".into(),
        mcpeval_version: "0.0.0".into(),
        status: crate::rundir::RunStatus::Running,
        config: crate::config::resolve(&crate::config::Overrides::default())
            .expect("the demo config resolves"),
        baseline: server("demo:1.4.0"),
        candidate: server("demo:1.5.0"),
        hosts: vec![crate::rundir::HostRecord {
            name: "sim".into(),
            model: "sim".into(),
            simulated: true,
            program: None,
            version: None,
            args: None,
            notes: Vec::new(),
        }],
        judges: Vec::new(),
        users: Vec::new(),
        seed: 42,
        trials: 1,
        tasks: vec!["t".into()],
        call_trials: Default::default(),
        task_hashes: Default::default(),
        task_part_hashes: Default::default(),
        trigger: None,
        trigger_changes: Vec::new(),
        trigger_texts: Vec::new(),
        started_at: "2026-11-30T00:00:00Z".into(),
        finished_at: None,
        git_commit: None,
        episodes: 0,
        infra_errors: 0,
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

/// A listed tool with `schema` as its input schema (an object).
pub(crate) fn listed_tool(
    name: &str,
    description: &str,
    schema: serde_json::Value,
) -> rmcp::model::Tool {
    let serde_json::Value::Object(schema) = schema else {
        panic!("an input schema is an object")
    };
    rmcp::model::Tool::new(
        name.to_owned(),
        description.to_owned(),
        std::sync::Arc::new(schema),
    )
}
