//! The `openai` host against `mcpeval sim-server` on 127.0.0.1 grades like the in-process sim.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use mcpeval::episode::{Episode, Side};

fn grades(eps: &[Episode]) -> BTreeMap<(String, Side, u32), (bool, String, String)> {
    eps.iter()
        .map(|e| {
            let args: Vec<&str> = e.calls.iter().map(|c| c.arguments.as_str()).collect();
            (
                (e.task_id.clone(), e.side, e.trial),
                (e.success, e.tools_called.clone(), args.join("|")),
            )
        })
        .collect()
}

/// `mcpeval run --config CONFIG --host HOST --trials 2` with the model endpoint at `server`;
/// the run directory and the exit code (0 or 1, asserted).
fn run_host(server: &Background, config: &Path, host: &str, out: &Path) -> (PathBuf, Option<i32>) {
    let output = Command::new(bin())
        .args(["run", "--config", config.to_str().unwrap(), "--host", host])
        .args(["--trials", "2", "--out", out.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OPENAI_BASE_URL", format!("http://{}/v1", server.addr))
        .env("OPENAI_API_KEY", "sk-test-secret-value-123")
        .output()
        .unwrap();
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        text(&output)
    );
    (out.to_path_buf(), output.status.code())
}

#[test]
fn openai_host_through_sim_server_grades_like_the_sim_host() {
    let server = spawn_listening(&["sim-server", "--addr", "127.0.0.1:0"], false);
    let dir = temp_dir();
    // OpenAI function tools carry no title, so neither host passes titles here.
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.5.0\"\nsuites = [\"tasks/demo\"]\n\
         [profile]\npass_title = false\nserver_label = \"tracker\"\n",
    )
    .unwrap();
    let run = |host: &str, out: &str| run_host(&server, &config, host, &dir.path().join(out));
    let (via_api, api_exit) = run("openai:sim", "api");
    let (in_process, sim_exit) = run("sim", "sim");
    // The same grades and counts give the same verdict.
    assert_eq!(api_exit, sim_exit);
    let api_eps = episodes(&via_api);
    assert!(api_eps.iter().all(|e| e.infra_error.is_none()));
    assert!(api_eps.iter().all(|e| e.host == "openai:sim"));
    assert!(
        api_eps.iter().any(|e| e.input_tokens > 0),
        "usage not recorded"
    );
    let (api, sim) = (grades(&api_eps), grades(&episodes(&in_process)));
    assert_eq!(api.len(), sim.len());
    let differing: Vec<_> = api
        .iter()
        .filter(|(k, v)| sim.get(*k) != Some(*v))
        .map(|(k, v)| format!("{k:?}: api {v:?} vs sim {:?}", sim.get(k)))
        .collect();
    assert!(differing.is_empty(), "{}", differing.join("\n"));

    // The API key never reaches the run directory.
    for entry in std::fs::read_dir(&via_api).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let content = String::from_utf8_lossy(&bytes);
        assert!(!content.contains("sk-test-secret-value-123"));
    }
}

#[test]
fn an_unreachable_model_endpoint_is_recorded_as_infra_errors() {
    let dir = temp_dir();
    // Without the breaker (tests/integration/outage.rs has it): every trial is tried and retried.
    let config = temp_dir();
    let config = config.path().join("config.toml");
    std::fs::write(
        &config,
        "[host.x]\nprovider = \"openai\"\nmodel = \"gpt-x\"\nbreaker_after = 0\n",
    )
    .unwrap();
    let output = pair_command("demo:1.4.0", "demo:1.5.0", dir.path())
        .args(["--config", config.to_str().unwrap()])
        .args(["--host", "x", "--trials", "1"])
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .output()
        .unwrap();
    let eps = episodes(dir.path());
    assert!(!eps.is_empty(), "{}", text(&output));
    assert!(eps.iter().all(|e| e.infra_error.is_some() && !e.success));
    assert!(
        eps.iter().all(|e| e.attempts.len() == 2),
        "retries not kept"
    );
}

