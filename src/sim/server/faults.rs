//! Fault injection for `mcpeval sim-server`: error statuses, hangs and malformed bodies, decided
//! per request by a seeded RNG of their own so that the model's answers are never touched.
//!
//! Which fault a request gets depends on the fault seed, the request body and how often that
//! body arrived before, not on arrival order: a run against a faulty server is reproducible at
//! any concurrency, and a retried request (the same body again) gets a fresh draw.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::InvalidSetting;

/// Statuses a failure may have.
pub const FAULT_STATUSES: [u16; 5] = [429, 500, 502, 503, 504];

/// What faults a sim-server injects (all off by default).
#[derive(Debug, Clone, PartialEq)]
pub struct FaultConfig {
    /// Share of requests that fail, in [0, 1].
    pub fail_rate: f64,
    /// The status of a failure, drawn uniformly from this list (repeat one to weight it).
    pub statuses: Vec<u16>,
    /// Sent as `Retry-After` (seconds) with 429 and 503 failures.
    pub retry_after: Option<u64>,
    /// When set, hanging this long and then answering 503 is one more failure mode.
    pub hang: Option<Duration>,
    /// Share of requests answered with a malformed body, in [0, 1 - fail_rate].
    pub garbage_rate: f64,
    /// Seed of the fault RNG.
    pub seed: u64,
    /// A provider's concurrency limit: a request that arrives while this many are being
    /// answered gets 429 at once (with `retry_after` when set).
    pub max_in_flight: Option<usize>,
    /// Share of requests answered by a model that rambles: an answer with no end, streamed one
    /// token per `token_interval`, that stops only at the request's output cap (or never).
    pub ramble_rate: f64,
    /// Share of requests that stall before the first byte: never answered.
    pub stall_rate: f64,
    /// The pace of a rambling answer.
    pub token_interval: Duration,
}

impl Default for FaultConfig {
    fn default() -> Self {
        Self {
            fail_rate: 0.0,
            statuses: vec![503],
            retry_after: None,
            hang: None,
            garbage_rate: 0.0,
            seed: 0,
            max_in_flight: None,
            ramble_rate: 0.0,
            stall_rate: 0.0,
            token_interval: Duration::from_millis(10),
        }
    }
}

impl FaultConfig {
    /// `Err` says what is wrong (for a usage error).
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        for (name, rate) in [
            ("--fail-rate", self.fail_rate),
            ("--garbage-rate", self.garbage_rate),
            ("--ramble-rate", self.ramble_rate),
            ("--stall-rate", self.stall_rate),
        ] {
            if !(0.0..=1.0).contains(&rate) {
                return Err(InvalidSetting(format!(
                    "{name} must be between 0 and 1, got {rate}"
                )));
            }
        }
        let total = self.fail_rate + self.garbage_rate + self.ramble_rate + self.stall_rate;
        if total > 1.0 + 1e-12 {
            return Err(InvalidSetting(format!(
                "--fail-rate + --garbage-rate + --ramble-rate + --stall-rate must be at most 1, \
                 got {total}"
            )));
        }
        if self.token_interval.is_zero() {
            return Err("--token-ms must be at least 1".into());
        }
        if self.max_in_flight == Some(0) {
            return Err("--max-in-flight must be at least 1".into());
        }
        if self.statuses.is_empty() {
            return Err("at least one --status is needed".into());
        }
        if let Some(bad) = self.statuses.iter().find(|s| !FAULT_STATUSES.contains(s)) {
            return Err(InvalidSetting(format!(
                "--status {bad} is not one of 429, 500, 502, 503, 504"
            )));
        }
        Ok(())
    }

    /// True when no fault can happen.
    pub fn is_off(&self) -> bool {
        self.fail_rate <= 0.0
            && self.garbage_rate <= 0.0
            && self.ramble_rate <= 0.0
            && self.stall_rate <= 0.0
    }

    /// The `Retry-After` value for a failure with this status, if any.
    pub fn retry_after_for(&self, status: u16) -> Option<u64> {
        self.retry_after.filter(|_| matches!(status, 429 | 503))
    }
}

