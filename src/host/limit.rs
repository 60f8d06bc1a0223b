//! Rate limits of a host, enforced in front of its model: requests per minute (evenly spaced, so
//! a run settles at the limit instead of bursting into it) and tokens per minute (a sliding
//! window of what the last minute's answers used).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

use super::{Completion, CompletionRequest, HostError, Model};

const MINUTE: Duration = Duration::from_secs(60);

/// `rpm` / `tpm` of a `[host.NAME]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub requests_per_minute: Option<u32>,
    pub tokens_per_minute: Option<u64>,
}

impl Limits {
    pub fn is_unlimited(&self) -> bool {
        self.requests_per_minute.is_none() && self.tokens_per_minute.is_none()
    }
}

/// A model behind the host's rate limits.
pub struct RateLimited {
    inner: Arc<dyn Model>,
    limits: Limits,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The earliest moment the next request may start (requests per minute).
    next_start: Option<Instant>,
    /// (when, tokens) of the answers of the last minute (tokens per minute).
    window: VecDeque<(Instant, u64)>,
}

impl RateLimited {
    pub fn new(inner: Arc<dyn Model>, limits: Limits) -> Self {
        Self {
            inner,
            limits,
            state: Mutex::new(State::default()),
        }
    }

    /// Waits for this request's turn: a slot `60 s / rpm` after the previous one, and room in
    /// the last minute's token window.
    async fn admit(&self) {
        let start = {
            let mut state = self.state.lock().await;
            let now = Instant::now();
            let mut start = now;
            if let Some(rpm) = self.limits.requests_per_minute.filter(|r| *r > 0) {
                let gap = MINUTE / rpm;
                start = state.next_start.map_or(now, |next| next.max(now));
                state.next_start = Some(start + gap);
            }
            if let Some(tpm) = self.limits.tokens_per_minute {
                while state
                    .window
                    .front()
                    .is_some_and(|(t, _)| *t + MINUTE <= start)
                {
                    state.window.pop_front();
                }
                let mut used: u64 = state.window.iter().map(|(_, n)| n).sum();
                // Too many tokens in the last minute: wait until enough of them age out.
                let mut i = 0;
                while used >= tpm && i < state.window.len() {
                    let (t, n) = state.window[i];
                    start = start.max(t + MINUTE);
                    used -= n;
                    i += 1;
                }
            }
            start
        };
        tokio::time::sleep_until(start).await;
    }

    async fn record(&self, tokens: u64) {
        if self.limits.tokens_per_minute.is_some() {
            self.state
                .lock()
                .await
                .window
                .push_back((Instant::now(), tokens));
        }
    }
}

#[async_trait::async_trait]
impl Model for RateLimited {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn is_simulated(&self) -> bool {
        self.inner.is_simulated()
    }

    fn notes(&self) -> Vec<String> {
        self.inner.notes()
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, HostError> {
        self.admit().await;
        let answer = self.inner.complete(request).await;
        if let Ok(c) = &answer {
            self.record(c.usage.input_tokens + c.usage.output_tokens)
                .await;
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Usage;

    struct Fixed;

    #[async_trait::async_trait]
    impl Model for Fixed {
        fn id(&self) -> &str {
            "fixed"
        }
        async fn complete(&self, _: &CompletionRequest) -> Result<Completion, HostError> {
            Ok(Completion {
                content: Some("ok".into()),
                tool_calls: Vec::new(),
                usage: Usage {
                    input_tokens: 60,
                    output_tokens: 40,
                    ..Usage::default()
                },
                model: "fixed".into(),
                ..Default::default()
            })
        }
    }

    fn request() -> CompletionRequest {
        CompletionRequest {
            messages: Vec::new(),
            tools: Vec::new().into(),
            seed: 0,
            ..Default::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn requests_are_spaced_to_the_per_minute_limit() {
        let model = Arc::new(RateLimited::new(
            Arc::new(Fixed),
            Limits {
                requests_per_minute: Some(600),
                tokens_per_minute: None,
            },
        ));
        let begin = Instant::now();
        let calls: Vec<_> = (0..10)
            .map(|_| {
                let m = model.clone();
                tokio::spawn(async move { m.complete(&request()).await })
            })
            .collect();
        for c in calls {
            c.await.unwrap().unwrap();
        }
        // 600/min = one every 100 ms: the tenth starts 900 ms after the first.
        assert_eq!(begin.elapsed(), Duration::from_millis(900));
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_token_window_waits_for_a_minute_to_pass() {
        let model = RateLimited::new(
            Arc::new(Fixed),
            Limits {
                requests_per_minute: None,
                tokens_per_minute: Some(250),
            },
        );
        let begin = Instant::now();
        for _ in 0..3 {
            model.complete(&request()).await.unwrap();
        }
        assert_eq!(
            begin.elapsed(),
            Duration::ZERO,
            "300 tokens spent, 250 allowed"
        );
        model.complete(&request()).await.unwrap();
        assert_eq!(begin.elapsed(), MINUTE, "the fourth waits for the window");
    }
}
