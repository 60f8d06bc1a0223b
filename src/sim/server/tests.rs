//! Tests of sim-server's faults over HTTP: statuses, `Retry-After`, hangs, malformed bodies, and
//! answers that stay those of the fault-free model.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{spawn_with, FaultConfig, ServeOptions};
use crate::config::SimConfig;

fn body(seed: u64) -> Value {
    json!({"model": "sim", "seed": seed, "messages": [
        {"role": "user", "content": "Search notes about rust"}],
        "tools": [{"type": "function", "function": {"name": "notes_search",
            "description": "Search notes by keywords.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}]})
}

async fn faulty(faults: FaultConfig) -> (String, super::SimServerHandle) {
    let options = ServeOptions {
        stop: Default::default(),
        relabel_stream: false,
        refuse_stream: false,
        latency: Duration::ZERO,
        faults,
        ..ServeOptions::default()
    };
    let (addr, handle) = spawn_with(
        "127.0.0.1:0".parse().unwrap(),
        SimConfig::default(),
        options,
    )
    .await
    .unwrap();
    (format!("http://{addr}/v1/chat/completions"), handle)
}

/// Sends each body once and sorts the answers: `Ok(json)` or `Err(what went wrong)`.
async fn send_all(url: &str, seeds: std::ops::Range<u64>) -> Vec<Result<Value, String>> {
    let http = crate::net::client_builder().build().unwrap();
    let mut out = Vec::new();
    for seed in seeds {
        let response = http.post(url).json(&body(seed)).send().await.unwrap();
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_owned());
        let text = response.text().await.unwrap();
        out.push(match (status, serde_json::from_str::<Value>(&text)) {
            (200, Ok(v)) => Ok(v),
            (200, Err(_)) => Err("invalid json".into()),
            (s, _) => Err(format!("{s} retry-after={retry_after:?}")),
        });
    }
    out
}

#[tokio::test]
async fn faults_change_which_answers_arrive_never_what_they_say() {
    let (clean_url, clean) = faulty(FaultConfig::default()).await;
    let (url, server) = faulty(FaultConfig {
        fail_rate: 0.3,
        garbage_rate: 0.2,
        statuses: vec![429, 500, 503],
        retry_after: Some(1),
        seed: 5,
        ..FaultConfig::default()
    })
    .await;
    let expected = send_all(&clean_url, 0..150).await;
    let got = send_all(&url, 0..150).await;
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for (want, got) in expected.iter().zip(&got) {
        let want = want.as_ref().unwrap();
        let kind = match got {
            Ok(v) => {
                let args = v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
                    .as_str()
                    .unwrap();
                if serde_json::from_str::<Value>(args).is_ok() {
                    // Everything but the timestamp is the fault-free answer.
                    let strip = |v: &Value| {
                        let mut v = v.clone();
                        v["created"] = Value::Null;
                        v
                    };
                    assert_eq!(strip(v), strip(want));
                    "ok".to_owned()
                } else {
                    let wanted = want["choices"][0]["message"]["tool_calls"][0]["function"]
                        ["arguments"]
                        .as_str()
                        .unwrap();
                    assert!(wanted.starts_with(args), "{args} vs {wanted}");
                    "bad arguments".to_owned()
                }
            }
            Err(e) => e.clone(),
        };
        *kinds.entry(kind).or_default() += 1;
    }
    let seen: Vec<&str> = kinds.keys().map(String::as_str).collect();
    assert_eq!(
        seen,
        [
            "429 retry-after=Some(\"1\")",
            "500 retry-after=None",
            "503 retry-after=Some(\"1\")",
            "bad arguments",
            "invalid json",
            "ok"
        ],
        "{kinds:?}"
    );
    assert!((60..=100).contains(&kinds["ok"]), "{kinds:?}");
    server.stop().await.unwrap();
    clean.stop().await.unwrap();
}

#[tokio::test]
async fn a_hang_waits_then_answers_503() {
    let (url, server) = faulty(FaultConfig {
        fail_rate: 1.0,
        statuses: vec![500],
        hang: Some(Duration::from_millis(300)),
        ..FaultConfig::default()
    })
    .await;
    let http = crate::net::client_builder().build().unwrap();
    let mut hung = 0;
    for seed in 0..8 {
        let started = Instant::now();
        let status = http
            .post(&url)
            .json(&body(seed))
            .send()
            .await
            .unwrap()
            .status();
        if status == 503 {
            assert!(started.elapsed() >= Duration::from_millis(300));
            hung += 1;
        } else {
            assert_eq!(status, 500);
            assert!(started.elapsed() < Duration::from_millis(300));
        }
    }
    assert!((1..8).contains(&hung), "{hung}");
    server.stop().await.unwrap();
}
