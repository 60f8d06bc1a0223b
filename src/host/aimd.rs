//! Adaptive concurrency of a host: requests in flight are held under a limit that halves when the
//! provider answers 429 and grows back by one per window of successes (additive increase,
//! multiplicative decrease), so a run settles at what the provider accepts instead of hammering it.
//!
//! The limit applies to attempts, retries included: a request waiting out its backoff holds no
//! slot. One decrease per congestion window: a 429 to a request sent before the last decrease says
//! nothing new (it was sent when the limit was higher) and is not counted again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use tokio::sync::Notify;
use tokio::time::Instant;

/// The concurrency controller of one host, shared by its requests.
#[derive(Debug)]
pub struct Congestion {
    max: usize,
    state: Mutex<State>,
    freed: Notify,
    throttled: AtomicU64,
    decreases: AtomicU64,
}

#[derive(Debug)]
struct State {
    /// The current limit; fractional so that additive increase can add 1/limit per success.
    limit: f64,
    in_flight: usize,
    /// When the limit last went down.
    last_decrease: Option<Instant>,
    /// The lowest limit reached.
    lowest: f64,
}

/// How an attempt ended, as far as congestion goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Answered (successfully or with an error that is not about load).
    Answered,
    /// 429 (or Anthropic's 529 overloaded): the provider wants fewer requests.
    Throttled,
}

/// What the controller did over a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CongestionReport {
    pub max: usize,
    pub limit: f64,
    pub lowest: f64,
    pub throttled: u64,
    pub decreases: u64,
}

impl Congestion {
    /// Starts at `max` requests in flight (at least 1).
    pub fn new(max: usize) -> Self {
        let max = max.max(1);
        Self {
            max,
            state: Mutex::new(State {
                limit: max as f64,
                in_flight: 0,
                last_decrease: None,
                lowest: max as f64,
            }),
            freed: Notify::new(),
            throttled: AtomicU64::new(0),
            decreases: AtomicU64::new(0),
        }
    }

    /// Waits for a slot under the current limit.
    pub async fn acquire(&self) -> Slot<'_> {
        loop {
            let notified = self.freed.notified();
            tokio::pin!(notified);
            // Registered before checking, so a release between the check and the wait is seen.
            notified.as_mut().enable();
            {
                let mut state = self.lock();
                if (state.in_flight as f64) < state.limit.floor().max(1.0) {
                    state.in_flight += 1;
                    return Slot {
                        owner: self,
                        started: Instant::now(),
                        signal: Signal::Answered,
                    };
                }
            }
            notified.await;
        }
    }

    /// The current limit.
    pub fn limit(&self) -> f64 {
        self.lock().limit
    }

    pub fn report(&self) -> CongestionReport {
        let state = self.lock();
        CongestionReport {
            max: self.max,
            limit: state.limit,
            lowest: state.lowest,
            throttled: self.throttled.load(Ordering::Relaxed),
            decreases: self.decreases.load(Ordering::Relaxed),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn release(&self, started: Instant, signal: Signal) {
        let mut state = self.lock();
        state.in_flight = state.in_flight.saturating_sub(1);
        match signal {
            Signal::Throttled => {
                self.throttled.fetch_add(1, Ordering::Relaxed);
                let new_window = state.last_decrease.is_none_or(|at| started >= at);
                if new_window {
                    state.limit = (state.limit / 2.0).max(1.0);
                    state.lowest = state.lowest.min(state.limit);
                    state.last_decrease = Some(Instant::now());
                    self.decreases.fetch_add(1, Ordering::Relaxed);
                }
            }
            Signal::Answered => {
                state.limit = (state.limit + 1.0 / state.limit).min(self.max as f64);
            }
        }
        drop(state);
        self.freed.notify_waiters();
    }
}

/// One request's place under the limit; gives it back when dropped.
#[derive(Debug)]
pub struct Slot<'a> {
    owner: &'a Congestion,
    started: Instant,
    signal: Signal,
}

impl Slot<'_> {
    /// Records how the attempt ended (default: answered).
    pub fn finish(mut self, signal: Signal) {
        self.signal = signal;
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.owner.release(self.started, self.signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn throttling_halves_the_limit_once_per_window_and_successes_grow_it_back() {
        let c = Congestion::new(8);
        // Eight requests in flight, all throttled: only those sent after the first decrease
        // could lower it again, and none was.
        let slots: Vec<_> = futures::future::join_all((0..8).map(|_| c.acquire())).await;
        for slot in slots {
            slot.finish(Signal::Throttled);
        }
        assert_eq!(c.limit(), 4.0);
        assert_eq!(c.report().throttled, 8);
        assert_eq!(c.report().decreases, 1);
        // A request sent after the decrease and throttled halves it again.
        tokio::time::sleep(Duration::from_millis(2)).await;
        c.acquire().await.finish(Signal::Throttled);
        assert_eq!(c.limit(), 2.0);
        // Additive increase: + 1/limit per success, so one per window of `limit` successes.
        for _ in 0..2 {
            c.acquire().await.finish(Signal::Answered);
        }
        assert!((c.limit() - 2.9).abs() < 0.1, "{}", c.limit());
        for _ in 0..200 {
            c.acquire().await.finish(Signal::Answered);
        }
        assert_eq!(c.limit(), 8.0, "never above the maximum");
        assert_eq!(c.report().lowest, 2.0);
    }

    #[tokio::test]
    async fn the_limit_is_never_below_one() {
        let c = Congestion::new(2);
        for _ in 0..5 {
            tokio::time::sleep(Duration::from_millis(1)).await;
            c.acquire().await.finish(Signal::Throttled);
        }
        assert_eq!(c.limit(), 1.0);
        // And one request still gets through.
        c.acquire().await.finish(Signal::Answered);
    }

    #[tokio::test]
    async fn no_more_requests_in_flight_than_the_limit() {
        let c = Arc::new(Congestion::new(3));
        let peak = Arc::new(AtomicU64::new(0));
        let now = Arc::new(AtomicU64::new(0));
        let tasks: Vec<_> = (0..30)
            .map(|_| {
                let (c, peak, now) = (c.clone(), peak.clone(), now.clone());
                tokio::spawn(async move {
                    let slot = c.acquire().await;
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(n, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    now.fetch_sub(1, Ordering::SeqCst);
                    slot.finish(Signal::Answered);
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(peak.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_waiting_request_starts_when_a_slot_is_freed() {
        let c = Arc::new(Congestion::new(1));
        let first = c.acquire().await;
        let c2 = c.clone();
        let waiter = tokio::spawn(async move {
            c2.acquire().await.finish(Signal::Answered);
        });
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(!waiter.is_finished());
        drop(first);
        tokio::time::timeout(Duration::from_secs(2), waiter)
            .await
            .expect("the waiter got the freed slot")
            .unwrap();
    }
}