/// What happens to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// Answer at once with this status.
    Status(u16),
    /// Wait `hang`, then answer 503.
    Hang,
    /// A 200 whose body is not JSON (a completion cut in the middle).
    InvalidJson,
    /// A 200 completion whose tool-call `arguments` are not JSON (the model's error). A completion
    /// without tool calls gets `InvalidJson` instead.
    BadArguments,
    /// An answer with no end, stopped only by the request's output cap.
    Ramble,
    /// No answer at all, not even the status line.
    Stall,
}

/// Decides faults; one per server, shared by its requests.
#[derive(Debug)]
pub struct Faults {
    config: FaultConfig,
    /// How often each request body (by hash) has been seen.
    seen: Mutex<HashMap<u64, u32>>,
    /// Requests being answered now (for `max_in_flight`).
    in_flight: AtomicUsize,
}

/// A request counted as in flight until dropped.
#[derive(Debug)]
pub struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Faults {
    pub fn new(config: FaultConfig) -> Self {
        Self {
            config,
            seen: Mutex::new(HashMap::new()),
            in_flight: AtomicUsize::new(0),
        }
    }

    /// Admits a request under `max_in_flight`, or `None` when that many are in flight already
    /// (the request is then to be answered 429).
    pub fn enter(&self) -> Option<InFlight<'_>> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        let guard = InFlight(&self.in_flight);
        match self.config.max_in_flight {
            Some(max) if now > max => None,
            _ => Some(guard),
        }
    }

    pub fn config(&self) -> &FaultConfig {
        &self.config
    }

    /// The fault for a request with this body, or `None` for a normal answer.
    pub fn decide(&self, body: &[u8]) -> Option<Fault> {
        if self.config.is_off() {
            return None;
        }
        let hash = xxhash_rust::xxh3::xxh3_64(body);
        let occurrence = {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            let count = seen.entry(hash).or_insert(0);
            *count += 1;
            *count
        };
        let mut key = [0u8; 12];
        key[..8].copy_from_slice(&hash.to_le_bytes());
        key[8..].copy_from_slice(&occurrence.to_le_bytes());
        let stream = xxhash_rust::xxh3::xxh3_64_with_seed(&key, self.config.seed);
        self.draw(&mut ChaCha8Rng::seed_from_u64(stream))
    }

    fn draw(&self, rng: &mut impl Rng) -> Option<Fault> {
        let c = &self.config;
        let u: f64 = rng.random();
        if u < c.fail_rate {
            let modes = c.statuses.len() + usize::from(c.hang.is_some());
            let pick = rng.random_range(0..modes);
            return Some(match c.statuses.get(pick) {
                Some(status) => Fault::Status(*status),
                None => Fault::Hang,
            });
        }
        if u < c.fail_rate + c.garbage_rate {
            // The two malformed forms alternate at random, half each.
            return Some(if rng.random_bool(0.5) {
                Fault::InvalidJson
            } else {
                Fault::BadArguments
            });
        }
        if u < c.fail_rate + c.garbage_rate + c.ramble_rate {
            return Some(Fault::Ramble);
        }
        if u < c.fail_rate + c.garbage_rate + c.ramble_rate + c.stall_rate {
            return Some(Fault::Stall);
        }
        None
    }
}

/// Makes a valid arguments text invalid JSON, the way a cut-off model output is: the last
/// character goes (`{"city":"Paris"}` becomes `{"city":"Paris"`).
pub fn break_arguments(arguments: &str) -> String {
    let mut broken = arguments.trim_end().to_owned();
    broken.pop();
    if serde_json::from_str::<serde_json::Value>(&broken).is_ok() || broken.is_empty() {
        broken.push_str("{\"");
    }
    broken
}

