//! A host that throttles (429 when too many requests are in flight) and `[host.NAME]` settings
//! with secrets: the run backs off instead of failing, and no planted secret reaches a run file.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::*;

/// `mcpeval run --config CONFIG --out OUT` from the repository root, with these variables set.
fn run(config: &Path, out: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(bin());
    cmd.args(["run", "--config", config.to_str().unwrap()])
        .args(["--out", out.to_str().unwrap(), "--no-cache"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("GITHUB_STEP_SUMMARY");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn a_throttling_provider_is_met_with_less_concurrency_not_failed_trials() {
    // The provider answers at most 2 requests at once and 429s the rest; the run starts 12.
    let server = spawn_listening(
        &[
            "sim-server",
            "--addr",
            "127.0.0.1:0",
            "--latency-ms",
            "40",
            "--max-in-flight",
            "2",
        ],
        false,
    );
    let dir = temp_dir();
    let config = dir.path().join("storm.toml");
    std::fs::write(
        &config,
        "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.5.0\"\nsuites = [\"tasks/demo\"]\n\
         hosts = [\"storm\"]\nseed = 42\ntrials = 3\nconcurrency = 12\n\
         # No trial-level retries: a request that ran out of attempts would show as an infra error.\n\
         retries = 0\n\n[host.storm]\nprovider = \"openai\"\nmodel = \"sim\"\nmax_attempts = 8\n",
    )
    .unwrap();
    let out_dir = dir.path().join("run");
    let out = run(
        &config,
        &out_dir,
        &[("OPENAI_BASE_URL", &format!("http://{}/v1", server.addr))],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let eps = episodes(&out_dir);
    assert_eq!(eps.len(), 18 * 2 * 3);
    let infra: Vec<_> = eps.iter().filter_map(|e| e.infra_error.as_ref()).collect();
    assert!(infra.is_empty(), "infra errors: {infra:?}");
    let retried: usize = eps.iter().map(|e| e.request_retries.len()).sum();
    let answered: u32 = eps.iter().map(|e| e.turns).sum();
    // The storm happened (a limit of 2 against 12 cannot pass unthrottled), every throttled
    // request is in some episode's record, and the host settled near the limit: far fewer
    // 429s than answers.
    assert!(retried > 0, "no request was throttled: {}", text(&out));
    assert!(
        eps.iter()
            .flat_map(|e| &e.request_retries)
            .all(|r| r.starts_with("HTTP 429")),
        "only 429s are expected"
    );
    assert!(
        (retried as f64) < 0.5 * answered as f64,
        "{retried} throttled requests for {answered} answers"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("host storm:") && stdout.contains("backed off"),
        "{}",
        text(&out)
    );
    eprintln!("{retried} throttled requests for {answered} answers");
}

#[test]
fn secrets_named_by_the_config_never_reach_the_run_directory() {
    let server = spawn_listening(&["sim-server", "--addr", "127.0.0.1:0"], false);
    let dir = temp_dir();
    let suite = dir.path().join("suite");
    std::fs::create_dir(&suite).unwrap();
    // The prompt carries a token that the config marks secret: the simulated model copies it
    // into a tool call's arguments, so it would land in every file without redaction.
    std::fs::write(
        suite.join("leak.yaml"),
        "- id: search-with-token\n  prompt: Search issues in project zephyr about tok-planted-7f3a9e\n  \
         set: capability\n  expect:\n    calls:\n      - tool: search_issues\n",
    )
    .unwrap();
    let config = dir.path().join("secrets.toml");
    std::fs::write(
        &config,
        format!(
            "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.5.0\"\nsuites = [\"{}\"]\n\
             hosts = [\"gateway\"]\ntrials = 2\nsecret_env = [\"PLANTED_SESSION_TOKEN\"]\n\n\
             [host.gateway]\nprovider = \"openai\"\nmodel = \"sim\"\n\
             base_url_env = \"GATEWAY_URL\"\napi_key_env = \"GATEWAY_KEY\"\ntemperature = 0.3\n\
             headers = {{ \"X-Gateway-Token\" = \"${{GATEWAY_TOKEN}}\", \"X-Literal\" = \"lit-planted-4c1d2b\" }}\n",
            suite.display()
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("run");
    let out = run(
        &config,
        &out_dir,
        &[
            ("GATEWAY_URL", &format!("http://{}/v1", server.addr)),
            ("GATEWAY_KEY", "sk-planted-key-91b2"),
            ("GATEWAY_TOKEN", "hdr-planted-5e6f70"),
            ("PLANTED_SESSION_TOKEN", "tok-planted-7f3a9e"),
        ],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let eps = episodes(&out_dir);
    assert_eq!(eps.len(), 4);
    assert!(eps.iter().all(|e| e.infra_error.is_none()), "{eps:?}");
    // The model got the prompt and called the tool with the token in its arguments…
    let transcripts = std::fs::read_to_string(out_dir.join("transcripts.jsonl")).unwrap();
    assert!(transcripts.contains("[REDACTED]"), "{transcripts}");
    // …and no file of the run holds a planted value, nor the output.
    let planted = [
        "tok-planted-7f3a9e",
        "sk-planted-key-91b2",
        "hdr-planted-5e6f70",
        "lit-planted-4c1d2b",
    ];
    for file in files_under(&out_dir) {
        let bytes = std::fs::read(&file).unwrap();
        let content = String::from_utf8_lossy(&bytes);
        for secret in planted {
            assert!(!content.contains(secret), "{secret} in {}", file.display());
        }
    }
    let printed = text(&out);
    for secret in planted {
        assert!(!printed.contains(secret), "{secret} printed");
    }
    // run.json keeps the settings and the header's variable name, not its value.
    let info = std::fs::read_to_string(out_dir.join("run.json")).unwrap();
    assert!(
        info.contains("${GATEWAY_TOKEN}") && info.contains("\"temperature\": 0.3"),
        "{info}"
    );
}