/// The Responses API host (`openai-responses:sim`, streamed, and `api = "responses"` unstreamed)
/// against sim-server's `/v1/responses` grades like the in-process sim, trial by trial.
#[test]
fn responses_host_through_sim_server_grades_like_the_sim_host() {
    let server = spawn_listening(&["sim-server", "--addr", "127.0.0.1:0"], false);
    let dir = temp_dir();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.5.0\"\nsuites = [\"tasks/demo\"]\n\
         [profile]\npass_title = false\nserver_label = \"tracker\"\n\
         [host.whole]\nprovider = \"openai\"\napi = \"responses\"\nmodel = \"sim\"\n\
         stream = false\n",
    )
    .unwrap();
    let run = |host: &str, out: &str| {
        let (out_dir, code) = run_host(&server, &config, host, &dir.path().join(out));
        (episodes(&out_dir), code)
    };
    let (sim_eps, sim_exit) = run("sim", "sim");
    let sim = grades(&sim_eps);
    for host in ["openai-responses:sim", "whole"] {
        let (eps, exit) = run(host, host.replace(':', "-").as_str());
        assert_eq!(exit, sim_exit, "{host}");
        assert!(eps.iter().all(|e| e.infra_error.is_none()), "{host}");
        assert!(eps
            .iter()
            .all(|e| e.input_tokens > 0 && e.output_tokens > 0));
        // Streamed answers record their time to first token; whole ones cannot.
        assert!(eps.iter().all(|e| e.ttft_ms.is_some() == (host != "whole")));
        let api = grades(&eps);
        assert_eq!(api.len(), sim.len());
        let differing: Vec<_> = api
            .iter()
            .filter(|(k, v)| sim.get(*k) != Some(*v))
            .map(|(k, v)| format!("{k:?}: {host} {v:?} vs sim {:?}", sim.get(k)))
            .collect();
        assert!(differing.is_empty(), "{}", differing.join("\n"));
    }
}

/// `mcpeval run` of the demo config through `openai:sim` against a sim-server started with
/// `server_args`: the run directory and what the command printed.
fn run_through_gateway(server_args: &[&str], dir: &Path) -> (PathBuf, String) {
    let mut args = vec!["sim-server", "--addr", "127.0.0.1:0"];
    args.extend_from_slice(server_args);
    let server = spawn_listening(&args, false);
    let out = dir.join("run");
    let output = Command::new(bin())
        .args([
            "run",
            "--config",
            "configs/demo.toml",
            "--host",
            "openai:sim",
        ])
        .args(["--trials", "1", "--out", out.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OPENAI_BASE_URL", format!("http://{}/v1", server.addr))
        .env_remove("OPENAI_API_KEY")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        text(&output)
    );
    (out, text(&output))
}

#[test]
fn a_stream_a_gateway_labels_as_json_is_read_as_the_stream_it_is() {
    let dir = temp_dir();
    let (run, _) = run_through_gateway(&["--relabel-stream"], dir.path());
    let eps = episodes(&run);
    assert_eq!(eps.len(), 36);
    assert!(eps.iter().all(|e| e.infra_error.is_none()), "{:?}", eps[0]);
    // Read event by event: the first token's time is measured, as for a labelled stream.
    assert!(eps.iter().all(|e| e.ttft_ms.is_some()));
}

#[test]
fn an_endpoint_that_refuses_streaming_is_asked_whole_and_the_run_says_so() {
    let dir = temp_dir();
    let (run, said) = run_through_gateway(&["--refuse-stream"], dir.path());
    let eps = episodes(&run);
    assert_eq!(eps.len(), 36);
    assert!(eps.iter().all(|e| e.infra_error.is_none()), "{:?}", eps[0]);
    // Whole answers: no time to first token.
    assert!(eps.iter().all(|e| e.ttft_ms.is_none()));
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("run.json")).unwrap()).unwrap();
    let notes = info["hosts"][0]["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1);
    let note = notes[0].as_str().unwrap();
    assert!(
        note.contains("refused a streamed request") && note.contains("400"),
        "{note}"
    );
    let lines = said
        .lines()
        .filter(|l| l.contains("refused a streamed"))
        .count();
    assert_eq!(lines, 1, "{said}");
}