/// A body cut in the middle: starts like JSON, never parses.
pub fn cut_body(body: &str) -> String {
    let mut cut = body.len() / 2;
    while !body.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut text = body[..cut].to_owned();
    if serde_json::from_str::<serde_json::Value>(&text).is_ok() || text.is_empty() {
        text.push_str("{\"");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn faults(fail: f64, garbage: f64) -> Faults {
        Faults::new(FaultConfig {
            fail_rate: fail,
            garbage_rate: garbage,
            statuses: vec![429, 500, 503],
            hang: Some(Duration::from_millis(5)),
            seed: 11,
            ..FaultConfig::default()
        })
    }

    #[test]
    fn shares_follow_the_rates_and_every_mode_occurs() {
        let f = faults(0.3, 0.1);
        let mut counts: HashMap<Option<Fault>, usize> = HashMap::new();
        let n = 20_000;
        for i in 0..n {
            *counts
                .entry(f.decide(format!("request {i}").as_bytes()))
                .or_default() += 1;
        }
        let share = |pred: &dyn Fn(&Fault) -> bool| {
            counts
                .iter()
                .filter(|(k, _)| k.as_ref().is_some_and(pred))
                .map(|(_, v)| *v)
                .sum::<usize>() as f64
                / n as f64
        };
        let failing = share(&|k| matches!(k, Fault::Status(_) | Fault::Hang));
        let garbage = share(&|k| matches!(k, Fault::InvalidJson | Fault::BadArguments));
        assert!((failing - 0.3).abs() < 0.015, "{failing}");
        assert!((garbage - 0.1).abs() < 0.01, "{garbage}");
        for mode in [
            Fault::Status(429),
            Fault::Status(500),
            Fault::Status(503),
            Fault::Hang,
            Fault::InvalidJson,
            Fault::BadArguments,
        ] {
            let got = counts.get(&Some(mode)).copied().unwrap_or(0) as f64 / n as f64;
            let want = if matches!(mode, Fault::InvalidJson | Fault::BadArguments) {
                0.05
            } else {
                0.075
            };
            assert!((got - want).abs() < 0.012, "{mode:?}: {got}");
        }
    }

    #[test]
    fn decisions_depend_on_seed_body_and_repetition_not_on_order() {
        let bodies: Vec<String> = (0..200).map(|i| format!("body {i}")).collect();
        let (a, b) = (faults(0.5, 0.2), faults(0.5, 0.2));
        let forward: Vec<_> = bodies.iter().map(|x| a.decide(x.as_bytes())).collect();
        let mut backward: Vec<_> = bodies
            .iter()
            .rev()
            .map(|x| b.decide(x.as_bytes()))
            .collect();
        backward.reverse();
        assert_eq!(forward, backward);
        // The same body again gets a fresh draw (a retry is not doomed to fail again) ...
        let again: Vec<_> = bodies.iter().map(|x| a.decide(x.as_bytes())).collect();
        assert_ne!(forward, again);
        // ... and another seed another pattern.
        let other = Faults::new(FaultConfig {
            seed: 12,
            ..a.config().clone()
        });
        let reseeded: Vec<_> = bodies.iter().map(|x| other.decide(x.as_bytes())).collect();
        assert_ne!(forward, reseeded);
    }

    #[test]
    fn off_and_validation() {
        let off = Faults::new(FaultConfig::default());
        assert!((0..100).all(|i| off.decide(&[i]).is_none()));
        assert!(FaultConfig::default().validate().is_ok());
        let bad = |c: FaultConfig| c.validate().unwrap_err().0;
        assert!(bad(FaultConfig {
            fail_rate: 1.5,
            ..FaultConfig::default()
        })
        .contains("--fail-rate"));
        assert!(bad(FaultConfig {
            fail_rate: 0.7,
            garbage_rate: 0.5,
            ..FaultConfig::default()
        })
        .contains("at most 1"));
        assert!(bad(FaultConfig {
            statuses: vec![404],
            ..FaultConfig::default()
        })
        .contains("404"));
        let with_wait = FaultConfig {
            retry_after: Some(2),
            ..FaultConfig::default()
        };
        assert_eq!(with_wait.retry_after_for(429), Some(2));
        assert_eq!(with_wait.retry_after_for(503), Some(2));
        assert_eq!(with_wait.retry_after_for(500), None);
    }

    #[test]
    fn broken_texts_never_parse() {
        for args in ["{\"city\":\"Paris\"}", "{}", "[]", "1", "\"x\"", ""] {
            let broken = break_arguments(args);
            assert!(
                serde_json::from_str::<serde_json::Value>(&broken).is_err(),
                "{broken}"
            );
        }
        assert_eq!(
            break_arguments("{\"city\":\"Paris\"}"),
            "{\"city\":\"Paris\""
        );
        for body in ["{\"a\":1}", "{}", "", "{\"text\":\"ééé\"}"] {
            let cut = cut_body(body);
            assert!(
                serde_json::from_str::<serde_json::Value>(&cut).is_err(),
                "{cut}"
            );
        }
    }
}
