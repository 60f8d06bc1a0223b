//! The adaptive stopping rule as the runner asks it after each look ([`StoppingRule`]): fed every
//! finished trial, it says which tasks are settled (the rule itself is [`super::adaptive`]'s).

use std::sync::Mutex;

use super::adaptive::{Design, Looks, Stopped};
use crate::episode::{Episode, EpisodeFacts};
use crate::runner::StoppingRule;

/// An adaptive run's policy: the design and every trial so far, by index.
pub struct AdaptivePolicy {
    design: Design,
    looks: Mutex<Looks>,
    /// Tasks per host in the run (the size of the families the rule's levels are split over).
    tasks: usize,
}

impl AdaptivePolicy {
    /// `earlier`: the trials a resumed run already has.
    pub fn new(design: Design, earlier: Looks, tasks: usize) -> Self {
        Self {
            design,
            looks: Mutex::new(earlier),
            tasks,
        }
    }

    /// Why the task stopped, after the looks whose trials have all finished; `None`: it goes on.
    /// An error in the statistics keeps the task running (to `max_trials`).
    pub fn stopped(&self, host: &str, task: &str) -> Option<Stopped> {
        let looks = self.lock();
        looks
            .outcome(&self.design, host, task, self.tasks)
            .ok()
            .and_then(|o| o.stopped)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Looks> {
        self.looks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl StoppingRule for AdaptivePolicy {
    fn looks(&self) -> Vec<u32> {
        self.design.looks().to_vec()
    }

    fn record(&self, e: &Episode) {
        self.lock().add(e.side, &EpisodeFacts::of(e));
    }

    fn settled(&self, host: &str, task: &str) -> bool {
        self.stopped(host, task).is_some()
    }

    fn trials(&self) -> u64 {
        self.lock().trials()
    }

    fn priority(&self, host: &str, task: &str) -> f64 {
        self.lock().priority(&self.design, host, task, self.tasks)
    }

    fn budget(&self) -> Option<u64> {
        self.design.budget()
    }
}
