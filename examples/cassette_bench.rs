//! The replay matcher's time per call (`scripts/bench` section 10): a cassette of realistic
//! size (40 tools, 2,000 recorded calls with answers of about 1.5 KB, one in ten with three
//! answers) answers 10,000 calls in sessions of 20, nine in ten recorded and one in ten not
//! (policy `nearest`, the slowest: it scores every recorded call of the tool). Each call's time
//! includes building its request from the arguments as a server receives them.

use std::time::{Duration, Instant};

use mcpeval::cassette::{
    Answer, Cassette, Entry, ListKind, Matcher, Request, ServerFacts, Unmatched,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};

const TOOLS: usize = 40;
const RECORDED: usize = 2_000;
const CALLS: usize = 10_000;
const SESSION: usize = 20;

fn arguments(rng: &mut ChaCha8Rng, i: usize) -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("id".into(), json!(i));
    args.insert(
        "project".into(),
        json!(["apollo", "zephyr", "hermes"][i % 3]),
    );
    args.insert("query".into(), json!(format!("words for call {i}")));
    if rng.random_bool(0.5) {
        args.insert(
            "filter".into(),
            json!({"status": "open", "labels": ["a", "b"], "limit": 20}),
        );
    }
    args
}

fn answer(i: usize, n: usize) -> Answer {
    let issues: Vec<Value> = (0..8)
        .map(|k| {
            json!({"id": i * 10 + k, "title": format!("Issue {k} of call {i}, answer {n}"),
            "status": "open", "priority": "high", "assignee": "maria"})
        })
        .collect();
    let structured = json!({ "issues": issues });
    Answer::Result(json!({
        "content": [{"type": "text", "text": structured.to_string()}],
        "structuredContent": structured,
        "isError": false,
    }))
}

/// A recorded call: the tool's name and its arguments.
type Call = (String, Map<String, Value>);

fn cassette(rng: &mut ChaCha8Rng) -> (Cassette, Vec<Call>) {
    let mut cassette = Cassette::new(ServerFacts::default(), "2026-01-01T00:00:00Z".into());
    let tools: Vec<Value> = (0..TOOLS)
        .map(|t| {
            json!({"name": format!("tool_{t:02}"), "description": "A tool.",
            "inputSchema": {"type": "object"}})
        })
        .collect();
    cassette.lists.insert(ListKind::Tools, tools);
    let mut calls = Vec::new();
    for i in 0..RECORDED {
        let name = format!("tool_{:02}", i % TOOLS);
        let args = arguments(rng, i);
        let answers = if i % 10 == 0 { 3 } else { 1 };
        cassette.entries.push(Entry {
            request: Request::tool(&name, Some(args.clone())),
            answers: (0..answers).map(|n| answer(i, n)).collect(),
        });
        calls.push((name, args));
    }
    cassette.normalize();
    (cassette, calls)
}

/// The arguments as another client might send them: the same keys in another order.
fn shuffled(rng: &mut ChaCha8Rng, args: &Map<String, Value>) -> Map<String, Value> {
    let mut pairs: Vec<(&String, &Value)> = args.iter().collect();
    for i in (1..pairs.len()).rev() {
        pairs.swap(i, rng.random_range(0..=i));
    }
    pairs
        .into_iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (cassette, calls) = cassette(&mut rng);
    let text = cassette.to_jsonl();
    let started = Instant::now();
    let read = Cassette::parse(&text, "bench.cassette.jsonl").expect("the cassette reads back");
    let parse = started.elapsed();
    let started = Instant::now();
    let matcher = Matcher::new(read, Unmatched::Nearest);
    let index = started.elapsed();
    let mut times = Vec::with_capacity(CALLS);
    let (mut recorded, mut unmatched) = (0, 0);
    let mut session = matcher.session();
    for n in 0..CALLS {
        if n % SESSION == 0 {
            unmatched += session.unmatched();
            session = matcher.session();
        }
        let (name, args) = &calls[rng.random_range(0..calls.len())];
        let mut args = shuffled(&mut rng, args);
        if rng.random_bool(0.1) {
            args.insert("id".into(), json!(RECORDED + n));
        } else {
            recorded += 1;
        }
        let started = Instant::now();
        let request = Request::tool(name, Some(args));
        let reply = session.answer(&request);
        times.push(started.elapsed());
        std::hint::black_box(reply);
    }
    unmatched += session.unmatched();
    times.sort();
    println!(
        "cassette: {} requests, {} answers, {:.1} MB; read in {:.0} ms, indexed in {:.1} ms",
        matcher.cassette().entries.len(),
        matcher.cassette().answers(),
        text.len() as f64 / 1e6,
        parse.as_secs_f64() * 1e3,
        index.as_secs_f64() * 1e3
    );
    println!(
        "{CALLS} calls ({recorded} recorded, {unmatched} unmatched answered by `nearest`), per \
         call: median {:.1} µs, p99 {:.1} µs, max {:.1} µs (goal: median < 100 µs, p99 < 1 ms)",
        percentile(&times, 0.5).as_secs_f64() * 1e6,
        percentile(&times, 0.99).as_secs_f64() * 1e6,
        times.last().copied().unwrap_or_default().as_secs_f64() * 1e6
    );
}
