//! The demo tracker's state as clients see it, optionally eventually consistent: with a settle
//! delay a write is answered at once but becomes visible to reads only that much later, as a
//! scaled deployment or a search index does (for testing `after` checks with `within_ms`).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::data::Tracker;

/// The tracker behind one demo server: what writes change, and what reads see.
#[derive(Debug)]
pub struct State {
    /// Every write so far: what writes act on (ids, updates of issues not yet visible).
    latest: Tracker,
    /// What reads see when a settle delay is set: `latest` as it was `delay` ago.
    visible: Tracker,
    /// States written but not yet visible, oldest first, each with when it becomes visible.
    pending: VecDeque<(Instant, Tracker)>,
    delay: Option<Duration>,
}

impl State {
    /// The seeded tracker; writes become visible after `delay` (at once when `None`).
    pub fn new(delay: Option<Duration>) -> Self {
        let delay = delay.filter(|d| !d.is_zero());
        Self {
            latest: Tracker::seeded(),
            visible: Tracker::seeded(),
            pending: VecDeque::new(),
            delay,
        }
    }

    /// The tracker as a read sees it now.
    pub fn read(&mut self) -> &Tracker {
        if self.delay.is_none() {
            return &self.latest;
        }
        let now = Instant::now();
        while self.pending.front().is_some_and(|(at, _)| *at <= now) {
            if let Some((_, state)) = self.pending.pop_front() {
                self.visible = state;
            }
        }
        &self.visible
    }

    /// Applies a write to the latest state; with a delay, reads see its effect only later.
    pub fn write<T>(&mut self, change: impl FnOnce(&mut Tracker) -> T) -> T {
        let out = change(&mut self.latest);
        if let Some(delay) = self.delay {
            self.pending
                .push_back((Instant::now() + delay, self.latest.clone()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn title(state: &mut State, id: i64) -> Option<String> {
        let issue = state.read().get(id).ok()?;
        issue["title"].as_str().map(str::to_owned)
    }

    fn create(state: &mut State, title: &str) -> i64 {
        let created = state.write(|t| t.create("apollo", title, None, None, &["id"]));
        created.unwrap()["id"].as_i64().unwrap()
    }

    #[test]
    fn without_a_delay_a_write_is_read_at_once() {
        let mut state = State::new(None);
        let id = create(&mut state, "Printer catches fire");
        assert_eq!(
            title(&mut state, id).as_deref(),
            Some("Printer catches fire")
        );
    }

    #[test]
    fn with_a_delay_a_write_is_read_only_once_it_settled() {
        let mut state = State::new(Some(Duration::from_millis(150)));
        let id = create(&mut state, "Printer catches fire");
        // Answered at once with its id, but not yet found by reads.
        assert_eq!(id, 13);
        assert_eq!(title(&mut state, id), None);
        // Writes act on the latest state: a second create gets the next id.
        assert_eq!(create(&mut state, "Second"), 14);
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(
            title(&mut state, 13).as_deref(),
            Some("Printer catches fire")
        );
        assert_eq!(title(&mut state, 14).as_deref(), Some("Second"));
    }
}
