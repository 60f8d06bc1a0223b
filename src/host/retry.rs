//! Request-level retries of model calls: which failures deserve another attempt, and how long to
//! wait (exponential backoff with full jitter, or the server's `Retry-After` up to a cap).
//!
//! This is the only retry layer under a provider: the openai host sends its requests itself (see
//! `openai.rs`) so that async-openai's built-in retries do not multiply these. Above it, the
//! runner retries a whole trial after an infrastructure error; at most
//! `max_attempts × (retries + 1)` requests are sent for one model turn.

use std::future::Future;
use std::time::{Duration, SystemTime};

use rand::Rng;

/// How a provider retries one model request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 = never retry).
    pub max_attempts: u32,
    /// The backoff ceiling before the first retry; it doubles with each retry after that.
    pub base_delay: Duration,
    /// No wait is longer than this, a `Retry-After` included.
    pub max_delay: Duration,
    /// How long one attempt may take, connecting to reading the whole body. A non-streamed
    /// attempt that takes longer is a timeout (and is retried); a streamed answer still going
    /// then ends there, as the model's outcome (`timed_out`), and is not retried.
    pub request_timeout: Duration,
    /// How long connecting may take (a failure to connect is retried).
    pub connect_timeout: Duration,
    /// How long a streamed attempt may wait for the first byte of the answer: a provider that
    /// sends nothing by then is not answering (retried). At most `request_timeout`.
    pub first_byte_timeout: Duration,
}

impl Default for RetryPolicy {
    /// 4 attempts, backoff ceilings 0.25 s, 0.5 s, 1 s, waits at most 30 s, 120 s per attempt,
    /// 10 s to connect, 60 s to the first byte of a streamed answer.
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(30),
            request_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(60),
        }
    }
}

/// How one attempt ended.
#[derive(Debug)]
pub enum Attempt<T, E> {
    Done(T),
    /// A transient failure: worth another attempt, after `retry_after` if the server said so.
    Retryable {
        error: E,
        retry_after: Option<Duration>,
    },
    /// A failure that another attempt would repeat (a 400, a 401, an unparsable answer).
    Fatal(E),
}

/// Every attempt failed, or one failed for good. `errors` holds each attempt's error, oldest
/// first; the last one decided.
#[derive(Debug)]
pub struct Exhausted<E> {
    pub errors: Vec<E>,
}

impl<E> Exhausted<E> {
    /// The error of the last attempt.
    pub fn last(&self) -> &E {
        self.errors.last().expect("at least one attempt")
    }
}

impl RetryPolicy {
    /// A policy that sends each request once, with the given per-attempt timeout.
    pub fn once(request_timeout: Duration) -> Self {
        Self {
            max_attempts: 1,
            request_timeout,
            ..Self::default()
        }
    }

    /// The most a wait before retry number `retry` (1 = the first retry) may last without a
    /// `Retry-After`: `base_delay × 2^(retry-1)`, at most `max_delay`.
    pub fn ceiling(&self, retry: u32) -> Duration {
        let doublings = retry.saturating_sub(1).min(30);
        self.base_delay
            .saturating_mul(1u32 << doublings)
            .min(self.max_delay)
    }

    /// The wait before retry number `retry`: the server's `Retry-After` when it sent one (capped
    /// at `max_delay`), otherwise a uniform draw from `[0, ceiling(retry)]` ("full jitter",
    /// which spreads out clients that failed together; Brooker, "Exponential Backoff And
    /// Jitter", AWS Architecture Blog, 2015).
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>, rng: &mut impl Rng) -> Duration {
        match retry_after {
            Some(wait) => wait.min(self.max_delay),
            None => {
                let ceiling = self.ceiling(retry).as_nanos() as u64;
                Duration::from_nanos(rng.random_range(0..=ceiling))
            }
        }
    }

    /// Runs `attempt` (given the 1-based attempt number) until it is done, fails for good, or
    /// `max_attempts` have been made, sleeping between attempts as `delay` says.
    pub async fn run<T, E, F, Fut>(&self, attempt: F) -> Result<T, Exhausted<E>>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Attempt<T, E>>,
    {
        self.run_keeping(attempt).await.map(|(value, _)| value)
    }

    /// As [`run`](Self::run), and on success also hands back the errors of the attempts that
    /// failed before it, oldest first (every attempt is kept in the episode's record).
    pub async fn run_keeping<T, E, F, Fut>(
        &self,
        mut attempt: F,
    ) -> Result<(T, Vec<E>), Exhausted<E>>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Attempt<T, E>>,
    {
        let mut errors = Vec::new();
        for number in 1..=self.max_attempts.max(1) {
            match attempt(number).await {
                Attempt::Done(value) => return Ok((value, errors)),
                Attempt::Fatal(error) => {
                    errors.push(error);
                    break;
                }
                Attempt::Retryable { error, retry_after } => {
                    errors.push(error);
                    if number < self.max_attempts {
                        let wait = self.delay(number, retry_after, &mut rand::rng());
                        if !wait.is_zero() {
                            tokio::time::sleep(wait).await;
                        }
                    }
                }
            }
        }
        Err(Exhausted { errors })
    }
}

/// Statuses worth another attempt: rate limited (429), and the server errors that are usually
/// passing (500, 502, 503, 504, and Anthropic's 529 overloaded). Other 4xx say the request itself is wrong, and other 5xx
/// (501, 505, …) will not change either.
pub fn retryable_status(status: u16) -> bool {
    matches!(status, 429 | 500 | 502 | 503 | 504 | 529)
}

