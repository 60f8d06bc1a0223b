//! `--replay-user-turns`: each baseline trial's user messages, handed to its candidate trial,
//! whose simulated user sends them again in order. A candidate trial waits for its baseline
//! trial, which the schedule puts first in each pair; a baseline trial that ends in any way
//! (an error, a stopped host, a dropped future) hands over what it has, so no candidate waits
//! forever.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::schedule::TrialKey;

/// A pair's place: host, task and trial (indices of the run's).
type Pair = (usize, usize, u32);

fn pair(key: &TrialKey) -> Pair {
    (key.host, key.task, key.trial)
}

/// The baseline trials' user messages, by pair.
#[derive(Default)]
pub struct UserScripts {
    scripts: Mutex<HashMap<Pair, Arc<[String]>>>,
    notify: Notify,
}

impl UserScripts {
    /// With the messages of baseline trials an earlier invocation finished (`--resume`).
    pub fn with(earlier: HashMap<Pair, Vec<String>>) -> Self {
        Self {
            scripts: Mutex::new(earlier.into_iter().map(|(k, v)| (k, v.into())).collect()),
            notify: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Pair, Arc<[String]>>> {
        self.scripts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The baseline's messages of `key`'s pair, once its baseline trial has ended.
    pub async fn wait(&self, key: &TrialKey) -> Arc<[String]> {
        loop {
            // Made before the look, so a hand-over between the look and the wait still wakes it.
            let handed = self.notify.notified();
            if let Some(script) = self.lock().get(&pair(key)) {
                return script.clone();
            }
            handed.await;
        }
    }

    /// A baseline trial's hand-over: it records its messages with [`Handover::set`]; whatever
    /// way the trial ends, its pair gets them (or none) when the hand-over is dropped.
    pub fn handover<'a>(&'a self, key: &TrialKey) -> Handover<'a> {
        Handover {
            scripts: self,
            pair: pair(key),
            messages: Vec::new(),
        }
    }
}

/// What a baseline trial hands its candidate trial (see [`UserScripts::handover`]).
pub struct Handover<'a> {
    scripts: &'a UserScripts,
    pair: Pair,
    messages: Vec<String>,
}

impl Handover<'_> {
    pub fn set(&mut self, messages: Vec<String>) {
        self.messages = messages;
    }
}

impl Drop for Handover<'_> {
    fn drop(&mut self) {
        let messages = std::mem::take(&mut self.messages);
        self.scripts
            .lock()
            .entry(self.pair)
            .or_insert(messages.into());
        self.scripts.notify.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::episode::Side;

    fn key(side: Side) -> TrialKey {
        TrialKey {
            host: 0,
            task: 1,
            trial: 2,
            side,
        }
    }

    #[tokio::test]
    async fn a_candidate_waits_for_its_baseline_and_gets_its_messages() {
        let scripts = Arc::new(UserScripts::default());
        let waiting = {
            let scripts = scripts.clone();
            tokio::spawn(async move { scripts.wait(&key(Side::Candidate)).await })
        };
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "no baseline yet");
        let mut handover = scripts.handover(&key(Side::Baseline));
        handover.set(vec!["hi".into(), "show issue 3".into()]);
        drop(handover);
        let got = waiting.await.unwrap();
        assert_eq!(&*got, ["hi".to_owned(), "show issue 3".to_owned()]);
    }

    #[tokio::test]
    async fn a_baseline_that_ends_without_messages_still_releases_its_candidate() {
        let scripts = UserScripts::default();
        drop(scripts.handover(&key(Side::Baseline)));
        assert!(scripts.wait(&key(Side::Candidate)).await.is_empty());
        let earlier = UserScripts::with([((0, 1, 2), vec!["a".to_owned()])].into());
        assert_eq!(earlier.wait(&key(Side::Candidate)).await.len(), 1);
    }
}
