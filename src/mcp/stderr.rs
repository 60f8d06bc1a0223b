//! The last lines a stdio server wrote to stderr, kept for the messages that say why it failed.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio_util::task::AbortOnDropHandle;

/// How many of the last stderr lines, and bytes, are kept.
const STDERR_LINES: usize = 40;
const STDERR_BYTES: usize = 8 * 1024;
/// How long to let a dying server's last stderr lines arrive before reporting its failure. The
/// wait ends as soon as the server closes stderr (a dead one does at once); the bound is for one
/// still running. 100 ms lost a crashed server's last line on a loaded 2-core machine.
const STDERR_GRACE: Duration = Duration::from_millis(1000);

/// The last lines a stdio server wrote to stderr, filled by a background task that ends with
/// the stream (or when this is dropped).
pub(super) struct StderrTail {
    ring: Arc<Mutex<Ring>>,
    eof: watch::Receiver<bool>,
    _task: AbortOnDropHandle<()>,
}

#[derive(Default)]
struct Ring {
    lines: VecDeque<String>,
    bytes: usize,
    partial: Vec<u8>,
}

impl Ring {
    fn push_bytes(&mut self, chunk: &[u8]) {
        let mut pieces = chunk.split(|&b| b == b'\n').peekable();
        while let Some(piece) = pieces.next() {
            let room = STDERR_BYTES.saturating_sub(self.partial.len());
            self.partial
                .extend_from_slice(&piece[..piece.len().min(room)]);
            if pieces.peek().is_some() {
                self.end_line();
            }
        }
    }

    fn end_line(&mut self) {
        let line = String::from_utf8_lossy(&self.partial).trim_end().to_owned();
        self.partial.clear();
        self.bytes += line.len() + 1;
        self.lines.push_back(line);
        while self.lines.len() > STDERR_LINES || (self.bytes > STDERR_BYTES && self.lines.len() > 1)
        {
            let dropped = self.lines.pop_front().unwrap_or_default();
            self.bytes -= dropped.len() + 1;
        }
    }

    fn text(&self) -> String {
        let mut text: Vec<&str> = self.lines.iter().map(String::as_str).collect();
        let partial = String::from_utf8_lossy(&self.partial);
        if !partial.trim().is_empty() {
            text.push(partial.trim_end());
        }
        text.join("\n")
    }
}

impl StderrTail {
    /// Starts draining `stderr` in the background.
    pub(super) fn drain(mut stderr: impl tokio::io::AsyncRead + Unpin + Send + 'static) -> Self {
        let ring = Arc::new(Mutex::new(Ring::default()));
        let (done, eof) = watch::channel(false);
        let sink = ring.clone();
        let task = tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = stderr.read(&mut buf).await {
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push_bytes(&buf[..n]);
            }
            let _ = done.send(true);
        });
        Self {
            ring,
            eof,
            _task: AbortOnDropHandle::new(task),
        }
    }

    pub(super) fn text(&self) -> String {
        self.ring.lock().unwrap_or_else(|e| e.into_inner()).text()
    }
}

/// The tail once the server closed stderr, or after a short grace period if it has not.
pub(super) async fn settled(tail: Option<&StderrTail>) -> String {
    let Some(tail) = tail else {
        return String::new();
    };
    let mut eof = tail.eof.clone();
    let _ = tokio::time::timeout(STDERR_GRACE, eof.wait_for(|done| *done)).await;
    tail.text()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_ring_keeps_the_last_lines_and_bytes() {
        let mut ring = Ring::default();
        for i in 0..100 {
            ring.push_bytes(format!("line {i}\n").as_bytes());
        }
        let text = ring.text();
        assert_eq!(text.lines().count(), STDERR_LINES);
        assert!(
            text.starts_with("line 60\n") && text.ends_with("line 99"),
            "{text}"
        );
        ring.push_bytes(&vec![b'x'; 3 * STDERR_BYTES]);
        ring.push_bytes(b"\nsplit ");
        ring.push_bytes(b"line\nunfinished");
        let text = ring.text();
        assert!(text.len() <= 2 * STDERR_BYTES, "{}", text.len());
        assert!(text.ends_with("split line\nunfinished"), "{text}");
    }
}