/// Reads a `Retry-After` value (RFC 9110, section 10.2.3): delay seconds, or an HTTP date in any
/// of its three formats (a date in the past means now). Fractional seconds, which some servers
/// send, are accepted; anything else is `None`.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if value.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
        let seconds: f64 = value.parse().ok()?;
        return (seconds.is_finite() && seconds >= 0.0)
            .then(|| Duration::try_from_secs_f64(seconds.min(1e9)).ok())
            .flatten();
    }
    let at = http_date(value)?;
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(at).ok()?);
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Seconds since the epoch of an HTTP date: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the
/// obsolete RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) or asctime (`Sun Nov  6 08:49:37
/// 1994`), all of which a recipient must accept.
fn http_date(value: &str) -> Option<i64> {
    use chrono::{DateTime, NaiveDateTime};
    if let Ok(date) = DateTime::parse_from_rfc2822(value) {
        return Some(date.timestamp());
    }
    let asctime = value.split_whitespace().collect::<Vec<_>>().join(" ");
    [
        (value, "%A, %d-%b-%y %H:%M:%S GMT"),
        (asctime.as_str(), "%a %b %d %H:%M:%S %Y"),
    ]
    .iter()
    .find_map(|(text, format)| NaiveDateTime::parse_from_str(text, format).ok())
    .map(|naive| naive.and_utc().timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn fast(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
            request_timeout: Duration::from_secs(1),
            ..RetryPolicy::default()
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_full_jitter() {
        let policy = RetryPolicy::default();
        let ceilings: Vec<u128> = (1..=9).map(|r| policy.ceiling(r).as_millis()).collect();
        assert_eq!(
            ceilings,
            [250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]
        );
        assert_eq!(policy.ceiling(u32::MAX), policy.max_delay);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let draws: Vec<Duration> = (0..2000).map(|_| policy.delay(3, None, &mut rng)).collect();
        assert!(draws.iter().all(|d| *d <= Duration::from_secs(1)));
        // Full jitter: the whole range is used, not just its top.
        assert!(draws.iter().any(|d| *d < Duration::from_millis(100)));
        assert!(draws.iter().any(|d| *d > Duration::from_millis(900)));
        let mean = draws.iter().sum::<Duration>() / draws.len() as u32;
        assert!((450..550).contains(&mean.as_millis()), "{mean:?}");
    }

    #[test]
    fn retry_after_wins_over_backoff_but_not_over_the_cap() {
        let policy = RetryPolicy::default();
        let mut rng = rand::rng();
        let wait = |s| policy.delay(1, Some(Duration::from_secs(s)), &mut rand::rng());
        assert_eq!(wait(0), Duration::ZERO);
        assert_eq!(wait(7), Duration::from_secs(7));
        assert_eq!(wait(3600), Duration::from_secs(30));
        assert!(policy.delay(1, None, &mut rng) <= Duration::from_millis(250));
    }

    #[test]
    fn retry_after_reads_seconds_and_all_three_date_formats() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // 1994-11-06 08:49:37
        let read = |v: &str| parse_retry_after(v, now);
        assert_eq!(read("0"), Some(Duration::ZERO));
        assert_eq!(read(" 120 "), Some(Duration::from_secs(120)));
        assert_eq!(read("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(
            read("Sun, 06 Nov 1994 08:50:07 GMT"),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            read("Sunday, 06-Nov-94 08:49:47 GMT"),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            read("Sun Nov  6 08:49:42 1994"),
            Some(Duration::from_secs(5))
        );
        // A date in the past: retry now.
        assert_eq!(read("Sat, 05 Nov 1994 08:49:37 GMT"), Some(Duration::ZERO));
        for bad in ["", "-1", "soon", "1e400", "Sun, 99 Nov 1994 08:49:37 GMT"] {
            assert_eq!(read(bad), None, "{bad}");
        }
    }

    #[test]
    fn only_rate_limits_and_passing_server_errors_are_retryable() {
        let retryable: Vec<u16> = (400..600).filter(|s| retryable_status(*s)).collect();
        assert_eq!(retryable, [429, 500, 502, 503, 504, 529]);
    }

    #[tokio::test]
    async fn run_stops_at_success_at_a_fatal_error_or_after_max_attempts() {
        let calls = AtomicU32::new(0);
        let flaky = |n: u32| {
            calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if n < 3 {
                    Attempt::Retryable {
                        error: format!("503 #{n}"),
                        retry_after: None,
                    }
                } else {
                    Attempt::Done(n)
                }
            }
        };
        assert_eq!(fast(4).run(flaky).await.unwrap(), 3);
        assert_eq!(calls.swap(0, Ordering::SeqCst), 3);

        let always = |n: u32| async move {
            Attempt::<(), _>::Retryable {
                error: format!("503 #{n}"),
                retry_after: Some(Duration::ZERO),
            }
        };
        let failed = fast(3).run(always).await.unwrap_err();
        assert_eq!(failed.errors, ["503 #1", "503 #2", "503 #3"]);
        assert_eq!(failed.last(), "503 #3");

        let fatal = |n: u32| {
            calls.fetch_add(1, Ordering::SeqCst);
            async move { Attempt::<(), _>::Fatal(format!("400 #{n}")) }
        };
        assert_eq!(fast(4).run(fatal).await.unwrap_err().errors, ["400 #1"]);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_retry_after_of_one_second_is_waited_for() {
        let policy = RetryPolicy {
            max_delay: Duration::from_secs(5),
            ..fast(2)
        };
        let started = std::time::Instant::now();
        let result = policy
            .run(|n| async move {
                if n == 1 {
                    Attempt::Retryable {
                        error: (),
                        retry_after: Some(Duration::from_secs(1)),
                    }
                } else {
                    Attempt::Done(())
                }
            })
            .await;
        assert!(result.is_ok());
        assert!(started.elapsed() >= Duration::from_secs(1));
    }
}
