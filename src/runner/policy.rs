//! The stopping policy an adaptive run consults after each look: it is fed every finished
//! trial and says which tasks are settled (the rule itself is `report::adaptive`'s).

use std::sync::Mutex;

use crate::episode::{Episode, EpisodeFacts};
use crate::report::adaptive::{Design, Looks, Stopped};

/// An adaptive run's policy: the design and every trial so far, by index.
pub struct StoppingPolicy {
    design: Design,
    looks: Mutex<Looks>,
    /// Tasks per host in the run (the size of the families the rule's levels are split over).
    tasks: usize,
}

impl StoppingPolicy {
    /// `earlier`: the trials a resumed run already has.
    pub fn new(design: Design, earlier: Looks, tasks: usize) -> Self {
        Self {
            design,
            looks: Mutex::new(earlier),
            tasks,
        }
    }

    /// Trials per side at each look.
    pub fn looks(&self) -> Vec<u32> {
        self.design.looks().to_vec()
    }

    pub fn record(&self, e: &Episode) {
        self.lock().add(e.side, &EpisodeFacts::of(e));
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

    /// Trials per side recorded so far over every task.
    pub fn trials(&self) -> u64 {
        self.lock().trials()
    }

    /// How likely the task is to end as a regression (the budget's looks go to the likeliest).
    pub fn priority(&self, host: &str, task: &str) -> f64 {
        self.lock().priority(&self.design, host, task, self.tasks)
    }

    /// The run's trials per side, if it has a budget.
    pub fn budget(&self) -> Option<u64> {
        self.design.budget()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Looks> {
        self.looks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
