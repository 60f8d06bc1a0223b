//! A circuit breaker per host: when a host's requests fail for the same lasting reason several
//! times in a row (nothing listening, a name that does not resolve, a key refused, a quota used
//! up), retrying every remaining trial only burns time. The breaker then opens for good: every
//! later request of the host fails at once without being sent, and the runner starts no more of
//! its trials. Transient failures (429, 5xx, timeouts) are not lasting reasons: they keep the
//! retries and the adaptive concurrency, and they reset the count, as any answer does.

use std::sync::Mutex;

/// Requests in a row that must fail for the same lasting reason before the breaker opens.
pub const DEFAULT_BREAKER_AFTER: u32 = 10;

/// A failure that another request would repeat until someone fixes something.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lasting {
    /// Nothing listens at the endpoint's address.
    ConnectionRefused,
    /// The endpoint's host name does not resolve.
    Dns,
    /// The TLS handshake fails (a certificate, a plain-HTTP port).
    Tls,
    /// The provider refuses the key or the request's permissions (401, 403).
    Unauthorized(u16),
    /// The account's quota or credit is used up.
    QuotaExhausted,
}

impl std::fmt::Display for Lasting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ConnectionRefused => f.write_str("connection refused"),
            Self::Dns => f.write_str("the host name does not resolve (DNS)"),
            Self::Tls => f.write_str("the TLS handshake fails"),
            Self::Unauthorized(status) => write!(f, "HTTP {status}: the key is refused"),
            Self::QuotaExhausted => f.write_str("the quota is exhausted"),
        }
    }
}

/// Why a breaker opened: the lasting reason, where, and after how many requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    pub reason: Lasting,
    pub endpoint: String,
    pub requests: u32,
}

impl std::fmt::Display for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} at {} ({} requests in a row)",
            self.reason, self.endpoint, self.requests
        )
    }
}

/// One host's breaker, shared by all of its requests.
#[derive(Debug)]
pub struct Breaker {
    /// Failures in a row that open it; 0 never does.
    after: u32,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The current run of failures for one lasting reason.
    run: Option<(Lasting, u32)>,
    opened: Option<Opened>,
}

impl Breaker {
    /// A breaker that opens after `after` requests in a row fail for one lasting reason (`0`:
    /// never).
    pub fn new(after: u32) -> Self {
        Self {
            after,
            state: Mutex::new(State::default()),
        }
    }

    /// Why the breaker opened, once it has.
    pub fn opened(&self) -> Option<Opened> {
        self.lock().opened.clone()
    }

    /// Records how a request ended: `None` for an answer or a transient failure, which ends a
    /// run of lasting failures. Returns whether the breaker is open now.
    pub fn record(&self, failure: Option<Lasting>, endpoint: &str) -> bool {
        let mut state = self.lock();
        if state.opened.is_some() {
            return true;
        }
        let Some(reason) = failure else {
            state.run = None;
            return false;
        };
        let count = match state.run {
            Some((same, n)) if same == reason => n + 1,
            _ => 1,
        };
        state.run = Some((reason, count));
        if self.after > 0 && count >= self.after {
            state.opened = Some(Opened {
                reason,
                endpoint: endpoint.to_owned(),
                requests: count,
            });
        }
        state.opened.is_some()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state stays consistent at every step: a panic elsewhere does not poison it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The lasting reason behind a transport error, if it is one.
pub fn lasting_transport(e: &reqwest::Error) -> Option<Lasting> {
    if !e.is_connect() {
        return None;
    }
    let text = crate::error::chain(e).to_ascii_lowercase();
    let io_refused = std::iter::successors(Some(e as &(dyn std::error::Error + 'static)), |e| {
        e.source()
    })
    .filter_map(|e| e.downcast_ref::<std::io::Error>())
    .any(|io| io.kind() == std::io::ErrorKind::ConnectionRefused);
    if io_refused || text.contains("connection refused") {
        Some(Lasting::ConnectionRefused)
    } else if text.contains("dns error")
        || text.contains("failed to lookup address")
        || text.contains("name or service not known")
        || text.contains("no such host")
    {
        Some(Lasting::Dns)
    } else if text.contains("certificate") || text.contains("tls") || text.contains("ssl") {
        Some(Lasting::Tls)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_the_same_lasting_reason_in_a_row_and_stays_open() {
        let b = Breaker::new(3);
        assert!(!b.record(Some(Lasting::ConnectionRefused), "u"));
        assert!(!b.record(Some(Lasting::ConnectionRefused), "u"));
        // An answer (or a transient failure) ends the run.
        assert!(!b.record(None, "u"));
        assert!(!b.record(Some(Lasting::ConnectionRefused), "u"));
        assert!(!b.record(Some(Lasting::ConnectionRefused), "u"));
        // Another reason starts a run of its own.
        assert!(!b.record(Some(Lasting::Unauthorized(401)), "u"));
        assert!(!b.record(Some(Lasting::Unauthorized(401)), "u"));
        assert_eq!(b.opened(), None);
        assert!(b.record(Some(Lasting::Unauthorized(401)), "http://x"));
        let opened = b.opened().unwrap();
        assert_eq!(opened.reason, Lasting::Unauthorized(401));
        assert_eq!(opened.requests, 3);
        assert_eq!(
            opened.to_string(),
            "HTTP 401: the key is refused at http://x (3 requests in a row)"
        );
        // Open for good.
        assert!(b.record(None, "u"));
    }

    #[test]
    fn zero_never_opens() {
        let b = Breaker::new(0);
        for _ in 0..100 {
            assert!(!b.record(Some(Lasting::Dns), "u"));
        }
    }

    #[tokio::test]
    async fn a_closed_port_is_connection_refused() {
        // A port just bound and released: nothing listens there.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let e = crate::net::client_builder()
            .build()
            .unwrap()
            .get(format!("http://127.0.0.1:{port}/"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(lasting_transport(&e), Some(Lasting::ConnectionRefused));
    }
}
